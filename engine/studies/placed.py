"""Derived traces of a study: where they go, and each trace as placed for a point's memory.

A generated trace is placed for the memory it was generated for
(:mod:`engine.workloads.retarget`); a point that replays it on another device gets a copy
re-placed for that device, made once in :func:`derived_dir`.  If the step does not fit the
device, the point carries the reason (``placement_error``) and fails with it when run, while
the study's other points run.
"""
from __future__ import annotations

import dataclasses

import os
from pathlib import Path
from typing import Any

from engine.errors import DiffMemError
from engine.studies.spec import TraceInput, file_digest

_CACHE: dict[tuple, TraceInput | str] = {}


def derived_dir() -> Path:
    """Where derived traces go: $DIFFMEM_DERIVED_DIR, else ~/.cache/diffmem/derived."""
    env = os.environ.get("DIFFMEM_DERIVED_DIR")
    return Path(env) if env else Path.home() / ".cache" / "diffmem" / "derived"


def placed_input(trace: TraceInput, cfg: Any) -> TraceInput | str:
    """``trace`` as it must be replayed on ``cfg``: itself, a re-placed copy (same label,
    kind, batch, FLOPs, scale and compute time; its own path and digest), or the reason it
    cannot be placed there (a message)."""
    from engine.workloads.placement import geometry
    from engine.workloads.retarget import placed_for
    p = Path(trace.path)
    try:
        st = p.stat()
    except OSError:
        return trace
    g = geometry(cfg)
    key = (str(p), st.st_size, st.st_mtime_ns, trace.group, repr(sorted(g.items())),
           float(cfg.tCK), cfg.name, str(derived_dir()))
    hit = _CACHE.get(key)
    if isinstance(hit, TraceInput) and not Path(hit.path).is_file():
        hit = None                                 # the derived copy was deleted
    if hit is None:
        try:
            path, group = placed_for(p, cfg, derived_dir(), trace.group)
        except DiffMemError as exc:
            hit = str(exc)
        else:
            hit = trace if path == p else dataclasses.replace(
                trace, path=str(path), group=group, digest=file_digest(path))
        _CACHE[key] = hit
    return hit
