"""Where study results go as they arrive: a results folder (CLI) or a project file (GUI).

Both keep the study's definition (name, setup, points) and one record per finished point, and
answer :meth:`done` so that a restarted study skips what it already has.

Results folder layout (``DIR``)::

    study.json        {"study", "setup", "points", "created", "app_version"}, written atomically
    results.jsonl     one result record per line, appended and fsync'd as each point finishes

``results.jsonl`` is an append-only journal rather than a file rewritten through a temporary
(rewriting the whole file per result would cost O(points^2)): a crash can at worst leave a
torn last line, which :meth:`ResultsFolder.records` skips with a warning (that point is simply
run again).
"""
from __future__ import annotations

import json
import logging
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Protocol

from engine.fileio import atomic_write_text, json_default
from engine.studies.spec import StudyError

log = logging.getLogger(__name__)

STUDY_FILE = "study.json"
RESULTS_FILE = "results.jsonl"
APP_VERSION = "0.1.0"


class ResultSink(Protocol):
    """What the runner needs from a store of results."""

    def done(self) -> dict[str, dict[str, Any]]:
        """point id -> stored record, for the points that finished without error."""

    def add(self, record: dict[str, Any]) -> None:
        """Store one result record (called as each point finishes)."""

    def flush(self) -> None:
        """Make everything added so far durable."""


def study_document(name: str, setup: dict[str, Any], points: list[dict[str, Any]]
                   ) -> dict[str, Any]:
    """The study's definition as stored (everything a report needs besides the results)."""
    return {"study": name, "setup": setup, "points": points,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "app_version": APP_VERSION}


#: what a study's points share, beside their traces and swept parameters: a rerun into the
#: same folder that changes one of these does not extend the earlier run
SETUP_BASIS = ("config", "overrides", "cycles", "arrival", "intake")


def setup_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """'' if setup ``new`` may extend ``old`` (same memory, overrides, run length, arrival and
    intake), else what changed, for the user ("config was 'A', now 'B'")."""
    diff = [f"{k} was {old.get(k)!r}, now {new.get(k)!r}" for k in SETUP_BASIS
            if (old.get(k) or None) != (new.get(k) or None)]
    return "; ".join(diff)


def point_slot(point: Mapping[str, Any]) -> tuple[str, str]:
    """What a study point stands for in its analysis: its trace's label and its tags."""
    return (str(point.get("trace", {}).get("label")),
            json.dumps(point.get("tags", {}), sort_keys=True, default=str))


def document_shape_error(doc: Any) -> str:
    """What is wrong with the shape of a study definition read from a file ('' if nothing):
    the analysis and the report index it without further checks."""
    if not isinstance(doc, dict):
        return f"a JSON {type(doc).__name__}"
    if not isinstance(doc.get("study"), str):
        return "no 'study' name" if "study" not in doc else \
            f"'study' as a {type(doc['study']).__name__}"
    points = doc.get("points")
    if not isinstance(points, list):
        return "no 'points'" if points is None else f"'points' as a {type(points).__name__}"
    for k, pt in enumerate(points):
        if not (isinstance(pt, dict) and isinstance(pt.get("point_id"), str)
                and isinstance(pt.get("trace"), dict) and isinstance(pt.get("tags"), dict)):
            return f"points[{k}] = {json.dumps(pt, default=str)[:60]}"
    return ""


