"""From a Gemmini schedule to the DRAM request stream of executing it.

For each layer (in network order) the DMA moves, tile by tile in the schedule's loop order:

* weights and inputs into the scratchpad, at every step of the DRAM-level loops where the
  tile the scratchpad needs changes (nothing when only loops irrelevant to the tensor moved;
  only the new columns/rows when an input window slides by one step of the innermost loop;
  the whole tile otherwise) — the same rules as the cost model, so the bytes agree exactly;
* outputs out of the accumulator at every step of the DRAM and scratchpad loops where the
  accumulator's output tile changes (a write-back), and partial sums back in when a tile is
  revisited (a read).

Fused edges remove the consumer's reads of the fused tensor and, when every use of a
producer's output is fused, the producer's write-back: the same accounting as the cost model.

Addresses come from a tensor layout (``nchw``, ``nhwc`` or ``tiled`` — channels in blocks of
the array width, innermost) and a placement (``packed``: tensors back to back, 4 KiB aligned;
``staggered``: each tensor starts one DRAM row-buffer further into the bank rotation, so
consecutive tensors begin in different banks).  Every layer's input feature map (with its
halo) has its own region: pooling/reshape between layers is not modelled as traffic.

Times: a layer occupies its schedule interval; its DRAM-level steps are spread evenly over it;
the fills of step j are issued when step j-1 computes (double buffering; step 0 at the layer's
start); the write-back of an output tile is issued after the compute of the last step that
updates it.  A request never precedes the compute that produces its data.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np

from optimizer.costmodel import ScheduleResult
from optimizer.mapping import LayerMapping, Schedule
from optimizer.workload import DIMS, Layer, Network

LAYOUTS = ("nhwc", "nchw", "tiled")
PLACEMENTS = ("packed", "staggered")
LINE = 64
N_, K_, C_, P_, Q_, R_, S_ = range(7)


@dataclass
class LayerTrace:
    """The requests of one layer: byte-line addresses, write flags, issue times (accelerator
    cycles from the start of the network) and the useful bytes each request carries."""

    name: str
    addr: np.ndarray
    is_write: np.ndarray
    time: np.ndarray
    useful: np.ndarray
    start: float
    end: float
    bytes_by_tensor: dict[str, int] = field(default_factory=dict)

    @property
    def useful_bytes(self) -> int:
        return int(self.useful.sum())


# ---- tensors in memory ----------------------------------------------------------------------
def _tensor_shape(layer: Layer, tensor: str) -> tuple[int, ...]:
    """Logical shape: W (n, k, c, r, s), I (n, c, h, w), O (n, k, h, w)."""
    d = layer.dims
    if tensor == "W":
        return (d["N"] if layer.kind == "matmul" else 1, d["K"], d["C"], d["R"], d["S"])
    if tensor == "I":
        ch = d["K"] if layer.kind == "depthwise" else d["C"]
        return (d["N"], ch, (d["P"] - 1) * layer.stride + d["R"],
                (d["Q"] - 1) * layer.stride + d["S"])
    return (d["N"], d["K"], d["P"], d["Q"])


def _offsets(shape: tuple[int, ...], idx: list[np.ndarray], layout: str, block: int,
             weights: bool) -> np.ndarray:
    """Byte offsets (8-bit elements) of logical indices under a layout.

    Feature maps (n, c, h, w): nchw; nhwc (channels innermost); tiled = [n][c/b][h][w][b]
    (blocks of b channels innermost, b = gcd(channels, array width)).  Weights (n, k, c, r, s):
    nchw = [n][k][c][r][s]; nhwc = [n][k][r][s][c]; tiled = [n][k][c/b][r][s][b]."""
    i = [np.asarray(x, dtype=np.int64) for x in idx]
    if weights:
        n, k, c, r, s = i
        N, K, C, R, S = shape
        if layout == "nchw":
            return (((n * K + k) * C + c) * R + r) * S + s
        if layout == "nhwc":
            return (((n * K + k) * R + r) * S + s) * C + c
        b = math.gcd(C, block)
        return (((((n * K + k) * (C // b) + c // b) * R + r) * S + s) * b) + c % b
    n, c, h, w = i
    N, C, H, W = shape
    if layout == "nchw":
        return ((n * C + c) * H + h) * W + w
    if layout == "nhwc":
        return ((n * H + h) * W + w) * C + c
    b = math.gcd(C, block)
    return ((((n * (C // b) + c // b) * H + h) * W + w) * b) + c % b


class Placement:
    """Base addresses of every tensor of a network in one DRAM address space: per layer its
    weights, its input feature map (with halo) and its output; plus the network input for
    residual additions."""

    def __init__(self, net: Network, layout: str = "nhwc", placement: str = "packed", *,
                 block: int = 16, row_bytes: int = 8192, banks: int = 16) -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"unknown layout '{layout}': expected one of {', '.join(LAYOUTS)}")
        if placement not in PLACEMENTS:
            raise ValueError(f"unknown placement '{placement}': expected one of "
                             f"{', '.join(PLACEMENTS)}")
        self.layout, self.block = layout, block
        self.base: dict[tuple[str, str], int] = {}
        self.shape: dict[tuple[str, str], tuple[int, ...]] = {}
        addr = 0
        items = [((layer.name, t), _tensor_shape(layer, t)) for layer in net.layers
                 for t in ("W", "I", "O")]
        res_in = [net.layers[j].size("O") for j, layer in enumerate(net.layers)
                  if "input" in layer.residual_from]
        if res_in:
            items.append((("#input", "O"), (1, 1, 1, max(res_in))))
        for n_placed, (key, shape) in enumerate(items):
            if placement == "staggered":
                addr += row_bytes * ((n_placed % banks) + 1)
            addr = (addr + 4095) // 4096 * 4096
            self.base[key] = addr
            self.shape[key] = shape
            addr += math.prod(shape)
        self.total_bytes = addr

    def addresses(self, layer_name: str, tensor: str, index: list[np.ndarray]) -> np.ndarray:
        key = (layer_name, tensor)
        return self.base[key] + _offsets(self.shape[key], index, self.layout, self.block,
                                         tensor == "W")

    def region(self, layer_name: str, tensor: str) -> tuple[int, int]:
        key = (layer_name, tensor)
        return self.base[key], math.prod(self.shape[key])


# ---- the loop nest --------------------------------------------------------------------------
def _points(m: LayerMapping, levels: Sequence[int]
            ) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, int]]]:
    """Iteration points of the loops of ``levels`` (outer first), lexicographic: the index of
    every dim at each point ``[n, 7]`` (combined over the levels: outer index x inner extent
    + inner index); per point, the position (in the flattened loop list) of the outermost
    loop that advanced to reach it (-1 for the first point); and the loops themselves,
    (level, dim, factor), outermost first."""
    loops: list[tuple[int, int, int]] = []         # (level, dim, factor), outer first
    for lv in levels:
        for d in m.orders[lv]:
            f = m.temporal[lv][d]
            if f > 1:
                loops.append((lv, DIMS.index(d), f))
    if not loops:
        return np.zeros((1, 7), dtype=np.int64), np.array([-1]), loops
    grids = np.meshgrid(*[np.arange(f) for _, _, f in loops], indexing="ij")
    flat = np.stack([g.ravel() for g in grids], 1)                         # [n, loops]
    n = flat.shape[0]
    idx = np.zeros((n, 7), dtype=np.int64)
    # combine levels: index of dim d = sum over its loops (outer to inner) of i * inner extent
    for j, (lv, d, f) in enumerate(loops):
        inner = 1
        for lv2, d2, f2 in loops[j + 1:]:
            if d2 == d:
                inner *= f2
        idx[:, d] += flat[:, j] * inner
    changed = np.full(n, -1, dtype=np.int64)
    if n > 1:
        diff = flat[1:] != flat[:-1]
        changed[1:] = diff.argmax(1)
    return idx, changed, loops


def _relevant(layer: Layer, tensor: str) -> set[int]:
    if tensor == "W":
        return {K_, C_, R_, S_} | ({N_} if layer.kind == "matmul" else set())
    if tensor == "O":
        return {N_, K_, P_, Q_}
    return {N_, P_, Q_, R_, S_} | ({K_} if layer.kind == "depthwise" else {C_})


def _tile_extent(m: LayerMapping, level: int) -> list[int]:
    """Extent of each dim in the tile held at ``level`` (its factors and all inner ones)."""
    ext = []
    for d in DIMS:
        e = math.prod(m.temporal[lv][d] for lv in range(level, 4))
        if d == "K" and level <= 1:
            e *= m.spatial_k
        if d == "C" and level <= 2:
            e *= m.spatial_c
        ext.append(e)
    return ext


def _element_index(layer: Layer, tensor: str, start: np.ndarray, ext: list[int],
                   cols: tuple[int, int] | None = None, rows: tuple[int, int] | None = None
                   ) -> list[np.ndarray]:
    """Logical indices (broadcast grids) of the elements of one tile that starts at dim
    indices ``start`` [7] with extents ``ext``; for inputs, optionally only the window
    columns ``cols`` / rows ``rows`` (absolute, half-open)."""
    s = layer.stride

    def rng(d: int) -> np.ndarray:
        return np.arange(start[d], start[d] + ext[d])
    if tensor == "W":
        n = rng(N_) if layer.kind == "matmul" else np.zeros(1, dtype=np.int64)
        g = np.ix_(n, rng(K_), rng(C_), rng(R_), rng(S_))
        return list(g)
    if tensor == "O":
        return list(np.ix_(rng(N_), rng(K_), rng(P_), rng(Q_)))
    ch = rng(K_) if layer.kind == "depthwise" else rng(C_)
    h0 = start[P_] * s + start[R_]
    w0 = start[Q_] * s + start[S_]
    hh = np.arange(h0, h0 + (ext[P_] - 1) * s + ext[R_])
    ww = np.arange(w0, w0 + (ext[Q_] - 1) * s + ext[S_])
    if cols is not None:
        hh = np.arange(*cols)
    if rows is not None:
        ww = np.arange(*rows)
    return list(np.ix_(rng(N_), ch, hh, ww))


def _window(layer: Layer, start: np.ndarray, ext: list[int]) -> tuple[tuple[int, int],
                                                                      tuple[int, int]]:
    s = layer.stride
    h0 = int(start[P_] * s + start[R_])
    w0 = int(start[Q_] * s + start[S_])
    return ((h0, h0 + (ext[P_] - 1) * s + ext[R_]), (w0, w0 + (ext[Q_] - 1) * s + ext[S_]))


def _lines(addr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct 64-byte lines of a set of byte addresses and the useful bytes of each."""
    lines = np.asarray(addr, dtype=np.int64).ravel() // LINE
    if lines.size == 0:
        return lines, lines
    lo = int(lines.min())
    counts = np.bincount(lines - lo)          # linear time: no sort (tiles are dense ranges)
    hit = np.flatnonzero(counts)
    return (hit + lo) * LINE, counts[hit]


