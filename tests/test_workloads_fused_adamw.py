"""The fused AdamW option (``TraceSpec.optimizer = "fused"``): PyTorch's ``fused=True`` step.

Byte count derived from the CUDA kernel (aten/src/ATen/native/cuda/fused_adam_utils.cuh,
``FusedAdamMathFunctor``, depth 4 without amsgrad): every block loads its slice of params,
grads, exp_avgs and exp_avg_sqs (4 lists: 16 B per fp32 parameter) and stores every list but
the gradient (``i != kGradIdx || grad_scale_ptr``; no grad scaler here: 3 lists, 12 B), and
reads each tensor's ``step`` scalar (4 B per parameter *tensor*).  Before it,
``torch._foreach_add_(state_steps, 1)`` reads and writes each step scalar (fused keeps the
steps on the device).  So the optimizer phase moves exactly 16 B x P + 8 B x T read and
12 B x P + 4 B x T written (P parameters in T tensors).  The foreach default moves far more
(48 B read and 32 B written per parameter through an L2 that holds none of it).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("h5py")

from engine.errors import DiffMemError  # noqa: E402
from engine.workloads.allocator import place  # noqa: E402
from engine.workloads.capture import PHASE_ID, capture_step  # noqa: E402
from engine.workloads.expand import expand_op  # noqa: E402
from engine.workloads.generate import TraceSpec, generate_trace  # noqa: E402
from engine.workloads.gpu_order import GpuModel  # noqa: E402
from engine.workloads.registry import build  # noqa: E402


def _capture(fused: bool):
    _, _, model, inputs = build("resnet50", batch=2, size="tiny")
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, fused=fused, foreach=not fused)
    return capture_step(model, lambda m: m(*inputs), opt, torch.device("meta")), params


def test_fused_adamw_moves_16_bytes_read_and_12_written_per_parameter() -> None:
    cap, params = _capture(fused=True)
    p_count = sum(p.numel() for p in params)
    t_count = len(params)
    opt_ops = [op for op in cap.ops if op.phase == PHASE_ID["optimizer"]]
    names = [op.name for op in opt_ops]
    assert names == ["aten._foreach_add_.Scalar", "aten._fused_adamw_.default"]
    step_add, fused = opt_ops
    assert (step_add.bytes_read, step_add.bytes_written) == (4 * t_count, 4 * t_count)
    assert fused.bytes_read == 16 * p_count + 4 * t_count
    assert fused.bytes_written == 12 * p_count        # the gradient is not stored
    # the gradients are among the fused kernel's reads and none of its writes
    grad_ids = {a.storage for a in fused.accesses if not a.is_write}
    written = {a.storage for a in fused.accesses if a.is_write}
    assert len(grad_ids - written) == 2 * t_count     # grads and step scalars: read only
    # the phase as a whole: 16 B x P + 8 B x T read, 12 B x P + 4 B x T written
    assert sum(op.bytes_read for op in opt_ops) == 16 * p_count + 8 * t_count
    assert sum(op.bytes_written for op in opt_ops) == 12 * p_count + 4 * t_count


def test_foreach_default_moves_more_than_fused() -> None:
    cap, params = _capture(fused=False)
    p_count = sum(p.numel() for p in params)
    opt_ops = [op for op in cap.ops if op.phase == PHASE_ID["optimizer"]]
    assert all("._foreach_" in op.name for op in opt_ops)
    # eight parameter-sized foreach kernels: 12 lists read, 8 written (docs/workloads.md)
    big = [op for op in opt_ops if op.bytes_written >= 4 * p_count]
    assert len(big) == 8
    assert sum(op.bytes_read for op in big) == 48 * p_count
    assert sum(op.bytes_written for op in big) == 32 * p_count


def test_fused_kernel_runs_in_multi_tensor_apply_order() -> None:
    # the fused kernel is one multi_tensor_apply launch sequence: blocks over (tensor, chunk)
    # in list order, each loading its step-slice of the four lists, then storing three
    cap, _ = _capture(fused=True)
    fused = next(op for op in cap.ops if "_fused_adamw_" in op.name)
    placement = place(cap)
    roles = np.array([s.role for s in cap.storages], np.uint8)
    gpu = GpuModel()
    seq = list(expand_op(fused, placement.base, roles))
    par = list(expand_op(fused, placement.base, roles, gpu=gpu))
    a, b = (np.concatenate([p.lines for p in x]) for x in (seq, par))
    wa, wb = (np.concatenate([p.is_write for p in x]) for x in (seq, par))
    assert sorted(a[wa].tolist()) == sorted(b[wb].tolist())        # a permutation
    assert sorted(a[~wa].tolist()) == sorted(b[~wb].tolist())
    assert not np.array_equal(a, b)                 # reordered, not the sequential stream
    # block 0 (tensor 0, chunk 0) comes first and loads its first slice of params[0],
    # grads[0], exp_avgs[0], exp_avg_sqs[0] and steps[0], in list order, before any store
    reads = [x for x in fused.accesses if not x.is_write]
    t = len(reads) // 5
    expected = [reads[k * t].storage for k in range(5)]
    starts = np.array([placement.base[i] for i in range(len(cap.storages))], np.int64)
    ends = starts + np.array([st.nbytes for st in cap.storages], np.int64)

    def storage_of(line: int) -> int:
        hit = np.flatnonzero((starts <= line * 64) & (line * 64 < ends))
        return int(hit[0])

    first_write = int(np.argmax(wb))
    seen: list[int] = []
    for line in b[:first_write].tolist():
        sid = storage_of(line)
        if not seen or seen[-1] != sid:
            seen.append(sid)
    assert seen[:5] == expected
    assert not wb[:first_write].any() and first_write >= 5


def test_fused_trace_optimizer_phase_issues_the_closed_form(tmp_path: Path) -> None:
    # no L2 (cache_bytes=0): the DRAM requests are the issued 64 B lines; tensors start on
    # the allocator's 512 B boundaries, so every list's lines are its bytes rounded up
    out = tmp_path / "f.h5"
    s = generate_trace(TraceSpec("resnet50", batch=2, size="tiny", optimizer="fused",
                                 cache_bytes=0, memory="DDR4-3200"), out)
    assert s["optimizer"] == "fused"
    cap, params = _capture(fused=True)
    line = 64
    lines = lambda n: -(-n // line) * line        # noqa: E731
    p_sizes = [p.numel() * 4 for p in params]
    read = 4 * sum(lines(n) for n in p_sizes) + 2 * len(params) * line   # + step scalars
    write = 3 * sum(lines(n) for n in p_sizes) + len(params) * line
    opt = s["issued_bytes_all_ops"]["optimizer"]
    assert (opt["read"], opt["write"]) == (read, write)
    json.dumps(s)


def test_unknown_optimizer_is_refused_with_the_choices(tmp_path: Path) -> None:
    with pytest.raises(DiffMemError, match="foreach, fused, single"):
        generate_trace(TraceSpec("resnet50", batch=2, size="tiny", optimizer="lamb"),
                       tmp_path / "x.h5")
