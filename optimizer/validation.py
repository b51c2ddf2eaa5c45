"""Does the cost model's DRAM term rank schedules as the engine does?  ``cosim --validate K``.

K diverse valid schedules of a network — the closed loop's own (the best first), neighbours
of the best (a few layers re-drawn at random, fused edges touching them dropped) and random
valid ones — are scored by the model (with the DRAM term) and measured by the engine
(:func:`optimizer.cosim.cosimulate`).  Reported per memory: Kendall's tau-b of EDP, and the
median and worst ratios model / engine of the DRAM service time and the DRAM energy, for the
DRAM term as calibrated and after the loop's refit.  Schedules whose model DRAM traffic is
more than ``max_traffic`` x the best's are not drawn (they would cost the engine that much
more time); the loop's schedules were in the refit's data, the others were not (``source``).
"""
from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np

from optimizer.costmodel import evaluate_schedule
from optimizer.errors import MappingError
from optimizer.mapping import Schedule
from optimizer.space import SearchSpace, repair

log = logging.getLogger(__name__)


@dataclass
class ValidationPoint:
    source: str                      # "loop-<i>", "neighbour", "random"
    requests: int
    fused: int
    engine_edp: float
    engine_dram_cycles: float
    engine_dram_pj: float
    model_edp: float                 # refit DRAM term
    model_dram_cycles: float
    model_dram_pj: float
    model_edp_calibrated: float      # the DRAM term before any refit
    model_dram_cycles_calibrated: float
    model_dram_pj_calibrated: float


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's tau-b of two equally long sequences (ties counted as in tau-b)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    n = len(x)
    conc = disc = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
            if sx == 0 and sy == 0:
                continue
            if sx == 0:
                tx += 1
            elif sy == 0:
                ty += 1
            elif sx == sy:
                conc += 1
            else:
                disc += 1
    den = math.sqrt((conc + disc + tx) * (conc + disc + ty))
    return (conc - disc) / den if den else float("nan")


def _neighbour(space: SearchSpace, base: Schedule, rng: np.random.Generator,
               layers: int) -> Schedule:
    net = space.net
    rows = repair(space, space.random_choices(rng))
    pick = set(rng.choice(len(net.layers), size=min(layers, len(net.layers)),
                          replace=False).tolist())
    maps = dict(base.mappings)
    names = set()
    for i in pick:
        name = net.layers[i].name
        maps[name] = space.mapping(i, list(rows[i]))
        names.add(name)
    fused = [e for e in base.fused if e[0] not in names and e[1] not in names]
    return Schedule(net.name, maps, fused, "neighbour")