class ResultsFolder:
    """A study's results in a folder (see the module docstring)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.results_path = self.folder / RESULTS_FILE
        self.study_path = self.folder / STUDY_FILE

    def begin(self, document: dict[str, Any]) -> None:
        """Write the study definition; an existing folder must hold the same study."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if self.study_path.is_file():
            old = self.load_document()
            if old.get("study") != document["study"]:
                raise StudyError(f"{self.study_path}: holds study '{old.get('study')}', not "
                                 f"'{document['study']}'; choose another --out folder")
            # keep the points of earlier runs too (their results stay in the journal), but
            # not one whose place this run's points take: the same workload and tags with
            # other inputs (a regenerated trace, another config or placement), whose result
            # the analysis would otherwise pool with the new one's
            known = {p["point_id"] for p in document["points"]}
            slots = {point_slot(p) for p in document["points"]}
            earlier = [p for p in old.get("points", []) if p["point_id"] not in known]
            kept = [p for p in earlier if point_slot(p) not in slots]
            if len(kept) < len(earlier):
                log.info("%s: %d point(s) of an earlier run replaced by this run's (same "
                         "workload and tags, other inputs)", self.study_path,
                         len(earlier) - len(kept))
            changed = setup_change(old.get("setup") or {}, document.get("setup") or {})
            if kept and changed:
                # another memory, run length or arrival: their results would be pooled
                # with this run's in one fit
                log.warning("%s: the earlier run's %s: its %d point(s) are left out of this "
                            "study (their results stay in %s); use another folder to keep "
                            "both", self.study_path, changed, len(kept), RESULTS_FILE)
                kept = []
            elif kept:
                log.warning("%s: %d point(s) of earlier runs in this folder are analysed "
                            "with this run's (this setup extends theirs: other traces or "
                            "parameter values); use another folder for a separate study",
                            self.study_path, len(kept))
            document = dict(document, created=old.get("created", document["created"]),
                            points=document["points"] + kept)
        atomic_write_text(self.study_path, json.dumps(document, indent=1,
                                                      default=json_default) + "\n")

    def load_document(self) -> dict[str, Any]:
        try:
            doc = json.loads(self.study_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StudyError(f"{self.study_path}: no study here (missing {STUDY_FILE})") \
                from None
        except (OSError, ValueError) as exc:
            raise StudyError(f"{self.study_path}: cannot read: {exc}") from exc
        found = document_shape_error(doc)
        if found:
            raise StudyError(f"{self.study_path}: not a study definition (expected a JSON "
                             f"object with 'study' and a list of 'points', each with "
                             f"'point_id', 'trace' and 'tags'; found {found})")
        return doc

    def records(self) -> list[dict[str, Any]]:
        """Every record in the journal, in file order (torn or malformed lines skipped)."""
        if not self.results_path.is_file():
            return []
        out = []
        with self.results_path.open("r", encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                    if not isinstance(rec, dict) or "point_id" not in rec:
                        raise ValueError("not a result record")
                except ValueError as exc:
                    log.warning("%s:%d: skipped an unreadable result line (%s); that point "
                                "will run again", self.results_path, lineno, exc)
                    continue
                out.append(rec)
        return out

    def done(self) -> dict[str, dict[str, Any]]:
        return {r["point_id"]: r for r in self.records() if r.get("status") == "ok"}

    def add(self, record: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, default=json_default, separators=(",", ":")) + "\n"
        with self.results_path.open("a+b") as f:
            # a record cut short by a kill during its append has no line end: this one starts
            # on a line of its own (else the two made one unreadable line and both were lost)
            if f.seek(0, os.SEEK_END) > 0:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n")
            f.write(line.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())

    def flush(self) -> None:
        pass


class ProjectResults:
    """A study stored in an open, writable :class:`projects.store.Project` (duck-typed here:
    ``engine`` does not import ``projects``). Each result goes into the project's working copy
    at once; the project file itself is saved at most every ``save_every_s`` seconds and at the
    end (:meth:`flush`), so an interrupted study loses at most that much work."""

    def __init__(self, project: Any, name: str, *, save_every_s: float = 10.0) -> None:
        self.project = project
        self.name = name
        self.save_every_s = save_every_s
        self._last_save = time.monotonic()

    def begin(self, document: dict[str, Any]) -> None:
        self.project.put_study(self.name, document)
        self.project.save()
        self._last_save = time.monotonic()

    def done(self) -> dict[str, dict[str, Any]]:
        return {pid: r for pid, r in self.project.study_results(self.name).items()
                if r.get("status") == "ok"}

    def add(self, record: dict[str, Any]) -> None:
        self.project.add_study_result(self.name, record)
        if time.monotonic() - self._last_save >= self.save_every_s:
            self.flush()

    def flush(self) -> None:
        self.project.save()
        self._last_save = time.monotonic()
