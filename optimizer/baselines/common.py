"""What the sampling baselines share: one counted evaluation of a candidate, the penalised
objective, random fusion bits, and the bookkeeping of the best candidate seen."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from optimizer.search import SearchResult, Tracker, finish, score
from optimizer.space import SearchSpace, align_edge, repair_fusion

PENALTY = 10.0          # objective units (log EDP) per unit of summed relative overflow
#: A fusion bit whose tiles are not aligned first aligns them (the nearest aligned splits,
#: :func:`~optimizer.space.align_edge`, as FADiff projects sigma's decision): without it a
#: random candidate's bits almost never survived (about 1 %) and random search, the GA and BO
#: ended with no fused edge, so they did not search the fused space FADiff does.  False: the
#: old rule (unaligned bits dropped), for the ablation.
ALIGN_FUSED = True


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
    """Score one candidate (L counted evaluations: one per layer; L more when its aligned
    form overflows a buffer and the candidate as sampled is scored too).  With
    :data:`ALIGN_FUSED`, the tiles of every fusion bit that is set are aligned first; fusion
    bits whose tiles are still not aligned (or whose fused group overflows the scratchpad) are
    dropped, so a candidate is credited only for fusion that can really run.  If the aligned
    candidate overflows a buffer, the one of the two (aligned, as sampled) with the better
    penalised objective is returned."""
    choices = np.asarray(choices, dtype=np.int64)
    want = [k for k in fused if bool(space.graph.fusable[k])]
    kept = repair_fusion(space, choices, want) if want else []
    if ALIGN_FUSED and len(kept) < len(want):
        aligned = choices
        for k in want:
            if k not in kept:
                aligned = align_edge(space, aligned, k)
        kept_a = repair_fusion(space, aligned, want)
        if len(kept_a) > len(kept):
            edp, viol = score(space, aligned, kept_a)
            tracker.evaluations += len(space.layers)
            cand = Candidate(aligned.copy(), kept_a, edp, viol)
            if cand.valid:
                return cand
            edp, viol = score(space, choices, kept)
            tracker.evaluations += len(space.layers)
            return min(cand, Candidate(choices.copy(), kept, edp, viol),
                       key=lambda c: c.objective())
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
