"""Worker threads of the optimiser view: a search (``optimizer.methods.optimize``) and a DRAM
co-simulation of its schedule (``optimizer.cosim.cosimulate``).

    run = start_optimization(OptimizerJob("resnet18", "large", ("random",), evaluations=200))
    run.progress.connect(view.on_points)     # list of progress dicts, at most ~20 batches/s
    run.result.connect(view.on_result)       # OptimizerOutcome, one per method that finished
    run.finished.connect(view.on_done)       # list of OptimizerOutcome, after the join
    run.failed.connect(view.on_failed)       # (message, traceback), after the join
    run.cancelled.connect(view.on_cancelled) # after the join
    run.cancel()                             # thread-safe; the methods check it every step

The search runs in a QThread of the GUI process: torch is imported there, when the first run
starts (never at window start-up).  The co-simulation runs the numba engine, whose kernel holds
the GIL for each call, so it runs in a child process (:mod:`gui.cosim_process`, the same reason
as :mod:`gui.sim_process`); its thread only relays messages, and a cancel terminates the child.

As in :mod:`gui.workers`, the outcome is kept on the worker and re-emitted from
``QThread.finished`` after ``QThread.wait()``: no "done" signal arrives while the thread runs.
"""
from __future__ import annotations

import math
import os
import threading
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from PySide6.QtCore import QObject, Signal, Slot

from gui.threaded_run import ThreadedRun, active_runs
from optimizer.method_names import DEFAULT_FUSED_HALO, FUSED_HALO_RULES

EMIT_EVERY_S = 0.05          # progress batches at most 20 times a second
POLL_S = 0.02                # the co-simulation thread's look at the pipe and the cancel flag
JOIN_S = 5.0
WORKER_NICENESS = 5          # the search thread yields the CPU to the GUI thread (Linux)
_HALO_LOCK = threading.Lock()    # the rule is the cost model's process-wide setting



def active_optimizer_runs() -> list[QObject]:
    """The optimiser and co-simulation runs whose thread has not finished and been joined."""
    return active_runs((OptimizerRun, CosimRun))


@dataclass
class OptimizerJob:
    """What to optimise: a network (built-in name or .json path), a hardware (name or .toml
    path), the methods to run one after another with the same budget and seed."""

    network: str
    hardware: str
    methods: Sequence[str] = ("fadiff",)
    evaluations: int | None = 1000
    seconds: float | None = None
    seed: int = 0
    cpu_seconds: float | None = None        # optimizer.search.Budget.cpu_seconds
    fused_halo: str = DEFAULT_FUSED_HALO    # the cost model's fused-input rule (FUSED_HALO_RULES)

    def __post_init__(self) -> None:
        if self.fused_halo not in FUSED_HALO_RULES:
            raise ValueError(f"unknown fused-halo rule '{self.fused_halo}': expected one of "
                             f"{', '.join(FUSED_HALO_RULES)}")


@dataclass
class OptimizerOutcome:
    """One finished search: the schedule file's content and the objects a co-simulation
    needs (the network, the schedule and the hardware; no torch objects)."""

    method: str
    seed: int
    network: str
    hardware: str
    schedule: dict[str, Any]                 # optimizer.methods.schedule_json
    history: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    evaluations: int = 0
    net: Any = None                          # optimizer.workload.Network
    hw: Any = None                           # optimizer.hardware.GemminiHardware
    mapping: Any = None                      # optimizer.mapping.Schedule
    stopped_early: bool = False              # the user cancelled: the best schedule so far
    cosim_payload: dict[str, Any] | None = None   # its last co-simulation (shown with it)
    run_id: str | None = None                # its name in the project, once stored
    fused_halo: str | None = None            # the rule it was searched under; None: a stored
                                             # run from before the rule was recorded

    @property
    def edp(self) -> float:
        return float(self.schedule["edp"])

    @property
    def energy_pj(self) -> float:
        return float(self.schedule["energy_pj"])

    @property
    def latency_cycles(self) -> float:
        return float(self.schedule["latency_cycles"])

    @property
    def valid(self) -> bool:
        return bool(self.schedule["valid"])


@contextmanager
def fused_halo_rule(rule: str | None) -> Iterator[str]:
    """Apply the cost model's fused-input rule ``rule`` (None: leave it as it is) for the
    block, as ``main.py``'s ``--fused-halo`` does for its process, and put the previous rule
    back after it; yields the rule in force.  Imports the cost model (torch)."""
    from optimizer import costmodel

    with _HALO_LOCK:
        before = costmodel.FUSED_HALO
        if rule is not None:
            if rule not in costmodel.FUSED_HALO_RULES:
                raise ValueError(f"unknown fused-halo rule '{rule}'")
            costmodel.FUSED_HALO = rule
        try:
            yield costmodel.FUSED_HALO
        finally:
            costmodel.FUSED_HALO = before