def layer_requests(layer: Layer, m: LayerMapping, place: Placement, *, start: float,
                   duration: float, read_inputs: dict[str, bool], write_output: bool,
                   residual_reads: Sequence[tuple[int, int]] = (),
                   refetch_window: bool = False) -> LayerTrace:
    """The DMA requests of one layer (see the module docstring).  ``read_inputs`` says, per
    operand ("I", "W"), whether it is read from DRAM (False: a fused operand);
    ``refetch_window``: each DRAM step along P/Q fetches the whole input window, halo
    included (a fused group's first layer, ``FusionGraph.halo == "refetch"``);
    ``residual_reads`` lists (base address, bytes) of shortcut tensors added to the output,
    read alongside the final write-backs."""
    out_addr: list[np.ndarray] = []
    out_w: list[np.ndarray] = []
    out_t: list[np.ndarray] = []
    out_u: list[np.ndarray] = []
    by_tensor = {"W": 0, "I": 0, "O_read": 0, "O_write": 0, "residual": 0}

    def emit(addr: np.ndarray, write: bool, t: float, key: str) -> None:
        lines, useful = _lines(addr)
        out_addr.append(lines)
        out_w.append(np.full(len(lines), write))
        out_t.append(np.full(len(lines), t))
        out_u.append(useful)
        by_tensor[key] += int(useful.sum())

    # fills of weights and inputs: DRAM-level loops
    idx, changed, loops = _points(m, [0])
    n0 = idx.shape[0]
    slot = duration / n0
    ext1 = _tile_extent(m, 1)
    for tensor in ("W", "I"):
        if not read_inputs.get(tensor, True):
            continue
        rel = _relevant(layer, tensor)
        key_dims = sorted(rel)
        keys = idx[:, key_dims]
        prev_key = None
        for j in range(n0):
            key = tuple(keys[j])
            if key == prev_key:
                continue
            t = start + max(0, j - 1) * slot
            begin = idx[j] * np.array(ext1)
            full = True
            if tensor == "I" and j > 0:
                # slide: only the innermost active loop advanced and it moves the window
                adv = int(changed[j])
                innermost = adv == len(loops) - 1
                slide_dims = (R_, S_) if refetch_window else (P_, Q_, R_, S_)
                if innermost and loops[adv][1] in slide_dims:
                    old = idx[j - 1] * np.array(ext1)
                    (h0, h1), (w0, w1) = _window(layer, old, ext1)
                    (H0, H1), (W0, W1) = _window(layer, begin, ext1)
                    full = False
                    if loops[adv][1] in (P_, R_):
                        lo = max(H0, h1)
                        if lo < H1:
                            emit(place.addresses(layer.name, "I", _element_index(
                                layer, "I", begin, ext1, cols=(lo, H1))), False, t, "I")
                    else:
                        lo = max(W0, w1)
                        if lo < W1:
                            emit(place.addresses(layer.name, "I", _element_index(
                                layer, "I", begin, ext1, rows=(lo, W1))), False, t, "I")
            if full:
                emit(place.addresses(layer.name, tensor, _element_index(layer, tensor, begin, ext1)),
                     False, t, tensor)
            prev_key = key
    # outputs: DRAM and scratchpad loops above the accumulator
    idx2, _, _ = _points(m, [0, 1])
    n2 = idx2.shape[0]
    slot2 = duration / n2
    ext2 = _tile_extent(m, 2)
    ext2[K_] *= m.spatial_k                      # all column slices together
    rel = sorted(_relevant(layer, "O"))
    keys = [tuple(k) for k in idx2[:, rel]]
    last_index = {key: pos for pos, key in enumerate(keys)}       # last visit of each tile
    seen: set[tuple[int, ...]] = set()
    final_times: list[float] = []
    j = 0
    while j < n2:
        k = j
        while k + 1 < n2 and keys[k + 1] == keys[j]:
            k += 1
        begin = idx2[j] * np.array(ext2)
        addr = place.addresses(layer.name, "O", _element_index(layer, "O", begin, ext2))
        if keys[j] in seen:              # a partial sum comes back for more accumulation
            emit(addr, False, start + j * slot2, "O_read")
        seen.add(keys[j])
        last_visit = last_index[keys[j]] <= k
        if last_visit:
            final_times.append(start + (k + 1) * slot2)
        if write_output or not last_visit:
            emit(addr, True, start + (k + 1) * slot2, "O_write")
        j = k + 1
    for base, nbytes in residual_reads:
        # the shortcut is added as each output tile is finished: read it in as many pieces
        pieces = np.array_split(np.arange(base, base + nbytes), len(final_times))
        for piece, t in zip(pieces, final_times):
            if len(piece):
                emit(piece, False, t, "residual")
    if out_addr:
        addr_all = np.concatenate(out_addr)
        w_all = np.concatenate(out_w)
        t_all = np.concatenate(out_t)
        u_all = np.concatenate(out_u)
        order = np.argsort(t_all, kind="stable")
        addr_all, w_all, t_all, u_all = (x[order] for x in (addr_all, w_all, t_all, u_all))
    else:
        addr_all = np.zeros(0, np.int64)
        w_all = np.zeros(0, bool)
        t_all = np.zeros(0)
        u_all = np.zeros(0, np.int64)
    return LayerTrace(layer.name, addr_all, w_all, t_all, u_all, start, start + duration,
                      by_tensor)


