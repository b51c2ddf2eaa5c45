"""Agreement with DRAMsim3 on its own reference runs (tests/data/reference/dramsim3/).

Short case: the first 2,000 requests of each generated trace on the four reference configs,
run for DRAMsim3's cycle count: every DRAM command must be identical to DRAMsim3's command
trace, and the statistics equal to its output. The full 200k-request set is checked by
benchmarks/accuracy_dramsim3.py; one full run is checked here too.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from engine.config import load_ini
from engine.simulator import SimOptions, cmd_trace_paths, simulate_trace

CONFIGS = ("DDR4_8Gb_x8_3200", "LPDDR4_8Gb_x16_2400", "GDDR6_8Gb_x16", "HBM2_8Gb_x128")
PATTERNS = ("stream", "random", "mixed", "strided", "diffusion")


def _head(src: Path, dst: Path, n: int) -> Path:
    with open(src) as f:
        dst.write_text("".join(next(f) for _ in range(n)))
    return dst


def _cycles(shared_dir: Path) -> dict[tuple[str, str], int]:
    lines = (shared_dir / "reference/dramsim3/cmdtrace/cycles.txt").read_text().splitlines()
    return {(a, b): int(c) for a, b, c in (ln.split() for ln in lines if ln.strip())}


def _sum(ref: dict, key: str) -> float:
    return sum(ch[key] for ch in ref.values())


@pytest.mark.parametrize("cfg_name", CONFIGS)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_head2000_commands_and_stats_match_dramsim3(shared_dir, ref_traces, tmp_path,
                                                      cfg_name, pattern):
    n_cycles = _cycles(shared_dir)[(cfg_name, pattern)]
    trace = _head(ref_traces / f"{pattern}.trace", tmp_path / "head.trace", 2000)
    cfg = load_ini(shared_dir / "dramsim3-configs" / f"{cfg_name}.ini")
    cmd = tmp_path / "cmd.trace"
    st = simulate_trace(cfg, trace, SimOptions(cycles=n_cycles, phantom_eof_read=True,
                                               cmd_trace=cmd, epoch=0))
    ours = sorted(ln.split() for p in cmd_trace_paths(cmd, cfg.channels)
                  for ln in p.read_text().splitlines())
    base = shared_dir / "reference/dramsim3/cmdtrace" / f"{cfg_name}__{pattern}.head2000"
    ref_cmds = []
    for ch in range(cfg.channels):
        with gzip.open(f"{base}.ch{ch}.cmd.trace.gz", "rt") as f:
            ref_cmds += [ln.split() for ln in f if ln.strip()]
    ref_cmds.sort()
    assert len(ours) == len(ref_cmds)
    assert ours == ref_cmds

    ref = json.loads(Path(f"{base}.dramsim3.json").read_text())
    s = st.summary
    assert s["num_cycles"] == n_cycles
    for key in ("num_reads_done", "num_writes_done", "num_read_cmds", "num_write_cmds",
                "num_read_row_hits", "num_write_row_hits", "num_act_cmds", "num_pre_cmds",
                "num_ondemand_pres", "num_ref_cmds"):
        assert s[key] == _sum(ref, key), key
    lat_sum = sum(ch["average_read_latency"] * ch["num_reads_done"] for ch in ref.values())
    assert s["average_read_latency"] == pytest.approx(lat_sum / _sum(ref, "num_reads_done"),
                                                      rel=1e-12)
    assert s["dramsim3_units"]["total_energy"] == pytest.approx(_sum(ref, "total_energy"),
                                                                 rel=1e-9)
    assert s["total_energy"] == pytest.approx(_sum(ref, "total_energy") * cfg.tCK, rel=1e-9)
    assert s["average_bandwidth"] == pytest.approx(_sum(ref, "average_bandwidth"), rel=1e-9)
    # DRAMsim3's average_power is the core energy over the time (mW), per channel and summed;
    # ours with IO has its own name
    assert s["average_power"] == pytest.approx(_sum(ref, "average_power"), rel=1e-9)
    for ch, ours_ch in enumerate(st.channels):
        assert ours_ch["average_power"] == pytest.approx(ref[str(ch)]["average_power"],
                                                         rel=1e-9)
    time_ns = n_cycles * cfg.tCK
    assert s["average_power_with_io"] == pytest.approx(s["total_energy_with_io"] / time_ns,
                                                       rel=1e-12)


@pytest.mark.parametrize("cfg_name,pattern", [("DDR4_8Gb_x8_3200", "mixed"),
                                              ("HBM2_8Gb_x128", "diffusion")])
def test_full_trace_matches_dramsim3_results(shared_dir, ref_traces, cfg_name, pattern):
    """200k requests run to completion: the figures of tests/data/reference/dramsim3/results."""
    cfg = load_ini(shared_dir / "dramsim3-configs" / f"{cfg_name}.ini")
    st = simulate_trace(cfg, ref_traces / f"{pattern}.trace",
                        SimOptions(phantom_eof_read=True, epoch=0))
    ref = json.loads((shared_dir / "reference/dramsim3/results"
                      / f"{cfg_name}__{pattern}.json").read_text())
    s = st.summary
    assert s["num_cycles"] == ref["cycles_simulated"]
    assert s["num_reads_done"] == ref["num_reads_done"]
    assert s["num_writes_done"] == ref["num_writes_done"]
    assert s["num_act_cmds"] == ref["num_act_cmds"]
    assert s["num_read_row_hits"] + s["num_write_row_hits"] == (
        ref["num_read_row_hits"] + ref["num_write_row_hits"])
    assert s["average_read_latency"] == pytest.approx(ref["average_read_latency_cycles"],
                                                      rel=1e-12)
    assert s["average_bandwidth"] == pytest.approx(ref["average_bandwidth_GBps_dramsim3"],
                                                   rel=1e-12)
    assert s["total_energy"] == pytest.approx(ref["energy_pJ_tck_corrected"]["total_energy"],
                                              rel=1e-9)
    assert s["read_latency_p99"] == ref["read_latency_p99_cycles"]
    assert s["writes_not_issued_at_end"] == ref["writes_left_in_write_buffer_at_end"]


def test_eof_quirk_only_on_request(shared_dir, tmp_path):
    """DRAMsim3 offers one phantom READ of the last address after the last trace line (when
    the read queue has room); we reproduce it only when asked."""
    cfg = load_ini(shared_dir / "dramsim3-configs" / "DDR4_8Gb_x8_3200.ini")
    trace = tmp_path / "light.trace"
    trace.write_text("".join(f"{i * 8192:#x} READ {i * 100}\n" for i in range(10)))
    plain = simulate_trace(cfg, trace, SimOptions(epoch=0)).summary
    quirk = simulate_trace(cfg, trace, SimOptions(epoch=0, phantom_eof_read=True)).summary
    assert plain["num_reads_done"] == 10 and plain["phantom_eof_read_added"] == 0
    assert quirk["num_reads_done"] == 11 and quirk["phantom_eof_read_added"] == 1
