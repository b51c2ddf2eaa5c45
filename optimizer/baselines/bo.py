"""Bayesian optimisation with Optuna (pinned 5.0.0): per layer one parameter per gene (7 split
indices and the loop-order pair) and one per fusion bit; the objective is log(EDP) + penalty x
capacity violation.  The loop-order pair and the fusion bits are categorical; a split index
is an integer parameter over its split table, whose rows are ordered (by spatial factor, then
lexicographically by the DRAM, scratchpad, accumulator factors), so neighbouring indices are
related splits.  (Categorical parameters with thousands of choices make Optuna's TPE compare
and copy the choice lists on every trial: 0.5 s per trial after 1000 trials on ResNet18.)

The sampler is Optuna's TPE (tree-structured Parzen estimator, its default Bayesian method),
multivariate, seeded; the first trials are random, plus a few random schedules made to fit by
``repair`` (as the GA seeds its population).  Optuna's GPSampler is not offered: it needs
scipy, which is not a dependency of this project.  The study is driven with ask/tell so the
budget and the cancel flag are checked between trials.
"""
from __future__ import annotations

import logging

import numpy as np

from optimizer.baselines.common import Best, evaluate, finish_best
from optimizer.space import repair
from optimizer.search import Budget, CancelFn, ProgressFn, SearchResult, Tracker
from optimizer.space import SearchSpace

METHOD = "bo"
STARTUP_TRIALS = 16         # random trials before the model is used
REPORT_EVERY = 8            # trials per progress report


REPAIRED_SEEDS = 8          # repaired random schedules enqueued first


def _params(space: SearchSpace, choices: np.ndarray, fused: list[int]) -> dict[str, int]:
    out = {f"l{i}g{g}": int(choices[i, g]) for i, ls in enumerate(space.layers)
           for g, n in enumerate(ls.sizes()) if n > 1}
    out.update({f"e{k}": int(k in fused) for k in space.fusable_edges})
    return out


def run(space: SearchSpace, budget: Budget, seed: int = 0, progress: ProgressFn | None = None,
        cancel: CancelFn | None = None) -> SearchResult:
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    logging.getLogger("optuna").setLevel(logging.WARNING)
    tracker = Tracker(METHOD, budget, progress, cancel)
    tracker.check_cancel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=STARTUP_TRIALS,
                                             multivariate=True)
        study = optuna.create_study(direction="minimize", sampler=sampler)
    rng = np.random.default_rng(seed)
    for _ in range(REPAIRED_SEEDS):
        seed_choices = repair(space, space.random_choices(rng))
        study.enqueue_trial(_params(space, seed_choices, []))
        tracker.check_cancel()
    best = Best()
    edges = space.fusable_edges
    layer_sizes = [ls.sizes() for ls in space.layers]
    window: list[float] = []
    while not tracker.exhausted():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=optuna.exceptions.ExperimentalWarning)
            trial = study.ask()
            choices = np.zeros((len(space.layers), 8), dtype=np.int64)
            for i, sizes in enumerate(layer_sizes):
                for g, n in enumerate(sizes):
                    if n > 1:
                        name = f"l{i}g{g}"
                        choices[i, g] = (trial.suggest_int(name, 0, n - 1) if g < 7 else
                                         trial.suggest_categorical(name, list(range(n))))
            fused = [k for k in edges if trial.suggest_categorical(f"e{k}", [0, 1])]
        cand = evaluate(space, tracker, choices, fused)
        value = cand.objective()
        study.tell(trial, value)
        best.offer(cand, tracker)
        window.append(value)
        if len(window) >= REPORT_EVERY or tracker.exhausted():
            tracker.report(min(window), cand.edp, violation=cand.violation,
                           fused=len(cand.fused) / max(1, len(edges)))
            window = []
    return finish_best(space, tracker, best, seed)
