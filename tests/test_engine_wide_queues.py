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


def test_bit_index_is_log2_of_every_mask_bit() -> None:
    """The due mask's queue index (_bit_index: a de Bruijn multiply and look-up) for every
    bit a mask of QMASK_MAX queues can hold, and one beyond."""
    import numpy as np

    from engine import kernel as K
    assert sorted(K.BIT_INDEX_OF.tolist()) == list(range(64))
    for i in range(QMASK_MAX + 1):
        x = np.int64(1) << np.int64(i)
        assert K._bit_index(x) == i
        with np.errstate(over="ignore"):       # (numpy scalars warn where numba wraps)
            assert K._bit_index.py_func(x) == i
