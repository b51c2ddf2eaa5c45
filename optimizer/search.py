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

from optimizer.costmodel import (DTYPE, ScheduleResult, batch_layer_costs, capacity_violations,
                                 combine, evaluate_schedule, network_costs)
from optimizer.errors import OptimizationCancelled
from optimizer.space import SearchSpace, repair, repair_fusion


@dataclass
class Budget:
    """Stop after ``evaluations`` layer-mapping evaluations, ``cpu_seconds`` of this process's
    CPU time or ``seconds`` of wall time, whichever comes first (None: no limit of that kind;
    at least one must be set).  Comparisons use ``cpu_seconds`` or ``evaluations``: wall time
    moves with the machine's load.

    One evaluation is one layer scored under one mapping, for every method alike: a whole
    candidate schedule of an L-layer network costs L, a FADiff step over K chains and the 9
    loop-order pairs costs 9 K L, one refinement candidate for one layer costs 1."""

    evaluations: int | None = None
    seconds: float | None = None
    cpu_seconds: float | None = None
    # asked between steps: True ends the run as if the budget were spent (the best candidate
    # is kept, repaired and scored) -- the GUI's "stop and keep the best"; every budget derived
    # from this one (a stage's share, what is left) shares it
    stop: Callable[[], bool] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.evaluations is None and self.seconds is None and self.cpu_seconds is None:
            raise ValueError("a budget needs evaluations, cpu_seconds or seconds")
        for name in ("evaluations", "seconds", "cpu_seconds"):
            v = getattr(self, name)
            if v is not None and not (v > 0 and math.isfinite(v)):
                raise ValueError(f"budget {name} must be a positive finite number, got {v!r}")

    def share(self, fraction: float) -> "Budget":
        """This budget scaled by ``fraction`` (0 < fraction <= 1), every limit alike: the part
        of a run's budget one stage (the search, the refinement) gets."""
        if not 0 < fraction <= 1:
            raise ValueError(f"a budget share must be in (0, 1], got {fraction!r}")
        ev = None if self.evaluations is None else max(1, int(self.evaluations * fraction))
        return self.derive(ev, None if self.seconds is None else self.seconds * fraction,
                           None if self.cpu_seconds is None else self.cpu_seconds * fraction)

    def derive(self, evaluations: int | None, seconds: float | None,
               cpu_seconds: float | None) -> "Budget":
        """A budget with these limits that shares this one's ``stop``."""
        return Budget(evaluations, seconds, cpu_seconds, stop=self.stop)

    def stopped(self) -> bool:
        return self.stop is not None and bool(self.stop())

    def to_dict(self) -> dict[str, Any]:
        return {"evaluations": self.evaluations, "cpu_seconds": self.cpu_seconds,
                "seconds": self.seconds}


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
    stage: str = "search"     # "search", or "refinement" (the exact stage after any method)


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
    choices: np.ndarray | None = None         # the integer choices [L, 8] of ``schedule``
    fused_idx: list[int] = field(default_factory=list)   # its fused edges (edge indices)
    cpu_s: float = 0.0                        # process CPU seconds the run took
    raw: ScheduleResult | None = None         # the search's own result, before refinement
    raw_evaluations: int = 0                  # evaluations of the search stage
    # the search's result before a step of the method's own that no other method gets
    # (FADiff's layer-wise archive); None: the method has none, or it changed nothing.  The
    # comparison's "raw" figure is this one, like for like
    search_only: ScheduleResult | None = None
    # what went into the refinement: the method's result after its own post-processing
    post: ScheduleResult | None = None

    def keep_search_stage(self, searched: "SearchResult") -> None:
        """Record ``searched`` (a method's run, before any refinement) as this result's
        search stage: ``raw`` its own result (before the method's post-processing, where it
        has one), ``post`` what it handed on, and its evaluations."""
        self.raw = searched.search_only if searched.search_only is not None else searched.result
        self.post, self.raw_evaluations = searched.result, searched.evaluations


