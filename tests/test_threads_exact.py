"""SimOptions(threads=N), beyond the statistics (tests/test_threads.py): the command traces are
byte-identical to the one-thread run's (both intakes, with refusals rolled back), the
DRAMsim3 intake's optimistic windows stay exact when they are forced small (many refusals,
rollbacks and bisections), on an 8-channel DDR4 and on HBM2 with a mixed trace, and a
cancel or an error in a channel's thread ends the run cleanly (no partial command trace)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import engine.simulator as S
from engine.config import load_config
from engine.errors import SimulationCancelled
from engine.simulator import SimOptions, cmd_trace_paths, simulate_trace
from engine.trace import TraceChunk, write_text
from test_threads import _same, _stream_run, _trace, no_fallback  # noqa: F401 (a fixture)


def _mixed(path: Path, n: int, seed: int, interval: int = 1) -> Path:
    """gen_traces' mixed pattern in small: four interleaved sequential streams (70 %) and
    random lines (30 %), a third writes; one request every `interval` cycles."""
    rng = np.random.default_rng(seed)
    bases = rng.integers(0, 64, 4) * (64 << 20)
    which = rng.integers(0, 4, n)
    seq = np.zeros(n, np.int64)
    for s in range(4):
        m = which == s
        seq[m] = bases[s] + 64 * np.arange(int(m.sum()))
    addr = np.where(rng.random(n) < 0.7, seq, rng.integers(0, (4 << 30) // 64, n) * 64)
    write_text(path, TraceChunk(addr.astype(np.uint64), rng.random(n) < 1 / 3,
                                np.arange(n, dtype=np.int64) * interval,
                                np.zeros(n, np.uint16)))
    return path


def _files(base: Path, channels: int) -> list[bytes]:
    return [p.read_bytes() for p in cmd_trace_paths(base, channels)]


@pytest.mark.parametrize("intake", ["dramsim3", "per-channel"])
def test_threads_cmd_trace_identical_ddr4_8_channels(tmp_path, intake, no_fallback):
    """8-channel DDR4, 60 % of the requests to channel 0 (its queues fill: refusals under
    the DRAMsim3 intake), epochs, short chunks, and a cycle limit: every channel's command
    trace is byte-identical to the one-thread run's, and so is every statistic."""
    cfg = load_config("DDR4-3200").replace(channels=8)
    tr = _trace(tmp_path / "t.trace", cfg, 5000, 21, skew=0.6, per_cycle=3)
    for kw in (dict(chunk_size=900, epoch=2500), dict(max_cycles=4000, chunk_size=2000)):
        one = simulate_trace(cfg, tr, SimOptions(intake=intake, cmd_trace=tmp_path / "1.txt",
                                                 **kw))
        many = simulate_trace(cfg, tr, SimOptions(intake=intake, threads=2,
                                                  cmd_trace=tmp_path / "2.txt", **kw))
        assert _same(one, many) == [], kw
        a, b = _files(tmp_path / "1.txt", 8), _files(tmp_path / "2.txt", 8)
        assert all(len(x) > 1000 for x in a)
        assert a == b, [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
        assert one.summary["frontend_mean_lag_cycles"] > 10
    assert not list(tmp_path.glob("*.part"))


def test_threads_small_windows_mixed_hbm2(tmp_path, monkeypatch, no_fallback):
    """Windows forced small (8 to 64 requests): a mixed trace on HBM2 at one request a
    cycle meets many refusals, each rolled back and bisected; statistics and command traces
    equal the one-thread run's, with a window boundary at nearly every place."""
    monkeypatch.setattr(S, "WINDOW_MIN", 2)
    monkeypatch.setattr(S, "WINDOW_START", 8)
    monkeypatch.setattr(S, "WINDOW_MAX", 64)
    cfg = load_config("HBM2")
    tr = _mixed(tmp_path / "m.trace", 6000, 5)
    for kw in (dict(epoch=1500), dict(cycles=5000, chunk_size=1000)):
        one = simulate_trace(cfg, tr, SimOptions(cmd_trace=tmp_path / "1.txt", **kw))
        many, (windows, refusals, rollbacks) = _stream_run(
            cfg, tr, threads=3, cmd_trace=tmp_path / "2.txt", **kw)
        assert _same(one, many) == [], kw
        assert _files(tmp_path / "1.txt", 8) == _files(tmp_path / "2.txt", 8), kw
        assert refusals > 10 and rollbacks > refusals and windows > 6000 // 64, kw


def test_threads_dramsim3_mixed_ddr4_8_channels(tmp_path, no_fallback):
    """The mixed pattern on an 8-channel DDR4 at the default windows, 2 and 8 threads."""
    cfg = load_config("DDR4-3200").replace(channels=8)
    tr = _mixed(tmp_path / "m.trace", 1500, 9, interval=3)
    one = simulate_trace(cfg, tr, SimOptions(epoch=4000))
    assert one.summary["frontend_mean_lag_cycles"] > 100      # queues full: many refusals
    for threads in (2, 8):
        many = simulate_trace(cfg, tr, SimOptions(epoch=4000, threads=threads))
        assert _same(one, many) == [], threads


@pytest.mark.parametrize("intake", ["dramsim3", "per-channel"])
def test_threads_cancel_ends_cleanly(tmp_path, intake):
    """The cancel flag is seen while the channels' threads run: SimulationCancelled, and the
    partial command traces are removed."""
    cfg = load_config("HBM2")
    tr = _mixed(tmp_path / "m.trace", 20000, 3, interval=2)
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 3
    with pytest.raises(SimulationCancelled):
        simulate_trace(cfg, tr, SimOptions(intake=intake, threads=2, chunk_size=2000,
                                           cmd_trace=tmp_path / "c.txt"), cancel=cancel)
    assert not list(tmp_path.glob("c*"))


def test_threads_error_in_a_channel_thread(tmp_path, monkeypatch):
    """An exception in one channel's thread reaches the caller; no partial trace is left."""
    monkeypatch.setattr(S, "GROUP_CHANNELS", 1)         # a Simulator a channel
    cfg = load_config("HBM2")
    tr = _mixed(tmp_path / "m.trace", 20000, 4, interval=2)
    run = S.Simulator._run
    n = [0]

    def failing(self, *a, **kw):
        if self._log_channel == 5:
            n[0] += 1
            if n[0] == 3:
                raise RuntimeError("injected failure in channel 5")
        return run(self, *a, **kw)
    monkeypatch.setattr(S.Simulator, "_run", failing)
    with pytest.raises(RuntimeError, match="channel 5"):
        simulate_trace(cfg, tr, SimOptions(threads=2, chunk_size=2000,
                                           cmd_trace=tmp_path / "c.txt"))
    assert n[0] == 3
    assert not list(tmp_path.glob("c*"))
