"""Expand a captured operator into its 64-byte requests, in the order its kernel issues them.

Every tensor an operator reads or writes is cut into the distinct 64-byte lines it touches
(:meth:`~engine.workloads.capture.Access.lines`); the operator's requests are those lines,
each tensor's lines once (a kernel that tiles well re-reads tiles from on-chip memory, not
DRAM), interleaved by the operator's access pattern:

``tiled`` (matrix multiplies, convolutions and their backward)
    the work is split into steps of ``tile_lines`` lines; each step reads the next slice of
    every input (activations and weights alike, in proportion to their sizes) and then writes
    the next slice of the output, as a kernel marching over output tiles does.
``stream`` (elementwise ops, norms, reductions, copies)
    the same interleaving with short steps: inputs and outputs advance together.
``optimizer``
    bursts: parameter, gradient and moments are visited a burst at a time.

Attention score matrices (``[batch*heads, queries, keys]``) are read and written row-block
by row-block *across* the matrices of the batch and heads -- row r of every matrix, then row
r+1 -- so consecutive requests land far apart, as the score rows of many heads processed in
parallel do.

Everything is numpy, and an operator larger than ``max_lines`` comes out in several pieces,
so memory stays bounded however large the step is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator

import numpy as np

from engine.workloads.capture import PATTERN_ID, Access, OpRecord
from engine.workloads.lines import LINE_BYTES

if TYPE_CHECKING:
    from engine.workloads.gpu_order import GpuModel


#: Lines per interleaving step, by access pattern.
TILE_LINES = {PATTERN_ID["tiled"]: 2048, PATTERN_ID["stream"]: 64,
              PATTERN_ID["optimizer"]: 256}


@dataclass
class OpRequests:
    """A slice of one operator's requests (parallel arrays)."""

    lines: np.ndarray          # int64 line numbers (address // 64)
    is_write: np.ndarray       # bool
    role: np.ndarray           # uint8, index into capture.ROLES
    offset: int = 0            # position of the first request within the operator


