"""What every search method shares: the budget, progress reports, cancellation, the result,
and a fast scorer of candidate schedules.

A method is a function ``run(space, budget, seed=0, progress=None, cancel=None) -> SearchResult``
registered in :data:`METHODS` (``optimizer.methods``).  Every method's final answer is scored by
the exact evaluator (:func:`optimizer.costmodel.evaluate_schedule`) and is valid: a method that
ends with an invalid candidate repairs it (:func:`optimizer.space.repair`).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from optimizer.costmodel import (DTYPE, ScheduleResult, capacity_violations, evaluate_schedule,
                                 network_costs)
from optimizer.errors import OptimizationCancelled
from optimizer.space import SearchSpace, repair, repair_fusion


@dataclass
class Budget:
    """Stop after ``evaluations`` cost-model evaluations or ``seconds`` of wall time, whichever
    comes first (None: no limit of that kind; at least one must be set)."""

    evaluations: int | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.evaluations is None and self.seconds is None:
            raise ValueError("a budget needs evaluations or seconds")


@dataclass
class Progress:
    """One progress report (per step of a gradient method, per batch of a sampling method)."""

    method: str
    step: int
    evaluations: int
    elapsed_s: float
    loss: float               # the method's objective (penalised EDP for FADiff/DOSA)
    edp: float                # EDP of the current candidate (pJ x cycles)
    best_edp: float           # best valid EDP so far
    tau: float = math.nan     # Gumbel-Softmax temperature (FADiff)
    violation: float = 0.0    # summed constraint violation of the current candidate
    fused: float = math.nan   # mean fusion variable (FADiff)


ProgressFn = Callable[[Progress], None]
CancelFn = Callable[[], bool]


@dataclass
class SearchResult:
    method: str
    schedule: Any                     # optimizer.mapping.Schedule
    result: ScheduleResult            # exact evaluation of the schedule
    history: list[Progress] = field(default_factory=list)
    wall_s: float = 0.0
    evaluations: int = 0
    seed: int = 0


class Tracker:
    """Budget, progress and cancel bookkeeping for one run of a method."""

    def __init__(self, method: str, budget: Budget, progress: ProgressFn | None,
                 cancel: CancelFn | None) -> None:
        self.method, self.budget = method, budget
        self.progress_fn, self.cancel_fn = progress, cancel
        self.start = time.perf_counter()
        self.evaluations = 0
        self.step = 0
        self.best_edp = math.inf
        self.history: list[Progress] = []

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def exhausted(self) -> bool:
        b = self.budget
        return ((b.evaluations is not None and self.evaluations >= b.evaluations)
                or (b.seconds is not None and self.elapsed >= b.seconds))

    def check_cancel(self) -> None:
        if self.cancel_fn is not None and self.cancel_fn():
            raise OptimizationCancelled(f"{self.method}: cancelled after {self.step} steps")

    def report(self, loss: float, edp: float, **extra: Any) -> None:
        self.step += 1
        p = Progress(self.method, self.step, self.evaluations, self.elapsed, float(loss),
                     float(edp), float(self.best_edp), **extra)
        self.history.append(p)
        if self.progress_fn is not None:
            self.progress_fn(p)
        self.check_cancel()


def score(space: SearchSpace, choices: np.ndarray, fused: Sequence[int] = ()) -> tuple[float, float]:
    """(EDP, summed capacity violation) of integer choices ``[L, 8]`` with edges ``fused``
    (edge indices) — the fast path of the exact evaluator, for searches."""
    sigma = torch.zeros(len(space.graph.prod), dtype=DTYPE)
    if len(fused):
        sigma[list(fused)] = 1.0
    with torch.no_grad():
        nc = network_costs(space.batch, space.tensors(choices), space.hw, space.graph, sigma)
        viol = sum(float(v.sum()) for v in capacity_violations(nc.layer, space.hw).values())
    return float(nc.edp), viol


def finish(space: SearchSpace, tracker: Tracker, choices: np.ndarray, fused: Sequence[int],
           seed: int) -> SearchResult:
    """Repair the final candidate, build its schedule and score it with the exact evaluator."""
    choices = repair(space, np.asarray(choices, dtype=np.int64))
    fused = repair_fusion(space, choices, list(fused))
    sched = space.schedule(choices, fused, tracker.method)
    sched.meta.update({"seed": seed, "evaluations": tracker.evaluations,
                       "wall_s": round(tracker.elapsed, 3)})
    result = evaluate_schedule(space.net, sched, space.hw)
    return SearchResult(tracker.method, sched, result, tracker.history, tracker.elapsed,
                        tracker.evaluations, seed)
