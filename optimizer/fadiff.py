"""FADiff: fusion-aware differentiable scheduling (our reconstruction; docs/optimizer.md).

Variables, per chain and per group of identical-shape layers (:meth:`SearchSpace.shape_groups`:
one decision serves every layer of the group): one Gumbel-Softmax over the pre-enumerated
splits of each loop dimension (:mod:`optimizer.space`: every choice is a perfect factorisation,
so the mapping-validity constraint holds by construction) and one over the 9 loop-order pairs;
per fusable producer->consumer edge a fusion logit beta, sigma = sigmoid(beta).

K chains (independent starts) live in one tensor: one forward pass scores K x 9 x L layer
mappings (every chain, every loop-order pair, every layer) and one backward pass serves them
all.

Forward pass: hard one-hot samples, straight-through; the relaxation is in log-factor space
(the factors are exp of the sample-weighted log split table, so the gradient with respect to an
option's weight is the first-order change of the loss if the layer switched to that option —
the cost is close to a power law of the factors, linear in logs).  Forward values are the exact
integers of the sampled schedule.  The loop-order sample mixes the 9 per-layer costs; the
fusion decision is a hard logistic (binary Gumbel) sample of sigma, straight-through, so every
chain's forward value is the exact EDP of one discrete schedule, fusion included.

Loss per chain: log(EDP) + lambda * (buffer-capacity overflow + fused-group capacity overflow
+ fused-tile alignment mismatch, all in log space), lambda raised while the chain's sample
violates a constraint and relaxed while it does not.  Adam; the learning rate (cosine) and the
Gumbel temperature (geometric) follow one progress clock, :meth:`Tracker.used` (the share of
the budget spent, whichever of evaluations / CPU seconds / wall seconds is set), so the anneal
completes within any budget.  At ``restarts`` points of the clock the worse half of the chains
restart from the better half (parameters and optimiser moments copied).

Candidates: every step the most promising chains' samples (their forward values are their
exact EDPs) and every ``decode_every`` steps the chains' most probable schedules (sigma > 0.5
fused) are projected onto the feasible set, DOSA-style: the tiles of each edge sigma fuses are
aligned to the nearest aligned splits, and an edge whose fused group cannot fit is switched
off in sigma itself (beta made negative), so sigma's hard decision is the candidate's fused
set.  The best feasible candidate is the result; its fusion is sigma's decision, never changed
afterwards (the refinement keeps the fused set fixed).  One chain restarts centred on the best
candidate at each restart point, so the projection feeds back into the descent.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import torch

from optimizer.adam import Adam
from optimizer.costmodel import (DTYPE, LayerCosts, MappingTensors, capacity_violations,
                                 combine, layer_costs)
from optimizer.search import (Budget, CancelFn, ProgressFn, SearchResult, Tracker,
                              batch_score, finish, score)
from optimizer.space import ORDER_PAIRS, SearchSpace, align_edge, repair, repair_fusion

NAME = "fadiff"
N_, K_, C_, P_, Q_ = 0, 1, 2, 3, 4
DEFAULT_STEPS = 200            # steps when no budget is given
FINISH_SHARE = 0.95            # of a time budget for the steps; the rest for the final answer


@dataclass
class FADiffSettings:
    chains: int = 1                 # K starts in one tensor (1: best on one CPU core)
    lr_start: float = 0.3
    lr_end: float = 0.01
    tau_start: float = 1.0
    tau_end: float = 0.05
    lambda_start: float = 1.0
    lambda_up: float = 1.05         # multiply while the chain's sample violates a constraint
    lambda_down: float = 0.98       # multiply while it does not
    lambda_max: float = 1e4
    beta_init: float = 0.0          # initial fusion logit (sigma 0.5: either way)
    align_weight: float = 0.1       # fused-tile misalignment (the projection aligns exactly)
    restarts: int = 3               # times the worse half restarts from the better half
    seed_best: bool = True          # ... and one chain restarts centred on the best found
    decode_every: int = 5           # score each chain's most probable schedule every N steps
    share_shapes: bool = True       # identical-shape layers share one decision
    log_relax: bool = True          # straight-through in log-factor space (False: linear)
    fusion: bool = True             # sigma variables (False: nothing fused)
    learn: bool = True              # False: lr 0 (sampling from the initial distribution)
    archive: int = 24               # per shape group, the (cycles, energy) Pareto front of
    #                                 the feasible layer mappings the steps scored (0: off)


class _Model:
    """The parameters of K chains and their differentiable forward pass."""

    def __init__(self, space: SearchSpace, chains: int, st: FADiffSettings,
                 gen: torch.Generator) -> None:
        self.space, self.st, self.K = space, st, chains
        L = len(space.layers)
        groups = space.shape_groups() if st.share_shapes else [[i] for i in range(L)]
        self.reps = [g[0] for g in groups]
        self.group_of = torch.zeros(L, dtype=torch.long)
        for gi, g in enumerate(groups):
            self.group_of[g] = gi
        tables, order_idx = space._stacked()
        tables = tables[self.reps]                                           # [G,7,W,5]
        self.tables = torch.tensor(tables, dtype=DTYPE)
        self.log_tables = torch.log(self.tables)
        width = tables.shape[2]
        sizes = np.array([[len(s.table) for s in space.layers[i].splits] for i in self.reps])
        self.mask = torch.tensor(np.arange(width)[None, None, :] < sizes[:, :, None])
        G = len(groups)
        self.logits = (0.01 * torch.randn(chains, G, 7, width, generator=gen, dtype=DTYPE))
        self.logits.requires_grad_(True)
        self.order_logits = torch.zeros(chains, G, len(ORDER_PAIRS), dtype=DTYPE,
                                        requires_grad=True)
        E = len(space.graph.prod)
        self.fusable = space.graph.fusable & torch.tensor(bool(st.fusion))
        self.beta = torch.full((chains, E), float(st.beta_init), dtype=DTYPE,
                               requires_grad=True)
        reps9 = len(ORDER_PAIRS)
        oi = torch.tensor(order_idx)                                         # [9,4,7]
        self.orders = oi[:, None, None].expand(reps9, chains, L, 4, 7).reshape(-1, 4, 7)
        self.lb = space.batch.tiled(reps9 * chains)
        self.L = L

    def params(self) -> list[torch.Tensor]:
        return [self.logits, self.order_logits, self.beta]

    @staticmethod
    def _sample(logits: torch.Tensor, tau: float, gen: torch.Generator,
                mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        u = torch.rand(logits.shape, generator=gen, dtype=DTYPE).clamp_(1e-12, 1 - 1e-12)
        z = (logits - torch.log(-torch.log(u))) / tau
        if mask is not None:
            z = z.masked_fill(~mask, -math.inf)
        soft = torch.softmax(z, -1)
        idx = soft.detach().argmax(-1)
        hard = torch.nn.functional.one_hot(idx, soft.shape[-1]).to(DTYPE)
        return hard - soft.detach() + soft, idx

    def _fusion_sample(self, tau: float, gen: torch.Generator) -> tuple[torch.Tensor,
                                                                        torch.Tensor]:
        u = torch.rand(self.beta.shape, generator=gen, dtype=DTYPE).clamp_(1e-12, 1 - 1e-12)
        z = (self.beta + torch.log(u) - torch.log1p(-u)) / tau
        soft = torch.sigmoid(z)
        hard = ((z.detach() > 0) & self.fusable).to(DTYPE)
        sig = hard - soft.detach() + soft
        return torch.where(self.fusable, sig, torch.zeros_like(sig)), hard.bool()

    def forward(self, tau: float, gen: torch.Generator):
        K, L = self.K, self.L
        y, idx = self._sample(self.logits, tau, gen, self.mask)             # [K,G,7,W]
        if self.st.log_relax:
            rows_log = torch.einsum("kgdw,gdwf->kgdf", y, self.log_tables)
            rows_log = rows_log[:, self.group_of]                            # [K,L,7,5]
            rows = torch.exp(rows_log)
        else:
            rows = torch.einsum("kgdw,gdwf->kgdf", y, self.tables)[:, self.group_of]
            rows_log = torch.log(rows)
        temporal = rows[..., :4].transpose(-1, -2)                           # [K,L,4,7]
        reps = len(ORDER_PAIRS)
        mt = MappingTensors(temporal[None].expand(reps, K, L, 4, 7).reshape(-1, 4, 7),
                            self.orders,
                            rows[:, :, K_, 4][None].expand(reps, K, L).reshape(-1),
                            rows[:, :, C_, 4][None].expand(reps, K, L).reshape(-1))
        c9 = layer_costs(self.lb, mt)
        yo, oidx = self._sample(self.order_logits, tau, gen, None)           # [K,G,9]
        yo = yo[:, self.group_of]                                            # [K,L,9]
        mixed = {}
        for f in fields(LayerCosts):
            v = getattr(c9, f.name).reshape(reps, K, L)
            mixed[f.name] = (v.permute(1, 2, 0) * yo).sum(-1)
        c = LayerCosts(**mixed)
        sig, hard = self._fusion_sample(tau, gen)
        nc = combine(c, self.space.batch, self.space.hw, self.space.graph, sig)
        choices = torch.cat([idx[:, self.group_of], oidx[:, self.group_of, None]], -1)
        self.last_c9 = c9
        return nc, c, rows_log[..., 0], sig, hard, choices.numpy()

    def penalties(self, c: LayerCosts, logd: torch.Tensor, sig: torch.Tensor):
        """Per chain [K]: buffer overflow, fused-pair overflow, fused-tile misalignment."""
        hw = self.space.hw
        v = capacity_violations(c, hw)
        cap = sum(torch.log1p(x).sum(-1) for x in v.values())
        g = self.space.graph
        if len(g.prod) == 0:
            zero = torch.zeros(self.K, dtype=DTYPE)
            return cap, zero, zero
        group = torch.relu((c.sp_used[:, g.prod] + c.sp_used[:, g.cons]) / hw.sp_capacity - 1)
        fuse_cap = (sig * torch.log1p(group)).sum(-1)
        chan = self.space.batch.in_chan[g.cons]
        lp, lc = logd[:, g.prod], logd[:, g.cons]                            # [K,E,7]
        mis = ((lp[..., [N_, P_, Q_]] - lc[..., [N_, P_, Q_]]) ** 2).sum(-1)
        mis = mis + lp[..., K_] ** 2 + lc.gather(2, chan[None, :, None].expand(
            self.K, -1, 1)).squeeze(2) ** 2
        # the misalignment pulls the tiles of the edges sigma fuses into line; it does not
        # push sigma itself (whether to fuse is the EDP gradient's decision)
        return cap, fuse_cap, (sig.detach() * mis).sum(-1)

    def modes(self) -> tuple[np.ndarray, np.ndarray]:
        """Each chain's most probable schedule [K,L,8] and fusion decision [K,E] (sigma>0.5)."""
        with torch.no_grad():
            idx = self.logits.masked_fill(~self.mask, -math.inf).argmax(-1)
            oidx = self.order_logits.argmax(-1)
            choices = torch.cat([idx[:, self.group_of], oidx[:, self.group_of, None]], -1)
            fused = (self.beta > 0) & self.fusable
        return choices.numpy(), fused.numpy()

    @torch.no_grad()
    def restart(self, opt: Adam, order: np.ndarray) -> None:
        """The worse half of the chains (by ``order``, best first) take the better half's
        parameters and optimiser moments."""
        half = self.K // 2
        good = torch.as_tensor(order[:half].copy())
        bad = torch.as_tensor(order[self.K - half:].copy())
        for p, m, v in zip(opt.params, opt.m, opt.v):
            p[bad] = p[good]
            m[bad] = m[good]
            v[bad] = v[good]

    @torch.no_grad()
    def seed_chain(self, opt: Adam, k: int, choices: np.ndarray, fused: list[int],
                   peak: float = 4.0) -> None:
        """Chain k restarts centred on a schedule (the best found so far): its choices get
        logit ``peak`` over the rest, its fused edges beta +peak/2, the others -peak/2."""
        rows = torch.as_tensor(choices[self.reps])                          # [G,8]
        self.logits[k] = 0.0
        self.logits[k].scatter_(-1, rows[:, :7, None], peak)
        self.order_logits[k] = 0.0
        self.order_logits[k, torch.arange(len(self.reps)), rows[:, 7]] = peak
        self.beta[k] = -peak / 2
        if fused:
            self.beta[k, fused] = peak / 2
        for m, v in zip(opt.m, opt.v):
            m[k] = 0.0
            v[k] = 0.0


