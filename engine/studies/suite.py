"""A set of studies run one after another on generated traces: the loop the benchmark
scripts share (``benchmarks/run_studies.py``, ``benchmarks/run_claims.py``).

    recipes = [TraceRecipe("ddpm", "ddpm", batch=8, resolution=32)]
    traces = make_traces(out / "traces", recipes)
    results = run_suite({"timing": StudySetup(traces, config="DDR4-3200-8ch")}, out)

Each study writes its results folder (``study.json``, ``results.jsonl``, ``report.html``,
``report.pdf``) under ``out/NAME``; rerunning resumes (finished points and existing traces
are kept).  Traces are generated for one memory and re-placed by the studies for every
other memory they run on (:mod:`engine.studies.placed`).
"""
from __future__ import annotations

import json
import logging
import platform
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from engine.fileio import atomic_write_text
from engine.studies.spec import StudySetup, TraceInput

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TraceRecipe:
    """A training step to generate (:class:`engine.workloads.generate.TraceSpec` fields)."""

    label: str
    workload: str
    batch: int
    resolution: int | None = None
    sample: float | None = None
    memory: str = "DDR4-3200-8ch"
    address_hash: str = "gpu"
    overrides: Mapping[str, Any] = field(default_factory=dict)
    kind: str = ""
    seed: int = 0                # sampling seed (which windows are kept)
    placement_seed: int = 0      # seed of the 2 MiB frame permutation
    optimizer: str = "foreach"   # AdamW kernels (TraceSpec.optimizer)


def make_traces(folder: Path, recipes: Sequence[TraceRecipe],
                report: Callable[[str], None] | None = None) -> list[TraceInput]:
    """The recipes' traces in ``folder`` (generated when missing), resolved."""
    from engine.workloads.generate import TraceSpec, generate_trace
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for r in recipes:
        path = folder / f"{r.label}.h5"
        if not path.is_file():
            c0 = time.process_time()
            s = generate_trace(TraceSpec(r.workload, batch=r.batch, resolution=r.resolution,
                                         sample=r.sample, memory=r.memory,
                                         address_hash=r.address_hash, seed=r.seed,
                                         placement_seed=r.placement_seed,
                                         optimizer=r.optimizer,
                                         overrides=dict(r.overrides)), path)
            msg = (f"trace {r.label}: {s['requests']} requests for {r.memory} "
                   f"({time.process_time() - c0:.0f} CPU-s)")
            log.info(msg)
            if report is not None:
                report(msg)
        out.append(TraceInput(label=r.label, path=str(path), kind=r.kind).resolved())
    return out


@dataclass
class SuiteResult:
    name: str
    points: int
    ran: int
    reused: int
    failed: int
    cpu_s: float                 # this process's CPU seconds (workers not included)
    findings: list[dict[str, Any]]
    notes: list[str]
    folder: Path
    errors: list[str] = field(default_factory=list)   # the failed points' reasons, counted


def failure_reasons(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The distinct errors of the failed points among ``records``, each with how many points
    gave it, most frequent first."""
    counts: dict[str, int] = {}
    for r in records:
        if r.get("status") != "ok":
            why = str(r.get("error") or r.get("status"))
            counts[why] = counts.get(why, 0) + 1
    return [f"{n} point{'s' if n != 1 else ''}: {why}"
            for why, n in sorted(counts.items(), key=lambda kv: -kv[1])]


def run_suite(runs: Mapping[str, StudySetup], out: Path, *, workers: int | None = None,
              only: Sequence[str] | None = None,
              report: Callable[[SuiteResult], None] | None = None) -> dict[str, SuiteResult]:
    """Run each named study into ``out/NAME``, render its report, and write every study's
    findings to ``out/findings.json`` (kept across runs: a rerun of some studies updates
    only theirs)."""
    from engine.studies import get_study, load_results, render_report, run_study
    findings_path = out / "findings.json"
    stored: dict[str, Any] = {}
    if findings_path.is_file():
        stored = json.loads(findings_path.read_text()).get("findings", {})
    results: dict[str, SuiteResult] = {}
    for name, setup in runs.items():
        if only and name not in only:
            continue
        c0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime
        folder = out / name
        outcome = run_study(name, setup, folder=folder, workers=workers)
        document, records = load_results(folder)
        analysis = get_study(name).analyse(document, records)
        render_report(document, records, folder)
        found = [{"key": f.key, "text": f.text, "value": f.value, "error": f.error,
                  "unit": f.unit} for f in analysis.findings]
        res = SuiteResult(name, len(outcome.records), outcome.ran, outcome.reused,
                          sum(r.get("status") != "ok" for r in outcome.records),
                          resource.getrusage(resource.RUSAGE_SELF).ru_utime - c0, found,
                          list(analysis.notes), folder, failure_reasons(outcome.records))
        results[name] = res
        stored[name] = found
        atomic_write_text(findings_path, json.dumps(
            {"machine": platform.platform(), "python": platform.python_version(),
             "findings": stored}, indent=1))
        if report is not None:
            report(res)
    return results


def print_result(res: SuiteResult) -> None:
    """The benchmark scripts' report of one study (stdout)."""
    print(f"\n== {res.name}: {res.points} points ({res.ran} run, {res.reused} reused, "
          f"{res.failed} failed), {res.cpu_s:.0f} CPU-s in this process; report "
          f"{res.folder / 'report.html'}", flush=True)
    for f in res.findings:
        print(f"  - {f['text']}", flush=True)
    for n in res.notes:
        print(f"  note: {n[:300]}", flush=True)
    for e in res.errors:
        print(f"  failed: {e[:300]}", flush=True)
