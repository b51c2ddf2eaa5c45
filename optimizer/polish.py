"""Exact local refinement of a discrete schedule (FADiff's decoding step).

Coordinate descent on the exact cost model: for one layer and one of its 8 choices (a
dimension's split or the loop-order pair) at a time, score *every* alternative at once and keep
the best feasible one; then try switching each fusable edge on or off (re-aligning the
consumer's DRAM-level tiles to the producer's when switching on).  With the fused set fixed, a
layer's cycles and energy after fusion depend on its own mapping only, so one layer's
alternatives are scored on that layer alone and the network EDP follows exactly as
``(C - c_i + c_i') * (E - e_i + e_i')``.
"""
from __future__ import annotations

import numpy as np
import torch

from optimizer.costmodel import (DTYPE, LayerCosts, capacity_violations, combine, layer_costs,
                                 roofline)
from optimizer.search import Tracker, batch_score
from optimizer.space import SearchSpace, align_edge, repair_fusion


def _fused_sigma(space: SearchSpace, fused: list[int]) -> torch.Tensor:
    sigma = torch.zeros(len(space.graph.prod), dtype=DTYPE)
    if fused:
        sigma[fused] = 1.0
    return sigma


def _layer_terms(space: SearchSpace, choices: np.ndarray, fused: list[int]):
    """Per-layer cycles, energy and scratchpad use of the current schedule, plus the fusion
    adjustments each layer gets (which depend on the fused set only)."""
    sigma = _fused_sigma(space, fused)
    with torch.no_grad():
        c = layer_costs(space.batch, space.tensors(choices))
        nc = combine(c, space.batch, space.hw, space.graph, sigma)
    return nc, c


def _group_of(space: SearchSpace, fused: list[int], i: int) -> list[int]:
    from optimizer.costmodel import fusion_groups
    for group in fusion_groups(space.net, [space.edge_names(k) for k in fused]):
        if i in group:
            return group
    return [i]


def _candidates_for_layer(space: SearchSpace, i: int, choices: np.ndarray, gene: int
                          ) -> np.ndarray:
    n = space.layers[i].sizes()[gene]
    cand = np.repeat(choices[i][None, :], n, 0)
    cand[:, gene] = np.arange(n)
    return cand


def _score_layer(space: SearchSpace, i: int, cand: np.ndarray, fused: list[int],
                 nc, c_all: LayerCosts, choices: np.ndarray):
    """Exact (cycles_i, energy_i, feasible) of layer i under each candidate row."""
    B = cand.shape[0]
    sub, mt = space.layer_tensors(i, cand)
    hw = space.hw
    g = space.graph
    with torch.no_grad():
        c = layer_costs(sub, mt)
        # this layer's fusion adjustments (fixed by the fused set)
        reads = c.dram_w_reads + c.dram_i_reads + c.dram_o_reads
        writes = c.dram_o_updates
        base_reads = float(nc.dram_reads[i]) - float(c_all.dram_w_reads[i]
                                                      + c_all.dram_i_reads[i]
                                                      + c_all.dram_o_reads[i])
        feasible = torch.ones(B, dtype=torch.bool)
        for k in fused:
            if int(g.cons[k]) == i:
                reads = reads - (c.dram_w_reads if bool(g.operand_w[k]) else c.dram_i_reads)
                base_reads += float(c_all.dram_w_reads[i] if bool(g.operand_w[k])
                                    else c_all.dram_i_reads[i])
        reads = reads + base_reads
        sp_extra = float(nc.sp_extra_writes[i])
        writes = writes - sp_extra
        *_, cyc, parts = roofline(c, reads, writes, sp_extra, hw)
        energy = sum(parts.values())
        viol = sum(v for v in capacity_violations(c, hw).values())
        feasible &= viol == 0
        # fused group: the scratchpad tiles of all its layers fit together
        group = _group_of(space, fused, i)
        if len(group) > 1:
            others = sum(float(c_all.sp_used[j]) for j in group if j != i)
            feasible &= (c.sp_used + others) <= hw.sp_capacity
        # fused neighbours: aligned DRAM tiles
        dram = mt.temporal[:, 0, :]
        for k in fused:
            p, q = int(g.prod[k]), int(g.cons[k])
            if i not in (p, q):
                continue
            other = q if i == p else p
            o_dram = space.layer_tensors(other, choices[other:other + 1])[1].temporal[0, 0]
            for d in (0, 3, 4):
                feasible &= dram[:, d] == o_dram[d]
            if i == p:
                feasible &= dram[:, 1] == 1
            else:
                feasible &= dram[:, int(space.batch.in_chan[i])] == 1
    return cyc, energy, feasible