class _Archive:
    """Per group of identical-shape layers, the Pareto front (group cycles, group energy) of
    the feasible mappings the gradient steps have already scored: every step scores 9 loop
    orders x K chains x L layers exactly (the forward pass of the sampled schedules), and
    without fusion a layer's cycles and energy depend on its own mapping only.  At the end
    the best schedule's unfused groups are re-assembled from the fronts (the exact network
    EDP, (C - c_g + c'_g) x (E - e_g + e'_g), decides), then scored exactly: the decoding of
    what the search saw, at no extra layer evaluations but the final check."""

    def __init__(self, space: SearchSpace, groups: list[list[int]], cap: int) -> None:
        self.space, self.cap = space, cap
        L = len(space.layers)
        self.groups = groups
        self.gid = torch.zeros(L, dtype=torch.long)
        for gi, g in enumerate(groups):
            self.gid[g] = gi
        self.rows: list[np.ndarray] = [np.zeros((0, 8), np.int64) for _ in groups]
        self.cost: list[np.ndarray] = [np.zeros((0, 2)) for _ in groups]

    @torch.no_grad()
    def add(self, c9: LayerCosts, choices: np.ndarray) -> None:
        """``c9``: the step's per-layer costs, [9, K, L] flattened order-major; ``choices``
        [K, L, 8] the chains' samples (the loop-order entry is replaced by each of the 9)."""
        space = self.space
        L = len(space.layers)
        reps = len(ORDER_PAIRS)
        K = choices.shape[0]
        cr = LayerCosts(**{f.name: getattr(c9, f.name).reshape(reps * K, L)
                           for f in fields(LayerCosts)})
        nc = combine(cr, space.batch, space.hw, space.graph, None)
        ok = torch.ones(reps * K, L, dtype=torch.bool)
        for v in capacity_violations(cr, space.hw).values():
            ok &= v == 0
        G = len(self.groups)
        gc = torch.zeros(reps * K, G, dtype=DTYPE).index_add_(1, self.gid, nc.cycles)
        ge = torch.zeros(reps * K, G, dtype=DTYPE).index_add_(1, self.gid, nc.energy)
        gok = torch.ones(reps * K, G, dtype=torch.long).index_add_(
            1, self.gid, (~ok).long()) == 1
        gc, ge, gok = gc.numpy(), ge.numpy(), gok.numpy()
        for gi, g in enumerate(self.groups):
            sel = np.flatnonzero(gok[:, gi])
            if not len(sel):
                continue
            o, k = sel // K, sel % K
            rows = choices[k, g[0]].copy()
            rows[:, 7] = o
            self._merge(gi, rows, np.stack([gc[sel, gi], ge[sel, gi]], 1))

    def _merge(self, gi: int, rows: np.ndarray, cost: np.ndarray) -> None:
        front = self.cost[gi]
        if len(front):          # drop the new points the front already covers (most of them)
            covered = ((front[None, :, 0] <= cost[:, None, 0])
                       & (front[None, :, 1] <= cost[:, None, 1])).any(1)
            rows, cost = rows[~covered], cost[~covered]
            if not len(rows):
                return
        cost, first = np.unique(cost, axis=0, return_index=True)
        rows = rows[first]
        rows = np.concatenate([self.rows[gi], rows])
        cost = np.concatenate([front, cost])
        # non-dominated: no other point at most as slow and as costly (and better in one)
        le = (cost[None, :, 0] <= cost[:, None, 0]) & (cost[None, :, 1] <= cost[:, None, 1])
        lt = (cost[None, :, 0] < cost[:, None, 0]) | (cost[None, :, 1] < cost[:, None, 1])
        keep = ~(le & lt).any(1)
        rows, cost = rows[keep], cost[keep]
        if len(rows) > self.cap:                  # the ones with the lowest cycles x energy
            top = np.argsort(cost[:, 0] * cost[:, 1])[:self.cap]
            rows, cost = rows[top], cost[top]
        self.rows[gi], self.cost[gi] = rows, cost

    @torch.no_grad()
    def assemble(self, choices: np.ndarray, fused: list[int]) -> np.ndarray | None:
        """``choices`` with every group that no fused edge touches moved to the front point
        that lowers the network EDP most (two passes); None when nothing moved."""
        space = self.space
        sigma = torch.zeros(len(space.graph.prod), dtype=DTYPE)
        if fused:
            sigma[fused] = 1.0
        nc = combine(layer_costs(space.batch, space.tensors(choices)), space.batch,
                     space.hw, space.graph, sigma)
        cyc, en = nc.cycles.numpy().copy(), nc.energy.numpy().copy()
        C, E = float(cyc.sum()), float(en.sum())
        touched = {int(x) for k in fused for x in (space.graph.prod[k], space.graph.cons[k])}
        out = choices.copy()
        moved = False
        for _ in range(2):
            for gi, g in enumerate(self.groups):
                if not len(self.rows[gi]) or touched.intersection(g):
                    continue
                cur_c, cur_e = float(cyc[g].sum()), float(en[g].sum())
                a = self.cost[gi]
                edp = (C - cur_c + a[:, 0]) * (E - cur_e + a[:, 1])
                j = int(np.argmin(edp))
                if edp[j] < C * E * (1 - 1e-9):
                    out[g] = self.rows[gi][j]
                    C, E = C - cur_c + a[j, 0], E - cur_e + a[j, 1]
                    cyc[g] = a[j, 0] / len(g)
                    en[g] = a[j, 1] / len(g)
                    moved = True
        return out if moved else None


