"""Run statistics: counters -> named results, with DRAMsim3's stat names where they exist.

Top-level keys of `Stats.summary` are totals over channels: `num_cycles`, `num_reads_done`,
`num_writes_done`, `average_read_latency` (cycles, over all reads), `num_read_row_hits`,
`num_write_row_hits`, `num_act_cmds`, `num_pre_cmds`, `num_ref_cmds`, `average_bandwidth`
(GB/s, DRAMsim3's definition: requests x request size / time), `total_energy` (pJ) and its
components (`act_energy` ... in pJ; DRAMsim3's raw mW*cycle values are under
`dramsim3_units`), `average_power` (mW, DRAMsim3's: the core energy over the time), plus our
additions: IO energy (`io_energy`, `total_energy_with_io`, `average_power_with_io`),
nanosecond latencies, percentiles, row misses and conflicts, per-bank arrays, energy by cause.
`channels` holds the same per channel.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from engine import kernel as K
from engine.fileio import atomic_write_text, json_default
from engine.power import EnergyCounts, EnergyReport, compute_energy

PERCENTILES = (50, 90, 95, 99)


@dataclass
class Stats:
    """Final statistics of one run."""

    summary: dict[str, Any]
    channels: list[dict[str, Any]]
    energy: EnergyReport
    read_latency_hist: np.ndarray          # [cycles] count of reads with that latency (summed)
    epochs: list[dict[str, Any]] = field(default_factory=list)
    per_bank: dict[str, np.ndarray] = field(default_factory=dict)   # [channels, ranks, banks]

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.summary)
        out["per_bank"] = {k: v.tolist() for k, v in self.per_bank.items()}
        out["channels"] = self.channels
        out["epochs"] = self.epochs
        return out

    def write_json(self, path: str | Path) -> None:
        """Write the statistics as JSON, atomically (temp file + rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(self.to_dict(), indent=1, default=json_default) + "\n")


def _percentiles(hist: np.ndarray, ps: tuple[float, ...]) -> list[int | None]:
    """The bin at which the cumulative count first reaches p % of the total, for each p (None
    for an empty histogram), from one cumulative sum. The caller passes the histogram up to
    its highest non-empty bin: the bins above it change no answer, and a latency histogram's
    32,768 bins are nearly all empty."""
    cum = np.cumsum(hist)
    total = int(cum[-1]) if cum.size else 0
    if total == 0:
        return [None] * len(ps)
    return [int(np.searchsorted(cum, np.ceil(total * p / 100.0))) for p in ps]


def _dramsim3_bins(hist: np.ndarray, width: int = 20, top: int = 200) -> dict[str, int]:
    """DRAMsim3's binned histogram: [-0], [0-19] ... [180-199], [200-]."""
    out = {"[-0]": 0}
    for lo in range(0, top, width):
        out[f"[{lo}-{lo + width - 1}]"] = int(hist[lo:lo + width].sum())
    out[f"[{top}-]"] = int(hist[top:].sum())
    return out


def _latency_block(hist: np.ndarray, lat_sum: int, n: int, tck: float, prefix: str) -> dict:
    avg = lat_sum / n if n else 0.0
    d: dict[str, Any] = {f"average_{prefix}_latency": avg,
                         f"average_{prefix}_latency_ns": avg * tck}
    nz = np.flatnonzero(hist)
    top = int(nz[-1]) + 1 if nz.size else 0
    # the last bin holds every latency of len(hist) - 1 cycles or more: a percentile (or the
    # maximum) that falls in it is not known, and is None (the overflow count says how many)
    over = len(hist) - 1
    for p, v in zip(PERCENTILES, _percentiles(hist[:top], PERCENTILES)):
        if v is not None and v >= over:
            v = None
        d[f"{prefix}_latency_p{p}"] = v
        d[f"{prefix}_latency_p{p}_ns"] = None if v is None else v * tck
    d[f"{prefix}_latency_max"] = top - 1 if 0 < top <= over else None
    d[f"{prefix}_latency_bins"] = _dramsim3_bins(hist)
    if hist[-1]:
        d[f"{prefix}_latency_overflow"] = int(hist[-1])
    return d