def lower_thread_priority(step: int = WORKER_NICENESS) -> None:
    """Raise the calling thread's nice value by ``step`` (Linux: nice is per thread; the
    threads it starts, e.g. torch's pool, inherit it), so the GUI thread wins the CPU on a
    machine with few cores.  No-op where unsupported."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + step)
    except (AttributeError, OSError):
        pass


def progress_dict(p: Any) -> dict[str, Any]:
    """A plain dict of an ``optimizer.search.Progress`` (inf best EDP becomes NaN)."""
    best = float(p.best_edp)
    return {"method": p.method, "step": int(p.step), "evaluations": int(p.evaluations),
            "elapsed_s": float(p.elapsed_s), "loss": float(p.loss), "edp": float(p.edp),
            "best_edp": best if math.isfinite(best) else math.nan, "tau": float(p.tau),
            "violation": float(p.violation), "fused": float(p.fused),
            "stage": str(getattr(p, "stage", "search"))}


def final_point(method: str, history: list[dict[str, Any]], evaluations: int, wall_s: float,
                schedule: dict[str, Any]) -> dict[str, Any] | None:
    """The curves' last point: the evaluations the run counted in all (a method's final phase,
    e.g. FADiff's polish, evaluates candidates without a progress report) and the best valid
    EDP including the schedule it returned (the "current" curve has no value there); None
    when the last report already has that count."""
    last = history[-1]["evaluations"] if history else 0
    if evaluations <= last:
        return None
    edp = float(schedule.get("edp", math.nan))
    valid = bool(schedule.get("valid", False))
    best = [h["best_edp"] for h in history if math.isfinite(h.get("best_edp", math.nan))]
    best_edp = min(best + ([edp] if valid else [])) if (best or valid) else math.nan
    return {"method": method, "step": (history[-1]["step"] + 1) if history else 1,
            "evaluations": int(evaluations), "elapsed_s": float(wall_s), "loss": math.nan,
            "edp": math.nan, "best_edp": best_edp, "tau": math.nan, "violation": math.nan,
            "fused": math.nan,
            "stage": history[-1].get("stage", "search") if history else "search"}


class OptimizerWorker(QObject):
    """Runs the job's methods in the thread it was moved to (signals from that thread)."""

    progress = Signal(list)
    result = Signal(object)
    ended = Signal()

    def __init__(self, job: OptimizerJob) -> None:
        super().__init__()
        self.job = job
        self._cancel = threading.Event()
        self._stop = threading.Event()
        self._pending: list[dict[str, Any]] = []
        self._last_emit = 0.0
        # ("finished", [outcomes]) | ("failed", (msg, tb)) | ("cancelled", [outcomes so far])
        self.box: dict[str, Any] = {}

    def cancel(self) -> None:
        """Stop at once; the method running loses its result (window closing)."""
        self._cancel.set()

    def stop(self) -> None:
        """Stop soon and keep the best schedule so far: the running method's budget
        (``Budget.stop``, shared by its stages) reads as spent, so it ends as when its budget
        runs out, with its best candidate repaired and scored; no further method starts."""
        self._stop.set()

    def is_cancelled(self) -> bool:
        return self._cancel.is_set()

    def _on_progress(self, p: Any) -> None:
        self._pending.append(progress_dict(p))
        now = time.monotonic()
        if now - self._last_emit >= EMIT_EVERY_S:
            self._flush(now)

    def _flush(self, now: float | None = None) -> None:
        if self._pending:
            self.progress.emit(self._pending)
            self._pending = []
        self._last_emit = time.monotonic() if now is None else now

    @Slot()
    def run(self) -> None:
        lower_thread_priority()
        done: list[OptimizerOutcome] = []
        try:
            done = self._optimize(done)
            outcome: tuple[str, Any] = ("finished", done)
        except BaseException as exc:  # noqa: BLE001 - reported to the GUI, never lost
            from optimizer.errors import OptimizationCancelled
            if isinstance(exc, OptimizationCancelled) or self._cancel.is_set():
                outcome = ("cancelled", done)
            elif self._stop.is_set() and done:
                outcome = ("cancelled", done)
            else:
                outcome = ("failed", (str(exc) or type(exc).__name__, traceback.format_exc()))
        if outcome[0] == "finished" and self._stop.is_set():
            outcome = ("cancelled", done)        # stopped by the user, best kept
        self._flush()
        self.box["outcome"] = outcome
        self.ended.emit()

    def _optimize(self, done: list[OptimizerOutcome]) -> list[OptimizerOutcome]:
        # torch is imported here, in the worker thread, by the first run
        from optimizer.errors import OptimizationCancelled
        from optimizer.hardware import load_hardware
        from optimizer.methods import get_method, optimize, schedule_json
        from optimizer.search import Budget
        from optimizer.workload import load_network

        job = self.job
        net = load_network(job.network)
        hw = load_hardware(job.hardware)
        for m in job.methods:
            get_method(m)                    # an unknown method fails before any run
        for m in job.methods:
            if self._cancel.is_set():
                raise OptimizationCancelled("cancelled between methods")
            if self._stop.is_set():
                break
            # stop() makes the running method's budget (and every stage's share) read as spent
            budget = Budget(evaluations=job.evaluations, seconds=job.seconds,
                            cpu_seconds=job.cpu_seconds, stop=self._stop.is_set)
            # the fused-input rule for this run only (the CLI's --fused-halo sets it for its
            # process); recorded in the schedule file as the CLI records it
            with fused_halo_rule(job.fused_halo) as halo:
                res, space = optimize(net, hw, m, budget, job.seed, self._on_progress,
                                      self._cancel.is_set)
                self._flush()
                sched = schedule_json(res, space)
            sched["fused_halo"] = halo
            history = [progress_dict(p) for p in res.history]
            final = final_point(m, history, res.evaluations, res.wall_s, sched)
            if final is not None:
                history.append(final)
                self.progress.emit([final])
            out = OptimizerOutcome(m, job.seed, net.name, hw.name, sched, history, res.wall_s,
                                   res.evaluations, net, hw, res.schedule,
                                   stopped_early=self._stop.is_set(), fused_halo=halo)
            done.append(out)
            self.result.emit(out)
        return done


