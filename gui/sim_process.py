"""The engine side of a GUI simulation: runs in a child process, talks through a pipe (no Qt).

Why a process and not only a thread: the numba kernel holds the GIL for each of its calls
(milliseconds each), and every transition of the GUI thread between Python and Qt's C++ code
(each ``QPainter`` call in a pyqtgraph ``paint()``) then waits for the current kernel call to
end.  With the simulation in a worker *thread*, the GUI thread stalled up to 0.6-0.9 s while a
1M-request trace ran (benchmarks/bench_gui.py, see benchmarks/RESULTS.md); a lower
``sys.setswitchinterval`` did not help.  In a child process the GUI keeps its GIL to itself.

Messages sent to the parent (tuples, first item the kind)::

    ("notes", [str, ...])           what the traces say against the memory (a generated
                                    trace placed for another memory), before the run
    ("epochs", [dict, ...])         epochs (see :func:`epoch_dict`), batched: at most one
                                    message per SEND_EVERY_S, so a run with thousands of
                                    short epochs does not flood the pipe and the GUI
    ("finished", Stats)
    ("failed", message, traceback)
    ("cancelled",)

The cancel flag is a ``multiprocessing.Event`` the simulator checks between kernel calls.
Everything crosses the pipe pickled, between two processes of this program only (never a
user file).
"""
from __future__ import annotations

import os
import time
import traceback
from pathlib import Path
from typing import Any, Sequence

import numpy as np

SEND_EVERY_S = 0.05
#: The simulation process runs at a lower CPU priority than the window: on a machine with few
#: cores the GUI thread's repaints (40-130 ms for the plot grid on the 2-core reference VM)
#: otherwise wait behind a simulation that wants a whole core.
CHILD_NICENESS = 5


def epoch_dict(cfg: Any, rec: Any) -> dict[str, Any]:
    """A plain dict of one epoch's headline numbers from an ``engine.simulator.EpochRecord``.

    Keys: ``start``, ``end`` (cycles), ``bandwidth_GBps`` (data moved / epoch time),
    ``row_hit_rate`` (row hits / column commands, NaN when none), ``avg_read_latency``
    (cycles, NaN when no read completed), ``reads``, ``writes`` and ``bank_utilisation``
    (fraction of the epoch each bank had a row open, flattened over channels and banks).
    """
    length = max(1, int(rec.end) - int(rec.start))
    nbytes = (int(rec.reads_done) + int(rec.writes_done)) * float(cfg.request_size_bytes)
    seconds_ns = length * float(cfg.tCK)
    cols = int(rec.column_cmds)
    reads = int(rec.reads_done)
    util = np.asarray(rec.bank_open_cycles, dtype=np.float64).reshape(-1) / length
    return {
        "start": int(rec.start),
        "end": int(rec.end),
        "bandwidth_GBps": nbytes / seconds_ns if seconds_ns > 0 else 0.0,   # bytes/ns == GB/s
        "row_hit_rate": int(rec.row_hits) / cols if cols else float("nan"),
        "avg_read_latency": int(rec.read_latency_sum) / reads if reads else float("nan"),
        "reads": reads,
        "writes": int(rec.writes_done),
        "bank_utilisation": np.clip(util, 0.0, 1.0),
    }


def simulate_in_child(cfg: Any, traces: Sequence[str | Path], options: Any, conn: Any,
                      cancel: Any) -> None:
    """Entry point of the child process: simulate and report through ``conn``."""
    try:
        os.nice(CHILD_NICENESS)
    except (AttributeError, OSError):          # no nice() (Windows) or not permitted
        pass
    try:
        from engine.errors import SimulationCancelled
        from engine.simulator import SimOptions, simulate_trace

        if cancel.is_set():
            conn.send(("cancelled",))
            return
        from engine.workloads.retarget import placement_notes
        notes = [f"{Path(t).name}: {line}" for t in traces for line in placement_notes(t, cfg)]
        if notes:
            conn.send(("notes", notes))

        batch: list[dict[str, Any]] = []
        last = [time.monotonic()]

        def flush() -> None:
            if batch:
                conn.send(("epochs", list(batch)))
                batch.clear()
            last[0] = time.monotonic()

        def on_epoch(sim: Any, rec: Any) -> None:
            if rec is not None:
                batch.append(epoch_dict(cfg, rec))
                if time.monotonic() - last[0] >= SEND_EVERY_S:
                    flush()

        if options is None:
            options = SimOptions()
        elif isinstance(options, dict):           # the GUI passes plain keyword arguments
            options = SimOptions(**options)
        try:
            stats = simulate_trace(cfg, [Path(t) for t in traces], options,
                                   progress=on_epoch, cancel=cancel.is_set)
        except SimulationCancelled:
            conn.send(("cancelled",))
            return
        flush()
        conn.send(("finished", stats))
    except BaseException as exc:  # noqa: BLE001 - reported to the GUI, never lost
        try:
            conn.send(("failed", str(exc) or type(exc).__name__, traceback.format_exc()))
        except Exception:  # noqa: BLE001 - the parent is gone: nobody to tell
            pass
    finally:
        conn.close()
