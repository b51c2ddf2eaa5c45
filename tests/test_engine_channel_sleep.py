"""Sleeping channels (engine.kernel: a channel whose controller tick changed nothing is not
ticked again until its next possible command, a refresh falling due or a request accepted for
it; its rank power states are counted in closed form when one of its commands opens a rank's
first row or closes its last one and when run_kernel returns, and every call starts with all
channels awake).

So results must not depend on where the kernel calls end: the same trace on 8-channel HBM2,
most requests to one channel and a few to another, around an idle gap, cut into 40-request
chunks with short epochs, or in one chunk, gives every statistic identical; and every rank of
every channel has each cycle counted once, as active or as precharged idle.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.config import load_config
from engine.simulator import SimOptions, simulate_trace
from engine.trace import TraceChunk, write_text

NOT_COMPARED = {"wall_seconds", "idle_cycles_skipped_in_closed_form"}


def _skewed_trace(path: Path, cfg, n: int = 3000, gap: int = 40_000) -> Path:
    """Channel 0 busy, channel 5 now and then, the other six idle; an idle gap mid-trace."""
    rng = np.random.default_rng(17)
    addr = (rng.integers(0, cfg.capacity_bytes // 64, n) * 64).astype(np.uint64)
    ch = np.where(rng.random(n) < 0.9, 0, 5).astype(np.uint64)
    pos, sh = cfg.field_positions["ch"], cfg.shift_bits
    mask = np.uint64(((cfg.channels - 1) << pos) << sh)
    addr = (addr & ~mask) | ((ch << np.uint64(pos)) << np.uint64(sh))
    cyc = np.arange(n, dtype=np.int64) * 3
    cyc[n // 2:] += gap
    write_text(path, TraceChunk(addr, rng.random(n) < 0.3, cyc, np.zeros(n, np.uint16)))
    return path


def test_sleeping_channels_do_not_depend_on_kernel_calls(tmp_path):
    cfg = load_config("HBM2")
    assert cfg.channels == 8
    trace = _skewed_trace(tmp_path / "skewed.trace", cfg)
    cut = simulate_trace(cfg, trace, SimOptions(chunk_size=40, epoch=997))
    whole = simulate_trace(cfg, trace, SimOptions(epoch=0))
    a = {k: v for k, v in cut.summary.items() if k not in NOT_COMPARED}
    b = {k: v for k, v in whole.summary.items() if k not in NOT_COMPARED}
    assert a == b
    assert repr(cut.channels) == repr(whole.channels)
    for k in cut.per_bank:
        assert np.array_equal(cut.per_bank[k], whole.per_bank[k]), k
    assert len(cut.epochs) > 40


def test_every_rank_cycle_is_counted_once(tmp_path):
    cfg = load_config("HBM2")
    trace = _skewed_trace(tmp_path / "skewed.trace", cfg)
    # an exact-cycles run: the memory runs on, idle, after the last request
    st = simulate_trace(cfg, trace, SimOptions(chunk_size=100, epoch=5000, cycles=300_000))
    n = st.summary["num_cycles"]
    assert n == 300_000
    busy = [sum(c["rank_active_cycles"]) for c in st.channels]
    assert busy[0] > 0 and busy[5] > 0 and busy[1] == 0
    for c in st.channels:
        for act, idle in zip(c["rank_active_cycles"], c["all_bank_idle_cycles"]):
            assert act + idle == n
