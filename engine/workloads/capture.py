"""Capture one training step of a PyTorch model as a list of operators.

The step (forward, loss, backward, optimizer step) runs on the ``meta`` device -- tensors
have shapes, dtypes and strides but no data, so a 675M-parameter model at batch 128 costs
nothing -- under a :class:`~torch.utils._python_dispatch.TorchDispatchMode` that sees every
ATen operator after autograd has decomposed the step.  For each operator the recorder keeps
its name, phase, FLOPs and the byte ranges of every device tensor it reads or writes.

Storage identity: every tensor's ``untyped_storage()._cdata`` (the address of its C++
``StorageImpl``) names its storage.  On ``meta`` the data pointer is always null, and a freed
storage's ``_cdata`` is reused by the next one, so the recorder keeps every storage it has
seen alive until the capture ends: ids then stay unique.

Phases: ``forward`` (everything before ``loss.backward()``; operators inside an
:class:`~engine.workloads.models.common.AttentionModule` are ``attention``), ``backward`` and
``optimizer``.  Roles of storages: ``weight`` (parameters and buffers), ``gradient``
(parameter gradients and every other tensor the backward pass creates), ``optimizer_state``
(the optimizer's moments and temporaries) and ``activation`` (inputs and forward tensors).
"""
from __future__ import annotations

import logging
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry

from engine.workloads.models.common import AttentionModule

log = logging.getLogger(__name__)

PHASES = ("forward", "attention", "backward", "optimizer")
ROLES = ("activation", "weight", "gradient", "optimizer_state")
PHASE_ID = {name: i for i, name in enumerate(PHASES)}
ROLE_ID = {name: i for i, name in enumerate(ROLES)}

#: Access patterns an operator's requests are expanded with (see expand.py).
PATTERNS = ("stream", "tiled", "optimizer")
PATTERN_ID = {name: i for i, name in enumerate(PATTERNS)}

_TILED_OPS = {"mm", "addmm", "bmm", "baddbmm", "convolution", "convolution_backward",
              "_convolution", "linear", "matmul", "addbmm"}
#: In-place operators that overwrite ``self`` without reading it.
_WRITE_ONLY_SELF = {"copy_", "fill_", "zero_", "normal_", "uniform_", "bernoulli_",
                    "random_", "exponential_", "set_"}
#: Operators that allocate without touching memory.
_NO_TRAFFIC = {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
               "resize_", "detach", "alias", "lift_fresh", "_local_scalar_dense",
               "record_stream", "_to_copy_meta_noop"}
#: Operators reading only rows of a table (first input): read as many bytes as they write.
_GATHER_OPS = {"embedding", "index", "index_select", "gather"}
#: Fused optimizer kernels whose schema marks ``grads`` as mutated (``Tensor(b!)[]``) but whose
#: CUDA kernel stores the gradient only when a ``grad_scale`` is given (AMP unscaling):
#: ``FusedAdamMathFunctor`` / ``FusedAdagradMathFunctor`` store every list ``i`` with
#: ``i != kGradIdx || grad_scale_ptr`` (aten/src/ATen/native/cuda/fused_adam_utils.cuh).
_GRAD_STORED_ONLY_WHEN_SCALED = {"_fused_adam_", "_fused_adamw_", "_fused_adagrad_"}
#: Fused attention kernels (``TraceSpec.attention = "flash"``).  Their 0-dim outputs/inputs
#: (the philox seed and offset) are host tensors on CUDA when dropout is 0, so they make no
#: device traffic; on ``meta`` they would look like device tensors and are dropped.
FUSED_ATTENTION_OPS = {"_scaled_dot_product_efficient_attention",
                       "_scaled_dot_product_efficient_attention_backward"}


