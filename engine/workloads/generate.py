"""From a workload name to a DRAM request trace on disk, streamed in chunks.

Pipeline: build the model on ``meta`` -> capture one training step (capture.py) -> place the
storages in an address space (allocator.py) -> time the operators (timing.py) -> for each
operator, expand it into 64-byte requests (expand.py), filter them through the on-chip cache
(cache.py), give them arrival cycles and tags -> append to the HDF5 trace.

The HDF5 file holds the trace group ``trace`` in the layout :mod:`engine.trace` reads
(``addr``, ``cycle``, ``is_write``, ``stream``), so the engine simulates it directly, plus
parallel per-request tag datasets ``phase``, ``op`` and ``role`` (indices into the group
attributes ``phase_names`` / ``role_names`` and the ``ops`` group), the JSON summary in
the group attribute ``summary``, and the placement (memory geometry, footprint, pages, hash)
in the group attribute ``placement``, from which :mod:`engine.workloads.retarget` re-places
the trace for another memory.

Sampled mode (``sample=F``) cuts the step's issued request stream -- every operator's
requests before the cache, in issue (time) order -- into windows (as many as
:func:`auto_windows` affords, up to 100,000; shorter windows lower the variance) stratified
by phase and
operator class and keeps a fraction F of each stratum's windows (at least ten) by systematic
sampling from a start drawn from ``seed`` (:mod:`engine.workloads.sampling`).  Only operators
overlapping a kept window are expanded, and only the requests inside kept windows are
written, at the arrival times they have in the full trace.  Before each kept window the
cache is warmed with the requests just before it (``WARMUP_FACTOR`` times the cache's
capacity in lines, filtered but not written), so the window sees the cache it would see in
the full run.  Per-phase totals are estimated stratum by stratum (ratio of DRAM requests to
issued lines in the kept windows, times the stratum's issued lines, known exactly from the
capture) with a 95 % interval from the spread between windows -- except that positions
whose cache state is the full run's (warm-ups and windows, after a warm-up's length:
:func:`converged_intervals`) count as measured and only the rest is extrapolated; the final
write-back of the cache is added unscaled; the optimizer phase is never reported below its floor (parameters x
dtype bytes x 4 read, x 3 written).
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from engine.address import bank_of, decode
from engine.errors import DiffMemError
from engine.fileio import atomic_path, json_default
from engine.trace import HDF5_CHUNK, HDF5_FORMAT_NAME, HDF5_VERSION
from engine.workloads.sampling import MIN_WINDOW_LINES

log = logging.getLogger(__name__)

DTYPES = ("float32", "bfloat16", "float16")
DEFAULT_MEMORY = "HBM2"
#: In sampled mode, the cache is warmed before each sampled window by running the preceding
#: operators through it (without writing their requests) until they issued this many times
#: the cache's capacity in lines.  Four, not two (issue 12s): after two capacities of issued
#: lines the L2 holds fewer dirty lines than in the full run (sets that saw few distinct
#: lines keep what an earlier stretch left), so a kept window's write-backs came out 2-5 %
#: low; after four, within 1 % (``bench_sampling.py design --warmup-factor``)
WARMUP_FACTOR = 4
Progress = Callable[[int, int], None]


#: AdamW implementations a trace can model (TraceSpec.optimizer; docs/workloads.md)
OPTIMIZERS = ("foreach", "fused", "single")
#: The L2 at the traced step's start (TraceSpec.l2_start).  "steady": a training loop's step
#: between identical steps -- the cache holds what the previous step left (the step's own
#: last ``WARMUP_FACTOR`` x capacity issued lines run through it first, not written), its
#: dirty lines reach DRAM when this step evicts them, and the dirty lines this step leaves
#: are the next step's write-backs (none at the step's end).  "cold": an empty cache at the
#: start and every dirty line written back at the end (least recently used first), all at
#: the step's last cycle: a first step, or the step followed by something else.
L2_STARTS = ("steady", "cold")


@dataclass
class TraceSpec:
    """What to trace and how."""

    workload: str
    batch: int
    resolution: int | None = None
    size: str = "paper"                      # "paper" (published config) or "tiny"
    overrides: dict[str, Any] = field(default_factory=dict)
    dtype: str = "float32"
    sample: float | None = None              # fraction of operators expanded (None: all)
    windows: int | None = None               # sampled mode: windows the stream is cut into
                                             # (None: auto_windows)
    seed: int = 0
    cache_bytes: int = 40 * 1024 * 1024      # on-chip cache in front of DRAM (0: none)
    cache_ways: int = 16
    cache_line_bytes: int = 128              # 128 B lines of 32 B sectors (A100); 64: plain
    memory: str = DEFAULT_MEMORY             # memory config: clock and capacity
    pages: str = "random"                    # "random" 2 MiB frames (seeded) or "identity"
    placement_seed: int = 0                  # seed of the frame permutation
    fold_addresses: bool = False             # fold a footprint larger than the memory
    address_hash: str = "gpu"                # "gpu" XOR channel/bank hash, or "none"
    order: str = "gpu"                       # "gpu" thread-block order, or "sequential"
    optimizer: str = "foreach"               # AdamW kernels: "foreach" (PyTorch's CUDA
                                             # default: torch.optim.AdamW with foreach=None
                                             # and fused=None picks foreach on CUDA),
                                             # "fused" (fused=True: one _fused_adamw_
                                             # multi-tensor kernel) or "single" (one set of
                                             # kernels per tensor, foreach=False)
    attention: str = "math"                  # attention kernel: "math" (the models' own
                                             # bmm-softmax-bmm, score matrix in memory) or
                                             # "flash" (fused memory-efficient SDPA kernel,
                                             # no score matrix; docs/workloads.md)
    l2_start: str = "steady"                 # the L2 at the step's start: "steady" (as the
                                             # previous, identical step left it; no
                                             # end-of-step write-back) or "cold" (empty, and
                                             # written back at the step's end: L2_STARTS)
    census_phases: tuple[str, ...] = ("optimizer",)   # sampled mode: phases whose whole
                                             # stream runs through the cache model (counted as
                                             # measured, not extrapolated; requests outside the
                                             # kept windows still not written)
    chunk: int = 1 << 20                     # requests written per HDF5 append
    compression: str | None = "lzf"          # HDF5 filter: "lzf" (fast), "gzip" or None

    def check(self) -> None:
        if self.dtype not in DTYPES:
            raise DiffMemError(f"dtype {self.dtype!r}: expected one of {', '.join(DTYPES)}")
        if self.sample is not None and not 0.0 < self.sample <= 1.0:
            raise DiffMemError(f"sample fraction {self.sample}: expected a number in (0, 1]")
        if self.windows is not None and self.windows <= 0:
            raise DiffMemError(f"sampling windows {self.windows}: expected a positive count")
        if self.compression not in ("lzf", "gzip", None):
            raise DiffMemError(f"compression {self.compression!r}: expected 'lzf', 'gzip' "
                               "or None")
        if self.cache_bytes < 0:
            raise DiffMemError(f"cache size {self.cache_bytes}: expected >= 0 bytes")
        if 0 < self.cache_bytes < self.cache_line_bytes * self.cache_ways:
            raise DiffMemError(
                f"cache size {self.cache_bytes} bytes: less than one set of "
                f"{self.cache_ways} ways of {self.cache_line_bytes} B lines "
                f"({self.cache_line_bytes * self.cache_ways} bytes); expected 0 (no cache) or "
                "at least that")
        if self.optimizer not in OPTIMIZERS:
            raise DiffMemError(f"optimizer {self.optimizer!r}: expected one of "
                               f"{', '.join(OPTIMIZERS)}")
        from engine.workloads.models.common import ATTENTION_KERNELS
        if self.attention not in ATTENTION_KERNELS:
            raise DiffMemError(f"attention {self.attention!r}: expected one of "
                               f"{', '.join(ATTENTION_KERNELS)}")
        if self.l2_start not in L2_STARTS:
            raise DiffMemError(f"L2 start {self.l2_start!r}: expected one of "
                               f"{', '.join(L2_STARTS)}")
        if self.order not in ("gpu", "sequential"):
            raise DiffMemError(f"order {self.order!r}: expected 'gpu' or 'sequential'")
        if self.pages not in ("random", "identity"):
            raise DiffMemError(f"pages {self.pages!r}: expected 'random' or 'identity'")
        from engine.workloads.capture import PHASES
        bad = [p for p in self.census_phases if p not in PHASES]
        if bad:
            raise DiffMemError(f"census phase {bad[0]!r}: expected one of {', '.join(PHASES)}")
        if self.address_hash not in ("gpu", "none"):
            raise DiffMemError(f"address hash {self.address_hash!r}: expected 'gpu' or "
                               "'none'")


#: auto_windows: at most this many windows (shorter windows: less variance, until the
#: cache warm-up before each one, not the window, dominates the cost)
MAX_WINDOWS = 100_000
#: auto_windows: the warm-up may cost up to this many times the kept requests, or this many
#: lines, whichever is more (doubled with WARMUP_FACTOR's 2 -> 4, so that a step is cut into
#: as many windows as before: the lines through the cache model are cheap beside expanding
#: the operators the windows touch)
WARMUP_BUDGET_FACTOR = 8
WARMUP_BUDGET_LINES = 100_000_000


def auto_windows(stream_lines: int, sample: float, cache_lines: int) -> int:
    """Windows to cut a stream into: as many as possible (up to ``MAX_WINDOWS``) while the
    cache warm-up -- ``WARMUP_FACTOR`` x the cache before each kept window, or the whole gap
    to the previous window when that is shorter -- stays within a budget of
    ``WARMUP_BUDGET_FACTOR`` x the kept lines or ``WARMUP_BUDGET_LINES``.  On a small step
    the gaps are shorter than the warm-up, the cache sees the whole stream, and windows
    are cheap; on a large one each kept window costs a full warm-up.  Windows are at least
    ``MIN_WINDOW_LINES`` long."""
    kept = max(1.0, stream_lines * sample)
    budget = max(WARMUP_BUDGET_FACTOR * kept, WARMUP_BUDGET_LINES)
    k = sample * MAX_WINDOWS
    warm = min(k * WARMUP_FACTOR * cache_lines, stream_lines)
    if warm > budget and cache_lines > 0:
        k = budget / (WARMUP_FACTOR * cache_lines)
    return int(max(1, min(round(k / sample), stream_lines // MIN_WINDOW_LINES)))


def select_windows(n_windows: int, sample: float | None, seed: int) -> np.ndarray:
    """Indices of the kept windows: round(sample x n_windows) of them (at least one), evenly
    spaced from an offset drawn from ``seed``; all of them without ``sample``."""
    if sample is None or sample >= 1.0:
        return np.arange(n_windows, dtype=np.int64)
    pick = min(n_windows, max(1, int(round(sample * n_windows))))
    u = np.random.default_rng(seed).random()
    return np.floor((np.arange(pick) + u) * n_windows / pick).astype(np.int64)


def _intervals_mask(g0: int, n: int, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Mask of positions g0..g0+n-1 lying in any [starts[i], ends[i]) (sorted, disjoint)."""
    g = np.arange(g0, g0 + n, dtype=np.int64)
    if starts.shape[0] == 0:
        return np.zeros(n, np.bool_)
    k = np.searchsorted(starts, g, side="right") - 1
    return (k >= 0) & (g < ends[np.maximum(k, 0)])


