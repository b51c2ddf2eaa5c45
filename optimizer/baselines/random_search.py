"""Random search: uniform random split/order choices and random fusion bits; the best valid
candidate wins (if none is valid, the least-violating one is made to fit)."""
from __future__ import annotations

import numpy as np

from optimizer.baselines.common import Best, evaluate, finish_best, random_fused
from optimizer.search import Budget, CancelFn, ProgressFn, SearchResult, Tracker
from optimizer.space import SearchSpace

METHOD = "random"
BATCH = 16          # candidates per progress report


def run(space: SearchSpace, budget: Budget, seed: int = 0, progress: ProgressFn | None = None,
        cancel: CancelFn | None = None) -> SearchResult:
    rng = np.random.default_rng(seed)
    tracker = Tracker(METHOD, budget, progress, cancel)
    tracker.check_cancel()
    best = Best()
    while not tracker.exhausted():
        batch = []
        for _ in range(BATCH):
            if tracker.exhausted():
                break
            cand = evaluate(space, tracker, space.random_choices(rng), random_fused(space, rng))
            best.offer(cand, tracker)
            batch.append(cand)
        cur = min(batch, key=lambda c: c.objective())
        tracker.report(cur.objective(), cur.edp, violation=cur.violation,
                       fused=len(cur.fused) / max(1, len(space.fusable_edges)))
    return finish_best(space, tracker, best, seed)
