"""A network at another batch size: every layer's N loop multiplied by the batch.

The built-in networks are batch 1 (images; GPT-3 blocks: one sequence of 2048 tokens).  N is
the batch dimension of every layer kind of :mod:`optimizer.workload` (a GEMM's weights do not
depend on it, a ``matmul``'s second operand — the per-head K or V — does, one per batch item
and head), so scaling N alone gives the batched workload.
"""
from __future__ import annotations

import dataclasses

from optimizer.errors import OptimizerError
from optimizer.workload import Network


def with_batch(net: Network, batch: int) -> Network:
    """``net`` with every layer's N multiplied by ``batch`` (>= 1); ``net`` itself for 1."""
    if not isinstance(batch, int) or batch < 1:
        raise OptimizerError(f"batch must be a positive integer, got {batch!r}")
    if batch == 1:
        return net
    from optimizer.workload import MAX_DIM
    big = [layer for layer in net.layers if layer.dims["N"] * batch > MAX_DIM]
    if big:
        # (as a network file's dimensions: the search's tables index every factor of N; a
        # batch of 2,000,000 failed inside the search, 10^12 ran for minutes without a line)
        raise OptimizerError(f"batch {batch}: layer '{big[0].name}' would have N = "
                             f"{big[0].dims['N'] * batch}, beyond {MAX_DIM} (2^20), the "
                             f"largest dimension the optimiser takes")
    layers = [dataclasses.replace(layer, dims={**layer.dims, "N": layer.dims["N"] * batch})
              for layer in net.layers]
    return Network(net.name, layers)
