"""Compare search methods on networks under one budget: every method gets the same budget,
evaluator and refinement stage; per (network, method) the mean EDP over the seeds and its
spread, for the raw search and after the refinement (the two columns).

EDP is (sum of layer cycles) x (sum of layer energies) in pJ x cycles at the stated batch.
"""
from __future__ import annotations

import logging
import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from optimizer.batching import with_batch
from optimizer.errors import OptimizerError
from optimizer.hardware import GemminiHardware, load_hardware
from optimizer.methods import get_method, optimize
from optimizer.search import Budget
from optimizer.workload import NETWORKS, load_network

log = logging.getLogger(__name__)
COLUMNS = ("raw", "refined")


@dataclass
class RunRecord:
    network: str
    method: str
    seed: int
    edp: float                  # pJ x cycles, the run's final answer (refined unless off)
    energy_pj: float
    latency_cycles: float
    valid: bool
    wall_s: float
    evaluations: int            # layer-mapping evaluations, search + refinement
    fused_edges: int
    raw_edp: float = math.nan   # the search's own result (before the refinement)
    raw_valid: bool = True
    raw_evaluations: int = 0
    cpu_s: float = 0.0
    refined: bool = True

    def value(self, column: str) -> float:
        return self.raw_edp if column == "raw" else self.edp


@dataclass
class Comparison:
    hardware: str
    budget: dict[str, Any]
    networks: list[str]
    methods: list[str]
    seeds: list[int]
    runs: list[RunRecord] = field(default_factory=list)
    batch: int = 1
    refine: bool = True

    def _vals(self, network: str, method: str, column: str = "refined") -> list[float]:
        return [r.value(column) for r in self.runs if r.network == network
                and r.method == method]

    def mean_edp(self, network: str, method: str, column: str = "refined") -> float:
        vals = self._vals(network, method, column)
        return sum(vals) / len(vals) if vals else math.nan

    def spread(self, network: str, method: str, column: str = "refined") -> float:
        """Sample standard deviation over the seeds relative to the mean; nan with fewer
        than two seeds (no spread measured: it read 0 %, as if every seed agreed)."""
        vals = self._vals(network, method, column)
        if len(vals) < 2:
            return math.nan
        return statistics.stdev(vals) / (sum(vals) / len(vals))

    def wall(self, method: str) -> float:
        return sum(r.wall_s for r in self.runs if r.method == method)

    def cpu(self, method: str) -> float:
        return sum(r.cpu_s for r in self.runs if r.method == method)

    def average(self, method: str, column: str = "refined") -> float:
        """Arithmetic mean over the networks of the (seed-averaged) EDP."""
        vals = [self.mean_edp(n, method, column) for n in self.networks]
        return sum(vals) / len(vals)

    def geomean_ratio(self, method: str, baseline: str, column: str = "refined",
                      base_column: str | None = None) -> float:
        """Geometric mean over the networks of mean EDP(method) / mean EDP(baseline)."""
        base_column = base_column or column
        logs = [math.log(self.mean_edp(n, method, column)
                         / self.mean_edp(n, baseline, base_column)) for n in self.networks]
        return math.exp(sum(logs) / len(logs))

    def columns(self) -> tuple[str, ...]:
        return COLUMNS if self.refine else ("raw",)

    def to_json(self, complete: bool = True) -> dict[str, Any]:
        """The table as JSON (nan, e.g. a spread over one seed or a network not run yet by
        an interrupted comparison, as null); ``complete`` False: the runs finished so far."""
        cols = self.columns()
        return _nulls({
                "complete": complete,
                "hardware": self.hardware, "budget": self.budget, "networks": self.networks,
                "methods": self.methods, "seeds": self.seeds, "batch": self.batch,
                "refine": self.refine, "edp_unit": "pJ x cycles",
                "edp_definition": "(sum of layer cycles) x (sum of layer energies)",
                "average_edp": {m: self.average(m, cols[-1]) for m in self.methods},
                "average_edp_raw": {m: self.average(m, "raw") for m in self.methods},
                "wall_s": {m: self.wall(m) for m in self.methods},
                "cpu_s": {m: self.cpu(m) for m in self.methods},
                "all_valid": all(r.valid for r in self.runs),
                "per_network": {n: {m: {c: {"mean": self.mean_edp(n, m, c),
                                            "rel_sd": self.spread(n, m, c)} for c in cols}
                                    for m in self.methods} for n in self.networks},
                "runs": [asdict(r) for r in self.runs]})