@dataclass
class Access:
    """One tensor an operator reads or writes: byte runs inside one storage.

    The bytes touched are ``offset + outer_offsets[k] + [0, run_bytes)`` for every k, where
    ``outer_offsets`` enumerates the non-contiguous outer dimensions (one zero entry for a
    contiguous tensor).
    """

    storage: int
    offset: int                  # bytes from the start of the storage
    run_bytes: int
    outer_sizes: tuple[int, ...]
    outer_strides: tuple[int, ...]     # bytes
    shape: tuple[int, ...]
    dtype: str
    is_write: bool
    stride: tuple[int, ...] = ()     # the tensor's own strides (elements), for reference
    score: bool = False          # attention score matrix (rows read scattered)

    @property
    def nbytes(self) -> int:
        """Bytes of data the tensor holds (elements x itemsize, broadcasts counted once)."""
        return self.run_bytes * int(np.prod(self.outer_sizes, dtype=np.int64))

    def outer_offsets(self) -> np.ndarray:
        """Byte offsets of the runs, relative to ``offset``, ascending."""
        offs = np.zeros(1, np.int64)
        for size, stride in zip(self.outer_sizes, self.outer_strides):
            offs = (offs[:, None] + np.arange(size, dtype=np.int64)[None] * stride).reshape(-1)
        return np.sort(offs)

    def line_range(self, base: int, line_bytes: int = 64) -> tuple[int, int] | None:
        """(first line, line count) when the access is one contiguous run, else None."""
        if self.outer_sizes:
            return None
        if self.run_bytes <= 0:
            return 0, 0
        start = base + self.offset
        first = start // line_bytes
        return first, (start + self.run_bytes - 1) // line_bytes - first + 1

    def line_count(self, base: int, line_bytes: int = 64) -> int:
        """Number of distinct lines touched (without listing them for a contiguous run)."""
        r = self.line_range(base, line_bytes)
        if r is not None:
            return r[1]
        return int(self.lines(base, line_bytes).shape[0])

    def lines(self, base: int, line_bytes: int = 64) -> np.ndarray:
        """Distinct ``line_bytes`` lines touched when the storage starts at byte ``base``,
        in address order (int64 line numbers)."""
        start = base + self.offset
        if self.run_bytes <= 0:
            return np.empty(0, np.int64)
        if not self.outer_sizes:
            return np.arange(start // line_bytes, (start + self.run_bytes - 1) // line_bytes + 1,
                             dtype=np.int64)
        starts = start + self.outer_offsets()
        first = starts // line_bytes
        last = (starts + self.run_bytes - 1) // line_bytes
        counts = last - first + 1
        total = int(counts.sum())
        idx = np.repeat(first - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
        lines = idx + np.arange(total, dtype=np.int64)
        if lines.shape[0] > 1 and np.any(lines[1:] <= lines[:-1]):
            lines = np.unique(lines)
        return lines


@dataclass
class OpRecord:
    """One ATen operator of the captured step."""

    index: int
    name: str                   # e.g. "aten.convolution.default"
    phase: int                  # index into PHASES
    pattern: int                # index into PATTERNS
    flops: float
    accesses: list[Access] = field(default_factory=list)

    @property
    def bytes_read(self) -> int:
        return sum(a.nbytes for a in self.accesses if not a.is_write)

    @property
    def bytes_written(self) -> int:
        return sum(a.nbytes for a in self.accesses if a.is_write)


@dataclass
class StorageInfo:
    """A device storage seen during the capture."""

    index: int
    nbytes: int
    role: int                   # index into ROLES
    persistent: bool            # weights, gradients and optimizer state live all step
    first_op: int = -1
    last_op: int = -1


@dataclass
class Capture:
    """Everything recorded from one training step."""

    ops: list[OpRecord]
    storages: list[StorageInfo]
    parameters: int             # trainable parameters
    total_parameters: int

    def phase_flops(self) -> dict[str, float]:
        out = {p: 0.0 for p in PHASES}
        for op in self.ops:
            out[PHASES[op.phase]] += op.flops
        return out


def _tensor_layout(t: torch.Tensor) -> tuple[int, int, tuple[int, ...], tuple[int, ...]]:
    """(offset bytes, contiguous run bytes, outer sizes, outer strides in bytes) of ``t``.

    Dimensions of size 1 and broadcast (stride 0) dimensions touch no extra memory and are
    dropped; the rest are sorted by stride and the innermost ones merged while they are
    contiguous, so a transposed or permuted tensor is read as the block it occupies.
    """
    item = t.element_size()
    offset = t.storage_offset() * item
    if t.numel() == 0:
        return offset, 0, (), ()
    dims = sorted((st, sz) for sz, st in zip(t.shape, t.stride()) if sz > 1 and st != 0)
    run = 1
    k = 0
    while k < len(dims) and dims[k][0] == run:
        run *= dims[k][1]
        k += 1
    outer = dims[k:]
    return offset, run * item, tuple(sz for _, sz in outer), tuple(st * item for st, _ in outer)


class _Recorder(TorchDispatchMode):
    """The dispatch-level recorder; see the module docstring."""

    def __init__(self, device: torch.device) -> None:
        super().__init__()
        self.device = device
        self.phase = PHASE_ID["forward"]
        self.attention_depth = 0
        self.ops: list[OpRecord] = []
        self.storage_index: dict[int, int] = {}
        self.storage_bytes: list[int] = []
        self.storage_first_phase: list[int] = []
        self._alive: list[Any] = []          # keeps storages (and their ids) alive

    def storage_id(self, t: torch.Tensor) -> int:
        s = t.untyped_storage()
        key = s._cdata
        idx = self.storage_index.get(key)
        if idx is None:
            idx = len(self.storage_bytes)
            self.storage_index[key] = idx
            self.storage_bytes.append(int(s.nbytes()))
            self.storage_first_phase.append(self.current_phase())
            self._alive.append(s)
        else:
            self.storage_bytes[idx] = max(self.storage_bytes[idx], int(s.nbytes()))
        return idx

    def current_phase(self) -> int:
        if self.phase == PHASE_ID["forward"] and self.attention_depth > 0:
            return PHASE_ID["attention"]
        return self.phase

    def _access(self, t: torch.Tensor, is_write: bool) -> Access:
        offset, run, sizes, strides = _tensor_layout(t)
        return Access(self.storage_id(t), offset, run, sizes, strides, tuple(t.shape),
                      str(t.dtype).removeprefix("torch."), is_write, tuple(t.stride()))

    def _on_device(self, x: Any) -> bool:
        return isinstance(x, torch.Tensor) and x.device.type == self.device.type

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        short = func.overloadpacket.__name__
        if short in _NO_TRAFFIC or func.namespace != "aten":
            for t in tree_leaves(out):       # register outputs so their role is right
                if self._on_device(t):
                    self.storage_id(t)
            return out
        schema = func._schema
        mutated: list[torch.Tensor] = []
        read: list[torch.Tensor] = []
        for arg, value in zip(schema.arguments, list(args) + [kwargs.get(a.name) for a in
                                                              schema.arguments[len(args):]]):
            tensors = [t for t in tree_leaves(value) if self._on_device(t)]
            info = arg.alias_info
            if (short in _GRAD_STORED_ONLY_WHEN_SCALED and arg.name == "grads"
                    and kwargs.get("grad_scale") is None):
                info = None                  # read, not stored (see the set's comment)
            if info is not None and info.is_write:
                mutated += tensors
                if short not in _WRITE_ONLY_SELF:
                    read += tensors
            else:
                read += tensors
        outs = [t for t in tree_leaves(out) if self._on_device(t)]
        views = all(r.alias_info is not None and not r.alias_info.is_write
                    for r in schema.returns) and bool(schema.returns)
        if views and not mutated:
            for t in outs:
                self.storage_id(t)
            return out
        written = list(mutated)
        if not mutated:
            written = outs
        if short in FUSED_ATTENTION_OPS:
            read = [t for t in read if t.dim() > 0]
            written = [t for t in written if t.dim() > 0]
        accesses = [self._access(t, False) for t in read]
        if short in _GATHER_OPS and accesses and written:
            table = accesses[0]
            table.run_bytes = min(table.nbytes, sum(t.numel() * t.element_size()
                                                    for t in written))
            table.outer_sizes, table.outer_strides = (), ()
        accesses += [self._access(t, True) for t in written]
        accesses = _dedupe(accesses)
        if not accesses:
            return out
        pattern = PATTERN_ID["tiled"] if short in _TILED_OPS else PATTERN_ID["stream"]
        if self.phase == PHASE_ID["optimizer"]:
            pattern = PATTERN_ID["optimizer"]
        flops = _flops(func, args, kwargs, out, written)
        self.ops.append(OpRecord(len(self.ops), str(func), self.current_phase(), pattern,
                                 flops, accesses))
        return out


def _dedupe(accesses: list[Access]) -> list[Access]:
    """Drop repeated reads (or writes) of the same bytes within one operator."""
    seen: set[tuple] = set()
    out = []
    for a in accesses:
        key = (a.storage, a.offset, a.run_bytes, a.outer_sizes, a.outer_strides, a.is_write)
        if key not in seen:
            seen.add(key)
            out.append(a)
    return out


def _flops(func: Any, args: tuple, kwargs: dict, out: Any, written: list[torch.Tensor]) -> float:
    """FLOPs of one operator: torch's flop formulas where they exist (matrix multiplies,
    convolutions, attention), else one per element written (for the timing model only)."""
    formula = flop_registry.get(func.overloadpacket)
    if formula is not None:
        try:
            return float(formula(*args, **kwargs, out_val=out))
        except Exception:                # a formula that does not apply to this overload
            log.debug("no flop formula result for %s", func)
    return float(sum(t.numel() for t in written))


@contextmanager
def fused_optimizers_on(device: torch.device) -> Iterator[None]:
    """Let ``torch.optim``'s ``fused=True`` optimizers run on ``device`` (normally ``meta``).

    PyTorch refuses ``fused=True`` on devices outside its fused-kernel list (CUDA, CPU, ...;
    not ``meta``), although ``aten._fused_adamw_`` has a meta kernel; inside this context the
    list includes ``device``'s type, so the step dispatches the fused kernel and the recorder
    sees it with its real argument lists.  Nothing is computed (meta tensors carry no data)."""
    import torch.optim.optimizer as _opt
    orig = _opt._get_fused_kernels_supported_devices
    _opt._get_fused_kernels_supported_devices = lambda: orig() + [device.type]
    try:
        yield
    finally:
        _opt._get_fused_kernels_supported_devices = orig


def capture_step(model: torch.nn.Module, step: Callable[[torch.nn.Module], torch.Tensor],
                 optimizer: torch.optim.Optimizer, device: torch.device) -> Capture:
    """Run ``loss = step(model)``, ``loss.backward()``, ``optimizer.step()`` under the
    recorder and return the :class:`Capture` (of the second step: the first, untraced, lets
    the optimizer create its state).

    ``model`` and ``optimizer`` must live on ``device`` (normally ``meta``); inputs created
    before the call or inside ``step`` are both recorded (as activations).
    """
    fused = any(g.get("fused") for g in optimizer.param_groups)
    with fused_optimizers_on(device) if fused else nullcontext():
        return _capture_step(model, step, optimizer, device)


def _capture_step(model: torch.nn.Module, step: Callable[[torch.nn.Module], torch.Tensor],
                  optimizer: torch.optim.Optimizer, device: torch.device) -> Capture:
    # one untraced step first, so the optimizer's moments exist as in steady-state training
    # (its first step would allocate them), then drop the gradients as zero_grad() does
    step(model).backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    rec = _Recorder(device)
    hooks = []

    def enter(*_: Any) -> None:
        rec.attention_depth += 1

    def leave(*_: Any) -> None:
        rec.attention_depth -= 1

    for m in model.modules():
        if isinstance(m, AttentionModule):
            hooks.append(m.register_forward_pre_hook(enter))
            hooks.append(m.register_forward_hook(leave))
    try:
        with rec:
            for t in list(model.parameters()) + list(model.buffers()):
                rec.storage_id(t)
            loss = step(model)
            rec.phase = PHASE_ID["backward"]
            loss.backward()
            rec.phase = PHASE_ID["optimizer"]
            optimizer.step()
    finally:
        for h in hooks:
            h.remove()
    roles, persistent = _roles(rec, model, optimizer)
    storages = [StorageInfo(i, rec.storage_bytes[i], roles[i], i in persistent)
                for i in range(len(rec.storage_bytes))]
    _mark_scores(rec.ops)
    for op in rec.ops:
        for a in op.accesses:
            s = storages[a.storage]
            if s.first_op < 0:
                s.first_op = op.index
            s.last_op = op.index
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    log.debug("captured %d operators over %d storages", len(rec.ops), len(storages))
    return Capture(rec.ops, storages, trainable, total)


def _owned(rec: _Recorder, tensors: list[torch.Tensor]) -> set[int]:
    out = set()
    for t in tensors:
        idx = rec.storage_index.get(t.untyped_storage()._cdata)
        if idx is not None:
            out.add(idx)
    return out


def _roles(rec: _Recorder, model: torch.nn.Module,
           optimizer: torch.optim.Optimizer) -> tuple[list[int], set[int]]:
    """Role of every storage, and the set of persistent ones (weights, parameter gradients,
    optimizer moments: they outlive the step)."""
    weights = _owned(rec, list(model.parameters()) + list(model.buffers()))
    grads = _owned(rec, [p.grad for p in model.parameters() if p.grad is not None])
    states = _owned(rec, [v for st in optimizer.state.values() for v in st.values()
                          if isinstance(v, torch.Tensor) and v.device.type == rec.device.type])
    by_phase = {PHASE_ID["forward"]: ROLE_ID["activation"],
                PHASE_ID["attention"]: ROLE_ID["activation"],
                PHASE_ID["backward"]: ROLE_ID["gradient"],
                PHASE_ID["optimizer"]: ROLE_ID["optimizer_state"]}
    roles = []
    for i, phase in enumerate(rec.storage_first_phase):
        if i in weights:
            roles.append(ROLE_ID["weight"])
        elif i in grads:
            roles.append(ROLE_ID["gradient"])
        elif i in states:
            roles.append(ROLE_ID["optimizer_state"])
        else:
            roles.append(by_phase[phase])
    return roles, weights | grads | states


def _mark_scores(ops: list[OpRecord]) -> None:
    """Mark attention score matrices: 3-D tensors shaped like a softmax input, in operators
    of the attention phase or of the backward pass."""
    shapes = set()
    for op in ops:
        if "softmax" in op.name and op.phase in (PHASE_ID["attention"], PHASE_ID["backward"]):
            for a in op.accesses:
                if len(a.shape) == 3 and a.shape[1] > 1:
                    shapes.add(a.shape)
    if not shapes:
        return
    for op in ops:
        if op.phase in (PHASE_ID["attention"], PHASE_ID["backward"]):
            for a in op.accesses:
                if a.shape in shapes:
                    a.score = True
