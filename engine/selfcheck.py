"""Installation self-check: ``python main.py selfcheck`` (``diffmem selfcheck`` in a bundle).

Checks that an installation can do its work: the shipped resources are found, the numba
kernels compile (or load from the cache) and simulate, worker processes spawn (studies)
and matplotlib renders (study reports); the optimiser's checks (PyTorch imports and
differentiates, the optimiser's modules import) are in optimizer/selfcheck.py, since the
engine never imports torch or the optimiser (tests/test_import_rules.py).  Used by the installer's smoke test
(tests/test_packaging_bundle.py) and by a support engineer on a user's machine; not listed
in ``--help``.  Light to import: every check imports what it needs when it runs.
"""
from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass
from typing import Callable, Sequence

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check: ``ok``, a one-line detail, and how long it took."""

    name: str
    ok: bool
    detail: str
    seconds: float


def check_resources() -> str:
    """The DRAM presets, the IO energy table and the demo trace are where the code looks."""
    from engine.config import PRESET_DIR, list_presets, load_config

    demo_trace = PRESET_DIR.parents[1] / "traces" / "demo.trace"   # resources/traces
    presets = list_presets()
    if not presets:
        raise RuntimeError(f"no DRAM presets in {PRESET_DIR}")
    load_config(presets[0])
    if not demo_trace.is_file():
        raise RuntimeError(f"demo trace missing: {demo_trace}")
    return f"{len(presets)} presets in {PRESET_DIR}; demo trace {demo_trace.name}"


def check_numba() -> str:
    """The simulator kernel runs on a few requests; where numba caches it."""
    from engine.config import load_config
    from engine.simulator import SimOptions, Simulator

    sim = Simulator(load_config("DDR4-3200"), SimOptions())
    n = 64
    sim.access([i * 4096 for i in range(n)], [64] * n, [i % 4 == 0 for i in range(n)],
               list(range(0, 4 * n, 4)))
    s = sim.finish().summary
    done = int(s["num_reads_done"]) + int(s["num_writes_done"])
    if done != n:
        raise RuntimeError(f"simulated {done} of {n} requests")
    where = "numba's default locations"
    if getattr(sys, "frozen", False):
        from engine.numba_cache import cache_root
        where = str(cache_root())
    return f"{done} requests in {s['num_cycles']} cycles; kernel cache: {where}"


def _square(x: int) -> int:
    return x * x


def check_processes() -> str:
    """Worker processes start with the *spawn* method, as the study runner starts them (in a
    bundle: the executable re-runs itself, which needs multiprocessing.freeze_support())."""
    import concurrent.futures as cf
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        got = list(pool.map(_square, range(4)))
    if got != [0, 1, 4, 9]:
        raise RuntimeError(f"worker processes returned {got}")
    return "2 spawned workers ok"


def check_plots() -> str:
    """matplotlib (study reports) renders a PNG, when it is part of this installation."""
    import importlib.util
    import io

    if importlib.util.find_spec("matplotlib") is None:
        return "matplotlib not installed (study reports unavailable)"
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 2), dpi=50)
    FigureCanvasAgg(fig)
    fig.add_subplot().plot([0, 1, 2], [0, 1, 4])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    if not buf.getvalue().startswith(b"\x89PNG"):
        raise RuntimeError("matplotlib did not write a PNG")
    return f"PNG of {len(buf.getvalue())} bytes"


CHECKS: tuple[tuple[str, Callable[[], str]], ...] = (
    ("resources", check_resources),
    ("numba", check_numba),
    ("processes", check_processes),
    ("plots", check_plots),
)


def run_checks(checks: Sequence[tuple[str, Callable[[], str]]] | None = None
               ) -> list[CheckResult]:
    """Run the checks (default: this module's CHECKS; `main.py selfcheck` adds the
    optimiser's, optimizer/selfcheck.py); a failing check is reported, not raised."""
    results = []
    for name, check in (CHECKS if checks is None else checks):
        t0 = time.perf_counter()
        try:
            detail, ok = check(), True
        except Exception as exc:  # noqa: BLE001 - the report names every failure
            log.debug("self-check %s failed", name, exc_info=True)
            detail, ok = f"{type(exc).__name__}: {exc}", False
        results.append(CheckResult(name, ok, detail, time.perf_counter() - t0))
    return results
