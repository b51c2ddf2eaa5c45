"""The job a worker runs for one point, and the small result record it sends back.

:func:`run_point` takes and returns plain JSON-able dictionaries, so that it can run in a local
worker process, in a Dask worker on another machine, or in this process, with the same result:
the engine is deterministic and nothing time-dependent (wall time) enters the record.
"""
from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np

log = logging.getLogger(__name__)

CAUSES = ("row_conflict", "row_miss", "data", "refresh", "background", "io")
CORE_CAUSES = CAUSES[:-1]


def _bank_labels(channels: int, ranks: int, banks: int) -> list[str]:
    return [f"ch{c}.r{r}.b{b}" for c in range(channels) for r in range(ranks)
            for b in range(banks)]


def _split(total: float, weights: np.ndarray) -> list[float]:
    """*total* split over banks in proportion to *weights* (equally if they are all zero)."""
    w = np.clip(np.asarray(weights, np.float64).reshape(-1), 0.0, None)
    s = float(w.sum())
    if s <= 0.0:
        w, s = np.ones_like(w), float(w.size)
    return (total * w / s).tolist()


def energy_by_bank_and_cause(cfg: Any, stats: Any) -> dict[str, list[float]]:
    """Core energy of each cause split over the banks (flat ``ch.rank.bank`` order), pJ.

    Each cause's total comes from the engine (``energy_by_cause``); its split over banks
    follows the engine's own per-bank attribution (:func:`engine.power.compute_energy`): row
    conflicts and misses by each bank's ACTs of that kind, data by its READ/WRITE energy,
    refresh equally, background by what remains of the bank's energy after its own commands
    and its refresh share.
    """
    s = stats.summary
    cause = s["energy_by_cause"]
    pb = stats.per_bank
    inc = cfg.energy_increments
    tck = float(cfg.tCK)
    act = np.asarray(pb["act"], np.float64)
    conflicts = np.asarray(pb["row_conflicts"], np.float64)
    misses = np.clip(act - conflicts, 0.0, None)
    data = (np.asarray(pb["reads"], np.float64) * inc["read"]
            + np.asarray(pb["writes"], np.float64) * inc["write"]) * tck
    bank_energy = np.asarray(pb["energy_pJ"], np.float64)
    n = bank_energy.size
    refresh_each = np.full(bank_energy.shape, cause["refresh"] / max(n, 1))
    own = act * inc["act"] * tck + data
    background = bank_energy - own - refresh_each
    return {"row_conflict": _split(cause["row_conflict"], conflicts),
            "row_miss": _split(cause["row_miss"], misses),
            "data": _split(cause["data"], data),
            "refresh": _split(cause["refresh"], refresh_each),
            "background": _split(cause["background"], background)}


def summarise(cfg: Any, stats: Any) -> dict[str, Any]:
    """The numbers a study needs from one run (no wall time: the record is deterministic)."""
    s = stats.summary
    reads, writes = int(s["num_reads_done"]), int(s["num_writes_done"])
    bytes_moved = (reads + writes) * int(s["request_size_bytes"])
    total = float(s["total_energy_with_io"])
    bank_energy = np.asarray(stats.per_bank["energy_pJ"], np.float64)
    nch, nr, nb = bank_energy.shape
    return {
        "config": s["config"], "protocol": s["protocol"], "tCK_ns": float(s["tCK_ns"]),
        "cycles": int(s["num_cycles"]),
        "step_time_ns": float(s["simulated_time_ns"]),
        # how long requests waited to enter the memory (0: it kept up with the trace)
        "frontend_lag_cycles": float(s.get("frontend_mean_lag_cycles", 0.0)),
        "reads": reads, "writes": writes, "bytes": bytes_moved,
        "avg_read_latency_cycles": float(s["average_read_latency"]),
        "avg_read_latency_ns": float(s["average_read_latency_ns"]),
        "read_latency_p99_ns": s.get("read_latency_p99_ns"),
        "bandwidth_GBps": float(s["average_bandwidth"]),
        "row_hit_rate": float(s["row_hit_rate"]),
        "row_misses": int(s["num_row_misses"]), "row_conflicts": int(s["num_row_conflicts"]),
        "act": int(s["num_act_cmds"]), "pre": int(s["num_pre_cmds"]),
        "ref": int(s["num_ref_cmds"]) + int(s.get("num_refb_cmds", 0)),
        "energy_total_pJ": total,
        "energy_core_pJ": float(s["core_energy"]) if "core_energy" in s
        else float(s["total_energy"]),
        "energy_io_pJ": float(s.get("io_energy", 0.0)),
        "energy_per_byte_pJ": total / bytes_moved if bytes_moved else 0.0,
        "io_pJ_per_bit": {k: v for k, v in (s.get("io_energy_per_bit") or {}).items()
                          if isinstance(v, (int, float, str))},
        "energy_components_pJ": {k: float(v) for k, v in stats.energy.components_pJ.items()},
        "energy_by_cause_pJ": {k: float(v) for k, v in s["energy_by_cause"].items()},
        "bank_labels": _bank_labels(nch, nr, nb),
        "energy_by_bank_pJ": bank_energy.reshape(-1).tolist(),
        "energy_by_bank_cause_pJ": energy_by_bank_and_cause(cfg, stats),
        "row_hit_rate_by_bank": _bank_hit_rates(stats.per_bank),
    }