def candidates(space: SearchSpace, loop: Sequence[Schedule], k: int, seed: int = 0,
               max_traffic: float = 3.0, attempts: int = 200) -> list[tuple[str, Schedule]]:
    """Up to ``k`` distinct valid schedules: the loop's, then alternately neighbours of the
    best (loop[0]) and random ones, each within ``max_traffic`` x the best's DRAM bytes."""
    net, hw = space.net, space.hw
    rng = np.random.default_rng(seed)
    out: list[tuple[str, Schedule]] = []
    seen: list[dict[str, Any]] = []

    def add(source: str, s: Schedule) -> bool:
        key = s.to_json()["layers"] | {"#fused": sorted(map(list, s.fused))}
        if key in seen:
            return False
        seen.append(key)
        out.append((source, s))
        return True
    for i, s in enumerate(loop):
        if len(out) < k:
            add(f"loop-{i}", s)
    if not loop:
        raise ValueError("validation needs at least one schedule of the loop")
    best = loop[0]
    limit = max_traffic * evaluate_schedule(net, best, hw).dram_bytes
    n_layers = max(1, len(net.layers) // 6)
    tries = 0
    while len(out) < k and tries < attempts:
        tries += 1
        kind = "neighbour" if tries % 2 else "random"
        try:
            if kind == "neighbour":
                s = _neighbour(space, best, rng, int(rng.integers(1, n_layers + 1)))
            else:
                s = space.schedule(repair(space, space.random_choices(rng)), [], "random")
        except MappingError:
            continue
        res = evaluate_schedule(net, s, hw)
        if res.valid and res.dram_bytes <= limit:
            add(kind, s)
    if len(out) < k:
        log.warning("validation: only %d of %d schedules found within %.1fx the best's "
                    "traffic", len(out), k, max_traffic)
    return out


def validate(net: Any, hw: Any, memory: Any, dram_hw: Any, schedules: Sequence[tuple[str, Any]],
             *, layout: str = "nhwc", placement: str = "packed", acc_ghz: float = 1.0,
             measured: Sequence[tuple[Any, Any]] = (),
             progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Score every schedule both ways; the summary dict of ``cosim --validate``.  ``measured``
    holds (Schedule, CosimResult) pairs already simulated with the same memory, layout and
    placement (the loop's): their engine figures are reused, not simulated again."""
    from optimizer.cosim import _same, cosimulate
    from optimizer.dram_model import PARTS, DramAwareHardware, model_parts, scaled, unscaled
    calibrated = DramAwareHardware.of(hw, unscaled(dram_hw.dram))
    points: list[ValidationPoint] = []
    for n, (source, sched) in enumerate(schedules):
        cs = next((c for s, c in measured if _same(s, sched)), None)
        if progress is not None:
            progress(f"validation schedule {n + 1}/{len(schedules)} ({source}"
                     f"{', measured in the loop' if cs is not None else ''})")
        if cs is None:
            cs = cosimulate(net, sched, hw, memory, layout=layout, placement=placement,
                            acc_ghz=acc_ghz, result=evaluate_schedule(net, sched, hw))
        raw = model_parts(net, sched, dram_hw)
        fit = [scaled(p, dram_hw.dram) for p in raw]

        def energy(parts: list[dict[str, float]]) -> float:
            return sum(p[k] for p in parts for k in PARTS if k != "time")
        points.append(ValidationPoint(
            source=source, requests=cs.requests, fused=len(sched.fused),
            engine_edp=cs.engine_edp, engine_dram_cycles=cs.engine_dram_cycles,
            engine_dram_pj=cs.engine_dram_pj,
            model_edp=evaluate_schedule(net, sched, dram_hw).edp,
            model_dram_cycles=sum(p["time"] for p in fit), model_dram_pj=energy(fit),
            model_edp_calibrated=evaluate_schedule(net, sched, calibrated).edp,
            model_dram_cycles_calibrated=sum(p["time"] for p in raw),
            model_dram_pj_calibrated=energy(raw)))
    return summarise(points, memory.name)


def _ratios(model: Sequence[float], engine: Sequence[float]) -> dict[str, float]:
    r = np.array([m / e if e else math.nan for m, e in zip(model, engine)])
    r = r[np.isfinite(r)]
    if not len(r):
        return {"median": math.nan, "worst": math.nan}
    worst = r[int(np.argmax(np.abs(np.log(r))))]
    return {"median": float(np.median(r)), "worst": float(worst), "min": float(r.min()),
            "max": float(r.max())}


def summarise(points: Sequence[ValidationPoint], memory: str) -> dict[str, Any]:
    eng = [p.engine_edp for p in points]
    t = _ratios([p.model_dram_cycles for p in points], [p.engine_dram_cycles for p in points])
    e = _ratios([p.model_dram_pj for p in points], [p.engine_dram_pj for p in points])
    tc = _ratios([p.model_dram_cycles_calibrated for p in points],
                 [p.engine_dram_cycles for p in points])
    ec = _ratios([p.model_dram_pj_calibrated for p in points],
                 [p.engine_dram_pj for p in points])
    return {
        "memory": memory, "schedules": len(points),
        "kendall_tau_edp": kendall_tau([p.model_edp for p in points], eng),
        "dram_cycles_ratio_median": t["median"], "dram_energy_ratio_median": e["median"],
        "dram_cycles_ratio_worst": t["worst"], "dram_energy_ratio_worst": e["worst"],
        "calibrated": {"kendall_tau_edp": kendall_tau([p.model_edp_calibrated for p in points],
                                                      eng),
                       "dram_cycles_ratio_median": tc["median"],
                       "dram_energy_ratio_median": ec["median"],
                       "dram_cycles_ratio_worst": tc["worst"],
                       "dram_energy_ratio_worst": ec["worst"]},
        "points": [asdict(p) for p in points],
    }


__all__ = ["ValidationPoint", "candidates", "kendall_tau", "summarise", "validate"]
