"""Run length as DRAMsim3's `-c N` (SimOptions.cycles) and `max_cycles`, and wrapped addresses.

DRAMsim3 ticks exactly N cycles and then prints its statistics: when the trace ends earlier,
refresh, background energy and write drains go on; what is still queued at N is pending.
Checked against DRAMsim3 itself (tests/data/reference/dramsim3-cycles, made by
benchmarks/make_dramsim3_cycles_refs.py from a stock DRAMsim3 build): the first 2,000 requests
of each reference trace on the four reference configs, at half the cycle count at which every
request is done (the run ends inside the trace) and at three times it (long idle after the
trace): every command and every statistic identical. Also the 22 reference runs at DRAMsim3's
own N, and one trace per config whose addresses carry bits above the capacity.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from engine.config import load_config, load_ini
from engine.errors import DiffMemError
from engine.simulator import SimOptions, Simulator, cmd_trace_paths, simulate_trace
from refdata import data_file

RUNS = json.loads(data_file("reference/dramsim3-cycles/runs.json").read_text())["runs"]
COUNTERS = ("num_cycles", "num_reads_done", "num_writes_done", "num_read_cmds",
            "num_write_cmds", "num_read_row_hits", "num_write_row_hits", "num_act_cmds",
            "num_pre_cmds", "num_ondemand_pres", "num_ref_cmds", "num_refb_cmds",
            "hbm_dual_cmds")
ENERGIES = ("act_energy", "read_energy", "write_energy", "ref_energy", "refb_energy",
            "total_energy")


def _head(src: Path, dst: Path, n: int) -> Path:
    with open(src) as f:
        dst.write_text("".join(next(f) for _ in range(n)))
    return dst


def _wrap(src: Path, dst: Path, bits: int) -> Path:
    lines = []
    for i, ln in enumerate(src.read_text().splitlines()):
        a, op, c = ln.split()
        lines.append(f"{int(a, 16) | (bits if i % 2 else 0):#x} {op} {c}\n")
    dst.write_text("".join(lines))
    return dst


def _total(channels: dict, key: str) -> float:
    return sum(ch[key] for ch in channels.values())


def _check_summary(s: dict, channels: dict, cfg) -> None:
    for key in COUNTERS:
        assert s[key] == (channels["0"]["num_cycles"] if key == "num_cycles"
                          else _total(channels, key)), key
    for key in ENERGIES:
        assert s["dramsim3_units"][key] == pytest.approx(_total(channels, key), rel=1e-9), key
    assert s["total_energy"] == pytest.approx(_total(channels, "total_energy") * cfg.tCK,
                                              rel=1e-9)
    assert s["average_bandwidth"] == pytest.approx(_total(channels, "average_bandwidth"),
                                                   rel=1e-9)
    reads = _total(channels, "num_reads_done")
    lat = sum(ch["average_read_latency"] * ch["num_reads_done"] for ch in channels.values())
    assert s["average_read_latency"] == pytest.approx(lat / reads if reads else 0.0,
                                                      rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("run", RUNS, ids=[r["name"] for r in RUNS])
def test_cycles_n_matches_dramsim3_commands_and_stats(shared_dir, ref_traces, tmp_path, run):
    cfg = load_ini(shared_dir / "dramsim3-configs" / f"{run['config']}.ini")
    trace = _head(ref_traces / f"{run['pattern']}.trace", tmp_path / "head.trace", run["head"])
    if run["wrap_bits"]:
        trace = _wrap(trace, tmp_path / "wrap.trace", run["wrap_bits"])
        with pytest.raises(DiffMemError, match="beyond the memory capacity"):
            simulate_trace(cfg, trace, SimOptions(cycles=run["cycles"], epoch=0))
    cmd = tmp_path / "cmd.trace"
    st = simulate_trace(cfg, trace, SimOptions(cycles=run["cycles"], phantom_eof_read=True,
                                               cmd_trace=cmd, epoch=0,
                                               wrap_addresses=bool(run["wrap_bits"])))
    s = st.summary
    ours = sorted(ln.split() for p in cmd_trace_paths(cmd, cfg.channels)
                  for ln in p.read_text().splitlines())
    ref = []
    for ch in range(cfg.channels):
        f = data_file(f"reference/dramsim3-cycles/cmdtrace/{run['name']}.ch{ch}.cmd.trace.gz")
        with gzip.open(f, "rt") as fh:
            ref += [ln.split() for ln in fh if ln.strip()]
    ref.sort()
    assert len(ours) == len(ref)
    assert ours == ref
    _check_summary(s, run["channels"], cfg)
    assert s["run_mode"] == "cycles" and s["cycles_requested"] == run["cycles"]
    if run["kind"] == "idle":
        # the same run without a command trace skips the idle time in closed form
        fast = simulate_trace(cfg, trace, SimOptions(cycles=run["cycles"],
                                                     phantom_eof_read=True,
                                                     epoch=10**9)).summary
        assert fast["idle_cycles_skipped_in_closed_form"] > run["cycles"] // 2
        _check_summary(fast, run["channels"], cfg)
    if run["kind"] == "short":
        # the run ends inside the trace: requests in flight, later ones never offered
        assert s["num_requests_pending"] + s["num_requests_waiting"] > 0
    else:
        assert s["num_requests_pending"] == 0 and s["num_requests_waiting"] == 0
    assert s["num_addresses_wrapped"] == (run["head"] // 2 if run["wrap_bits"] else 0)


REFERENCE_RUNS = sorted(p.name.removesuffix(".json") for p in
                        (Path(data_file("reference/dramsim3/results/"
                                        "DDR4_8Gb_x8_3200__mixed.json")).parent).glob("*.json"))


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n.endswith("_1M")
                                  else n for n in REFERENCE_RUNS])
def test_reference_runs_at_dramsim3s_own_n(shared_dir, ref_traces, request, name):
    """The 22 reference runs with cycles = DRAMsim3's N: every counter of dramsim3.json (energy
    components, REF, PRE and write commands included) equal, per channel summed."""
    ref = json.loads(data_file(f"reference/dramsim3/results/{name}.json").read_text())
    raw = json.loads(data_file(f"reference/dramsim3/results/raw/{name}.dramsim3.json")
                     .read_text())
    cfg = load_ini(shared_dir / "dramsim3-configs" / ref["config"])
    tdir = (request.getfixturevalue("ref_traces_1m") if ref["trace_dir"] == "traces1m"
            else ref_traces)
    s = simulate_trace(cfg, tdir / ref["trace"],
                       SimOptions(cycles=ref["cycles_simulated"], phantom_eof_read=True,
                                  epoch=0)).summary
    _check_summary(s, raw, cfg)
    assert s["writes_not_issued_at_end"] == ref["writes_left_in_write_buffer_at_end"]


# ---- semantics, without reference data ------------------------------------------------------
def _light_trace(tmp_path: Path, n: int = 300) -> Path:
    p = tmp_path / "light.trace"
    p.write_text("".join(f"{i * 8192:#x} {'WRITE' if i % 3 == 0 else 'READ'} {i * 10}\n"
                         for i in range(n)))
    return p


def test_max_cycles_keeps_stop_when_done_and_cycles_runs_on(tmp_path):
    cfg = load_config("DDR4-3200")
    trace = _light_trace(tmp_path)
    done = simulate_trace(cfg, trace, SimOptions(epoch=0)).summary
    capped = simulate_trace(cfg, trace, SimOptions(epoch=0, max_cycles=10**6)).summary
    exact = simulate_trace(cfg, trace, SimOptions(epoch=0, cycles=10**6)).summary
    assert capped["num_cycles"] == done["num_cycles"] < 10**6
    assert capped["run_mode"] == "max_cycles" and done["run_mode"] == "to_completion"
    assert exact["num_cycles"] == 10**6
    # the same requests served; refresh and background energy went on to N
    assert exact["num_reads_done"] == done["num_reads_done"]
    assert exact["num_ref_cmds"] > done["num_ref_cmds"]
    assert exact["total_energy"] > done["total_energy"]
    assert exact["energy_by_cause"]["background"] > done["energy_by_cause"]["background"]
    short = simulate_trace(cfg, trace, SimOptions(epoch=0, max_cycles=500)).summary
    short_exact = simulate_trace(cfg, trace, SimOptions(epoch=0, cycles=500)).summary
    assert short["num_cycles"] == short_exact["num_cycles"] == 500
    assert short["num_requests_pending"] == short_exact["num_requests_pending"]


def test_cycles_and_max_cycles_are_exclusive_and_checked():
    with pytest.raises(DiffMemError, match="give one of them"):
        SimOptions(cycles=10, max_cycles=20)
    for bad in (0, -5, 2**62, 1.5, True):
        with pytest.raises(DiffMemError, match="SimOptions.cycles"):
            SimOptions(cycles=bad)


def test_online_api_cycles_runs_to_n_after_finish():
    cfg = load_config("DDR4-3200")
    sim = Simulator(cfg, SimOptions(cycles=200_000, epoch=50_000))
    sim.feed(np.array([0, 64, 128], np.uint64), np.array([0, 0, 1]), np.array([0, 5, 9]))
    st = sim.finish()
    assert st.summary["num_cycles"] == 200_000
    assert [e["end"] for e in st.epochs] == [50_000, 100_000, 150_000, 200_000]
    assert st.summary["num_reads_done"] == 2 and st.summary["num_writes_done"] == 1


def test_wrap_addresses_counts_and_default_refuses(tmp_path, caplog):
    cfg = load_config("DDR4-3200")
    cap = cfg.capacity_bytes
    trace = tmp_path / "big.trace"
    trace.write_text(f"{cap + 64:#x} READ 0\n0x40 READ 1\n{5 * cap + 128:#x} WRITE 2\n")
    with pytest.raises(DiffMemError, match="beyond the memory capacity"):
        simulate_trace(cfg, trace, SimOptions(epoch=0))
    wrapped = simulate_trace(cfg, trace, SimOptions(epoch=0, wrap_addresses=True)).summary
    masked = tmp_path / "masked.trace"
    masked.write_text("0x40 READ 0\n0x40 READ 1\n0x80 WRITE 2\n")
    plain = simulate_trace(cfg, masked, SimOptions(epoch=0)).summary
    assert wrapped["num_addresses_wrapped"] == 2 and plain["num_addresses_wrapped"] == 0
    assert "beyond the capacity" in caplog.text
    # the same DRAM locations; only same-line merging still sees the full address (DRAMsim3)
    assert wrapped["num_act_cmds"] == plain["num_act_cmds"]
    assert wrapped["num_reads_done"] == plain["num_reads_done"] == 2


@pytest.mark.parametrize("threads", [1, 2])
def test_requests_waiting_at_the_limit_does_not_depend_on_chunk_size(tmp_path, threads):
    """A saturating trace (every request due at once, 2 channels) stopped at max_cycles /
    cycles = 3,000: the requests due before the limit that the front end never reached are
    all waiting, those of the chunks not yet read included, whatever the chunk size."""
    cfg = load_config("DDR4-3200").replace(channels=2)
    n = 6_000
    rng = np.random.default_rng(3)
    addr = rng.integers(0, cfg.capacity_bytes // 64, n) * 64
    lines = [f"0x{a:x} {'WRITE' if i % 4 == 0 else 'READ'} {i // 2}"
             for i, a in enumerate(addr)]
    # a tail due after the limit: never counted
    lines += [f"0x{a:x} READ {10**6 + i}" for i, a in enumerate(addr[:100])]
    trace = tmp_path / "saturate.trace"
    trace.write_text("\n".join(lines) + "\n")
    for mode in ("max_cycles", "cycles"):
        got = set()
        for chunk in (500, 2_000, 1 << 16):
            s = simulate_trace(cfg, trace, SimOptions(epoch=0, chunk_size=chunk,
                                                      threads=threads,
                                                      **{mode: 3_000})).summary
            assert s["num_cycles"] == 3_000
            accepted = s["num_reads_accepted"] + s["num_writes_accepted"]
            got.add((s["num_requests_waiting"], accepted))
            # every request due before the limit was either accepted or is waiting
            due = min(n, 2 * 3_000)
            assert s["num_requests_waiting"] + accepted == due, (mode, chunk)
        assert len(got) == 1, (mode, got)
