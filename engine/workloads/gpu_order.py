"""GPU execution model of the request order within one operator.

The set of lines an operator issues is the one :mod:`engine.workloads.expand` defines (every
tensor's distinct 64-byte lines once: re-reads of a tile by other thread blocks are assumed to
hit on chip, as before); this module decides the *order* in which a GPU running the
operator's kernel would first touch them.  A kernel is a grid of thread blocks; the block
scheduler keeps ``sms x blocks_per_sm`` of them resident at once (a *wave*) and their
requests interleave at the memory controller.  Requests are ordered by the key

    (kernel, wave, loop step, load index within the step, block slot in the wave, operand)

so at each load step every resident block issues one load before any block issues the next:
the controller sees the blocks' streams interleaved, not one tensor in address order.

Patterns, and the library behaviour each follows (A100, PyTorch 2.x eager, cuBLAS/cuDNN):

``mm``, ``addmm``, ``bmm``, ``baddbmm`` -- a tiled GEMM as cuBLAS/CUTLASS run it: output
    tiles of ``BM x BN`` (128 x 128), one thread block each, launched with the M tile index
    fastest (CUTLASS's identity swizzle); each block runs a k-loop of ``BK``-deep steps
    (8 for fp32 SIMT SGEMM, 32 for 16-bit tensor-core kernels), reading at step ``s`` its A
    tile (``BM`` rows x ``BK``) and its B tile (``BK`` x ``BN``), and writes its C tile after
    the loop.  A line is issued by the first block (in launch order) that reads it; the bias
    of ``addmm`` is read before the loop.  When the grid has fewer tiles than the GPU has
    SMs and K is long, the k-range is split over blocks (split-K, as cuBLAS's heuristics do
    for such shapes); the partial-sum workspace traffic is not modelled.
``convolution`` -- cuDNN's implicit GEMM on NCHW tensors: GEMM M = N x P x Q output pixels,
    N = output channels, K = C x R x S; an input line (16 consecutive pixels of one channel)
    belongs to the A tile of the output pixels it feeds and the k-step of its channel; the
    weight is the B operand, the output the C operand.
``convolution_backward`` -- two implicit GEMMs in sequence, as cuDNN runs them: data gradient
    (A = grad_out, B = weight, C = grad_input) then weight gradient (A = grad_out transposed,
    B = input, C = grad_weight; K = N x P x Q, so split-K almost always applies).
elementwise ops, norms, reductions, copies, the optimizer's per-parameter kernels -- PyTorch's
    TensorIterator launch: blocks of 128 threads x 4 elements (``elementwise_block`` = 512
    elements), 16 resident blocks per SM; every block loads its slice of each input, then
    stores its slice of the output.  Inputs smaller than the output (broadcasts, reduction
    results) are spread over the blocks in proportion.  (Reductions and norms in PyTorch use
    other launch shapes -- a block per row or group -- which this model approximates by the
    same block-slice order.)

Attention, ``TraceSpec.attention = "math"`` (default): two ``bmm`` around a materialised
    softmax, as the DDPM/LDM reference code writes it; its score matrices are ordinary GEMM
    outputs and elementwise operands here.
``_scaled_dot_product_efficient_attention`` (``attention = "flash"``) -- the CUTLASS
    memory-efficient forward kernel (``mem_eff_attention/kernel_forward.h``,
    ``AttentionKernel``): grid (query blocks, heads, batch), ``getBlocksGrid``, launched x
    fastest; tile 64 queries x 64 keys (head dim <= 64), 64 x 128 (<= 128) or 32 x 128
    (``gmem``), the first ``kernels/cutlassF.h`` ``dispatch_cutlassF_*_sm80`` instantiation
    whose ``kMaxK`` covers the head dim (:func:`attention_forward_tile`).  Resident blocks
    per SM = ``kMinBlocksPerSm`` of its launch bounds, ``getWarpsPerSmFw`` (12 warps fp32,
    16 for 16-bit) / warps per block (tile / 32^2): 3, 1, 3 for fp32 (assumed: no more fit;
    shared memory is not checked).  A block's loop (``attention_kernel``) runs over key blocks
    ``iter_key_start``: at key step ``j`` it computes Q_i K_j^T (MM0, k-loop over the head
    dim in steps of ``ATTN_MMA_K`` = 32, ``DefaultGemmType<Sm80,...>::ThreadK``: its Q tile
    and K_j's rows of that head-dim chunk) then P V_j (MM1: V_j's rows); after the loop it
    writes O and its logsumexp rows (the fp32 ``gmem`` kernel accumulates O in memory from key
    step 0 on).  Each tensor's line is issued once, by the first block that reads it: the Q
    tile by its block at step 0; K_j and V_j at step j by query block 0 of its (batch, head),
    since all query blocks of a head stream the same K and V.
``_scaled_dot_product_efficient_attention_backward`` -- ``kernel_backward.h``,
    ``AttentionBackwardKernel``: grid (key splits, heads, batch); tile ``kBlockSizeI`` queries
    x ``kBlockSizeJ`` keys from ``kernels/cutlassB.h`` (fp32: 64 x 64 up to head dim 64,
    128 x 64 above; :func:`attention_backward_tile`); ``getWarpsPerSmBw`` 8 warps fp32 (12
    16-bit): 2 resident 64x64 blocks per SM, 1 of 128x64.  Key splits: the launcher
    (PyTorch's ``attention_backward.cu``, ``_efficient_attention_backward``, read from its
    source: not shipped in the wheel) sets ``num_splits_key`` = the number of key blocks,
    or 1 when batch x heads >= 256 and the keys fit in two key blocks
    (``ATTN_SPLIT_PARALLELISM``); so usually one block per (key block, head, batch).  Block
    ``s`` runs its key block(s) ``j = s, s + splits, ...``, and for each the query blocks
    starting at ``s mod (query blocks)`` (``getQueryStartShift``: the splits of a head start
    on different query blocks) and wrapping around (``incrIteration``).  Per (key block j,
    query block i) ``processBlockIJ`` reads, in this order: delta_i (fp32: the op carries O
    instead, see below), K_j and Q_i by head-dim chunk (``MatmulQK``), logsumexp_i
    (``accumApplyLSEToSmem``), dO_i (``MatmulGradV``, whose epilogue writes dV_j),
    V_j (``MatmulDOIVJ``), dQ_i (``MatmulGradQ``: accumulated in the fp32 ``workspace_gq``
    -- not in the trace -- and written to dQ by the last block to add, ``isLast`` and the
    atomic counter), then dK_j (``MatmulGradK``).  In fp32 (``kOutputInRF`` false,
    ``kNeedsAccumGradK/V`` false) dK_j and dV_j are accumulated in place from the first query
    block on, so their lines are first written at the block's first query step; 16-bit
    kernels write them at the end of the key block and first compute delta from dO and O of
    every query block (``kKernelComputesDelta``: a prologue step).  The fp32 kernel does not
    read O at all (the CUDA wrapper's delta prelude did, flash.py): the op's O lines, which
    the closed form keeps, are placed where the kernel reads delta_i.  Not modelled: causal
    masks, bias, dropout, the backward's workspace traffic, FlashAttention-2.
    Sort key of both: (wave, step, phase within the step -- the list above --, row within
    the tile, block slot, operand).

Operators of other kinds in the tiled class fall back to the elementwise order.
"""
from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np

