"""SimOptions(threads=N) under the DRAMsim3 intake starts in one thread and hands the run over
to the channels' threads after a stretch without a refusal, and back to one thread when
refusals come too often (engine.simulator._StreamThreads: _hand_over / _hand_back). The
statistics, epochs and command traces equal the one-thread run's across any number of
switches, mid-run (reads in flight in the completion rings), with chunks, epochs and both
cycle limits; a run that hands over late; cancel in either phase; small windows that force
rollbacks after a hand-over; the online API and completions are unaffected (one thread)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import engine.kernel as K
import engine.simulator as S
from engine.api_checks import SimulatorInputError
from engine.config import load_config
from engine.errors import SimulationCancelled
from engine.simulator import SimOptions, Simulator, cmd_trace_paths, simulate_trace
from engine.trace import TraceChunk, iter_trace, write_text
from test_threads import _same
from test_threads_exact import _files, _mixed


class _Probe(S._StreamThreads):
    """The runner, with its switches and the completions in flight at each recorded."""
    seen: list = []

    def _hand_over(self) -> None:
        G = self.master.s["G"]
        self.in_flight = getattr(self, "in_flight", []) + [
            int(G[K.G_RING_R_N] + G[K.G_RING_F_N])]
        super()._hand_over()

    def stats(self):
        _Probe.seen.append(dict(switches=list(self.switches), windows=self.windows,
                                refusals=self.refusals, rollbacks=self.rollbacks,
                                in_flight=getattr(self, "in_flight", [])))
        return super().stats()


def _run(cfg, tr, opts: SimOptions):
    _Probe.seen = []
    st = S._simulate_threaded(cfg, iter_trace(tr, chunk_size=opts.chunk_size), opts, None,
                              None, runner=_Probe)
    return st, _Probe.seen[0]


@pytest.fixture
def switchy(monkeypatch):
    """Short stretches and a hand-back at every second refusal: many switches."""
    monkeypatch.setattr(S, "HANDOVER_AFTER", 300)
    monkeypatch.setattr(S, "HANDOVER_MAX", 1200)
    monkeypatch.setattr(S, "DENSE_REFUSALS", 2)


@pytest.mark.parametrize("threads,group", [(2, None), (3, None), (2, 1)])
def test_handover_and_back_identical_hbm2(tmp_path, monkeypatch, threads, group, switchy):
    """A mixed trace on HBM2 at one request every 2 cycles: bursts of refusals between
    stretches without; the run switches between one thread and threads several times, with
    reads in flight, and every statistic and command trace equals the one-thread run's
    (channels 4 or 2 a thread's Simulator, or one)."""
    monkeypatch.setattr(S, "GROUP_CHANNELS", group)
    cfg = load_config("HBM2")
    tr = _mixed(tmp_path / "m.trace", 14000, 7, interval=2)
    runs = (dict(epoch=1500, chunk_size=1000), dict(chunk_size=4096),
            dict(max_cycles=17_000, chunk_size=1500), dict(cycles=40_000, epoch=9000))
    for kw in runs:
        one = simulate_trace(cfg, tr, SimOptions(cmd_trace=tmp_path / "1.txt", **kw))
        many, seen = _run(cfg, tr, SimOptions(threads=threads, cmd_trace=tmp_path / "2.txt",
                                               **kw))
        assert _same(one, many) == [], kw
        assert _files(tmp_path / "1.txt", 8) == _files(tmp_path / "2.txt", 8), kw
        kinds = [k for k, _, _ in seen["switches"]]
        assert kinds[:3] == ["threads", "one", "threads"], (kw, seen["switches"])
        assert seen["refusals"] >= 2 and max(seen["in_flight"]) > 0, kw
    assert not list(tmp_path.glob("*.part"))


def test_handover_small_windows_force_rollbacks(tmp_path, monkeypatch, switchy):
    """After a hand-over, windows of 2 to 32 requests: refusals rolled back and bisected
    between switches; identical to one thread."""
    monkeypatch.setattr(S, "WINDOW_MIN", 2)
    monkeypatch.setattr(S, "WINDOW_START", 8)
    monkeypatch.setattr(S, "WINDOW_MAX", 32)
    monkeypatch.setattr(S, "DENSE_REFUSALS", 6)
    cfg = load_config("HBM2")
    tr = _mixed(tmp_path / "m.trace", 8000, 11, interval=1)
    one = simulate_trace(cfg, tr, SimOptions(epoch=2000, cmd_trace=tmp_path / "1.txt"))
    many, seen = _run(cfg, tr, SimOptions(threads=2, epoch=2000, cmd_trace=tmp_path / "2.txt"))
    assert _same(one, many) == []
    assert _files(tmp_path / "1.txt", 8) == _files(tmp_path / "2.txt", 8)
    assert seen["switches"] and seen["rollbacks"] > seen["refusals"] > 5, seen


def _late(path: Path, cfg, n_busy: int, n_light: int, seed: int) -> Path:
    """n_busy requests, four a cycle, all to channel 0 (its queues refuse nearly every
    request), then n_light random ones, one every 20 cycles (no refusal)."""
    rng = np.random.default_rng(seed)
    n = n_busy + n_light
    addr = (rng.integers(0, cfg.capacity_bytes // 64, n) * 64).astype(np.uint64)
    pos, sh = cfg.field_positions["ch"], cfg.shift_bits
    mask = np.uint64(((cfg.channels - 1) << pos) << sh)
    addr[:n_busy] &= ~mask
    cyc = np.concatenate([np.arange(n_busy) // 4,
                          n_busy // 4 + 1000 + 20 * np.arange(n_light)]).astype(np.int64)
    write_text(path, TraceChunk(addr, rng.random(n) < 0.3, cyc, np.zeros(n, np.uint16)))
    return path


def test_handover_late(tmp_path, monkeypatch):
    """Refusals in the first 5,000 requests: the run stays in one thread through them and
    hands over only in the light part; identical, with epochs and short chunks."""
    monkeypatch.setattr(S, "HANDOVER_AFTER", 1000)
    cfg = load_config("DDR4-3200").replace(channels=4)
    tr = _late(tmp_path / "t.trace", cfg, 5000, 6000, 17)
    for kw in (dict(epoch=3000, chunk_size=700), dict(max_cycles=60_000, chunk_size=2500)):
        one = simulate_trace(cfg, tr, SimOptions(cmd_trace=tmp_path / "1.txt", **kw))
        assert one.summary["frontend_mean_lag_cycles"] > 10
        many, seen = _run(cfg, tr, SimOptions(threads=2, cmd_trace=tmp_path / "2.txt", **kw))
        assert _same(one, many) == [], kw
        assert _files(tmp_path / "1.txt", 4) == _files(tmp_path / "2.txt", 4), kw
        assert len(seen["switches"]) == 1, seen
        kind, taken, _ = seen["switches"][0]
        assert kind == "threads" and taken >= 5000, seen
        assert seen["windows"] > 0 and seen["refusals"] == 0


def test_handover_default_stream_hands_over_early(tmp_path):
    """With the default stretch a trace without refusals hands over after the first
    HANDOVER_AFTER requests and stays threaded."""
    cfg = load_config("HBM2")
    n = 3 * S.HANDOVER_AFTER
    addr = (np.arange(n, dtype=np.uint64) * np.uint64(64))
    tr = tmp_path / "s.trace"
    write_text(tr, TraceChunk(addr, np.arange(n) % 3 == 0, 2 * np.arange(n, dtype=np.int64),
                              np.zeros(n, np.uint16)))
    one = simulate_trace(cfg, tr, SimOptions())
    many, seen = _run(cfg, tr, SimOptions(threads=2))
    assert _same(one, many) == []
    assert seen["switches"] == [("threads", S.HANDOVER_AFTER, seen["switches"][0][2])]
    assert seen["refusals"] == 0


@pytest.mark.parametrize("late", [False, True])
def test_handover_cancel(tmp_path, monkeypatch, late):
    """Cancel seen in the one-thread stretch (at its 2nd check) or at the last check of the
    threaded part (after the hand-over at request 500): SimulationCancelled, no
    command-trace file left."""
    monkeypatch.setattr(S, "HANDOVER_AFTER", 500)
    cfg = load_config("HBM2")
    tr = _mixed(tmp_path / "m.trace", 20000, 3, interval=4)
    opts = SimOptions(threads=2, chunk_size=3000, cmd_trace=tmp_path / "c.txt")
    calls = []
    simulate_trace(cfg, tr, opts, cancel=lambda: calls.append(1) or False)
    _, seen = _run(cfg, tr, opts)
    assert seen["switches"][0][:2] == ("threads", 500)
    for p in cmd_trace_paths(tmp_path / "c.txt", 8):
        p.unlink()
    stop = len(calls) - 1 if late else 2
    assert stop > 2 or not late
    calls.clear()

    def cancel() -> bool:
        calls.append(1)
        return len(calls) >= stop
    with pytest.raises(SimulationCancelled):
        simulate_trace(cfg, tr, opts, cancel=cancel)
    assert not list(tmp_path.glob("c*"))


def test_handover_online_api_and_completions_stay_one_thread(tmp_path):
    """The online API runs one thread (threads > 1 refused, as is track_completions with
    threads); an online run of a trace's requests equals the threaded simulate_trace."""
    cfg = load_config("HBM2")
    with pytest.raises(SimulatorInputError):
        Simulator(cfg, SimOptions(threads=2))
    with pytest.raises(SimulatorInputError):
        SimOptions(threads=2, track_completions=True)
    tr = _mixed(tmp_path / "m.trace", 9000, 5, interval=3)
    ch = next(iter(iter_trace(tr, chunk_size=1 << 20)))
    sim = Simulator(cfg, SimOptions(track_completions=True))
    for lo in range(0, len(ch.addr), 2500):
        sl = slice(lo, lo + 2500)
        sim.access(ch.addr[sl], np.full(len(ch.addr[sl]), 64), ch.is_write[sl], ch.cycle[sl])
    online = sim.finish()
    ids, _ = sim.completions()
    sim.close()
    assert len(ids) == len(ch.addr)
    many = simulate_trace(cfg, tr, SimOptions(threads=2))
    assert _same(online, many) == []


@pytest.mark.parametrize("intake", ["dramsim3", "per-channel"])
def test_merge_copies_every_latency_bin_of_the_parts(monkeypatch, intake):
    """The merge copies a part's latency histograms only up to their highest count
    (_ChannelThreads._gather_rows, both intakes' runners): a count above the bins a window's
    copy saw, and a master whose rows hold a count above the parts' (never so in a run: its
    rows are the parts' counts at the hand-over), still come out as the parts' whole rows."""
    monkeypatch.setattr(S, "HANDOVER_AFTER", 0)
    runner = S._StreamThreads if intake == "dramsim3" else S._ChannelThreads
    run = runner(load_config("HBM2"), SimOptions(threads=2, intake=intake))
    try:
        m, a, b = run.master, run.subs[0], run.subs[-1]
        a.s["hist_r"][-1, 30_000] += 2                    # above the copies' known top
        a.s["C"][-1, K.C_READS_DONE] += 2
        b.s["hist_w"][0, 7] += 1
        b.s["C"][0, K.C_WRITE_LAT_N] += 1
        m.s["hist_w"][0, 31_000] += 5                     # the master's own, above
        m.s["C"][0, K.C_WRITE_LAT_N] += 5
        run._gather_rows()
        for name in ("hist_r", "hist_w"):
            assert np.array_equal(m.s[name], np.concatenate([sub.s[name] for sub in run.subs]))
        assert m.s["hist_w"][0, 31_000] == 0
        assert m.s["hist_r"][len(a.s["hist_r"]) - 1, 30_000] == 2
    finally:
        run.close()


@pytest.mark.parametrize("seed", range(6))
def test_window_admissions_follow_the_front_end_recursion(seed):
    """A window's admissions if no queue refuses (_StreamThreads._admissions): the first at
    max(arrival, clock), each next at max(arrival, previous + 1); for strictly increasing
    arrivals from the clock on (its fast path), the arrivals themselves."""
    from types import SimpleNamespace
    rng = np.random.default_rng(seed)
    n = 2000
    gaps = rng.integers(0, 3, n) if seed % 2 else rng.integers(1, 4, n)
    c = 1000 + np.cumsum(gaps).astype(np.int64)
    state = SimpleNamespace(_adm_buf=np.zeros(0, np.int64), _ramp=np.zeros(0, np.int64))
    for p, q, clock in ((0, n, 0), (17, 1500, int(c[17])), (300, 1900, int(c[300]) + 40),
                        (5, 6, 10**6), (1999, 2000, 0)):
        got = S._StreamThreads._admissions(state, c, p, q, clock).copy()
        want, prev = [], clock - 1
        for x in c[p:q].tolist():
            prev = max(x, prev + 1)
            want.append(prev)
        assert got.tolist() == want
