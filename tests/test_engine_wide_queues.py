"""Memories with more command queues than the DRAMsim3 scheduler's due-queue mask holds.

The kernel visits only the queues of a bit mask when it can (engine/kernel.py, QMASK_MAX
queues); with more it scans them all in round-robin order. No stock DRAMsim3 config has more
than 32 queues, so tests/data/reference/dramsim3-wide holds DRAMsim3 runs on DDR4-3200 with 4
and 8 ranks (64 and 128 per-bank queues; benchmarks/make_dramsim3_wide_refs.py made them with a
stock DRAMsim3 build): every command and every statistic must be identical there too.
"""
from __future__ import annotations

import gzip
import json

import pytest

from engine.config import load_ini
from engine.kernel import QMASK_MAX
from engine.simulator import SimOptions, cmd_trace_paths, simulate_trace
from refdata import data_file
from test_engine_cycles import _check_summary, _head

RUNS = json.loads(data_file("reference/dramsim3-wide/runs.json").read_text())["runs"]


@pytest.mark.parametrize("run", RUNS, ids=[r["name"] for r in RUNS])
def test_more_queues_than_the_mask_matches_dramsim3(shared_dir, ref_traces, tmp_path, run):
    cfg = load_ini(data_file(f"reference/dramsim3-wide/configs/{run['config']}.ini"))
    assert cfg.ranks == run["ranks"]
    # per-bank queues: one per bank of every rank, more than the mask holds
    assert cfg.ranks * cfg.bankgroups * cfg.banks_per_group > QMASK_MAX
    trace = _head(ref_traces / f"{run['pattern']}.trace", tmp_path / "head.trace", run["head"])
    cmd = tmp_path / "cmd.trace"
    s = simulate_trace(cfg, trace, SimOptions(cycles=run["cycles"], phantom_eof_read=True,
                                              cmd_trace=cmd, epoch=0)).summary
    ours = sorted(ln.split() for p in cmd_trace_paths(cmd, cfg.channels)
                  for ln in p.read_text().splitlines())
    with gzip.open(data_file(f"reference/dramsim3-wide/cmdtrace/{run['name']}.ch0"
                             ".cmd.trace.gz"), "rt") as fh:
        ref = sorted(ln.split() for ln in fh if ln.strip())
    assert len(ours) == len(ref) > 0
    assert ours == ref
    _check_summary(s, run["channels"], cfg)
    if run["kind"] == "short":
        assert s["num_requests_pending"] + s["num_requests_waiting"] > 0
    else:
        assert s["num_requests_pending"] == 0 and s["num_requests_waiting"] == 0


def test_trailing_zeros_finds_every_mask_bit_compiled_and_in_python() -> None:
    """The due mask's next queue (engine.bits.trailing_zeros: count-trailing-zeros in the
    compiled kernel, plain Python otherwise) for every bit a mask of QMASK_MAX queues can
    hold, alone and with the higher ones set, and the sign bit, through numba and in Python."""
    import numpy as np
    from numba import njit

    from engine import bits, lazy_jit
    lazy_jit.materialize()              # (registers the compiled form, as a kernel's first use)

    @njit(cache=False)
    def compiled(x):
        return bits.trailing_zeros(x)

    for i in range(QMASK_MAX + 1):
        for high in (0, -(1 << (i + 1)) & ((1 << QMASK_MAX + 1) - 1)):
            x = (1 << i) | high
            assert bits.trailing_zeros(x) == i
            assert compiled(np.int64(x)) == i
    assert bits.trailing_zeros(-(1 << 63)) == 63 == compiled(np.int64(-(1 << 63)))
