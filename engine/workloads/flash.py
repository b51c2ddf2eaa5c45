"""Closed-form memory traffic of the fused ("flash") attention kernel the traces model.

Which code runs which kernel
    ``TraceSpec.attention = "math"`` (the default) is what the reference implementations
    the models follow write: DDPM (``diffusion_tf/models/unet.py`` ``attn_block``, an
    ``einsum`` to a [h w h w] score tensor; its PyTorch ports' ``AttnBlock`` are two
    ``torch.bmm``), LDM (CompVis ``ldm/modules/attention.py`` ``CrossAttention``:
    ``einsum`` + ``softmax``; ``ldm/modules/diffusionmodules/model.py`` ``AttnBlock``:
    ``torch.bmm``).  DiT's reference (facebookresearch/DiT ``models.py``) imports
    ``Attention`` from ``timm.models.vision_transformer``; timm's ``Attention.forward``
    calls ``F.scaled_dot_product_attention`` when ``self.fused_attn`` (its default since
    timm 0.9 with torch >= 2.0) and the explicit ``q @ k.transpose(-2, -1)`` / ``softmax``
    otherwise, and DiT's ``environment.yml`` does not pin timm: so DiT's reference is the
    "math" path with the timm of its release (0.6) and the fused path with a current one.
    diffusers (``models/attention_processor.py`` ``AttnProcessor2_0``, the default
    processor of ``UNet2DModel``/``UNet2DConditionModel``/``DiTTransformer2DModel``) calls
    ``F.scaled_dot_product_attention``.  ``"flash"`` is what such a user gets on CUDA.

What ``F.scaled_dot_product_attention`` runs
    Backends in the order ``torch._C._get_sdp_priority_order()`` gives (torch 2.13):
    FLASH, EFFICIENT, MATH, CUDNN.  FLASH (FlashAttention-2) takes only fp16/bf16 with
    head dim <= 256, so for the fp32 traces, and for 16-bit ones with larger heads (the
    DDPM 256x256 model's 512-channel single head), the choice is EFFICIENT: the CUTLASS
    memory-efficient kernel, ``aten._scaled_dot_product_efficient_attention`` and its
    backward.  The traces model that kernel for every dtype (for fp16/bf16 with head dim
    <= 256 the FlashAttention-2 kernel that would run instead moves the same tensors plus
    an fp32 dQ accumulator; not modelled).  Every fused kernel needs stride 1 in the head
    dim (``include/ATen/native/transformers/sdp_utils_cpp.h``,
    ``check_last_dim_stride_equals_1_dense``); SDPA silently takes MATH otherwise, so the
    DDPM block's transposed q/k/v are copied first
    (:func:`engine.workloads.models.common.attention`).

Per call, with ``bh`` = batch x heads, ``lq`` queries, ``lk`` keys, head dims ``d`` (q, k)
and ``dv`` (v), element size ``item`` bytes (:func:`flash_bytes`):

forward kernel
    reads Q (bh lq d), K (bh lk d), V (bh lk dv); writes O (bh lq dv) and the fp32
    logsumexp, padded to ``LSE_ALIGN`` = 32 queries (``kAlignLSE`` in
    ``mem_eff_attention/kernel_forward.h``; ``torch/_meta_registrations.py`` allocates
    ``ceil(M / 32) * 32``).
backward prelude (fp32 only)
    ``_efficient_attention_backward`` (``aten/src/ATen/native/transformers/cuda/
    attention_backward.cu``) computes ``delta = (dO.float() * O.float()).sum(-1)`` with two
    ATen kernels when the kernel's ``kKernelComputesDelta`` is false, which it is unless the
    dtype is 16-bit (``mem_eff_attention/kernel_backward.h``): the product reads dO and O
    and writes an fp32 [bh lq dv] tensor, the sum reads it and writes delta (bh lq fp32);
    with more than one head ``.transpose(-2, -1).contiguous()`` copies delta once more.
backward kernel
    reads dO, Q, K, V, O and the logsumexp; writes dQ, dK, dV (the scores are recomputed
    on chip; nothing of size lq x lk reaches memory).  It also reads delta (bh lq x 4
    bytes); the aten op's signature does not carry delta, so the trace misses that read
    (0.2 % of the call's bytes at the tiny DDPM's d = 32, 0.01 % at d = 512).

These are the bytes of the tensors; the generator issues each tensor's distinct 64-byte
lines once per operator (:mod:`engine.workloads.expand`), which is what the trace carries
before its L2 filter.  Inside the kernels tensors are re-read: in the forward every query
block of ``queries_per_block(d)`` queries streams all of K and V (:func:`l2_side_bytes`),
and above head dim 128 (the ``gmem`` kernel: ``kKeepOutputInRF`` is false when ``kMaxK >
kKeysPerBlock``, ``kernel_forward.h``) accumulates O in memory over ``ceil(lk / 128)`` key
blocks (16-bit dtypes in an extra fp32 buffer of twice O's size, ``kNeedsOutputAccumulatorBuffer``);
in the backward the grid is (key splits, heads, batch) and every block of keys streams all
of Q, dO, logsumexp and delta, accumulating dQ in memory, and in fp32 dK/dV are
accumulated in memory too (``kOutputInRF`` is false unless 16-bit).  The trace assumes
these re-reads hit the L2, as it does for GEMM tiles.  That holds when what the blocks in
flight touch fits: :func:`working_set_bytes` (all of a call's tensors, since the grids are
small enough to run every batch element at once) against the 40 MiB of an A100.

Sources, all in the installed torch 2.13 (``.venv/.../torch/``) unless said otherwise:

* query block: ``include/ATen/native/transformers/cuda/mem_eff_attention/kernels/cutlassF.h``,
  ``dispatch_cutlassF_f32_sm80`` (the same three shapes for bf16/f16): ``AttentionKernel``
  instantiated 64x64 (``kMaxK`` 64), 64x128 (``kMaxK`` 128) and 32x128 ``gmem`` (``kMaxK``
  65536), queries x keys per block; the launcher takes the first whose ``kMaxK`` covers the
  head dim (PyTorch's ``attention.cu``, not shipped: from its source, not checked here).
* ``LSE_ALIGN``: ``kernel_forward.h``, ``kAlignLSE = 32``; ``_meta_registrations.py``
  allocates the logsumexp as ``ceil(M / 32) * 32``.
* delta prelude: ``kernel_backward.h`` (``kKernelComputesDelta = kIsHalf && ...``); the
  ATen expression is in PyTorch's ``attention_backward.cu`` (not shipped: from its source).
* backend choice: ``torch._C._get_sdp_priority_order()``; ``sdp_utils_cpp.h`` as above.
"""
from __future__ import annotations