def _chains_for(space: SearchSpace, budget: Budget, want: int) -> int:
    """Chains that leave at least 16 steps within an evaluation budget."""
    if budget.evaluations is None:
        return want
    per_chain_step = len(ORDER_PAIRS) * len(space.layers)
    return int(max(1, min(want, budget.evaluations // (16 * per_chain_step))))


def _less(limit: float | None) -> float | None:
    return None if limit is None else FINISH_SHARE * limit


def run(space: SearchSpace, budget: Budget | None = None, seed: int = 0,
        progress: ProgressFn | None = None, cancel: CancelFn | None = None,
        settings: FADiffSettings | None = None) -> SearchResult:
    """Optimise the schedule of ``space``'s network by gradient descent (see the module
    docstring) until ``budget`` is spent."""
    st = settings or FADiffSettings()
    L = len(space.layers)
    if budget is None:
        budget = Budget(evaluations=DEFAULT_STEPS * st.chains * len(ORDER_PAIRS) * L)
    # keep a little of a time budget for the final repair and exact evaluation
    tracker = Tracker(NAME, budget.derive(budget.evaluations, _less(budget.seconds),
                                          _less(budget.cpu_seconds)), progress, cancel)
    tracker.check_cancel()
    gen = torch.Generator().manual_seed(seed)
    K = _chains_for(space, budget, st.chains)
    model = _Model(space, K, st, gen)
    opt = Adam(model.params(), lr=st.lr_start)
    lam = torch.full((K,), st.lambda_start, dtype=DTYPE)
    step_cost = len(ORDER_PAIRS) * K * L
    best: tuple[float, np.ndarray, list[int]] | None = None
    chain_best = np.full(K, np.inf)
    next_restart = 1
    fusable = space.graph.fusable.numpy()

    members = [g for g in (space.shape_groups() if st.share_shapes else []) if len(g) > 1]
    archive = (_Archive(space, space.shape_groups() if st.share_shapes
                        else [[i] for i in range(L)], st.archive) if st.archive else None)
    group_of = {i: g for g in members for i in g}

    def _project(choices: np.ndarray, want: list[int]) -> np.ndarray | None:
        """Align the tiles of the fused edges ``want``; with shared decisions a changed row
        is copied to the layer's whole shape group (twice round, as a copy can undo an
        earlier alignment); None when the group members still differ."""
        cand = choices
        for _ in range(2 if group_of else 1):
            for e in want:
                new = align_edge(space, cand, e)
                for i in np.flatnonzero((new != cand).any(1)):
                    new[group_of.get(int(i), [int(i)])] = new[i]
                cand = new
        if any(len({tuple(cand[i]) for i in g}) > 1 for g in members):
            return None
        return cand

    stats = {"tried": 0, "tried_fused": 0, "unshared": 0, "fusion_dropped": 0,
             "overflow": 0}

    def consider(choices: np.ndarray, hard: np.ndarray, edp_hint: np.ndarray,
                 feasible: np.ndarray, tries: int = 2) -> None:
        """Offer the chains' discrete schedules, most promising first (``tries`` of them at
        most).  Sigma's hard decision is projected onto what can run: the tiles of each fused
        edge are aligned (:func:`~optimizer.space.align_edge`, the nearest aligned splits;
        the sample as it was if that overflows a buffer), edges whose group still does not
        fit are dropped and switched off in sigma.  Accepted when every buffer fits."""
        nonlocal best
        for k in np.argsort(edp_hint):
            if tries <= 0:
                return
            if not feasible[k] or (best is not None and edp_hint[k] >= best[0] * (1 - 1e-12)
                                   and not hard[k].any()):
                continue
            left = tracker.evaluations_left()
            if left is not None and left < L:
                return
            tries -= 1
            want = [int(e) for e in np.flatnonzero(hard[k] & fusable)]
            stats["tried"] += 1
            stats["tried_fused"] += bool(want)
            cand = _project(choices[k], want)
            if cand is None:
                stats["unshared"] += 1
                continue                    # no shared mapping aligns every fused edge
            fused = sorted(repair_fusion(space, cand, want)) if want else []
            edp, viol = score(space, cand, fused)
            tracker.evaluations += L
            if viol > 0 and want:
                # the alignment overflowed a buffer: shrink the tiles that overflow
                # (repair), align again, and keep what then runs fused
                stats["overflow"] += 1
                again = _project(repair(space, cand), want)
                if again is not None:
                    cand = again
                    fused = sorted(repair_fusion(space, cand, want))
                    edp, viol = score(space, cand, fused)
                    tracker.evaluations += L
                if viol > 0:        # still over: the sample as it was
                    cand = choices[k]
                    fused = sorted(repair_fusion(space, cand, want))
                    edp, viol = score(space, cand, fused)
                    tracker.evaluations += L
            if fused != want:
                # the projection of sigma's decision onto what can run fused: the edges
                # that cannot are switched off in sigma too (beta < 0), so the decision the
                # model holds is the candidate's fused set
                stats["fusion_dropped"] += 1
                dropped = [e for e in want if e not in fused]
                with torch.no_grad():
                    model.beta[k, dropped] = -model.beta[k, dropped].abs() - 0.5
            if viol == 0:
                chain_best[k] = min(chain_best[k], edp)
                if best is None or edp < best[0]:
                    best = (edp, cand.copy(), list(fused))
                    tracker.best_edp = edp

    step = 0
    while True:
        left = tracker.evaluations_left()
        if tracker.exhausted() or (left is not None and left < step_cost):
            break
        frac = tracker.used()
        tau = st.tau_start * (st.tau_end / st.tau_start) ** frac
        nc, c, logd, sig, hard, choices = model.forward(tau, gen)
        cap, fuse_cap, align = model.penalties(c, logd, sig)
        violation = cap + fuse_cap
        loss = torch.log(nc.edp) + lam * violation + st.align_weight * align
        opt.zero_grad()
        loss.sum().backward()
        opt.lr = (st.lr_end + 0.5 * (st.lr_start - st.lr_end) * (1 + math.cos(math.pi * frac))
                  if st.learn else 0.0)
        opt.step()
        tracker.evaluations += step_cost
        v = violation.detach()
        lam = torch.where(v > 0, (lam * st.lambda_up).clamp(max=st.lambda_max),
                          (lam * st.lambda_down).clamp(min=st.lambda_start))
        edp = nc.edp.detach().numpy()
        if archive is not None:
            archive.add(model.last_c9, choices)
        consider(choices, hard.numpy(), edp, (cap.detach() == 0).numpy())
        if step % st.decode_every == 0:
            mc, mf = model.modes()
            hint, _ = batch_score(space, mc, mf)
            tracker.evaluations += K * L
            consider(mc, mf, hint, np.ones(K, dtype=bool))
        step += 1
        if st.restarts and K > 1 and frac >= next_restart / (st.restarts + 1):
            next_restart += 1
            rank = np.lexsort((loss.detach().numpy(), chain_best))
            model.restart(opt, rank)
            if best is not None and st.seed_best:
                model.seed_chain(opt, int(rank[-1]), best[1], best[2])
        i_best = int(np.argmin(edp))
        tracker.report(float(loss.detach().min()), float(edp[i_best]), tau=tau,
                       violation=float(v[i_best]),
                       fused=float(torch.sigmoid(model.beta.detach()).mean())
                       if model.beta.numel() else math.nan)
    before_archive = best
    if archive is not None and best is not None:
        cand = archive.assemble(best[1], best[2])
        if cand is not None:
            edp_a, viol_a = score(space, cand, best[2])
            tracker.evaluations += L
            stats["archive_gain"] = best[0] / edp_a if viol_a == 0 else 0.0
            if viol_a == 0 and edp_a < best[0] and \
                    sorted(repair_fusion(space, cand, best[2])) == sorted(best[2]):
                best = (edp_a, cand, best[2])
    sigma_hard: list[int]
    if best is None:            # nothing feasible seen: the first chain's mode, repaired
        mc, mf = model.modes()
        final, sigma_hard = mc[0], [int(e) for e in np.flatnonzero(mf[0])]
        fused = sigma_hard
    else:
        final, fused = best[1], best[2]
        sigma_hard = list(fused)
    result = finish(space, tracker, final, fused, seed)
    if before_archive is not None and before_archive is not best:
        # the search's own result without the archive (a decoding no baseline gets): the
        # comparison's raw figure; scored exactly, as every method's final answer is
        result.search_only = finish(space, tracker, before_archive[1], before_archive[2],
                                    seed).result
    result.schedule.meta.update({"chains": K, "steps": step, "sigma_hard_edges": sigma_hard,
                                 "shared_shapes": st.share_shapes, "candidates": stats})
    return result
