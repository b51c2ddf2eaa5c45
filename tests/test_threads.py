"""SimOptions(threads=N) / `simulate --threads N`: channels simulated in parallel, under the
per-channel intake and under the DRAMsim3 intake (the default), every statistic identical to
the one-thread run with the same intake.

The traces are built to hit what couples channels in the one-state run: a backlogged channel
(most requests to channel 0) so that the others wait for it at chunk boundaries (results
depend on chunk_size, and the threaded run must reproduce that), segments in which some
channels get no request, long idle gaps (skipped in closed form), epochs, and the two cycle
limits (requests waiting and pending at the limit)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.api_checks import SimulatorInputError
from engine.config import load_config
from engine.simulator import SimOptions, Simulator, simulate_trace
from engine.trace import TraceChunk, write_text

# a method diagnostic, not a result: each thread skips idle stretches of its own channels
NOT_COMPARED = {"wall_seconds", "idle_cycles_skipped_in_closed_form"}


def _flat(d: dict, pre: str = "") -> dict:
    out: dict = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{pre}{k}."))
        else:
            out[f"{pre}{k}"] = v
    return out


def _trace(path: Path, cfg, n: int, seed: int, *, skew: float, per_cycle: int,
           gap: int = 0, blocks: bool = False) -> Path:
    rng = np.random.default_rng(seed)
    nch = cfg.channels
    addr = (rng.integers(0, cfg.capacity_bytes // 64, n) * 64).astype(np.uint64)
    ch = np.where(rng.random(n) < skew, 0, rng.integers(0, nch, n))
    if blocks:
        # runs of 300 requests to one channel: chunks in which other channels get nothing
        ch = (np.arange(n) // 300) % nch
    pos, sh = cfg.field_positions["ch"], cfg.shift_bits
    mask = np.uint64(((nch - 1) << pos) << sh)
    addr = (addr & ~mask) | ((ch.astype(np.uint64) << np.uint64(pos)) << np.uint64(sh))
    cyc = (np.arange(n) // per_cycle).astype(np.int64)
    if gap:
        cyc += (np.arange(n) // (n // 3)) * gap
    write_text(path, TraceChunk(addr, rng.random(n) < 0.4, cyc, np.zeros(n, np.uint16)))
    return path


def _same(a, b) -> list[str]:
    fa, fb = _flat(a.summary), _flat(b.summary)
    diff = [k for k in fa if k not in NOT_COMPARED and repr(fa[k]) != repr(fb.get(k))]
    diff += [k for k in fb if k not in fa]
    if a.epochs != b.epochs:
        diff.append("epochs")
    if repr(a.channels) != repr(b.channels):
        diff.append("channels")
    if repr(a.per_bank) != repr(b.per_bank):
        diff.append("per_bank")
    if not np.array_equal(a.read_latency_hist, b.read_latency_hist):
        diff.append("read_latency_hist")
    return diff


CASES = [  # (skew, requests per cycle, gap, blocks)
    (0.7, 4, 0, False),
    (0.0, 8, 0, False),
    (0.5, 2, 3_000_000, False),
    (0.0, 4, 0, True),
]
RUNS = [dict(chunk_size=777, epoch=2000), dict(chunk_size=4096),
        dict(max_cycles=9000, chunk_size=1000),
        dict(cycles=400_000, epoch=50_000, chunk_size=3000)]


@pytest.mark.parametrize("nch", [2, 4])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_threads_identical_to_one_thread(tmp_path, nch, case):
    cfg = load_config("DDR4-3200").replace(channels=nch)
    skew, per_cycle, gap, blocks = CASES[case]
    tr = _trace(tmp_path / "t.trace", cfg, 9000, 100 * nch + case, skew=skew,
                per_cycle=per_cycle, gap=gap, blocks=blocks)
    chunk_dependent = set()
    for run in RUNS:
        one = simulate_trace(cfg, tr, SimOptions(intake="per-channel", **run))
        assert one.summary["num_reads_done"] > 0
        chunk_dependent.add(one.summary["num_cycles"])
        for threads in (2, 4, 7):
            many = simulate_trace(cfg, tr, SimOptions(intake="per-channel", threads=threads,
                                                      **run))
            assert _same(one, many) == [], (run, threads)


def test_threads_reproduce_chunk_boundaries(tmp_path):
    """Under the per-channel intake the one-state run takes the next chunk only when every
    channel has taken its requests of the current one, so a backlogged channel delays the
    others and num_cycles depends on chunk_size; threads reproduce each value."""
    cfg = load_config("DDR4-3200").replace(channels=2)
    tr = _trace(tmp_path / "t.trace", cfg, 9000, 5, skew=0.7, per_cycle=4)
    seen = {}
    for cs in (500, 4096):
        one = simulate_trace(cfg, tr, SimOptions(intake="per-channel", chunk_size=cs))
        two = simulate_trace(cfg, tr, SimOptions(intake="per-channel", chunk_size=cs,
                                                 threads=2))
        assert _same(one, two) == []
        seen[cs] = one.summary["num_cycles"]
    assert seen[500] != seen[4096]


def test_threads_long_idle_gap_skipped(tmp_path):
    """Bursts 400M cycles apart: idle stretches skipped in closed form in every thread."""
    cfg = load_config("DDR4-3200").replace(channels=2)
    tr = _trace(tmp_path / "t.trace", cfg, 3000, 9, skew=0.3, per_cycle=2, gap=400_000_000)
    one = simulate_trace(cfg, tr, SimOptions(intake="per-channel", epoch=10**13))
    two = simulate_trace(cfg, tr, SimOptions(intake="per-channel", epoch=10**13, threads=2))
    assert one.summary["idle_cycles_skipped_in_closed_form"] > 0
    assert two.summary["idle_cycles_skipped_in_closed_form"] > 0
    assert _same(one, two) == []


def test_threads_8_channel_hbm2(tmp_path):
    cfg = load_config("HBM2")
    assert cfg.channels == 8
    tr = _trace(tmp_path / "t.trace", cfg, 8000, 3, skew=0.4, per_cycle=3)
    one = simulate_trace(cfg, tr, SimOptions(intake="per-channel", epoch=1000))
    for threads in (2, 3):
        many = simulate_trace(cfg, tr, SimOptions(intake="per-channel", epoch=1000,
                                                  threads=threads))
        assert _same(one, many) == []


def test_threads_refused_where_not_exact(tmp_path):
    # (a command trace is written by the channels' threads: tests/test_threads_exact.py)
    with pytest.raises(SimulatorInputError, match="track_completions"):
        SimOptions(threads=2, intake="per-channel", track_completions=True)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(SimulatorInputError, match="threads"):
            SimOptions(threads=bad, intake="per-channel")
    with pytest.raises(SimulatorInputError, match="simulate_trace"):
        Simulator(load_config("HBM2"), SimOptions(threads=2, intake="per-channel"))


def test_threads_one_channel_runs_one_thread(tmp_path):
    cfg = load_config("DDR4-3200")
    assert cfg.channels == 1
    tr = _trace(tmp_path / "t.trace", cfg, 2000, 1, skew=0.0, per_cycle=2)
    one = simulate_trace(cfg, tr, SimOptions(intake="per-channel"))
    two = simulate_trace(cfg, tr, SimOptions(intake="per-channel", threads=2))
    assert _same(one, two) == []


def _cli_stats(tmp_path, tr, *extra: str) -> list[dict]:
    """`main.py simulate` on HBM2 with --threads 1 and 2: the two statistics JSONs."""
    import json

    import main
    outs = []
    for threads in ("1", "2"):
        out = tmp_path / f"s{threads}.json"
        assert main.main(["simulate", "--config", "HBM2", "--trace", str(tr), "--out", str(out),
                          "--threads", threads, *extra]) == 0
        s = json.loads(out.read_text())
        for k in NOT_COMPARED:
            s.pop(k)
        outs.append(s)
    return outs


def test_cli_threads(tmp_path):
    tr = _trace(tmp_path / "t.trace", load_config("HBM2"), 3000, 4, skew=0.5, per_cycle=3)
    one, two = _cli_stats(tmp_path, tr, "--intake", "per-channel")
    assert one == two


# ---- the DRAMsim3 intake: one in-order stream, a full queue stalls every channel ----------
DRAMSIM3_CASES = CASES + [(0.9, 8, 0, False)]     # + nearly every request to channel 0


@pytest.fixture
def no_fallback(monkeypatch):
    """The threaded method itself, however often queues refuse (no one-thread fallback)."""
    import engine.simulator as sim
    monkeypatch.setattr(sim, "DENSE_REFUSALS", 1 << 60)
    monkeypatch.setattr(sim, "HANDOVER_AFTER", 0)       # threads from the first request


@pytest.mark.parametrize("nch", [2, 4])
@pytest.mark.parametrize("case", range(len(DRAMSIM3_CASES)))
def test_threads_dramsim3_intake_identical_to_one_thread(tmp_path, nch, case, no_fallback):
    """Windows of optimistic admissions, a refused admission rolled back and resolved: the
    traces fill the queues often (the front end lags), have 3M-cycle idle gaps, and blocks
    of requests to one channel; the runs cut chunks, epochs and both cycle limits."""
    cfg = load_config("DDR4-3200").replace(channels=nch)
    skew, per_cycle, gap, blocks = DRAMSIM3_CASES[case]
    tr = _trace(tmp_path / "t.trace", cfg, 9000, 50 * nch + case, skew=skew,
                per_cycle=per_cycle, gap=gap, blocks=blocks)
    for run in RUNS:
        one = simulate_trace(cfg, tr, SimOptions(**run))
        assert one.summary["num_reads_done"] > 0
        if per_cycle >= 4 and "max_cycles" not in run:
            assert one.summary["frontend_mean_lag_cycles"] > 10    # queues full: stalls
        for threads in (2, 3) if nch == 2 else (2, 4, 7):
            many = simulate_trace(cfg, tr, SimOptions(threads=threads, **run))
            assert _same(one, many) == [], (run, threads)


def _stream_run(cfg, tr, **kw):
    """A threaded DRAMsim3-intake run, with its method's counters."""
    from engine.simulator import _StreamThreads, _simulate_threaded
    from engine.trace import iter_trace
    seen = []

    class Probe(_StreamThreads):
        def stats(self):
            seen.append((self.windows, self.refusals, self.rollbacks))
            return super().stats()
    opts = SimOptions(**kw)
    stats = _simulate_threaded(cfg, iter_trace(tr, chunk_size=opts.chunk_size), opts, None,
                               None, runner=Probe)
    return stats, seen[0]