from dataclasses import dataclass

#: logsumexp padding of the memory-efficient kernel (queries), see the module docstring.
LSE_ALIGN = 32
#: L2 of the A100 the execution model follows (bytes).
A100_L2_BYTES = 40 * 2 ** 20


def queries_per_block(head_dim: int) -> int:
    """Query-block size of PyTorch's sm80 memory-efficient forward kernel for ``head_dim``."""
    return 64 if head_dim <= 128 else 32


@dataclass(frozen=True)
class FlashBytes:
    """Bytes one fused attention call reads and writes (forward, backward prelude, backward
    kernel); the prelude is zero for 16-bit dtypes."""

    forward_read: int
    forward_write: int
    backward_read: int
    backward_write: int
    delta_read: int = 0
    delta_write: int = 0

    @property
    def total(self) -> int:
        """All bytes of the call, forward and backward."""
        return (self.forward_read + self.forward_write + self.backward_read
                + self.backward_write + self.delta_read + self.delta_write)


def _lse(bh: int, lq: int) -> int:
    return bh * (-(-lq // LSE_ALIGN) * LSE_ALIGN) * 4


def flash_bytes(bh: int, lq: int, lk: int, d: int, dv: int, item: int,
                heads: int = 1) -> FlashBytes:
    """Tensor bytes of one call (see the module docstring); ``heads`` only matters for the
    delta copy (``bh`` already counts them)."""
    q, k, v, o = bh * lq * d * item, bh * lk * d * item, bh * lk * dv * item, bh * lq * dv * item
    lse = _lse(bh, lq)
    delta_r = delta_w = 0
    if item > 2:
        prod, delta = bh * lq * dv * 4, bh * lq * 4
        delta_r, delta_w = 2 * o + prod, prod + delta
        if heads > 1:
            delta_r, delta_w = delta_r + delta, delta_w + delta
    return FlashBytes(forward_read=q + k + v, forward_write=o + lse,
                      backward_read=o + q + k + v + o + lse, backward_write=q + k + v,
                      delta_read=delta_r, delta_write=delta_w)


def l2_side_bytes(bh: int, lq: int, lk: int, d: int, dv: int, item: int) -> int:
    """Forward read bytes as the kernel requests them from L2: Q once, K and V once per
    query block."""
    passes = -(-lq // queries_per_block(max(d, dv)))
    return bh * lq * d * item + passes * bh * lk * (d + dv) * item


def working_set_bytes(bh: int, lq: int, lk: int, d: int, dv: int, item: int) -> tuple[int, int]:
    """Bytes of the tensors the forward and the backward kernel touch (their re-reads stay
    in L2 only if this fits next to everything else in flight)."""
    q, k, v, o = bh * lq * d * item, bh * lk * d * item, bh * lk * dv * item, bh * lq * dv * item
    lse = _lse(bh, lq)
    return q + k + v + o + lse, 2 * (q + k + v + o) + lse + bh * lq * 4


def math_score_bytes(bh: int, lq: int, lk: int, item: int) -> int:
    """Size of one score matrix of the math path (bh x lq x lk), for comparison."""
    return bh * lq * lk * item
