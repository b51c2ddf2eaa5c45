"""The `simulate` job: a config (preset, .toml or DRAMsim3 .ini) and request traces in,
statistics out. `python main.py simulate` only parses its flags, calls :func:`run_simulation`
and prints; the window and scripts can call the same function.

Run length follows DRAMsim3 when asked: ``cycles=N`` simulates exactly N cycles as
``dramsim3main -c N`` does (the trace may end earlier; refresh, background energy and write
drains go on; what is still queued at N is reported as pending), ``max_cycles=N`` stops at N
or when every request is done, neither runs until every request is done.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from engine.fileio import check_distinct, prepare_output

if TYPE_CHECKING:
    from engine.stats import Stats

log = logging.getLogger(__name__)


@dataclass
class SimulateJob:
    """Everything one `simulate` run needs besides the traces."""

    config: str                          # preset name or .toml / .ini path
    cycles: int | None = None            # exactly N cycles (DRAMsim3's -c)
    max_cycles: int | None = None        # stop at N or when done
    epoch: int | None = None
    cmd_trace: Path | None = None
    phantom_eof_read: bool = False
    scheduler: str | None = None
    page_policy: str | None = None
    wrap_addresses: bool = False
    intake: str = "dramsim3"             # front end: "dramsim3" or "per-channel"
    threads: int = 1                     # channels in parallel (results identical to 1)


def apply_overrides(cfg: Any, scheduler: str | None, page_policy: str | None) -> Any:
    """cfg with a scheduler / page policy override applied (row_buf_policy follows the page
    policy: the config requires CLOSE_PAGE exactly when page_policy is 'close')."""
    changes: dict[str, Any] = {}
    if scheduler is not None:
        changes["scheduler"] = scheduler
    if page_policy is not None:
        changes["page_policy"] = page_policy
        changes["row_buf_policy"] = "CLOSE_PAGE" if page_policy == "close" else "OPEN_PAGE"
    return cfg.replace(**changes) if changes else cfg


def run_job(job: SimulateJob, traces: Sequence[str | Path], out: str | Path | None, *,
            progress: Callable[[Any, Any], None] | None = None,
            stop: Callable[[], bool] | None = None) -> "Stats":
    """Load the config, simulate the traces, write the statistics JSON to `out` (if given).
    `stop` (read between chunks of the trace) cuts the trace there: the requests read so far
    are completed and their statistics written, marked ``stopped_early``."""
    from engine.config import load_config
    from engine.simulator import SimOptions, simulate_trace
    from engine.workloads.retarget import placement_notes

    from engine.simulator import cmd_trace_paths

    cfg = apply_overrides(load_config(job.config), job.scheduler, job.page_policy)
    # outputs checked (and missing folders made) before the run, which may take hours: a
    # bad path would otherwise fail only when the statistics are written; the command trace
    # is one file a channel (PATH.chN), each checked against the inputs
    cmd_files = (cmd_trace_paths(job.cmd_trace, int(cfg.channels))
                 if job.cmd_trace is not None else [])
    outputs = (("statistics output", out),) + tuple(("command trace", f) for f in cmd_files)
    check_distinct(outputs, [("trace input", t) for t in traces] + [
        ("memory config", job.config if Path(str(job.config)).is_file() else None)])
    for what, path in outputs:
        if path is not None:
            prepare_output(path, what)
    options = SimOptions(cycles=job.cycles, max_cycles=job.max_cycles, epoch=job.epoch,
                         cmd_trace=Path(job.cmd_trace) if job.cmd_trace is not None else None,
                         phantom_eof_read=job.phantom_eof_read,
                         wrap_addresses=job.wrap_addresses, intake=job.intake,
                         threads=job.threads)
    log.debug("simulating %s on %s", ", ".join(str(t) for t in traces), cfg.name)
    for t in traces:
        for line in placement_notes(t, cfg):
            log.warning("%s: %s", t, line)
    stats = simulate_trace(cfg, [Path(t) for t in traces], options, progress=progress,
                           stop=stop)
    stats.summary["traces"] = [str(Path(t).absolute()) for t in traces]
    s = stats.summary
    if not (s["num_reads_accepted"] + s["num_writes_accepted"] + s["num_requests_waiting"]):
        # (with --cycles an idle memory is a meaningful run: refresh and background energy)
        limit = options.limit
        why = ("stopped before any request was read" if s.get("stopped_early") else
               f"no request arrives before cycle {limit}, where the run ends"
               if limit is not None and _has_requests(traces) else "no requests in the trace")
        log.warning("%s: %s: the statistics are an idle memory's",
                    ", ".join(str(t) for t in traces), why)
    if out is not None:
        stats.write_json(out)
    return stats


def _has_requests(traces: Sequence[str | Path]) -> bool:
    """Whether any of the traces holds a request (its first chunk read again)."""
    from engine.trace import iter_trace
    for t in traces:
        chunks = iter_trace(t, chunk_size=16)
        try:
            first = next(chunks, None)
        finally:
            getattr(chunks, "close", lambda: None)()   # (iter_trace may return any iterator)
        if first is not None and len(first):
            return True
    return False


def run_simulation(config: str, traces: Sequence[str | Path], out: str | Path | None, *,
                   progress: Callable[[Any, Any], None] | None = None,
                   stop: Callable[[], bool] | None = None, **options: Any) -> "Stats":
    """:func:`run_job` with the job's fields as keyword arguments (cycles=..., epoch=...)."""
    return run_job(SimulateJob(config, **options), traces, out, progress=progress, stop=stop)
