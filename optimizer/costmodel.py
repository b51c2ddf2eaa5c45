"""The Gemmini cost model: access counts, cycles and energy of a schedule — differentiable.

One model, two uses.  FADiff calls :func:`layer_costs` / :func:`network_costs` on tiling factors
that are torch tensors carrying gradients (straight-through Gumbel-Softmax: the forward values
are exact integers); the exact evaluator (:func:`evaluate_schedule`) calls the very same code on
a discrete schedule without gradients.  Everything is vectorised over the layers of a network.

Counting rules (Timeloop's conventions, checked against timeloop-model in
``benchmarks/validate_costmodel.py``):

* The tile a level holds is the product of the factors of that level and every level inside
  it (spatial factors included).  Inputs tiles include the sliding-window halo:
  ``((P-1)*stride + R) x ((Q-1)*stride + S)``.
* Fills of a tensor at a level: walk the loops above the level from the innermost outwards;
  loops irrelevant to the tensor that sit inside every relevant loop reuse the tile (no
  refetch); the innermost relevant loop of factor f fetches the tile once and then, per step,
  the new part only (for Inputs along P/Q/R/S: the columns/rows the window has not covered yet);
  every loop outside it refetches everything.  The window only slides when no reused
  (irrelevant) loop sits inside that relevant loop: with one there, every step refetches the
  whole tile, as timeloop-model counts it.
* Scratchpad Input reads = MACs / (PE columns used) (multicast across columns; not for
  depthwise layers, whose input channel is K); Registers read their weight every MAC; register
  fills = scratchpad weight reads; accumulator updates = MACs / (PE rows used) (reduction down a
  column); accumulator reads = updates - |O| (the first write of each output needs no read);
  DRAM Output updates = accumulator drains, DRAM Output reads = updates - |O| (spilled partial
  sums read back) = accumulator fills.
* Cycles = max(MACs / PEs used, each level's accesses / its bandwidth); the accumulator's
  bandwidth is per column slice.  Energy = sum of counts x per-word energy (reads at the read
  energy, fills and updates at the write energy) + MACs x MAC energy.

Fusion (our reconstruction of FADiff's fusion model; see docs/optimizer.md): a fused
producer->consumer edge keeps the intermediate tensor on chip.  The consumer reads none of it
from DRAM; the producer's final write of its output disappears when every use of that output
is fused (its accumulator drains go to the scratchpad instead).  A residual tensor stays on
chip when the whole chain of layers between its source and the adding layer is fused.  With
sigma in [0, 1] the DRAM traffic is interpolated linearly.  Fused layers run in lockstep over
the same spatial (N, P, Q) DRAM tiles, so their scratchpad tiles must fit together.

Halo re-fetch (``FusionGraph.halo``, default ``"refetch"``): a layer of a fused group whose
Inputs come from DRAM (the group's first layer) fetches each lockstep tile's input window
whole, halo included: ``t x ((P/t - 1) x stride + R)`` input rows for ``t`` DRAM tiles along P
(the same along Q), instead of Timeloop's sliding window (every input row once), because the
other layers of the group run between two of its tiles and use the scratchpad meanwhile; it
is what Stream's layer-fused scheduler counts and what Gemmini's tiled convolution software
does (each tile's DMA loads its whole window).  ``"slide"`` keeps the sliding window for fused
layers too.  Unfused layers always slide (Timeloop's rule, checked against timeloop-model).
The extra words are ``LayerCosts.dram_i_halo`` weighted by sigma (at least one fused edge
touches the layer, its input edges not fused), so the term is differentiable like the rest.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Sequence

import torch

from optimizer.errors import MappingError
from optimizer.method_names import DEFAULT_FUSED_HALO, FUSED_HALO_RULES
from optimizer.hardware import GemminiHardware
from optimizer.mapping import LEVELS, LayerMapping, Schedule
from optimizer.workload import DIMS, Network

N_, K_, C_, P_, Q_, R_, S_ = range(7)
DRAM, SP, ACC, REG = range(4)
DTYPE = torch.float64
_ONE = 1.0 + 1e-6          # a factor above this is a real loop (forward values are integers)


# ---- static per-network tensors -----------------------------------------------------------
@dataclass
class LayerBatch:
    """The layers of a network as tensors (built once per network)."""

    dims: torch.Tensor        # [L, 7] loop bounds
    stride: torch.Tensor      # [L]
    macs: torch.Tensor        # [L]
    rel_w: torch.Tensor       # [L, 7] bool: dims the W operand depends on
    rel_i: torch.Tensor       # [L, 7] bool: dims the Inputs depend on
    rel_o: torch.Tensor       # [L, 7] bool
    in_chan: torch.Tensor     # [L] long: the dim indexing input channels (C, K for depthwise)
    multicast: torch.Tensor   # [L] bool: inputs shared across PE columns
    size_o: torch.Tensor      # [L] output elements
    names: list[str] = field(default_factory=list)

    @classmethod
    def from_network(cls, net: Network) -> "LayerBatch":
        L = len(net.layers)
        dims = torch.tensor([[layer.dims[d] for d in DIMS] for layer in net.layers], dtype=DTYPE)
        rel_w = torch.zeros(L, 7, dtype=torch.bool)
        rel_i = torch.zeros(L, 7, dtype=torch.bool)
        rel_o = torch.zeros(L, 7, dtype=torch.bool)
        in_chan = torch.full((L,), C_, dtype=torch.long)
        multicast = torch.ones(L, dtype=torch.bool)
        for i, layer in enumerate(net.layers):
            rel_w[i, [K_, C_, R_, S_]] = True
            rel_i[i, [N_, C_, P_, Q_, R_, S_]] = True
            rel_o[i, [N_, K_, P_, Q_]] = True
            if layer.kind == "matmul":
                rel_w[i, N_] = True
            if layer.kind == "depthwise":
                rel_i[i, K_] = True
                in_chan[i] = K_
                multicast[i] = False
        return cls(dims=dims, stride=torch.tensor([float(x.stride) for x in net.layers],
                                                  dtype=DTYPE),
                   macs=dims.prod(1), rel_w=rel_w, rel_i=rel_i, rel_o=rel_o, in_chan=in_chan,
                   multicast=multicast, size_o=dims[:, [N_, K_, P_, Q_]].prod(1),
                   names=[x.name for x in net.layers])

    def __len__(self) -> int:
        return int(self.dims.shape[0])

    def tiled(self, n: int) -> "LayerBatch":
        """The layers repeated n times, copy-major (rows c*L + i): for scoring n schedules,
        or n loop orders, of the network in one call."""
        return LayerBatch(**{f.name: (getattr(self, f.name).repeat(
            n, *([1] * (getattr(self, f.name).dim() - 1))) if f.name != "names"
            else self.names * n) for f in fields(LayerBatch)})


@dataclass
class MappingTensors:
    """Mappings of all layers as tensors: ``temporal [L, 4, 7]`` (float, may carry grads),
    ``orders [L, 4, 7]`` (dim indices outermost first), spatial ``ks``/``cs`` [L]."""

    temporal: torch.Tensor
    orders: torch.Tensor
    ks: torch.Tensor
    cs: torch.Tensor

    @classmethod
    def from_mappings(cls, maps: Sequence[LayerMapping]) -> "MappingTensors":
        t = torch.tensor([[[m.temporal[lv][d] for d in DIMS] for lv in range(4)] for m in maps],
                         dtype=DTYPE)
        o = torch.tensor([[[DIMS.index(d) for d in m.orders[lv]] for lv in range(4)]
                          for m in maps], dtype=torch.long)
        return cls(t, o, torch.tensor([float(m.spatial_k) for m in maps], dtype=DTYPE),
                   torch.tensor([float(m.spatial_c) for m in maps], dtype=DTYPE))


# ---- per-layer costs ------------------------------------------------------------------------
@dataclass
class LayerCosts:
    """Per-layer access counts (totals over all instances, in words), cycles and energy; every
    field a tensor of shape [L].  Fusion adjustments are applied by :func:`network_costs`."""

    macs: torch.Tensor
    dram_w_reads: torch.Tensor
    dram_i_reads: torch.Tensor
    dram_o_reads: torch.Tensor
    dram_o_updates: torch.Tensor
    sp_w_reads: torch.Tensor
    sp_w_fills: torch.Tensor
    sp_i_reads: torch.Tensor
    sp_i_fills: torch.Tensor
    acc_o_reads: torch.Tensor
    acc_o_fills: torch.Tensor
    acc_o_updates: torch.Tensor
    reg_w_reads: torch.Tensor
    reg_w_fills: torch.Tensor
    pes_used: torch.Tensor
    ks: torch.Tensor
    # capacities used (words): scratchpad W + I tiles, accumulator tile per slice, register
    sp_used: torch.Tensor
    sp_w_tile: torch.Tensor
    sp_i_tile: torch.Tensor
    sp_o_tile: torch.Tensor
    acc_used: torch.Tensor
    reg_used: torch.Tensor
    # the DRAM term's inputs (optimizer.dram_model): the scratchpad-level tile (spatial
    # included), the accumulator-level output tile, the layer's dims (views, no compute)
    tile_n: torch.Tensor
    tile_k: torch.Tensor
    tile_c: torch.Tensor
    tile_p: torch.Tensor
    tile_q: torch.Tensor
    tile_r: torch.Tensor
    tile_s: torch.Tensor
    otile_n: torch.Tensor
    otile_k: torch.Tensor
    otile_p: torch.Tensor
    otile_q: torch.Tensor
    dim_n: torch.Tensor
    dim_k: torch.Tensor
    dim_c: torch.Tensor
    dim_p: torch.Tensor
    dim_q: torch.Tensor
    dim_r: torch.Tensor
    dim_s: torch.Tensor
    dim_stride: torch.Tensor
    is_matmul: torch.Tensor
    is_depthwise: torch.Tensor
    o_revisit_tiles: torch.Tensor   # output tiles written between two visits of one tile
    # the innermost loop above the accumulator along K and along Q (the layouts' innermost
    # output dims): its factor, and the output tiles written per step of it (neighbouring
    # tiles along that dim may share a 64-byte line)
    o_k_factor: torch.Tensor
    o_k_inner: torch.Tensor
    o_q_factor: torch.Tensor
    o_q_inner: torch.Tensor
    # extra DRAM Input words when the DRAM-level P/Q loops do not slide the window (each
    # lockstep tile fetches its whole window, halo included): the halo re-fetch of a fused
    # group's first layer (0 when no DRAM P/Q loop moves the input window)
    dram_i_halo: torch.Tensor


def _tile_factors(mt: MappingTensors) -> list[torch.Tensor]:
    """F[b] [L, 7]: product of the factors at level b and inside it, spatial included."""
    t = mt.temporal
    inner = torch.flip(torch.cumprod(torch.flip(t, [1]), 1), [1])   # inner[:, b] = prod_{j>=b}
    ones = torch.ones_like(mt.ks)
    spatial_k = torch.stack([ones, mt.ks, ones, ones, ones, ones, ones], 1)
    spatial_c = torch.stack([ones, ones, mt.cs, ones, ones, ones, ones], 1)
    return [inner[:, 0] * spatial_k * spatial_c, inner[:, 1] * spatial_k * spatial_c,
            inner[:, 2] * spatial_c, inner[:, 3]]


def _tile_size(tensor: str, f: torch.Tensor, lb: LayerBatch) -> torch.Tensor:
    if tensor == "W":
        return torch.where(lb.rel_w, f, torch.ones_like(f)).prod(1)
    if tensor == "O":
        return torch.where(lb.rel_o, f, torch.ones_like(f)).prod(1)
    wid_p = (f[:, P_] - 1) * lb.stride + f[:, R_]
    wid_q = (f[:, Q_] - 1) * lb.stride + f[:, S_]
    chan = f.gather(1, lb.in_chan[:, None]).squeeze(1)
    return f[:, N_] * chan * wid_p * wid_q


def _fills(tensor: str, level: int, mt: MappingTensors, lb: LayerBatch, f: torch.Tensor,
           tile: torch.Tensor, refetch: bool = False):
    """Words moved into ``level`` for ``tensor`` over the whole layer (per instance).  With
    ``refetch`` (Inputs only) also the words moved when the window does not slide along P/Q
    (each step of those loops fetches the whole tile): returns (sliding, refetching)."""
    if level == 0:
        return (tile, tile) if refetch else tile
    L = len(lb)
    # loops above the level, innermost first: levels level-1 .. 0, each in reversed order
    lv_idx = torch.tensor([lv for lv in range(level - 1, -1, -1) for _ in range(7)])
    dim_idx = torch.cat([torch.flip(mt.orders[:, lv, :], [1]) for lv in range(level - 1, -1, -1)],
                        1)                                                   # [L, 7*level]
    rows = torch.arange(L)[:, None]
    ff = mt.temporal[rows, lv_idx[None, :], dim_idx]                         # [L, 7*level]
    rel = {"W": lb.rel_w, "I": lb.rel_i, "O": lb.rel_o}[tensor].gather(1, dim_idx)
    active = ff.detach() > _ONE
    hit = rel & active
    has = hit.any(1)
    first = hit.to(torch.int8).argmax(1)
    # the window slides (only the new part is fetched) only when no reused irrelevant loop
    # sits inside the relevant one; otherwise each step refetches the whole tile (Timeloop)
    slides = first == active.to(torch.int8).argmax(1)
    pos = torch.arange(ff.shape[1])[None, :]
    after = (pos > first[:, None]) & has[:, None]
    rest = torch.where(after, ff, torch.ones_like(ff)).prod(1)
    f_first = torch.where(has, ff.gather(1, first[:, None]).squeeze(1), torch.ones_like(tile))
    frac = torch.ones_like(tile)
    if tensor == "I":
        d_first = dim_idx.gather(1, first[:, None]).squeeze(1)
        wid_p = (f[:, P_] - 1) * lb.stride + f[:, R_]
        wid_q = (f[:, Q_] - 1) * lb.stride + f[:, S_]
        frac = torch.where(d_first == P_, torch.clamp(f[:, P_] * lb.stride / wid_p, max=1.0),
                           frac)
        frac = torch.where(d_first == R_, torch.clamp(f[:, R_] / wid_p, max=1.0), frac)
        frac = torch.where(d_first == Q_, torch.clamp(f[:, Q_] * lb.stride / wid_q, max=1.0),
                           frac)
        frac = torch.where(d_first == S_, torch.clamp(f[:, S_] / wid_q, max=1.0), frac)
        frac = torch.where(slides, frac, torch.ones_like(frac))
        if refetch:
            whole = torch.where((d_first == P_) | (d_first == Q_), torch.ones_like(frac), frac)
            return (tile * (1 + (f_first - 1) * frac) * rest,
                    tile * (1 + (f_first - 1) * whole) * rest)
    return tile * (1 + (f_first - 1) * frac) * rest


def layer_costs(lb: LayerBatch, mt: MappingTensors) -> LayerCosts:
    """Access counts of every layer mapped alone (no fusion)."""
    f = _tile_factors(mt)
    macs = lb.macs
    pes = mt.ks * mt.cs
    # Registers: weights, one per PE
    reg_tile = _tile_size("W", f[REG], lb)
    reg_w_fills = _fills("W", REG, mt, lb, f[REG], reg_tile) * pes
    # Scratchpad: weights and inputs
    sp_w_tile = _tile_size("W", f[SP], lb)
    sp_i_tile = _tile_size("I", f[SP], lb)
    sp_w_fills = _fills("W", SP, mt, lb, f[SP], sp_w_tile)
    sp_i_fills, sp_i_whole = _fills("I", SP, mt, lb, f[SP], sp_i_tile, refetch=True)
    sp_i_reads = torch.where(lb.multicast, macs / mt.ks, macs)
    # Accumulator: outputs, per column slice
    acc_tile = _tile_size("O", f[ACC], lb)
    drains = _fills("O", ACC, mt, lb, f[ACC], acc_tile) * mt.ks
    acc_updates = macs / mt.cs
    acc_reads = acc_updates - lb.size_o
    dram_o_reads = drains - lb.size_o
    revisit, k_factor, k_inner, q_factor, q_inner = _revisit_tiles(mt, lb)
    return LayerCosts(
        macs=macs, dram_w_reads=sp_w_fills, dram_i_reads=sp_i_fills,
        dram_o_reads=dram_o_reads, dram_o_updates=drains,
        sp_w_reads=reg_w_fills, sp_w_fills=sp_w_fills, sp_i_reads=sp_i_reads,
        sp_i_fills=sp_i_fills, acc_o_reads=acc_reads, acc_o_fills=dram_o_reads,
        acc_o_updates=acc_updates, reg_w_reads=macs, reg_w_fills=reg_w_fills, pes_used=pes,
        ks=mt.ks, sp_used=sp_w_tile + sp_i_tile, sp_w_tile=sp_w_tile, sp_i_tile=sp_i_tile,
        sp_o_tile=_tile_size("O", f[SP], lb), acc_used=acc_tile, reg_used=reg_tile,
        tile_n=f[SP][:, N_], tile_k=f[SP][:, K_], tile_c=f[SP][:, C_], tile_p=f[SP][:, P_],
        tile_q=f[SP][:, Q_], tile_r=f[SP][:, R_], tile_s=f[SP][:, S_],
        otile_n=f[ACC][:, N_], otile_k=f[ACC][:, K_] * mt.ks, otile_p=f[ACC][:, P_],
        otile_q=f[ACC][:, Q_], dim_n=lb.dims[:, N_], dim_k=lb.dims[:, K_],
        dim_c=lb.dims[:, C_], dim_p=lb.dims[:, P_], dim_q=lb.dims[:, Q_], dim_r=lb.dims[:, R_],
        dim_s=lb.dims[:, S_], dim_stride=lb.stride, is_matmul=lb.rel_w[:, N_].to(DTYPE),
        is_depthwise=(lb.in_chan == K_).to(DTYPE), o_revisit_tiles=revisit,
        o_k_factor=k_factor, o_k_inner=k_inner, o_q_factor=q_factor, o_q_inner=q_inner,
        dram_i_halo=sp_i_whole - sp_i_fills)


_K_Q = torch.tensor([K_, Q_])


def _revisit_tiles(mt: MappingTensors, lb: LayerBatch
                   ) -> tuple[torch.Tensor, ...]:
    """Per layer, how many output tiles the accumulator drains between two visits of the same
    tile (partial sums): the product of the O-relevant loops above the accumulator that sit
    inside the innermost irrelevant loop enclosing one of them (1 when no tile is revisited).
    The DRAM term uses it to tell when a spilled partial sum is still in the memory
    controller's write buffer when it is read back.  Also, for K and for Q, the factor of the
    innermost loop above the accumulator along that dim and the product of the O-relevant
    loops inside it (output tiles drained per step): consecutive tiles along the layout's
    innermost dim may share 64-byte lines (1 and 1: no such loop)."""
    L = len(lb)
    lv_idx = torch.tensor([lv for lv in range(ACC - 1, -1, -1) for _ in range(7)])
    dim_idx = torch.cat([torch.flip(mt.orders[:, lv, :], [1]) for lv in range(ACC - 1, -1, -1)],
                        1)                                                   # innermost first
    ff = mt.temporal[torch.arange(L)[:, None], lv_idx[None, :], dim_idx]
    active = ff.detach() > _ONE
    rel = lb.rel_o.gather(1, dim_idx) & active
    irr = ~lb.rel_o.gather(1, dim_idx) & active
    inside = (torch.cumsum(rel.to(torch.int64), 1) - rel.to(torch.int64)) > 0
    cause = irr & inside
    j = cause.to(torch.int8).argmax(1)
    pos = torch.arange(ff.shape[1])[None, :]
    ones = torch.ones_like(ff)
    tiles = torch.where(rel & (pos < j[:, None]), ff, ones).prod(1)
    # K and Q at once: [L, 2, 14]
    along = rel[:, None, :] & (dim_idx[:, None, :] == _K_Q[None, :, None])
    has = along.any(2)
    first = along.to(torch.int8).argmax(2)
    one2 = torch.ones_like(has, dtype=ff.dtype)
    factor = torch.where(has, ff.gather(1, first), one2)
    inner = torch.where(rel[:, None, :] & (pos[:, None, :] < first[..., None]), ff[:, None, :],
                        ones[:, None, :]).prod(2)
    inner = torch.where(has, inner, one2)
    return (torch.where(cause.any(1), tiles, torch.ones_like(tiles)), factor[:, 0], inner[:, 0],
            factor[:, 1], inner[:, 1])


# ---- a network: fusion, cycles, energy ------------------------------------------------------
#: The rules for a fused group's first layer's Inputs (module docstring, "Halo re-fetch"),
#: declared with the method names (torch-free); the process's rule, default the first
FUSED_HALO = DEFAULT_FUSED_HALO

@dataclass
class FusionGraph:
    """Index tensors of a network's edges for the fusion terms."""

    prod: torch.Tensor         # [E] producer layer
    cons: torch.Tensor         # [E] consumer layer
    operand_w: torch.Tensor    # [E] bool: the edge feeds the consumer's W operand (matmul)
    fusable: torch.Tensor      # [E] bool
    res_src: list[int]         # residual source layer (-1: network input)
    res_dst: list[int]
    res_chain: list[list[int]]  # edges whose fusion keeps the residual on chip ([] = never)
    uses: list[list[tuple[str, int]]]   # per layer: ("edge", e) / ("res", r) / ("out", -1)
    res_dst_t: torch.Tensor = None       # [R] long
    res_size_of: torch.Tensor = None     # [R] layer whose output size the shortcut has
    res_chain_idx: torch.Tensor = None   # [R, C] into cat(sigma, [1, 0])
    uses_idx: torch.Tensor = None        # [L, U] into cat(sigma, res_keep, [0, 1])
    halo: str = "refetch"                # fused groups' first layers: "refetch" / "slide"
    touch_idx: torch.Tensor = None       # [L, T] edges touching each layer, into cat(sigma, [0])
    in_idx: torch.Tensor = None          # [L, I] edges feeding each layer, into cat(sigma, [0])

    def __post_init__(self) -> None:
        E, R = len(self.prod), len(self.res_dst)
        self.res_dst_t = torch.tensor(self.res_dst, dtype=torch.long)
        self.res_size_of = torch.tensor([s if s >= 0 else d for s, d in
                                         zip(self.res_src, self.res_dst)], dtype=torch.long)
        width = max([1] + [len(ch) for ch in self.res_chain])
        chain = torch.full((R, width), E, dtype=torch.long)          # E -> 1.0 (padding)
        for r, ch in enumerate(self.res_chain):
            if ch:
                chain[r, :len(ch)] = torch.tensor(ch)
            else:
                chain[r, 0] = E + 1                                   # E+1 -> 0.0: never
        self.res_chain_idx = chain
        width = max(len(u) for u in self.uses) if self.uses else 1
        uses = torch.full((len(self.uses), width), E + R + 1, dtype=torch.long)   # -> 1.0
        for i, u in enumerate(self.uses):
            for j, (kind, k) in enumerate(u):
                uses[i, j] = k if kind == "edge" else E + k if kind == "res" else E + R
        self.uses_idx = uses
        if self.halo not in FUSED_HALO_RULES:
            raise ValueError(f"unknown fused-input halo rule '{self.halo}': expected one of "
                             f"{', '.join(FUSED_HALO_RULES)}")
        L = len(self.uses)
        touch: list[list[int]] = [[] for _ in range(L)]
        feed: list[list[int]] = [[] for _ in range(L)]
        for k, (p, c) in enumerate(zip(self.prod.tolist(), self.cons.tolist())):
            touch[p].append(k)
            touch[c].append(k)
            feed[c].append(k)
        self.touch_idx = _padded(touch, E)
        self.in_idx = _padded(feed, E)

    def halo_weight(self, sig: torch.Tensor) -> torch.Tensor:
        """[..., L] from fusable-masked sigma [..., E]: how much each layer's Inputs are read
        from DRAM as a fused-group member (some edge touching it fused, none feeding it):
        the weight of ``LayerCosts.dram_i_halo`` (0 everywhere with ``halo="slide"``)."""
        cat = torch.cat([sig, torch.zeros(*sig.shape[:-1], 1, dtype=sig.dtype)], -1)
        in_group = 1 - (1 - cat[..., self.touch_idx]).prod(-1)
        from_dram = (1 - cat[..., self.in_idx]).prod(-1)
        w = in_group * from_dram
        return w if self.halo == "refetch" else torch.zeros_like(w)

    @classmethod
    def from_network(cls, net: Network, halo: str | None = None) -> "FusionGraph":
        """The network's edges; ``halo`` the fused-input rule (None: ``FUSED_HALO``)."""
        prod, cons, opw, fus = [], [], [], []
        for e in net.edges:
            layer = net.layers[e.consumer]
            pname = net.layers[e.producer].name
            on_w = layer.kind == "matmul" and layer.producers.index(pname) == 1
            prod.append(e.producer)
            cons.append(e.consumer)
            opw.append(on_w)
            fus.append(e.fusable and not on_w)
        edge_of = {(p, c): k for k, (p, c) in enumerate(zip(prod, cons))}
        res_src, res_dst, res_chain = [], [], []
        for j, layer in enumerate(net.layers):
            for r in layer.residual_from:
                src = net.index[r] if r != "input" else -1
                res_src.append(src)
                res_dst.append(j)
                res_chain.append(_chain(src, j, edge_of, fus) if src >= 0 else [])
        uses: list[list[tuple[str, int]]] = [[] for _ in net.layers]
        for k, p in enumerate(prod):
            uses[p].append(("edge", k))
        for r, src in enumerate(res_src):
            if src >= 0:
                uses[src].append(("res", r))
        for i in range(len(net.layers)):
            if not uses[i]:
                uses[i].append(("out", -1))      # a network output: always written to DRAM
        return cls(torch.tensor(prod, dtype=torch.long), torch.tensor(cons, dtype=torch.long),
                   torch.tensor(opw, dtype=torch.bool), torch.tensor(fus, dtype=torch.bool),
                   res_src, res_dst, res_chain, uses, halo=halo or FUSED_HALO)


