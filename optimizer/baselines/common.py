"""What the sampling baselines share: one counted evaluation of a candidate, the penalised
objective, random fusion bits, and the bookkeeping of the best candidate seen."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from optimizer.search import SearchResult, Tracker, finish, score
from optimizer.space import SearchSpace, repair_fusion

PENALTY = 10.0          # objective units (log EDP) per unit of summed relative overflow


@dataclass
class Candidate:
    """One scored candidate: its choices [L, 8], the fused edges that can run fused, its
    EDP (pJ x cycles) and summed capacity violation."""

    choices: np.ndarray
    fused: list[int]
    edp: float
    violation: float

    @property
    def valid(self) -> bool:
        return self.violation <= 0.0

    def objective(self, penalty: float = PENALTY) -> float:
        return objective(self.edp, self.violation, penalty)


def objective(edp: float, violation: float, penalty: float = PENALTY) -> float:
    """log(EDP) + penalty x violation: the fitness every sampling baseline minimises."""
    return math.log(max(edp, 1e-300)) + penalty * violation


def evaluate(space: SearchSpace, tracker: Tracker, choices: np.ndarray,
             fused: Sequence[int] = ()) -> Candidate:
    """Score one candidate (L counted evaluations: one per layer).  Fusion bits whose tiles are not aligned
    (or whose fused group overflows the scratchpad) are dropped first, so a candidate is
    credited only for fusion that can really run."""
    choices = np.asarray(choices, dtype=np.int64)
    kept = repair_fusion(space, choices, list(fused)) if len(fused) else []
    edp, viol = score(space, choices, kept)
    tracker.evaluations += len(space.layers)
    return Candidate(choices.copy(), kept, edp, viol)


def random_fused(space: SearchSpace, rng: np.random.Generator, p: float = 0.5) -> list[int]:
    """Each fusable edge fused with probability p."""
    return [k for k in space.fusable_edges if rng.random() < p]


@dataclass
class Best:
    """The best valid candidate so far, and the least-violating one as a fallback."""

    valid: Candidate | None = None
    fallback: Candidate | None = None
    history: list[float] = field(default_factory=list)

    def offer(self, cand: Candidate, tracker: Tracker) -> None:
        if cand.valid:
            if self.valid is None or cand.edp < self.valid.edp:
                self.valid = cand
                tracker.best_edp = cand.edp
        elif self.fallback is None or (cand.violation, cand.edp) < (self.fallback.violation,
                                                                    self.fallback.edp):
            self.fallback = cand

    @property
    def answer(self) -> Candidate:
        out = self.valid or self.fallback
        if out is None:
            raise RuntimeError("no candidate was evaluated")
        return out


def finish_best(space: SearchSpace, tracker: Tracker, best: Best,
                seed: int) -> SearchResult:
    """Finish on the best valid candidate, or on the least-violating one made to fit."""
    from optimizer.space import repair
    ans = best.answer
    choices = ans.choices if ans.valid else repair(space, ans.choices)
    return finish(space, tracker, choices, ans.fused, seed)