def _bank_hit_rates(pb: Mapping[str, Any]) -> list[float]:
    hits = np.asarray(pb["row_hits"], np.float64).reshape(-1)
    cols = (np.asarray(pb["reads"], np.float64) + np.asarray(pb["writes"], np.float64)
            ).reshape(-1)
    return np.where(cols > 0, hits / np.where(cols > 0, cols, 1.0), 0.0).tolist()


def _simulate_saturated(cfg: Any, path: str, options: Any, group: str) -> Any:
    """Simulate with every request due at cycle 0, in trace order: the controller takes them
    as fast as its queues allow, so the run time is the DRAM's service time of the traffic."""
    from engine.simulator import Simulator, fitted_requests
    from engine.trace import iter_trace

    sim = Simulator(cfg, options)
    try:
        for ch in fitted_requests(cfg, iter_trace(path, chunk_size=options.chunk_size,
                                                  capacity_bytes=cfg.capacity_bytes,
                                                  group=group),
                                  [path], options.line_bytes, group, options.coalesce_window):
            sim.feed(ch.addr, ch.is_write, np.zeros_like(ch.cycle), ch.stream)
            if sim.finished:
                break
        return sim.finish()
    finally:
        sim.close()


def run_point(point: Mapping[str, Any]) -> dict[str, Any]:
    """Simulate one point (a :meth:`Point.to_dict` dictionary); returns its result record
    ``{"point_id", "status": "ok", "metrics": {...}}`` or ``{"point_id", "status": "error",
    "error": message}`` for an error the user can act on (bad config, bad trace, deadlock)."""
    from engine.config import MemoryConfig
    from engine.errors import DiffMemError
    from engine.simulator import SimOptions, simulate_trace

    pid = point["point_id"]
    trace = point["trace"]
    if trace.get("placement_error"):
        log.warning("study point %s (%s on %s) failed: %s", pid, trace.get("label"),
                    point["config"].get("name"), trace["placement_error"])
        return {"point_id": pid, "status": "error",
                "error": f"RetargetError: {trace['placement_error']}"}
    counts = bool((point.get("tags") or {}).get("command_counts"))
    tmp = tempfile.mkdtemp(prefix="diffmem-cmd-") if counts else None
    try:
        cfg = MemoryConfig.from_dict(point["config"])
        options = SimOptions(max_cycles=point.get("cycles"),   # a study caps each run
                             intake=point.get("intake", "dramsim3"),
                             cmd_trace=Path(tmp) / "cmd.trace" if tmp else None)
        group = trace.get("group") or "trace"
        if point.get("arrival", "trace") == "saturate":
            stats = _simulate_saturated(cfg, trace["path"], options, group)
        else:
            stats = simulate_trace(cfg, trace["path"], options, group=group)
        metrics = summarise(cfg, stats)
        if options.intake != "dramsim3":
            # the front end's bound is then one request per channel per cycle
            metrics["intake"] = options.intake
            metrics["channels"] = int(cfg.channels)
        if tmp:
            from engine.simulator import cmd_trace_paths
            from engine.studies.command_counts import count_command_trace
            metrics["commands"] = count_command_trace(
                cmd_trace_paths(Path(tmp) / "cmd.trace", cfg.channels))
        return {"point_id": pid, "status": "ok", "metrics": metrics}
    except (DiffMemError, OSError) as exc:
        log.warning("study point %s (%s on %s) failed: %s", pid, trace.get("label"),
                    point["config"].get("name"), exc)
        return {"point_id": pid, "status": "error", "error": f"{type(exc).__name__}: {exc}"}
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
