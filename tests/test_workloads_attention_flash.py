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
                                    queries_per_block)
from engine.workloads.generate import TraceSpec, generate_trace  # noqa: E402
from engine.workloads.models.common import attention_kernel  # noqa: E402
from engine.workloads.registry import build  # noqa: E402

FWD = "aten._scaled_dot_product_efficient_attention.default"
BWD = "aten._scaled_dot_product_efficient_attention_backward.default"


def _capture(kind: str):
    _, cfg, model, inputs = build("ddpm", batch=2, size="tiny")
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


def test_unknown_attention_kernel_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DiffMemError, match="math, flash"):
        generate_trace(TraceSpec("ddpm", batch=2, size="tiny", attention="sdpa"),
                       tmp_path / "x.h5")
