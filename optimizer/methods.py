"""The registry of search methods and the one call the CLI and the GUI use.

``optimize(network, hw, method, budget, seed)`` builds the search space, runs the method on
its share of the budget, passes its result through the exact refinement
(:func:`optimizer.polish.refine`, the same stage for every method; ``refine=False`` skips it)
and returns the :class:`~optimizer.search.SearchResult` (always valid, scored by the exact
evaluator; ``raw`` holds the search's own result); :func:`schedule_json` turns it into the schedule file (``optimize --out``), and
:func:`result_json` does the same for any evaluated schedule (``evaluate --schedule``).
"""
from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any, Callable

from optimizer.costmodel import ScheduleResult
from optimizer.errors import OptimizerError
from optimizer.hardware import GemminiHardware, load_hardware
from optimizer.mapping import LEVELS
from optimizer.method_names import ALL_METHODS, REFERENCE_METHODS
from optimizer.search import Budget, CancelFn, ProgressFn, SearchResult
from optimizer.space import SearchSpace
from optimizer.timeline import build_timeline
from optimizer.workload import Network, load_network

log = logging.getLogger(__name__)

MethodFn = Callable[..., SearchResult]
TINY_TIME_BUDGET_S = 0.05       # a time budget below this is warned (the space's build alone)
HISTORY_POINTS = 200            # convergence points kept in a schedule file


def _lazy(module: str) -> MethodFn:
    def run(space: SearchSpace, budget: Budget, seed: int = 0,
            progress: ProgressFn | None = None, cancel: CancelFn | None = None
            ) -> SearchResult:
        import importlib
        return importlib.import_module(module).run(space, budget, seed, progress, cancel)
    run.__name__ = f"run_{module.rsplit('.', 1)[-1]}"
    return run


METHODS: dict[str, MethodFn] = {
    "fadiff": _lazy("optimizer.fadiff"),
    "random": _lazy("optimizer.baselines.random_search"),
    "ga": _lazy("optimizer.baselines.ga"),
    "bo": _lazy("optimizer.baselines.bo"),
    "dosa": _lazy("optimizer.baselines.dosa"),
}




def _refine_only(space: SearchSpace, budget: Budget, seed: int = 0,
                 progress: ProgressFn | None = None, cancel: CancelFn | None = None
                 ) -> SearchResult:
    """The comparison's reference row: no search.  Its "result" is the trivial schedule
    (every loop at DRAM, one PE, nothing fused; no evaluation counted), so in
    :func:`optimize` the refinement stage gets the whole budget, with the same accounting
    and seed as after any method: what a method's refined figure owes to the refinement."""
    from optimizer.search import Tracker, finish
    tracker = Tracker(REFERENCE_METHODS[0], budget, progress, cancel)
    return finish(space, tracker, space.minimal_choices(), [], seed)


#: Reference rows (not search methods; not offered by the GUI or ``optimize``).
REFERENCES: dict[str, MethodFn] = {REFERENCE_METHODS[0]: _refine_only}


class UnknownMethodError(OptimizerError):
    """A method name that is not registered (or not available yet)."""


def get_method(name: str) -> MethodFn:
    if name in REFERENCES:
        return REFERENCES[name]
    if name not in METHODS:
        if name in ALL_METHODS:
            raise UnknownMethodError(f"method '{name}' is not available in this build "
                                     f"(registered: {', '.join(sorted(METHODS))})")
        raise UnknownMethodError(f"unknown method '{name}': expected one of "
                                 f"{', '.join(sorted(METHODS))}")
    return METHODS[name]


REFINE_SHARE = 0.5             # of a run's budget, for the refinement stage
FINISH_RESERVE = 0.03          # of a time budget, kept for the final exact evaluations
MIN_STAGE = 1e-3               # seconds / evaluations a stage gets at the least


def _left(budget: Budget, t0: float, c0: float, evaluations: int, reserve: float) -> Budget:
    """What is left of ``budget`` for a run that started at wall ``t0`` / CPU ``c0`` and has
    spent ``evaluations``, less ``reserve`` of each time limit."""
    def rest(limit: float | None, used: float) -> float | None:
        return None if limit is None else max(MIN_STAGE, limit * (1 - reserve) - used)
    ev = None if budget.evaluations is None else max(1, budget.evaluations - evaluations)
    return budget.derive(ev, rest(budget.seconds, time.perf_counter() - t0),
                         rest(budget.cpu_seconds, time.process_time() - c0))


