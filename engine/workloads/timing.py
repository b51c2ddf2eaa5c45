"""Compute model of the accelerator: when each operator runs, so requests arrive in time.

An operator takes ``launch_ns`` plus the longer of its arithmetic time (FLOPs over the peak
rate of the unit it runs on: tensor cores for matrix multiplies and convolutions, the
vector units otherwise) and its on-chip data time (bytes it touches over the L2 bandwidth).
Operators run one after another (one stream, as in eager PyTorch); an operator's requests
are spread evenly over its run time.  DRAM bandwidth is deliberately not in the model: how
fast DRAM serves the requests is what the simulator is for.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.workloads.capture import PATTERN_ID, OpRecord


@dataclass(frozen=True)
class Accelerator:
    """Peak rates of an accelerator (defaults: NVIDIA A100 SXM, from its datasheet)."""

    name: str = "A100"
    #: tensor-core peak by dtype, FLOP/s (fp32 without TF32 runs on the vector units)
    matrix_flops: dict[str, float] = field(default_factory=lambda: {
        "float32": 19.5e12, "bfloat16": 312e12, "float16": 312e12})
    #: vector-unit peak by dtype, FLOP/s
    vector_flops: dict[str, float] = field(default_factory=lambda: {
        "float32": 19.5e12, "bfloat16": 39e12, "float16": 78e12})
    l2_bandwidth: float = 5.0e12          # bytes/s, on-chip (measured A100 L2: ~4-7 TB/s)
    launch_ns: float = 2000.0             # per-kernel overhead in eager mode

    def op_duration_ns(self, op: OpRecord) -> float:
        """Run time of one operator in ns (0 for an operator that moves no data)."""
        if not op.accesses:
            return 0.0
        dtype = op.accesses[-1].dtype
        table = self.matrix_flops if op.pattern == PATTERN_ID["tiled"] else self.vector_flops
        peak = table.get(dtype, table["float32"])
        touched = op.bytes_read + op.bytes_written
        return self.launch_ns + 1e9 * max(op.flops / peak, touched / self.l2_bandwidth)


def schedule(ops: list[OpRecord], acc: Accelerator) -> tuple[np.ndarray, np.ndarray]:
    """(start ns, duration ns) of every operator, run back to back from time 0."""
    dur = np.array([acc.op_duration_ns(op) for op in ops], np.float64)
    start = np.concatenate([[0.0], np.cumsum(dur)[:-1]]) if len(ops) else np.zeros(0)
    return start, dur


def arrival_cycles(start_ns: float, dur_ns: float, position: np.ndarray, count: int,
                   tck_ns: float) -> np.ndarray:
    """Memory-clock cycles of requests ``position`` (0..count-1) spread over an operator."""
    t = start_ns + dur_ns * (position.astype(np.float64) + 0.5) / max(count, 1)
    return np.floor(t / tck_ns).astype(np.int64)