def _nulls(x: Any) -> Any:
    """x with every nan float replaced by None (JSON has no NaN)."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _nulls(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nulls(v) for v in x]
    return x


def run_comparison(hw: GemminiHardware | str, networks: Sequence[str] = NETWORKS,
                   methods: Sequence[str] = ("random", "ga", "bo", "dosa"),
                   budget: Budget | None = None, seeds: Sequence[int] = (0,),
                   on_run: Callable[[RunRecord], None] | None = None, refine: bool = True,
                   batch: int = 1,
                   on_progress: Callable[[Comparison], None] | None = None) -> Comparison:
    """Every method on every network with the same budget, seeds and refinement stage.
    ``on_progress(comparison so far)`` after every run (e.g. to keep a partial table)."""
    hard = hw if isinstance(hw, GemminiHardware) else load_hardware(hw)
    budget = budget or Budget(cpu_seconds=5.0)
    for m in methods:
        get_method(m)                       # unknown methods fail before any run
    nets = [with_batch(load_network(n), batch) for n in networks]
    # (a network, method or seed given twice ran twice: a duplicate column or row, a 0 %
    # spread from identical runs, a network weighted twice in the average)
    for what, names in (("network", [n.name for n in nets]), ("method", list(methods)),
                        ("seed", [str(x) for x in seeds])):
        twice = sorted({x for x in names if names.count(x) > 1})
        if twice:
            raise OptimizerError(f"compare: {what} {', '.join(twice)} given more than once")
    comp = Comparison(hard.name, budget.to_dict(), [n.name for n in nets], list(methods),
                      list(seeds), batch=batch, refine=refine)
    for net in nets:
        for m in methods:
            for seed in seeds:
                res, _ = optimize(net, hard, m, budget, seed, refine=refine)
                raw = res.raw if res.raw is not None else res.result
                rec = RunRecord(net.name, m, seed, res.result.edp, res.result.energy_pj,
                                res.result.latency_cycles, res.result.valid, res.wall_s,
                                res.evaluations, len(res.result.fused), raw.edp, raw.valid,
                                res.raw_evaluations, res.cpu_s, refine)
                log.debug("%s %s seed %d: EDP %.4g", net.name, m, seed, rec.edp)
                comp.runs.append(rec)
                if on_run is not None:
                    on_run(rec)
                if on_progress is not None:
                    on_progress(comp)
    return comp


def _pct(spread: float) -> str:
    """A relative spread as ' 12%' (n/a: fewer than two seeds)."""
    return "n/a" if math.isnan(spread) else f"{spread * 100:3.0f}%"


def format_table(comp: Comparison) -> str:
    """Mean EDP (pJ x cycles) and relative spread per network and method, both columns;
    geometric-mean ratios; CPU time per method."""
    ms = comp.methods
    width = max([len("geomean/random")] + [len(n) for n in comp.networks])
    lines = [f"EDP (pJ x cycles, batch {comp.batch}) on {comp.hardware}, budget "
             f"{_budget_text(comp.budget)} per run, seeds {', '.join(map(str, comp.seeds))}; "
             "mean (relative sd)"]
    for col in comp.columns():
        head = f"[{col}] {'network':<{width - len(col) - 3}}  " + "  ".join(
            f"{m:>17}" for m in ms)
        lines += [head, "-" * len(head)]
        for n in comp.networks:
            lines.append(f"{n:<{width}}  " + "  ".join(
                f"{comp.mean_edp(n, m, col):>9.4g} ({_pct(comp.spread(n, m, col))})"
                for m in ms))
        lines.append(f"{'average EDP':<{width}}  " + "  ".join(
            f"{comp.average(m, col):>17.4g}" for m in ms))
        for base in ("random", "ga", "dosa"):
            if base in ms and len(ms) > 1:
                lines.append(f"{'geomean/' + base:<{width}}  " + "  ".join(
                    f"{comp.geomean_ratio(m, base, col):>17.3f}" for m in ms))
        lines.append("")
    lines.append(f"{'CPU time (s)':<{width}}  " + "  ".join(f"{comp.cpu(m):>17.1f}"
                                                            for m in ms))
    lines.append(f"{'wall time (s)':<{width}}  " + "  ".join(f"{comp.wall(m):>17.1f}"
                                                             for m in ms))
    invalid = [r for r in comp.runs if not r.valid]
    lines.append("every final schedule valid" if not invalid else
                 f"{len(invalid)} INVALID final schedule(s)")
    return "\n".join(lines)


def _budget_text(b: dict[str, Any]) -> str:
    parts = []
    if b.get("evaluations") is not None:
        parts.append(f"{b['evaluations']} layer-mapping evaluations")
    if b.get("cpu_seconds") is not None:
        parts.append(f"{b['cpu_seconds']:g} CPU-s")
    if b.get("seconds") is not None:
        parts.append(f"{b['seconds']:g} s wall")
    return " or ".join(parts)