def _scatter_rows(lines: np.ndarray, a: Access) -> np.ndarray:
    """Reorder a score matrix's lines row-block by row-block across its matrices."""
    m, rows = a.shape[0], a.shape[1]
    n = lines.shape[0]
    if m < 2 or n % m:
        return lines
    per = n // m
    row_lines = max(1, per // rows)
    if per % row_lines:
        return lines
    return lines.reshape(m, per // row_lines, row_lines).transpose(1, 0, 2).reshape(-1)


def op_lines(op: OpRecord, base: np.ndarray) -> list[np.ndarray]:
    """The distinct lines of each access of ``op`` (storage ``k`` at byte ``base[k]``),
    in the order the access pattern visits them."""
    out = []
    for a in op.accesses:
        lines = a.lines(int(base[a.storage]), LINE_BYTES)
        if a.score:
            lines = _scatter_rows(lines, a)
        out.append(lines)
    return out


def count_lines(op: OpRecord, base: np.ndarray) -> tuple[int, int]:
    """(read lines, written lines) of ``op`` without building the request stream."""
    r = w = 0
    for a in op.accesses:
        n = a.line_count(int(base[a.storage]), LINE_BYTES)
        if a.is_write:
            w += n
        else:
            r += n
    return r, w


def _expand_gpu(op: OpRecord, base: np.ndarray, roles: np.ndarray, max_lines: int,
                want: Callable[[int, int], bool] | None, gpu: "GpuModel"
                ) -> Iterator[OpRequests]:
    """GPU issue order (:mod:`engine.workloads.gpu_order`): the op is built whole when any
    of its slices is wanted."""
    from engine.workloads.gpu_order import order_op

    sizes = [a.line_count(int(base[a.storage]), LINE_BYTES) for a in op.accesses]
    total = int(sum(sizes))
    if total == 0:
        return
    cuts = list(range(0, total, max_lines)) + [total]
    wanted = [(lo, hi) for lo, hi in zip(cuts[:-1], cuts[1:])
              if want is None or want(lo, hi - lo)]
    if not wanted:
        return
    per_access = [a.lines(int(base[a.storage]), LINE_BYTES) for a in op.accesses]
    perm = order_op(op, per_access, base, gpu)
    lines = np.concatenate(per_access)[perm]
    is_write = np.concatenate([np.full(n, a.is_write, np.bool_)
                               for a, n in zip(op.accesses, sizes)])[perm]
    role = np.concatenate([np.full(n, roles[a.storage], np.uint8)
                           for a, n in zip(op.accesses, sizes)])[perm]
    for lo, hi in wanted:
        yield OpRequests(lines[lo:hi], is_write[lo:hi], role[lo:hi], lo)


def expand_op(op: OpRecord, base: np.ndarray, roles: np.ndarray,
              max_lines: int = 1 << 22, tile_lines: int | None = None,
              want: Callable[[int, int], bool] | None = None,
              gpu: "GpuModel | None" = None) -> Iterator[OpRequests]:
    """The requests of ``op`` in issue order, in slices of at most about ``max_lines``.

    Args:
        base: byte address of every storage (from the allocator).
        roles: role index of every storage.
        tile_lines: lines per interleaving step (default: by pattern, :data:`TILE_LINES`).
        want: ``want(offset, n)`` False skips the slice of requests offset..offset+n-1
            without building it (sampled mode).
        gpu: order the requests as the GPU's thread blocks issue them
            (:mod:`engine.workloads.gpu_order`) instead of the sequential tile/stream order.
    """
    if gpu is not None:
        yield from _expand_gpu(op, base, roles, max_lines, want, gpu)
        return
    order = [i for i, a in enumerate(op.accesses) if not a.is_write] + \
            [i for i, a in enumerate(op.accesses) if a.is_write]
    accesses = [op.accesses[i] for i in order]
    # a contiguous run is kept as (first line, count) and listed slice by slice
    per_access: list[np.ndarray | tuple[int, int]] = []
    for a in accesses:
        b = int(base[a.storage])
        rng = None if a.score else a.line_range(b, LINE_BYTES)
        if rng is not None:
            per_access.append(rng)
        else:
            lines = a.lines(b, LINE_BYTES)
            per_access.append(_scatter_rows(lines, a) if a.score else lines)
    sizes = np.array([x[1] if isinstance(x, tuple) else x.shape[0] for x in per_access],
                     np.int64)
    total = int(sizes.sum())
    if total == 0:
        return
    steps = max(1, -(-total // (tile_lines or TILE_LINES[op.pattern])))
    p = np.arange(steps + 1, dtype=np.int64)
    bounds = (p[None, :] * sizes[:, None]) // steps            # [A, S+1]
    piece = np.diff(bounds, axis=1)                            # lines of access a in step p
    step_total = piece.sum(axis=0)
    step_start = np.concatenate([[0], np.cumsum(step_total)])  # position of step p
    within = np.cumsum(piece, axis=0) - piece                  # offset of access a in step p
    # group the steps into slices of at most ~max_lines requests
    cuts = [0]
    while cuts[-1] < steps:
        lo = cuts[-1]
        hi = int(np.searchsorted(step_start, step_start[lo] + max_lines, side="right")) - 1
        cuts.append(min(steps, max(hi, lo + 1)))
    for lo, hi in zip(cuts[:-1], cuts[1:]):
        n = int(step_start[hi] - step_start[lo])
        if want is not None and not want(int(step_start[lo]), n):
            continue
        lines = np.empty(n, np.int64)
        is_write = np.empty(n, np.bool_)
        role = np.empty(n, np.uint8)
        for a_idx, (acc, arr) in enumerate(zip(accesses, per_access)):
            k0, k1 = int(bounds[a_idx, lo]), int(bounds[a_idx, hi])
            if k1 <= k0:
                continue
            # line k of step p goes to step_start[p] + within[a, p] + (k - bounds[a, p])
            shift = (step_start[lo:hi] - step_start[lo] + within[a_idx, lo:hi]
                     - bounds[a_idx, lo:hi])
            pos = np.repeat(shift, piece[a_idx, lo:hi]) + np.arange(k0, k1, dtype=np.int64)
            if isinstance(arr, tuple):
                lines[pos] = np.arange(arr[0] + k0, arr[0] + k1, dtype=np.int64)
            else:
                lines[pos] = arr[k0:k1]
            is_write[pos] = acc.is_write
            role[pos] = roles[acc.storage]
        yield OpRequests(lines, is_write, role, int(step_start[lo]))
