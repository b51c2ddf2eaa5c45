"""A genetic algorithm over the schedule genome: per layer 8 choice indices (7 split indices,
one loop-order pair) plus one bit per fusable edge.

Tournament selection, uniform crossover per layer (a child takes each layer's 8 genes from one
parent, each fusion bit from either), mutation (resample a gene, or step a split index to its
neighbour in the split table; a fusion bit switched on may also align the two layers' tiles so
the edge can really run fused), elitism.  Fitness = log(EDP) + penalty x capacity violation.
Half the initial population is random individuals made to fit by
:func:`~optimizer.space.repair`.
"""
from __future__ import annotations

import numpy as np

from optimizer.baselines.common import (Best, Candidate, evaluate, finish_best,
                                        random_fused)
from optimizer.search import Budget, CancelFn, ProgressFn, SearchResult, Tracker
from optimizer.space import SearchSpace, align_edge, repair

METHOD = "ga"
POPULATION = 32
ELITE = 2
TOURNAMENT = 3
REPAIRED_SEEDS = POPULATION // 2     # initial individuals made to fit by repair()
P_MUTATE_LAYER = 0.25       # probability that a child's layer is mutated (then one gene)
P_NEIGHBOUR = 0.5           # a split mutation steps to a neighbouring index this often
P_FLIP = 0.1                # per fusion bit
P_ALIGN = 0.5               # a bit switched on also aligns the two layers' tiles this often


def _tournament(pop: list[Candidate], rng: np.random.Generator) -> Candidate:
    picks = rng.choice(len(pop), size=min(TOURNAMENT, len(pop)), replace=False)
    return min((pop[i] for i in picks), key=lambda c: c.objective())


def _crossover(a: Candidate, b: Candidate, edges: list[int],
               rng: np.random.Generator) -> tuple[np.ndarray, list[int]]:
    take_a = rng.random(len(a.choices)) < 0.5
    child = np.where(take_a[:, None], a.choices, b.choices)
    bits_a, bits_b = set(a.fused), set(b.fused)
    fused = [k for k in edges if (k in bits_a if rng.random() < 0.5 else k in bits_b)]
    return child, fused


def _mutate(space: SearchSpace, choices: np.ndarray, fused: list[int],
            rng: np.random.Generator) -> tuple[np.ndarray, list[int]]:
    choices = choices.copy()
    for i, ls in enumerate(space.layers):
        if rng.random() >= P_MUTATE_LAYER:
            continue
        sizes = ls.sizes()
        gene = int(rng.integers(len(sizes)))
        n = sizes[gene]
        if n <= 1:
            continue
        if gene < 7 and rng.random() < P_NEIGHBOUR:
            choices[i, gene] = int(np.clip(choices[i, gene] + rng.choice((-1, 1)), 0, n - 1))
        else:
            choices[i, gene] = int(rng.integers(n))
    bits = set(fused)
    for k in space.fusable_edges:
        if rng.random() < P_FLIP:
            bits ^= {k}
            if k in bits and rng.random() < P_ALIGN:
                choices = align_edge(space, choices, k)
    return choices, sorted(bits)


def run(space: SearchSpace, budget: Budget, seed: int = 0, progress: ProgressFn | None = None,
        cancel: CancelFn | None = None) -> SearchResult:
    rng = np.random.default_rng(seed)
    tracker = Tracker(METHOD, budget, progress, cancel)
    tracker.check_cancel()
    best = Best()
    edges = space.fusable_edges
    pop: list[Candidate] = []
    for j in range(POPULATION):
        if tracker.exhausted() and pop:
            break
        choices = space.random_choices(rng)
        if j < REPAIRED_SEEDS:
            choices = repair(space, choices)
            tracker.check_cancel()
        cand = evaluate(space, tracker, choices, random_fused(space, rng))
        best.offer(cand, tracker)
        pop.append(cand)
    tracker.report(min(c.objective() for c in pop), best.answer.edp,
                   violation=min(c.violation for c in pop))
    while not tracker.exhausted():
        pop.sort(key=lambda c: c.objective())
        nxt = pop[:ELITE]
        while len(nxt) < POPULATION and not tracker.exhausted():
            a, b = _tournament(pop, rng), _tournament(pop, rng)
            child, fused = _crossover(a, b, edges, rng)
            child, fused = _mutate(space, child, fused, rng)
            cand = evaluate(space, tracker, child, fused)
            best.offer(cand, tracker)
            nxt.append(cand)
        pop = nxt
        top = min(pop, key=lambda c: c.objective())
        tracker.report(top.objective(), top.edp, violation=top.violation,
                       fused=len(top.fused) / max(1, len(edges)))
    return finish_best(space, tracker, best, seed)
