"""Idle stretches skipped in closed form (SimOptions.fast_idle, the default).

An idle memory (nothing queued, only refresh going on) repeats itself every refresh period
(the refresh rotation times its interval); the simulator detects that its whole state changes
by the same amount over consecutive periods and adds k periods at once. Checked here against
the step-by-step simulation (fast_idle=False) on small gaps, with the threshold lowered so
that the closed form is used: every statistic (energy, refresh and precharge counts, power
state cycles, epochs, latencies) identical, on several memories and every refresh policy.
And a 10^12-cycle gap, which step by step would take minutes, is skipped.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import engine.simulator as simulator
from engine.config import load_config
from engine.simulator import SimOptions, Simulator, simulate_trace

VARIANTS = {
    "DDR4-3200": {},
    "DDR4-3200 simultaneous": {"refresh_policy": "RANK_LEVEL_SIMULTANEOUS"},
    "DDR4-3200 per-bank": {"refresh_policy": "BANK_LEVEL_STAGGERED"},
    "DDR4-3200 frfcfs close": {"scheduler": "frfcfs", "page_policy": "close",
                               "row_buf_policy": "CLOSE_PAGE"},
    "DDR4-3200 parbs": {"scheduler": "parbs"},
    "HBM2": {},
    "LPDDR4-2400": {},
    "GDDR6": {},
}


def _config(variant: str):
    cfg = load_config(variant.split()[0])
    return cfg.replace(**VARIANTS[variant]) if VARIANTS[variant] else cfg


def _bursty_trace(path: Path, gap: int, bursts: int = 3, n: int = 120) -> Path:
    lines = []
    for b in range(bursts):
        lines += [f"{(i * 8192 + b * 4160) % (1 << 30):#x} {'WRITE' if i % 3 == 0 else 'READ'} "
                  f"{b * gap + i * 4}" for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _compare(a: dict, b: dict) -> None:
    skip = {"wall_seconds", "idle_cycles_skipped_in_closed_form"}
    diff = {k: (a[k], b[k]) for k in a if k not in skip and repr(a[k]) != repr(b[k])}
    assert not diff


@pytest.fixture
def low_threshold(monkeypatch):
    monkeypatch.setattr(simulator, "FF_MIN_PERIODS", 4)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_closed_form_idle_equals_step_by_step(tmp_path, low_threshold, variant):
    cfg = _config(variant)
    period = Simulator(cfg, SimOptions())._ff_period
    trace = _bursty_trace(tmp_path / "bursty.trace", gap=9 * period + 777)
    runs = {}
    for fast in (False, True):
        # epochs (their records compared too) long enough to hold a skippable stretch; a
        # cycle limit well after the trace: the run goes on idle to it
        st = simulate_trace(cfg, trace, SimOptions(epoch=20 * period + 13, fast_idle=fast,
                                                   cycles=41 * period + 5))
        runs[fast] = st
    slow, fast = runs[False], runs[True]
    assert slow.summary["idle_cycles_skipped_in_closed_form"] == 0
    assert fast.summary["idle_cycles_skipped_in_closed_form"] >= 8 * period
    assert fast.summary["num_ref_cmds"] + fast.summary["num_refb_cmds"] > 0
    _compare(slow.summary, fast.summary)
    assert slow.epochs == fast.epochs
    for a, b in zip(slow.channels, fast.channels):
        _compare(a, b)
    for k in slow.per_bank:
        assert np.array_equal(slow.per_bank[k], fast.per_bank[k]), k


def test_online_advance_skips_and_matches(low_threshold):
    cfg = load_config("DDR4-3200")
    sims = [Simulator(cfg, SimOptions(epoch=10**9, fast_idle=f)) for f in (False, True)]
    period = sims[1]._ff_period
    for sim in sims:
        sim.feed(np.array([0, 8192, 64], np.uint64), np.array([0, 1, 0]), np.array([0, 5, 9]))
        sim.advance(10 * period + 3)
        sim.access([4096], [256], [False], [10 * period + 3])
    a, b = (sim.finish().summary for sim in sims)
    assert b["idle_cycles_skipped_in_closed_form"] > 0
    _compare(a, b)


def test_a_gap_of_10_to_the_12_cycles_is_skipped(tmp_path):
    """Step by step this is 1.6e8 refreshes (minutes); in closed form a few periods."""
    cfg = load_config("DDR4-3200")
    trace = tmp_path / "gap.trace"
    trace.write_text("0x0 READ 0\n0x40 WRITE 5\n0x2000 READ 1000000000000\n")
    s = simulate_trace(cfg, trace, SimOptions(epoch=10**13)).summary
    sim = Simulator(cfg, SimOptions())
    interval = int(sim.P[simulator.K.P_REF_INTERVAL])
    assert s["num_cycles"] > 10**12
    assert s["idle_cycles_skipped_in_closed_form"] > 10**12 - 10**9
    # every refresh falling due in the idle time was issued (one per interval, staggered)
    assert abs(s["num_ref_cmds"] - s["num_cycles"] // interval) <= 2
    assert s["num_reads_done"] == 2 and s["num_writes_done"] == 1
    # background energy over the whole gap: precharged standby almost all the time
    assert s["energy_by_cause"]["background"] > 0.9 * (s["total_energy"] - s["ref_energy"])


def test_beyond_2_to_the_62_is_an_error():
    cfg = load_config("DDR4-3200")
    with pytest.raises(simulator.DiffMemError, match="2\\^62"):
        Simulator(cfg, SimOptions()).advance(2**62)
    with pytest.raises(simulator.DiffMemError, match="2\\^62"):
        SimOptions(cycles=2**62)


def test_step_by_step_still_refuses_huge_gaps():
    cfg = load_config("DDR4-3200")
    sim = Simulator(cfg, SimOptions(epoch=10**13, fast_idle=False))
    with pytest.raises(simulator.DiffMemError, match="refresh intervals"):
        sim.advance(10**12)
