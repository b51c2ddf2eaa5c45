"""DOSA-style gradient search over the mapping only (no fusion), after Hong et al., "DOSA:
Differentiable Model-Based One-Loop Search for DNN Accelerators" (MICRO 2023).

Per layer and loop dimension the variables are continuous log-factors at the scratchpad,
accumulator and register levels and the log spatial factor (K across PE columns, C across PE
rows); the DRAM factor is the complement (dimension / product of the others), as in DOSA.
Only the factors the search space allows are free (registers: N, P, Q; spatial: K, C).  The
loss is ``log(EDP) + |log(EDP)| x w x penalty`` where the penalty sums the relative buffer
overflows of the cost model (:func:`optimizer.costmodel.capacity_violations`) and the
log-distance below 1 of any factor (a DRAM factor below 1 means the inner factors overshoot
the dimension) or above the array size of a spatial factor.  The cost model is the project's
own, evaluated on real-valued factors, and optimised with Adam.

Loop orders are not differentiable: each start begins with its random schedule's orders; at
every rounding (every ``ROUND_EVERY`` steps and at the end of a start) every factor is snapped
to the nearest candidate (in log space) of the space's split tables, each layer takes the best
of the 9 loop-order pairs for the rounded factors (first-order effect on the network EDP), and
the descent continues with those orders (DOSA likewise re-derives loop orders from the current
factors).  Several random starts (random schedules made to fit by
:func:`~optimizer.space.repair`, as DOSA starts from valid mappings) run
within the budget; the best rounded schedule is finished by :func:`optimizer.search.finish`.
Evaluations counted (layer-mapping evaluations, as for every method): L per descent step, L
per order pair tried and L per rounded candidate.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from optimizer.baselines.common import Best, evaluate, finish_best
from optimizer.adam import Adam
from optimizer.space import repair
from optimizer.costmodel import DTYPE, MappingTensors, capacity_violations, network_costs
from optimizer.search import Budget, CancelFn, ProgressFn, SearchResult, Tracker
from optimizer.space import ORDER_PAIRS, SearchSpace
from optimizer.workload import DIMS

METHOD = "dosa"
STEPS_PER_START = 300
ROUND_EVERY = 50
LR = 0.05
PENALTY_WEIGHT = 1.0
ROUND_COST = len(ORDER_PAIRS) + 2       # network evaluations a rounding may use (+repair)
SP, ACC, REG, SPAT = range(4)          # the free log-factors per (layer, dim)
_K, _C = DIMS.index("K"), DIMS.index("C")


def _masks(space: SearchSpace) -> torch.Tensor:
    """[L, 7, 4] 1.0 where a log-factor is free (present in the space's split tables)."""
    L = len(space.layers)
    mask = torch.zeros(L, 7, 4, dtype=DTYPE)
    for i, ls in enumerate(space.layers):
        for d, s in enumerate(ls.splits):
            # a level is free when some candidate split uses a factor > 1 there
            used = (s.table[:, 1:] > 1).any(0)          # sp, acc, reg, spatial
            mask[i, d] = torch.tensor(used.astype(np.float64))
    return mask


def _logs_of(space: SearchSpace, choices: np.ndarray) -> torch.Tensor:
    """The log-factors [L, 7, 4] of integer choices."""
    L = len(space.layers)
    x = np.zeros((L, 7, 4))
    for i, ls in enumerate(space.layers):
        for d, s in enumerate(ls.splits):
            x[i, d] = np.log(s.table[choices[i, d], 1:].astype(np.float64))
    return torch.tensor(x, dtype=DTYPE)


class _Relaxed:
    """The continuous mapping of one start: log-factors, masks, fixed orders."""

    def __init__(self, space: SearchSpace, x0: torch.Tensor, order_pairs: np.ndarray) -> None:
        self.space = space
        self.mask = _masks(space)
        self.log_dims = torch.log(space.batch.dims)                 # [L, 7]
        self.x = (x0 * self.mask).clone().requires_grad_(True)
        self.set_orders(order_pairs)
        self.log_cols = math.log(space.hw.cols)
        self.log_rows = math.log(space.hw.rows)

    def set_orders(self, order_pairs: np.ndarray) -> None:
        """Continue the descent with these loop-order pairs (indices into ORDER_PAIRS)."""
        _, order_idx = self.space._stacked()
        self.orders = torch.from_numpy(order_idx[order_pairs].copy())

    def parts(self) -> tuple[torch.Tensor, torch.Tensor]:
        xm = self.x * self.mask
        dram = self.log_dims - xm.sum(-1)                           # [L, 7]
        return xm, dram

    def tensors(self) -> MappingTensors:
        xm, dram = self.parts()
        logs = torch.stack([dram, xm[..., SP], xm[..., ACC], xm[..., REG]], 1)   # [L, 4, 7]
        return MappingTensors(torch.exp(logs), self.orders, torch.exp(xm[:, _K, SPAT]),
                              torch.exp(xm[:, _C, SPAT]))

    def loss(self) -> tuple[torch.Tensor, float, float]:
        """(loss, EDP, penalty) of the current continuous point."""
        sp = self.space
        nc = network_costs(sp.batch, self.tensors(), sp.hw, sp.graph,
                           torch.zeros(len(sp.graph.prod), dtype=DTYPE))
        relu = torch.nn.functional.relu
        xm, dram = self.parts()
        pen = sum(v.sum() for v in capacity_violations(nc.layer, sp.hw).values())
        pen = pen + relu(-dram).sum() + relu(-xm).sum()
        pen = pen + relu(xm[:, _K, SPAT] - self.log_cols).sum()
        pen = pen + relu(xm[:, _C, SPAT] - self.log_rows).sum()
        obj = torch.log(nc.edp)
        loss = obj + obj.detach().abs() * PENALTY_WEIGHT * pen
        return loss, float(nc.edp.detach()), float(pen.detach())

    def nearest_choices(self) -> np.ndarray:
        """Snap every (layer, dim) to the nearest split of the space's tables (log space)."""
        with torch.no_grad():
            xm, dram = self.parts()
            full = torch.cat([dram[..., None], xm], -1).numpy()         # [L, 7, 5]
        out = np.zeros((len(self.space.layers), 8), dtype=np.int64)
        for i, ls in enumerate(self.space.layers):
            for d, s in enumerate(ls.splits):
                dist = ((np.log(s.table.astype(np.float64)) - full[i, d]) ** 2).sum(1)
                out[i, d] = int(np.argmin(dist))
        return out


def best_orders(space: SearchSpace, tracker: Tracker, choices: np.ndarray) -> np.ndarray:
    """Per layer the loop-order pair (of the 9) that lowers the network EDP most, to first
    order: minimise E_total x cycles_i + C_total x energy_i.  Counts one evaluation per pair."""
    sigma = torch.zeros(len(space.graph.prod), dtype=DTYPE)
    cyc, en = [], []
    with torch.no_grad():
        for o in range(len(ORDER_PAIRS)):
            trial = choices.copy()
            trial[:, 7] = o
            nc = network_costs(space.batch, space.tensors(trial), space.hw, space.graph, sigma)
            tracker.evaluations += len(space.layers)
            cyc.append(nc.cycles.numpy())
            en.append(nc.energy.numpy())
    cyc_a, en_a = np.array(cyc), np.array(en)                         # [9, L]
    L = len(space.layers)
    cur_c = cyc_a[choices[:, 7], np.arange(L)].sum()
    cur_e = en_a[choices[:, 7], np.arange(L)].sum()
    out = choices.copy()
    out[:, 7] = np.argmin(cur_e * cyc_a + cur_c * en_a, axis=0)
    return out


def run(space: SearchSpace, budget: Budget, seed: int = 0, progress: ProgressFn | None = None,
        cancel: CancelFn | None = None) -> SearchResult:
    rng = np.random.default_rng(seed)
    tracker = Tracker(METHOD, budget, progress, cancel)
    tracker.check_cancel()
    best = Best()
    steps = STEPS_PER_START
    if budget.evaluations is not None:      # at least two starts when the budget allows
        steps = max(4, min(STEPS_PER_START, budget.evaluations // (3 * len(space.layers))))
    while not tracker.exhausted():
        init = repair(space, space.random_choices(rng))
        tracker.check_cancel()
        if _left(space, tracker) <= ROUND_COST:        # no room for a descent: offer the start
            best.offer(evaluate(space, tracker, init), tracker)
            break
        relaxed = _Relaxed(space, _logs_of(space, init), init[:, 7])
        opt = Adam([relaxed.x], LR)
        for step in range(1, steps + 1):
            relaxed.x.grad = None
            loss, edp, pen = relaxed.loss()
            loss.backward()
            opt.step()
            tracker.evaluations += len(space.layers)
            tracker.report(float(loss.detach()), edp, violation=pen)
            last = _left(space, tracker) <= ROUND_COST or tracker.exhausted()
            if step % ROUND_EVERY == 0 or step == steps or last:
                relaxed.set_orders(_round(space, tracker, relaxed, best))
            if last:
                break
    return finish_best(space, tracker, best, seed)


def _left(space: SearchSpace, tracker: Tracker) -> float:
    """Whole-network evaluations left in the budget (infinite for a time-only budget)."""
    n = tracker.budget.evaluations
    return math.inf if n is None else (n - tracker.evaluations) / len(space.layers)


def _round(space: SearchSpace, tracker: Tracker, relaxed: _Relaxed, best: Best) -> np.ndarray:
    """Round the continuous point to a schedule of the space and offer it (made to fit by
    the repair when it overflows a buffer); returns the order pairs chosen per layer."""
    choices = best_orders(space, tracker, relaxed.nearest_choices())
    cand = evaluate(space, tracker, choices)
    if not cand.valid:
        cand = evaluate(space, tracker, repair(space, choices))
    best.offer(cand, tracker)
    return choices[:, 7]