def _improve_layer(space: SearchSpace, i: int, choices: np.ndarray, fused: list[int],
                   cand: np.ndarray) -> bool:
    """Move layer i to the best feasible row of ``cand`` if it lowers the network EDP."""
    nc, c_all = _layer_terms(space, choices, fused)
    C, E = float(nc.total_cycles), float(nc.total_energy)
    ci, ei = float(nc.cycles[i]), float(nc.energy[i])
    cyc, energy, ok = _score_layer(space, i, cand, fused, nc, c_all, choices)
    edp = (C - ci + cyc) * (E - ei + energy)
    edp = torch.where(ok, edp, torch.full_like(edp, float("inf")))
    j = int(edp.argmin())
    if bool(ok[j]) and float(edp[j]) < C * E * (1 - 1e-9):
        choices[i] = cand[j]
        return True
    return False


def polish(space: SearchSpace, choices: np.ndarray, fused: list[int], *, rounds: int = 3,
           samples: int = 512, seed: int = 0, tracker: Tracker | None = None
           ) -> tuple[np.ndarray, list[int]]:
    """Local refinement from a feasible schedule (see the module docstring): per layer, a
    jump to the best of ``samples`` random mappings of that layer if it is better, then an
    exhaustive pass over each of its 8 choices; then the fusion toggles; ``rounds`` times or
    until nothing improves."""
    rng = np.random.default_rng(seed)
    choices = np.asarray(choices, dtype=np.int64).copy()
    fused = list(fused)
    L = len(space.layers)
    for _ in range(rounds):
        improved = False
        for i in range(L):
            batches = []
            if samples:
                sizes = space.layers[i].sizes()
                batches.append(np.stack([rng.integers(0, n, samples) for n in sizes], 1))
            batches += [None] * 8
            for gene, cand in enumerate(batches):
                if cand is None:
                    cand = _candidates_for_layer(space, i, choices, gene - (1 if samples else 0))
                if tracker is not None:
                    tracker.check_cancel()
                    if tracker.exhausted():
                        return choices, fused
                    left = tracker.evaluations_left()
                    if left is not None:            # n one-layer candidates cost n / L
                        cand = cand[:max(1, int(left) * L)]
                improved |= _improve_layer(space, i, choices, fused, cand)
                if tracker is not None:
                    tracker.evaluations += max(1, -(-len(cand) // L))
        improved |= _polish_fusion(space, choices, fused)
        if not improved:
            break
    return choices, fused


def _polish_fusion(space: SearchSpace, choices: np.ndarray, fused: list[int]) -> bool:
    """Try each fusable edge on/off (on: with the consumer's DRAM tiles aligned to the
    producer's where a split allows); keep changes that lower the EDP.  In place."""
    g = space.graph
    improved = False
    for k in space.fusable_edges:
        cur = np.zeros((1, len(g.prod)), dtype=bool)
        cur[0, fused] = True
        base_edp, base_v = batch_score(space, choices[None], cur)
        trial_choices = choices.copy()
        trial = cur.copy()
        trial[0, k] = not cur[0, k]
        if trial[0, k]:
            trial_choices = align_edge(space, trial_choices, k)
        edp, v = batch_score(space, trial_choices[None], trial)
        trial_fused = [e for e in range(len(g.prod)) if trial[0, e]]
        fits = sorted(repair_fusion(space, trial_choices, trial_fused)) == sorted(trial_fused)
        if v[0] == 0 and fits and edp[0] < base_edp[0] * (1 - 1e-9):
            choices[:] = trial_choices
            if trial[0, k]:
                fused.append(k)
            else:
                fused.remove(k)
            improved = True
    return improved