class OptimizerRun(ThreadedRun):
    """Owns one optimiser worker and its QThread; outcome signals come after the join."""

    progress = Signal(list)
    result = Signal(object)
    finished = Signal(list)
    cancelled = Signal(list)
    CANCEL_CARRIES_VALUE = True

    def __init__(self, job: OptimizerJob, parent: QObject | None = None) -> None:
        self.job = job
        super().__init__(OptimizerWorker(job), "OptimizerThread", parent)
        self.worker.result.connect(self.result)
        self.stop_requested_at: float | None = None

    def stop(self) -> None:
        """End the search soon, keeping the best schedule so far (thread-safe)."""
        if self.stop_requested_at is None:
            self.stop_requested_at = time.monotonic()
        self.worker.stop()


def start_optimization(job: OptimizerJob, parent: QObject | None = None) -> OptimizerRun:
    """Start ``job`` in a new QThread; returns the started run."""
    run = OptimizerRun(job, parent)
    run.start()
    return run


# ---- co-simulation ---------------------------------------------------------------------------
class CosimWorker(QObject):
    """Starts the co-simulation child process and relays its messages."""

    progress = Signal(str)           # the layer being simulated
    ended = Signal()

    def __init__(self, outcome: OptimizerOutcome, memory: str, layout: str = "nhwc",
                 placement: str = "packed", bins: int = 200) -> None:
        super().__init__()
        # the child scores the schedule under the rule it was searched with
        self.args = (outcome.net, outcome.mapping, outcome.hw, memory, layout, placement, bins)
        self.fused_halo = outcome.fused_halo
        self._cancel = threading.Event()
        self.box: dict[str, Any] = {}

    def cancel(self) -> None:
        self._cancel.set()

    @Slot()
    def run(self) -> None:
        try:
            outcome = self._cosimulate()
        except BaseException as exc:  # noqa: BLE001 - reported to the GUI
            outcome = ("failed", (str(exc) or type(exc).__name__, traceback.format_exc()))
        self.box["outcome"] = outcome
        self.ended.emit()

    def _cosimulate(self) -> tuple[str, Any]:
        import multiprocessing as mp

        from gui.cosim_process import cosim_in_child

        if self._cancel.is_set():
            return ("cancelled", None)
        ctx = mp.get_context("spawn")        # never fork a process that runs Qt threads
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=cosim_in_child, name="diffmem-cosim", daemon=True,
                           args=(*self.args, send), kwargs={"fused_halo": self.fused_halo})
        proc.start()
        send.close()
        try:
            while True:
                if self._cancel.is_set():
                    return ("cancelled", None)      # the child is terminated below
                if not receive.poll(POLL_S):
                    if not proc.is_alive() and not receive.poll(0):
                        return ("failed", ("the co-simulation process ended without a result "
                                           f"(exit code {proc.exitcode})", ""))
                    continue
                try:
                    msg = receive.recv()
                except EOFError:
                    proc.join(JOIN_S)
                    return ("failed", ("the co-simulation process ended without a result "
                                       f"(exit code {proc.exitcode})", ""))
                if msg[0] == "layer":
                    self.progress.emit(msg[1])
                elif msg[0] == "finished":
                    return ("finished", msg[1])
                else:
                    return ("failed", (msg[1], msg[2]))
        finally:
            receive.close()
            proc.join(0.05)
            if proc.is_alive():
                proc.terminate()
                proc.join(JOIN_S)


class CosimRun(ThreadedRun):
    """Owns one co-simulation worker and its thread; outcome signals come after the join."""

    progress = Signal(str)
    finished = Signal(dict)          # see gui.cosim_process.cosim_payload
    cancelled = Signal()

    def __init__(self, outcome: OptimizerOutcome, memory: str, parent: QObject | None = None,
                 **kw: Any) -> None:
        super().__init__(CosimWorker(outcome, memory, **kw), "CosimThread", parent)


def start_cosimulation(outcome: OptimizerOutcome, memory: str, parent: QObject | None = None,
                       **kw: Any) -> CosimRun:
    """Co-simulate ``outcome``'s schedule on ``memory`` (a preset name, ``NAME-<n>ch``, or a
    .toml/.ini path) in a child process driven by a new QThread; returns the started run."""
    run = CosimRun(outcome, memory, parent, **kw)
    run.start()
    return run