def optimize(network: Network | str | Path, hw: GemminiHardware | str | Path,
             method: str = "ga", budget: Budget | None = None, seed: int = 0,
             progress: ProgressFn | None = None, cancel: CancelFn | None = None,
             refine: bool = True, refine_share: float = REFINE_SHARE
             ) -> tuple[SearchResult, SearchSpace]:
    """Run ``method`` on ``network`` and ``hw`` (objects, names or files) within ``budget``
    (default: 50 000 layer-mapping evaluations): the search gets ``1 - refine_share`` of it,
    the refinement the rest (with ``refine=False`` the search gets all of it and its result is
    returned untouched).  Returns the result and the search space it ran on."""
    net = network if isinstance(network, Network) else load_network(network)
    hard = hw if isinstance(hw, GemminiHardware) else load_hardware(hw)
    run = get_method(method)
    budget = budget or Budget(evaluations=50_000)
    if budget.evaluations is not None and budget.evaluations < 2 * len(net.layers):
        # (one evaluation of every layer is the least a method does: --evaluations 1 gave
        # FADiff's start and 37 evaluations for the others, and nothing said so)
        log.warning("%s: a budget of %d layer-mapping evaluations is less than two of the "
                    "network's %d layers each: %s returns about its starting schedule, and "
                    "may use up to one evaluation of the network more", net.name,
                    budget.evaluations, len(net.layers), method)
    for what, t in (("CPU seconds", budget.cpu_seconds), ("seconds", budget.seconds)):
        if t is not None and t < TINY_TIME_BUDGET_S:
            log.warning("%s: a budget of %g %s is less than building the search space "
                        "takes: %s returns about its starting schedule", net.name, t, what,
                        method)
    t0, c0 = time.perf_counter(), time.process_time()
    space = SearchSpace.build(net, hard)
    # the budget covers the whole run: what building the space took, and a small reserve for
    # the final exact evaluations, come off the search's and the refinement's shares
    left = _left(budget, t0, c0, 0, FINISH_RESERVE)
    if refine:
        from optimizer.polish import refine as refine_stage
        result = run(space, left.share(1 - refine_share), seed, progress, cancel)
        rest = _left(budget, t0, c0, result.evaluations, FINISH_RESERVE)
        result = refine_stage(space, result, rest, seed, progress, cancel)
    else:
        result = run(space, left, seed, progress, cancel)
        result.keep_search_stage(result)
    result.schedule.meta["refined"] = refine
    result.wall_s = time.perf_counter() - t0
    result.cpu_s = time.process_time() - c0
    return result, space


def result_json(res: ScheduleResult, net: Network, hw: GemminiHardware, *, method: str = "",
                seed: int | None = None, wall_s: float | None = None,
                evaluations: int | None = None) -> dict[str, Any]:
    """The schedule file's content for an evaluated schedule (see :func:`schedule_json`)."""
    layers = []
    for lr in res.layers:
        layer = net.layers[net.index[lr.name]]
        m = lr.mapping
        notation = m.to_notation()
        layers.append({
            "name": lr.name, "kind": layer.kind, "dims": dict(layer.dims),
            "stride": layer.stride, "macs": lr.macs,
            "mapping": notation,
            "tiling": {"temporal": {lv: dict(m.temporal[k]) for k, lv in enumerate(LEVELS)},
                       "spatial": {"K_cols": m.spatial_k, "C_rows": m.spatial_c},
                       "summary": m.describe()},
            "loop_order": {lv: list(m.orders[k]) for k, lv in enumerate(LEVELS)},
            "fusion_group": lr.group,
            "energy_pj": lr.energy_pj, "latency_cycles": lr.cycles,
            "compute_cycles": lr.compute_cycles, "dma_cycles": lr.dram_cycles,
            "utilization": lr.utilization,
            "dram_bytes": lr.dram_reads + lr.dram_writes,
            "dram_read_bytes": lr.dram_reads, "dram_write_bytes": lr.dram_writes,
            "energy_breakdown_pj": dict(lr.energy_parts),
        })
    return {
        "network": net.name, "hardware": hw.name, "hardware_config": hw.to_dict(),
        "method": method, "seed": seed, "wall_s": wall_s, "evaluations": evaluations,
        "edp": res.edp, "edp_unit": "pJ x cycles",
        "edp_uj_cycles": res.edp * 1e-6, "edp_j_cycles": res.edp * 1e-12,
        "energy_pj": res.energy_pj, "latency_cycles": res.latency_cycles,
        "valid": res.valid, "problems": list(res.problems), "dram_bytes": res.dram_bytes,
        "fused_edges": [list(e) for e in res.fused], "groups": res.groups,
        "layers": layers,
        "timeline": [u.to_dict() for u in build_timeline(res, hw)],
    }


def schedule_json(result: SearchResult, space: SearchSpace) -> dict[str, Any]:
    """The schedule file of a search: top-level ``edp`` (pJ x cycles; also in µJ·cycles and
    J·cycles), ``energy_pj``, ``latency_cycles``, ``valid``, the run's facts, per-layer
    records (tiling in the reference notation, loop orders, fusion group, energy, latency,
    utilisation, DRAM bytes), the fused edges and groups, the timeline and the convergence
    history.  :func:`optimizer.mapping.load_schedule` reads it back."""
    out = result_json(result.result, space.net, space.hw, method=result.method,
                      seed=result.seed, wall_s=result.wall_s, evaluations=result.evaluations)
    out["cpu_s"] = result.cpu_s
    out["evaluations_unit"] = "layer-mapping evaluations"
    out["refined"] = bool(result.schedule.meta.get("refined", False))
    if result.raw is not None:
        out["raw_search"] = {"edp": result.raw.edp, "energy_pj": result.raw.energy_pj,
                             "latency_cycles": result.raw.latency_cycles,
                             "valid": result.raw.valid, "evaluations": result.raw_evaluations,
                             "fused_edges": [list(e) for e in result.raw.fused]}
    if result.post is not None and result.post is not result.raw:
        # the method's own post-processing (FADiff's archive), not in raw_search
        out["post_search"] = {"edp": result.post.edp, "valid": result.post.valid}
    hist = result.history
    stride = max(1, len(hist) // HISTORY_POINTS)
    out["history"] = [{"step": p.step, "evaluations": p.evaluations,
                       "elapsed_s": round(p.elapsed_s, 4), "loss": p.loss, "edp": p.edp,
                       "best_edp": p.best_edp if math.isfinite(p.best_edp) else None,
                       "violation": p.violation, "stage": p.stage}
                      for p in hist[::stride]]
    return out
