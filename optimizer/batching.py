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
    layers = [dataclasses.replace(layer, dims={**layer.dims, "N": layer.dims["N"] * batch})
              for layer in net.layers]
    return Network(net.name, layers)
