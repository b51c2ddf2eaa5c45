"""The front end's intake (SimOptions.intake): "dramsim3" (one request a cycle for the whole
memory system, the default) and "per-channel" (each channel accepts one request a cycle, in
trace order per channel; a full queue holds back only its own channel).

Hand-made traces on a 2-channel DDR4-3200 whose outcome is computed by hand, the default path
unchanged by the option, and the per-channel command traces checked by engine.jedec_check."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from engine.config import load_config
from engine.errors import DiffMemError
from engine.jedec_check import check_command_trace
from engine.simulator import SimOptions, Simulator, cmd_trace_paths, simulate_trace
from engine.trace import TraceChunk, write_text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_engine_policies import _mixed_trace  # noqa: E402


def _cfg():
    return load_config("DDR4-3200").replace(channels=2)


def _address(cfg, *, ch: int, bg: int = 0, ba: int = 0, row: int = 5, col: int = 0) -> int:
    fields = {"ch": ch, "ra": 0, "bg": bg, "ba": ba, "ro": row, "co": col}
    a = 0
    for name, v in fields.items():
        a |= v << cfg.field_positions[name]
    return a << cfg.shift_bits


def _write(path: Path, addr: list[int], is_write: list[bool], cyc: list[int]) -> Path:
    n = len(addr)
    write_text(path, TraceChunk(np.array(addr, np.uint64), np.array(is_write, bool),
                                np.array(cyc, np.int64), np.zeros(n, np.uint16)))
    return path


@pytest.mark.parametrize("n", [8, 32, 64])
def test_per_channel_intake_ends_n_over_2_cycles_sooner_on_alternating_writes(tmp_path, n):
    """n writes to distinct lines, all due at cycle 0, alternating channel 0 / channel 1.
    A write is posted: accepted at front-end tick t it completes at t + 2 (added at t + 1,
    completion one cycle later), so a run ends at num_cycles = last accept + 3.
    DRAMsim3's intake accepts one a cycle: last accept n - 1, num_cycles n + 2.
    Per-channel: each channel takes its n / 2 (<= its 32-entry write buffer, so never full)
    one a cycle in parallel: last accept n / 2 - 1, num_cycles n / 2 + 2: n / 2 fewer."""
    cfg = _cfg()
    assert n // 2 <= cfg.trans_queue_size
    addr = [_address(cfg, ch=i % 2, col=i // 2) for i in range(n)]
    trace = _write(tmp_path / "w.trace", addr, [True] * n, [0] * n)
    a = simulate_trace(cfg, trace, SimOptions(epoch=0)).summary
    b = simulate_trace(cfg, trace, SimOptions(epoch=0, intake="per-channel")).summary
    assert a["num_writes_done"] == b["num_writes_done"] == n
    assert a["num_cycles"] == n + 2
    assert b["num_cycles"] == n // 2 + 2
    assert a["num_cycles"] - b["num_cycles"] == n // 2


def test_a_full_queue_holds_back_only_its_own_channel(tmp_path):
    """40 writes to channel 0 (its write buffer holds 32) then one read to channel 1, all due at
    cycle 0. Per-channel: the channel-1 read is accepted at tick 0 (channel 1 is idle and its
    own queue empty) although channel 0's 33rd write must wait for a drain. DRAMsim3's
    intake: the read waits behind all 40 writes, so it is accepted no earlier than tick 40."""
    cfg = _cfg()
    addr = np.array([_address(cfg, ch=0, ba=i % 4, col=i) for i in range(40)]
                    + [_address(cfg, ch=1)], np.uint64)
    is_write = np.array([True] * 40 + [False])

    def read_done(intake: str, a: np.ndarray, w: np.ndarray) -> tuple[int, dict]:
        sim = Simulator(cfg, SimOptions(epoch=0, intake=intake, track_completions=True))
        try:
            sim.feed(a, w, np.zeros(len(a), np.int64), final=True)
            ids, cycles = sim.completions()
            return int(cycles[ids == len(a) - 1][0]), sim.stats().summary
        finally:
            sim.close()

    alone, _ = read_done("dramsim3", addr[-1:], is_write[-1:])     # the read on its own
    t_pc, s_pc = read_done("per-channel", addr, is_write)
    t_d3, s_d3 = read_done("dramsim3", addr, is_write)
    assert s_pc["num_reads_done"] == s_d3["num_reads_done"] == 1
    assert s_pc["num_writes_done"] == s_d3["num_writes_done"] == 40
    # per-channel: channel 1 serves its read exactly as if it were alone in the system
    assert t_pc == alone
    # DRAMsim3's intake: accepted at tick >= 40, so done at least 40 cycles later
    assert t_d3 >= alone + 40

def test_default_intake_is_dramsim3_and_unchanged(tmp_path):
    """The default is the DRAMsim3 intake: naming it gives the same statistics; per-channel on
    a single-channel system is the same rule too (one channel, one request a cycle)."""
    trace = _mixed_trace(tmp_path / "m.trace", n=3000, streams=4, gap=1)
    one = load_config("DDR4-3200")
    assert SimOptions().intake == "dramsim3"
    a = simulate_trace(one, trace, SimOptions(epoch=0)).summary
    b = simulate_trace(one, trace, SimOptions(epoch=0, intake="dramsim3")).summary
    c = simulate_trace(one, trace, SimOptions(epoch=0, intake="per-channel")).summary
    for other in (b, c):
        # (the statistics are the same; the record of the run says which intake was asked)
        diff = {k: (a[k], other[k]) for k in a
                if k not in ("wall_seconds", "controller") and a[k] != other[k]}
        assert diff == {}
    assert [s["controller"]["intake"] for s in (a, b, c)] == ["dramsim3", "dramsim3",
                                                              "per-channel"]


@pytest.mark.parametrize("preset,channels", [("DDR4-3200", 2), ("HBM2", None)])
def test_per_channel_command_traces_obey_jedec_and_serve_every_request(tmp_path, preset,
                                                                      channels):
    cfg = load_config(preset)
    if channels is not None:
        cfg = cfg.replace(channels=channels)
    trace = _mixed_trace(tmp_path / "mixed.trace", streams=4, gap=0)    # all due at once
    cmd = tmp_path / "cmd.trace"
    a = simulate_trace(cfg, trace, SimOptions(epoch=0)).summary
    st = simulate_trace(cfg, trace, SimOptions(cmd_trace=cmd, epoch=0,
                                               intake="per-channel")).summary
    assert st["num_reads_done"] + st["num_writes_done"] == 6000
    assert a["num_reads_done"] + a["num_writes_done"] == 6000
    # a multi-channel system takes the same trace in fewer cycles with the wider intake
    assert st["num_cycles"] < a["num_cycles"]
    violations = []
    for ch, p in enumerate(cmd_trace_paths(cmd, cfg.channels)):
        violations += check_command_trace(p, cfg, channel=ch)
    assert violations == []


def test_bad_intake_is_a_clear_error():
    with pytest.raises(DiffMemError, match="intake = 'gpu'.*'dramsim3', 'per-channel'"):
        SimOptions(intake="gpu")
    with pytest.raises(DiffMemError, match="phantom_eof_read.*intake = 'dramsim3'"):
        SimOptions(intake="per-channel", phantom_eof_read=True)


def test_simulate_job_and_cli_take_the_intake(tmp_path):
    """`simulate --intake per-channel` reaches the engine: 8-channel DDR4, 64 writes round-robin
    over the channels, all due at cycle 0: the same n / channels + 2 cycles as by hand above
    (DRAMsim3's intake: n + 2)."""
    import main
    from engine.simulate_job import run_simulation
    cfg = load_config("DDR4-3200-8ch")
    n = 64
    addr = [_address(cfg, ch=i % 8, col=i // 8) for i in range(n)]
    trace = _write(tmp_path / "w.trace", addr, [True] * n, [0] * n)
    args = main.build_parser().parse_args(["simulate", "--config", "DDR4-3200-8ch", "--trace",
                                           str(trace), "--out", str(tmp_path / "s.json"),
                                           "--intake", "per-channel"])
    assert args.intake == "per-channel"
    st = run_simulation(args.config, [trace], None, intake=args.intake).summary
    assert st["num_cycles"] == n // 8 + 2
    assert run_simulation(args.config, [trace], None).summary["num_cycles"] == n + 2


def test_requests_waiting_at_the_cycle_limit_counts_per_channel_accepts():
    """max_cycles = 5: front-end ticks 0-4. Channel 0 takes one of its 40 writes a tick (5),
    channel 1 its read at tick 0: 35 due but not accepted (DRAMsim3's intake: 5 taken, 36)."""
    cfg = _cfg()
    addr = np.array([_address(cfg, ch=0, ba=i % 4, col=i) for i in range(40)]
                    + [_address(cfg, ch=1)], np.uint64)
    is_write = np.array([True] * 40 + [False])
    for intake, waiting in (("per-channel", 35), ("dramsim3", 36)):
        sim = Simulator(cfg, SimOptions(epoch=0, intake=intake, max_cycles=5))
        try:
            sim.feed(addr, is_write, np.zeros(41, np.int64), final=True)
            assert sim.stats().summary["num_requests_waiting"] == waiting
        finally:
            sim.close()