def _channel_block(cfg, C: np.ndarray, RK: np.ndarray, hist_r: np.ndarray, hist_w: np.ndarray,
                   num_cycles: int, energy: dict[str, float], raw: dict[str, float]) -> dict:
    tck = cfg.tCK
    reads = int(C[K.C_READS_DONE])
    writes = int(C[K.C_WRITES_DONE])
    col = int(C[K.C_READ_CMDS] + C[K.C_WRITE_CMDS])
    hits = int(C[K.C_READ_HITS] + C[K.C_WRITE_HITS])
    secs_ns = num_cycles * tck
    d: dict[str, Any] = {
        "num_cycles": num_cycles,
        "num_reads_done": reads,
        "num_writes_done": writes,
        "num_read_cmds": int(C[K.C_READ_CMDS]),
        "num_write_cmds": int(C[K.C_WRITE_CMDS]),
        "num_read_row_hits": int(C[K.C_READ_HITS]),
        "num_write_row_hits": int(C[K.C_WRITE_HITS]),
        "num_row_misses": int(C[K.C_ROW_MISSES]),
        "num_row_conflicts": int(C[K.C_ROW_CONFLICTS]),
        "row_hit_rate": hits / col if col else 0.0,
        "num_act_cmds": int(C[K.C_ACT]),
        "num_pre_cmds": int(C[K.C_PRE]),
        "num_ondemand_pres": int(C[K.C_ONDEMAND_PRE]),
        "num_ref_cmds": int(C[K.C_REF]),
        "num_refb_cmds": int(C[K.C_REFB]),
        "hbm_dual_cmds": int(C[K.C_DUAL]),
        "num_write_buf_hits": int(C[K.C_WBUF_HITS]),
        "num_read_merges": int(C[K.C_READ_MERGES]),
        "num_write_merges": int(C[K.C_WRITE_MERGES]),
        "num_rw_livelock_breaks": int(C[K.C_RW_LIVELOCK_BREAKS]),
        "rank_active_cycles": RK[:, K.RK_ACTIVE].tolist(),
        "all_bank_idle_cycles": RK[:, K.RK_IDLE].tolist(),
        "sref_cycles": RK[:, K.RK_SREF].tolist(),
        "average_bandwidth": ((reads + writes) * cfg.request_size_bytes / secs_ns
                              if secs_ns else 0.0),
    }
    d.update(_latency_block(hist_r, int(C[K.C_READ_LAT_SUM]), reads, tck, "read"))
    d.update(_latency_block(hist_w, int(C[K.C_WRITE_LAT_SUM]), int(C[K.C_WRITE_LAT_N]), tck,
                            "write"))
    # energy components in pJ under DRAMsim3's names (act_energy, ...), plus IO energy
    for k, v in energy.items():
        if k == "core_total":
            d["core_energy"] = v
        elif k == "io_total":
            d["io_energy"] = v
        elif k != "total":
            d[f"{k}_energy"] = v
    # total_energy is the DRAM core energy, comparable with DRAMsim3's; IO comes on top
    d["total_energy"] = energy.get("core_total", 0.0)
    d["total_energy_with_io"] = energy.get("total", 0.0)
    d["average_power"] = energy.get("core_total", 0.0) / secs_ns if secs_ns else 0.0
    d["dramsim3_units"] = raw
    return d


