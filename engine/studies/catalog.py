"""The shipped studies: how each builds its grid of points and turns results into findings.

A study is an object with ``name``, ``title``, ``description``, ``params_help``,
``points(setup) -> list[Point]`` and ``analyse(document, records) -> Analysis``. ``analyse``
reads only the stored study document (setup and points) and the result records, so a report
can be rebuilt from a results folder or a project file alone. Figures are functions drawing
into a matplotlib ``Figure`` that the report module creates (nothing here imports matplotlib).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from engine.errors import DiffMemError
from engine.policies import SCHEDULERS
from engine.studies import fits
from engine.studies.jobs import CAUSES, CORE_CAUSES
from engine.studies.spec import (Point, StudyError, StudySetup, TraceInput, differing_settings,
                                 with_overrides)

log = logging.getLogger(__name__)

DrawFn = Callable[[Any], None]          # draws into a matplotlib Figure


@dataclass
class Finding:
    """One result sentence, with its headline number and error where there is one."""

    text: str
    key: str = ""
    value: float | None = None
    error: float | None = None
    unit: str = ""
    dof: int | None = None      # degrees of freedom of the error (None: large-sample)


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Any]]


@dataclass
class FigureSpec:
    title: str
    caption: str
    draw: DrawFn
    size: tuple[float, float] = (8.0, 4.5)


@dataclass
class Analysis:
    title: str
    findings: list[Finding] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[FigureSpec] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class Row:
    """One finished point joined with its definition."""

    point_id: str
    trace: dict[str, Any]
    tags: dict[str, Any]
    m: dict[str, Any]           # metrics

    @property
    def label(self) -> str:
        return str(self.trace["label"])


# ---- helpers ------------------------------------------------------------------------------
def base_config(setup: StudySetup) -> Any:
    from engine.config import load_config
    return with_overrides(load_config(setup.config), setup.overrides)


def placement_config(base: Any, cfg: Any) -> Any:
    """The config a variant ``cfg`` of ``base`` places its traces for: ``cfg`` with the
    address mapping of ``base``. A mapping what-if changes how the controller decodes the
    physical addresses the GPU sends, not the addresses: on the trace's own device the trace
    is replayed as it is (:func:`engine.workloads.placement.same_device`), and on another
    device it is re-placed once, with the GPU hash made for the base mapping, and decoded by
    each variant's. (Placed for the variant's own mapping, the hash re-encodes the channel and
    bank fields where that mapping puts them, which undoes the what-if: every mapping variant
    measured exactly the baseline.)"""
    if cfg.address_mapping == base.address_mapping:
        return cfg
    return with_overrides(cfg, {"address_mapping": base.address_mapping})


def resolved_traces(setup: StudySetup) -> list[TraceInput]:
    if not setup.traces:
        raise StudyError("a study needs at least one trace (--trace LABEL=PATH)")
    out = [t.resolved() for t in setup.traces]
    labels = [t.label for t in out]
    dup = {x for x in labels if labels.count(x) > 1}
    if dup:
        raise StudyError(f"trace label(s) used twice: {', '.join(sorted(dup))}")
    return out


def join(document: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
         ) -> tuple[list[Row], list[str]]:
    """Finished points as rows (sorted by point id) and notes on failed or missing ones."""
    points = {p["point_id"]: p for p in document["points"]}
    rows, notes = [], []
    seen = set()
    for rec in sorted(records, key=lambda r: r["point_id"]):
        p = points.get(rec["point_id"])
        if p is None or rec["point_id"] in seen:
            continue
        if rec.get("status") != "ok":
            notes.append(f"point {rec['point_id']} ({p['trace']['label']}, {p['tags']}) "
                         f"failed: {rec.get('error')}")
            continue
        seen.add(rec["point_id"])
        rows.append(Row(rec["point_id"], p["trace"], p["tags"], rec["metrics"]))
    missing = len(points) - len(seen)
    if missing:
        notes.append(f"{missing} of {len(points)} points have no result (not run yet, failed "
                     "or interrupted); the findings use the others")
    capped = [r for r in rows if points[r.point_id].get("cycles")
              and r.m["cycles"] >= int(points[r.point_id]["cycles"])]
    if capped:
        notes.append(f"{len(capped)} of {len(rows)} points stopped at the cycle cap "
                     f"({int(points[capped[0].point_id]['cycles'])} cycles) before their "
                     "trace was done: their step time is the cap, not the workload's, and a "
                     "difference between them shows only in what was served; raise or drop "
                     "--cycles")
    paced = [r for r in rows if points[r.point_id].get("arrival", "trace") == "trace"
             and r.m.get("frontend_lag_cycles") is not None
             and r.m["frontend_lag_cycles"] < 1.0]
    if paced:
        who = "every point" if len(paced) == len(rows) else \
            f"{len(paced)} of {len(rows)} points"
        notes.append(f"{who} kept up with its trace's arrival times (requests waited less "
                     "than a cycle on average to enter the memory): such a step time is the "
                     "trace's own length, which no memory change shortens; --arrival "
                     "saturate measures the memory's service time")
    return rows, notes


def variant_names(rows: Sequence[Row]) -> list[str]:
    """The variants among ``rows``, in their order (the baseline first)."""
    return [n for _, n in sorted({(r.tags["order"], r.tags["variant"]) for r in rows})]


def request_bytes(r: Row) -> int:
    """Bytes one request of the point moved (the memory's burst; 0 with no request)."""
    return r.m["bytes"] // max(1, r.m["reads"] + r.m["writes"])


def labels_of(rows: Sequence[Row]) -> list[str]:
    return sorted({r.label for r in rows})


def _mean_se(values: Sequence[float], ses: Sequence[float]) -> tuple[float, float]:
    """Mean of per-workload estimates and its standard error: the fit errors propagated
    (sqrt(sum se_i^2) / n) combined with the spread between the workloads (sample variance
    / n, when there are several), so that a pooled "diffusion" number is not more certain
    than the workloads agree with each other."""
    n = len(values)
    fit_var = sum(s * s for s in ses) / (n * n)
    between = float(np.var(values, ddof=1)) / n if n > 1 else 0.0
    return float(np.mean(values)), math.sqrt(fit_var + between)


def _colors(n: int) -> list[Any]:
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf"]
    return [palette[i % len(palette)] for i in range(n)]


# ---- study base ---------------------------------------------------------------------------
#: what a finding's key stands for, in words (fields: the key's parts after the kind)
FINDING_SUBJECTS = {
    "rel_time_slope": "{1}: step time per cycle of {0}",
    "ratio": "{0}: diffusion/CNN step-time sensitivity ratio",
    "latency_ratio": "{0}: diffusion/CNN read-latency sensitivity ratio",
    "rel_energy_slope": "{1}: energy per cycle of {0}",
    "delta_time": "{0}: step time vs the baseline",
    "delta_energy": "{0}: energy vs the baseline",
    "delta_io": "{0}: IO energy vs the baseline",
    "energy_per_hit": "{0}: energy per +1 % of row-hit rate",
    "conflict_share": "{0}: share of the energy caused by row conflicts",
    "efficiency": "{0}: energy efficiency from batch {1}",
    "dram_time_share": "{0} on {1}: DRAM share of the step time",
    "recommendation": "{0} on {1}",
}
#: kinds of finding whose "no effect" value is 1 (a ratio), not 0
RATIO_FINDINGS = ("ratio", "latency_ratio")


def finding_subject(key: str | None) -> str:
    """A finding's key ("rel_time_slope/tRCD/ddpm") as the words a report shows."""
    if not key:
        return "finding"
    kind, *parts = key.split("/")
    form = FINDING_SUBJECTS.get(kind)
    if form is None:
        return key
    try:
        return form.format(*parts)
    except IndexError:
        return key


def _leverage_note(label: str, pts: Sequence[Row], hr: np.ndarray, e0: float,
                   f: fits.LineFit) -> str:
    """A note when the energy-vs-row-hit line rests on one variant: dropped, the slope
    changes sign or by more than half (e.g. close page, far from the others' hit rates,
    against a cluster of variants with nearly the same rate); '' otherwise."""
    if len(pts) < 4:
        return ""
    e = np.array([r.m["energy_total_pJ"] for r in pts])
    worst, worst_slope = None, f.slope
    for i in range(len(pts)):
        keep = np.arange(len(pts)) != i
        if np.ptp(hr[keep]) < 1e-9:
            worst, worst_slope = i, float("nan")
            break
        g = fits.fit_line(hr[keep], e[keep])
        if np.sign(g.slope) != np.sign(f.slope) or abs(g.slope - f.slope) > 0.5 * abs(f.slope):
            if worst is None or abs(g.slope - f.slope) > abs(worst_slope - f.slope):
                worst, worst_slope = i, g.slope
    if worst is None:
        return ""
    v = pts[worst].tags.get("variant", "?")
    without = ("no fit (the others share one row-hit rate)" if not math.isfinite(worst_slope)
               else f"{100 * worst_slope / e0:.3g} %")
    return (f"{label}: the energy-vs-row-hit slope rests on the variant '{v}' (row hits "
            f"{hr[worst]:.1f} %): without it, {without} per +1 % of row hits; the line joins "
            "clusters of variants rather than following a trend")


def screen_findings(a: Analysis) -> Analysis:
    """Replace every finding whose estimate is not finite, whose 95 % interval includes
    zero (one, for a ratio), or whose interval cannot be computed, by what the data do
    support: "no effect detected" with the estimate and interval, or "not tested" with the
    estimate, so a report never states an effect its data do not support. Findings without
    an error are exact differences of deterministic runs and are kept when finite."""
    out = []
    for f in a.findings:
        if f.value is None:
            out.append(f)
            continue
        subject = finding_subject(f.key)
        unit = f" {f.unit}" if f.unit else ""
        null = 1.0 if (f.key or "").split("/")[0] in RATIO_FINDINGS else 0.0
        crit = fits.t975(f.dof)
        if not math.isfinite(f.value):
            out.append(Finding(f"{subject}: not tested (the estimate is not finite)",
                               f.key, None, None, f.unit))
        elif f.error is not None and not (math.isfinite(f.error) and math.isfinite(crit)):
            out.append(Finding(f"{subject}: not tested (estimate {f.value:.3g}{unit}; too "
                               "few points for an interval: 3 or more swept values, or "
                               "more than one workload, give one)",
                               f.key, None, None, f.unit))
        elif f.error is not None and abs(f.value - null) <= crit * f.error:
            lo, hi = f.value - crit * f.error, f.value + crit * f.error
            out.append(Finding(f"{subject}: no effect detected (estimate {f.value:.3g}{unit}, "
                               f"95 % CI {lo:.3g} to {hi:.3g}, which includes {null:g})",
                               f.key, None, None, f.unit))
        else:
            out.append(f)
    a.findings = out
    return a


class Study:
    """A study; every subclass's ``analyse`` result passes through :func:`screen_findings`."""

    name = ""
    title = ""
    description = ""
    params_help = ""
    arrival = ""            # forced arrival mode ("" = the setup's)
    intake = ""             # default intake ("" = per-channel if saturated, else dramsim3)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("analyse")
        if own is None or getattr(own, "_screened", False):
            return

        def analyse(self: Study, document: Mapping[str, Any],
                    records: Sequence[Mapping[str, Any]]) -> Analysis:
            return screen_findings(own(self, document, records))

        analyse._screened = True               # type: ignore[attr-defined]
        analyse.__doc__ = own.__doc__
        cls.analyse = analyse                  # type: ignore[method-assign]

    def points(self, setup: StudySetup) -> list[Point]:
        raise NotImplementedError

    def analyse(self, document: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
                ) -> Analysis:
        raise NotImplementedError

    def _point(self, cfg: Any, trace: TraceInput, tags: dict[str, Any],
               setup: StudySetup, placement: Any = None) -> Point:
        """A point running ``trace`` on ``cfg``, the trace placed for that memory
        (:mod:`engine.studies.placed`), or for ``placement`` if given: the same device with
        the address mapping the placement is made for (see :func:`placement_config`)."""
        from engine.studies.placed import placed_input
        placed = placed_input(trace, cfg if placement is None else placement)
        if isinstance(placed, str):
            tdict = {**trace.to_dict(), "placement_error": placed}
        else:
            tdict = placed.to_dict()
            if placed is not trace:
                tdict["placed_from"] = trace.digest
        arrival = self.arrival or setup.arrival
        return Point(self.name, cfg.to_dict(), tdict, tags, setup.cycles, arrival,
                     setup.intake or self.default_intake(arrival))

    def default_intake(self, arrival: str) -> str:
        """The front end's intake when the setup names none: a study measuring the DRAM's
        service time (saturated arrival) takes requests per channel, as a GPU's crossbar
        does; DRAMsim3's one-request-a-cycle intake would bound a multi-channel memory at one
        request per cycle (docs: issues 18/12, per-channel intake)."""
        if self.intake:
            return self.intake
        return "per-channel" if arrival == "saturate" else "dramsim3"

    def _variant_points(self, variants: Sequence[tuple[str, Any]],
                        traces: Sequence[TraceInput], setup: StudySetup,
                        base: Any = None) -> list[Point]:
        """One point per (variant, trace), tagged with the variant's name and its order.
        ``base``: the configuration the variants override (None for variants that are other
        memories): every variant's traces are then placed with the base's address mapping
        (:func:`placement_config`)."""
        return [self._point(cfg, t, {"variant": name, "order": order}, setup,
                            None if base is None else placement_config(base, cfg))
                for order, (name, cfg) in enumerate(variants) for t in traces]

    def _preset_variants(self, names: Sequence[str], setup: StudySetup) -> list[tuple[str, Any]]:
        """(name, config) of each named preset/config file, with the setup's overrides."""
        from engine.config import load_config
        out = []
        for n in names:
            cfg = with_overrides(load_config(n), setup.overrides)
            out.append((cfg.name, cfg))
        return out

    def _check_params(self, setup: StudySetup, allowed: Sequence[str]) -> None:
        extra = set(setup.params) - set(allowed)
        if extra:
            raise StudyError(f"study '{self.name}' has no parameter(s) "
                             f"{', '.join(sorted(extra))}; it takes "
                             f"{', '.join(allowed) or 'none'} ({self.params_help})")


# ---- timing sensitivity ---------------------------------------------------------------------
DEFAULT_TIMING_OFFSETS = (-4, -2, 0, 2, 4, 8)


class TimingSensitivity(Study):
    name = "timing"
    title = "Timing sensitivity"
    description = ("sweep timing parameters (tRCD, tRP, tRAS, ...) one at a time; slope of step "
                   "time and energy per cycle, diffusion vs CNN ratio with a 95 % interval")
    params_help = ("PARAM=V1,V2,... for any timing parameter (default: tRCD, tRP, tRAS at "
                   "base -4, -2, 0, +2, +4, +8 cycles)")

    def points(self, setup: StudySetup) -> list[Point]:
        from engine.config import PARAM_BY_NAME
        cfg = base_config(setup)
        traces = resolved_traces(setup)
        params = dict(setup.params) or {
            p: [getattr(cfg, p) + d for d in DEFAULT_TIMING_OFFSETS
                if getattr(cfg, p) + d >= 1] for p in ("tRCD", "tRP", "tRAS")}
        out = []
        for param, values in params.items():
            spec = PARAM_BY_NAME.get(param)
            if spec is None or spec.section != "timing":
                timing = [s.name for s in PARAM_BY_NAME.values() if s.section == "timing"]
                from engine.config import _suggest
                raise StudyError(f"timing study: '{param}' is not a timing parameter"
                                 f"{_suggest(param, timing)}")
            vals = sorted(set(values))
            if len(vals) < 2:
                raise StudyError(f"timing study: {param} needs at least two values to fit a "
                                 f"slope, got {values}")
            if param == "tRCD" and (cfg.is_gddr or cfg.is_hbm):
                raise StudyError(f"timing study: {cfg.protocol} does not use tRCD; sweep "
                                 "tRCDRD and tRCDWR instead")
            base = getattr(cfg, param)
            for v in vals:
                pcfg = with_overrides(cfg, {param: v})
                for t in traces:
                    out.append(self._point(pcfg, t, {"param": param, "value": v,
                                                     "base": base}, setup))
        return out

    def analyse(self, document: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
                ) -> Analysis:
        rows, notes = join(document, records)
        a = Analysis(self.title, notes=notes)
        params = sorted({r.tags["param"] for r in rows})
        table = Table("Fitted sensitivities (least squares over the swept values)",
                      ["workload", "kind", "param", "step time slope (ns/cycle)",
                       "relative (%/cycle)", "energy slope (pJ/cycle)", "energy (%/cycle)",
                       "read latency (ns/cycle)", "R² (time)"], [])
        rel: dict[tuple[str, str], tuple[float, float, str]] = {}
        rel_lat: dict[tuple[str, str], tuple[float, float, str]] = {}
        for param in params:
            for label in labels_of(rows):
                pts = sorted((r for r in rows if r.tags["param"] == param and r.label == label),
                             key=lambda r: r.tags["value"])
                if len(pts) < 2:
                    continue
                x = [r.tags["value"] for r in pts]
                base = pts[0].tags["base"]
                ref = min(pts, key=lambda r: abs(r.tags["value"] - base))
                if not (ref.m.get("reads", 0) + ref.m.get("writes", 0)) > 0:
                    a.notes.append(f"{label}: no request was served at {param} = "
                                   f"{ref.tags['value']} (an empty trace?): no sensitivity")
                    continue
                ft = fits.fit_line(x, [r.m["step_time_ns"] for r in pts])
                fe = fits.fit_line(x, [r.m["energy_total_pJ"] for r in pts])
                fl = fits.fit_line(x, [r.m["avg_read_latency_ns"] for r in pts])
                t0, e0 = ref.m["step_time_ns"], ref.m["energy_total_pJ"]
                rel_t, rel_t_se = 100 * ft.slope / t0, 100 * ft.slope_se / t0
                rel_e, rel_e_se = 100 * fe.slope / e0, 100 * fe.slope_se / e0
                kind = pts[0].trace.get("kind", "")
                rel[param, label] = (rel_t, rel_t_se, kind, ft.dof)
                l0 = ref.m["avg_read_latency_ns"]
                if l0 > 0:                      # (0: no read served, a write-only trace)
                    rel_lat[param, label] = (100 * fl.slope / l0, 100 * fl.slope_se / l0,
                                             kind, fl.dof)
                table.rows.append([label, kind, param, fits.fmt_pm(ft.slope, ft.slope_se),
                                   fits.fmt_pm(rel_t, rel_t_se), fits.fmt_pm(fe.slope, fe.slope_se),
                                   fits.fmt_pm(rel_e, rel_e_se), fits.fmt_pm(fl.slope, fl.slope_se),
                                   fits.fmt_r2(ft.r2)])
                # step time and energy tested each on its own (energy was said only beside
                # a step-time slope that passed, and dropped when that one did not)
                a.findings.append(Finding(
                    f"{label}: step time changes by {fits.fmt_pm(rel_t, rel_t_se, '%')} per "
                    f"cycle of {param} ({fits.fmt_pm(ft.slope, ft.slope_se, 'ns')}/cycle)",
                    f"rel_time_slope/{param}/{label}", rel_t, rel_t_se, "%/cycle", ft.dof))
                a.findings.append(Finding(
                    f"{label}: energy (core + IO) changes by "
                    f"{fits.fmt_pm(rel_e, rel_e_se, '%')} per cycle of {param}",
                    f"rel_energy_slope/{param}/{label}", rel_e, rel_e_se, "%/cycle", fe.dof))
            for table_, what, key in ((rel, "step-time", "ratio"),
                                      (rel_lat, "read-latency", "latency_ratio")):
                diff = [v for (p, _), v in table_.items() if p == param and v[2] == "diffusion"]
                cnn = [v for (p, _), v in table_.items() if p == param and v[2] == "cnn"]
                if not (diff and cnn):
                    continue
                d, d_se = _mean_se([v[0] for v in diff], [v[1] for v in diff])
                c, c_se = _mean_se([v[0] for v in cnn], [v[1] for v in cnn])
                # (the fewest degrees of freedom among the slopes: the widest interval)
                dof = min(v[3] for v in diff + cnn)
                crit = fits.t975(dof)
                weak = [name for name, v, se in (("diffusion", d, d_se), ("CNN", c, c_se))
                        if not (math.isfinite(v) and math.isfinite(se)
                                and abs(v) > crit * se)]
                if weak:
                    a.findings.append(Finding(
                        f"{param}: diffusion/CNN {what} sensitivity ratio: no effect detected "
                        f"(the {' and '.join(weak)} slope's 95 % interval includes zero or "
                        f"cannot be computed: diffusion {fits.fmt_pm(d, d_se)}, CNN "
                        f"{fits.fmt_pm(c, c_se)} %/cycle, ± one standard error)",
                        f"{key}/{param}"))
                    continue
                try:
                    r = fits.ratio(d, d_se, c, c_se)
                except StudyError as exc:
                    a.notes.append(f"{param}: no diffusion/CNN {what} ratio: {exc}")
                    continue
                lo, hi = r.value - crit * r.se, r.value + crit * r.se
                a.findings.append(Finding(
                    f"{param}: diffusion workloads are {r.value:.2f}x as sensitive as the "
                    f"CNN baseline (relative {what} slope {d:.3g} vs {c:.3g} %/cycle; 95 % CI "
                    f"of the ratio {lo:.2f} to {hi:.2f}; {len(diff)} diffusion vs "
                    f"{len(cnn)} CNN trace(s))", f"{key}/{param}", r.value, r.se, "x", dof))
        a.tables.append(table)
        for param in params:
            a.figures.append(FigureSpec(
                f"{param} sweep",
                f"Step time and total energy (core + IO) relative to the base value of "
                f"{param}, per workload; lines are least-squares fits.",
                _timing_draw(param, [r for r in rows if r.tags["param"] == param])))
        return a


def _timing_draw(param: str, rows: list[Row]) -> DrawFn:
    def draw(fig: Any) -> None:
        ax1, ax2 = fig.subplots(1, 2)
        labels = labels_of(rows)
        for label, color in zip(labels, _colors(len(labels))):
            pts = sorted((r for r in rows if r.label == label), key=lambda r: r.tags["value"])
            base = pts[0].tags["base"]
            ref = min(pts, key=lambda r: abs(r.tags["value"] - base))
            x = np.array([r.tags["value"] for r in pts], float)
            for ax, key in ((ax1, "step_time_ns"), (ax2, "energy_total_pJ")):
                y = np.array([100 * (r.m[key] / ref.m[key] - 1) for r in pts])
                ax.plot(x, y, "o", color=color, label=label)
                if len(x) >= 2 and np.ptp(x) > 0:
                    f = fits.fit_line(x, y)
                    ax.plot(x, f.intercept + f.slope * x, "-", color=color, alpha=0.6)
        ax1.set(xlabel=f"{param} (cycles)", ylabel="step time change (%)", title="step time")
        ax2.set(xlabel=f"{param} (cycles)", ylabel="energy change (%)", title="energy")
        for ax in (ax1, ax2):
            ax.grid(alpha=0.3)
        ax1.legend(fontsize=8)
    return draw


# ---- studies over named variants ----------------------------------------------------------------
class VariantStudy(Study):
    """Each workload on a baseline and on named variants (config overrides or presets)."""

    baseline = "baseline"
    params_help = "variants=NAME:key=value,... (replace the default variants)"

    def variants(self, cfg: Any, setup: StudySetup) -> list[tuple[str, Any]]:
        """(name, config) pairs, baseline first; the default set is study-specific."""
        given = setup.params.get("variants")
        candidates = list(given.items()) if given else self.default_variants(cfg)
        out: list[tuple[str, Any]] = [(self.baseline, cfg)]
        for name, overrides in candidates:
            try:
                out.append((name, with_overrides(cfg, overrides)))
            except StudyError:
                raise
            except DiffMemError as exc:        # ConfigError: geometry the base cannot take
                if given:
                    raise StudyError(f"variant '{name}': {exc}") from exc
                log.info("%s study: variant '%s' skipped: %s", self.name, name, exc)
        return out

    def default_variants(self, cfg: Any) -> list[tuple[str, dict[str, Any]]]:
        return []

    def points(self, setup: StudySetup) -> list[Point]:
        self._check_params(setup, ["variants"])
        cfg = base_config(setup)
        return self._variant_points(self.variants(cfg, setup), resolved_traces(setup), setup,
                                    base=cfg)

    def analyse(self, document: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
                ) -> Analysis:
        rows, notes = join(document, records)
        a = Analysis(self.title, notes=notes)
        self._variant_tables(rows, a)
        return a

    def _variant_tables(self, rows: list[Row], a: Analysis) -> None:
        names = variant_names(rows)
        if not names:
            return
        base = names[0]
        table = Table("Results per variant (changes relative to the first variant, "
                      f"'{base}')",
                      ["workload", "variant", "step time (µs)", "Δ time (%)",
                       "read latency (ns)", "bandwidth (GB/s)", "row hits (%)",
                       "energy (µJ, core + IO)", "Δ energy (%)", "of which IO (µJ)"], [])
        for label in labels_of(rows):
            by = {r.tags["variant"]: r for r in rows if r.label == label}
            ref = by.get(base)
            for n in names:
                r = by.get(n)
                if r is None:
                    continue
                dt = fits.pct_change(r.m["step_time_ns"], ref.m["step_time_ns"]) if ref else \
                    float("nan")
                de = fits.pct_change(r.m["energy_total_pJ"], ref.m["energy_total_pJ"]) \
                    if ref else float("nan")
                table.rows.append([label, n, f"{r.m['step_time_ns'] / 1e3:.2f}", f"{dt:+.1f}",
                                   f"{r.m['avg_read_latency_ns']:.1f}",
                                   f"{r.m['bandwidth_GBps']:.2f}",
                                   f"{100 * r.m['row_hit_rate']:.1f}",
                                   f"{r.m['energy_total_pJ'] / 1e6:.3f}", f"{de:+.1f}",
                                   f"{r.m['energy_io_pJ'] / 1e6:.3f}"])
        a.tables.append(table)
        for n in names[1:]:
            dts = [fits.pct_change(r.m["step_time_ns"], b.m["step_time_ns"])
                   for r, b in self._pairs(rows, n, base)]
            des = [fits.pct_change(r.m["energy_total_pJ"], b.m["energy_total_pJ"])
                   for r, b in self._pairs(rows, n, base)]
            if not dts:
                continue
            spread = (lambda v: float(np.std(v, ddof=1) / math.sqrt(len(v)))
                      if len(v) > 1 else float("nan"))
            # each tested on its own: the step time was stated on the energy's test alone
            for what, key, vals in (("step time", "delta_time", dts),
                                    ("energy (core + IO)", "delta_energy", des)):
                a.findings.append(Finding(
                    f"{n}: {what} {np.mean(vals):+.1f} % vs {base} (mean over {len(vals)} "
                    f"workload(s)" + (f"; ± {spread(vals):.1f} % standard error across "
                                      "workloads)" if len(vals) > 1 else ")"),
                    f"{key}/{n}", float(np.mean(vals)), spread(vals), "%", len(vals) - 1))
        a.figures.append(FigureSpec(
            "Variants compared",
            f"Change of step time, total energy and row-hit rate relative to '{base}', per "
            "workload.", _variant_draw(rows, names)))

    @staticmethod
    def _pairs(rows: list[Row], name: str, base: str) -> list[tuple[Row, Row]]:
        out = []
        for label in labels_of(rows):
            by = {r.tags["variant"]: r for r in rows if r.label == label}
            if name in by and base in by:
                out.append((by[name], by[base]))
        return out


def _variant_draw(rows: list[Row], names: list[str]) -> DrawFn:
    def draw(fig: Any) -> None:
        axes = fig.subplots(1, 3)
        labels = labels_of(rows)
        width = 0.8 / max(1, len(labels))
        x = np.arange(len(names))
        for i, (label, color) in enumerate(zip(labels, _colors(len(labels)))):
            by = {r.tags["variant"]: r for r in rows if r.label == label}
            ref = by.get(names[0])
            if ref is None:
                continue
            for ax, key, pct in ((axes[0], "step_time_ns", True),
                                 (axes[1], "energy_total_pJ", True),
                                 (axes[2], "row_hit_rate", False)):
                ys = [(fits.pct_change(by[n].m[key], ref.m[key]) if pct
                       else 100 * by[n].m[key]) if n in by else np.nan for n in names]
                ax.bar(x + (i - (len(labels) - 1) / 2) * width, ys, width, color=color,
                       label=label)
        for ax, title in zip(axes, ("Δ step time (%)", "Δ energy (%)", "row-hit rate (%)")):
            ax.set_title(title, fontsize=9)
            ax.set_xticks(x, names, rotation=60, ha="right", fontsize=7)
            ax.axhline(0, color="k", lw=0.5)
            ax.grid(axis="y", alpha=0.3)
        axes[0].legend(fontsize=7)
        fig.subplots_adjust(bottom=0.38, wspace=0.35)
    return draw


class Architecture(VariantStudy):
    name = "architecture"
    title = "Architecture"
    description = ("bank count, bank groups, page size (1 KB vs 2 KB), address mapping (bank "
                   "interleaving vs row-major, XOR) and channel count, at equal capacity per "
                   "channel where the geometry allows")

    def default_variants(self, cfg: Any) -> list[tuple[str, dict[str, Any]]]:
        v: list[tuple[str, dict[str, Any]]] = []
        if cfg.banks_per_group > 1:
            v.append((f"{cfg.banks // 2} banks", {"banks_per_group": cfg.banks_per_group // 2,
                                                  "rows": cfg.rows * 2}))
        if cfg.rows > 1:
            v.append((f"{cfg.banks * 2} banks", {"banks_per_group": cfg.banks_per_group * 2,
                                                 "rows": cfg.rows // 2}))
        if cfg.bankgroup_enable and cfg.banks_per_group > 1:
            v.append((f"{cfg.bankgroups * 2} bank groups",
                      {"bankgroups": cfg.bankgroups * 2,
                       "banks_per_group": cfg.banks_per_group // 2}))
        if cfg.bankgroup_enable and cfg.bankgroups > 1:
            v.append(("bank groups off", {"bankgroup_enable": False}))
        page = cfg.page_size_bytes
        v.append((f"page {page * 2 // 1024 if page * 2 >= 1024 else page * 2} "
                  f"{'KB' if page * 2 >= 1024 else 'B'}",
                  {"columns": cfg.columns * 2, "rows": cfg.rows // 2}))
        if cfg.columns > 1:
            v.append((f"page {page // 2 // 1024 if page // 2 >= 1024 else page // 2} "
                      f"{'KB' if page // 2 >= 1024 else 'B'}",
                      {"columns": cfg.columns // 2, "rows": cfg.rows * 2}))
        mappings = {"row-major mapping": "chrabgbaroco", "bank-interleaved mapping":
                    "rochrababgco"}
        for n, m in mappings.items():
            if m != cfg.address_mapping:
                v.append((n, {"address_mapping": m}))
        if not cfg.xor_bank_interleave:
            v.append(("XOR bank interleave", {"xor_bank_interleave": True}))
        v.append((f"{cfg.channels * 2} channels", {"channels": cfg.channels * 2}))
        return v


class ControllerPolicy(VariantStudy):
    name = "policy"
    title = "Controller policy"
    description = ("FCFS vs FR-FCFS vs PAR-BS, write priority lowered by 15/25/50 % (any "
                   "percentage: write_priority_pct=...), dynamic bank grouping, early "
                   "precharge thresholds, close / open-adaptive page policy")
    params_help = ("variants=NAME:key=value,... (replace the default variants); "
                   "write_priority_pct=P1,P2,... (the write-priority variants: > 0 lowers, "
                   "< 0 raises; default 15,25,50)")
    #: 15 %: the origin document's recommendation ("将write queue优先级降低15%")
    WRITE_PRIORITY_PCTS = (15.0, 25.0, 50.0)

    def points(self, setup: StudySetup) -> list[Point]:
        self._check_params(setup, ["variants", "write_priority_pct"])
        if setup.params.get("variants") and setup.params.get("write_priority_pct"):
            raise StudyError("policy study: give variants or write_priority_pct, not both")
        cfg = base_config(setup)
        return self._variant_points(self.variants(cfg, setup), resolved_traces(setup), setup,
                                    base=cfg)

    def variants(self, cfg: Any, setup: StudySetup) -> list[tuple[str, Any]]:
        pcts = setup.params.get("write_priority_pct")
        if not pcts:
            return super().variants(cfg, setup)
        out: list[tuple[str, Any]] = [(self.baseline, cfg)]
        for name, overrides in self.default_variants(cfg, tuple(float(p) for p in pcts)):
            try:
                out.append((name, with_overrides(cfg, overrides)))
            except DiffMemError as exc:
                raise StudyError(f"policy study: variant '{name}': {exc}") from exc
        return out

    def default_variants(self, cfg: Any, write_pcts: Sequence[float] = WRITE_PRIORITY_PCTS
                         ) -> list[tuple[str, dict[str, Any]]]:
        v: list[tuple[str, dict[str, Any]]] = [
            # every scheduler of the registry (engine.policies) but the current one and
            # DRAMsim3's round robin (the baseline's default, not a what-if)
            (s, {"scheduler": s}) for s in SCHEDULERS if s not in (cfg.scheduler, "dramsim3")]
        v += [(f"write priority {'-' if p > 0 else '+'}{abs(p):g} %",
               {"write_priority_pct": float(p)}) for p in write_pcts]
        if not cfg.dynamic_bank_grouping:
            v.append(("dynamic bank grouping", {"dynamic_bank_grouping": True}))
        v += [(f"early precharge @{n}", {"page_policy": "early_precharge",
                                         "early_precharge_conflicts": n}) for n in (1, 4)]
        v += [(f"{p} page", {"page_policy": p}) for p in ("close", "open_adaptive")
              if p != cfg.page_policy]
        return v

    def analyse(self, document: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
                ) -> Analysis:
        a = super().analyse(document, records)
        a.notes.append("Dynamic bank grouping is a controller policy (dynamic_bank_grouping, "
                       "bank_group_window): the scheduler prefers a column command to another "
                       "bank group than the last one, and write drains alternate bank groups; "
                       "the device and its bank groups are unchanged (see the architecture "
                       "study for bank-group counts).")
        return a


class Technology(VariantStudy):
    name = "technology"
    title = "Memory technology"
    description = ("the same workloads on DDR4, LPDDR4, GDDR6 and HBM2 presets: latency, "
                   "bandwidth, core and IO energy")
    params_help = "configs=PRESET,PRESET,... (default DDR4-3200,LPDDR4-3200,GDDR6,HBM2)"
    DEFAULT = ("DDR4-3200", "LPDDR4-3200", "GDDR6", "HBM2")

    def points(self, setup: StudySetup) -> list[Point]:
        self._check_params(setup, ["configs"])
        names = list(setup.params.get("configs") or self.DEFAULT)
        if len(names) < 2:
            raise StudyError(f"technology study: give at least two configs, got {names}")
        traces = resolved_traces(setup)
        return self._variant_points(self._preset_variants(names, setup), traces, setup)

    def _data_volume_notes(self, rows: list[Row], a: Analysis) -> None:
        """A technology whose request is larger than the baseline's moves more data for the
        same trace (a request is one burst of the device: over-fetch of partly used blocks):
        its headline time and energy are for that volume. Say so, with the ratio measured and
        the per-byte changes beside them."""
        names = variant_names(rows)
        if len(names) < 2:
            return
        base = names[0]
        size = {r.tags["variant"]: request_bytes(r) for r in rows
                if r.m["reads"] + r.m["writes"]}
        for n in names[1:]:
            if n not in size or base not in size or size[n] == size[base]:
                continue
            pairs = [(r, b) for r, b in self._pairs(rows, n, base) if r.m["bytes"] and
                     b.m["bytes"]]
            if not pairs:
                continue
            t = np.mean([fits.pct_change(r.m["step_time_ns"] / r.m["bytes"],
                                         b.m["step_time_ns"] / b.m["bytes"]) for r, b in pairs])
            e = np.mean([fits.pct_change(r.m["energy_total_pJ"] / r.m["bytes"],
                                         b.m["energy_total_pJ"] / b.m["bytes"])
                         for r, b in pairs])
            # the data each moved, as simulated (a generated trace's lines are merged into a
            # larger request or split into smaller ones: what is left is the over-fetch of
            # partly used request blocks; a text trace replays one line a request)
            ratio = float(np.mean([r.m["bytes"] / b.m["bytes"] for r, b in pairs]))
            if abs(ratio - 1) < 0.01:
                continue
            a.notes.append(
                f"{n} moves {ratio:.3g}x the data of {base} for the same trace ({size[n]} vs "
                f"{size[base]} bytes per request: a request is one burst of the device, so a "
                f"larger one fetches whole blocks of which the step may use part), so its step "
                f"time and energy above are for that volume; per byte moved: time {t:+.1f} %, "
                f"energy {e:+.1f} % (mean over {len(pairs)} workload(s))")

    @staticmethod
    def _clock_note(document: Mapping[str, Any], rows: list[Row], a: Analysis) -> None:
        """Text traces give arrival cycles in the memory's own clock (DRAMsim3's format):
        replayed at those cycles on memories with other clocks, the same trace arrives over
        different times. (Generated HDF5 traces are converted to each memory's clock.)"""
        points = {p["point_id"]: p for p in document["points"]}
        from engine.trace import suffix_format
        text = [r for r in rows if points[r.point_id].get("arrival", "trace") == "trace"
                and suffix_format(str(r.trace.get("path", ""))) != "hdf5"]
        clocks = {round(float(r.m["tCK_ns"]), 6) for r in text}
        if len(clocks) > 1:
            a.notes.append(
                "the text traces' arrival cycles are read in each memory's own clock (tCK "
                + ", ".join(f"{c:g}" for c in sorted(clocks)) + " ns here): under --arrival "
                "trace the same trace arrives over different times on each, which the step "
                "times include; --arrival saturate, or traces from `python main.py trace` "
                "(converted to each memory's clock), compare like for like")

    def analyse(self, document: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
                ) -> Analysis:
        rows, notes = join(document, records)
        a = Analysis(self.title, notes=notes)
        self._variant_tables(rows, a)
        self._data_volume_notes(rows, a)
        self._clock_note(document, rows, a)
        table = Table("IO energy", ["workload", "technology", "IO pJ/bit (read)",
                                    "request size (B)", "bytes moved (MB)", "IO energy (µJ)",
                                    "IO share of energy (%)", "energy per byte (pJ/B)"], [])
        for r in sorted(rows, key=lambda r: (r.label, r.tags["order"])):
            io = r.m["io_pJ_per_bit"]
            table.rows.append([r.label, r.tags["variant"],
                               f"{io.get('read_pJ_per_bit', float('nan')):.3g}",
                               request_bytes(r),
                               f"{r.m['bytes'] / 1e6:.2f}", f"{r.m['energy_io_pJ'] / 1e6:.3f}",
                               f"{100 * r.m['energy_io_pJ'] / r.m['energy_total_pJ']:.1f}",
                               f"{r.m['energy_per_byte_pJ']:.1f}"])
        a.tables.append(table)
        names = variant_names(rows)
        sources = {r.tags["variant"]: r.m["io_pJ_per_bit"] for r in rows}
        for n in names:
            io = sources.get(n, {})
            if io.get("source"):
                a.notes.append(f"IO energy of {n} ({io.get('basis', '?')}): {io['source']}")
        if len(names) >= 2:
            base = names[0]
            for other in names[1:]:
                pairs = self._pairs(rows, other, base)
                if not pairs:
                    continue
                d_io = [fits.pct_change(r.m["energy_io_pJ"], b.m["energy_io_pJ"])
                        for r, b in pairs]
                d_bit = [fits.pct_change(r.m["energy_io_pJ"] / r.m["bytes"],
                                         b.m["energy_io_pJ"] / b.m["bytes"]) for r, b in pairs]
                pb_o = pairs[0][0].m["io_pJ_per_bit"].get("read_pJ_per_bit", float("nan"))
                pb_b = pairs[0][1].m["io_pJ_per_bit"].get("read_pJ_per_bit", float("nan"))
                rs_o, rs_b = request_bytes(pairs[0][0]), request_bytes(pairs[0][1])
                a.findings.append(Finding(
                    f"{other} vs {base}: IO energy of the workload {np.mean(d_io):+.1f} %, IO "
                    f"energy per byte moved {np.mean(d_bit):+.1f} % (pin energy "
                    f"{pb_o:.3g} vs {pb_b:.3g} pJ/bit"
                    + (f"; {rs_o} vs {rs_b} bytes per request, so the same trace moves "
                       "different amounts of data)" if rs_o != rs_b else ")"),
                    f"delta_io/{other}", float(np.mean(d_io)), None, "%"))
        a.figures.append(FigureSpec(
            "Energy breakdown per technology",
            "Core and IO energy per workload and technology.", _tech_draw(rows, names)))
        return a


def _tech_draw(rows: list[Row], names: list[str]) -> DrawFn:
    def draw(fig: Any) -> None:
        ax1, ax2 = fig.subplots(1, 2)
        labels = labels_of(rows)
        cells = [(lab, n) for lab in labels for n in names]
        x = np.arange(len(cells))
        by = {(r.label, r.tags["variant"]): r for r in rows}
        core = [by[c].m["energy_core_pJ"] / 1e6 if c in by else 0 for c in cells]
        io = [by[c].m["energy_io_pJ"] / 1e6 if c in by else 0 for c in cells]
        ax1.bar(x, core, label="core")
        ax1.bar(x, io, bottom=core, label="IO")
        ax1.set_xticks(x, [f"{lab}\n{n}" for lab, n in cells], rotation=60, ha="right",
                       fontsize=7)
        ax1.set_ylabel("energy (µJ)")
        ax1.legend(fontsize=8)
        lat = [by[c].m["avg_read_latency_ns"] if c in by else 0 for c in cells]
        ax2.bar(x, lat, color="#7f7f7f")
        ax2.set_xticks(x, [f"{lab}\n{n}" for lab, n in cells], rotation=60, ha="right",
                       fontsize=7)
        ax2.set_ylabel("average read latency (ns)")
        for ax in (ax1, ax2):
            ax.grid(axis="y", alpha=0.3)
        fig.subplots_adjust(bottom=0.35, wspace=0.3)
    return draw


# ---- energy hot spots ---------------------------------------------------------------------------
class HotSpots(VariantStudy):
    name = "hotspots"
    title = "Energy hot spots"
    description = ("energy by component, cause and bank (flame graph) and the energy change "
                   "per 1 % row-hit rate across mapping / page-policy / scheduler variants")

    def default_variants(self, cfg: Any) -> list[tuple[str, dict[str, Any]]]:
        v: list[tuple[str, dict[str, Any]]] = []
        for m in ("chrabgbaroco", "rochrababgco", "robachbgraco", "chrarobabgco"):
            if m != cfg.address_mapping:
                v.append((f"mapping {m}", {"address_mapping": m}))
        v += [("close page", {"page_policy": "close"}),
              ("early precharge @1", {"page_policy": "early_precharge",
                                      "early_precharge_conflicts": 1}),
              ("fcfs", {"scheduler": "fcfs"}),
              ("XOR bank interleave", {"xor_bank_interleave": True})]
        return v

    def analyse(self, document: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
                ) -> Analysis:
        rows, notes = join(document, records)
        a = Analysis(self.title, notes=notes)
        base_rows = [r for r in rows if r.tags["order"] == 0]
        cause_table = Table("Energy by cause on the baseline (% of total, core + IO)",
                            ["workload", *CAUSES, "total (µJ)", "hottest bank",
                             "hottest / mean bank"], [])
        for r in sorted(base_rows, key=lambda r: r.label):
            tot = r.m["energy_total_pJ"]
            byc = r.m["energy_by_cause_pJ"]
            banks = np.asarray(r.m["energy_by_bank_pJ"])
            hot = int(np.argmax(banks))
            cause_table.rows.append([r.label, *[f"{100 * byc[c] / tot:.1f}" for c in CAUSES],
                                     f"{tot / 1e6:.3f}", r.m["bank_labels"][hot],
                                     f"{banks[hot] / banks.mean():.2f}"])
            a.findings.append(Finding(
                f"{r.label}: row conflicts cause {100 * byc['row_conflict'] / tot:.1f} % of "
                f"the energy (ACT energy of conflict activations), background "
                f"{100 * byc['background'] / tot:.1f} %, data {100 * byc['data'] / tot:.1f} %, "
                f"IO {100 * byc['io'] / tot:.1f} %, refresh {100 * byc['refresh'] / tot:.1f} %;"
                f" hottest bank {r.m['bank_labels'][hot]} at {banks[hot] / banks.mean():.2f}x "
                "the mean",
                f"conflict_share/{r.label}", 100 * byc["row_conflict"] / tot, None, "%"))
        a.tables.append(cause_table)
        for r in sorted(base_rows, key=lambda r: r.label):
            a.figures.append(FigureSpec(
                f"Energy flame graph: {r.label}",
                "Nested bars: total → core / IO → cause → bank (widths are energy). "
                "Per-bank splits follow the engine's per-bank attribution.",
                _flame_draw(r), size=(9.0, 4.0)))
        fit_table = Table("Energy vs row-hit rate across the variants",
                          ["workload", "points", "energy per +1 % hit rate (%)",
                           "pJ per +1 % hit rate", "R²"], [])
        for label in labels_of(rows):
            pts = [r for r in rows if r.label == label]
            hr = np.array([100 * r.m["row_hit_rate"] for r in pts])
            if len(pts) < 3 or np.ptp(hr) < 1e-9:
                a.notes.append(f"{label}: the variants do not change the row-hit rate enough "
                               "for a fit")
                continue
            ref = next((r for r in pts if r.tags["order"] == 0), pts[0])
            f = fits.fit_line(hr, [r.m["energy_total_pJ"] for r in pts])
            e0 = ref.m["energy_total_pJ"]
            fit_table.rows.append([label, len(pts), fits.fmt_pm(100 * f.slope / e0,
                                                                 100 * f.slope_se / e0),
                                   fits.fmt_pm(f.slope, f.slope_se), fits.fmt_r2(f.r2, 2)])
            a.findings.append(Finding(
                f"{label}: each +1 % of row-hit rate changes energy by "
                f"{fits.fmt_pm(100 * f.slope / e0, 100 * f.slope_se / e0, '%')} "
                f"(least squares over {len(pts)} variants, R² {fits.fmt_r2(f.r2, 2)})",
                f"energy_per_hit/{label}", 100 * f.slope / e0, 100 * f.slope_se / e0, "%",
                f.dof))
            lever = _leverage_note(label, pts, hr, e0, f)
            if lever:
                a.notes.append(lever)
        a.tables.append(fit_table)
        self._variant_tables(rows, a)
        a.figures.append(FigureSpec(
            "Energy vs row-hit rate",
            "Total energy (relative to the baseline) against row-hit rate for every variant; "
            "lines are least-squares fits.", _hit_draw(rows)))
        return a


def _flame_draw(r: Row) -> DrawFn:
    def draw(fig: Any) -> None:
        ax = fig.subplots()
        m = r.m
        total = m["energy_total_pJ"]
        core, io = m["energy_core_pJ"], m["energy_io_pJ"]
        comp = m["energy_components_pJ"]
        byc = m["energy_by_cause_pJ"]
        colors = dict(zip(CAUSES, _colors(len(CAUSES))))

        def bar(level: int, start: float, width: float, text: str, color: Any) -> None:
            ax.barh(level, width, left=start, height=0.9, color=color, edgecolor="white",
                    linewidth=0.5)
            if width / total > 0.06:
                ax.text(start + width / 2, level, text, ha="center", va="center", fontsize=7,
                        clip_on=True)

        bar(3, 0, total, f"total {total / 1e6:.3g} µJ", "#bbbbbb")
        bar(2, 0, core, f"core {100 * core / total:.0f} %", "#999999")
        bar(2, core, io, f"IO {100 * io / total:.0f} %", "#cccccc")
        x = 0.0
        for c in CORE_CAUSES:
            w = byc[c]
            bar(1, x, w, f"{c} {100 * w / total:.0f} %", colors[c])
            bx = x
            for bank, e in zip(m["bank_labels"], m["energy_by_bank_cause_pJ"][c]):
                bar(0, bx, e, bank.split(".", 1)[1], colors[c])
                bx += e
            x += w
        bar(1, x, byc["io"], f"io {100 * byc['io'] / total:.0f} %", colors["io"])
        bx = x
        for part in ("io_read", "io_write"):
            bar(0, bx, comp.get(part, 0.0), part, colors["io"])
            bx += comp.get(part, 0.0)
        ax.set_yticks([0, 1, 2, 3], ["bank", "cause", "component", "total"])
        ax.set_xlim(0, total)
        ax.set_xlabel("energy (pJ)")
        ax.set_title(f"{r.label} on {m['config']}", fontsize=9)
    return draw


def _hit_draw(rows: list[Row]) -> DrawFn:
    def draw(fig: Any) -> None:
        ax = fig.subplots()
        labels = labels_of(rows)
        for label, color in zip(labels, _colors(len(labels))):
            pts = [r for r in rows if r.label == label]
            ref = next((r for r in pts if r.tags["order"] == 0), pts[0])
            hr = np.array([100 * r.m["row_hit_rate"] for r in pts])
            e = np.array([100 * (r.m["energy_total_pJ"] / ref.m["energy_total_pJ"] - 1)
                          for r in pts])
            ax.plot(hr, e, "o", color=color, label=label)
            if len(pts) >= 2 and np.ptp(hr) > 0:
                f = fits.fit_line(hr, e)
                xs = np.linspace(hr.min(), hr.max(), 10)
                ax.plot(xs, f.intercept + f.slope * xs, "-", color=color, alpha=0.6)
        ax.set(xlabel="row-hit rate (%)", ylabel="energy vs baseline (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return draw


# ---- batch size ---------------------------------------------------------------------------------
def family(label: str) -> str:
    """A workload label without its batch suffix ('ddpm-b64' -> 'ddpm')."""
    import re
    return re.sub(r"[-_@](b|bs|batch)?\d+$", "", label) or label


class BatchSize(Study):
    name = "batch"
    title = "Batch size"
    description = ("the same model's traces at several batch sizes (each --trace with "
                   "batch=N; a model's traces are paired by label: NAME-bN, e.g. ddpm-b64 "
                   "and ddpm-b128): energy per sample, time per sample and row locality")
    params_help = "no parameters (the traces carry batch=N)"

    def points(self, setup: StudySetup) -> list[Point]:
        self._check_params(setup, [])
        cfg = base_config(setup)
        traces = resolved_traces(setup)
        missing = [t.label for t in traces if not t.batch]
        if missing:
            raise StudyError(f"batch study: trace(s) {', '.join(missing)} have no batch size "
                             "(write --trace LABEL=PATH,batch=N)")
        return [self._point(cfg, t, {"batch": t.batch, "family": family(t.label)}, setup)
                for t in traces]

    def analyse(self, document: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
                ) -> Analysis:
        rows, notes = join(document, records)
        a = Analysis(self.title, notes=notes)
        table = Table("Per batch size (per-sample figures scaled to the full step for "
                      "sampled traces)",
                      ["model", "batch", "energy per sample (µJ)", "time per sample (µs)",
                       "row hits (%)", "bandwidth (GB/s)", "energy of the trace (µJ)",
                       "trace scale"], [])
        fams = sorted({r.tags["family"] for r in rows})
        for fam in fams:
            pts = sorted((r for r in rows if r.tags["family"] == fam),
                         key=lambda r: r.tags["batch"])
            for r in pts:
                b = r.tags["batch"]
                table.rows.append([fam, b, f"{per_sample(r, 'energy_total_pJ') / 1e6:.4f}",
                                   f"{per_sample(r, 'step_time_ns') / 1e3:.3f}",
                                   f"{100 * r.m['row_hit_rate']:.1f}",
                                   f"{r.m['bandwidth_GBps']:.2f}",
                                   f"{r.m['energy_total_pJ'] / 1e6:.3f}",
                                   f"{r.trace.get('scale') or 1.0:.4g}"])
            for lo, hi in zip(pts, pts[1:]):
                other = differing_settings(lo.trace.get("made_with"), hi.trace.get("made_with"))
                if other:
                    # (a 40 MiB-cache trace against a cache-less one: -53 % "efficiency" that
                    # was the cache, not the batch)
                    a.findings.append(Finding(
                        f"{fam}: batch {lo.tags['batch']} → {hi.tags['batch']}: not compared "
                        f"(the traces were made with other settings: {'; '.join(other)}; "
                        "generate them alike)"))
                    continue
                e_lo = per_sample(lo, "energy_total_pJ")
                e_hi = per_sample(hi, "energy_total_pJ")
                gain = 100 * (e_lo / e_hi - 1)       # energy efficiency = samples per joule
                a.findings.append(Finding(
                    f"{fam}: batch {lo.tags['batch']} → {hi.tags['batch']}: energy efficiency "
                    f"(samples per joule) {gain:+.1f} %, energy per sample "
                    f"{fits.pct_change(e_hi, e_lo):+.1f} %, row-hit rate "
                    f"{100 * lo.m['row_hit_rate']:.1f} → {100 * hi.m['row_hit_rate']:.1f} %",
                    f"efficiency/{fam}/{lo.tags['batch']}-{hi.tags['batch']}", gain, None, "%"))
        single = [fam for fam in fams
                  if len({r.tags["batch"] for r in rows if r.tags["family"] == fam}) < 2]
        if single:
            a.notes.append(f"no batch comparison for {', '.join(single)}: a model's traces "
                           "are paired by label, the model's name with a batch suffix "
                           "(ddpm-b64 and ddpm-b128, or ddpm and ddpm-b128), and each of "
                           "these has one batch size")
        a.tables.append(table)
        a.figures.append(FigureSpec("Energy per sample and row locality vs batch size",
                                    "Energy per sample (left) and row-hit rate (right) per "
                                    "model.", _batch_draw(rows, fams)))
        return a


def per_sample(r: Row, key: str) -> float:
    """A metric of the full step per sample: x the trace's scale (sampled traces hold part of
    the step), / the batch."""
    return r.m[key] * float(r.trace.get("scale") or 1.0) / r.tags["batch"]


def _batch_draw(rows: list[Row], fams: list[str]) -> DrawFn:
    def draw(fig: Any) -> None:
        ax1, ax2 = fig.subplots(1, 2)
        for fam, color in zip(fams, _colors(len(fams))):
            pts = sorted((r for r in rows if r.tags["family"] == fam),
                         key=lambda r: r.tags["batch"])
            b = [r.tags["batch"] for r in pts]
            ax1.plot(b, [per_sample(r, "energy_total_pJ") / 1e6 for r in pts], "o-",
                     color=color, label=fam)
            ax2.plot(b, [100 * r.m["row_hit_rate"] for r in pts], "o-", color=color, label=fam)
        ax1.set(xlabel="batch size", ylabel="energy per sample (µJ)")
        ax2.set(xlabel="batch size", ylabel="row-hit rate (%)")
        for ax in (ax1, ax2):
            ax.set_xscale("log", base=2)
            ax.grid(alpha=0.3)
        ax1.legend(fontsize=8)
    return draw


# ---- memory share of a training step ------------------------------------------------------------
#: Memory-share compute model keys (``--compute``): ``peak_flops`` overrides the dtype-aware
#: peak of :class:`engine.workloads.compute.Accelerator` (unset: the traced step's dtype picks
#: it, tensor-core peak); ``utilisation`` is the central achieved utilisation (the report
#: adds the :data:`~engine.workloads.compute.UTILISATION_BAND` around it); ``power_W`` is the
#: chip's power while computing WITHOUT its DRAM (the simulator's DRAM energy is added
#: separately); ``memory_copies``: how many copies of the simulated memory serve the
#: accelerator in parallel (an A100 40 GB has 5 HBM2 stacks; the HBM2 preset is one stack):
#: DRAM time is divided by it, assuming the traffic spreads evenly; DRAM energy is not.
A100 = {"name": "A100", "peak_flops": None, "utilisation": 0.5, "power_W": 340.0,
        "memory_copies": 1, "dtype": None}


def _compute_times(r: Row, acc: Mapping[str, Any]) -> tuple[dict[float, float], str]:
    """Compute time (s) of the step part a trace holds, by utilisation, and where it came
    from: the trace generator's per-operator model when the trace carries it (and no peak is
    forced), else FLOPs / (peak x utilisation) with the same dtype-aware peak."""
    from engine.workloads.compute import UTILISATION_BAND, Accelerator
    us = sorted(set(UTILISATION_BAND) | {float(acc["utilisation"])})
    stored = r.trace.get("compute_ns") or {}
    if acc["peak_flops"] is None and stored and all(str(u) in stored for u in us):
        return {u: stored[str(u)] * 1e-9 for u in us}, "trace generator's operator model"
    dtype = acc["dtype"] or r.trace.get("dtype") or "float32"
    peak = acc["peak_flops"] or Accelerator().peak(dtype, matrix=True)
    flops = float(r.trace["flops"])
    return ({u: flops / (peak * u) for u in us},
            f"FLOPs / ({peak / 1e12:.4g} TFLOP/s {dtype} peak x utilisation)")


class MemoryShare(Study):
    name = "memshare"
    title = "Memory share of a training step"
    arrival = "saturate"        # DRAM time = service time of the step's traffic
    description = ("with the accelerator's compute model (engine.workloads.compute: A100, "
                   "dtype-aware peak, 50 % utilisation with a 0.3-0.7 band, 340 W compute "
                   "power without DRAM), the fraction of step time and energy in DRAM; each "
                   "--trace needs flops=X unless it is a trace from `python main.py trace`")
    params_help = "configs=PRESET,... (default: --config); the accelerator via --compute"

    def points(self, setup: StudySetup) -> list[Point]:
        self._check_params(setup, ["configs"])
        traces = resolved_traces(setup)
        missing = [t.label for t in traces if not t.flops and not t.compute_ns]
        if missing:
            raise StudyError(f"memshare study: trace(s) {', '.join(missing)} have no FLOP "
                             "count (write --trace LABEL=PATH,flops=X)")
        compute_model(setup.compute)
        names = list(setup.params.get("configs") or [setup.config])
        return self._variant_points(self._preset_variants(names, setup), traces, setup)

    def analyse(self, document: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
                ) -> Analysis:
        rows, notes = join(document, records)
        a = Analysis(self.title, notes=notes)
        acc = compute_model(document["setup"].get("compute") or {})
        u0 = float(acc["utilisation"])
        table = Table("Memory share per workload (utilisation "
                      f"{u0:g}; band over utilisation 0.7 to 0.3)",
                      ["workload", "memory", "DRAM time (µs)", "compute time (µs)",
                       "DRAM share, serial (%)", "band (%)", "DRAM exposed, overlapped (%)",
                       "DRAM energy (µJ)", "compute energy (µJ)", "DRAM energy share (%)",
                       "band (%)"], [])
        sources = set()
        for r in sorted(rows, key=lambda r: (r.label, r.tags["order"])):
            t_d = r.m["step_time_ns"] * 1e-9 / acc["memory_copies"]
            e_d = r.m["energy_total_pJ"] * 1e-12
            t_cs, src = _compute_times(r, acc)
            sources.add(src)
            share = {u: t_d / (t_d + t_c) for u, t_c in t_cs.items()}
            e_share = {u: e_d / (e_d + t_c * acc["power_W"]) for u, t_c in t_cs.items()}
            t_c = t_cs[u0]
            exposed = max(0.0, t_d - t_c) / max(t_d, t_c)
            lo, hi = min(share.values()), max(share.values())
            elo, ehi = min(e_share.values()), max(e_share.values())
            table.rows.append([r.label, r.tags["variant"], f"{t_d * 1e6:.2f}",
                               f"{t_c * 1e6:.2f}", f"{100 * share[u0]:.1f}",
                               f"{100 * lo:.1f}-{100 * hi:.1f}", f"{100 * exposed:.1f}",
                               f"{e_d * 1e6:.2f}", f"{t_c * acc['power_W'] * 1e6:.2f}",
                               f"{100 * e_share[u0]:.1f}", f"{100 * elo:.1f}-{100 * ehi:.1f}"])
            a.findings.append(Finding(
                f"{r.label} on {r.tags['variant']}: DRAM takes {100 * share[u0]:.1f} % of the "
                f"step time without overlap at {100 * u0:.0f} % utilisation "
                f"({100 * lo:.1f}-{100 * hi:.1f} % over utilisation 0.3-0.7; "
                f"{100 * exposed:.1f} % exposed with perfect overlap) and "
                f"{100 * e_share[u0]:.1f} % of the energy ({100 * elo:.1f}-{100 * ehi:.1f} %)",
                f"dram_time_share/{r.label}/{r.tags['variant']}", 100 * share[u0],
                50 * (hi - lo), "%"))
        a.notes.append(
            f"Assumptions: accelerator {acc['name']}; compute time from "
            f"{'; '.join(sorted(sources)) or 'no trace'}; achieved utilisation {u0:g} "
            "(band 0.3-0.7 reported beside it: the finding's ± is half the band, a "
            "sensitivity, not a statistical error); compute power "
            f"{acc['power_W']:g} W while computing, DRAM excluded (its energy is the "
            "simulator's); DRAM time is the time the memory needs to serve the trace's "
            "requests offered as fast as it takes them (arrival 'saturate'), divided by "
            f"memory_copies = {acc['memory_copies']:g}; 'serial' adds it to the compute "
            "time, 'overlapped' counts only the DRAM time compute cannot hide; DRAM energy "
            "includes background energy over the DRAM time only.")
        a.tables.append(table)
        a.figures.append(FigureSpec("Step time and energy split",
                                    "DRAM vs compute time (serial model, central "
                                    "utilisation) and energy per workload.",
                                    _share_draw(rows, acc)))
        return a


def compute_model(given: Mapping[str, Any]) -> dict[str, Any]:
    """The memory-share accelerator model: :data:`A100` updated with *given*, checked."""
    acc = dict(A100)
    extra = set(given) - set(acc)
    if extra:
        raise StudyError(f"compute model: unknown key(s) {', '.join(sorted(extra))} (expected "
                         f"{', '.join(acc)})")
    acc.update(given)
    for key in ("peak_flops", "utilisation", "power_W", "memory_copies"):
        if key == "peak_flops" and acc[key] is None:
            continue
        if not isinstance(acc[key], (int, float)) or acc[key] <= 0:
            raise StudyError(f"compute model: {key} = {acc[key]!r}: expected a positive number")
    if acc["utilisation"] > 1:
        raise StudyError(f"compute model: utilisation = {acc['utilisation']}: expected at "
                         "most 1")
    if acc["dtype"] not in (None, "float32", "bfloat16", "float16"):
        raise StudyError(f"compute model: dtype = {acc['dtype']!r}: expected float32, "
                         "bfloat16 or float16")
    return acc


def _share_draw(rows: list[Row], acc: Mapping[str, Any]) -> DrawFn:
    def draw(fig: Any) -> None:
        ax1, ax2 = fig.subplots(1, 2)
        pts = sorted(rows, key=lambda r: (r.label, r.tags["order"]))
        names = [f"{r.label}\n{r.tags['variant']}" for r in pts]
        x = np.arange(len(pts))
        u0 = float(acc["utilisation"])
        t_d = np.array([r.m["step_time_ns"] / 1e3 / acc["memory_copies"] for r in pts])
        t_c = np.array([_compute_times(r, acc)[0][u0] * 1e6 for r in pts])
        e_d = np.array([r.m["energy_total_pJ"] / 1e6 for r in pts])
        e_c = t_c * acc["power_W"]
        ax1.bar(x, t_c, label="compute")
        ax1.bar(x, t_d, bottom=t_c, label="DRAM")
        ax1.set_ylabel("time (µs)")
        ax2.bar(x, e_c, label="compute")
        ax2.bar(x, e_d, bottom=e_c, label="DRAM")
        ax2.set_ylabel("energy (µJ)")
        for ax in (ax1, ax2):
            ax.set_xticks(x, names, rotation=45, ha="right", fontsize=7)
            ax.legend(fontsize=8)
            ax.grid(axis="y", alpha=0.3)
        fig.subplots_adjust(bottom=0.3, wspace=0.3)
    return draw


# ---- registry -----------------------------------------------------------------------------------
from engine.studies.recommendations import Recommendations  # noqa: E402  (builds on the above)

STUDIES: dict[str, Study] = {s.name: s for s in (
    TimingSensitivity(), Architecture(), ControllerPolicy(), Technology(), HotSpots(),
    BatchSize(), MemoryShare(), Recommendations())}


def get_study(name: str) -> Study:
    """The study called *name*, or a :class:`StudyError` listing the available ones."""
    try:
        return STUDIES[name]
    except KeyError:
        from engine.names import did_you_mean
        raise StudyError(f"no study named '{name}'{did_you_mean(name, STUDIES)}; available: "
                         f"{', '.join(STUDIES)}") from None
