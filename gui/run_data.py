"""What the plots of one simulation show, whether it just finished or was stored in a project.

    rec = RunRecord.from_stats(stats, "DDR4-3200 · demo")        # a run that just finished
    rec = RunRecord.from_project(project, "run-20261130-...")    # a stored run, no re-simulation
    key_figures(rec)            # time, read latency (ns), bandwidth, row hits, energy (core+IO)

No Qt here: plain numpy arrays and dicts, so the views, the comparison table and the tests share
one reading of ``Stats`` and of the project's ``/runs/<id>`` groups.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

#: Key figures of the comparison table: (key, label, unit of the value, comparable across
#: clocks).  Times are in ns (cycles x that run's tCK), energy is core + IO in pJ: runs on
#: memories with different clocks compare in time, never in cycles.  "cycles" is each run's
#: own (its clock in the view's tooltip) and gets no difference in % when the clocks differ.
KEY_FIGURES: tuple[tuple[str, str, str, bool], ...] = (
    ("time_ns", "Time", "ns", True),
    ("read_latency_ns", "Read latency", "ns", True),
    ("bandwidth_GBps", "Bandwidth", "GB/s", True),
    ("row_hit_rate", "Row hits", "%", True),
    ("energy_pJ", "Energy (core + IO)", "pJ", True),
    ("io_energy_pJ", "of which IO", "pJ", True),
    ("cycles", "Cycles (own clock)", "cyc", False),
)


def _floats(values: Any) -> np.ndarray:
    return np.asarray(values if values is not None else [], dtype=np.float64).reshape(-1)


@dataclass
class RunRecord:
    """One simulation as the plots need it.

    ``end``/``row_hit_rate``/``bandwidth_GBps``/``avg_read_latency`` are per epoch;
    ``utilisation`` is ``[banks, epochs]`` (banks flattened over channels and ranks);
    ``per_bank`` holds ``[channels, ranks, banks]`` arrays (``energy_pJ``, ``reads``, ...).
    """

    label: str
    summary: dict[str, Any]
    end: np.ndarray
    row_hit_rate: np.ndarray
    bandwidth_GBps: np.ndarray
    avg_read_latency: np.ndarray
    utilisation: np.ndarray
    read_latency_hist: np.ndarray
    per_bank: dict[str, np.ndarray] = field(default_factory=dict)
    run_id: str | None = None            # set for runs read from a project
    config_name: str | None = None       # the project configuration (stored runs)

    @property
    def n_epochs(self) -> int:
        return int(self.end.size)

    @classmethod
    def from_epochs(cls, label: str, summary: dict[str, Any], epochs: Sequence[dict],
                    read_latency_hist: Any, per_bank: dict[str, Any] | None = None,
                    run_id: str | None = None) -> RunRecord:
        """From a list of epoch dicts (``Stats.epochs`` or ``gui.workers.epoch_dict``)."""
        def col(key: str, alt: str | None = None) -> np.ndarray:
            return _floats([r.get(key, r.get(alt) if alt else None) for r in epochs])

        if epochs and "bank_utilisation" in epochs[0]:
            util = np.stack([np.asarray(r["bank_utilisation"], np.float64).reshape(-1)
                             for r in epochs], axis=1)
        else:
            util = np.zeros((0, len(epochs)))
        return cls(label=label, summary=dict(summary), end=col("end"),
                   row_hit_rate=col("row_hit_rate"), bandwidth_GBps=col("bandwidth_GBps"),
                   avg_read_latency=col("avg_read_latency", "average_read_latency"),
                   utilisation=np.clip(util, 0.0, 1.0),
                   read_latency_hist=_floats(read_latency_hist),
                   per_bank={k: np.asarray(v) for k, v in (per_bank or {}).items()},
                   run_id=run_id)

    @classmethod
    def from_stats(cls, stats: Any, label: str, run_id: str | None = None) -> RunRecord:
        """From an ``engine.stats.Stats`` (a run that just finished)."""
        return cls.from_epochs(label, stats.summary, list(stats.epochs),
                               stats.read_latency_hist, stats.per_bank, run_id)

    @classmethod
    def from_project(cls, project: Any, run_id: str) -> RunRecord:
        """From a run stored in an open ``projects.store.Project`` (its epochs, per-bank arrays
        and latency histogram; nothing is simulated again)."""
        data = project.load_run(run_id)
        ep = data.get("epochs", {})
        n = int(np.asarray(ep.get("end", [])).size)
        util = np.asarray(ep.get("bank_utilisation", np.zeros((n, 0))), dtype=np.float64)
        util = util.reshape(n, -1).T if n else np.zeros((0, 0))
        return cls(label=run_label(data), summary=dict(data.get("summary", {})),
                   end=_floats(ep.get("end")),
                   row_hit_rate=_floats(ep.get("row_hit_rate")),
                   bandwidth_GBps=_floats(ep.get("bandwidth_GBps")),
                   avg_read_latency=_floats(ep.get("average_read_latency")),
                   utilisation=np.clip(util, 0.0, 1.0),
                   read_latency_hist=_floats(data.get("read_latency_hist")),
                   per_bank={k: np.asarray(v) for k, v in data.get("per_bank", {}).items()},
                   run_id=run_id, config_name=data.get("config_name"))


def run_label(data: dict[str, Any]) -> str:
    """``"<run id> (<config> · <trace>)"`` for a run loaded with ``Project.load_run``."""
    parts = [p for p in (data.get("config_name"), data.get("trace_name")) if p]
    rid = str(data.get("run_id", "run"))
    return f"{rid} ({' · '.join(parts)})" if parts else rid


def _num(summary: dict[str, Any], key: str) -> float:
    try:
        return float(summary[key])
    except (KeyError, TypeError, ValueError):
        return math.nan


def key_figures(rec: RunRecord) -> dict[str, float]:
    """The comparison table's figures of one run (NaN where the summary lacks one), in the
    units of :data:`KEY_FIGURES` (``row_hit_rate`` as a 0..1 fraction), plus ``tCK_ns``."""
    from gui.units import energy_total_pj

    s = rec.summary
    tck = _num(s, "tCK_ns")
    cycles = _num(s, "num_cycles")
    time_ns = _num(s, "simulated_time_ns")
    if math.isnan(time_ns):
        time_ns = cycles * tck
    lat_ns = _num(s, "average_read_latency_ns")
    if math.isnan(lat_ns):
        lat_ns = _num(s, "average_read_latency") * tck
    return {"time_ns": time_ns, "read_latency_ns": lat_ns,
            "bandwidth_GBps": _num(s, "average_bandwidth"),
            "row_hit_rate": _num(s, "row_hit_rate"),
            "energy_pJ": energy_total_pj(s), "io_energy_pJ": _num(s, "io_energy"),
            "cycles": cycles, "tCK_ns": tck}


def clock_notes(base: RunRecord | None, others: dict[str, RunRecord]) -> list[str]:
    """What the comparison must say beside runs on memories of other clocks: a request
    trace's arrival cycles are read in each memory's own clock, so the same trace offers its
    requests faster to the faster clock (the demo's HBM2 run at 1 GHz was offered them over
    80 us, its DDR4-3200 run at 1.59 GHz over 50 us): time and bandwidth then show the
    memory and the pace it was fed at together."""
    if base is None:
        return []
    t0 = tck_ns(base)
    out = []
    for key, rec in others.items():
        t = tck_ns(rec)
        if math.isnan(t) or math.isnan(t0) or abs(t - t0) <= 1e-12:
            continue
        slow, fast = (key, base.label) if t > t0 else (base.label, key)
        out.append(f"{key} runs at tCK {t:g} ns, {base.label} at {t0:g} ns: a trace's arrival "
                   f"cycles are read in each memory's clock, so the same trace came "
                   f"{max(t, t0) / min(t, t0):.2f}x more slowly to {slow} than to {fast}; "
                   "time and bandwidth show each memory at its own pace of requests")
    return out


def tck_ns(rec: RunRecord) -> float:
    """The run's clock period in ns (NaN when its summary lacks it)."""
    return _num(rec.summary, "tCK_ns")


def percent_difference(value: float, base: float) -> float:
    """100 * (value - base) / |base|; NaN when either is NaN or the base is 0."""
    if math.isnan(value) or math.isnan(base) or base == 0:
        return math.nan
    return 100.0 * (value - base) / abs(base)
