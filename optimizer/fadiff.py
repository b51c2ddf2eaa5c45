"""FADiff: fusion-aware differentiable scheduling (our reconstruction; docs/optimizer.md).

Variables, per layer: one Gumbel-Softmax over the pre-enumerated splits of each loop
dimension (:mod:`optimizer.space`: every choice is a perfect factorisation, so the
mapping-validity constraint holds by construction) and one over the 9 loop-order pairs; per
fusable producer->consumer edge a fusion variable sigma = sigmoid(beta) in [0, 1].

Forward pass: hard one-hot samples (straight-through: the factors are exact integers, so the
cost model computes exact counts of the sampled schedule), the per-layer costs of all 9 order
pairs mixed by the order sample, then the network's fusion, cycles and energy.

Loss: log(EDP) + lambda * (buffer-capacity overflow + fused-group capacity overflow + fused-tile
alignment mismatch), with lambda raised while the sample violates a constraint and relaxed
while it does not.  log(EDP) has the same minimiser as EDP and keeps the gradient's scale
independent of the network (1e10 .. 1e24 pJ x cycles).  Adam with a cosine learning rate
0.1 -> 1e-4, gradient clipping, Gumbel temperature annealed 1.0 -> 0.1.

Decoding: the best feasible schedule seen (the most probable choices, checked every few steps,
and every sampled candidate that was feasible), repaired if a buffer overflows, fused edges
kept where sigma > 0.5 and the tiles align and fit; then an exact local refinement
(:mod:`optimizer.polish`: per-layer sampled jumps and coordinate descent on the exact model,
fusion toggles); scored by the exact evaluator.  ``FADiffSettings(refine=False)`` gives the
gradient phase alone (the ablation in benchmarks/RESULTS.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import torch

from optimizer.adam import Adam, clip_grad_norm, cosine_lr
from optimizer.costmodel import (DTYPE, LayerCosts, MappingTensors,
                                 capacity_violations, combine, layer_costs)
from optimizer.search import Budget, CancelFn, ProgressFn, SearchResult, Tracker, finish, score
from optimizer.polish import polish
from optimizer.space import ORDER_PAIRS, SearchSpace, repair, repair_fusion

NAME = "fadiff"
N_, K_, C_, P_, Q_ = 0, 1, 2, 3, 4


@dataclass
class FADiffSettings:
    steps: int = 200
    lr_start: float = 0.1
    lr_end: float = 1e-4
    tau_start: float = 1.0
    tau_end: float = 0.1
    lambda_start: float = 1.0
    lambda_up: float = 1.02         # multiply while the sample violates a constraint
    lambda_down: float = 0.99       # multiply while it does not
    lambda_max: float = 1e4
    clip: float = 5.0
    check_every: int = 10           # decode + score the argmax schedule every N steps
    refine: bool = True             # exact local refinement of the decoded schedule
    refine_rounds: int = 3
    refine_samples: int = 512       # random mappings tried per layer per round
    gradient_share: float = 0.5     # of a time/evaluation budget, for the gradient phase


class _Model:
    """The parameters and the differentiable forward pass."""

    def __init__(self, space: SearchSpace, gen: torch.Generator) -> None:
        self.space = space
        L = len(space.layers)
        tables, order_idx = space._stacked()
        self.tables = torch.tensor(tables, dtype=DTYPE)                     # [L,7,W,5]
        width = tables.shape[2]
        sizes = np.array([[len(s.table) for s in ls.splits] for ls in space.layers])
        self.mask = torch.tensor(np.arange(width)[None, None, :] < sizes[:, :, None])
        self.logits = (0.01 * torch.randn(L, 7, width, generator=gen, dtype=DTYPE))
        self.logits.requires_grad_(True)
        self.order_logits = torch.zeros(L, len(ORDER_PAIRS), dtype=DTYPE, requires_grad=True)
        E = len(space.graph.prod)
        self.beta = torch.zeros(E, dtype=DTYPE, requires_grad=True)
        self.order_idx = torch.tensor(order_idx)                             # [9,4,7]
        # the batch replicated once per order pair: one layer_costs call covers all 9
        self.lb9 = space.batch.tiled(len(ORDER_PAIRS))
        self.orders9 = self.order_idx.repeat_interleave(L, 0)                # [9L,4,7]
        self.fusable = space.graph.fusable

    def params(self) -> list[torch.Tensor]:
        return [self.logits, self.order_logits, self.beta]

    def _sample(self, logits: torch.Tensor, tau: float, gen: torch.Generator,
                mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        u = torch.rand(logits.shape, generator=gen, dtype=DTYPE).clamp_(1e-12, 1 - 1e-12)
        z = (logits - torch.log(-torch.log(u))) / tau
        if mask is not None:
            z = z.masked_fill(~mask, -math.inf)
        soft = torch.softmax(z, -1)
        idx = soft.detach().argmax(-1)
        hard = torch.nn.functional.one_hot(idx, soft.shape[-1]).to(DTYPE)
        return hard - soft.detach() + soft, idx

    def forward(self, tau: float, gen: torch.Generator):
        y, idx = self._sample(self.logits, tau, gen, self.mask)             # [L,7,W]
        rows = torch.einsum("ldw,ldwk->ldk", y, self.tables)                 # [L,7,5]
        temporal = rows[:, :, :4].transpose(1, 2)                            # [L,4,7]
        L = temporal.shape[0]
        reps = len(ORDER_PAIRS)
        mt9 = MappingTensors(temporal.repeat(reps, 1, 1), self.orders9,
                             rows[:, 1, 4].repeat(reps), rows[:, 2, 4].repeat(reps))
        c9 = layer_costs(self.lb9, mt9)
        yo, oidx = self._sample(self.order_logits, tau, gen, None)           # [L,9]
        mixed = {}
        for f in fields(LayerCosts):
            v = getattr(c9, f.name).reshape(reps, L)
            mixed[f.name] = (v * yo.T).sum(0)
        c = LayerCosts(**mixed)
        sigma = torch.sigmoid(self.beta)
        nc = combine(c, self.space.batch, self.space.hw, self.space.graph, sigma)
        choices = torch.cat([idx, oidx[:, None]], 1).numpy()
        return nc, c, temporal, sigma, choices

    def penalties(self, c: LayerCosts, temporal: torch.Tensor, sigma: torch.Tensor):
        hw = self.space.hw
        # overflow in log space: scale-free (a 1e6x overflow early in the run does not
        # swamp the EDP term) and zero exactly when the buffer fits
        v = capacity_violations(c, hw)
        cap = sum(torch.log1p(x).sum() for x in v.values())
        g = self.space.graph
        if len(g.prod) == 0:
            zero = torch.zeros((), dtype=DTYPE)
            return cap, zero, zero
        s = torch.where(self.fusable, sigma, torch.zeros_like(sigma))
        group = torch.relu((c.sp_used[g.prod] + c.sp_used[g.cons]) / hw.sp_capacity - 1)
        fuse_cap = (s * torch.log1p(group)).sum()
        logd = torch.log(temporal[:, 0, :])                                  # DRAM factors
        chan = self.space.batch.in_chan[g.cons]
        mis = ((logd[g.prod][:, [N_, P_, Q_]] - logd[g.cons][:, [N_, P_, Q_]]) ** 2).sum(1)
        mis = mis + logd[g.prod, K_] ** 2 + logd[g.cons].gather(1, chan[:, None]).squeeze(1) ** 2
        align = (s * mis).sum()
        return cap, fuse_cap, align

    def argmax_choices(self) -> np.ndarray:
        with torch.no_grad():
            masked = self.logits.masked_fill(~self.mask, -math.inf)
            idx = masked.argmax(-1)
            oidx = self.order_logits.argmax(-1)
        return torch.cat([idx, oidx[:, None]], 1).numpy()

    def fused_edges(self) -> list[int]:
        with torch.no_grad():
            s = torch.sigmoid(self.beta)
        return [k for k in range(len(s)) if bool(self.fusable[k]) and float(s[k]) > 0.5]


def run(space: SearchSpace, budget: Budget | None = None, seed: int = 0,
        progress: ProgressFn | None = None, cancel: CancelFn | None = None,
        settings: FADiffSettings | None = None) -> SearchResult:
    """Optimise the schedule of ``space``'s network by gradient descent (see the module
    docstring).  ``budget`` caps evaluations (one per step) or seconds; the schedule of
    ``settings.steps`` anneals fully within it."""
    st = settings or FADiffSettings()
    if budget is None:
        budget = Budget(evaluations=10 ** 12)          # the step count alone limits the run
    steps = st.steps if budget.evaluations is None else min(st.steps, budget.evaluations)
    # keep a little of a time budget for the final repair and exact evaluation
    tracker = Tracker(NAME, budget if budget.seconds is None else
                      Budget(budget.evaluations, 0.95 * budget.seconds), progress, cancel)
    gen = torch.Generator().manual_seed(seed)
    model = _Model(space, gen)
    opt = Adam(model.params(), lr=st.lr_start)
    lam = st.lambda_start
    best: tuple[float, np.ndarray, list[int]] | None = None

    def consider(choices: np.ndarray, fused: list[int]) -> None:
        nonlocal best
        if tracker.evaluations_left() == 0:
            return
        fused = repair_fusion(space, choices, fused) if fused else []
        edp, viol = score(space, choices, fused)
        tracker.evaluations += 1
        if viol == 0 and (best is None or edp < best[0]):
            best = (edp, choices.copy(), fused)
            tracker.best_edp = edp

    for step in range(steps):
        frac = step / max(1, steps - 1)
        # within a budget, the gradient phase takes its share and anneals fully within it;
        # the refinement gets the rest
        share = st.gradient_share if st.refine else 1.0
        if budget.seconds is not None and step > 0:
            frac = max(frac, tracker.elapsed / (share * budget.seconds))
        if budget.evaluations is not None:      # decoding checks use evaluations too
            frac = max(frac, tracker.evaluations / max(1, share * budget.evaluations - 1))
        last = frac >= 1.0
        frac = min(frac, 1.0)
        tau = st.tau_start * (st.tau_end / st.tau_start) ** frac
        nc, c, temporal, sigma, choices = model.forward(tau, gen)
        cap, fuse_cap, align = model.penalties(c, temporal, sigma)
        violation = cap + fuse_cap + align
        loss = torch.log(nc.edp) + lam * violation
        loss_value = float(loss.detach())
        opt.zero_grad()
        loss.backward()
        clip_grad_norm(model.params(), st.clip)
        opt.lr = cosine_lr(step, steps, st.lr_start, st.lr_end)
        opt.step()
        tracker.evaluations += 1
        v = float(violation.detach())
        lam = min(st.lambda_max, lam * st.lambda_up) if v > 0 else \
            max(st.lambda_start, lam * st.lambda_down)
        if float(cap.detach()) == 0:
            s_now = sigma.detach()
            consider(choices, [k for k in range(len(s_now)) if float(s_now[k]) > 0.5])
        if step % st.check_every == 0 or step == steps - 1 or frac >= 1.0:
            consider(model.argmax_choices(), model.fused_edges())
        tracker.report(loss_value, float(nc.edp.detach()), tau=tau, violation=v,
                       fused=float(sigma.detach().mean()) if len(sigma) else math.nan)
        if last or tracker.exhausted():
            break
    if best is None:
        final, fused = model.argmax_choices(), model.fused_edges()
    else:
        final, fused = best[1], best[2]
    final = repair(space, final)
    fused = repair_fusion(space, final, fused)
    gradient_edp = score(space, final, fused)[0]
    if st.refine:
        final, fused = polish(space, final, fused, rounds=st.refine_rounds,
                              samples=st.refine_samples, seed=seed, tracker=tracker)
    result = finish(space, tracker, final, fused, seed)
    result.schedule.meta["edp_before_refinement"] = gradient_edp
    return result