def schedule_requests(net: Network, sched: Schedule, result: ScheduleResult,
                      place: Placement, halo: str | None = None) -> Iterator[LayerTrace]:
    """The requests of every layer of a scored schedule, in execution order (layers one
    after another, each for its scored cycles), with the cost model's fusion accounting
    (``halo``: the fused-input rule, None for the cost model's default)."""
    from optimizer.costmodel import FusionGraph
    fg = FusionGraph.from_network(net, halo)
    fused_edges = {k for k in range(len(fg.prod))
                   if (net.layers[int(fg.prod[k])].name, net.layers[int(fg.cons[k])].name)
                   in set(sched.fused) and bool(fg.fusable[k])}
    res_kept = [bool(ch) and all(k in fused_edges for k in ch) for ch in fg.res_chain]
    residuals: dict[int, list[tuple[int, int]]] = {}
    for r, (src, dst) in enumerate(zip(fg.res_src, fg.res_dst)):
        if res_kept[r]:
            continue
        if src >= 0:
            region = place.region(net.layers[src].name, "O")
        else:
            region = (place.region("#input", "O")[0], net.layers[dst].size("O"))
        residuals.setdefault(dst, []).append(region)
    t = 0.0
    for i, (layer, lr) in enumerate(zip(net.layers, result.layers)):
        reads = {"I": True, "W": True}
        for k in fused_edges:
            if int(fg.cons[k]) == i:
                reads["W" if bool(fg.operand_w[k]) else "I"] = False
        kept = [(k in fused_edges) if kind == "edge" else res_kept[k] if kind == "res"
                else False for kind, k in fg.uses[i]]
        in_group = any(i in (int(fg.prod[k]), int(fg.cons[k])) for k in fused_edges)
        yield layer_requests(layer, sched.mappings[layer.name], place, start=t,
                             duration=lr.cycles, read_inputs=reads,
                             write_output=not all(kept), residual_reads=residuals.get(i, ()),
                             refetch_window=fg.halo == "refetch" and in_group and reads["I"])
        t += lr.cycles


__all__ = ["Placement", "LayerTrace", "layer_requests", "schedule_requests", "LAYOUTS",
           "PLACEMENTS"]