def _kept_intervals(lines_per_op: np.ndarray, phase_of: np.ndarray, windows: int,
                    sample: float | None, seed: int, min_lines: int = MIN_WINDOW_LINES
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Kept [lo, hi) intervals of the issued stream, sorted, disjoint, touching ones merged;
    stratified by the labels ``phase_of`` (:func:`engine.workloads.sampling.kept_windows`)."""
    from engine.workloads.sampling import kept_windows
    w = kept_windows(lines_per_op, phase_of, windows, 1.0 if sample is None else sample, seed,
                     min_lines=min_lines)
    lo_arr, hi_arr = w.lo, w.hi
    if lo_arr.shape[0] > 1:                      # merge touching intervals
        new = np.concatenate([[True], lo_arr[1:] > hi_arr[:-1]])
        hi_arr = np.maximum.reduceat(hi_arr, np.flatnonzero(new))
        lo_arr = lo_arr[new]
    return lo_arr, hi_arr


class _Writer:
    """Streams the trace and its tags into an HDF5 file, atomically replaced at the end."""

    NAMES = (("addr", "<u8"), ("cycle", "<u8"), ("is_write", "u1"), ("stream", "<u2"),
             ("phase", "u1"), ("op", "<u4"), ("role", "u1"))

    def __init__(self, path: Path, compression: str | None) -> None:
        import h5py
        # the temporary file next to the trace, moved onto it by finish() (engine.fileio)
        self._replace = contextlib.ExitStack()
        self.tmp = self._replace.enter_context(atomic_path(path))
        self.h5 = h5py.File(self.tmp, "w")
        self.group = self.h5.create_group("trace")
        opts: dict[str, Any] = {"compression": compression,
                                "shuffle": compression is not None}
        if compression == "gzip":
            opts["compression_opts"] = 4
        self.ds = {name: self.group.create_dataset(
            name, shape=(0,), maxshape=(None,), dtype=dt, chunks=(HDF5_CHUNK,), **opts)
            for name, dt in self.NAMES}
        self.n = 0

    def append(self, cols: dict[str, np.ndarray]) -> None:
        m = self.n + cols["addr"].shape[0]
        for name, ds in self.ds.items():
            ds.resize((m,))
            ds[self.n:m] = cols[name]
        self.n = m

    def finish(self, attrs: dict[str, Any], ops: dict[str, np.ndarray]) -> None:
        g = self.group
        g.attrs["format"] = HDF5_FORMAT_NAME
        g.attrs["version"] = HDF5_VERSION
        g.attrs["clock"] = "memory"
        g.attrs["count"] = self.n
        for k, v in attrs.items():
            g.attrs[k] = v
        og = self.h5.create_group("ops")
        for k, v in ops.items():
            og.create_dataset(k, data=v, compression="gzip" if v.size > 1024 else None)
        self.h5.close()
        self._replace.close()

    def abort(self) -> None:
        try:
            self.h5.close()
        finally:
            stop = RuntimeError("trace not written")     # removes the temporary file
            self._replace.__exit__(type(stop), stop, None)


class _Stats:
    """Running counts for the summary."""

    def __init__(self, row_bytes: int, mem: Any = None) -> None:
        from engine.workloads.capture import PATTERNS, PHASES, ROLES
        self.shape = (len(PHASES), len(ROLES), 2)
        self.dram = np.zeros(self.shape, np.int64)        # requests by phase, role, write
        self.flushed = np.zeros(self.shape, np.int64)     # of which the final cache flush
        self.requests = 0
        self.sequential = 0
        self.same_row = 0
        self.prev = -1
        self.row_bytes = row_bytes
        self.first_cycle: int | None = None
        self.last_cycle: int | None = None
        # in-order open-page row hits per bank, by phase and operator class (see add)
        self.mem = mem
        self.open_hits = np.zeros((len(PHASES), len(PATTERNS) + 1), np.int64)
        self.open_reqs = np.zeros((len(PHASES), len(PATTERNS) + 1), np.int64)
        self.open_row: dict[int, int] = {}

    def add_open_page(self, addr: np.ndarray, phase: np.ndarray, cls: np.ndarray) -> None:
        """Count requests that find their row open in their bank if every bank keeps its
        last row open and requests are served in trace order (no reordering): the trace's
        own row locality under the memory's address mapping, before any scheduler."""
        if self.mem is None or not addr.shape[0]:
            return
        # the engine's decoder (XOR bank interleave included): the banks the kernel sees
        f = decode(self.mem, addr)
        bank = bank_of(self.mem, f)
        row = f.ro
        order = np.argsort(bank, kind="stable")
        b, r = bank[order], row[order]
        prev = np.empty_like(r)
        prev[1:] = r[:-1]
        first = np.ones(b.shape[0], np.bool_)
        first[1:] = b[1:] != b[:-1]
        carry = np.array([self.open_row.get(int(x), -1) for x in b[first]], np.int64)
        prev[first] = carry
        hit_sorted = prev == r
        last = np.ones(b.shape[0], np.bool_)
        last[:-1] = b[1:] != b[:-1]
        for bk, rw in zip(b[last].tolist(), r[last].tolist()):
            self.open_row[bk] = rw
        hit = np.empty_like(hit_sorted)
        hit[order] = hit_sorted
        idx = phase.astype(np.int64) * self.open_hits.shape[1] + cls
        self.open_hits += np.bincount(idx[hit], minlength=self.open_hits.size).reshape(
            self.open_hits.shape)
        self.open_reqs += np.bincount(idx, minlength=self.open_reqs.size).reshape(
            self.open_reqs.shape)

    def add(self, addr: np.ndarray, is_write: np.ndarray, phase: np.ndarray, role: np.ndarray,
            cycle: np.ndarray, flush: bool = False) -> None:
        n = addr.shape[0]
        if not n:
            return
        idx = (phase.astype(np.int64) * self.shape[1] + role) * 2 + is_write
        counts = np.bincount(idx, minlength=self.dram.size).reshape(self.shape)
        self.dram += counts
        if flush:
            self.flushed += counts
        a = addr.astype(np.int64)
        prev = np.concatenate([[self.prev], a[:-1]])
        self.sequential += int(np.count_nonzero(a == prev + 64))
        self.same_row += int(np.count_nonzero((a // self.row_bytes == prev // self.row_bytes)
                                              & (prev >= 0)))
        self.prev = int(a[-1])
        self.requests += n
        if self.first_cycle is None:
            self.first_cycle = int(cycle[0])
        self.last_cycle = int(cycle[-1])


def _bytes_table(counts: np.ndarray, scale: np.ndarray | None = None) -> dict[str, Any]:
    """{"by_phase": {phase: {"read": B, "write": B}}, "by_role": ..., "read": B, "write": B}."""
    from engine.workloads.capture import PHASES, ROLES
    c = counts.astype(np.float64) * 64.0
    if scale is not None:
        c = c * scale[:, None, :]
    as_num: Callable[[float], Any] = (lambda x: int(round(x))) if scale is None else float
    return {
        "read": as_num(c[..., 0].sum()), "write": as_num(c[..., 1].sum()),
        "by_phase": {p: {"read": as_num(c[i, :, 0].sum()), "write": as_num(c[i, :, 1].sum())}
                     for i, p in enumerate(PHASES)},
        "by_role": {r: {"read": as_num(c[:, j, 0].sum()), "write": as_num(c[:, j, 1].sum())}
                    for j, r in enumerate(ROLES)},
    }


def _roles_within_phases(phase_bytes: np.ndarray, sampled: np.ndarray, flushed: np.ndarray,
                         scale: np.ndarray) -> dict[str, dict[str, float]]:
    """The sampled step's DRAM bytes by role, consistent with the phases' estimates
    (``phase_bytes`` [phase, read/write], the stratified estimator's, flush included): each
    phase's estimate less its flush is shared among the roles as in the phase's sampled
    requests (``sampled`` [phase, role, dir], the flush apart), and each role's flush is added
    as counted. The roles then sum to the phases (the per-phase scaling of issued lines they
    took before summed to 1.3 % less than the total on a tiny DDPM step); a phase with an
    estimate but no sampled request keeps the scaled counts (``scale`` [phase, dir])."""
    from engine.workloads.capture import ROLES
    from engine.workloads.lines import LINE_BYTES
    line = float(LINE_BYTES)
    got = sampled.astype(np.float64) * line                     # [phase, role, dir]
    flush = flushed.astype(np.float64) * line
    rest = np.maximum(phase_bytes - flush.sum(axis=1), 0.0)     # [phase, dir]
    per_phase = got.sum(axis=1, keepdims=True)
    share = np.where(per_phase > 0, got / np.maximum(per_phase, 1e-300), 0.0)
    alloc = np.where(per_phase > 0, share * rest[:, None, :], got * scale[:, None, :])
    total = alloc + flush
    return {r: {"read": float(total[:, j, 0].sum()), "write": float(total[:, j, 1].sum())}
            for j, r in enumerate(ROLES)}


#: observe(g0, issued_is_write, dram_source, dram_is_write): in a full run, each expanded
#: slice's issued lines (stream positions g0, g0+1, ...) and the DRAM requests they caused
#: (``dram_source``: offset in the slice of the access that caused each one) -- the
#: per-position counts on which a sampling design can be evaluated exactly
#: (``benchmarks/bench_sampling.py design``); the end-of-step write-back is not observed
Observer = Callable[[int, np.ndarray, np.ndarray, np.ndarray], None]


def generate_trace(spec: TraceSpec, out: str | os.PathLike[str], *,
                   progress: Progress | None = None,
                   observe: Observer | None = None,
                   _l2_state: tuple[dict[str, np.ndarray], int] | None = None
                   ) -> dict[str, Any]:
    """Capture ``spec``'s training step and write its DRAM trace to ``out`` (HDF5).

    Returns the summary (also stored in the file): DRAM bytes read/written by phase and
    role, request count, footprint, sequential-run length, row locality, and, in sampled
    mode, the extrapolated full-step totals.  ``observe`` (full runs only): see
    :data:`Observer`.  In the steady L2 state (``l2_start`` "steady"), a full run whose
    step did not leave the L2 as the warm-up made it (the warm-up, the step's tail, missed
    lines the step left in the L2 earlier: sets its tail seldom touches) runs the step
    again from the state it left, which is the steady state (``_l2_state``: that state and
    how many lines the first pass's end differed in); the first pass's output is
    discarded.
    """
    import torch

    from engine.config import load_config
    from engine.workloads import registry
    from engine.workloads.allocator import place
    from engine.workloads.cache import CacheFilter
    from engine.workloads.capture import PATTERNS, PHASE_ID, PHASES, ROLES, capture_step
    from engine.workloads.expand import LINE_BYTES, count_lines, expand_op
    from engine.workloads.gpu_order import GpuModel
    from engine.workloads.placement import GpuAddressHash, page_table
    from engine.workloads.retarget import placement_record
    from engine.workloads.sampling import kept_windows
    from engine.workloads.timing import Accelerator, schedule

    spec.check()
    out_path = Path(out)
    if out_path.is_dir():
        raise DiffMemError(f"{out_path}: is a folder, expected a trace file name (.h5)")
    if not out_path.parent.is_dir():
        raise DiffMemError(f"{out_path}: folder {out_path.parent} does not exist")
    mem = load_config(spec.memory)
    dtype = getattr(torch, spec.dtype)
    wl, cfg, model, inputs = registry.build(spec.workload, batch=spec.batch,
                                            resolution=spec.resolution, size=spec.size,
                                            overrides=spec.overrides, dtype=dtype)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01,
                            foreach=spec.optimizer == "foreach",
                            fused=spec.optimizer == "fused")
    from engine.workloads.models.common import attention_kernel
    with attention_kernel(spec.attention):
        cap = capture_step(model, lambda m: m(*inputs), opt, torch.device("meta"))
    placement = place(cap)
    roles = np.array([s.role for s in cap.storages], np.uint8)
    acc = Accelerator()
    start_ns, dur_ns = schedule(cap.ops, acc)
    phase_of = np.array([op.phase for op in cap.ops], np.int64)
    issued = np.zeros((len(cap.ops), 2), np.int64)
    for op in cap.ops:
        issued[op.index] = count_lines(op, placement.base)
    op_start = np.concatenate([[0], np.cumsum(issued.sum(axis=1))])    # stream position
    stream_total = int(op_start[-1])
    sampled = spec.sample is not None and spec.sample < 1.0
    pattern_of = np.array([op.pattern for op in cap.ops], np.int64)
    stratum_of = phase_of * len(PATTERNS) + pattern_of
    if sampled:
        n_windows = spec.windows or auto_windows(stream_total, spec.sample,
                                                 spec.cache_bytes // LINE_BYTES)
        win = kept_windows(issued.sum(axis=1), stratum_of, n_windows, spec.sample,
                           spec.seed)
        keep_lo, keep_hi = win.lo, win.hi
        budget = int(WARMUP_FACTOR * spec.cache_bytes // LINE_BYTES)
        warm_lo = np.maximum(np.concatenate([[0], keep_hi[:-1]]), keep_lo - budget)
        warm_lo, warm_hi = warm_lo[warm_lo < keep_lo], keep_lo[warm_lo < keep_lo]
        census = [PHASE_ID[p] for p in spec.census_phases]
        ops_in = np.flatnonzero(np.isin(phase_of, census) & (issued.sum(axis=1) > 0))
        if ops_in.shape[0]:
            warm_lo, warm_hi = census_warmups(warm_lo, warm_hi, op_start[ops_in],
                                              op_start[ops_in + 1], budget)
        n_win = int(win.stratum.shape[0])
        win_x = np.zeros((n_win, 2), np.int64)       # issued lines per kept window, r/w
        win_y = np.zeros((n_win, 2), np.int64)       # DRAM requests per kept window, r/w
        conv_lo, conv_hi = converged_intervals(keep_lo, keep_hi, warm_lo, warm_hi, budget)
        n_strata = len(PHASES) * len(PATTERNS)
        conv_x = np.zeros((n_strata, 2), np.int64)   # issued lines at converged positions
        conv_y = np.zeros((n_strata, 2), np.int64)   # DRAM requests they caused
    else:
        keep_lo = np.zeros(1, np.int64)
        keep_hi = np.full(1, stream_total, np.int64)
        warm_lo = warm_hi = np.zeros(0, np.int64)

    def overlaps(lo: np.ndarray, hi: np.ndarray, a: int, b: int) -> bool:
        k = int(np.searchsorted(hi, a, side="right"))
        return k < lo.shape[0] and int(lo[k]) < b

    expanded = np.array([overlaps(keep_lo, keep_hi, int(op_start[i]), int(op_start[i + 1]))
                         for i in range(len(cap.ops))], np.bool_)
    warming = np.array([not expanded[i] and overlaps(warm_lo, warm_hi, int(op_start[i]),
                                                     int(op_start[i + 1]))
                        for i in range(len(cap.ops))], np.bool_)
    kept_issued = np.zeros((len(PHASES), 2), np.int64)     # lines issued in kept windows

    capacity = int(mem.capacity_bytes)
    pages = page_table(placement.peak_bytes, capacity, spec.placement_seed,
                       fold=spec.fold_addresses, identity=spec.pages == "identity",
                       memory_name=f"{mem.name}")
    folded = pages.folded
    if folded:
        log.warning("footprint %.3g GB exceeds the %s capacity %.3g GB: pages folded into "
                    "the capacity (--fold-addresses)", placement.peak_bytes / 1e9, mem.name,
                    capacity / 1e9)
    addr_hash = GpuAddressHash(mem) if spec.address_hash == "gpu" else None
    gpu = GpuModel() if spec.order == "gpu" else None
    row_bytes = int(mem.columns_eff * mem.bus_width // 8)
    cache = CacheFilter(spec.cache_bytes, spec.cache_ways, spec.cache_line_bytes)
    l2_access = np.zeros(len(PHASES), np.int64)
    l2_hit = np.zeros(len(PHASES), np.int64)
    stats = _Stats(row_bytes, mem)
    pattern_by_op = np.array([op.pattern for op in cap.ops] + [len(PATTERNS)], np.int64)
    dram_per_op = np.zeros(len(cap.ops), np.int64)
    tck = float(mem.tCK)
    # the L2 as the previous, identical step left it (L2_STARTS): the step's own last
    # WARMUP_FACTOR x capacity issued lines through it first (the whole step, when it is
    # shorter: then exactly the state a training loop's step starts from)
    steady = spec.l2_start == "steady" and cache.enabled
    tail_lo = (max(0, stream_total - int(WARMUP_FACTOR * spec.cache_bytes // LINE_BYTES))
               if steady else stream_total)
    writer = _Writer(out_path, spec.compression)
    buf: list[dict[str, np.ndarray]] = []
    buffered = 0

    def emit(f: Any, cycles: np.ndarray, flush: bool = False) -> None:
        nonlocal buffered
        addr = f.lines.astype(np.uint64) * np.uint64(LINE_BYTES)
        if folded and pages.identity:
            addr %= np.uint64(capacity)
        if addr_hash is not None:
            addr = addr_hash.apply(addr)
        n = addr.shape[0]
        stats.add(addr, f.is_write, f.phase, f.role, cycles, flush)
        stats.add_open_page(addr, f.phase, np.full(n, len(PATTERNS), np.int64) if flush
                            else pattern_by_op[f.op.astype(np.int64)])
        buf.append({"addr": addr, "cycle": cycles.astype(np.uint64),
                    "is_write": f.is_write.view(np.uint8), "stream": np.zeros(n, np.uint16),
                    "phase": f.phase, "op": f.op, "role": f.role})
        buffered += n
        if buffered >= spec.chunk:
            flush_buffer()

    def flush_buffer() -> None:
        nonlocal buffered
        if buf:
            writer.append({k: np.concatenate([b[k] for b in buf]) for k in buf[0]})
            buf.clear()
            buffered = 0

    def warm_with_tail() -> None:
        """The previous step's end: issued lines tail_lo.. through the cache, not written."""
        for op in cap.ops:
            g_op = int(op_start[op.index])
            if int(op_start[op.index + 1]) <= tail_lo:
                continue
            for part in expand_op(op, placement.base, roles, gpu=gpu,
                                  want=lambda off, n, g=g_op: g + off + n > tail_lo):
                skip = max(0, tail_lo - (g_op + part.offset))
                if skip >= part.lines.shape[0]:
                    continue
                cache.filter(pages.translate(part.lines[skip:], LINE_BYTES),
                             part.is_write[skip:], part.role[skip:], op.phase, op.index)

    try:
        n_ops = len(cap.ops)
        start_state = None
        if steady:
            if _l2_state is not None:
                cache.load_state(_l2_state[0])
            else:
                warm_with_tail()
            start_state = cache.snapshot()
        # a first pass that may be run again (see the docstring) observes into a buffer
        replay: list[tuple[Any, ...]] | None = (
            [] if observe is not None and steady and not sampled and _l2_state is None
            else None)
        observed = observe if replay is None else (lambda *a: replay.append(a))
        for op in cap.ops:
            if progress is not None:
                progress(op.index, n_ops)
            if not (expanded[op.index] or warming[op.index]):
                continue
            total = int(issued[op.index].sum())
            g_op = int(op_start[op.index])

            def want(offset: int, n: int) -> bool:
                a, b = g_op + offset, g_op + offset + n
                return overlaps(keep_lo, keep_hi, a, b) or overlaps(warm_lo, warm_hi, a, b)

            for part in expand_op(op, placement.base, roles, want=want if sampled else None,
                                  gpu=gpu):
                part.lines = pages.translate(part.lines, LINE_BYTES)
                n = part.lines.shape[0]
                done = part.offset
                g0 = g_op + done
                if sampled:
                    where = win.interval_of(np.arange(g0, g0 + n, dtype=np.int64))
                    keep = where >= 0
                    feed = keep | _intervals_mask(g0, n, warm_lo, warm_hi)
                    idx = np.flatnonzero(feed)
                    f = cache.filter(part.lines[idx], part.is_write[idx], part.role[idx],
                                     op.phase, op.index)
                    kept_in = keep[idx]
                    l2_access[op.phase] += int(kept_in.sum())
                    l2_hit[op.phase] += int(np.count_nonzero(cache.last_outcome[kept_in] == 1))
                    conv = _intervals_mask(g0, n, conv_lo, conv_hi)
                    st = int(stratum_of[op.index])
                    conv_x[st] += np.bincount(part.is_write[conv].view(np.uint8), minlength=2)
                    conv_y[st] += np.bincount(
                        f.is_write[conv[idx[f.source]]].view(np.uint8), minlength=2)
                    f = f[keep[idx[f.source]]]
                    f.source = idx[f.source]
                    kept_issued[op.phase] += np.bincount(part.is_write[keep].view(np.uint8),
                                                         minlength=2)
                    wk = win.window[where[keep]]
                    np.add.at(win_x, (wk, part.is_write[keep].view(np.uint8)), 1)
                    wy = win.window[where[f.source]]
                    np.add.at(win_y, (wy, f.is_write.view(np.uint8)), 1)
                else:
                    f = cache.filter(part.lines, part.is_write, part.role, op.phase, op.index)
                    if observed is not None:
                        observed(g0, part.is_write, f.source, f.is_write)
                    l2_access[op.phase] += n
                    l2_hit[op.phase] += int(np.count_nonzero(cache.last_outcome == 1))
                pos = (f.source + done).astype(np.float64)
                t = start_ns[op.index] + dur_ns[op.index] * (pos + 0.5) / max(total, 1)
                emit(f, np.floor(t / tck).astype(np.int64))
                np.add.at(dram_per_op, f.op, 1)
        flush_requests = 0
        if spec.l2_start == "cold":
            f = cache.flush(int(phase_of[-1]) if n_ops else 0, max(n_ops - 1, 0))
            flush_requests = int(f.lines.shape[0])
            if f.lines.shape[0]:
                end = start_ns[-1] + dur_ns[-1] if n_ops else 0.0
                emit(f, np.full(f.lines.shape[0], int(np.floor(end / tck)), np.int64),
                     flush=True)
                np.add.at(dram_per_op, f.op, 1)
        # did the step leave the L2 as it found it? (it does when the tail covered the
        # step's last uses of every set; the whole step run through it, always)
        steady_check = None
        if start_state is not None and not sampled:
            differing = cache.lines_differing(start_state)
            if differing and _l2_state is None:
                log.info("the L2 after the step differs from its warm-up (the step's last "
                         "%d lines) in %d lines: the step again, from the state it left",
                         stream_total - tail_lo, differing)
                writer.abort()
                return generate_trace(spec, out, progress=progress, observe=observe,
                                      _l2_state=(cache.state(), differing))
            steady_check = {"resident_lines": cache.resident_lines(),
                            "lines_differing": differing,
                            "warm_up": ("the step's last lines" if _l2_state is None
                                        else "the whole step (a second pass)"),
                            "warm_up_lines": (stream_total - tail_lo if _l2_state is None
                                              else stream_total),
                            "first_pass_lines_differing": (
                                None if _l2_state is None else _l2_state[1])}
        for call in replay or ():
            observe(*call)
        if progress is not None:
            progress(n_ops, n_ops)
        flush_buffer()

        issued_by_phase = np.zeros((len(PHASES), 2), np.int64)      # [phase, read/write]
        np.add.at(issued_by_phase, phase_of, issued)
        sampled_by_phase = kept_issued if sampled else issued_by_phase
        item = int(torch.empty(0, dtype=dtype).element_size())
        floor = np.zeros((len(PHASES), 2), np.float64)
        # (in the steady state the lines the optimizer leaves dirty in the L2 are written
        # back during the next step, up to the L2's capacity of them)
        floor[PHASE_ID["optimizer"]] = (
            max(0.0, 4.0 * item * cap.parameters - spec.cache_bytes),
            max(0.0, 3.0 * item * cap.parameters - (spec.cache_bytes if steady else 0)))
        from engine.workloads.compute import UTILISATION_BAND
        compute_ns = {str(u): float(schedule(cap.ops, acc, u)[1].sum())
                      for u in UTILISATION_BAND}
        floor_step = _floor_without_l2(cap, item)
        summary: dict[str, Any] = {
            "workload": spec.workload,
            # (the registry's description is the paper's model: a tiny one says it is not)
            "description": wl.description if spec.size == "paper" else
            f"{wl.description.split(' (')[0]} (tiny test configuration, not the paper's)",
            "model_config": _jsonable(cfg), "batch": spec.batch, "dtype": spec.dtype,
            "parameters": cap.parameters, "total_parameters": cap.total_parameters,
            "operators": n_ops, "operators_expanded": int(expanded.sum()),
            "operators_warming": int(warming.sum()),
            "stream_lines": stream_total,
            "stream_lines_kept": int(sampled_by_phase.sum()),
            "sample": spec.sample,
            # (the windows the strata were cut into: a stratum's share of n_windows, at least
            # ten kept, none shorter than MIN_WINDOW_LINES)
            "windows": (int(win.n_windows.sum()) if sampled else None),
            "windows_requested": (n_windows if sampled else None), "seed": spec.seed,
            "census_phases": (list(spec.census_phases) if sampled else None),
            "memory": mem.name, "tck_ns": tck, "cache_bytes": spec.cache_bytes,
            "accelerator": asdict(acc),
            "flops": cap.phase_flops(),
            "step_time_ns": float(start_ns[-1] + dur_ns[-1]) if n_ops else 0.0,
            "compute_time_ns_by_utilisation": compute_ns,
            "compute_model": acc.describe(),
            "requests": stats.requests,
            "reads": int(stats.dram[..., 0].sum()), "writes": int(stats.dram[..., 1].sum()),
            "first_cycle": stats.first_cycle, "last_cycle": stats.last_cycle,
            "dram_bytes": _bytes_table(stats.dram),
            "issued_bytes_all_ops": {p: {"read": int(issued_by_phase[i, 0]) * LINE_BYTES,
                                         "write": int(issued_by_phase[i, 1]) * LINE_BYTES}
                                     for i, p in enumerate(PHASES)},
            "cache_line_bytes": spec.cache_line_bytes,
            "l2_hit_rate": {p: (float(l2_hit[i] / l2_access[i])
                                if l2_access[i] and cache.enabled else None)
                            for i, p in enumerate(PHASES)},
            "l2_hit_rate_all": (float(l2_hit.sum() / l2_access.sum())
                                if l2_access.sum() and cache.enabled else None),
            "l2_start": spec.l2_start if cache.enabled else None,
            "l2_steady_check": steady_check,
            "flush_requests": flush_requests,
            "flush_order": "lru" if spec.l2_start == "cold" else None,
            "floor_bytes_by_phase": {p: {"read": float(floor[i, 0]), "write": float(floor[i, 1])}
                                     for i, p in enumerate(PHASES) if floor[i].any()},
            "floor_rule": "optimizer (AdamW): every parameter, gradient and both moments read "
                          "once (4 x dtype bytes per parameter, less what the L2 can hold at "
                          "the start) and parameter and moments written once (3 x dtype "
                          "bytes; " + ("less what the L2 holds at the end: the next step "
                                       "writes those back" if steady else
                                       "the end-of-step write-back counts here") + ")",
            "floor_without_l2_bytes": floor_step,
            "footprint_bytes": placement.peak_bytes,
            "persistent_bytes": placement.persistent_bytes,
            "addresses_folded": folded, "capacity_bytes": capacity,
            "placement": {"pages": spec.pages, "page_bytes": pages.page_bytes,
                          "pages_used": int(pages.frames.shape[0]),
                          "placement_seed": spec.placement_seed,
                          "fold_addresses": spec.fold_addresses,
                          "address_hash": spec.address_hash,
                          "hash_memory": mem.name if addr_hash is not None else None},
            "order": spec.order,
            "optimizer": spec.optimizer,
            "attention": spec.attention,
            "gpu_model": asdict(gpu) if gpu is not None else None,
            "mean_sequential_run": (stats.requests / max(1, stats.requests - stats.sequential)
                                    if stats.requests else 0.0),
            "row_bytes": row_bytes,
            "row_locality": stats.same_row / max(1, stats.requests - 1),
            "open_page_hit_rate": _open_page_table(stats),
        }
        if sampled:
            scale = np.where(sampled_by_phase > 0,
                             issued_by_phase / np.maximum(sampled_by_phase, 1), 0.0)
            strat = _stratified(win, win_x, win_y, issued, stratum_of, len(PATTERNS),
                                stats.flushed.sum(axis=1), floor, conv_x, conv_y,
                                writes_by_all_lines=cache.enabled)
            windows_only = _stratified(win, win_x, win_y, issued, stratum_of, len(PATTERNS),
                                       stats.flushed.sum(axis=1), floor,
                                       writes_by_all_lines=cache.enabled)
            est = {"read": float(strat["bytes"][:, 0].sum()),
                   "write": float(strat["bytes"][:, 1].sum()),
                   "by_phase": {p: {d: float(strat["bytes"][i, j])
                                    for j, d in enumerate(("read", "write"))}
                                for i, p in enumerate(PHASES)},
                   "by_role": _roles_within_phases(strat["bytes"], stats.dram - stats.flushed,
                                                   stats.flushed, scale)}
            summary["extrapolated"] = {
                "dram_bytes": est,
                "requests": (est["read"] + est["write"]) / LINE_BYTES,
                "estimator": "stratified by phase x operator class, systematic windows, "
                             "ratio to issued lines; by_role: each phase's estimate shared "
                             "among roles as in its sampled windows (approximate)",
                "ci95_by_phase": {p: {d: [float(strat["lo"][i, j]), float(strat["hi"][i, j])]
                                      for j, d in enumerate(("read", "write"))}
                                  for i, p in enumerate(PHASES)},
                "relative_se_by_phase": {p: {d: float(strat["rse"][i, j])
                                             for j, d in enumerate(("read", "write"))}
                                         for i, p in enumerate(PHASES)},
                "floored": strat["floored"],
                "strata": strat["strata"],
                "converged_share_by_phase": strat["converged_share"],
                "windows_only_strata": windows_only["strata"],
                "windows_only_by_phase": {
                    p: {d: float(windows_only["bytes"][i, j])
                        for j, d in enumerate(("read", "write"))}
                    for i, p in enumerate(PHASES)},
                "windows_only_ci95_by_phase": {
                    p: {d: [float(windows_only["lo"][i, j]), float(windows_only["hi"][i, j])]
                        for j, d in enumerate(("read", "write"))}
                    for i, p in enumerate(PHASES)}}
        writer.finish(
            {"phase_names": json.dumps(list(PHASES)), "role_names": json.dumps(list(ROLES)),
             "summary": json.dumps(summary, default=json_default),
             "placement": json.dumps(placement_record(mem, spec, placement.peak_bytes, folded,
                                                      pages.page_bytes))},
            {"name": np.array([op.name for op in cap.ops], dtype=object).astype("S"),
             "phase": phase_of.astype(np.uint8), "flops": np.array([op.flops for op in cap.ops]),
             "start_ns": start_ns, "duration_ns": dur_ns, "expanded": expanded,
             "issued_lines": issued, "dram_requests": dram_per_op,
             "stratum": stratum_of.astype(np.uint8)})
    except BaseException:
        writer.abort()
        raise
    log.debug("wrote %d requests to %s", stats.requests, out_path)
    return summary


def _open_page_table(stats: Any) -> dict[str, Any]:
    """In-order open-page row-hit rate (see ``_Stats.add_open_page``): overall, by phase
    and by operator class (the end-of-step write-back as class ``flush``)."""
    from engine.workloads.capture import PATTERNS, PHASES
    h, n = stats.open_hits, stats.open_reqs
    rate = (lambda a, b: float(a / b) if b else None)
    classes = list(PATTERNS) + ["flush"]
    return {"all": rate(h.sum(), n.sum()),
            "by_phase": {p: rate(h[i].sum(), n[i].sum()) for i, p in enumerate(PHASES)},
            "by_class": {c: rate(h[:, j].sum(), n[:, j].sum()) for j, c in enumerate(classes)}}


def _floor_without_l2(cap: Any, item: int) -> dict[str, float]:
    """The least DRAM traffic a training step can have without an on-chip cache that keeps
    data from one step to the next (an L2 can go below it: a step whose footprint fits in it
    moves nothing in the steady state), from the capture alone: AdamW reads
    parameter, gradient and both moments and writes parameter and moments once (7 x dtype
    bytes per parameter: 28 B in fp32); the forward reads every weight once; every
    activation saved for the backward pass (a forward tensor the backward reads) is written
    once and read once.  Everything else (temporaries, re-reads, gradients of activations)
    could in principle stay on chip, so real steps move more."""
    from engine.workloads.capture import PHASE_ID, ROLE_ID
    fwd = (PHASE_ID["forward"], PHASE_ID["attention"])
    phase_of = [op.phase for op in cap.ops]
    saved = sum(s.nbytes for s in cap.storages
                if s.role == ROLE_ID["activation"] and not s.persistent and s.first_op >= 0
                and phase_of[s.first_op] in fwd and phase_of[s.last_op] == PHASE_ID["backward"])
    weights = sum(s.nbytes for s in cap.storages if s.role == ROLE_ID["weight"])
    opt = 7.0 * item * cap.parameters
    return {"optimizer": opt, "weight_reads": float(weights),
            "saved_activations_write_read": 2.0 * saved, "total": opt + weights + 2.0 * saved}


def census_warmups(warm_lo: np.ndarray, warm_hi: np.ndarray, span_lo: np.ndarray,
                   span_hi: np.ndarray, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """The warm-up intervals extended so that the cache model sees every operator of the
    census phases (``span_lo``/``span_hi``: their stream positions) and ``budget`` lines
    before each stretch of them, so that :func:`converged_intervals` covers them whole:
    the union, sorted and disjoint."""
    lo = np.concatenate([warm_lo, np.maximum(np.asarray(span_lo, np.int64) - budget, 0)])
    hi = np.concatenate([warm_hi, np.asarray(span_hi, np.int64)])
    if not lo.shape[0]:
        return lo.astype(np.int64), hi.astype(np.int64)
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order].astype(np.int64), hi[order].astype(np.int64)
    run_hi = np.maximum.accumulate(hi)
    new = np.concatenate([[True], lo[1:] > run_hi[:-1]])
    starts = np.flatnonzero(new)
    return lo[starts], np.maximum.reduceat(hi, starts)


def converged_intervals(keep_lo: np.ndarray, keep_hi: np.ndarray, warm_lo: np.ndarray,
                        warm_hi: np.ndarray, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """Stream positions whose cache state is the full run's: the simulated stretches (kept
    windows and their warm-ups, merged where they touch) less the first ``budget`` lines of
    each stretch that does not start at the stream's beginning -- the same warm-up rule the
    kept windows rely on.  On a step whose gaps are shorter than the warm-up this is the
    whole stream from the first kept window on."""
    lo = np.concatenate([keep_lo, warm_lo]).astype(np.int64)
    hi = np.concatenate([keep_hi, warm_hi]).astype(np.int64)
    if not lo.shape[0]:
        return lo, hi
    order = np.argsort(lo, kind="stable")
    lo, hi = lo[order], hi[order]
    run_hi = np.maximum.accumulate(hi)
    new = np.concatenate([[True], lo[1:] > run_hi[:-1]])
    starts = np.flatnonzero(new)
    r_lo = lo[starts]
    r_hi = np.maximum.reduceat(hi, starts)
    c_lo = np.where(r_lo == 0, 0, r_lo + budget)
    ok = c_lo < r_hi
    return c_lo[ok], r_hi[ok]


def _stratified(win: Any, win_x: np.ndarray, win_y: np.ndarray, issued: np.ndarray,
                stratum_of: np.ndarray, n_patterns: int, flushed_by_phase: np.ndarray,
                floor: np.ndarray, conv_x: np.ndarray | None = None,
                conv_y: np.ndarray | None = None, writes_by_all_lines: bool = True
                ) -> dict[str, Any]:
    """Per-phase DRAM bytes from the kept windows (:mod:`engine.workloads.sampling`): point
    estimate, 95 % interval, relative standard error; the end-of-step write-back
    (``flushed_by_phase`` [phase, r/w] requests, simulated whole) is added unscaled; a
    phase's estimate is never reported below its ``floor`` (bytes; flagged ``floored``).

    With ``conv_x`` / ``conv_y`` ([stratum label, r/w]: issued lines at converged positions,
    :func:`converged_intervals`, and the DRAM requests they caused), what the cache
    simulation measured there is counted as it is, and only the rest of the stratum is
    extrapolated from the kept windows: ``Y_C + (1 - C/X) * estimate``, its variance scaled
    by ``(1 - C/X)^2`` (``C``, ``X``: converged and all lines of the stratum's ratio
    auxiliary -- issued reads for DRAM reads, all issued lines for DRAM writes, the
    write-backs any access can cause; the issued writes without a cache
    (``writes_by_all_lines`` False), where every write reaches DRAM as it is issued).
    The kept windows lie inside the converged positions, so when these are only the kept
    windows (a large step) the estimate is the windows' one; when the warm-ups cover the
    whole stratum it is exact.  The 95 % interval
    is +- Student's t quantile (Welch-Satterthwaite degrees of freedom over the strata)
    standard errors."""
    from engine.workloads.capture import PATTERNS, PHASES
    from engine.workloads.sampling import satterthwaite, stratum_estimate, t975

    n_ph = len(PHASES)
    est = np.zeros((n_ph, 2))
    var = np.zeros((n_ph, 2))
    conv_lines = np.zeros(n_ph)
    all_lines = np.zeros(n_ph)
    var_parts: list[list[list[float]]] = [[[], []] for _ in range(n_ph)]
    df_parts: list[list[list[int]]] = [[[], []] for _ in range(n_ph)]
    strata_out = []
    for k, s in enumerate(np.unique(stratum_of)):
        ph = int(s) // n_patterns
        ids = np.flatnonzero(win.stratum == k)
        row = {"phase": PHASES[ph], "class": PATTERNS[int(s) % n_patterns],
               "windows": int(win.n_windows[k]), "kept": int(win.n_kept[k])}
        x_all = float(issued[stratum_of == s].sum())
        u = 1.0
        if conv_x is not None and x_all > 0:
            u = max(0.0, 1.0 - float(conv_x[int(s)].sum()) / x_all)
            row["converged_share"] = 1.0 - u
            conv_lines[ph] += float(conv_x[int(s)].sum())
        all_lines[ph] += x_all
        for d in (0, 1):
            # the ratio's auxiliary: DRAM reads are a subset of the issued reads, so reads
            # go by the issued reads; write-backs are caused by whichever access evicts a
            # dirty line, read or write, so writes go by all issued lines (a ratio to the
            # issued writes is biased upwards with few windows: issue 12s); without a cache
            # writes go by the issued writes, which they are
            if d == 0 or not writes_by_all_lines:
                wx = win_x[ids, d].astype(np.float64)
                x_total = float(issued[stratum_of == s, d].sum())
            else:
                wx = win_x[ids].sum(axis=1).astype(np.float64)
                x_total = x_all
            e, v = stratum_estimate(win_y[ids, d].astype(np.float64), wx, x_total,
                                    int(win.n_windows[k]))
            if conv_y is not None:
                # the unconverged rest: the ratio's share of its auxiliary's lines, or (no
                # such lines) its share of all issued lines
                cx = (float(conv_x[int(s), d]) if d == 0 or not writes_by_all_lines
                      else float(conv_x[int(s)].sum()))
                ud = max(0.0, 1.0 - cx / x_total) if x_total > 0 else u
                e, v = float(conv_y[int(s), d]) + ud * e, ud * ud * v
            est[ph, d] += e
            var[ph, d] += v
            var_parts[ph][d].append(v)
            df_parts[ph][d].append(max(0, int(ids.shape[0]) - 1))
            row[("read", "write")[d] + "_bytes"] = e * 64.0
        strata_out.append(row)
    b = est * 64.0 + flushed_by_phase * 64.0
    se = np.sqrt(var) * 64.0
    # Student's t with the strata's pooled (Welch-Satterthwaite) degrees of freedom: a
    # stratum of a paper-size step keeps about ten windows, where the normal's 1.96 gives
    # intervals that cover the truth well below 95 % of the time (issue 12s)
    df = np.array([[satterthwaite(var_parts[i][d], df_parts[i][d]) for d in (0, 1)]
                   for i in range(n_ph)])
    q = np.vectorize(t975)(df)
    lo, hi = b - q * se, b + q * se
    floored = {}
    for i, p in enumerate(PHASES):
        for d, name in enumerate(("read", "write")):
            if floor[i, d] > 0 and b[i, d] < floor[i, d]:
                floored[f"{p}.{name}"] = {"estimate": float(b[i, d]),
                                          "floor": float(floor[i, d])}
    b = np.maximum(b, floor)
    lo = np.maximum(np.maximum(lo, floor), 0.0)
    hi = np.maximum(hi, b)
    rse = np.where(b > 0, se / np.where(b > 0, b, 1.0), 0.0)
    return {"bytes": b, "lo": lo, "hi": hi, "rse": rse, "floored": floored,
            "strata": strata_out, "df": df,
            "converged_share": {p: (float(conv_lines[i] / all_lines[i]) if all_lines[i]
                                    and conv_x is not None else None)
                                for i, p in enumerate(PHASES)}}


def _jsonable(cfg: Any) -> dict[str, Any]:
    return json.loads(json.dumps(asdict(cfg), default=json_default))
