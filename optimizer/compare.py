"""Compare search methods on networks under one budget: the table of the FADiff paper
(average EDP per method), per-network rows and wall time per method."""
from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

from optimizer.hardware import GemminiHardware, load_hardware
from optimizer.methods import get_method, optimize
from optimizer.search import Budget
from optimizer.workload import NETWORKS, load_network

log = logging.getLogger(__name__)


@dataclass
class RunRecord:
    network: str
    method: str
    seed: int
    edp: float                  # pJ x cycles
    energy_pj: float
    latency_cycles: float
    valid: bool
    wall_s: float
    evaluations: int
    fused_edges: int


@dataclass
class Comparison:
    hardware: str
    budget: dict[str, Any]
    networks: list[str]
    methods: list[str]
    seeds: list[int]
    runs: list[RunRecord] = field(default_factory=list)

    def mean_edp(self, network: str, method: str) -> float:
        vals = [r.edp for r in self.runs if r.network == network and r.method == method]
        return sum(vals) / len(vals) if vals else math.nan

    def wall(self, method: str) -> float:
        return sum(r.wall_s for r in self.runs if r.method == method)

    def average(self, method: str) -> float:
        """Arithmetic mean over the networks of the (seed-averaged) EDP."""
        vals = [self.mean_edp(n, method) for n in self.networks]
        return sum(vals) / len(vals)

    def geomean_ratio(self, method: str, baseline: str) -> float:
        """Geometric mean over the networks of EDP(method) / EDP(baseline)."""
        logs = [math.log(self.mean_edp(n, method) / self.mean_edp(n, baseline))
                for n in self.networks]
        return math.exp(sum(logs) / len(logs))

    def to_json(self) -> dict[str, Any]:
        return {"hardware": self.hardware, "budget": self.budget, "networks": self.networks,
                "methods": self.methods, "seeds": self.seeds, "edp_unit": "pJ x cycles",
                "average_edp": {m: self.average(m) for m in self.methods},
                "wall_s": {m: self.wall(m) for m in self.methods},
                "all_valid": all(r.valid for r in self.runs),
                "per_network": {n: {m: self.mean_edp(n, m) for m in self.methods}
                                for n in self.networks},
                "runs": [asdict(r) for r in self.runs]}


def run_comparison(hw: GemminiHardware | str, networks: Sequence[str] = NETWORKS,
                   methods: Sequence[str] = ("random", "ga", "bo", "dosa"),
                   budget: Budget | None = None, seeds: Sequence[int] = (0,),
                   on_run: Callable[[RunRecord], None] | None = None) -> Comparison:
    """Every method on every network with the same budget and seeds."""
    hard = hw if isinstance(hw, GemminiHardware) else load_hardware(hw)
    budget = budget or Budget(evaluations=500)
    for m in methods:
        get_method(m)                       # unknown methods fail before any run
    nets = [load_network(n) for n in networks]
    comp = Comparison(hard.name, {"evaluations": budget.evaluations, "seconds": budget.seconds},
                      [n.name for n in nets], list(methods), list(seeds))
    for net in nets:
        for m in methods:
            for seed in seeds:
                res, _ = optimize(net, hard, m, budget, seed)
                rec = RunRecord(net.name, m, seed, res.result.edp, res.result.energy_pj,
                                res.result.latency_cycles, res.result.valid, res.wall_s,
                                res.evaluations, len(res.result.fused))
                log.debug("%s %s seed %d: EDP %.4g", net.name, m, seed, rec.edp)
                comp.runs.append(rec)
                if on_run is not None:
                    on_run(rec)
    return comp


def format_table(comp: Comparison) -> str:
    """Average EDP per method (J·cycles), per-network rows, wall time per method."""
    ms = comp.methods
    width = max([len("average EDP")] + [len(n) for n in comp.networks])
    head = f"{'network':<{width}}  " + "  ".join(f"{m:>11}" for m in ms)
    lines = [f"EDP (J x cycles) on {comp.hardware}, budget {_budget_text(comp.budget)}, "
             f"seeds {', '.join(map(str, comp.seeds))}", head, "-" * len(head)]
    for n in comp.networks:
        lines.append(f"{n:<{width}}  " + "  ".join(f"{comp.mean_edp(n, m) * 1e-12:>11.4g}"
                                                   for m in ms))
    lines.append("-" * len(head))
    lines.append(f"{'average EDP':<{width}}  " + "  ".join(f"{comp.average(m) * 1e-12:>11.4g}"
                                                           for m in ms))
    if len(ms) > 1:
        base = "dosa" if "dosa" in ms else ms[0]
        lines.append(f"{'geomean/' + base:<{width}}  " + "  ".join(
            f"{comp.geomean_ratio(m, base):>11.3f}" for m in ms))
    lines.append(f"{'wall time (s)':<{width}}  " + "  ".join(f"{comp.wall(m):>11.1f}"
                                                             for m in ms))
    invalid = [r for r in comp.runs if not r.valid]
    lines.append("every final schedule valid" if not invalid else
                 f"{len(invalid)} INVALID final schedule(s)")
    return "\n".join(lines)


def _budget_text(b: dict[str, Any]) -> str:
    parts = []
    if b.get("evaluations") is not None:
        parts.append(f"{b['evaluations']} evaluations")
    if b.get("seconds") is not None:
        parts.append(f"{b['seconds']:g} s")
    return " or ".join(parts)
