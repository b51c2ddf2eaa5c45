"""The search space every method shares: per layer, a split of each loop dimension over the
array and the memory levels, and a loop order for the DRAM and scratchpad levels.

Splits are enumerated up front (perfect factorisations only, as a constraint solver would
pre-enumerate them): a dimension of size D is written D = f_DRAM * f_SP * f_ACC * f_REG * f_sp
with the spatial factor f_sp only on K (<= PE columns) and C (<= PE rows), register factors
only on N, P, Q (a PE register holds one weight; for a matmul, whose "weight" changes with N,
only on P, Q), and no K/C/R/S loops below the accumulator.  Every choice in the space is
therefore a valid loop nest; only buffer capacities can be exceeded, which the search
penalises and :func:`repair` fixes.

Loop orders come from three stationarity classes at each of DRAM and scratchpad (9 pairs):
weights stay (N, P, Q innermost), inputs stay (K innermost) or outputs stay (C, R, S
innermost).  Below, the accumulator level always keeps weights stationary (N, P, Q innermost
maximises register reuse, and no other count depends on that order).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, fields
from functools import lru_cache

import numpy as np
import torch

from optimizer.costmodel import (FusionGraph, LayerBatch, MappingTensors,
                                 alignment_mismatch, capacity_violations, fusion_groups,
                                 layer_costs)
from optimizer.errors import MappingError
from optimizer.hardware import GemminiHardware
from optimizer.mapping import LayerMapping, Schedule
from optimizer.workload import DIMS, Network

ORDER_CLASSES = {
    "weights": ("K", "C", "R", "S", "N", "P", "Q"),
    "inputs": ("N", "C", "P", "Q", "R", "S", "K"),
    "outputs": ("N", "K", "P", "Q", "C", "R", "S"),
}
ORDER_NAMES = tuple(ORDER_CLASSES)
ORDER_PAIRS = tuple(itertools.product(ORDER_NAMES, ORDER_NAMES))     # (DRAM, scratchpad)
ACC_ORDER = ORDER_CLASSES["weights"]
REG_ORDER = DIMS
MAX_SPLITS = 4096
MAX_REPAIR_MOVES = 64


@lru_cache(maxsize=4096)
def _factorisations(n: int, parts: int) -> tuple[tuple[int, ...], ...]:
    """All ordered tuples of ``parts`` positive integers whose product is n."""
    if parts == 1:
        return ((n,),)
    out = []
    for d in range(1, n + 1):
        if n % d == 0:
            out += [(d,) + rest for rest in _factorisations(n // d, parts - 1)]
    return tuple(out)


@dataclass
class DimSplits:
    """The candidate splits of one dimension of one layer: ``table[j] = (dram, sp, acc, reg,
    spatial)`` factors."""

    dim: str
    table: np.ndarray          # [n_options, 5] int


def dim_splits(layer_kind: str, dim: str, size: int, hw: GemminiHardware) -> DimSplits:
    """Enumerate the splits of one dimension (see the module docstring for the rules)."""
    reg_ok = dim in ("N", "P", "Q") and not (layer_kind == "matmul" and dim == "N")
    spatial_max = hw.cols if dim == "K" else hw.rows if dim == "C" else 1
    rows = []
    for sp in range(1, min(size, spatial_max) + 1):
        if size % sp:
            continue
        for f in _factorisations(size // sp, 4 if reg_ok else 3):
            dram, spad, acc = f[0], f[1], f[2]
            reg = f[3] if reg_ok else 1
            rows.append((dram, spad, acc, reg, sp))
    table = np.array(rows, dtype=np.int64)
    if len(table) > MAX_SPLITS:
        table = table[_kept_splits(table)]
    return DimSplits(dim, table)


def _kept_splits(table: np.ndarray) -> np.ndarray:
    """The rows (in table order) of a dimension with more than MAX_SPLITS splits that the
    search keeps: the minimal split (everything at DRAM, no spatial factor: the repair's
    fallback, which always fits), then the largest spatial factors first, and of the first
    spatial factor whose rows do not all fit an even spread of them. (The first MAX_SPLITS
    rows in enumeration order lost the minimal split, the last one enumerated: a batch of
    10^6 failed in the repair, and only small DRAM factors were searched.) No dimension of
    the built-in networks has that many splits on the shipped hardware."""
    minimal = np.flatnonzero(table[:, 1:].prod(1) == 1)
    rest = np.setdiff1d(np.arange(len(table)), minimal)
    keep: list[np.ndarray] = [minimal]
    room = MAX_SPLITS - len(minimal)
    for sp in sorted(set(table[rest, 4].tolist()), reverse=True):
        if room <= 0:
            break
        rows = rest[table[rest, 4] == sp]
        if len(rows) > room:
            rows = rows[np.round(np.linspace(0, len(rows) - 1, room)).astype(np.int64)]
        keep.append(rows)
        room -= len(rows)
    return np.sort(np.concatenate(keep))


@dataclass
class LayerSpace:
    name: str
    splits: list[DimSplits]            # one per dim, in DIMS order

    def sizes(self) -> list[int]:
        return [len(s.table) for s in self.splits] + [len(ORDER_PAIRS)]


@dataclass
class SearchSpace:
    """The space of a network on a hardware: per layer its split tables; the fusable edges."""

    net: Network
    hw: GemminiHardware
    layers: list[LayerSpace]
    batch: LayerBatch
    graph: FusionGraph

    @classmethod
    def build(cls, net: Network, hw: GemminiHardware, halo: str | None = None
              ) -> "SearchSpace":
        """The space of ``net`` on ``hw``; ``halo`` the fused-input rule of the cost model
        (``FusionGraph.halo``; None: ``costmodel.FUSED_HALO``)."""
        layers = []
        for layer in net.layers:
            splits = [dim_splits(layer.kind, d, layer.dims[d], hw) for d in DIMS]
            layers.append(LayerSpace(layer.name, splits))
        return cls(net, hw, layers, LayerBatch.from_network(net),
                   FusionGraph.from_network(net, halo))

    @property
    def fusable_edges(self) -> list[int]:
        return [k for k in range(len(self.graph.prod)) if bool(self.graph.fusable[k])]

    def edge_names(self, k: int) -> tuple[str, str]:
        return (self.net.layers[int(self.graph.prod[k])].name,
                self.net.layers[int(self.graph.cons[k])].name)

    # ---- genomes: integer choices ------------------------------------------------------------
    def mapping(self, i: int, choice: list[int]) -> LayerMapping:
        """Layer i's mapping from its choices: one split index per dim, then an order pair."""
        sp = self.layers[i].splits
        temporal: list[dict[str, int]] = [{}, {}, {}, {}]
        ks = cs = 1
        for d, s in enumerate(sp):
            dram, spad, acc, reg, spat = (int(x) for x in s.table[choice[d]])
            dim = DIMS[d]
            temporal[0][dim], temporal[1][dim] = dram, spad
            temporal[2][dim], temporal[3][dim] = acc, reg
            if dim == "K":
                ks = spat
            elif dim == "C":
                cs = spat
        o_dram, o_sp = ORDER_PAIRS[choice[7]]
        orders = [ORDER_CLASSES[o_dram], ORDER_CLASSES[o_sp], ACC_ORDER, REG_ORDER]
        return LayerMapping(temporal, orders, ks, cs)

    def schedule(self, choices: list[list[int]], fused_edges: list[int],
                 method: str = "") -> Schedule:
        maps = {layer.name: self.mapping(i, c) for i, (layer, c) in
                enumerate(zip(self.net.layers, choices))}
        return Schedule(self.net.name, maps, [self.edge_names(k) for k in fused_edges], method)

    def tensors(self, choices: np.ndarray) -> MappingTensors:
        """MappingTensors of integer choices ``[L, 8]``, or ``[B, L, 8]`` for a batch of
        candidates (rows candidate-major); no gradients; vectorised."""
        choices = np.asarray(choices, dtype=np.int64)
        flat = choices.reshape(-1, 8)
        layer = np.tile(np.arange(len(self.layers)), flat.shape[0] // len(self.layers))
        return self._mapping_tensors(layer, flat)

    def _mapping_tensors(self, layer: np.ndarray, rows: np.ndarray) -> MappingTensors:
        """The mappings of choice rows ``[n, 8]``, row j belonging to layer ``layer[j]``."""
        tables, order_idx = self._stacked()
        sel = tables[layer[:, None], np.arange(7)[None, :], rows[:, :7]]       # [n, 7, 5]
        t = np.transpose(sel[:, :, :4], (0, 2, 1)).astype(np.float64)         # [n, 4, 7]
        return MappingTensors(torch.from_numpy(np.ascontiguousarray(t)),
                              torch.from_numpy(order_idx[rows[:, 7]].copy()),
                              torch.from_numpy(sel[:, 1, 4].astype(np.float64)),
                              torch.from_numpy(sel[:, 2, 4].astype(np.float64)))

    def _stacked(self) -> tuple[np.ndarray, np.ndarray]:
        """Split tables padded to one array [L, 7, max options, 5]; order index per pair."""
        if getattr(self, "_cache", None) is None:
            width = max(len(s.table) for ls in self.layers for s in ls.splits)
            tables = np.ones((len(self.layers), 7, width, 5), dtype=np.int64)
            for i, ls in enumerate(self.layers):
                for d, s in enumerate(ls.splits):
                    tables[i, d, :len(s.table)] = s.table
            order_idx = np.array([[[DIMS.index(x) for x in order] for order in
                                   (ORDER_CLASSES[a], ORDER_CLASSES[b], ACC_ORDER, REG_ORDER)]
                                  for a, b in ORDER_PAIRS], dtype=np.int64)
            self._cache = (tables, order_idx)
        return self._cache

    def layer_tensors(self, i: int, rows: np.ndarray) -> tuple[LayerBatch, MappingTensors]:
        """Layer i alone under each of the choice rows ``[n, 8]``: its LayerBatch repeated n
        times and the n mappings (for scoring one layer's alternatives at once)."""
        rows = np.asarray(rows, dtype=np.int64)
        n = len(rows)
        mt = self._mapping_tensors(np.full(n, i), rows)
        idx = torch.full((n,), i, dtype=torch.long)
        lb = LayerBatch(**{f.name: (getattr(self.batch, f.name)[idx] if f.name != "names"
                                    else [self.batch.names[i]] * n)
                           for f in fields(LayerBatch)})
        return lb, mt

    def shape_groups(self) -> list[list[int]]:
        """Layers of identical shape (kind, loop bounds, stride), in layer order; every layer
        is in exactly one group.  Such layers have identical split tables, so one decision
        (FADiff's shared variables, the refinement's shared moves) can serve them all."""
        groups: dict[tuple, list[int]] = {}
        for i, layer in enumerate(self.net.layers):
            key = (layer.kind, tuple(layer.dims[d] for d in DIMS), layer.stride)
            groups.setdefault(key, []).append(i)
        return sorted(groups.values(), key=lambda g: g[0])

    def random_choices(self, rng: np.random.Generator) -> np.ndarray:
        return np.array([[rng.integers(n) for n in ls.sizes()] for ls in self.layers],
                        dtype=np.int64)

    def minimal_choices(self) -> np.ndarray:
        """Everything at DRAM, one PE: always fits any buffer (the repair's fallback)."""
        out = np.zeros((len(self.layers), 8), dtype=np.int64)
        for i, ls in enumerate(self.layers):
            for d, s in enumerate(ls.splits):
                target = (s.table[:, 1:].prod(1) == 1)
                out[i, d] = int(np.flatnonzero(target)[0])
        return out


# ---- validity and repair --------------------------------------------------------------------
def layer_overflow(space: SearchSpace, choices: np.ndarray) -> np.ndarray:
    """Per layer, the summed relative overflow of every buffer (0: the mapping fits)."""
    with torch.no_grad():
        c = layer_costs(space.batch, space.tensors(choices))
        v = capacity_violations(c, space.hw)
    return sum(x.numpy() for x in v.values())


def layer_candidates_overflow(space: SearchSpace, i: int, rows: np.ndarray) -> np.ndarray:
    """Summed relative overflow of layer i under each of the choice rows ``[n, 8]``."""
    lb, mt = space.layer_tensors(i, rows)
    with torch.no_grad():
        v = capacity_violations(layer_costs(lb, mt), space.hw)
    return sum(x.numpy() for x in v.values())


def repair(space: SearchSpace, choices: np.ndarray) -> np.ndarray:
    """Make every layer's mapping fit, changing as little as possible: while a layer
    overflows, score every single move that shrinks one of its splits (a candidate of the same
    dimension whose on-chip factors divide the current ones) in one vectorised call and take
    the one that leaves the least overflow (ties: the largest remaining on-chip tile).  Falls
    back to the minimal mapping; raises MappingError if even that overflows."""
    choices = np.array(choices, dtype=np.int64)
    over = layer_overflow(space, choices)
    for i in np.flatnonzero(over > 0):
        cur_over = float(over[i])
        for _ in range(MAX_REPAIR_MOVES):
            if cur_over <= 0:
                break
            moves, rows, sizes = [], [], []
            for d, s in enumerate(space.layers[i].splits):
                cur = s.table[choices[i, d]]
                cand = np.flatnonzero((s.table[:, 1:].prod(1) < cur[1:].prod())
                                      & np.all(cur[1:] % s.table[:, 1:] == 0, axis=1))
                for j in cand:
                    row = choices[i].copy()
                    row[d] = j
                    moves.append((d, int(j)))
                    rows.append(row)
                    sizes.append(int(s.table[j, 1:].prod()))
            if not moves:
                break
            o = layer_candidates_overflow(space, i, np.array(rows))
            best = int(np.lexsort((-np.array(sizes, dtype=np.float64), o))[0])
            d, j = moves[best]
            choices[i, d] = j
            cur_over = float(o[best])
        if cur_over > 0:
            choices[i] = space.minimal_choices()[i]
            if layer_candidates_overflow(space, i, choices[i:i + 1])[0] > 0:
                raise MappingError(f"layer '{space.net.layers[i].name}' fits no mapping on "
                                   f"{space.hw.name}: even one MAC per step overflows a buffer")
    return choices


def repair_fusion(space: SearchSpace, choices: np.ndarray, fused: list[int]) -> list[int]:
    """The fused edges that can run fused: aligned tiles, and each fused group's scratchpad
    tiles fit together (edges are dropped, largest group first, until they do)."""
    keep = []
    for k in fused:
        if not bool(space.graph.fusable[k]):
            continue
        p, c = int(space.graph.prod[k]), int(space.graph.cons[k])
        mp, mc = space.mapping(p, list(choices[p])), space.mapping(c, list(choices[c]))
        if not alignment_mismatch(mp, mc, space.net.layers[c]):
            keep.append(k)
    with torch.no_grad():
        used = layer_costs(space.batch, space.tensors(choices)).sp_used.numpy()
    while True:
        names = [space.edge_names(k) for k in keep]
        bad = None
        for group in fusion_groups(space.net, names):
            if len(group) > 1 and used[group].sum() > space.hw.sp_capacity:
                bad = set(group)
                break
        if bad is None:
            return keep
        # drop the fused edge of that group whose layers use the most scratchpad
        inside = [k for k in keep if int(space.graph.prod[k]) in bad]
        worst = max(inside, key=lambda k: used[int(space.graph.prod[k])]
                    + used[int(space.graph.cons[k])])
        keep.remove(worst)


def _nearest_row(table: np.ndarray, current: int, allowed: np.ndarray) -> int | None:
    """Of the split rows ``allowed`` (bool mask), the one nearest (log space) to row
    ``current``; None when none is allowed."""
    idx = np.flatnonzero(allowed)
    if len(idx) == 0:
        return None
    logs = np.log(table.astype(np.float64))
    dist = ((logs[idx] - logs[current]) ** 2).sum(1)
    return int(idx[int(np.argmin(dist))])


def align_edge(space: SearchSpace, choices: np.ndarray, k: int) -> np.ndarray:
    """Choices changed as little as possible so that edge k's producer and consumer can run
    fused (:func:`optimizer.costmodel.alignment_mismatch`): producer DRAM K factor 1, consumer
    DRAM factor 1 on its input-channel dim, equal DRAM N, P, Q factors (the consumer follows
    the producer; both go to 1 when the consumer has no such split).  Unchanged when a
    required split does not exist."""
    out = choices.copy()
    p, c = int(space.graph.prod[k]), int(space.graph.cons[k])
    lp, lc = space.layers[p].splits, space.layers[c].splits
    kd = DIMS.index("K")
    chan = DIMS.index("K" if space.net.layers[c].kind == "depthwise" else "C")
    row = _nearest_row(lp[kd].table, out[p, kd], lp[kd].table[:, 0] == 1)
    if row is None:
        return choices
    out[p, kd] = row
    row = _nearest_row(lc[chan].table, out[c, chan], lc[chan].table[:, 0] == 1)
    if row is None:
        return choices
    out[c, chan] = row
    for d in (DIMS.index(x) for x in ("N", "P", "Q")):
        want = lp[d].table[out[p, d], 0]
        row = _nearest_row(lc[d].table, out[c, d], lc[d].table[:, 0] == want)
        if row is None:
            rp = _nearest_row(lp[d].table, out[p, d], lp[d].table[:, 0] == 1)
            rc = _nearest_row(lc[d].table, out[c, d], lc[d].table[:, 0] == 1)
            if rp is None or rc is None:
                return choices
            out[p, d], out[c, d] = rp, rc
        else:
            out[c, d] = row
    return out


def log_size(space: SearchSpace) -> float:
    """log10 of the number of schedules in the space (for reports)."""
    total = 0.0
    for ls in space.layers:
        total += sum(math.log10(n) for n in ls.sizes())
    return total + len(space.fusable_edges) * math.log10(2)