def _padded(rows: list[list[int]], pad: int) -> torch.Tensor:
    width = max([1] + [len(r) for r in rows])
    out = torch.full((len(rows), width), pad, dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            out[i, :len(r)] = torch.tensor(r)
    return out


def _chain(src: int, dst: int, edge_of: dict[tuple[int, int], int],
           fusable: list[bool]) -> list[int]:
    """The fusable direct edges of a path src -> ... -> dst (shortest by layer index), or []."""
    best: dict[int, list[int]] = {src: []}
    for node in range(src, dst + 1):
        if node not in best:
            continue
        for (p, c), k in edge_of.items():
            if p == node and c <= dst and fusable[k] and c not in best:
                best[c] = best[node] + [k]
    return best.get(dst, [])


@dataclass
class NetworkCosts:
    """Per-layer figures after fusion ([L] tensors) and the network totals."""

    layer: LayerCosts
    dram_reads: torch.Tensor
    dram_writes: torch.Tensor
    sp_extra_writes: torch.Tensor
    compute_cycles: torch.Tensor
    dram_cycles: torch.Tensor
    sp_cycles: torch.Tensor
    acc_cycles: torch.Tensor
    cycles: torch.Tensor
    energy: torch.Tensor            # pJ per layer
    energy_parts: dict[str, torch.Tensor]
    total_cycles: torch.Tensor
    total_energy: torch.Tensor
    edp: torch.Tensor               # pJ x cycles


def roofline(c: LayerCosts, dram_reads: torch.Tensor, dram_writes: torch.Tensor,
             sp_extra: torch.Tensor | float, hw: GemminiHardware):
    """Per-layer cycles (compute, DRAM, scratchpad, accumulator and their maximum) and energy
    by level, from the access counts and the DRAM traffic after fusion.

    DRAM time is the bus (``hw.dram_bw``, Gemmini's DMA) and, on a :class:`DramAwareHardware`,
    also the memory's service time; DRAM energy is then the DRAM term (background and refresh
    over the layer's cycles, data and activations per line) instead of a per-byte energy."""
    compute = c.macs / c.pes_used
    dram_cyc = (dram_reads + dram_writes) / hw.dram_bw
    term = getattr(hw, "dram", None)
    if term is not None:
        from optimizer.dram_model import dram_traffic, time_energy_pj
        dp = dram_traffic(term, c, dram_reads, dram_writes)
        dram_cyc = torch.maximum(dram_cyc, dp.service_cycles)
    sp_cyc = (c.sp_w_reads + c.sp_w_fills + c.sp_i_reads + c.sp_i_fills + sp_extra) / hw.sp_bw
    acc_cyc = (c.acc_o_reads + c.acc_o_fills + c.acc_o_updates) / c.ks / hw.acc_bw
    cycles = torch.maximum(torch.maximum(compute, dram_cyc), torch.maximum(sp_cyc, acc_cyc))
    if term is not None:
        background, refresh = time_energy_pj(term, cycles)
        dram_pj = dp.data_pj + dp.act_pj + background + refresh
    else:
        dram_pj = dram_reads * hw.e_dram_read + dram_writes * hw.e_dram_write
    parts = {
        "DRAM": dram_pj,
        "Scratchpad": (c.sp_w_reads + c.sp_i_reads) * hw.e_sp_read
        + (c.sp_w_fills + c.sp_i_fills + sp_extra) * hw.e_sp_write,
        "Accumulator": c.acc_o_reads * hw.e_acc_read
        + (c.acc_o_fills + c.acc_o_updates) * hw.e_acc_write,
        "Registers": c.reg_w_reads * hw.e_reg_read + c.reg_w_fills * hw.e_reg_write,
        "MACC": c.macs * hw.e_mac,
    }
    return compute, dram_cyc, sp_cyc, acc_cyc, cycles, parts


def network_costs(lb: LayerBatch, mt: MappingTensors, hw: GemminiHardware,
                  fg: FusionGraph | None = None, sigma: torch.Tensor | None = None
                  ) -> NetworkCosts:
    """Costs of a whole network; ``sigma`` [E] in [0, 1] fuses the edges of ``fg``."""
    return combine(layer_costs(lb, mt), lb, hw, fg, sigma)


def combine(c: LayerCosts, lb: LayerBatch, hw: GemminiHardware, fg: FusionGraph | None = None,
            sigma: torch.Tensor | None = None) -> NetworkCosts:
    """The network part of :func:`network_costs` on given per-layer costs (FADiff mixes the
    per-layer costs of several loop orders before this step)."""
    # every field is [..., L]: one network, or a batch of candidate schedules of it
    zeros = torch.zeros_like(c.dram_i_reads)
    dram_reads = c.dram_w_reads + c.dram_i_reads + c.dram_o_reads
    dram_writes = c.dram_o_updates
    sp_extra = zeros
    if fg is not None:
        batch = zeros.shape[:-1]
        n_edges = len(fg.prod)
        if sigma is None:
            sigma = torch.zeros(*batch, n_edges, dtype=DTYPE)
        sig = torch.where(fg.fusable, sigma, torch.zeros_like(sigma))
        one = torch.ones(*batch, 1, dtype=DTYPE)
        zero = torch.zeros(*batch, 1, dtype=DTYPE)
        if n_edges:
            # consumer side: the fused operand is not read from DRAM
            saved_read = torch.where(fg.operand_w, c.dram_w_reads[..., fg.cons],
                                     c.dram_i_reads[..., fg.cons])
            dram_reads = dram_reads - zeros.index_add(-1, fg.cons, sig * saved_read)
            # a fused group's first layer re-fetches each tile's input window (halo)
            dram_reads = dram_reads + fg.halo_weight(sig) * c.dram_i_halo
        # residual reads: the adding layer reads the shortcut unless its chain is fused
        res_keep = torch.cat([sig, one, zero], -1)[..., fg.res_chain_idx].prod(-1)
        if len(fg.res_dst):
            dram_reads = dram_reads + zeros.index_add(
                -1, fg.res_dst_t, (1 - res_keep) * lb.size_o[fg.res_size_of])
        # producer side: the final write disappears when every use is fused
        keep = torch.cat([sig, res_keep, zero, one], -1)[..., fg.uses_idx].prod(-1)
        sp_extra = keep * lb.size_o
        dram_writes = dram_writes - sp_extra
    compute, dram_cyc, sp_cyc, acc_cyc, cycles, parts = roofline(c, dram_reads, dram_writes,
                                                                 sp_extra, hw)
    energy = sum(parts.values())
    total_cycles = cycles.sum(-1)
    total_energy = energy.sum(-1)
    return NetworkCosts(c, dram_reads, dram_writes, sp_extra, compute, dram_cyc, sp_cyc,
                        acc_cyc, cycles, energy, parts, total_cycles, total_energy,
                        total_cycles * total_energy)


def batch_layer_costs(lb: LayerBatch, mt: MappingTensors, batch: int) -> LayerCosts:
    """Per-layer costs of ``batch`` candidate schedules at once: ``mt`` holds batch x L rows
    (candidate-major); every field of the result is [batch, L]."""
    L = len(lb)
    c = layer_costs(lb.tiled(batch), mt)
    return LayerCosts(**{f.name: getattr(c, f.name).reshape(batch, L) for f in fields(LayerCosts)})


# ---- validity -------------------------------------------------------------------------------
def capacity_violations(c: LayerCosts, hw: GemminiHardware) -> dict[str, torch.Tensor]:
    """Relative overflow (0 when it fits) of each level, per layer."""
    relu = torch.nn.functional.relu
    return {"scratchpad": relu(c.sp_used / hw.sp_capacity - 1),
            "accumulator": relu(c.acc_used / hw.acc_slice_capacity - 1),
            "registers": relu(c.reg_used - 1),
            "cols": relu(c.ks / hw.cols - 1), "rows": relu(c.pes_used / c.ks / hw.rows - 1)}


def layer_problems(layer_name: str, m: LayerMapping, c: LayerCosts, i: int,
                   hw: GemminiHardware) -> list[str]:
    """Human-readable reasons why layer i's mapping is invalid on ``hw`` (empty: valid)."""
    out = []
    if m.spatial_k > hw.cols:
        out.append(f"{layer_name}: K unrolled {m.spatial_k} > {hw.cols} PE columns")
    if m.spatial_c > hw.rows:
        out.append(f"{layer_name}: C unrolled {m.spatial_c} > {hw.rows} PE rows")
    if float(c.sp_used[i]) > hw.sp_capacity:
        out.append(f"{layer_name}: scratchpad tiles W+I = {int(c.sp_used[i])} words > "
                   f"{hw.sp_capacity}")
    if float(c.acc_used[i]) > hw.acc_slice_capacity:
        out.append(f"{layer_name}: accumulator tile {int(c.acc_used[i])} words per slice > "
                   f"{hw.acc_slice_capacity}")
    if float(c.reg_used[i]) > 1:
        out.append(f"{layer_name}: a PE register holds 1 weight, the mapping needs "
                   f"{int(c.reg_used[i])} (no K, C, R, S loops below the registers)")
    return out


def fusion_groups(net: Network, fused: Sequence[tuple[str, str]]) -> list[list[int]]:
    """Connected components of the fused edges (layer indices), singletons included."""
    parent = list(range(len(net.layers)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for a, b in fused:
        parent[find(net.index[a])] = find(net.index[b])
    groups: dict[int, list[int]] = {}
    for i in range(len(net.layers)):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def fusion_problems(net: Network, sched: Schedule, c: LayerCosts, hw: GemminiHardware,
                    fg: FusionGraph) -> list[str]:
    """Why the schedule's fused edges cannot run as fused (empty: they can)."""
    out = []
    fusable = {(net.layers[int(p)].name, net.layers[int(q)].name): bool(f)
               for p, q, f in zip(fg.prod, fg.cons, fg.fusable)}
    for a, b in sched.fused:
        if (a, b) not in fusable:
            out.append(f"fused edge {a} -> {b}: not a producer->consumer edge of "
                       f"{net.name}")
            continue
        if not fusable[(a, b)]:
            out.append(f"fused edge {a} -> {b}: cannot fuse (pooling/softmax/layernorm in "
                       "between, or the tensor is a matmul's second operand)")
            continue
        mis = alignment_mismatch(sched.mappings[a], sched.mappings[b], net.layers[net.index[b]])
        if mis:
            out.append(f"fused edge {a} -> {b}: tiles not aligned ({mis})")
    if out:
        return out
    for group in fusion_groups(net, sched.fused):
        if len(group) < 2:
            continue
        used = sum(float(c.sp_used[i]) for i in group)
        if used > hw.sp_capacity:
            names = ", ".join(net.layers[i].name for i in group)
            out.append(f"fused group [{names}]: scratchpad tiles {int(used)} words > "
                       f"{hw.sp_capacity}")
    return out


def alignment_mismatch(mp: LayerMapping, mc: LayerMapping, consumer: Any) -> str:
    """Empty when producer mapping ``mp`` and consumer mapping ``mc`` can run in lockstep:
    the same number of DRAM-level tiles along N, P, Q, the producer computing all its output
    channels per tile (DRAM K factor 1) and the consumer reducing over all of them (DRAM
    factor 1 on its input-channel dim)."""
    problems = []
    for d in ("N", "P", "Q"):
        if mp.temporal[0][d] != mc.temporal[0][d]:
            problems.append(f"DRAM {d} tiles {mp.temporal[0][d]} vs {mc.temporal[0][d]}")
    if mp.temporal[0]["K"] != 1:
        problems.append(f"producer DRAM K factor {mp.temporal[0]['K']} (must be 1)")
    chan = "K" if consumer.kind == "depthwise" else "C"
    if mc.temporal[0][chan] != 1:
        problems.append(f"consumer DRAM {chan} factor {mc.temporal[0][chan]} (must be 1)")
    return "; ".join(problems)


# ---- the exact evaluator --------------------------------------------------------------------
@dataclass
class LayerResult:
    name: str
    macs: int
    cycles: float
    energy_pj: float
    compute_cycles: float
    dram_cycles: float
    dram_reads: float
    dram_writes: float
    utilization: float
    mapping: LayerMapping
    group: int
    energy_parts: dict[str, float]


@dataclass
class ScheduleResult:
    """The exact evaluation of a discrete schedule."""

    network: str
    hardware: str
    edp: float                    # pJ x cycles: (sum of cycles) x (sum of energy)
    energy_pj: float
    latency_cycles: float
    valid: bool
    problems: list[str]
    layers: list[LayerResult]
    fused: list[tuple[str, str]]
    groups: list[list[str]]
    dram_bytes: float

    @property
    def edp_uj_cycles(self) -> float:
        return self.edp * 1e-6


def schedule_network_costs(net: Network, maps: Sequence[LayerMapping],
                           fused: Sequence[tuple[str, str]], hw: GemminiHardware,
                           halo: str | None = None) -> tuple[NetworkCosts, FusionGraph]:
    """Costs of a discrete schedule (no gradients): ``maps`` one mapping per layer in the
    network's order, ``fused`` its fused edges as (producer, consumer) names, ``halo`` the
    fused-input rule (None: ``FUSED_HALO``); returns the network's costs and the fusion graph
    they were computed on."""
    fg = FusionGraph.from_network(net, halo)
    index = {(net.layers[int(p)].name, net.layers[int(q)].name): k
             for k, (p, q) in enumerate(zip(fg.prod, fg.cons))}
    sigma = torch.zeros(len(fg.prod), dtype=DTYPE)
    for e in fused:
        if e in index:
            sigma[index[e]] = 1.0
    with torch.no_grad():
        nc = network_costs(LayerBatch.from_network(net), MappingTensors.from_mappings(maps),
                           hw, fg, sigma)
    return nc, fg


def evaluate_schedule(net: Network, sched: Schedule, hw: GemminiHardware,
                      halo: str | None = None) -> ScheduleResult:
    """Score a discrete schedule with the cost model (no gradients); checks validity.
    ``halo``: the fused-input rule, "refetch" or "slide" (None: ``FUSED_HALO``)."""
    missing = [layer.name for layer in net.layers if layer.name not in sched.mappings]
    if missing:
        raise MappingError(f"schedule has no mapping for layer(s) {', '.join(missing[:5])}"
                           f"{' ...' if len(missing) > 5 else ''} of {net.name}")
    maps = [sched.mappings[layer.name] for layer in net.layers]
    problems: list[str] = []
    for layer, m in zip(net.layers, maps):
        try:
            m.check(layer)
        except MappingError as exc:
            problems.append(str(exc))
    nc, fg = schedule_network_costs(net, maps, sched.fused, hw, halo)
    for i, (layer, m) in enumerate(zip(net.layers, maps)):
        problems += layer_problems(layer.name, m, nc.layer, i, hw)
    problems += fusion_problems(net, sched, nc.layer, hw, fg)
    groups = fusion_groups(net, sched.fused)
    group_of = {i: g for g, members in enumerate(groups) for i in members}
    layers = []
    for i, (layer, m) in enumerate(zip(net.layers, maps)):
        layers.append(LayerResult(
            name=layer.name, macs=layer.macs, cycles=float(nc.cycles[i]),
            energy_pj=float(nc.energy[i]), compute_cycles=float(nc.compute_cycles[i]),
            dram_cycles=float(nc.dram_cycles[i]), dram_reads=float(nc.dram_reads[i]),
            dram_writes=float(nc.dram_writes[i]),
            utilization=float(nc.layer.macs[i] / (nc.cycles[i] * hw.pes)),
            mapping=m, group=group_of[i],
            energy_parts={k: float(v[i]) for k, v in nc.energy_parts.items()}))
    return ScheduleResult(
        network=net.name, hardware=hw.name, edp=float(nc.edp),
        energy_pj=float(nc.total_energy), latency_cycles=float(nc.total_cycles),
        valid=not problems, problems=problems, layers=layers, fused=list(sched.fused),
        groups=[[net.layers[i].name for i in g] for g in groups],
        dram_bytes=float((nc.dram_reads + nc.dram_writes).sum()))


def level_counts(c: LayerCosts, i: int) -> dict[str, dict[str, dict[str, float]]]:
    """Layer i's counts in the reference's structure: level -> tensor -> reads/fills/updates."""
    def r(x: torch.Tensor) -> float:
        return float(x[i])
    return {
        "DRAM": {"Weights": {"reads_total": r(c.dram_w_reads), "fills_total": 0.0,
                             "updates_total": 0.0},
                 "Inputs": {"reads_total": r(c.dram_i_reads), "fills_total": 0.0,
                            "updates_total": 0.0},
                 "Outputs": {"reads_total": r(c.dram_o_reads), "fills_total": 0.0,
                             "updates_total": r(c.dram_o_updates)}},
        "Scratchpad": {"Weights": {"reads_total": r(c.sp_w_reads),
                                   "fills_total": r(c.sp_w_fills), "updates_total": 0.0},
                       "Inputs": {"reads_total": r(c.sp_i_reads),
                                  "fills_total": r(c.sp_i_fills), "updates_total": 0.0}},
        "Accumulator": {"Outputs": {"reads_total": r(c.acc_o_reads),
                                    "fills_total": r(c.acc_o_fills),
                                    "updates_total": r(c.acc_o_updates)}},
        "Registers": {"Weights": {"reads_total": r(c.reg_w_reads),
                                  "fills_total": r(c.reg_w_fills), "updates_total": 0.0}},
    }


__all__ = ["LayerBatch", "MappingTensors", "LayerCosts", "NetworkCosts", "FusionGraph",
           "layer_costs", "network_costs", "capacity_violations", "evaluate_schedule",
           "ScheduleResult", "LayerResult", "level_counts", "fusion_groups",
           "alignment_mismatch", "LEVELS", "FUSED_HALO", "FUSED_HALO_RULES"]