from engine.workloads.capture import Access, OpRecord

ITEM = {"float32": 4, "float64": 8, "bfloat16": 2, "float16": 2, "int64": 8, "int32": 4,
        "bool": 1, "uint8": 1, "int8": 1}


@dataclass(frozen=True)
class GpuModel:
    """The block scheduler and tile shapes (defaults: A100 SXM, cuBLAS/PyTorch kernels)."""

    sms: int = 108
    gemm_blocks_per_sm: int = 2              # 128x128 tiles: registers allow two per SM
    gemm_bm: int = 128
    gemm_bn: int = 128
    gemm_bk_fp32: int = 8                    # SIMT SGEMM k-step
    gemm_bk_16bit: int = 32                  # tensor-core k-step (bf16/fp16)
    elementwise_block: int = 512             # elements per block (128 threads x 4)
    elementwise_blocks_per_sm: int = 16      # 2048 threads per SM / 128
    split_k_min_steps: int = 32              # k-steps a split must keep at least
    foreach_chunk: int = 65536               # multi_tensor_apply: elements per block
    foreach_step: int = 2048                 # elements per loop step (512 threads x ILP 4)
    foreach_blocks_per_launch: int = 320     # multi_tensor_apply's launch limit
    # memory-efficient attention kernels: warps per SM their launch bounds ask for
    # (``getWarpsPerSmFw`` / ``getWarpsPerSmBw``, sm80; blocks per SM = these / warps per block)
    attn_fwd_warps_per_sm_fp32: int = 12
    attn_fwd_warps_per_sm_16bit: int = 16
    attn_bwd_warps_per_sm_fp32: int = 8
    attn_bwd_warps_per_sm_16bit: int = 12

    def gemm_inflight(self) -> int:
        return self.sms * self.gemm_blocks_per_sm

    def elementwise_inflight(self) -> int:
        return self.sms * self.elementwise_blocks_per_sm

    def bk(self, dtype: str) -> int:
        return self.gemm_bk_fp32 if ITEM.get(dtype, 4) >= 4 else self.gemm_bk_16bit