def build_stats(sim) -> Stats:
    """Assemble the statistics of a finished (or paused) simulator."""
    cfg = sim.cfg
    s = sim.s
    G = s["G"]
    num_cycles = int(G[K.G_NUM_CYCLES]) if sim.finished else int(G[K.G_CLK])
    nch, ranks, banks = cfg.channels, cfg.ranks, cfg.banks
    BK = s["BK"].reshape(nch, ranks, banks, K.NBK)
    open_cycles = sim._bank_open_cycles(num_cycles).reshape(nch, ranks, banks)
    RK = s["RK"]
    counts = EnergyCounts(
        num_cycles=num_cycles,
        act=BK[..., K.BK_ACT].copy(), act_conflict=BK[..., K.BK_ACT_CONFLICT].copy(),
        pre=BK[..., K.BK_PRE].copy(), rd=BK[..., K.BK_RD].copy(), wr=BK[..., K.BK_WR].copy(),
        ref=RK[..., K.RK_REF].copy(), refb=BK[..., K.BK_REFB].copy(),
        rank_active_cycles=RK[..., K.RK_ACTIVE].copy(),
        all_bank_idle_cycles=RK[..., K.RK_IDLE].copy(),
        sref_cycles=RK[..., K.RK_SREF].copy(), bank_open_cycles=open_cycles)
    energy = compute_energy(cfg, counts)
    C = s["C"]
    channels = []
    for ch in range(nch):
        ce = dict(energy.per_channel_pJ[ch]) if energy.per_channel_pJ else {}
        ce.pop("average_power_mW", None)
        raw = {}
        channels.append(_channel_block(cfg, C[ch], RK[ch], s["hist_r"][ch], s["hist_w"][ch],
                                       num_cycles, ce, raw))
    tot_C = C.sum(axis=0)
    hist_r = s["hist_r"].sum(axis=0)
    hist_w = s["hist_w"].sum(axis=0)
    summary = _channel_block(cfg, tot_C, RK.sum(axis=0), hist_r, hist_w, num_cycles,
                             dict(energy.components_pJ), dict(energy.dramsim3_units))
    summary["average_bandwidth"] = sum(c["average_bandwidth"] for c in channels)
    # average_power stays DRAMsim3's (core energy over time, as in each channel's block and as
    # total_energy); with IO it has a name of its own, beside total_energy_with_io
    summary["average_power_with_io"] = energy.average_power_mW
    summary.pop("rank_active_cycles")
    summary.pop("all_bank_idle_cycles")
    summary.pop("sref_cycles")
    summary["energy_by_cause"] = energy.by_cause_pJ
    summary["io_energy_per_bit"] = energy.io_pj_per_bit
    summary["config"] = cfg.name
    # what the results depend on beside the config's name: a scheduler or page-policy
    # override, or another intake, gave other figures under the same "config" (the epoch
    # only cuts them into records: not here)
    summary["controller"] = {
        "scheduler": cfg.scheduler, "page_policy": cfg.page_policy,
        "row_buf_policy": cfg.row_buf_policy, "queue_structure": cfg.queue_structure,
        "refresh_policy": cfg.refresh_policy, "address_mapping": cfg.address_mapping,
        "intake": sim.options.intake}
    summary["config_warnings"] = cfg.warnings      # unusual settings, defaulted keys
    summary["protocol"] = cfg.protocol
    summary["tCK_ns"] = cfg.tCK
    summary["channels_count"] = nch
    summary["request_size_bytes"] = cfg.request_size_bytes
    summary["num_reads_accepted"] = int(tot_C[K.C_READS_ACCEPTED])
    summary["num_writes_accepted"] = int(tot_C[K.C_WRITES_ACCEPTED])
    summary["phantom_eof_read_added"] = int(G[K.G_PHANTOM_ADDED])
    # posted writes count as done on acceptance; these were never written to DRAM (they wait
    # in the write buffer or a command queue when the run ends, as in DRAMsim3)
    summary["writes_not_issued_at_end"] = int(tot_C[K.C_WRITES_ACCEPTED]
                                              - tot_C[K.C_WRITE_MERGES]
                                              - tot_C[K.C_WRITE_CMDS])
    acc = int(G[K.G_ACCEPTED])
    # how the run ended (DRAMsim3's -c N runs exactly N cycles: what is still in flight then is
    # pending; max_cycles stops at N or when done): accepted but not completed, and due
    # before N (trace cycle < N) but still waiting in the front end for room in a queue
    opts = sim.options
    summary["run_mode"] = ("cycles" if opts.cycles is not None else
                           "max_cycles" if opts.max_cycles is not None else "to_completion")
    summary["cycles_requested"] = opts.limit
    summary["num_requests_pending"] = acc - int(G[K.G_COMPLETED])
    summary["num_requests_waiting"] = int(sim.requests_waiting)
    summary["num_addresses_wrapped"] = int(sim.addresses_wrapped)
    # idle stretches skipped whole refresh periods at a time (statistics identical to
    # simulating them cycle by cycle: tests/test_engine_idle_skip.py)
    summary["idle_cycles_skipped_in_closed_form"] = int(sim.fast_forward_cycles)
    summary["frontend_mean_lag_cycles"] = int(G[K.G_FRONT_LAG_SUM]) / acc if acc else 0.0
    summary["simulated_time_ns"] = num_cycles * cfg.tCK
    summary["wall_seconds"] = sim.wall_seconds
    per_bank = {
        "act": BK[..., K.BK_ACT], "pre": BK[..., K.BK_PRE], "reads": BK[..., K.BK_RD],
        "writes": BK[..., K.BK_WR], "row_hits": BK[..., K.BK_HITS],
        "row_misses": BK[..., K.BK_MISSES], "row_conflicts": BK[..., K.BK_CONFLICTS],
        "utilisation": open_cycles / max(1, num_cycles),
        "energy_pJ": energy.per_bank_pJ,
    }
    epochs = [{"start": e.start, "end": e.end, "reads_done": e.reads_done,
               "writes_done": e.writes_done,
               "average_read_latency": e.read_latency_sum / e.reads_done if e.reads_done else 0.0,
               "act": e.act, "pre": e.pre, "ref": e.ref,
               "row_hit_rate": e.row_hits / e.column_cmds if e.column_cmds else 0.0,
               "bandwidth_GBps": ((e.reads_done + e.writes_done) * cfg.request_size_bytes
                                  / ((e.end - e.start) * cfg.tCK)) if e.end > e.start else 0.0,
               "bank_utilisation": (e.bank_open_cycles / max(1, e.end - e.start)).tolist()}
              for e in sim.epochs]
    return Stats(summary=summary, channels=channels, energy=energy, read_latency_hist=hist_r,
                 epochs=epochs, per_bank=per_bank)
