"""Run a named study end to end: build its points, run what is missing, keep the results.

    from engine.studies import StudySetup, TraceInput, run_study, render_report

    setup = StudySetup([TraceInput("ddpm", "ddpm.h5"), TraceInput("resnet50", "r50.h5")],
                       config="DDR4-3200", params={"tRCD": [10, 12, 14, 16]})
    outcome = run_study("timing", setup, folder="out/timing", workers=2)
    render_report(outcome.document, outcome.records, "out/timing")

Results go to a results folder (``folder=``, see :mod:`engine.studies.sinks`) or to a project
(``project=`` an open writable ``projects.store.Project``, ``study_name=`` its name there).
Running the same study into the same place again resumes it: finished points are kept.
"""
from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from engine.fileio import prepare_output
from engine.studies.catalog import get_study
from engine.studies.runner import CancelFn, ProgressFn, run_points
from engine.studies.sinks import STUDY_FILE, ProjectResults, ResultsFolder, study_document
from engine.studies.spec import Point, StudyError, StudySetup

log = logging.getLogger(__name__)


@dataclass
class StudyOutcome:
    document: dict[str, Any]          # study name, setup, points (as stored)
    records: list[dict[str, Any]]     # one per point that has a result, sorted by point id
    ran: int                          # points simulated in this call
    reused: int                       # points found finished in the sink


def run_study(name: str, setup: StudySetup, *, folder: str | os.PathLike[str] | None = None,
              project: Any = None, study_name: str | None = None, workers: int | None = None,
              cluster: Any = None, progress: ProgressFn | None = None,
              cancel: CancelFn | None = None, security: Any = None,
              on_start: Callable[[int], None] | None = None) -> StudyOutcome:
    """Build the study's points from *setup* and run them (see the module docstring).
    *on_start(points)* is called once the setup and the traces were checked, before any
    point runs."""
    study = get_study(name)
    if folder is not None and project is not None:
        raise StudyError("give a results folder or a project, not both")
    if folder is not None:
        # (a file, or a folder this process cannot write in, fails now, not once the points
        # ran; a missing folder is made when the study starts)
        prepare_output(Path(folder) / STUDY_FILE, "study results", make=False)
    # the traces as the study stores them: absolute paths, kinds and digests (as given, a
    # relative path and an empty digest went into study.json and the report's setup table)
    setup = dataclasses.replace(setup, traces=[t.resolved() for t in setup.traces])
    points = study.points(setup)
    if not points:
        raise StudyError(f"study '{name}': the setup gives no points")
    check_trace_heads(points)
    if on_start is not None:
        on_start(len(points))
    for line in unplaceable(points):
        log.warning("study '%s': %s", name, line)
    document = study_document(name, setup.to_dict(), [p.to_dict() for p in points])
    sink: ResultsFolder | ProjectResults | None = None
    if folder is not None:
        sink = ResultsFolder(folder)
    elif project is not None:
        sink = ProjectResults(project, study_name or name)
    if sink is not None:
        sink.begin(document)
    before = set(sink.done()) if sink is not None else set()
    records = run_points(points, sink=sink, workers=workers, cluster=cluster,
                         progress=progress, cancel=cancel, security=security)
    reused = len(before & {p.point_id for p in points})
    return StudyOutcome(document, records, len(records) - reused, reused)


#: requests read from the start of each trace before a study runs
HEAD_REQUESTS = 4096


def check_trace_heads(points: list[Point]) -> None:
    """Read the first HEAD_REQUESTS requests of every trace the points replay, once each,
    before anything runs: a malformed file is one clear error, not the same error from every
    point (errors deeper in a file still fail the points that reach them, each with the
    file's line)."""
    from engine.errors import DiffMemError
    from engine.trace import iter_trace
    seen: set[tuple[str, str]] = set()
    for p in points:
        path, group = str(p.trace.get("path")), str(p.trace.get("group") or "trace")
        if (path, group) in seen or p.trace.get("placement_error"):
            continue
        seen.add((path, group))
        try:
            for _ in iter_trace(path, chunk_size=HEAD_REQUESTS, group=group):
                break
        except DiffMemError as exc:
            raise StudyError(f"trace '{p.trace.get('label')}': {exc}") from None


def unplaceable(points: list[Point]) -> list[str]:
    """One line per (trace, memory) whose points cannot run because the trace's training step
    does not fit that memory (the points' ``placement_error``), with how many points: said
    before the study runs, so that a setup that loses a workload on some memory shows it at
    once rather than one failed point at a time."""
    seen: dict[tuple[str, str, str], int] = {}
    for p in points:
        why = p.trace.get("placement_error")
        if why:
            key = (str(p.trace.get("label")), str(p.config.get("name")), str(why))
            seen[key] = seen.get(key, 0) + 1
    return [f"{n} point{'s' if n != 1 else ''} of trace '{label}' on {mem} cannot run: {why}"
            for (label, mem, why), n in seen.items()]


def load_results(folder: str | os.PathLike[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(study document, latest record per point) from a results folder."""
    rf = ResultsFolder(Path(folder))
    document = rf.load_document()
    latest: dict[str, dict[str, Any]] = {}
    for rec in rf.records():
        if rec.get("status") == "ok" or rec["point_id"] not in latest:
            latest[rec["point_id"]] = rec
    return document, [latest[k] for k in sorted(latest)]


def load_project_study(project: Any, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(study document, records) of study *name* stored in a project."""
    document = project.study_document(name)
    recs = project.study_results(name)
    return document, [recs[k] for k in sorted(recs)]
