"""When each operator runs, so requests arrive in time (the compute model is
:mod:`engine.workloads.compute`, shared with the studies).

Operators run one after another (one stream, as in eager PyTorch); an operator's requests
are spread evenly over its run time.
"""
from __future__ import annotations

import numpy as np

from engine.workloads.capture import PATTERN_ID, OpRecord
from engine.workloads.compute import Accelerator

__all__ = ["Accelerator", "op_duration_ns", "schedule", "arrival_cycles"]


def op_duration_ns(op: OpRecord, acc: Accelerator, utilisation: float | None = None) -> float:
    """Run time of one operator in ns (0 for an operator that moves no data)."""
    if not op.accesses:
        return 0.0
    return acc.op_time_ns(op.flops, op.bytes_read + op.bytes_written, op.accesses[-1].dtype,
                          op.pattern == PATTERN_ID["tiled"], utilisation)


def schedule(ops: list[OpRecord], acc: Accelerator,
             utilisation: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(start ns, duration ns) of every operator, run back to back from time 0."""
    dur = np.array([op_duration_ns(op, acc, utilisation) for op in ops], np.float64)
    start = np.concatenate([[0.0], np.cumsum(dur)[:-1]]) if len(ops) else np.zeros(0)
    return start, dur


def arrival_cycles(start_ns: float, dur_ns: float, position: np.ndarray, count: int,
                   tck_ns: float) -> np.ndarray:
    """Memory-clock cycles of requests ``position`` (0..count-1) spread over an operator."""
    t = start_ns + dur_ns * (position.astype(np.float64) + 0.5) / max(count, 1)
    return np.floor(t / tck_ns).astype(np.int64)
