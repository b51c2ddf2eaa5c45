"""Compare search methods on networks under one budget: every method gets the same budget
(CPU-seconds or counted evaluations, never wall time), evaluator and refinement stage; per
(network, method) the mean EDP over the seeds and its spread, in three columns:

* ``raw``: the search's own result, before any step only one method has (FADiff's layer-wise
  archive is such a step: it is not in ``raw``);
* ``post``: after the method's own post-processing (FADiff's archive; the same as ``raw`` for
  the others) -- what goes into the refinement;
* ``refined``: after the shared refinement stage (:mod:`optimizer.polish`).

The reference row ``refine-only`` is the refinement alone, from the trivial schedule, given
the whole budget: a method's refined figure is worth what it adds beyond that row.

EDP is (sum of layer cycles) x (sum of layer energies) in pJ x cycles at the stated batch.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from optimizer.batching import with_batch
from optimizer.errors import OptimizerError
from optimizer.hardware import HARDWARE_DIR, GemminiHardware, list_hardware, load_hardware
from optimizer.method_names import REFERENCE_METHODS
from optimizer.methods import get_method, optimize
from optimizer.search import Budget
from optimizer.workload import NETWORKS, load_network

log = logging.getLogger(__name__)
COLUMNS = ("raw", "post", "refined")
DEFAULT_SEEDS = (0, 1, 2)


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
    post_edp: float = math.nan  # after the method's own post-processing (FADiff's archive)

    def value(self, column: str) -> float:
        if column == "raw":
            return self.raw_edp
        if column == "post":
            return self.raw_edp if math.isnan(self.post_edp) else self.post_edp
        return self.edp


@dataclass
class HardwareRecord:
    """Which hardware a comparison ran on: its name, where it was read from, a digest of
    every number in it, and whether it equals a shipped file (an edited copy of
    ``large.toml`` keeps the name but not the digest)."""

    name: str
    path: str | None
    digest: str
    stock: str | None             # the shipped file it equals (``large``), or None
    config: dict[str, Any]

    @classmethod
    def of(cls, hard: GemminiHardware, source: GemminiHardware | str | Path) -> "HardwareRecord":
        # (a DRAM-aware hardware is its file's hardware priced with a memory's DRAM term,
        # recorded apart as the DRAM objective)
        from optimizer.dram_objective import base_hardware
        hard = base_hardware(hard)
        config = hard.to_dict()
        digest = hardware_digest(config)
        stock = next((n for n in list_hardware()
                      if hardware_digest(load_hardware(n).to_dict()) == digest), None)
        path: str | None = None
        if not isinstance(source, GemminiHardware):
            f = Path(source)
            if f.suffix or f.exists():
                path = str(f.absolute())
            else:
                same = [n for n in list_hardware() if n.lower() == str(source).lower()]
                path = str(HARDWARE_DIR / f"{same[0] if same else source}.toml")
        return cls(hard.name, path, digest, stock, config)

    def label(self) -> str:
        """The name, and for a config that is no shipped file, a mark and its digest."""
        if self.stock is not None:
            return self.name
        return f"{self.name} [NOT STOCK: edited config {self.digest}, {self.path or 'object'}]"


def hardware_digest(config: dict[str, Any]) -> str:
    """The first 12 hex digits of the SHA-256 of a hardware config (its numbers, sorted)."""
    text = json.dumps(config, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


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
    hardware_record: HardwareRecord | None = None

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

    def _mean(self, method: str, attr: str) -> float:
        vals = [getattr(r, attr) for r in self.runs if r.method == method]
        return sum(vals) / len(vals) if vals else math.nan

    def fused(self, method: str) -> float:
        """Mean fused edges of the final schedules of ``method``'s runs."""
        return self._mean(method, "fused_edges")

    def evaluations(self, method: str) -> float:
        """Mean layer-mapping evaluations per run of ``method`` (search + refinement)."""
        return self._mean(method, "evaluations")

    def average(self, method: str, column: str = "refined") -> float:
        """Arithmetic mean over the networks of the (seed-averaged) EDP (the largest network
        dominates it; :meth:`geomean` weighs them alike)."""
        vals = [self.mean_edp(n, method, column) for n in self.networks]
        return sum(vals) / len(vals)

    def geomean(self, method: str, column: str = "refined") -> float:
        """Geometric mean over the networks of the (seed-averaged) EDP."""
        vals = [self.mean_edp(n, method, column) for n in self.networks]
        return math.exp(sum(math.log(v) for v in vals) / len(vals))

    def geomean_ratio(self, method: str, baseline: str, column: str = "refined",
                      base_column: str | None = None) -> float:
        """Geometric mean over the networks of mean EDP(method) / mean EDP(baseline)."""
        base_column = base_column or column
        logs = [math.log(self.mean_edp(n, method, column)
                         / self.mean_edp(n, baseline, base_column)) for n in self.networks]
        return math.exp(sum(logs) / len(logs))

    def columns(self) -> tuple[str, ...]:
        return COLUMNS if self.refine else COLUMNS[:2]

    def to_json(self, complete: bool = True) -> dict[str, Any]:
        """The table as JSON (nan, e.g. a spread over one seed or a network not run yet by
        an interrupted comparison, as null); ``complete`` False: the runs finished so far."""
        cols = self.columns()
        hw = self.hardware_record
        return _nulls({
                "complete": complete,
                "hardware": self.hardware,
                "hardware_path": hw.path if hw else None,
                "hardware_digest": hw.digest if hw else None,
                "hardware_stock": hw.stock if hw else None,
                "hardware_config": hw.config if hw else None,
                "budget": self.budget, "networks": self.networks,
                "methods": self.methods, "seeds": self.seeds, "batch": self.batch,
                "refine": self.refine, "edp_unit": "pJ x cycles",
                "edp_definition": "(sum of layer cycles) x (sum of layer energies)",
                "columns": {"raw": "the search's own result (FADiff: before its archive)",
                            "post": "after the method's own post-processing (FADiff's "
                                    "layer-wise archive; the others: = raw)",
                            "refined": "after the shared refinement stage"},
                "average": "arithmetic mean over the networks of the seed-mean EDP",
                "average_edp": {m: self.average(m, cols[-1]) for m in self.methods},
                "average_edp_raw": {m: self.average(m, "raw") for m in self.methods},
                "average_edp_post": {m: self.average(m, "post") for m in self.methods},
                "geomean_edp": {m: self.geomean(m, cols[-1]) for m in self.methods},
                "fused_edges_mean": {m: self.fused(m) for m in self.methods},
                "evaluations_mean": {m: self.evaluations(m) for m in self.methods},
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
                   budget: Budget | None = None, seeds: Sequence[int] = DEFAULT_SEEDS,
                   on_run: Callable[[RunRecord], None] | None = None, refine: bool = True,
                   batch: int = 1,
                   on_progress: Callable[[Comparison], None] | None = None,
                   hardware_source: str | Path | None = None) -> Comparison:
    """Every method on every network with the same budget, seeds and refinement stage.
    The budget is CPU-seconds and/or evaluations: a wall-clock limit is refused (it moves
    with the machine's load, so it would not be the same budget for every method).
    ``on_progress(comparison so far)`` after every run (e.g. to keep a partial table).
    ``hardware_source``: the name or file ``hw`` was loaded from, when it is an object (for
    the record of which hardware file was compared)."""
    hard = hw if isinstance(hw, GemminiHardware) else load_hardware(hw)
    budget = budget or Budget(cpu_seconds=5.0)
    if budget.seconds is not None:
        raise OptimizerError("compare: a wall-clock budget (seconds) is not a like-for-like "
                             "budget on a shared machine; use cpu_seconds or evaluations")
    for m in methods:
        get_method(m)                       # unknown methods fail before any run
    if not refine and any(m in REFERENCE_METHODS for m in methods):
        raise OptimizerError(f"compare: {', '.join(REFERENCE_METHODS)} is the refinement "
                             "alone: it needs the refinement stage (not --no-refine)")
    nets = [with_batch(load_network(n), batch) for n in networks]
    # (a network, method or seed given twice ran twice: a duplicate column or row, a 0 %
    # spread from identical runs, a network weighted twice in the average)
    for what, names in (("network", [n.name for n in nets]), ("method", list(methods)),
                        ("seed", [str(x) for x in seeds])):
        twice = sorted({x for x in names if names.count(x) > 1})
        if twice:
            raise OptimizerError(f"compare: {what} {', '.join(twice)} given more than once")
    record = HardwareRecord.of(hard, hardware_source if hardware_source is not None else hw)
    comp = Comparison(record.name, budget.to_dict(), [n.name for n in nets], list(methods),
                      list(seeds), batch=batch, refine=refine,
                      hardware_record=record)
    for net in nets:
        for m in methods:
            for seed in seeds:
                res, _ = optimize(net, hard, m, budget, seed, refine=refine)
                raw = res.raw if res.raw is not None else res.result
                post = res.post if res.post is not None else raw
                rec = RunRecord(net.name, m, seed, res.result.edp, res.result.energy_pj,
                                res.result.latency_cycles, res.result.valid, res.wall_s,
                                res.evaluations, len(res.result.fused), raw.edp, raw.valid,
                                res.raw_evaluations, res.cpu_s, refine, post.edp)
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
    """Mean EDP (pJ x cycles) and relative spread per network and method, every column;
    arithmetic and geometric means over the networks, geomean ratios; per method the mean
    fused edges, evaluations per run and CPU time."""
    ms = comp.methods
    avg, geo = "average EDP (arith.)", "geomean EDP"
    width = max([len("geomean/random"), len(avg), len("evaluations/run")]
                + [len(n) for n in comp.networks])
    hw = comp.hardware_record.label() if comp.hardware_record else comp.hardware
    lines = [f"EDP (pJ x cycles, batch {comp.batch}) on {hw}, budget "
             f"{_budget_text(comp.budget)} per run, seeds {', '.join(map(str, comp.seeds))}; "
             "mean (relative sd)",
             "raw: the search's own result (FADiff without its layer-wise archive); post: "
             "after the method's own post-processing (FADiff's archive; = raw for the others)"
             + ("; refined: after the shared refinement stage" if comp.refine else "")]
    if any(m in REFERENCE_METHODS for m in ms):
        lines.append("refine-only: no search, the refinement alone from the trivial schedule "
                     "with the whole budget (what the refined column owes to the refinement)")
    for col in comp.columns():
        head = f"[{col}] {'network':<{width - len(col) - 3}}  " + "  ".join(
            f"{m:>17}" for m in ms)
        lines += [head, "-" * len(head)]
        for n in comp.networks:
            lines.append(f"{n:<{width}}  " + "  ".join(
                f"{comp.mean_edp(n, m, col):>9.4g} ({_pct(comp.spread(n, m, col))})"
                for m in ms))
        lines.append(f"{avg:<{width}}  " + "  ".join(
            f"{comp.average(m, col):>17.4g}" for m in ms))
        lines.append(f"{geo:<{width}}  " + "  ".join(
            f"{comp.geomean(m, col):>17.4g}" for m in ms))
        # (the refine-only row is a reference for the refined column; beside a raw search
        # it would compare with the trivial schedule it starts from)
        for base in ("random", "ga", "dosa", *(REFERENCE_METHODS if col == "refined" else ())):
            if base in ms and len(ms) > 1:
                lines.append(f"{'geomean/' + base:<{width}}  " + "  ".join(
                    f"{comp.geomean_ratio(m, base, col):>17.3f}" for m in ms))
        lines.append("")
    lines.append(f"{'fused edges':<{width}}  " + "  ".join(f"{comp.fused(m):>17.1f}"
                                                           for m in ms))
    lines.append(f"{'evaluations/run':<{width}}  " + "  ".join(
        f"{comp.evaluations(m):>17.0f}" for m in ms))
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
