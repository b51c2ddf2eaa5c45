"""Closed-form memory traffic of the fused ("flash") attention kernel the traces model.

``TraceSpec.attention = "flash"`` replaces the models' bmm-softmax-bmm with PyTorch's
memory-efficient SDPA kernel (``aten._scaled_dot_product_efficient_attention`` and its
backward; see :func:`engine.workloads.models.common.attention`).  Per call, with ``bh``
batch x heads, ``lq`` queries, ``lk`` keys, head dims ``d`` (q, k) and ``dv`` (v), element
size ``item`` bytes:

forward
    reads Q (bh lq d), K (bh lk d), V (bh lk dv); writes O (bh lq dv) and the fp32
    logsumexp, padded to ``LSE_ALIGN`` = 32 queries (``kAlignLSE`` of the CUTLASS kernel; the
    meta kernel in ``torch/_meta_registrations.py`` allocates ``ceil(M / 32) * 32``).
backward
    reads dO, Q, K, V, O and the logsumexp; writes dQ, dK, dV (the scores are recomputed
    on chip; nothing of size lq x lk reaches memory).

These are the bytes of the tensors; the generator issues each tensor's distinct 64-byte
lines once per operator (:mod:`engine.workloads.expand`), which is what the trace carries
before its L2 filter.  Inside the kernel every query block of ``queries_per_block(d)``
queries streams all of K and V again: ``ceil(lq / Bq)`` passes over K and V per (batch,
head).  Those re-reads go to L2; the trace assumes they hit there (as it does for GEMM
tiles), which holds when one head's K and V (``lk (d + dv) item`` bytes, at most a few MiB
here) fit in the 40 MiB L2.  :func:`l2_side_bytes` gives the kernel's L2-side read traffic
for comparison.

Sources, all in the installed torch 2.13 (``.venv/.../torch/``):

* query block: ``include/ATen/native/transformers/cuda/mem_eff_attention/kernels/cutlassF.h``,
  ``dispatch_cutlassF_f32_sm80`` (the same three shapes for bf16/f16): ``AttentionKernel``
  instantiated 64x64 (``kMaxK`` 64), 64x128 (``kMaxK`` 128) and 32x128 ``gmem`` (``kMaxK``
  65536), queries x keys per block; the launcher takes the first whose ``kMaxK`` covers the
  head dim (PyTorch's ``attention.cu``, not shipped: from its source, not checked here).
* ``LSE_ALIGN``: ``kernel_forward.h``, ``kAlignLSE = 32``; ``_meta_registrations.py``
  allocates the logsumexp as ``ceil(M / 32) * 32``.
* backend choice: ``torch._C._get_sdp_priority_order()`` is FLASH, EFFICIENT, MATH, CUDNN;
  ``include/ATen/native/transformers/sdp_utils_cpp.h`` ``check_last_dim_stride_equals_1_dense``
  makes every fused kernel ineligible unless q, k, v have stride 1 in the head dim.
"""
from __future__ import annotations

from dataclasses import dataclass

#: logsumexp padding of the memory-efficient kernel (queries), see the module docstring.
LSE_ALIGN = 32


def queries_per_block(head_dim: int) -> int:
    """Query-block size of PyTorch's sm80 memory-efficient forward kernel for ``head_dim``."""
    return 64 if head_dim <= 128 else 32


@dataclass(frozen=True)
class FlashBytes:
    """Bytes one fused attention call reads and writes (forward and backward)."""

    forward_read: int
    forward_write: int
    backward_read: int
    backward_write: int


def _lse(bh: int, lq: int) -> int:
    return bh * (-(-lq // LSE_ALIGN) * LSE_ALIGN) * 4


def flash_bytes(bh: int, lq: int, lk: int, d: int, dv: int, item: int) -> FlashBytes:
    """Tensor bytes of one call (see the module docstring)."""
    q, k, v, o = bh * lq * d * item, bh * lk * d * item, bh * lk * dv * item, bh * lq * dv * item
    lse = _lse(bh, lq)
    return FlashBytes(forward_read=q + k + v, forward_write=o + lse,
                      backward_read=o + q + k + v + o + lse, backward_write=q + k + v)


def l2_side_bytes(bh: int, lq: int, lk: int, d: int, dv: int, item: int) -> int:
    """Forward read bytes as the kernel requests them from L2: Q once, K and V once per
    query block."""
    passes = -(-lq // queries_per_block(max(d, dv)))
    return bh * lq * d * item + passes * bh * lk * (d + dv) * item


def math_score_bytes(bh: int, lq: int, lk: int, item: int) -> int:
    """Size of one score matrix of the math path (bh x lq x lk), for comparison."""
    return bh * lq * lk * item
