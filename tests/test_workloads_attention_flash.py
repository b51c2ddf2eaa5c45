"""The fused attention option (``TraceSpec.attention = "flash"``) against its closed form
(:mod:`engine.workloads.flash`), on the tiny DDPM (four attention blocks at 8x8: 64 tokens,
32 channels, single head)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
h5py = pytest.importorskip("h5py")

from engine.errors import DiffMemError  # noqa: E402
from engine.workloads.capture import PHASE_ID, capture_step  # noqa: E402
from engine.workloads.flash import (LSE_ALIGN, flash_bytes, l2_side_bytes,  # noqa: E402
                                    queries_per_block, working_set_bytes)
from engine.workloads.generate import TraceSpec, generate_trace  # noqa: E402
from engine.workloads.models.common import attention_kernel, split_heads  # noqa: E402
from engine.workloads.registry import build  # noqa: E402

FWD = "aten._scaled_dot_product_efficient_attention.default"
BWD = "aten._scaled_dot_product_efficient_attention_backward.default"


def _capture(kind: str, workload: str = "ddpm"):
    _, cfg, model, inputs = build(workload, batch=2, size="tiny")
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad])
    with attention_kernel(kind):
        return capture_step(model, lambda m: m(*inputs), opt, torch.device("meta"))


def _shape(op):
    q = op.accesses[0].shape if op.name == FWD else op.accesses[1].shape
    bh, lq, d = q[0] * q[1], q[2], q[3]
    return bh, lq, d


def test_fused_ops_move_the_closed_form_bytes() -> None:
    cap = _capture("flash")
    fwd = [op for op in cap.ops if op.name == FWD]
    bwd = [op for op in cap.ops if op.name == BWD]
    assert len(fwd) == len(bwd) == 4                   # one per attention block
    for op in fwd:
        assert op.phase == PHASE_ID["attention"]
        bh, lq, d = _shape(op)
        assert (bh, lq, d) == (2, 64, 32)
        fb = flash_bytes(bh, lq, lq, d, d, 4)
        assert (op.bytes_read, op.bytes_written) == (fb.forward_read, fb.forward_write)
        # by hand: 3 x 2*64*32*4 read; O (16384) + logsumexp 2 x 64 fp32 written
        assert (fb.forward_read, fb.forward_write) == (49152, 16384 + 512)
    for op in bwd:
        assert op.phase == PHASE_ID["backward"]
        bh, lq, d = _shape(op)
        fb = flash_bytes(bh, lq, lq, d, d, 4)
        assert (op.bytes_read, op.bytes_written) == (fb.backward_read, fb.backward_write)
        assert (fb.backward_read, fb.backward_write) == (5 * 16384 + 512, 3 * 16384)


def test_fp32_backward_runs_the_delta_prelude_of_the_cuda_wrapper() -> None:
    # _efficient_attention_backward computes delta = (dO * O).sum(-1) with two ATen kernels
    # for fp32 before the fused kernel: a product read from dO and O, written fp32, then
    # summed to one fp32 per query
    cap = _capture("flash")
    for i, op in enumerate(cap.ops):
        if op.name != BWD:
            continue
        mul, red = cap.ops[i - 2], cap.ops[i - 1]
        assert mul.name == "aten.mul.Tensor" and red.name == "aten.sum.dim_IntList"
        assert mul.phase == red.phase == PHASE_ID["backward"]
        fb = flash_bytes(2, 64, 64, 32, 32, 4)
        assert mul.bytes_read + red.bytes_read == fb.delta_read == 2 * 16384 + 16384
        assert mul.bytes_written + red.bytes_written == fb.delta_write == 16384 + 2 * 64 * 4
        # the product is what dO and O are: the two inputs are the fused op's dO and O
        dO, out = op.accesses[0], op.accesses[4]
        assert {(a.storage, a.offset) for a in mul.accesses if not a.is_write} == \
            {(dO.storage, dO.offset), (out.storage, out.offset)}
    # 16-bit: the kernel computes delta itself, no prelude
    assert flash_bytes(2, 64, 64, 32, 32, 2).delta_read == 0
    assert flash_bytes(2, 64, 64, 32, 32, 2).delta_write == 0


def test_multi_head_models_hand_views_to_the_fused_kernel() -> None:
    # DiT (timm's Attention) and LDM (diffusers) pass [batch, heads, tokens, dim] views with
    # stride 1 in dim to SDPA: no copy before the fused kernel; the math path keeps the
    # reference code's [batch*heads, tokens, dim] copy
    t = torch.empty(2, 5, 3, 4, 8, device="meta").permute(2, 0, 3, 1, 4)[0]   # qkv[0]
    with attention_kernel("flash"):
        v = split_heads(t)
    assert v.shape == (2, 4, 5, 8) and v.untyped_storage()._cdata == t.untyped_storage()._cdata
    m = split_heads(t)
    assert m.shape == (8, 5, 8) and m.is_contiguous()
    cap = _capture("flash", "dit-traj")
    fwd = [i for i, op in enumerate(cap.ops) if op.name == FWD]
    assert fwd
    for i in fwd:
        assert "clone" not in cap.ops[i - 1].name
        b, h, lq, d = cap.ops[i].accesses[0].shape
        assert h > 1
    # more than one head: delta is transposed and copied once more (bh x lq fp32 each way)
    for i, op in enumerate(cap.ops):
        if op.name == BWD:
            b, h, lq, d = op.accesses[1].shape
            fb = flash_bytes(b * h, lq, lq, d, d, 4, heads=h)
            pre = cap.ops[i - 3:i]
            assert [p.name.split(".")[1] for p in pre] == ["mul", "sum", "clone"]
            assert sum(p.bytes_read for p in pre) == fb.delta_read
            assert sum(p.bytes_written for p in pre) == fb.delta_write


def test_flash_writes_no_score_matrix_and_math_does() -> None:
    math_cap, flash_cap = _capture("math"), _capture("flash")
    assert any(a.score for op in math_cap.ops for a in op.accesses)
    assert any("softmax" in op.name for op in math_cap.ops)
    assert not any(a.score for op in flash_cap.ops for a in op.accesses)
    assert not any("softmax" in op.name for op in flash_cap.ops)
    # no tensor of the fused path is as large as a 64 x 64 score matrix per head
    biggest = max(a.nbytes for op in flash_cap.ops if op.name in (FWD, BWD) for a in op.accesses)
    assert biggest < 2 * 64 * 64 * 4


def test_trace_attention_requests_equal_the_closed_form(tmp_path: Path) -> None:
    # no L2 (cache_bytes=0): each fused op's requests are its tensors' 64 B lines (every
    # tensor starts at offset 0 of a 512 B-aligned storage, so lines = bytes / 64 rounded up)
    out = tmp_path / "flash.h5"
    s = generate_trace(TraceSpec("ddpm", batch=2, size="tiny", attention="flash",
                                 cache_bytes=0, memory="DDR4-3200"), out)
    assert s["attention"] == "flash"
    with h5py.File(out, "r") as f:
        names = [n.decode() for n in f["ops/name"][:]]
        op = f["trace/op"][:]
        is_write = f["trace/is_write"][:].astype(bool)
    fb = flash_bytes(2, 64, 64, 32, 32, 4)
    delta_ids = [i - k for i, n in enumerate(names) if n == BWD for k in (1, 2)]
    sel = np.isin(op, delta_ids)
    assert 64 * int((sel & ~is_write).sum()) == 4 * fb.delta_read
    # the 512 B delta rounds to 8 lines per call
    assert 64 * int((sel & is_write).sum()) == 4 * fb.delta_write
    fwd_ids = [i for i, n in enumerate(names) if n == FWD]
    bwd_ids = [i for i, n in enumerate(names) if n == BWD]
    assert len(fwd_ids) == len(bwd_ids) == 4
    for ids, rd, wr in ((fwd_ids, fb.forward_read, fb.forward_write),
                        (bwd_ids, fb.backward_read, fb.backward_write)):
        for i in ids:
            sel = op == i
            assert 64 * int((sel & ~is_write).sum()) == rd
            assert 64 * int((sel & is_write).sum()) == wr


def test_query_block_and_l2_side_reads() -> None:
    assert LSE_ALIGN == 32
    assert queries_per_block(32) == 64 and queries_per_block(128) == 64
    assert queries_per_block(256) == 32
    # 64 queries in one block of 64: K and V read once from L2
    assert l2_side_bytes(2, 64, 64, 32, 32, 4) == flash_bytes(2, 64, 64, 32, 32, 4).forward_read
    # 1024 queries, head dim 256: 32 query blocks, each streaming K and V
    bh, l, d = 8, 1024, 256
    assert l2_side_bytes(bh, l, l, d, d, 4) == bh * l * d * 4 + 32 * bh * l * 2 * d * 4
    # DDPM 256x256, batch 8: one 512-channel head over 16 x 16 tokens; every tensor 4 MiB
    fwd, bwd = working_set_bytes(8, 256, 256, 512, 512, 4)
    assert fwd == 4 * 4 * 2 ** 20 + 8 * 256 * 4
    assert bwd == 8 * 4 * 2 ** 20 + 2 * 8 * 256 * 4


def test_unknown_attention_kernel_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DiffMemError, match="math, flash"):
        generate_trace(TraceSpec("ddpm", batch=2, size="tiny", attention="sdpa"),
                       tmp_path / "x.h5")


def test_cross_attention_calls_match_the_closed_form() -> None:
    # LDM: cross-attention (64 queries over 16 context tokens, 4 heads) and self-attention;
    # the frozen autoencoder's attention has a forward call and no backward
    cap = _capture("flash", "ldm-sr")
    fwd = [op for op in cap.ops if op.name == FWD]
    bwd = [op for op in cap.ops if op.name == BWD]
    assert len(bwd) < len(fwd)
    assert any(op.accesses[0].shape[2] != op.accesses[1].shape[2] for op in fwd)   # lq != lk
    for op in fwd:
        (b, h, lq, d), lk, dv = op.accesses[0].shape, op.accesses[1].shape[2], \
            op.accesses[2].shape[3]
        fb = flash_bytes(b * h, lq, lk, d, dv, 4, heads=h)
        assert (op.bytes_read, op.bytes_written) == (fb.forward_read, fb.forward_write)
    for op in bwd:
        (b, h, lq, d), lk, dv = op.accesses[1].shape, op.accesses[2].shape[2], \
            op.accesses[3].shape[3]
        fb = flash_bytes(b * h, lq, lk, d, dv, 4, heads=h)
        assert (op.bytes_read, op.bytes_written) == (fb.backward_read, fb.backward_write)


def test_every_captured_fused_call_takes_the_kernel_order() -> None:
    # the GPU order recognises every fused call the models make (LDM: cross-attention with
    # lq != lk, 4 heads, forward-only calls of the frozen autoencoder; DiT: q/k/v views into
    # one qkv storage), and only reorders: each op's read and written lines are the
    # sequential model's
    from engine.workloads.allocator import place
    from engine.workloads.expand import expand_op
    from engine.workloads.gpu_order import GpuModel, attention_order
    for workload in ("ldm-sr", "dit-traj"):
        cap = _capture("flash", workload)
        placement = place(cap)
        roles = np.array([s.role for s in cap.storages], np.uint8)
        fused = [op for op in cap.ops if op.name in (FWD, BWD)]
        assert {op.name for op in fused} == {FWD, BWD}
        for op in fused:
            per = [a.lines(int(placement.base[a.storage]), 64) for a in op.accesses]
            assert attention_order(op, per, placement.base, GpuModel()) is not None
            seq = list(expand_op(op, placement.base, roles))
            gpu = list(expand_op(op, placement.base, roles, gpu=GpuModel()))
            a, b = (np.concatenate([p.lines for p in x]) for x in (seq, gpu))
            wa, wb = (np.concatenate([p.is_write for p in x]) for x in (seq, gpu))
            assert sorted(a[wa].tolist()) == sorted(b[wb].tolist())
            assert sorted(a[~wa].tolist()) == sorted(b[~wb].tolist())