def _coords(a: Access, lines: np.ndarray, base: int) -> np.ndarray:
    """Tensor coordinates ([ndim, n]) of the first element of ``a`` in each line."""
    item = ITEM.get(a.dtype, 4)
    start = base + a.offset
    e = np.maximum(lines * 64 - start, 0) // item
    nd = len(a.shape)
    out = np.zeros((nd, lines.shape[0]), np.int64)
    stride = a.stride if len(a.stride) == nd else (0,) * nd
    dims = sorted((d for d in range(nd) if a.shape[d] > 1 and stride[d] > 0),
                  key=lambda d: -stride[d])
    for d in dims:
        c = np.minimum(e // stride[d], a.shape[d] - 1)
        out[d] = c
        e = e - c * stride[d]
    return out


@dataclass
class _Gemm:
    """One GEMM kernel's grid: batch x M x N x K with its tile shape."""

    batch: int
    m: int
    n: int
    k: int
    bm: int
    bn: int
    bk: int
    inflight: int
    split_min: int

    def __post_init__(self) -> None:
        self.tm = max(1, -(-self.m // self.bm))
        self.tn = max(1, -(-self.n // self.bn))
        ks = max(1, -(-self.k // self.bk))
        tiles = self.batch * self.tm * self.tn
        split = 1
        if tiles < self.inflight // 2:
            split = max(1, min(self.inflight // tiles, ks // self.split_min))
        self.split = split
        self.ks_per = -(-ks // split)

    def _bid(self, b, split, tn, tm):
        return ((b * self.split + split) * self.tn + tn) * self.tm + tm

    def keys_a(self, b, m, k):
        ks = k // self.bk
        sp = np.minimum(ks // self.ks_per, self.split - 1)
        bid = self._bid(b, sp, 0, m // self.bm)
        return bid, ks - sp * self.ks_per, m % self.bm

    def keys_b(self, b, k, n):
        ks = k // self.bk
        sp = np.minimum(ks // self.ks_per, self.split - 1)
        bid = self._bid(b, sp, n // self.bn, 0)
        return bid, ks - sp * self.ks_per, k % self.bk

    def keys_c(self, b, m, n):
        bid = self._bid(b, self.split - 1, n // self.bn, m // self.bm)
        return bid, np.full_like(m, self.ks_per), m % self.bm


def _gemm_plan(op: OpRecord, gpu: GpuModel):
    """[(kernel, {access index: (role, coordinate function)})] or None when the operator is
    not one of the GEMM kinds (see the module docstring)."""
    short = op.name.split(".")[1] if "." in op.name else op.name
    reads = [i for i, a in enumerate(op.accesses) if not a.is_write]
    writes = [i for i, a in enumerate(op.accesses) if a.is_write]
    acc = op.accesses
    if not writes:
        return None
    dtype = acc[writes[0]].dtype
    bk = gpu.bk(dtype)

    def kernel(batch: int, m: int, n: int, k: int) -> _Gemm:
        return _Gemm(batch, m, n, k, gpu.gemm_bm, gpu.gemm_bn, bk, gpu.gemm_inflight(),
                     gpu.split_k_min_steps)

    if short in ("mm", "addmm", "bmm", "baddbmm"):
        c = acc[writes[0]]
        nd = len(c.shape)
        if nd not in (2, 3):
            return None
        m, n = c.shape[-2], c.shape[-1]
        pair = None
        for ia in reads:
            for ib in reads:
                A, B = acc[ia], acc[ib]
                if (ia != ib and len(A.shape) == nd and len(B.shape) == nd
                        and A.shape[-2] == m and B.shape[-1] == n
                        and A.shape[-1] == B.shape[-2]):
                    pair = (ia, ib)
                    break
            if pair:
                break
        if pair is None:
            return None
        ia, ib = pair
        batch = c.shape[0] if nd == 3 else 1
        g = kernel(batch, m, n, acc[ia].shape[-1])
        b0 = (lambda x: x[0]) if nd == 3 else (lambda x: np.zeros_like(x[0]))
        return [(g, {ia: ("a", lambda x: (b0(x), x[-2], x[-1])),
                     ib: ("b", lambda x: (b0(x), x[-2], x[-1])),
                     writes[0]: ("c", lambda x: (b0(x), x[-2], x[-1]))})]
    if short == "convolution":
        if len(reads) < 2 or len(acc[writes[0]].shape) != 4:
            return None
        x, w, y = acc[reads[0]], acc[reads[1]], acc[writes[0]]
        if len(x.shape) != 4 or len(w.shape) != 4 or x.shape[0] != y.shape[0]:
            return None
        nb, cin, h, wd = x.shape
        co, cg, r, s = w.shape
        p, q = y.shape[2], y.shape[3]
        g = kernel(1, nb * p * q, co, cg * r * s)
        return [(g, {reads[0]: ("a", lambda c: (np.zeros_like(c[0]),
                                                c[0] * p * q + (c[2] * p // h) * q + c[3] * q // wd,
                                                (c[1] % cg) * r * s)),
                     reads[1]: ("b", lambda c: (np.zeros_like(c[0]),
                                                c[1] * r * s + c[2] * s + c[3], c[0])),
                     writes[0]: ("c", lambda c: (np.zeros_like(c[0]),
                                                 c[0] * p * q + c[2] * q + c[3], c[1]))})]
    if short == "convolution_backward":
        if len(reads) < 3:
            return None
        go, x, w = acc[reads[0]], acc[reads[1]], acc[reads[2]]
        if not all(len(t.shape) == 4 for t in (go, x, w)):
            return None
        nb, cin, h, wd = x.shape
        co, cg, r, s = w.shape
        p, q = go.shape[2], go.shape[3]
        four = [i for i in writes if len(acc[i].shape) == 4]
        gi = gw = None
        if len(four) >= 2:
            gi, gw = four[0], four[1]
        elif len(four) == 1:
            if tuple(acc[four[0]].shape) == tuple(w.shape):
                gw = four[0]
            else:
                gi = four[0]
        plan = []
        z = np.zeros_like
        if gi is not None:
            g0 = kernel(1, nb * h * wd, cin, co * r * s)
            plan.append((g0, {
                reads[0]: ("a", lambda c: (z(c[0]), c[0] * h * wd + (c[2] * h // p) * wd
                                           + c[3] * wd // q, c[1] * r * s)),
                reads[2]: ("b", lambda c: (z(c[0]), c[0] * r * s + c[2] * s + c[3],
                                           c[1] % cg)),
                gi: ("c", lambda c: (z(c[0]), c[0] * h * wd + c[2] * wd + c[3], c[1]))}))
        if gw is not None:
            g1 = kernel(1, co, cg * r * s, nb * p * q)
            roles = {reads[1]: ("b", lambda c: (z(c[0]), c[0] * p * q + (c[2] * p // h) * q
                                                + c[3] * q // wd, (c[1] % cg) * r * s)),
                     gw: ("c", lambda c: (z(c[0]), c[0], c[1] * r * s + c[2] * s + c[3]))}
            if gi is None:
                roles[reads[0]] = ("a", lambda c: (z(c[0]), c[1], c[0] * p * q + c[2] * q
                                                   + c[3]))
            plan.append((g1, roles))
        return plan or None
    return None


def gemm_order(op: OpRecord, per_access: list[np.ndarray], base: np.ndarray,
               gpu: GpuModel) -> list[np.ndarray] | None:
    """Sort keys (a list for ``np.lexsort``, least significant first, for the concatenated
    lines of ``per_access``) of a GEMM-kind operator, or None (not a GEMM kind)."""
    plan = _gemm_plan(op, gpu)
    if plan is None:
        return None
    n_total = sum(x.shape[0] for x in per_access)
    kern = np.zeros(n_total, np.int64)
    wave = np.zeros(n_total, np.int64)
    step = np.zeros(n_total, np.int64)
    load = np.zeros(n_total, np.int64)
    slot = np.zeros(n_total, np.int64)
    operand = np.zeros(n_total, np.int64)
    offsets = np.concatenate([[0], np.cumsum([x.shape[0] for x in per_access])])
    assigned = set()
    last = len(plan) - 1
    for ki, (g, roles) in enumerate(plan):
        for ai, (role, fn) in roles.items():
            if ai in assigned:
                continue
            assigned.add(ai)
            lo, hi = int(offsets[ai]), int(offsets[ai + 1])
            if hi <= lo:
                continue
            a = op.accesses[ai]
            c = _coords(a, per_access[ai], int(base[a.storage]))
            b, u, v = fn(c)
            if role == "a":
                bid, st, ld = g.keys_a(b, u, v)
            elif role == "b":
                bid, st, ld = g.keys_b(b, u, v)
            else:
                bid, st, ld = g.keys_c(b, u, v)
            kern[lo:hi] = ki
            wave[lo:hi] = bid // g.inflight
            slot[lo:hi] = bid % g.inflight
            step[lo:hi] = st
            load[lo:hi] = ld
            operand[lo:hi] = {"a": 0, "b": 1, "c": 2}[role]
    for ai, a in enumerate(op.accesses):             # bias and the like
        if ai in assigned:
            continue
        lo, hi = int(offsets[ai]), int(offsets[ai + 1])
        if a.is_write:                               # after the last kernel
            kern[lo:hi] = last + 1
        else:                                        # before the first k-step
            kern[lo:hi] = 0
            step[lo:hi] = -1
        operand[lo:hi] = 3
    return [operand, slot, load, step, wave, kern]


def elementwise_order(op: OpRecord, per_access: list[np.ndarray], gpu: GpuModel,
                      block_elems: int | None = None,
                      inflight: int | None = None) -> list[np.ndarray]:
    """Sort keys of the block-slice order (see the module docstring)."""
    block_elems = block_elems or gpu.elementwise_block
    inflight = inflight or gpu.elementwise_inflight()
    sizes = [x.shape[0] for x in per_access]
    big = int(np.argmax(sizes)) if sizes else 0
    item = ITEM.get(op.accesses[big].dtype, 4) if op.accesses else 4
    lines_per_block = max(1, block_elems * item // 64)
    nblocks = max(1, -(-max(sizes, default=1) // lines_per_block))
    parts = {k: [] for k in ("wave", "write", "load", "slot", "acc")}
    for ai, (a, n) in enumerate(zip(op.accesses, sizes)):
        j = np.arange(n, dtype=np.int64)
        blk = j * nblocks // max(n, 1)
        first = -(-(blk * n) // nblocks)
        parts["wave"].append(blk // inflight)
        parts["slot"].append(blk % inflight)
        parts["load"].append(j - first)
        parts["write"].append(np.full(n, int(a.is_write), np.int64))
        parts["acc"].append(np.full(n, ai, np.int64))
    cat = {k: (np.concatenate(v) if v else np.zeros(0, np.int64)) for k, v in parts.items()}
    return [cat["acc"], cat["slot"], cat["load"], cat["write"], cat["wave"]]


def foreach_order(op: OpRecord, per_access: list[np.ndarray], base: np.ndarray,
                  gpu: GpuModel) -> list[np.ndarray] | None:
    """Sort keys of a ``_foreach_*`` kernel as PyTorch's multi_tensor_apply runs it: blocks
    over (tensor, 65,536-element chunk) in list order, at most 320 per launch; each block
    steps through its chunk 2,048 elements at a time (512 threads x 4), loading the chunk's
    slice of every input list, then storing.  Tensor ``i`` of each list is found by position:
    the accesses of one list follow each other in argument order, as many as the written
    list has tensors.  None when the lists cannot be matched."""
    writes = [i for i, a in enumerate(op.accesses) if a.is_write]
    reads = [i for i, a in enumerate(op.accesses) if not a.is_write]
    # tensors per list: a foreach kernel writes one list (t = its length, reads k lists of
    # t); the fused AdamW kernel reads params, grads, exp_avgs, exp_avg_sqs and state_steps
    # (5 lists) and writes params, exp_avgs and exp_avg_sqs (3): t = gcd of the two counts
    fused = "._fused_adam" in op.name
    t = math.gcd(len(writes), len(reads)) if fused else len(writes)
    if t == 0 or len(reads) % t or len(writes) % t:
        return None
    tensor_of = {}
    for pos, ai in enumerate(writes):
        tensor_of[ai] = (pos % t, pos // t)
    for pos, ai in enumerate(reads):
        tensor_of[ai] = (pos % t, 1 + pos // t)
    numel = [max(1, op.accesses[ai].nbytes // ITEM.get(op.accesses[ai].dtype, 4))
             for ai in writes[:t]]
    chunks = [-(-n // gpu.foreach_chunk) for n in numel]
    first_block = np.concatenate([[0], np.cumsum(chunks)])
    parts = {k: [] for k in ("wave", "step", "write", "slot", "list")}
    for ai, a in enumerate(op.accesses):
        i, lst = tensor_of[ai]
        item = ITEM.get(a.dtype, 4)
        lines = per_access[ai]
        e = np.maximum(lines * 64 - (int(base[a.storage]) + a.offset), 0) // item
        blk = first_block[i] + np.minimum(e // gpu.foreach_chunk, chunks[i] - 1)
        parts["wave"].append(blk // gpu.foreach_blocks_per_launch)
        parts["slot"].append(blk % gpu.foreach_blocks_per_launch)
        parts["step"].append((e % gpu.foreach_chunk) // gpu.foreach_step)
        parts["write"].append(np.full(lines.shape[0], int(a.is_write), np.int64))
        parts["list"].append(np.full(lines.shape[0], lst, np.int64))
    cat = {k: np.concatenate(v) for k, v in parts.items()}
    return [cat["list"], cat["slot"], cat["write"], cat["step"], cat["wave"]]


#: Head-dim (k) step of the attention kernels' tensor-core GEMMs on sm80
#: (``DefaultGemmType<Sm80, float|bf16|half>::ThreadK`` in ``gemm_kernel_utils.h``).
ATTN_MMA_K = 32
#: Threads per warp / the kernels' warp tile (warps per block = tile rows x cols / 32^2).
_WARP_TILE = 32 * 32
#: The backward launcher's split-key heuristic (``attention_backward.cu``): no split when
#: ``batch x heads >= 256`` blocks already run and the keys fit in two key blocks; a cap of
#: 200 / (batch x heads) splits when dK/dV need a staging area.
ATTN_SPLIT_PARALLELISM = 256
ATTN_SPLIT_CAP = 200

_FWD = "._scaled_dot_product_efficient_attention.default"
_BWD = "._scaled_dot_product_efficient_attention_backward.default"


def attention_forward_tile(head_dim: int) -> tuple[int, int]:
    """(queries, keys) per block of the sm80 forward kernel PyTorch launches for
    ``head_dim`` = max(q/k head dim, v head dim): the first of ``dispatch_cutlassF_*_sm80``'s
    instantiations (64x64 ``kMaxK`` 64, 64x128 ``kMaxK`` 128, 32x128 ``gmem``) whose
    ``kMaxK`` covers it (the same three for fp32, bf16 and fp16)."""
    if head_dim <= 64:
        return 64, 64
    if head_dim <= 128:
        return 64, 128
    return 32, 128


def attention_backward_tile(head_dim: int, item: int) -> tuple[int, int]:
    """(queries ``kBlockSizeI``, keys ``kBlockSizeJ``) per block of the sm80 backward kernel
    for ``head_dim`` (max of q/k and v): the first non-dropout instantiation of
    ``dispatch_cutlassB_*_sm80`` (``kernels/cutlassB.h``) whose ``kMaxK`` covers it; fp32:
    64x64 (k32, k64), 128x64 (k128, k65536); 16-bit: 64x64 (k32, k64), 128x128 (k128),
    128x64 (k65536).  Assumed: its shared memory fits (the launcher skips a kernel whose
    ``SharedStorage`` exceeds ``sharedMemPerBlockOptin``; not checked here)."""
    if head_dim <= 64:
        return 64, 64
    if head_dim <= 128:
        return (128, 64) if item >= 4 else (128, 128)
    return 128, 64


def _blocks_per_sm(warps_per_sm: int, tile_rows: int, tile_cols: int) -> int:
    """``kMinBlocksPerSm`` of the launch bounds, at least one."""
    return max(1, warps_per_sm // max(1, tile_rows * tile_cols // _WARP_TILE))


def _attn_coords(a: Access, lines: np.ndarray, base: int):
    """(batch, head, token, column) of the first element of each line of a
    ``[batch, heads, tokens, dim]`` tensor (column 0 for the ``[batch, heads, tokens]``
    logsumexp)."""
    c = _coords(a, lines, base)
    col = c[3] if c.shape[0] > 3 else np.zeros_like(c[0])
    return c[0], c[1], c[2], col


class _Sched:
    """Block ids -> (wave, slot), and one sortable number per (block, step) for finding
    which block touches a line first (or last)."""

    def __init__(self, inflight: int, nsteps: int) -> None:
        self.inflight, self.nsteps = inflight, nsteps

    def when(self, bid, step):
        return ((bid // self.inflight) * self.nsteps + step) * self.inflight + bid % self.inflight

    def split(self, when):
        slot = when % self.inflight
        ws = when // self.inflight
        return ws // self.nsteps, ws % self.nsteps, slot


def _add_keys(keys: dict[str, list[np.ndarray]], lines: np.ndarray, split, phase, load,
              operand: int) -> None:
    """Append one operand's sort keys (wave, step, slot from ``split``) for its ``lines``."""
    wave, st, slot = split
    for k, v in (("wave", wave), ("step", st), ("phase", phase), ("load", load),
                 ("slot", slot), ("operand", operand)):
        keys[k].append(np.broadcast_to(np.asarray(v, np.int64), lines.shape))


def _sorted_keys(keys: dict[str, list[np.ndarray]]) -> list[np.ndarray]:
    """The attention kernels' sort keys, least significant first (np.lexsort's order)."""
    cat = {k: np.concatenate(v) for k, v in keys.items()}
    return [cat["operand"], cat["slot"], cat["load"], cat["phase"], cat["step"], cat["wave"]]


def _attention_forward_keys(op: OpRecord, per_access: list[np.ndarray], base: np.ndarray,
                            gpu: GpuModel) -> list[np.ndarray] | None:
    acc = op.accesses
    if (len(acc) != 5 or [a.is_write for a in acc] != [False, False, False, True, True]
            or any(len(acc[i].shape) != 4 for i in range(4)) or len(acc[4].shape) != 3):
        return None
    nb, nh, m, d = acc[0].shape
    n, dv = acc[1].shape[2], acc[2].shape[3]
    item = ITEM.get(acc[0].dtype, 4)
    qb, kb = attention_forward_tile(max(d, dv))
    single = max(d, dv) <= 128                # kSingleValueIteration: kMaxK <= kKeysPerBlock
    wps = gpu.attn_fwd_warps_per_sm_fp32 if item >= 4 else gpu.attn_fwd_warps_per_sm_16bit
    inflight = gpu.sms * _blocks_per_sm(wps, qb, kb)
    gx, nkb, nc = -(-m // qb), max(1, -(-n // kb)), max(1, -(-d // ATTN_MMA_K))
    sched = _Sched(inflight, nkb)
    # O: kept in registers and written after the key loop, except the fp32 ``gmem`` kernel,
    # which accumulates it in memory from the first key block on (16-bit: in a separate fp32
    # buffer, O itself written at the last key block)
    o_step = 0 if (not single and item >= 4) else nkb - 1
    keys = {k: [] for k in ("wave", "step", "phase", "load", "slot", "operand")}
    for ai, a in enumerate(acc):
        lines = per_access[ai]
        b, h, tok, col = _attn_coords(a, lines, int(base[a.storage]))
        first = gx * (h + nh * b)                 # query block 0 of (batch, head)
        if ai == 0:                               # Q tile: read in the first key step
            bid, step, phase, load = first + tok // qb, 0, col // ATTN_MMA_K, tok % qb
        elif ai in (1, 2):                        # K, V tiles of key block j at step j,
            bid = first                           # first read by query block 0
            step = tok // kb
            phase = col // ATTN_MMA_K if ai == 1 else nc
            load = tok % kb
        else:                                     # O, then logsumexp
            bid = first + np.minimum(tok // qb, gx - 1)
            step = o_step if ai == 3 else nkb - 1
            phase, load = nc + (1 if ai == 3 else 2), tok % qb
        _add_keys(keys, lines, sched.split(sched.when(bid, step)), phase, load, ai)
    return _sorted_keys(keys)


def _attention_backward_keys(op: OpRecord, per_access: list[np.ndarray], base: np.ndarray,
                             gpu: GpuModel) -> list[np.ndarray] | None:
    acc = op.accesses
    if (len(acc) != 9 or [a.is_write for a in acc] != [False] * 6 + [True] * 3
            or any(len(acc[i].shape) != 4 for i in (0, 1, 2, 3, 4, 6, 7, 8))
            or len(acc[5].shape) != 3):
        return None
    DO, Q, K, V, O, LSE, DQ, DK, DV = range(9)
    nb, nh, m, d = acc[Q].shape
    n, dv = acc[K].shape[2], acc[V].shape[3]
    item = ITEM.get(acc[Q].dtype, 4)
    half = item < 4
    bi, bj = attention_backward_tile(max(d, dv), item)
    wps = gpu.attn_bwd_warps_per_sm_16bit if half else gpu.attn_bwd_warps_per_sm_fp32
    inflight = gpu.sms * _blocks_per_sm(wps, bi, bj)
    nqb, nkb = max(1, -(-m // bi)), max(1, -(-n // bj))
    nc = max(1, -(-d // ATTN_MMA_K))
    bh = nb * nh
    out_in_rf = half and max(d, dv) <= bi                 # kOutputInRF
    splits = nkb
    if bh >= ATTN_SPLIT_PARALLELISM and n <= 2 * bj:
        splits = 1
    if half and not out_in_rf:                             # kNeedsAccumGradK / V
        splits = min(splits, ATTN_SPLIT_CAP // bh)
    splits = max(1, splits)
    passes = -(-nkb // splits)
    pro = 1 if half else 0                                 # kKernelComputesDelta prologue
    sched = _Sched(inflight, pro + passes * nqb)
    s_all = np.arange(splits, dtype=np.int64)
    shift = s_all % nqb if splits > 1 else np.zeros(splits, np.int64)   # getQueryStartShift
    last_pass = -(-(nkb - s_all) // splits) - 1            # each split's last key block
    # per (batch*head, query block): first toucher (pass 0) and the last adder of dQ
    g = np.arange(bh, dtype=np.int64)[:, None, None]
    i = np.arange(nqb, dtype=np.int64)[None, :, None]
    s = s_all[None, None, :]
    t = (i - shift[None, None, :]) % nqb
    bid = s + splits * g
    first = sched.when(bid, pro + t).min(axis=2)
    last = sched.when(bid, pro + last_pass[None, None, :] * nqb + t).max(axis=2)
    ph_o, ph_lse, ph_do, ph_v, ph_dq, ph_dk = 0, nc + 1, nc + 2, nc + 3, nc + 4, nc + 5
    keys = {k: [] for k in ("wave", "step", "phase", "load", "slot", "operand")}
    for ai, a in enumerate(acc):
        lines = per_access[ai]
        b, h, tok, col = _attn_coords(a, lines, int(base[a.storage]))
        gh = h + nh * b
        if ai in (K, V, DK, DV):                          # key block j: split j % splits
            j = np.minimum(tok // bj, nkb - 1)
            kbid = j % splits + splits * gh
            t_k = pro + (j // splits) * nqb + ((nqb - 1) if (half and ai in (DK, DV)) else 0)
            when = sched.when(kbid, t_k)
            phase = {K: col // ATTN_MMA_K + 1, V: ph_v, DK: ph_dk, DV: ph_do}[ai]
            load = tok % bj
        else:                                             # query block i
            qi = np.minimum(tok // bi, nqb - 1)
            load = tok % bi
            if half and ai in (DO, O):                    # delta prologue of split 0
                when = sched.when(splits * gh, np.zeros_like(qi))
                phase = qi
            else:
                when = (last if ai == DQ else first)[gh, qi]
                phase = {DO: ph_do, Q: col // ATTN_MMA_K + 1, O: ph_o, LSE: ph_lse,
                         DQ: ph_dq}[ai]
        _add_keys(keys, lines, sched.split(when), phase, load, ai)
    return _sorted_keys(keys)


def attention_order(op: OpRecord, per_access: list[np.ndarray], base: np.ndarray,
                    gpu: GpuModel) -> list[np.ndarray] | None:
    """Sort keys of the fused memory-efficient attention kernels (forward and backward, see
    the module docstring), or None when ``op`` is not one of them or its accesses are not
    the plain (no bias) signature."""
    if op.name.endswith(_FWD) or op.name == _FWD[1:]:
        return _attention_forward_keys(op, per_access, base, gpu)
    if op.name.endswith(_BWD) or op.name == _BWD[1:]:
        return _attention_backward_keys(op, per_access, base, gpu)
    return None


def order_op(op: OpRecord, per_access: list[np.ndarray], base: np.ndarray,
             gpu: GpuModel) -> np.ndarray:
    """Permutation of the concatenated lines of ``per_access`` into GPU issue order."""
    keys = None
    if "._foreach_" in op.name or "._fused_adam" in op.name:
        keys = foreach_order(op, per_access, base, gpu)
    elif "_scaled_dot_product_efficient_attention" in op.name:
        keys = attention_order(op, per_access, base, gpu)
    else:
        keys = gemm_order(op, per_access, base, gpu)
    if keys is None:
        keys = elementwise_order(op, per_access, gpu)
    if not keys[0].shape[0]:
        return np.zeros(0, np.int64)
    return np.lexsort(keys)