def test_threads_dramsim3_refusals_rolled_back(tmp_path, no_fallback):
    """The saturated trace exercises the refusal path (many refusals, channels restored);
    a light one runs in windows without a refusal."""
    cfg = load_config("DDR4-3200").replace(channels=4)
    heavy = _trace(tmp_path / "h.trace", cfg, 6000, 11, skew=0.6, per_cycle=4)
    rng = np.random.default_rng(12)
    n = 6000                                    # one request every 40 cycles
    light = tmp_path / "l.trace"
    write_text(light, TraceChunk((rng.integers(0, 1 << 24, n) * 64).astype(np.uint64),
                                 rng.random(n) < 0.4, np.arange(n, dtype=np.int64) * 40,
                                 np.zeros(n, np.uint16)))
    for tr, busy in ((heavy, True), (light, False)):
        one = simulate_trace(cfg, tr, SimOptions(chunk_size=2000))
        many, (windows, refusals, rollbacks) = _stream_run(cfg, tr, threads=2,
                                                           chunk_size=2000)
        assert _same(one, many) == []
        assert windows >= 3
        if busy:
            assert refusals > 20 and rollbacks > 0
        else:
            assert refusals == 0 and one.summary["frontend_mean_lag_cycles"] == 0


def test_threads_dramsim3_dense_refusals_stay_in_one_thread(tmp_path, caplog):
    """Every request to one channel, faster than it serves them: a refusal every few
    requests; the run starts in one thread and never hands over to threads (logged; no
    channel Simulator is built), with the one-thread run's statistics."""
    import logging
    cfg = load_config("DDR4-3200").replace(channels=4)
    tr = _trace(tmp_path / "t.trace", cfg, 6000, 13, skew=1.0, per_cycle=4)
    one = simulate_trace(cfg, tr, SimOptions(epoch=3000))
    with caplog.at_level(logging.INFO, logger="engine.simulator"):
        many = simulate_trace(cfg, tr, SimOptions(epoch=3000, threads=2))
    assert "simulated in one thread" in caplog.text
    assert _same(one, many) == []
    _, seen = _stream_run(cfg, tr, threads=2, epoch=3000)
    assert seen == (0, 0, 0)                    # no window, refusal or rollback: one state


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threads_dramsim3_8_channel_hbm2(tmp_path, threads, no_fallback):
    cfg = load_config("HBM2")
    tr = _trace(tmp_path / "t.trace", cfg, 12000, 3, skew=0.4, per_cycle=3)
    for kw in (dict(epoch=1000), dict(phantom_eof_read=True, chunk_size=5000),
               dict(cycles=30_000, epoch=7000)):
        one = simulate_trace(cfg, tr, SimOptions(**kw))
        many = simulate_trace(cfg, tr, SimOptions(threads=threads, **kw))
        assert _same(one, many) == [], kw


def test_threads_dramsim3_long_idle_gap_skipped(tmp_path, no_fallback):
    cfg = load_config("DDR4-3200").replace(channels=2)
    tr = _trace(tmp_path / "t.trace", cfg, 3000, 9, skew=0.3, per_cycle=4, gap=400_000_000)
    one = simulate_trace(cfg, tr, SimOptions(epoch=10**13))
    two = simulate_trace(cfg, tr, SimOptions(epoch=10**13, threads=2))
    assert one.summary["idle_cycles_skipped_in_closed_form"] > 0
    assert two.summary["idle_cycles_skipped_in_closed_form"] > 0
    assert _same(one, two) == []


def test_cli_threads_dramsim3_intake(tmp_path, no_fallback):
    tr = _trace(tmp_path / "t.trace", load_config("HBM2"), 3000, 4, skew=0.7, per_cycle=4)
    one, two = _cli_stats(tmp_path, tr, "--max-cycles", "4000")
    assert one["frontend_mean_lag_cycles"] > 0
    assert one == two