class Tracker:
    """Budget, progress and cancel bookkeeping for one run of a method."""

    def __init__(self, method: str, budget: Budget, progress: ProgressFn | None,
                 cancel: CancelFn | None, after: "SearchResult | None" = None) -> None:
        """``after``: the earlier stage's result when this tracker counts a later stage (the
        refinement): its reports then go on from that stage's step, evaluations and time,
        so a run's progress is one curve (the budget still counts this stage alone)."""
        self.method, self.budget = method, budget
        self.progress_fn, self.cancel_fn = progress, cancel
        self.start = time.perf_counter()
        self.cpu_start = time.process_time()
        self.evaluations = 0
        self.step = 0
        self.best_edp = math.inf
        self.history: list[Progress] = []
        self.stage = "search" if after is None else "refinement"
        last = after.history[-1] if after is not None and after.history else None
        self._before = ((last.step if last else 0, after.evaluations, after.wall_s)
                        if after is not None else (0, 0, 0.0))

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    @property
    def cpu_elapsed(self) -> float:
        """CPU seconds this process has spent since the run started (all threads)."""
        return time.process_time() - self.cpu_start

    def used(self) -> float:
        """The share of the budget spent, 0..1 (the largest over the limits that are set):
        one progress clock for every schedule a method anneals."""
        b, parts = self.budget, [0.0]
        if b.stopped():
            return 1.0
        if b.evaluations is not None:
            parts.append(self.evaluations / b.evaluations)
        if b.seconds is not None:
            parts.append(self.elapsed / b.seconds)
        if b.cpu_seconds is not None:
            parts.append(self.cpu_elapsed / b.cpu_seconds)
        return min(1.0, max(parts))

    def exhausted(self) -> bool:
        return self.used() >= 1.0

    def evaluations_left(self) -> int | None:
        """Evaluations left in the budget (None: no evaluation limit)."""
        if self.budget.evaluations is None:
            return None
        return max(0, self.budget.evaluations - self.evaluations)

    def check_cancel(self) -> None:
        if self.cancel_fn is not None and self.cancel_fn():
            raise OptimizationCancelled(f"{self.method}: cancelled after {self.step} steps")

    def report(self, loss: float, edp: float, check: bool = True, **extra: Any) -> None:
        """Record (and pass on) one progress report; then honour a cancel unless ``check`` is
        False (a report of finished work)."""
        self.step += 1
        steps, evaluations, seconds = self._before
        p = Progress(self.method, steps + self.step, evaluations + self.evaluations,
                     seconds + self.elapsed, float(loss), float(edp), float(self.best_edp),
                     stage=self.stage, **extra)
        self.history.append(p)
        if self.progress_fn is not None:
            self.progress_fn(p)
        if check:
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


def batch_score(space: SearchSpace, choices: np.ndarray, fused: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """(EDP [B], violation [B]) of a batch of candidates: integer choices ``[B, L, 8]`` and
    fused-edge masks ``[B, E]`` (bool).  The violation sums the buffer overflows and, for fused
    edges, the pair's joint scratchpad overflow and tile misalignment (0: feasible)."""
    choices = np.asarray(choices, dtype=np.int64)
    B = choices.shape[0]
    E = len(space.graph.prod)
    sigma = torch.zeros(B, E, dtype=DTYPE)
    if fused is not None and E:
        sigma = torch.from_numpy(np.asarray(fused, dtype=np.float64))
    mt = space.tensors(choices)
    with torch.no_grad():
        c = batch_layer_costs(space.batch, mt, B)
        nc = combine(c, space.batch, space.hw, space.graph, sigma)
        viol = sum(v.sum(-1) for v in capacity_violations(c, space.hw).values())
        if E and fused is not None:
            g = space.graph
            pair = torch.relu((c.sp_used[:, g.prod] + c.sp_used[:, g.cons])
                              / space.hw.sp_capacity - 1)
            dram = mt.temporal[:, 0, :].reshape(B, -1, 7)
            chan = space.batch.in_chan[g.cons]
            mis = (dram[:, g.prod][..., [0, 3, 4]] != dram[:, g.cons][..., [0, 3, 4]]).any(-1)
            mis |= dram[:, g.prod, 1] != 1
            mis |= dram[:, g.cons].gather(2, chan[None, :, None].expand(B, -1, 1)).squeeze(2) != 1
            viol = viol + (sigma * (pair + mis.to(DTYPE))).sum(-1)
    return nc.edp.numpy(), viol.numpy()


def finish(space: SearchSpace, tracker: Tracker, choices: np.ndarray, fused: Sequence[int],
           seed: int) -> SearchResult:
    """Repair the final candidate, build its schedule and score it with the exact evaluator."""
    choices = repair(space, np.asarray(choices, dtype=np.int64))
    fused = repair_fusion(space, choices, list(fused))
    sched = space.schedule(choices, fused, tracker.method)
    sched.meta.update({"seed": seed, "evaluations": tracker.evaluations,
                       "wall_s": round(tracker.elapsed, 3)})
    result = evaluate_schedule(space.net, sched, space.hw, space.graph.halo)
    return SearchResult(tracker.method, sched, result, tracker.history, tracker.elapsed,
                        tracker.evaluations, seed, choices=choices, fused_idx=list(fused),
                        cpu_s=tracker.cpu_elapsed)
