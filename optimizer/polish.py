"""The exact refinement: a separate stage any method's result can go through
(:func:`refine`; ``optimize --no-refine`` turns it off for every method alike).

Coordinate descent on the exact cost model with the fused set held fixed (fusion is the
search's decision — FADiff's sigma, a GA's fusion bits — never toggled here): per group of
identical-shape layers (:meth:`SearchSpace.shape_groups`), first the best of the members'
mappings copied to all of them, then a jump to the best of ``samples`` random mappings, then
each of the 8 choices (a dimension's split or the loop-order pair) with *every* alternative
scored at once; a move applies to every member of the group, so identical layers keep
identical mappings.  With the fused set fixed, a layer's cycles and energy after fusion depend
on its own mapping only, so a layer's alternatives are scored on that layer alone and the
network EDP follows exactly as ``(C - sum c_i + sum c_i') * (E - sum e_i + sum e_i')``.
Every candidate costs one layer-mapping evaluation per member of the group.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from optimizer.costmodel import (DTYPE, LayerCosts, capacity_violations, combine, layer_costs,
                                 roofline)
from optimizer.search import (Budget, CancelFn, ProgressFn, SearchResult, Tracker, finish,
                              score)
from optimizer.space import SearchSpace, repair_fusion


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
        # the halo re-fetch of a fused group's first layer depends on the layer's own mapping
        sig = torch.where(g.fusable, _fused_sigma(space, fused), torch.zeros((), dtype=DTYPE))
        w_halo = float(g.halo_weight(sig)[i]) if fused else 0.0
        if w_halo:
            reads = reads + w_halo * c.dram_i_halo
            base_reads -= w_halo * float(c_all.dram_i_halo[i])
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


def _improve_group(space: SearchSpace, group: list[int], choices: np.ndarray,
                   fused: list[int], cand: np.ndarray) -> bool:
    """Move every layer of ``group`` to the best feasible row of ``cand`` if that lowers the
    network EDP (in place)."""
    nc, c_all = _layer_terms(space, choices, fused)
    C, E = float(nc.total_cycles), float(nc.total_energy)
    dc = torch.zeros(len(cand), dtype=DTYPE)
    de = torch.zeros(len(cand), dtype=DTYPE)
    ok = torch.ones(len(cand), dtype=torch.bool)
    for i in group:
        cyc, energy, feasible = _score_layer(space, i, cand, fused, nc, c_all, choices)
        dc += cyc - float(nc.cycles[i])
        de += energy - float(nc.energy[i])
        ok &= feasible
    edp = (C + dc) * (E + de)
    edp = torch.where(ok, edp, torch.full_like(edp, float("inf")))
    j = int(edp.argmin())
    if not (bool(ok[j]) and float(edp[j]) < C * E * (1 - 1e-9)):
        return False
    trial = choices.copy()
    trial[group] = cand[j]
    if len(group) > 1:      # members may share a fused group: confirm on the whole network
        edp_t, viol = score(space, trial, fused)
        if viol > 0 or edp_t >= C * E * (1 - 1e-9) or \
                sorted(repair_fusion(space, trial, fused)) != sorted(fused):
            return False
    choices[:] = trial
    return True


def polish(space: SearchSpace, choices: np.ndarray, fused: list[int], *, rounds: int = 3,
           samples: int = 512, seed: int = 0, tracker: Tracker | None = None
           ) -> tuple[np.ndarray, list[int]]:
    """Local refinement from a feasible schedule (see the module docstring), ``rounds`` times
    or until nothing improves, within ``tracker``'s budget.  The fused edges are returned
    unchanged."""
    rng = np.random.default_rng(seed)
    choices = np.asarray(choices, dtype=np.int64).copy()
    fused = list(fused)
    groups = []
    for g in space.shape_groups():          # copy the best member's mapping to all members
        if len(g) > 1 and len({tuple(choices[i]) for i in g}) > 1:
            rows = np.unique(choices[g], axis=0)
            if _spend(tracker, len(rows) * len(g)):
                return choices, fused
            _improve_group(space, g, choices, fused, rows)
        same = [i for i in g if np.array_equal(choices[i], choices[g[0]])]
        groups.append(same)
        groups += [[i] for i in g if i not in same]     # could not share (fused context)
    for _ in range(rounds):
        improved = False
        for group in groups:
            i = group[0]
            batches = []
            if samples:
                sizes = space.layers[i].sizes()
                batches.append(np.stack([rng.integers(0, n, samples) for n in sizes], 1))
            batches += [None] * 8
            for gene, cand in enumerate(batches):
                if cand is None:
                    cand = _candidates_for_layer(space, i, choices, gene - (1 if samples else 0))
                if tracker is not None:
                    left = tracker.evaluations_left()
                    if left is not None:
                        cand = cand[:max(1, int(left) // len(group))]
                if _spend(tracker, len(cand) * len(group)):
                    return choices, fused
                improved |= _improve_group(space, group, choices, fused, cand)
        if tracker is not None:
            edp, violation = score(space, choices, fused)
            if violation <= 0:
                tracker.best_edp = min(tracker.best_edp, float(edp))
            tracker.report(float(edp), float(edp), violation=float(violation))
        if not improved:
            break
    return choices, fused


def _spend(tracker: Tracker | None, n: int) -> bool:
    """Count n layer-mapping evaluations; True when the budget was already spent."""
    if tracker is None:
        return False
    tracker.check_cancel()
    if tracker.exhausted():
        return True
    tracker.evaluations += n
    return False


def refine(space: SearchSpace, result: SearchResult, budget: Budget, seed: int = 0,
           progress: ProgressFn | None = None, cancel: CancelFn | None = None,
           rounds: int = 3, samples: int = 512) -> SearchResult:
    """The refinement stage on any method's result: the same for every method.  The search's
    own result is kept in ``raw`` (before any post-processing of the method's own, i.e.
    FADiff's archive: ``result.search_only`` where set), the refinement's input in ``post``
    (and the search's evaluations in ``raw_evaluations``); the method name, seed and history
    carry over."""
    if result.choices is None:
        raise ValueError(f"{result.method}: the result carries no choices to refine")
    tracker = Tracker(result.method, budget, progress, cancel, after=result)
    tracker.best_edp = result.result.edp if result.result.valid else min(
        [p.best_edp for p in result.history], default=math.inf)
    # the stage's start, reported at once (its objective: the exact EDP)
    tracker.report(result.result.edp, result.result.edp)
    choices, fused = polish(space, result.choices, list(result.fused_idx), rounds=rounds,
                            samples=samples, seed=seed, tracker=tracker)
    out = finish(space, tracker, choices, fused, seed)
    if out.result.edp > result.result.edp:       # never worse than its input (repair noise)
        out = finish(space, tracker, result.choices, list(result.fused_idx), seed)
    if out.result.valid:
        tracker.best_edp = min(tracker.best_edp, out.result.edp)
    # where the stage ended (its budget may have run out inside a round, which reports at its
    # end only)
    tracker.report(out.result.edp, out.result.edp, check=False)
    out.schedule.meta.update(result.schedule.meta)
    out.schedule.meta.update({"edp_before_refinement": result.result.edp,
                              "refine_evaluations": tracker.evaluations,
                              "search_evaluations": result.evaluations})
    out.keep_search_stage(result)
    out.history = result.history + tracker.history
    out.evaluations = result.evaluations + tracker.evaluations
    out.cpu_s = result.cpu_s + tracker.cpu_elapsed
    out.wall_s = result.wall_s + tracker.elapsed
    return out
