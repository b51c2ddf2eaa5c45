"""The public simulation API: run a trace, or feed requests online, and get statistics.

    from engine.config import load_config
    from engine.simulator import Simulator, simulate_trace

    stats = simulate_trace(load_config("DDR4-3200"), ["stream.trace"])
    print(stats.summary["average_read_latency"])

A `Simulator` owns the kernel's state arrays. Requests go in as chunks (from trace files, or
from `access()` calls); the kernel runs until it needs more input, reaches an epoch boundary
or finishes. Between kernel calls the simulator records epoch statistics, reports progress,
writes the command trace and checks the caller's cancel flag, so memory use is constant in
trace length and a GUI can stay responsive.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import re
import threading
import time
from dataclasses import dataclass
from types import MappingProxyType
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

import numpy as np

from engine import address, kernel_aot, policies
from engine import kernel as K
from engine.api_checks import (MAX_CYCLE, SimulatorInputError, check_feed, check_gaps,
                               check_span)
from engine.errors import ConfigError, DiffMemError, SimulationCancelled, SimulationError
from engine.timing import COMMAND_NAMES, NCMD, build_tables, folding_is_exact
from engine.trace import COALESCE_WINDOW

if TYPE_CHECKING:
    from engine.stats import Stats

log = logging.getLogger(__name__)

# policy name -> kernel code, from the one declaration in engine.policies
SCHEDULERS = dict(policies.SCHEDULER_CODES)
PAGE_POLICIES = dict(policies.PAGE_POLICY_CODES)
REFRESH_POLICIES = dict(policies.REFRESH_POLICY_CODES)
HIST_BINS = 1 << 15          # latency histogram resolution: 1 cycle up to 32767 cycles
CMD_LOG_ROWS = 1 << 16
COMP_ROWS = 1 << 18
MERGE_SLACK = 4096           # pending reads that merged into an earlier read of the same line
FF_MIN_PERIODS = 64          # idle stretches of at least this many refresh periods are skipped
FF_PROBES = 6                # periods simulated, at most, to find the periodic idle state
FF_BIG = 1 << 16             # state arrays this large are not copied (see _fast_forward)
# threads under the DRAMsim3 intake (_StreamThreads): requests per optimistic window, least,
# first and most (a window also leaves room in the completion rings: _ring_room)
WINDOW_MIN, WINDOW_START, WINDOW_MAX = 256, 4096, 32768
# ... a refusal after this many requests without one starts a burst; and the cost of a copy of
# one channel's state at a window's start, in requests simulated (~100 us against ~1 us, HBM2)
WINDOW_BURST, WINDOW_COPY_COST = 1024, 100
# ... and the refusals since the last hand-over at which it hands back to one thread (the
# window of the last one is simulated again there, from its start; a refusal resolved in
# threads costs the window's first run and a bisection of its part, a few ms of CPU with 4
# channels a part: on the mixed benchmark trace, 1M requests, handing back at the 16th
# refusal kept it threaded for 51 refusals at 1.6x the CPU of one thread: RESULTS.md,
# issue 17t of 2026-12-03 evening)
DENSE_REFUSALS = 1
# ... and the one-thread start: a run starts in one thread (one state, the master Simulator)
# and hands over to the channels' threads once HANDOVER_AFTER requests in a row were taken
# without a refusal (checked in pieces of that many); a run handed back (refusals too dense,
# above) waits for a stretch 4 times as long, up to HANDOVER_MAX, before it hands over again.
# 0: threads from the first request (the method alone, as in the tests)
HANDOVER_AFTER, HANDOVER_MAX = 4096, 1 << 16
# ... and the channels each thread's Simulator simulates together: None = the channels over
# the smallest power of two of parts not fewer than the threads (a part's kernel steps its
# channels in one loop, which costs less than stepping each alone: HBM2 1M random, 8
# one-channel parts took 1.33-1.49 CPU-s together, the one-state kernel ~1.1), where the
# channel field's bits allow it; 1: one channel a part
GROUP_CHANNELS: int | None = None
# the front end's intake (SimOptions.intake): "dramsim3" offers one request a cycle to the whole
# memory system in trace order, as DRAMsim3's trace-driven CPU does (the default; results are
# DRAMsim3's); "per-channel" lets every channel accept one request a cycle, each channel in
# trace order, a request waiting for a full queue holding back only its own channel, as a
# GPU's crossbar delivers requests to every channel's controller in parallel
INTAKES = {"dramsim3": K.INTAKE_DRAMSIM3, "per-channel": K.INTAKE_PER_CHANNEL}


@dataclass
class SimOptions:
    """How a run is driven (the memory system itself is the MemoryConfig)."""

    cycles: int | None = None            # simulate exactly this many cycles (DRAMsim3's -c)
    max_cycles: int | None = None        # stop at this cycle or when the trace is done
    epoch: int | None = None             # epoch length in cycles (default: cfg.epoch_period)
    phantom_eof_read: bool = False       # reproduce DRAMsim3's extra READ at end of trace
    cmd_trace: Path | None = None        # write every DRAM command here
    track_completions: bool = False      # keep (request id, completion cycle) pairs
    chunk_size: int = 1 << 16
    wrap_addresses: bool = False         # drop address bits above the capacity (DRAMsim3)
    fast_idle: bool = True               # skip long idle stretches whole refresh periods at
                                         # a time (identical statistics; off: step by step)
    line_bytes: int | str | None = "auto"   # simulate_trace: the trace's requests are lines
                                         # of this many bytes, merged or split into the
                                         # memory's request size (trace.to_request_size);
                                         # "auto": a generated trace's (64), else None; None:
                                         # one trace line, one request (DRAMsim3)
    coalesce_window: int = COALESCE_WINDOW   # ... merged into a larger request when a line
                                         # of its block came at most this many lines
                                         # earlier (1: consecutive lines only)
    intake: str = "dramsim3"             # front end: "dramsim3" (one request a cycle for the
                                         # whole system) or "per-channel" (one per channel)
    threads: int = 1                     # simulate_trace: channels in this many threads
                                         # (results identical to 1 thread)

    def __post_init__(self) -> None:
        lb = self.line_bytes
        if lb is not None and lb != "auto" and (isinstance(lb, bool) or not isinstance(lb, int)
                                                or lb <= 0 or lb & (lb - 1)):
            raise SimulatorInputError(f"SimOptions.line_bytes = {lb!r}: expected a power of "
                                      "two (bytes), 'auto' or None")
        if self.intake not in INTAKES:
            raise SimulatorInputError(f"SimOptions.intake = {self.intake!r}: expected one of "
                                      f"{', '.join(map(repr, INTAKES))}")
        t = self.threads
        if isinstance(t, bool) or not isinstance(t, (int, np.integer)) or not 1 <= int(t) <= 1024:
            raise SimulatorInputError(f"SimOptions.threads = {t!r}: expected an integer from "
                                      f"1 to 1024")
        if t > 1:
            if self.track_completions:
                raise SimulatorInputError(
                    f"SimOptions: threads = {t} with track_completions is not supported (the "
                    f"completion order across channels within a cycle is not kept); use "
                    f"threads = 1")
        if self.intake != "dramsim3" and self.phantom_eof_read:
            raise SimulatorInputError(
                f"SimOptions: phantom_eof_read (--phantom-eof-read) reproduces a quirk of "
                f"DRAMsim3's front end; it needs intake = 'dramsim3' (--intake dramsim3), not "
                f"{self.intake!r}")
        for name in ("cycles", "max_cycles"):
            v = getattr(self, name)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or \
                    not 1 <= int(v) <= MAX_CYCLE:
                raise SimulatorInputError(f"SimOptions.{name} = {v!r}: expected an integer "
                                          f"from 1 to 2^62 - 1")
        if self.cycles is not None and self.max_cycles is not None:
            raise SimulatorInputError(
                f"SimOptions: cycles = {self.cycles} and max_cycles = {self.max_cycles} given "
                f"together: cycles runs exactly N cycles (DRAMsim3's -c), max_cycles stops at "
                f"N or when the trace is done; give one of them")

    @property
    def limit(self) -> int | None:
        """The last cycle boundary of the run, whichever of cycles / max_cycles is given."""
        return self.cycles if self.cycles is not None else self.max_cycles


@dataclass
class EpochRecord:
    """Counters over one epoch [start, end) of the run, summed over channels."""

    start: int
    end: int
    reads_done: int
    writes_done: int
    read_latency_sum: int
    act: int
    pre: int
    ref: int
    row_hits: int
    column_cmds: int
    bank_column_cmds: np.ndarray      # [channels, ranks*banks] column commands in the epoch
    bank_open_cycles: np.ndarray      # [channels, ranks*banks] cycles with a row open
    bank_row_hits: np.ndarray         # [channels, ranks*banks]


ProgressFn = Callable[["Simulator", EpochRecord | None], None]


def _log2(x: int) -> int:
    return int(x).bit_length() - 1


class Simulator:
    """One memory system under simulation. Not thread-safe: drive it from one thread."""

    def __init__(self, cfg, options: SimOptions | None = None) -> None:
        self.cfg = cfg
        self.options = options or SimOptions()
        if self.options.threads > 1:
            raise SimulatorInputError(
                f"SimOptions.threads = {self.options.threads}: a Simulator (the online API) "
                f"runs one thread; simulate_trace (and `main.py simulate --threads`) splits the "
                f"channels over threads")
        self.tables = build_tables(cfg)
        self._build_state()
        self._epoch_len = int(self.options.epoch or getattr(cfg, "epoch_period", 0) or 0)
        self._next_epoch = self._epoch_len if self._epoch_len > 0 else K.INF
        self._epoch_base = self._snapshot()
        self._epoch_start = 0
        self.epochs: list[EpochRecord] = []
        self._next_id = 0
        self._last_req: tuple[int, int, int, int] | None = None
        self._cmd_files: list = []
        self._cmd_paths: list[Path] = []
        self._cmd_tmps: list[Path] = []
        if self.options.cmd_trace is not None:
            self._cmd_paths = cmd_trace_paths(self.options.cmd_trace, cfg.channels)
            warn_stale_cmd_traces(self.options.cmd_trace, self._cmd_paths)
            self._cmd_tmps = [p.with_name(p.name + ".part") for p in self._cmd_paths]
            self._cmd_files = [open(p, "w", encoding="ascii") for p in self._cmd_tmps]
        self._completions: list[np.ndarray] = []
        self.wall_seconds = 0.0
        self.finished = False
        self._closed = False
        self.addresses_wrapped = 0       # requests beyond the capacity (wrap_addresses)
        self._ran_on = False             # an exact-cycles run went on after its last request
        self.requests_waiting = 0        # due before the cycle limit, never accepted
        self.fast_forwards = 0           # idle stretches skipped in closed form
        self.fast_forward_cycles = 0     # cycles they spanned
        self._ff_period = self._idle_period() if (
            self.options.fast_idle and self.options.cmd_trace is None) else 0
        self._defer_finish = False       # a thread's part of a threaded run (_ChannelThreads)
        self._log_channel: int | None = None   # ... and the channel it writes commands of
        self._parts_log = False          # a threaded run's master whose parts write commands

    # ---------------------------------------------------------------- state
    def _build_state(self) -> None:
        cfg = self.cfg
        nch = cfg.channels
        ranks = cfg.ranks
        banks = cfg.banks
        nb = ranks * banks
        per_rank = cfg.queue_structure == "PER_RANK"
        nq = ranks if per_rank else nb
        cqs = cfg.cmd_queue_size if not per_rank else cfg.cmd_queue_size
        tqs = cfg.trans_queue_size
        if nch > 127:
            raise ConfigError(f"channels = {nch}: at most 127 channels are supported", key="channels")
        P = np.zeros(K.NP, np.int64)
        P[K.P_CHANNELS] = nch
        P[K.P_RANKS] = ranks
        P[K.P_BGS] = cfg.bankgroups_eff
        P[K.P_BPG] = cfg.banks_per_group_eff
        P[K.P_BANKS] = banks
        P[K.P_NQ] = nq
        P[K.P_CQ_SIZE] = cqs
        P[K.P_TQ_SIZE] = tqs
        P[K.P_UNIFIED] = int(bool(cfg.unified_queue))
        P[K.P_PER_RANK_Q] = int(per_rank)
        try:
            pol = REFRESH_POLICIES[cfg.refresh_policy]
        except KeyError:
            raise ConfigError(f"refresh_policy = {cfg.refresh_policy}: expected one of "
                              f"{', '.join(REFRESH_POLICIES)}", key="refresh_policy") from None
        P[K.P_REF_POLICY] = pol
        if pol == K.REF_RANK_STAGGERED:
            interval = cfg.tREFI // ranks
        elif pol == K.REF_RANK_SIMULTANEOUS:
            interval = cfg.tREFI
        else:
            interval = cfg.tREFIb
        P[K.P_REF_INTERVAL] = max(1, int(interval))
        P[K.P_TFAW] = cfg.tFAW
        P[K.P_T32AW] = cfg.t32AW
        P[K.P_IS_GDDR] = int(bool(cfg.is_gddr))
        P[K.P_DUAL_CMD] = int(cfg.dual_cmd_eff)
        P[K.P_READ_DELAY] = cfg.read_delay
        P[K.P_WRITE_DELAY] = cfg.write_delay
        # the address mapping, from the one declaration engine.address.decode also reads
        amap = address.mapping(cfg)
        P[K.P_SHIFT] = amap.shift
        for fld, pk, mk in (("ch", K.P_CH_POS, K.P_CH_MASK), ("ra", K.P_RA_POS, K.P_RA_MASK),
                            ("bg", K.P_BG_POS, K.P_BG_MASK), ("ba", K.P_BA_POS, K.P_BA_MASK),
                            ("ro", K.P_RO_POS, K.P_RO_MASK), ("co", K.P_CO_POS, K.P_CO_MASK)):
            P[pk] = amap.pos[fld]
            P[mk] = amap.mask[fld]
        P[K.P_ROW_HIT_CAP] = cfg.row_hit_cap
        try:
            P[K.P_SCHED] = SCHEDULERS[cfg.scheduler]
        except KeyError:
            raise ConfigError(f"scheduler = {cfg.scheduler}: expected one of "
                              f"{', '.join(SCHEDULERS)}", key="scheduler") from None
        page = "close" if cfg.row_buf_policy == "CLOSE_PAGE" else cfg.page_policy
        try:
            P[K.P_PAGE] = PAGE_POLICIES[page]
        except KeyError:
            raise ConfigError(f"page_policy = {page}: expected one of "
                              f"{', '.join(PAGE_POLICIES)}", key="page_policy") from None
        P[K.P_EP_N] = cfg.early_precharge_conflicts
        P[K.P_WR_HIGH] = cfg.write_high_watermark
        P[K.P_WR_LOW] = cfg.write_low_watermark
        P[K.P_WR_LOW_DRAIN_EMPTY] = 1
        P[K.P_WR_PRIO_BP] = int(round(cfg.write_priority_pct * 100))
        # no completion for this long with requests outstanding is reported as a livelock
        P[K.P_WATCHDOG] = max(1_000_000, 200 * cfg.tREFI)
        P[K.P_PARBS_CAP] = cfg.parbs_marking_cap
        if cfg.dynamic_bank_grouping:
            # a controller policy: the reordering window; DRAMsim3's scheduler then runs in
            # its emulated form (the plain DRAMsim3 path has no bank-grouping option)
            P[K.P_DBG_W] = cfg.bank_group_window
            if P[K.P_SCHED] == K.SCHED_DRAMSIM3:
                P[K.P_SCHED] = K.SCHED_DRAMSIM3_RR
        P[K.P_XOR] = int(amap.xor)
        P[K.P_TRACK_IDS] = int(self.options.track_completions)
        P[K.P_PHANTOM_EOF] = int(self.options.phantom_eof_read)
        P[K.P_INTAKE] = INTAKES[self.options.intake]
        P[K.P_CMDLOG] = int(self.options.cmd_trace is not None)
        folded, why = folding_is_exact(self.tables, cfg)
        if not folded:
            log.info("%s: per-bank timing updates (scoped delays not nested: %s)", cfg.name,
                     "; ".join(why[:3]))
        P[K.P_FOLDED] = int(folded)
        K.fill_derived(P)
        self.P = P
        self.nq = nq
        pcap = tqs + nq * cqs + MERGE_SLACK
        z = np.zeros
        s: dict[str, np.ndarray] = {}
        s["G"] = z(K.NG, np.int64)
        CS = z((nch, K.NCS), np.int64)
        CS[:, K.CS_PR_FREE] = 0
        CS[:, K.CS_PW_FREE] = 0
        CS[:, K.CS_QIDX] = 0
        CS[:, K.CS_DBG_COL] = -1
        CS[:, K.CS_DBG_WR] = -1
        CS[:, K.CS_DBG_WADDR] = -1
        s["CS"] = CS
        s["C"] = z((nch, K.NC), np.int64)
        s["BK"] = z((nch, nb, K.NBK), np.int64)
        s["RK"] = z((nch, ranks, K.NRK), np.int64)
        s["b_state"] = z((nch, nb), np.int64)
        s["b_row"] = np.full((nch, nb), -1, np.int64)
        s["b_hits"] = z((nch, nb), np.int64)
        # [channel, command, slot]: a slot per bank, bank group, rank and other-rank set
        s["b_timing"] = z((nch, NCMD, nb + nb // cfg.banks_per_group_eff + 2 * ranks), np.int64)
        s["b_open_since"] = z((nch, nb), np.int64)
        s["b_last_conflict"] = z((nch, nb), np.int64)
        s["b_streak"] = z((nch, nb), np.int64)
        s["r_open"] = z((nch, ranks), np.int64)
        s["faw"] = z((nch, ranks, 4), np.int64)
        s["faw_n"] = z((nch, ranks), np.int64)
        s["aw32"] = z((nch, ranks, 32), np.int64)
        s["aw32_n"] = z((nch, ranks), np.int64)
        s["refq"] = z((nch, K.REFQ_CAP, 4), np.int64)
        s["q_lb"] = z((nch, nq), np.int64)
        s["src_rank"] = z((nch, K.NSRC), np.int64)
        s["tq_n"] = z((nch, 2), np.int64)
        s["tq_addr"] = z((nch, 2, tqs), np.int64)
        s["tq_isw"] = z((nch, 2, tqs), np.int64)
        s["tq_src"] = z((nch, 2, tqs), np.int64)
        s["tq_q"] = z((nch, 2, tqs), np.int64)
        s["cq_n"] = z((nch, nq), np.int64)
        # command queues: [channel, queue, entry, field] with the kernel's CQ_* fields. CQ_ID
        # is a reserved slot the kernel moves with its entry but never reads; removing it
        # made the compiled kernel about 20 % slower on random traces (measured A/B, same
        # machine and session): code generation for the inlined event loop is that
        # sensitive. Drop it only together with a speed re-measurement.
        s["cq"] = z((nch, nq, cqs, K.NCQ), np.int64)
        for pre in ("pr", "pw"):
            s[pre + "_head"] = np.full((nch, K.HASH_BUCKETS), -1, np.int64)
            nxt = np.tile(np.arange(1, pcap + 1, dtype=np.int64), (nch, 1))
            nxt[:, -1] = -1
            s[pre + "_next"] = nxt
            s[pre + "_addr"] = z((nch, pcap), np.int64)
            s[pre + "_added"] = z((nch, pcap), np.int64)
            s[pre + "_id"] = z((nch, pcap), np.int64)
        for pre in ("ring_r", "ring_f"):
            s[pre + "_t"] = z(K.RING, np.int64)
            s[pre + "_code"] = z(K.RING, np.int64)
            s[pre + "_lat"] = z(K.RING, np.int64)
        s["hist_r"] = z((nch, HIST_BINS), np.int64)
        s["hist_w"] = z((nch, HIST_BINS), np.int64)
        s["comp_out"] = z((COMP_ROWS if self.options.track_completions else 1, 2), np.int64)
        s["cmd_log"] = z((CMD_LOG_ROWS if self.options.cmd_trace is not None else 1,
                          K.LOG_COLS), np.int64)
        s["scratch"] = z((nb + 3, K.NSRC), np.int64)
        self.consts = K.Consts(P, self.tables.count, self.tables.nxt, self.tables.delay)
        self._consts_t = tuple(self.consts)
        self._set_state(K.State(**s))

    # ---------------------------------------------------------------- running
    @property
    def clock(self) -> int:
        """The next cycle to simulate."""
        return int(self.s["G"][K.G_CLK])

    def _call(self, addr, isw, cyc, src, rid, final: bool, stop: int, horizon: int) -> int:
        # kernel.run_kernel on the bundles as plain tuples, the chunk in Chunk's order: the
        # ahead-of-time compiled library when there is one, else numba's (engine.kernel_aot)
        return self._runner(addr, isw, cyc, src, rid, int(final), stop, horizon)

    def _set_state(self, state: K.State) -> None:
        """Make `state` the kernel's state; `self.s` names its arrays (a read-only view)."""
        self.state = state
        self._state_t = tuple(state)
        self._runner = kernel_aot.runner(self._consts_t, self._state_t)
        self.s = MappingProxyType(state._asdict())

    def _run(self, addr, isw, cyc, src, rid, final: bool, horizon: int,
             progress: ProgressFn | None, cancel: Callable[[], bool] | None,
             pos0: int = 0, until: int = K.INF) -> int:
        # `until`: pause (return PAUSED) at that cycle, input left or not (threaded runs)
        G = self.s["G"]
        G[K.G_POS] = pos0
        self.s["CS"][:, K.CS_INTAKE_POS] = pos0
        accepted0 = int(G[K.G_ACCEPTED])
        limit = self.options.limit if self.options.limit is not None else K.INF
        exact = self.options.cycles is not None
        t0 = time.perf_counter()
        try:
            while True:
                stop = min(self._next_epoch, limit, until)
                if self._ff_period and not final and int(G[K.G_POS]) >= len(addr):
                    self._fast_forward(addr, isw, cyc, src, rid, min(stop, horizon))
                rc = self._call(addr, isw, cyc, src, rid, final, stop, horizon)
                if rc == K.FINISHED and exact and self.clock < limit:
                    # DRAMsim3's -c N: every accepted request is done before N, yet the
                    # memory keeps running (refresh, background energy, write drains) until N
                    self._idle_to(limit)
                    addr = isw = cyc = src = rid = np.zeros(0, np.int64)
                    final, horizon, G[K.G_POS] = False, limit, 0
                    self.s["CS"][:, K.CS_INTAKE_POS] = 0
                    continue
                self._drain_logs()
                if rc == K.PAUSED:
                    now = self.clock
                    if now >= self._next_epoch:
                        self._close_epoch(now)
                        if progress is not None:
                            progress(self, self.epochs[-1])
                    if now >= limit:
                        # requests due before the limit that the front end could not hand
                        # to a full controller queue (only the current chunk can hold any)
                        self.requests_waiting = int(np.count_nonzero(
                            cyc[int(G[K.G_POS]):] < limit))
                        if self.options.intake != "dramsim3":
                            # channels may have accepted requests beyond G_POS
                            self.requests_waiting = int(np.count_nonzero(
                                cyc[pos0:] < limit)) - (int(G[K.G_ACCEPTED]) - accepted0)
                        self._finish_at(limit)
                        return K.FINISHED
                    if now >= until:
                        return K.PAUSED
                    if cancel is not None and cancel():
                        raise SimulationCancelled(f"simulation cancelled at cycle {now}")
                    continue
                if rc == K.FINISHED:
                    self._finish_at(int(G[K.G_NUM_CYCLES]))
                if rc == K.DEADLOCK:
                    raise SimulationError(self._deadlock_report())
                return rc
        finally:
            self.wall_seconds += time.perf_counter() - t0

    def _idle_period(self) -> int:
        """Cycles after which an idle memory repeats itself: the refresh rotation (ranks, or
        banks and ranks) times the refresh interval, over a whole turn of the kernel's
        refresh queue ring (REFQ_CAP entries), so that its head index repeats too."""
        pol = int(self.P[K.P_REF_POLICY])
        if pol == K.REF_RANK_STAGGERED:
            turn = self.cfg.ranks
        elif pol == K.REF_RANK_SIMULTANEOUS:
            turn = 1
        else:
            turn = self.cfg.ranks * self.cfg.bankgroups_eff * self.cfg.banks_per_group_eff
        return int(self.P[K.P_REF_INTERVAL]) * math.lcm(turn, K.REFQ_CAP)

    def _fast_forward(self, addr, isw, cyc, src, rid, end: int) -> None:
        """Skip most of the idle stretch [clock, end) in closed form, identical to simulating it.

        Called with no input left before `end` (the caller's horizon, epoch or cycle limit).
        Simulates whole periods p (refresh rotation x interval) until the state is periodic,
        i.e. the change over the last period equals the change over the one before, element
        by element, in every state array (counters and cycle stamps advance by the same
        amount each period; queues, rows and rings are unchanged); then the kernel, which is
        invariant to a shift of time by whole periods when idle, would repeat that change
        every period, so k periods are added at once: state += k * change. The rest is
        simulated. The large arrays (completion rings, latency histograms, completion and
        command logs) are not copied: the kernel writes them only when a request is accepted
        or completes or a column command issues, so those counters must not have moved."""
        p = self._ff_period
        s = self.s
        small = [k for k, v in s.items() if v.size < FF_BIG]

        def snap() -> dict[str, np.ndarray]:
            return {k: s[k].copy() for k in small}

        def quiet(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
            G0, G1, C0, C1 = a["G"], b["G"], a["C"], b["C"]
            return (G0[K.G_ACCEPTED] == G1[K.G_ACCEPTED]
                    and G0[K.G_COMPLETED] == G1[K.G_COMPLETED]
                    and np.array_equal(C0[:, K.C_READ_CMDS], C1[:, K.C_READ_CMDS])
                    and np.array_equal(C0[:, K.C_WRITE_CMDS], C1[:, K.C_WRITE_CMDS]))

        def period() -> int:
            target = self.clock + p
            while self.clock < target:      # (a full completion buffer pauses the kernel)
                rc = self._call(addr, isw, cyc, src, rid, False, target, target)
                self._drain_logs()
                if rc == K.DEADLOCK:
                    raise SimulationError(self._deadlock_report())
                if rc != K.PAUSED:
                    return rc
            return K.PAUSED

        if end - self.clock < FF_MIN_PERIODS * p:
            return
        snaps = [snap()]
        for _ in range(FF_PROBES):
            if end - self.clock < 3 * p or period() != K.PAUSED:
                self._refuse_long_idle(end)
                return
            snaps.append(snap())
            if len(snaps) < 3:
                continue
            s0, s1, s2 = snaps[-3:]
            snaps = snaps[-2:]
            change: dict[str, np.ndarray] = {}
            periodic = quiet(s0, s2)
            for name, v in s2.items():
                if not periodic:
                    break
                dv = v - s1[name]
                periodic = np.array_equal(dv, s1[name] - s0[name])
                if periodic and dv.any():
                    change[name] = dv
            if not periodic:
                continue
            k = (end - self.clock) // p - 1
            if k > 0:
                for name, dv in change.items():
                    s[name][...] += k * dv
                self.fast_forwards += 1
                self.fast_forward_cycles += k * p
            return
        self._refuse_long_idle(end)

    def _refuse_long_idle(self, end: int) -> None:
        """The idle state did not become periodic: refuse what would take too long step by
        step (api_checks.MAX_GAP_REFRESHES), as the checks do without the fast path."""
        check_span(self.clock, end, ref_interval=int(self.P[K.P_REF_INTERVAL]),
                   epoch_len=0, what=f"idle time from cycle {self.clock} to {end} (its "
                   f"state never became periodic, so it cannot be skipped in closed form)")

    def _idle_to(self, limit: int) -> None:
        """After FINISHED in an exact-cycles run: let the kernel run on, input-free, to limit."""
        G = self.s["G"]
        check_span(self.clock, limit, ref_interval=int(self.P[K.P_REF_INTERVAL]),
                   epoch_len=self._epoch_len,
                   what=f"cycles = {limit} (every request was done at cycle {self.clock})",
                   refresh_limit=not self._ff_period)
        G[K.G_FRONT_DONE] = 0
        G[K.G_FINISHED] = 0
        self._ran_on = True

    def _why_refresh(self) -> str:
        """Why idle refresh is simulated command by command in this run (empty: it is not)."""
        if self._ff_period:
            return ""
        if (self.options.cmd_trace is not None or self._log_channel is not None
                or self._parts_log):
            return "a command trace is written (every REFRESH is a line of it)"
        if not self.options.fast_idle:
            return "the closed-form idle skip is off (fast_idle=False)"
        return "this configuration's idle time has no closed form"

    def _admit(self, addr, is_write, cycle, stream
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Check one chunk (types, order, idle gaps, addresses), give its requests their ids
        and remember the last one: the kernel's int64 arrays (addr, is_write, cycle, stream)
        and the ids."""
        last = self._last_req[2] if self._last_req is not None else 0
        a_u, w_i, c_i, s_i = check_feed(addr, is_write, cycle, stream, last_cycle=last,
                                        first_id=self._next_id)
        check_gaps(c_i, last, first_id=self._next_id,
                   ref_interval=int(self.P[K.P_REF_INTERVAL]), epoch_len=self._epoch_len,
                   refresh_limit=not self._ff_period, why_refresh=self._why_refresh())
        n = a_u.shape[0]
        a = np.ascontiguousarray(a_u).view(np.int64)
        w = np.ascontiguousarray(w_i)
        c = np.ascontiguousarray(c_i)
        sr = np.zeros(n, np.int64) if s_i is None else np.ascontiguousarray(s_i)
        ids = np.arange(self._next_id, self._next_id + n, dtype=np.int64)
        self._next_id += n
        if n:
            self._last_req = (int(a[-1]), int(w[-1]), int(c[-1]), int(sr[-1]))
            self._check_addresses(a)
        return a, w, c, sr, ids

    def feed(self, addr: np.ndarray, is_write: np.ndarray, cycle: np.ndarray,
             stream: np.ndarray | None = None, *, final: bool = False,
             progress: ProgressFn | None = None,
             cancel: Callable[[], bool] | None = None) -> np.ndarray:
        """Offer requests (one trace chunk, cycles non-decreasing and not before earlier ones).

        Returns the request ids given to them. With final=True the run continues until every
        accepted request has completed (or the cycle limit)."""
        self._check_open()
        if self.finished:
            raise DiffMemError("this simulation has finished; start a new Simulator")
        a, w, c, sr, ids = self._admit(addr, is_write, cycle, stream)
        n = a.shape[0]
        pos0 = 0
        rid = ids
        if n == 0 and final and self._last_req is not None:
            # nothing new: the kernel still needs the last request for the EOF quirk
            a, w, c, sr = (np.array([x], np.int64) for x in self._last_req)
            rid = np.array([-1], np.int64)
            pos0 = 1
        m = len(a)
        segments = self._split_at_gaps(c) if (self._ff_period and n) else [(0, m, False)]
        z = np.zeros(0, np.int64)
        for lo, hi, idle_first in segments:
            if idle_first:
                # a long idle stretch before request lo: simulated input-free (and skipped
                # in closed form) up to its arrival, exactly as the kernel would wait for it
                self._run(z, z, z, z, z, False, int(c[lo]), progress, cancel)
                if self.finished:
                    break
            self._run(a[lo:hi], w[lo:hi], c[lo:hi], sr[lo:hi], rid[lo:hi],
                      final and hi == m, 0, progress, cancel, pos0)
            if self.finished:
                break
        return ids

    def _split_at_gaps(self, c: np.ndarray) -> list[tuple[int, int, bool]]:
        """(lo, hi, long idle stretch before lo) segments of a chunk, cut where requests
        are at least FF_MIN_PERIODS idle periods apart (or the first is that far ahead)."""
        n = len(c)
        far = FF_MIN_PERIODS * self._ff_period
        if int(c[-1]) - min(self.clock, int(c[0])) < far:
            # the chunk's whole span is shorter than a long stretch: no gap in it is long
            return [(0, n, False)]
        start = np.empty(n, np.int64)
        start[0] = self.clock
        start[1:] = c[:-1]
        cuts = np.flatnonzero(c - start >= far).tolist()
        if not cuts:
            return [(0, n, False)]
        bounds = ([0] if cuts[0] != 0 else []) + cuts + [n]
        return [(lo, hi, lo in set(cuts)) for lo, hi in zip(bounds[:-1], bounds[1:])]

    def _check_addresses(self, a: np.ndarray) -> None:
        cap = getattr(self.cfg, "capacity_bytes", None)
        if cap and a.size and int(a.view(np.uint64).max()) >= cap:
            # (one reduction first: a trace's reader has already refused such addresses)
            bad = np.flatnonzero(a.view(np.uint64) >= np.uint64(cap))
            if bad.size and self.options.wrap_addresses:
                # DRAMsim3 decodes only the mapped bits, so the bits above the capacity are
                # dropped for the DRAM location; the full address stays the line's identity
                # in the pending-request maps, as in DRAMsim3
                if self.addresses_wrapped == 0:
                    i = int(bad[0])
                    log.warning("%s: the run's request %d (counting from 1, in the order "
                                "the requests were offered): address %#x is beyond the "
                                "capacity of %d bytes: its bits above the capacity are dropped "
                                "(--wrap-addresses); further ones are counted in "
                                "num_addresses_wrapped", self.cfg.name,
                                self._next_id - len(a) + i + 1, int(a.view(np.uint64)[i]), cap)
                self.addresses_wrapped += int(bad.size)
            elif bad.size:
                i = int(bad[0])
                raise DiffMemError(
                    f"request {self._next_id - len(a) + i}: address {int(a.view(np.uint64)[i]):#x} "
                    f"is beyond the memory capacity of {cap} bytes ({self.cfg.name}); "
                    f"wrap_addresses=True (--wrap-addresses) drops the bits above the "
                    f"capacity as DRAMsim3 does")

    def access(self, addrs, sizes, is_write, cycles) -> np.ndarray:
        """Online interface: accesses of any size, split into DRAM requests.

        Each access of `sizes[i]` bytes at `addrs[i]` becomes ceil(size / request size) requests
        of consecutive aligned lines, offered at `cycles[i]`. Returns the request ids (one
        array per call, in order); completions are read with `completions()`."""
        self._check_open()
        addrs, is_write, cycles, _ = check_feed(
            np.atleast_1d(addrs), np.atleast_1d(is_write), np.atleast_1d(cycles), None,
            last_cycle=self._last_req[2] if self._last_req is not None else 0,
            first_id=self._next_id)
        sizes = np.atleast_1d(np.asarray(sizes))
        if sizes.ndim != 1 or sizes.dtype.kind not in "iu" or sizes.shape != addrs.shape:
            raise SimulatorInputError(f"sizes: expected {addrs.shape[0]} positive integers "
                                      f"(one per access), got {sizes.dtype} {sizes.shape}")
        if sizes.size and (sizes.min() < 1 or sizes.max() > 1 << 40):
            raise SimulatorInputError("sizes: expected 1 to 2^40 bytes per access")
        sizes = sizes.astype(np.int64)
        is_write = is_write.astype(bool)
        rs = self.cfg.request_size_bytes
        first = addrs // np.uint64(rs)
        last = (addrs + sizes.astype(np.uint64) - np.uint64(1)) // np.uint64(rs)
        counts = (last - first + np.uint64(1)).astype(np.int64)
        rep = np.repeat(np.arange(len(addrs)), counts)
        offs = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
        line = (first[rep] + offs.astype(np.uint64)) * np.uint64(rs)
        return self.feed(line, is_write[rep], cycles[rep])

    def advance(self, cycle: int) -> None:
        """Online interface: simulate up to `cycle` with no new request before it."""
        self._check_open()
        if isinstance(cycle, bool) or not isinstance(cycle, (int, np.integer)):
            raise SimulatorInputError(f"advance: cycle must be an integer, got "
                                      f"{type(cycle).__name__}")
        cycle = int(cycle)
        if not 0 <= cycle <= MAX_CYCLE:
            raise SimulatorInputError(f"advance: cycle {cycle} is outside 0..2^62")
        check_span(max(self.clock, self._last_req[2] if self._last_req else 0), cycle,
                   ref_interval=int(self.P[K.P_REF_INTERVAL]), epoch_len=self._epoch_len,
                   what=f"advance({cycle})", refresh_limit=not self._ff_period)
        z = np.zeros(0, np.int64)
        self._run(z, z, z, z, z, False, int(cycle), None, None)

    def finish(self, progress: ProgressFn | None = None,
               cancel: Callable[[], bool] | None = None) -> "Stats":
        """Run until every accepted request has completed; return the statistics."""
        if not self.finished:
            self.feed(np.zeros(0, np.uint64), np.zeros(0, bool), np.zeros(0, np.int64),
                      final=True, progress=progress, cancel=cancel)
        return self.stats()

    def completions(self) -> tuple[np.ndarray, np.ndarray]:
        """(request ids, completion cycles) of the requests completed since the last call."""
        parts = self._completions
        self._completions = []
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        allc = np.concatenate(parts)
        return allc[:, 0].copy(), allc[:, 1].copy()

    def _deadlock_report(self) -> str:
        s = self.s
        busy = [(ch, q, int(s["cq_n"][ch, q])) for ch in range(self.cfg.channels)
                for q in range(self.nq) if s["cq_n"][ch, q]]
        return (f"{self.cfg.name}: the controller can make no further progress at cycle "
                f"{self.clock} with {int(s['G'][K.G_ACCEPTED] - s['G'][K.G_COMPLETED])} "
                f"requests outstanding (read queues {s['tq_n'][:, 0].tolist()}, write buffers "
                f"{s['tq_n'][:, 1].tolist()}, non-empty command queues (channel, queue, "
                f"entries) {busy[:8]}); this policy combination deadlocks on this traffic")

    # ---------------------------------------------------------------- bookkeeping
    def _drain_logs(self) -> None:
        G = self.s["G"]
        n = int(G[K.G_NLOG])
        if n and self._cmd_files:
            rows = self.s["cmd_log"][:n]
            if self._log_channel is not None:
                # a part of a threaded run: its kernel numbers its channels from 0
                rows = rows.copy()
                rows[rows[:, 2] >= 0, 2] += self._log_channel
            out: list[list[str]] = [[] for _ in self._cmd_files]
            for r in rows.tolist():
                row = f"{r[6]:#x}" if r[6] >= 0 else "-0x1"
                col = f"{r[7]:#x}" if r[7] >= 0 else "-0x1"
                out[r[8] if len(out) > 1 else 0].append(
                    f"{r[0]:<18} {COMMAND_NAMES[r[1]]:<20} {r[2]:>3} {r[3]:>3} {r[4]:>3} "
                    f"{r[5]:>3} {row:>8} {col:>8}\n")
            for f, lines in zip(self._cmd_files, out):
                f.write("".join(lines))
        G[K.G_NLOG] = 0
        m = int(G[K.G_NCOMP_OUT])
        if m:
            self._completions.append(self.s["comp_out"][:m].copy())
            G[K.G_NCOMP_OUT] = 0

    def _snapshot(self) -> dict[str, np.ndarray]:
        s = self.s
        open_now = s["BK"][:, :, K.BK_OPEN_CYCLES].copy()
        return {"C": s["C"].copy(), "BK": s["BK"].copy(), "open": open_now}

    def _bank_open_cycles(self, now: int) -> np.ndarray:
        s = self.s
        acc = s["BK"][:, :, K.BK_OPEN_CYCLES].copy()
        is_open = s["b_state"] == 1
        acc[is_open] += now - s["b_open_since"][is_open]
        return acc

    def _close_epoch(self, now: int) -> None:
        base = self._epoch_base
        s = self.s
        dC = s["C"] - base["C"]
        dBK = s["BK"] - base["BK"]
        open_now = self._bank_open_cycles(now)
        rec = EpochRecord(
            start=self._epoch_start, end=now,
            reads_done=int(dC[:, K.C_READS_DONE].sum()),
            writes_done=int(dC[:, K.C_WRITES_DONE].sum()),
            read_latency_sum=int(dC[:, K.C_READ_LAT_SUM].sum()),
            act=int(dC[:, K.C_ACT].sum()), pre=int(dC[:, K.C_PRE].sum()),
            ref=int(dC[:, K.C_REF].sum()),
            row_hits=int(dC[:, K.C_READ_HITS].sum() + dC[:, K.C_WRITE_HITS].sum()),
            column_cmds=int(dC[:, K.C_READ_CMDS].sum() + dC[:, K.C_WRITE_CMDS].sum()),
            bank_column_cmds=dBK[:, :, K.BK_RD] + dBK[:, :, K.BK_WR],
            bank_open_cycles=open_now - base["open"],
            bank_row_hits=dBK[:, :, K.BK_HITS])
        self.epochs.append(rec)
        self._epoch_base = {"C": s["C"].copy(), "BK": s["BK"].copy(), "open": open_now}
        self._epoch_start = now
        self._next_epoch = now + self._epoch_len if self._epoch_len > 0 else K.INF

    def _finish_at(self, num_cycles: int) -> None:
        if self.finished:
            return
        G = self.s["G"]
        G[K.G_NUM_CYCLES] = num_cycles
        G[K.G_CLK] = num_cycles
        if self._defer_finish:
            # a thread's part of a threaded run: the run's end (its last epoch) is decided
            # once every thread is done (_ChannelThreads.finish)
            self.finished = True
            return
        if self._epoch_len > 0 and num_cycles > self._epoch_start:
            self._close_epoch(num_cycles)
        self.finished = True
        self._drain_logs()
        self._complete_cmd_files()

    def _complete_cmd_files(self) -> None:
        """The run's command-trace files are complete: each closed and moved into place."""
        for f, tmp, path in zip(self._cmd_files, self._cmd_tmps, self._cmd_paths):
            f.close()
            tmp.replace(path)
        self._cmd_files = []

    def _log_as(self, first_channel: int) -> None:
        """A threaded run's part (its channels numbered from 0 by its kernel): log its
        commands, as those of the channels from `first_channel` on (the files: the caller's)."""
        self.P[K.P_CMDLOG] = 1
        self._set_state(self.state._replace(
            cmd_log=np.zeros((CMD_LOG_ROWS, K.LOG_COLS), np.int64)))
        self._ff_period = 0              # as in a one-state run with a command trace
        self._log_channel = first_channel

    def _log_commands_of(self, channel: int, path: Path) -> None:
        """A threaded run's one-channel part: write the commands it simulates, as those of
        `channel`, to that channel's command-trace file `path` (the state is cut already)."""
        self._log_as(channel)
        self._cmd_paths = [Path(path)]
        self._cmd_tmps = [self._cmd_paths[0].with_name(self._cmd_paths[0].name + ".part")]
        self._cmd_files = [open(self._cmd_tmps[0], "w", encoding="ascii")]

    def _check_open(self) -> None:
        if self._closed:
            raise DiffMemError("this Simulator is closed: start a new one")

    def close(self) -> None:
        """Release the command-trace file of an abandoned run (the partial file is removed);
        the simulator refuses further input."""
        self._closed = True
        for f, tmp in zip(self._cmd_files, self._cmd_tmps):
            f.close()
            tmp.unlink(missing_ok=True)
        self._cmd_files = []

    def stats(self) -> "Stats":
        from engine.stats import build_stats
        return build_stats(self)


class _ChannelThreads:
    """simulate_trace with SimOptions(threads=N) under the per-channel intake: every channel
    is simulated by its own one-channel Simulator (the config's state arrays cut to that
    channel's rows, P_CHANNELS = 1 and the channel bits masked off, so the kernel runs
    unchanged), N of them at a time in a thread pool (the kernel is compiled with nogil).

    Under the per-channel intake a channel's controller depends on the other channels only
    through the front end's chunk boundaries: the one-state run takes the next input
    segment when every channel has taken its requests of the current one. That cycle is
    reproduced exactly from each channel's last acceptance (G_LAST_ACCEPT of its Simulator):
    channel c reaches the segment's end at the tick it accepted the segment's last request,
    else at max(its last acceptance + 1, the last request's arrival) (it steps over requests
    of other channels only once they have arrived), or at max(segment start, last arrival)
    with no request in the segment; the next segment starts the cycle after the latest of
    these. Every channel runs (input-free) up to that cycle before the next segment, and at
    the end every channel runs on to the run's last cycle, as it does in the one-state run.
    The statistics are then each channel's rows and the global counters summed, epochs
    summed. Not modelled, since not reached: the one-state run's completion rings, shared by
    all channels, refuse a request only with 65535 completions in flight, far beyond what
    the queues can hold."""

    def __init__(self, cfg, options: SimOptions) -> None:
        # the command trace, if any, is written by the channels' Simulators, one file each
        one = dataclasses.replace(options, threads=1, cmd_trace=None)
        self.cfg = cfg
        self.master = Simulator(cfg, one)        # input checks, segmenting, merged stats
        nch = cfg.channels
        logs = (cmd_trace_paths(options.cmd_trace, nch) if options.cmd_trace is not None
                else None)
        if logs is not None:
            warn_stale_cmd_traces(options.cmd_trace, logs)
            self.master._ff_period = 0           # (no closed-form idle skip with a trace)
            self.master._parts_log = True        # (its parts write the command trace)
        self.per_channel = _per_channel_arrays(self.master)
        self.subs: list[Simulator] = []
        for ch in range(nch):
            sub = _part_simulator(cfg, one, self.per_channel, ch, 1)
            if logs is not None:
                sub._log_commands_of(ch, logs[ch])
            sub._epoch_base = sub._snapshot()
            self.subs.append(sub)
        from concurrent.futures import ThreadPoolExecutor
        self.threads = min(int(options.threads), nch)
        self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="diffmem-ch")

    def _rows(self, i: int) -> slice:
        """The channels (rows of the one-state arrays) that part i simulates."""
        return slice(i, i + 1)

    def _each(self, fn, which: Sequence[int] | None = None) -> list:
        """fn(i) for every channel i (or those in `which`, the others' results None), in
        the pool: one task per thread, each taking the next channel when it is free (a task
        per channel cost ~20 us of the main thread's time each); one channel runs here."""
        n = len(self.subs)
        todo = list(range(n)) if which is None else list(which)
        out: list = [None] * n
        if len(todo) == 1:
            out[todo[0]] = fn(todo[0])
            return out
        nxt = iter(todo)
        lock = threading.Lock()

        def work() -> None:
            while True:
                with lock:
                    i = next(nxt, None)
                if i is None:
                    return
                out[i] = fn(i)
        # the calling thread is one of the workers: a pool thread fewer to wake and wait for
        # at every parallel step
        futures = [self.pool.submit(work) for _ in range(min(self.threads, len(todo)) - 1)]
        err: BaseException | None = None
        try:
            work()
        except BaseException as e:          # the pool's tasks still end before it is raised
            err = e
        for f in futures:
            try:
                f.result()
            except BaseException as e:
                err = err or e
        if err is not None:
            raise err
        return out

    def _check_cancel(self, cancel) -> None:
        """Between parallel steps (a segment, a window): the channels' threads check the
        flag only where a one-state run does (epoch ends), which may be far apart."""
        if cancel is not None and cancel():
            raise SimulationCancelled(f"simulation cancelled at cycle {self.clock}")

    @property
    def clock(self) -> int:
        return self.subs[0].clock

    @property
    def finished(self) -> bool:
        return any(s.finished for s in self.subs)

    def _settle(self, cancel) -> None:
        """A group reached the cycle limit: so did the one-state run (its segment ends
        later); every other group runs input-free to the limit and ends there."""
        limit = self.master.options.limit
        z = np.zeros(0, np.int64)

        def go(i: int) -> None:
            sub = self.subs[i]
            if not sub.finished:
                sub._run(z, z, z, z, z, False, int(limit), None, cancel)
        self._each(go)

    def _advance(self, target: int, cancel) -> None:
        z = np.zeros(0, np.int64)

        def go(i: int) -> None:
            sub = self.subs[i]
            if sub.clock < target:
                sub._run(z, z, z, z, z, False, target, None, cancel)
        self._each(go)
        if self.finished:
            self._settle(cancel)

    def feed(self, addr, is_write, cycle, stream, cancel) -> None:
        """One trace chunk, as Simulator.feed (not final) takes it in the one-state run."""
        m = self.master
        if self.finished:
            return
        m.s["G"][K.G_CLK] = self.clock
        a, w, c, sr, rid = m._admit(addr, is_write, cycle, stream)
        n = a.shape[0]
        if n == 0:
            return
        chan = address.channel(self.cfg, a)
        for lo, hi, idle_first in (m._split_at_gaps(c) if m._ff_period else [(0, n, False)]):
            if idle_first:
                self._advance(int(c[lo]), cancel)
                if self.finished:
                    return
            self._check_cancel(cancel)
            self._segment((a, w, c, sr, rid), chan, lo, hi, cancel)
            if self.finished:
                return
            m.s["G"][K.G_CLK] = self.clock

    def _segment(self, req: tuple, chan: np.ndarray, lo: int, hi: int, cancel) -> None:
        """Input requests lo..hi - 1 (no long idle stretch among them), every channel."""
        a, w, c, sr, rid = req
        t0 = self.clock
        sel = [np.flatnonzero(chan[lo:hi] == i) + lo for i in range(len(self.subs))]

        def go(i: int) -> None:
            sub = self.subs[i]
            ix = sel[i]
            if ix.size:
                sub._run(a[ix], w[ix], c[ix], sr[ix], rid[ix], False, 0, None, cancel)
        self._each(go)
        if self.finished:
            self._settle(cancel)
            return
        # the cycle at which the one-state run takes the next segment
        c_last = int(c[hi - 1])
        x = int(chan[hi - 1])
        seen = np.zeros(self.cfg.channels, bool)
        seen[chan[lo:hi]] = True
        end = max(t0, c_last)
        for ch in np.flatnonzero(seen).tolist():
            # (the channel accepted requests in this segment, the last one at ta)
            ta = int(self.subs[ch].s["G"][K.G_LAST_ACCEPT])
            end = max(end, ta if ch == x else max(ta + 1, c_last))
        self._advance(end + 1, cancel)

    def finish(self, cancel) -> None:
        """Simulator.finish: run until every accepted request is done (or the limit), then
        every group on to the run's last cycle."""
        z = np.zeros(0, np.int64)
        a = w = c = sr = rid = z
        pos0 = 0
        if self.master._last_req is not None:
            # as Simulator.feed's empty final feed: the last request again, already taken
            a, w, c, sr = (np.array([x], np.int64) for x in self.master._last_req)
            rid = np.array([-1], np.int64)
            pos0 = 1

        def go(i: int) -> None:
            sub = self.subs[i]
            if not sub.finished:
                sub._run(a, w, c, sr, rid, True, 0, None, cancel, pos0)
        self._each(go)
        end = max(int(s.s["G"][K.G_NUM_CYCLES]) for s in self.subs)
        z = np.zeros(0, np.int64)

        def run_on(i: int) -> None:
            # the channels of a group done earlier keep running (refresh, power states)
            # until the run's last cycle, as in the one-state run
            sub = self.subs[i]
            sub._defer_finish = False
            sub.finished = False
            if sub.clock < end:
                G = sub.s["G"]
                # (FRONT_DONE cleared: the kernel then waits for input up to `end`)
                G[K.G_FRONT_DONE] = 0
                G[K.G_FINISHED] = 0
                sub._ff_period = 0
                sub._run(z, z, z, z, z, False, end, None, cancel)
            if not sub.finished:
                sub._finish_at(end)
        self._each(run_on)

    def stats(self) -> "Stats":
        self._merge()
        return self.master.stats()

    def _gather_rows(self) -> None:
        """Every part's per-channel arrays copied into its rows of the master's (a latency
        histogram by _copy_counts)."""
        m = self.master
        for name, counter in _HISTOGRAMS.items():
            for i, sub in enumerate(self.subs):
                rows = self._rows(i)
                _copy_counts(m.s[name][rows], m.s["C"][rows, counter], sub.s[name],
                             sub.s["C"][:, counter], self._hist_top_known(i, name))
        for name in self.per_channel:
            if name not in _HISTOGRAMS:
                arr = m.s[name]
                for i, sub in enumerate(self.subs):
                    arr[self._rows(i)] = sub.s[name]

    def _hist_top_known(self, i: int, name: str) -> int:
        """A guess of part i's histogram `name`'s highest count + 1 (checked by the caller)."""
        return 1

    def _merge(self) -> None:
        """The one-state run's state from the channels' (its statistics' inputs)."""
        m = self.master
        subs = self.subs
        self._gather_rows()
        G = m.s["G"]
        Gs = [s.s["G"] for s in subs]
        end = int(Gs[0][K.G_NUM_CYCLES])
        G[K.G_NUM_CYCLES] = G[K.G_CLK] = end
        for k in (K.G_ACCEPTED, K.G_COMPLETED, K.G_FRONT_LAG_SUM, K.G_PHANTOM_ADDED):
            G[k] = sum(int(g[k]) for g in Gs)
        for k in (K.G_LAST_ACCEPT, K.G_LAST_COMPLETE):
            G[k] = max(int(g[k]) for g in Gs)
        G[K.G_FINISHED] = G[K.G_FRONT_DONE] = 1
        m.finished = True
        m.requests_waiting = sum(s.requests_waiting for s in subs)
        self._merge_counters()

    def _merge_counters(self) -> None:
        """The channels' epochs and run counters added to the master's (which holds those of
        any part it ran in one state itself); the channels' are cleared."""
        m = self.master
        subs = self.subs
        m.fast_forwards += sum(s.fast_forwards for s in subs)
        m.fast_forward_cycles += sum(s.fast_forward_cycles for s in subs)
        m.wall_seconds += max(s.wall_seconds for s in subs)
        for s in subs:
            s.fast_forwards = s.fast_forward_cycles = 0
            s.wall_seconds = 0.0
        for recs in zip(*(s.epochs for s in subs)):
            r0 = recs[0]
            if any((r.start, r.end) != (r0.start, r0.end) for r in recs):
                raise SimulationError("threaded run: epoch boundaries differ between threads")
            fields = {}
            for f in dataclasses.fields(EpochRecord):
                if f.name in ("start", "end"):
                    continue
                vals = [getattr(r, f.name) for r in recs]
                # per-bank arrays: one row per channel, in channel order
                fields[f.name] = (np.concatenate(vals) if isinstance(vals[0], np.ndarray)
                                  else sum(vals))
            m.epochs.append(EpochRecord(start=r0.start, end=r0.end, **fields))
        if len({len(s.epochs) for s in subs}) != 1:
            raise SimulationError("threaded run: epoch counts differ between threads")
        for s in subs:
            s.epochs = []

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)
        for s in self.subs:
            s.close()
        self.master.close()


# the latency histograms (each bin count of one counter: its sum), copied in part
_HISTOGRAMS = {"hist_r": K.C_READS_DONE, "hist_w": K.C_WRITE_LAT_N}
# the pending-request maps' slot arrays (slot i: next in its chain or the free list, line,
# cycle added, request id), copied in part: slots never taken are as built (next i + 1, the
# rest 0), and a slot once taken has its cycle added >= 1 for good
_MAPS = {m: tuple(m + f for f in ("_next", "_addr", "_added", "_id")) for m in ("pr", "pw")}
_MAP_ARRAYS = {k for ks in _MAPS.values() for k in ks}
# a one-channel Simulator's Python-side run state, kept with its arrays by a window's copy
# the completion rings: name, and the G slots of their head and length
_RINGS = (("ring_r", K.G_RING_R_HEAD, K.G_RING_R_N), ("ring_f", K.G_RING_F_HEAD, K.G_RING_F_N))
def _ring_slots(G: np.ndarray, head_k: int, n_k: int) -> np.ndarray:
    """The slots of a completion ring's live entries, oldest first."""
    return (int(G[head_k]) + np.arange(int(G[n_k]))) & (K.RING - 1)


def _pending_reads(C: np.ndarray) -> np.ndarray:
    """Each channel's live read entries in its pending map: every read not answered from
    the write buffer adds one, every READ command removes at least one (an upper bound)."""
    return C[:, K.C_READS_ACCEPTED] - C[:, K.C_WBUF_HITS] - C[:, K.C_READ_CMDS]


def _part_simulator(cfg, options: SimOptions, per_channel: list[str], first: int,
                    k: int) -> "Simulator":
    """A threaded run's part: a Simulator of channels first .. first + k - 1 (k a power of
    two, first a multiple of k where k > 1: the channel field's high bits pick the part), its
    per-channel arrays cut to their rows; its kernel sees the field's low bits, 0 .. k - 1,
    as its channels. It leaves finishing to the runner."""
    sub = Simulator(cfg, options)
    # (P first: _set_state binds the kernel variant for P, which has one for one channel)
    sub.P[K.P_CHANNELS] = k
    sub.P[K.P_CH_MASK] = k - 1
    sub._set_state(sub.state._replace(**{
        n: np.ascontiguousarray(sub.s[n][first:first + k]) for n in per_channel}))
    sub._defer_finish = True
    return sub


def _per_channel_arrays(master: "Simulator") -> list[str]:
    """The state arrays with a row a channel (cut between a threaded run's parts); the
    others (global counters, rings, buffers emptied after each kernel call) are not."""
    glob = {"G", "comp_out", "cmd_log", "scratch"} | {
        k for k in master.s if k.startswith("ring_")}
    return [k for k in master.s if k not in glob]


_SUB_RUN_STATE = ("_epoch_base", "_epoch_start", "_next_epoch", "finished", "requests_waiting",
                  "fast_forwards", "fast_forward_cycles", "_ran_on")


def _copy_counts(dst: np.ndarray, dst_counts: np.ndarray, src: np.ndarray,
                 src_counts: np.ndarray, top: int = 1) -> None:
    """dst[...] = src for latency histogram rows (`*_counts`: their counters in C, each row's
    sum, dst's before the copy), writing only the bins up to src's highest count (`top`: a
    guess of it + 1, checked). A channel's 32,768 bins are nearly all empty, and pages of
    them never touched took a page fault each when written (HBM2, 2 threads: 3.4 of the 4 ms
    of the merge's whole copy). dst's bins from there on are zero when its counts add up
    below it: so between a threaded run's master and its parts, whose counts only grow from
    each other's; the whole rows are copied if not."""
    if int(src[:, :top].sum()) != int(src_counts.sum()):
        nz = np.flatnonzero(src.any(axis=0))
        top = int(nz[-1]) + 1 if nz.size else 0
    if int(dst[:, :top].sum()) != int(dst_counts.sum()):
        top = src.shape[1]
    dst[:, :top] = src[:, :top]


def _copy_hist(live: np.ndarray, counts: np.ndarray, copy: np.ndarray, top: int,
               back: bool) -> None:
    """A window copy of latency histogram rows `live` (their counters `counts`: each row's
    sum), bins [0, top) (those above are zero when copied): into `copy`, or back from it
    (back=True; the bins from `top` on cleared if counts were added there since)."""
    if not back:
        copy[:, :top] = live[:, :top]
        return
    if int(counts.sum()) != int(live[:, :top].sum()):
        live[:, top:] = 0
    live[:, :top] = copy[:, :top]


def _copy_map(live: list[np.ndarray], copy: list[np.ndarray], top: int, back: bool) -> None:
    """A window copy of pending-request maps' slot arrays `live` (next, line, cycle added,
    id; a row a channel), slots [0, top) (those above never taken when copied, as built):
    into `copy`, or back from it (back=True; the slots from `top` on built again if one of
    them was taken since)."""
    if not back:
        for a, b in zip(live, copy):
            b[:, :top] = a[:, :top]
        return
    nxt, addr, added, rid = live
    if added[:, top:].any():
        nxt[:, top:] = np.arange(top + 1, nxt.shape[1] + 1)
        nxt[:, -1] = -1
        addr[:, top:] = added[:, top:] = rid[:, top:] = 0
    for a, b in zip(live, copy):
        a[:, :top] = b[:, :top]


class _StreamThreads(_ChannelThreads):
    """simulate_trace with SimOptions(threads=N) under the DRAMsim3 intake: one-channel
    Simulators run in a thread pool as in _ChannelThreads, synchronised on the admission
    order, so that every statistic equals the one-state run's.

    The front end offers the requests one a cycle in trace order: request i is admitted at
    a_i = the first cycle t >= max(arrival_i, a_{i-1} + 1) at which its channel's controller
    takes it (its queue has room, checked after the controllers' step of cycle t). A channel
    depends on the others only through these cycles. The run goes in windows of requests:
    the admissions the window would have if no queue refused, a_i = max(arrival_i,
    a_{i-1} + 1), are given to each channel as its requests' arrival cycles, and the
    channels run in parallel to the cycle after the window's last admission. A channel
    took every request when offered iff its front-end lag (admission - given arrival) did
    not grow and it took all that were due; if every channel did, the window's schedule was
    the one-state run's. Otherwise, before the first refused request j every admission was
    right and from j on all are later: each channel that refused one finds its first, in
    parallel, by bisecting its own requests from its copy of the window's start (plain
    arrays, one block; the state after every prefix taken on time is kept, so the search
    runs each request about once); j is the earliest of these; its channel stays at its
    state before j and every other channel goes back to the window's start and runs its
    requests before j. Request j's channel alone then runs on until it takes it (at a*),
    and the next window starts with the next request, at a* + 1 at the earliest (the other
    channels, behind, run input-free up to their next request, as in the one-state run).
    The kernel is not changed for this (a refusal report inside its loop made every run
    15-35 % slower: same-session A/B). Channels that cannot refuse any of their window's
    requests (room for all of them) run only once the window is known to be exact, with no
    copy. Windows shrink after a refusal and grow while there is none. The completion
    rings are not copied: a window takes no more requests than the rings have room for
    beside the entries in flight (_ring_room), so restoring their indices (in G) restores
    them. A thread's Simulator simulates a group of channels (GROUP_CHANNELS; 4 of HBM2's 8
    with 2 threads): the channel field's high bits pick the group, its kernel sees the low
    bits as its channels, and its per-cycle work is shared by them (8 one-channel kernels
    took 20-35 % more CPU than the one-state kernel for the same run).

    A run starts in one thread: the master Simulator runs the one-state run, in pieces of
    `_need` requests, and hands over to the channels (_hand_over: its state cut into theirs,
    the completion rings split by channel) once a piece was taken with no refusal (its
    front-end lag is that of its admissions if no queue refuses). So a run whose queues
    refuse often never pays for threads. At a refusal after a hand-over (the
    DENSE_REFUSALS-th) the parts go back to the window's start and hand back (_hand_back:
    every part brought to the front end's cycle, the states merged, the rings merged by
    cycle); the run goes on in one thread until a piece 4 times as long is taken with no
    refusal.

    The channels see admission cycles as arrivals, so the front-end lag and the requests
    waiting at a cycle limit are counted here, from the true arrivals."""

    def __init__(self, cfg, options: SimOptions) -> None:
        # (no super().__init__: the channels' Simulators are built at the first hand-over)
        self.cfg = cfg
        self.options = options
        # the one-state run: input checks, segmenting, the stretches run in one thread, the
        # merged statistics; it owns the command-trace files (one a channel), which the
        # channels' Simulators write to while they run
        self.master = Simulator(cfg, dataclasses.replace(options, threads=1))
        self.per_channel = _per_channel_arrays(self.master)
        self.subs: list[Simulator] = []
        self.threads = min(int(options.threads), cfg.channels)
        self.pool = None
        self._one = True                        # the master runs (one state), not the subs
        self._back = False                      # a window's refusal: hand back to one state
        self._need = HANDOVER_AFTER             # requests without a refusal to hand over
        self._clean = 0                         # ... taken so, in a row, in one state
        self._gap: int | None = None            # requests between bursts of refusals
        self._since = 0                         # requests admitted since the last refusal
        self._lag = 0                           # sum of (admission - arrival), threaded
        # _admissions' buffers (grown to the longest piece or window): a window's arrays
        # freshly allocated took half its serial preparation
        self._adm_buf = self._ramp = np.zeros(0, np.int64)
        self._taken = 0                         # requests admitted by the channels' threads
        self._taken_here = self._refused_here = 0   # ... and refusals, since the hand-over
        self._waiting = 0                       # requests_waiting at a cycle limit
        self.windows = self.refusals = self.rollbacks = 0     # method diagnostics
        self.handovers = self.handbacks = 0
        self._group = self._group_size()        # channels a part
        self._gshift = _log2(self._group)
        # (requests taken, cycle) at every hand-over and hand-back: method diagnostics
        self.switches: list[tuple[str, int, int]] = []
        # the channels' Simulators now, while the reader parses the first chunk (at the first
        # hand-over they took the main thread's time, nothing running beside it; built in a
        # pool thread beside the start in one state instead, the run took longer: the build
        # holds the GIL that the start's Python needs)
        self._build_subs()
        if self._need <= 0:
            self._hand_over()

    def _build_subs(self) -> None:
        """The channels' Simulators, their copy buffers and the pool (once, in __init__)."""
        cfg = self.cfg
        one = dataclasses.replace(self.options, threads=1, cmd_trace=None)
        logs = self.options.cmd_trace is not None
        nch = cfg.channels
        k = self._group
        for ch in range(0, nch, k):
            sub = _part_simulator(cfg, one, self.per_channel, ch, k)
            sub.P[K.P_PHANTOM_EOF] = 0          # (the last request's channel: see finish)
            if logs:
                # its commands go to its channels' files (the master's), as theirs
                sub._log_as(ch)
            self.subs.append(sub)
        from concurrent.futures import ThreadPoolExecutor
        self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="diffmem-ch")
        pcap = self.subs[0].s["pr_addr"].shape[1]
        # (the rings are copied only if the most a ring can hold in flight, every pending
        # map full, leaves no room for a short window; else see _ring_room)
        self._copy_rings = K.RING - 2 * pcap * k - 64 < WINDOW_MIN
        self._max_window = WINDOW_MAX
        # each channel's state arrays that a window's copy takes, as views of one block: the
        # copy is one memcpy (array by array, 40 of them, it cost 2-3x more). Not in it: the
        # histograms (copied in part, see _save), the rings (above), and the command log and
        # completion buffer (emptied after every kernel call: empty at a window's start)
        self._blocks: list[np.ndarray] = []
        for sub in self.subs:
            keep = [k for k in sub.s if k not in ("cmd_log", "comp_out") and k not in
                    _HISTOGRAMS and k not in _MAP_ARRAYS
                    and (self._copy_rings or not k.startswith("ring_"))]
            block = np.empty(sum(sub.s[k].size for k in keep), np.int64)
            views, o = {}, 0
            for k in keep:
                v = sub.s[k]
                views[k] = block[o:o + v.size].reshape(v.shape)
                views[k][...] = v
                o += v.size
            sub._set_state(sub.state._replace(**views))
            self._blocks.append(block)
        # the copies at a window's start, allocated once (a fresh allocation per window
        # costs page faults: ~10x the copy itself)
        self._bufs = [{"block": np.empty_like(b), **{k: np.empty_like(sub.s[k])
                                                      for k in (*_HISTOGRAMS, *_MAP_ARRAYS)}}
                      for b, sub in zip(self._blocks, self.subs)]
        self._ckpts: list[dict[str, np.ndarray] | None] = [None] * len(self.subs)

    def _group_size(self) -> int:
        nch = self.cfg.channels
        if GROUP_CHANNELS is not None:
            k = int(GROUP_CHANNELS)
        else:
            parts = 1 << max(0, int(self.threads - 1).bit_length())
            k = max(1, nch // parts)
        pow2 = nch & (nch - 1) == 0 and k & (k - 1) == 0
        if k > 1 and not (pow2 and nch % k == 0 and int(self.master.P[K.P_CH_MASK]) == nch - 1):
            k = 1
        return max(1, min(k, nch))

    def _rows(self, i: int) -> slice:
        return slice(i * self._group, (i + 1) * self._group)

    def _admissions(self, c: np.ndarray, p: int, q: int, clock: int) -> np.ndarray:
        """The cycles at which the front end offers requests p .. q - 1 (arrivals c) if no
        queue refuses one, the first no earlier than `clock`: a_i = max(c_i, a_(i-1) + 1),
        i.e. max(running max of (c_j - j), clock) + i over the requests' offsets i, j from p
        (strictly increasing). In a buffer of this object's: valid until the next call."""
        n = q - p
        if self._adm_buf.shape[0] < n:
            self._adm_buf = np.empty(n, np.int64)
            self._ramp = np.arange(n, dtype=np.int64)
        adm = self._adm_buf[:n]
        x = c[p:q]
        if n and int(x[0]) >= clock and bool((x[1:] > x[:-1]).all()):
            # arrivals strictly increasing from the clock on: each is its own admission (the
            # running max below, the costly step, is then the identity: ~6x less time)
            np.copyto(adm, x)
            return adm
        ramp = self._ramp[:n]
        np.subtract(x, ramp, out=adm)
        np.maximum.accumulate(adm, out=adm)
        np.maximum(adm, clock, out=adm)
        np.add(adm, ramp, out=adm)
        return adm

    def _hand_over(self) -> None:
        """The one-state run, at the top of its cycle T = clock with every request so far
        taken, becomes the channels' runs at T: each channel's rows of the state arrays, its
        entries of the completion rings (in order, its number cleared from their codes), its
        requests accepted and completed as its G counters; the master's state is left as it
        is (overwritten at a hand-back or the end)."""
        m = self.master
        mG = m.s["G"]
        C = m.s["C"]
        k = self._group
        acc = (C[:, K.C_READS_ACCEPTED] + C[:, K.C_WRITES_ACCEPTED]).reshape(-1, k).sum(1)
        done = (C[:, K.C_READS_DONE] + C[:, K.C_WRITES_DONE]).reshape(-1, k).sum(1)
        if int(acc.sum()) != int(mG[K.G_ACCEPTED]) or int(done.sum()) != int(mG[K.G_COMPLETED]):
            raise SimulationError("threaded run: the channels' request counts do not add up "
                                  "to the one-state run's at the hand-over")
        rings = []
        for pre, hk, nk in _RINGS:
            j = _ring_slots(mG, hk, nk)
            code = m.s[pre + "_code"][j]
            rings.append((pre, hk, nk, m.s[pre + "_t"][j], code, m.s[pre + "_lat"][j],
                          (code >> K.CODE_CH_SHIFT) & K.CODE_CH_MASK))
        for i, sub in enumerate(self.subs):
            s = sub.s
            rows = self._rows(i)
            for n, counter in _HISTOGRAMS.items():
                _copy_counts(s[n], s["C"][:, counter], m.s[n][rows], m.s["C"][rows, counter])
            for n in self.per_channel:
                if n not in _HISTOGRAMS:
                    s[n][...] = m.s[n][rows]
            G = s["G"]
            G[...] = 0
            for g in (K.G_CLK, K.G_NUM_CYCLES, K.G_LAST_ACCEPT, K.G_LAST_COMPLETE,
                      K.G_PHANTOM_DONE, K.G_PHANTOM_ADDED):
                G[g] = mG[g]
            G[K.G_ACCEPTED] = acc[i]
            G[K.G_COMPLETED] = done[i]
            for pre, hk, nk, t, code, lat, cho in rings:
                sel = (cho >> self._gshift) == i
                n = int(np.count_nonzero(sel))
                s[pre + "_t"][:n] = t[sel]
                # (the channel in the code: its number in the part)
                s[pre + "_code"][:n] = ((code[sel] & ~(K.CODE_CH_MASK << K.CODE_CH_SHIFT))
                                        | ((cho[sel] & (k - 1)) << K.CODE_CH_SHIFT))
                s[pre + "_lat"][:n] = lat[sel]
                G[hk], G[nk] = 0, n
            sub._epoch_base = {n: v[rows].copy() for n, v in m._epoch_base.items()}
            sub._epoch_start, sub._next_epoch = m._epoch_start, m._next_epoch
            sub.epochs = []
            sub.finished = sub._ran_on = False
            sub.requests_waiting = 0
            sub._cmd_files = m._cmd_files[rows]
        # (the copies' bounds: found again from the new contents at the next copy)
        self._map_top = [dict.fromkeys(_MAPS, 1) for _ in self.subs]     # slots copied
        self._hist_top = [dict.fromkeys(_HISTOGRAMS, 1) for _ in self.subs]   # bins copied
        self._lag = int(mG[K.G_FRONT_LAG_SUM])
        self._taken_here = self._refused_here = 0
        self._window = min(WINDOW_START, self._max_window)
        # (windows as long as the rings allow again: the stretches between bursts of
        # refusals that cap them, _cap, were measured in threads before a hand-back)
        self._gap, self._since = None, 0
        self._one = False
        self.handovers += 1
        self.switches.append(("threads", int(mG[K.G_ACCEPTED]), int(mG[K.G_CLK])))

    def _hand_back(self, cancel) -> None:
        """The channels' runs, every one brought (input-free) to the front end's cycle T,
        become the one-state run at T: the inverse of _hand_over, the rings merged by
        cycle."""
        T = self.clock
        super()._advance(T, cancel)
        if self.finished:                       # the cycle limit: the run is over
            return
        m = self.master
        mG = m.s["G"]
        subs = self.subs
        self._gather_rows()
        for pre, hk, nk in _RINGS:
            parts = []
            for i, sub in enumerate(subs):
                G = sub.s["G"]
                j = _ring_slots(G, hk, nk)
                # (the channel in the code: part i's first channel added to its number)
                parts.append((sub.s[pre + "_t"][j],
                              sub.s[pre + "_code"][j] + ((i * self._group) << K.CODE_CH_SHIFT),
                              sub.s[pre + "_lat"][j]))
            t, code, lat = (np.concatenate(x) for x in zip(*parts))
            order = np.argsort(t, kind="stable")     # (each ring is in cycle order)
            n = len(t)
            m.s[pre + "_t"][:n] = t[order]
            m.s[pre + "_code"][:n] = code[order]
            m.s[pre + "_lat"][:n] = lat[order]
            mG[hk], mG[nk] = 0, n
        Gs = [sub.s["G"] for sub in subs]
        for k in (K.G_ACCEPTED, K.G_COMPLETED, K.G_PHANTOM_ADDED):
            mG[k] = sum(int(g[k]) for g in Gs)
        for k in (K.G_LAST_ACCEPT, K.G_LAST_COMPLETE, K.G_PHANTOM_DONE):
            mG[k] = max(int(g[k]) for g in Gs)
        mG[K.G_CLK] = T
        mG[K.G_POS] = mG[K.G_FRONT_DONE] = mG[K.G_FINISHED] = 0
        mG[K.G_NCOMP_OUT] = mG[K.G_NLOG] = 0
        mG[K.G_FRONT_LAG_SUM] = self._lag
        if len({(s._epoch_start, s._next_epoch) for s in subs}) != 1:
            raise SimulationError("threaded run: epoch boundaries differ between threads")
        self._merge_counters()
        m._epoch_base = {k: np.concatenate([s._epoch_base[k] for s in subs])
                         for k in m._epoch_base}
        m._epoch_start, m._next_epoch = subs[0]._epoch_start, subs[0]._next_epoch
        self._one = True
        self._clean = 0
        self._need = min(HANDOVER_MAX, 4 * max(1, self._need))
        self.handbacks += 1
        self.switches.append(("one", int(mG[K.G_ACCEPTED]), T))
        log.info("%s: --threads %d: %d refusals (full queues) in %d requests: on in one "
                 "thread from cycle %d, until %d requests in a row are taken on time",
                 self.cfg.name, self.threads, self._refused_here, self._taken_here, T,
                 self._need)

    def _hist_top_known(self, i: int, name: str) -> int:
        """(the bins up to which part i's last window copy took the histogram: _save)"""
        return self._hist_top[i][name]

    @property
    def clock(self) -> int:
        """The first cycle at which the front end can offer the next request."""
        if self._one:
            return self.master.clock
        return max(s.clock for s in self.subs)

    @property
    def finished(self) -> bool:
        if self._one:
            return self.master.finished
        return any(s.finished for s in self.subs)

    def _advance(self, target: int, cancel) -> None:
        if self._one:
            z = np.zeros(0, np.int64)
            self.master._run(z, z, z, z, z, False, target, None, cancel)
        else:
            super()._advance(target, cancel)

    def _one_run(self, req: tuple, p: int, hi: int, cancel) -> int:
        """Requests p.. of the input segment [.., hi) in one state (the master), the next
        `_need` of them; hand over to threads once that many in a row were taken when
        offered (the front-end lag they add is that of their admissions if no queue refuses:
        a refusal delays every later admission). Returns the first request not run."""
        a, w, c, sr, rid = req
        m = self.master
        q = min(hi, p + self._need)
        G = m.s["G"]
        lag0 = int(G[K.G_FRONT_LAG_SUM])
        adm = self._admissions(c, p, q, m.clock)
        m._run(a[p:q], w[p:q], c[p:q], sr[p:q], rid[p:q], False, 0, None, cancel)
        if m.finished:
            # the cycle limit: the segment's later requests due by then waited too (as when
            # the one-thread run takes the segment whole)
            m.requests_waiting += int(np.count_nonzero(c[q:hi] < m.options.limit))
            return hi
        if int(G[K.G_FRONT_LAG_SUM]) - lag0 == int(np.subtract(adm, c[p:q], out=adm).sum()):
            self._clean += q - p
        else:
            self._clean = 0
        if self._clean >= self._need:
            self._hand_over()
        return q

    def _ckpt(self, i: int) -> dict[str, np.ndarray]:
        """Channel i's second set of buffers (the bisection's latest state taken on time)."""
        if self._ckpts[i] is None:
            self._ckpts[i] = {k: np.empty_like(v) for k, v in self._bufs[i].items()}
        return self._ckpts[i]

    def _save(self, i: int, arrays: dict[str, np.ndarray]) -> tuple:
        """Part i's state copied into `arrays`: what _restore puts back.

        Of a latency histogram only the bins up to its highest non-empty one are copied
        (two histograms of 32,768 bins, nearly all empty, were 60 % of a copy's bytes):
        the bins below `top` hold every count (the histogram's total, its counter in C,
        equals their sum), so the bins from `top` on are all zero. Of a pending-request
        map's slots (4,256 on HBM2, 30 % of the bytes) only those up to the highest ever
        taken: the others are as built, and _restore builds them again if a slot among
        them was taken since."""
        sub = self.subs[i]
        s = sub.s
        np.copyto(arrays["block"], self._blocks[i])
        tops = []
        for k, counter in _HISTOGRAMS.items():
            h = s[k]
            top = self._hist_top[i][k]
            if int(h[:, :top].sum()) != int(s["C"][:, counter].sum()):
                # (with room above: the bins just above the highest count are zero too)
                top = min(h.shape[1], int(np.flatnonzero(h.any(axis=0))[-1]) + 1 + 1024)
                self._hist_top[i][k] = top
            _copy_hist(h, s["C"][:, counter], arrays[k], top, back=False)
            tops.append(top)
        for m, names in _MAPS.items():
            added = s[names[2]]
            top = self._map_top[i][m]
            if added[:, top:].any():
                # (with room above: the slots just above the highest taken are as built)
                top = min(added.shape[1],
                          int(np.flatnonzero(added.any(axis=0))[-1]) + 1 + 256)
                self._map_top[i][m] = top
            _copy_map([s[k] for k in names], [arrays[k] for k in names], top, back=False)
            tops.append(top)
        return (arrays, {n: getattr(sub, n) for n in _SUB_RUN_STATE}, len(sub.epochs),
                [f.tell() for f in sub._cmd_files], tops)

    def _restore(self, i: int, saved: tuple) -> None:
        arrays, attrs, n_epochs, log_ends, tops = saved
        sub = self.subs[i]
        s = sub.s
        # (before the block: the histograms' check reads the counters as they are now)
        for (k, counter), top in zip(_HISTOGRAMS.items(), tops):
            _copy_hist(s[k], s["C"][:, counter], arrays[k], top, back=True)
        for names, top in zip(_MAPS.values(), tops[len(_HISTOGRAMS):]):
            _copy_map([s[k] for k in names], [arrays[k] for k in names], top, back=True)
        self._blocks[i][...] = arrays["block"]
        for n, v in attrs.items():
            setattr(sub, n, v)
        del sub.epochs[n_epochs:]
        for f, end in zip(sub._cmd_files, log_ends):    # the commands of the window go
            f.seek(end)
            f.truncate()

    def _cannot_refuse(self, i: int, is_write: np.ndarray, local: np.ndarray) -> bool:
        """Part i's controllers take each of these requests (its next ones; `local`: their
        channels' numbers in the part) whenever they come: every channel's queues and
        pending-request maps hold them all on top of what they hold now (entries only leave
        them meanwhile)."""
        sub = self.subs[i]
        s = sub.s
        k = self._group
        nw = np.bincount(local[is_write != 0], minlength=k)
        nr = np.bincount(local, minlength=k) - nw
        tq = s["tq_n"]
        tqs = int(sub.P[K.P_TQ_SIZE])
        if sub.P[K.P_UNIFIED] != 0:
            if (tq[:, 0] + nr + nw > tqs).any():
                return False
        elif (tq[:, 0] + nr > tqs).any() or (tq[:, 1] + nw > tqs).any():
            return False
        C = s["C"]
        pcap = s["pr_addr"].shape[1]
        # live map entries: reads, see _pending_reads; every write not merged adds one, its
        # WRITE command removes it
        reads = _pending_reads(C)
        writes = C[:, K.C_WRITES_ACCEPTED] - C[:, K.C_WRITE_MERGES] - C[:, K.C_WRITE_CMDS]
        return bool((reads + nr <= pcap).all() and (writes + nw <= pcap).all())

    def _segment(self, req: tuple, chan: np.ndarray, lo: int, hi: int, cancel) -> None:
        p = lo
        part = chan >> self._gshift             # each request's part (thread's Simulator)
        self._local = chan & (self._group - 1)  # ... and its channel's number there
        while p < hi and not self.finished:
            if self._one:
                p = self._one_run(req, p, hi, cancel)
            else:
                p = self._window_run(req, part, p, hi, cancel)
                if self._back:
                    self._back = False
                    self._hand_back(cancel)
            self._check_cancel(cancel)

    def _window_run(self, req: tuple, chan: np.ndarray, p: int, hi: int, cancel) -> int:
        """Requests p.. of the input segment [.., hi) for one window: run them, exactly;
        return the first request not admitted."""
        a, w, c, sr, rid = req
        q = min(hi, p + (self._window if self._copy_rings else
                         min(self._window, self._ring_room())))
        # the admissions if no queue refuses (offsets into the window from here on)
        adm = self._admissions(c, p, q, self.clock)
        end = int(adm[-1]) + 1
        limit = self.master.options.limit
        cut = end if limit is None else min(end, int(limit))   # offered before the limit
        nsub = len(self.subs)
        # each part's requests (offsets, in order): one linear pass a part (a stable sort
        # of the window cost ~7x more in the main thread, where nothing runs beside it)
        win = chan[p:q]
        sel = [np.flatnonzero(win == i) for i in range(nsub)]
        saved: list = [None] * nsub

        def on_time(i: int, ix: np.ndarray, until: int | None = None) -> bool:
            """Channel i offered window requests ix at their admissions, run to `until`
            (default: the cycle after the last of them): True if it took each when
            offered."""
            if until is None:
                until = int(adm[ix[-1]]) + 1
            G = self.subs[i].s["G"]
            lag0 = int(G[K.G_FRONT_LAG_SUM])
            j = ix + p
            cyc = adm[ix]
            # (the requests offered before `until` and the limit: cyc increases strictly)
            due = int(np.searchsorted(cyc, min(until, cut)))
            self.subs[i]._run(a[j], w[j], cyc, sr[j], rid[j], False, until, None, cancel,
                              until=until)
            return int(G[K.G_POS]) == due and int(G[K.G_FRONT_LAG_SUM]) == lag0

        # channels that cannot refuse any of their window's requests run second, once the
        # window is known to be exact: no copy, no re-run
        tqs = int(self.subs[0].P[K.P_TQ_SIZE])
        most = 2 * tqs * self._group
        safe = [0 < sel[i].size <= most and self._cannot_refuse(i, w[p + sel[i]],
                                                                 self._local[p + sel[i]])
                for i in range(nsub)]

        # (a channel with no request is left behind: it runs input-free up to its next one
        # later, or to the cycle limit, or the run's end, as it would here)
        risky = [i for i in range(nsub) if sel[i].size and not safe[i]]

        def first(i: int) -> bool:
            saved[i] = self._save(i, self._bufs[i])
            return on_time(i, sel[i], end)
        ok = self._each(first, risky)
        self.windows += 1
        late = [i for i in risky if not ok[i]]
        if not late:
            if any(safe):
                self._each(lambda i: on_time(i, sel[i], end), np.flatnonzero(safe).tolist())
            k = q - p
            if self.finished:                   # the cycle limit, before `end`
                k = int(np.searchsorted(adm, limit))
                self._waiting = int(np.count_nonzero(c[p + k:hi] < limit))
            # (adm is not read again: the admissions' lag in its place)
            self._lag += int(np.subtract(adm[:k], c[p:p + k], out=adm[:k]).sum())
            self._taken += k
            self._taken_here += k
            if self.finished:
                self._settle(cancel)
                return hi
            self._since += k
            self._window = min(self._cap(), 2 * self._window)
            return q
        r = self._refused_here + 1
        if r >= DENSE_REFUSALS:
            # refusals too frequent for threads: every part that ran goes back to the
            # window's start, and the run goes on from there in one thread (_segment), which
            # simulates the window again (no bisection)
            self._each(lambda i: self._restore(i, saved[i]), risky)
            self.refusals += 1
            self._refused_here = r
            self._back = True
            return p
        # a queue refused a request offered at its admission. Before the first refused
        # request, j, every admission was right; from j on they are all later. Each channel
        # that refused one finds its first (in parallel, from its own copy: a bisection of
        # its requests, keeping the state after every prefix taken on time), j is the
        # earliest of these, and every other channel goes back to the window's start and
        # runs its requests before j (their admissions were right).
        found = [f for f in self._each(lambda i: self._first_refused(
            i, sel[i][adm[sel[i]] < cut], saved[i], on_time), late) if f is not None]
        j = min(f for f, _ in found)
        self.rollbacks += sum(n for _, n in found)
        star = int(chan[p + j])                 # its channel: at its state before j
        before = j - 1

        def prefix(i: int) -> None:
            if saved[i] is not None:
                self._restore(i, saved[i])
            ix = sel[i][sel[i] < j]
            if ix.size and not on_time(i, ix, int(adm[before]) + 1):
                raise SimulationError(f"threaded run: channel {i} refused a request before "
                                      f"the first refusal found in its window")
        again = [i for i in range(nsub) if i != star and (
            saved[i] is not None or (sel[i].size and sel[i][0] < j))]
        self._each(prefix, again)
        self.rollbacks += sum(saved[i] is not None for i in again)
        self._lag += int((adm[:j] - c[p:p + j]).sum())
        self._taken += j
        self._taken_here += j
        # request p + j, refused when offered at adm[j]: its channel alone runs on until it
        # takes it (at a*); the next request is offered at a* + 1 at the earliest
        p += j
        sub = self.subs[star]
        self.refusals += 1
        self._refused_here += 1
        self._taken += 1
        self._taken_here += 1
        sub._run(a[p:p + 1], w[p:p + 1], adm[j:j + 1], sr[p:p + 1], rid[p:p + 1], False, 0,
                 None, cancel)
        if sub.finished:                        # the cycle limit came first
            self._waiting = int(np.count_nonzero(c[p:hi] < limit))
            self._settle(cancel)
            return hi
        if sub.clock - 1 <= int(adm[j]):
            raise SimulationError(f"threaded run: request {p} of a chunk was refused once "
                                  f"and not again")
        self._lag += sub.clock - 1 - int(c[p])
        self._window = WINDOW_MIN
        since = self._since + j
        if since >= WINDOW_BURST:               # the first refusal of a burst
            self._gap = since if self._gap is None else (self._gap + since) // 2
        self._since = 0
        return p + 1

    def _ring_room(self) -> int:
        """The most requests a window may take without copying the completion rings: each
        request pushes at most one entry into one ring, and each read in a pending map
        one into the read ring; the entries in them now and those pushes must fit, so
        that a rolled-back window's pushes overwrite no entry in flight (at the window's
        start 'in flight' is the rings' live entries plus the pending reads: HBM2, a few
        hundred; the bound over full maps, 2 x 4,256 a channel, was 31,424 for 4 channels)."""
        most = 0
        for sub in self.subs:
            G = sub.s["G"]
            C = sub.s["C"]
            reads = int(_pending_reads(C).sum())
            most = max(most, int(G[K.G_RING_R_N]) + reads, int(G[K.G_RING_F_N]))
        return max(1, K.RING - 64 - most)

    def _cap(self) -> int:
        """The longest window now. A refused window's first run is lost (the channels run
        it again up to the refusal): on average about the window's length in requests; a
        window costs a copy of every channel, about WINDOW_COPY_COST requests' simulation
        each. Over a stretch of g requests between bursts of refusals, windows of length w
        lose about w + g / w * copies, least at w = sqrt(g * copies): g is estimated from
        the stretches so far (or this one, once longer)."""
        if self._gap is None:
            return self._max_window
        g = max(self._gap, self._since)
        w = math.isqrt(WINDOW_COPY_COST * len(self.subs) * g)
        return min(self._max_window, max(WINDOW_MIN, w))

    def _first_refused(self, i: int, ix: np.ndarray, start: tuple, on_time
                       ) -> tuple[int, int]:
        """Channel i refused one of its window requests ix (offsets, in order, all offered
        before the limit) when run from the copy `start`: the offset of the first it refused
        (and the number of restores made). Channel i is left at its state with the requests
        before that one taken."""
        restores = 0
        lo, hi = 0, len(ix)          # the first lo are taken on time; the first hi are not
        here = False                 # the channel is at its state after the first lo
        keep = start                 # ... a copy of which this is
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if not here:
                self._restore(i, keep)
                restores += 1
            if on_time(i, ix[lo:mid]):
                lo, here = mid, True
                keep = self._save(i, self._ckpt(i))
            else:
                hi, here = mid, False
        if not here:
            self._restore(i, keep)
            restores += 1
        return int(ix[lo]), restores

    def finish(self, cancel) -> None:
        m = self.master
        if self._one:
            m.finish(cancel=cancel)
            if self.handovers == 0:
                log.info("%s: --threads %d: no stretch of %d requests taken without a "
                         "refusal (full queues): simulated in one thread", self.cfg.name,
                         self.threads, self._need)
            return
        last = self.master._last_req
        if self.master.options.phantom_eof_read and last is not None:
            # DRAMsim3's extra READ of the last address: offered in that address's channel
            ch = int(address.channel(self.cfg, np.array([last[0]], np.int64))[0])
            self.subs[ch >> self._gshift].P[K.P_PHANTOM_EOF] = 1
        super().finish(cancel)
        # the command traces, written by the master and the channels, are complete
        m._complete_cmd_files()
        log.debug("threaded DRAMsim3-intake run: %d windows, %d refusals, %d channel "
                  "rollbacks", self.windows, self.refusals, self.rollbacks)

    def stats(self) -> "Stats":
        m = self.master
        if self._one:
            return m.stats()
        self._merge()
        m.s["G"][K.G_FRONT_LAG_SUM] = self._lag
        m.requests_waiting = self._waiting
        return m.stats()


def _simulate_threaded(cfg, chunks: Iterable, options: SimOptions,
                       progress: ProgressFn | None,
                       cancel: Callable[[], bool] | None, runner: type | None = None
                       ) -> "Stats":
    if runner is None:
        runner = _StreamThreads if options.intake == "dramsim3" else _ChannelThreads
    # the reader first: the runner is built (its Simulators, ~7 ms on HBM2) while the first
    # chunk is parsed
    ahead = _ReadAhead(chunks)
    try:
        run = runner(cfg, options)
    except BaseException:
        ahead.close()
        raise
    try:
        late = 0
        for ch in ahead:
            run.feed(ch.addr, ch.is_write, ch.cycle, ch.stream, cancel)
            if run.finished:
                late = _due_in_unread_chunks(ahead, options.limit)
                break
        run.finish(cancel)
        stats = run.stats()
        stats.summary["num_requests_waiting"] += late
        if progress is not None:
            for rec in run.master.epochs:
                progress(run.master, rec)
        return stats
    finally:
        ahead.close()
        run.close()


class _ReadAhead:
    """A threaded run's trace chunks, the next one read (parsed) in a thread of its own
    while the channels simulate the current one: the parser releases the GIL, and in the
    main thread its time (0.08 CPU-s per million text lines) was serial."""

    _END = object()

    def __init__(self, chunks: Iterable) -> None:
        import queue
        self._q: "queue.Queue" = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._chunks = chunks
        self._thread = threading.Thread(target=self._read, name="diffmem-read", daemon=True)
        self._thread.start()

    def _put(self, item: object) -> bool:
        """Hand `item` to the consumer; False if the run was stopped first."""
        import queue
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _read(self) -> None:
        item: object = self._END
        try:
            for ch in self._chunks:
                if not self._put(ch):
                    return
        except BaseException as e:          # handed to the consumer, raised there
            item = e
        finally:
            close = getattr(self._chunks, "close", None)
            if close is not None:
                close()
        self._put(item)

    def __iter__(self):
        while True:
            item = self._q.get()
            if item is self._END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def close(self) -> None:
        """Stop reading (the run ended or failed) and wait for the reader thread."""
        import queue
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._q.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()


def warn_stale_cmd_traces(path: str | Path, written: Sequence[str | Path]) -> list[Path]:
    """Files beside a run's command traces (`written`, named after `path`) that carry the
    same name in either naming (PATH, PATH's stem.chN.suffix, PATH.chN: one channel, several,
    the Ramulator mode) and that this run does not write: an earlier run's, with another
    channel count or mode. They are left alone (they are the user's files) and named in a
    warning, so that none is read as this run's. Returns them."""
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        return []
    mine = {Path(w).name for w in written}
    names = re.compile("|".join((re.escape(path.name), re.escape(path.stem) + r"\.ch\d+"
                                 + re.escape(path.suffix), re.escape(path.name) + r"\.ch\d+"))
                       + "$")
    try:
        stale = sorted(f for f in folder.iterdir()
                       if f.name not in mine and names.fullmatch(f.name) and f.is_file())
    except OSError:
        return []
    if stale:
        shown = ", ".join(f.name for f in stale[:4]) + (
            f" and {len(stale) - 4} more" if len(stale) > 4 else "")
        log.warning("command trace %s: %d file(s) of that name in %s are not written by this "
                    "run (%d file(s)), an earlier run's: %s", path, len(stale), folder,
                    len(written), shown)
    return stale


def cmd_trace_paths(path: str | Path, channels: int) -> list[Path]:
    """Command-trace file per channel: PATH itself for one channel, else PATH.chN (DRAMsim3
    also writes one command trace per channel)."""
    path = Path(path)
    if channels == 1:
        return [path]
    return [path.with_name(f"{path.stem}.ch{c}{path.suffix}") for c in range(channels)]


def trace_line_bytes(paths: Sequence[str | Path], group: str = "trace") -> int | None:
    """The line size of generated traces (HDF5 traces with a placement record: `python
    main.py trace`), which a simulation merges or splits into the memory's request size; None
    for other traces (one line, one request, as DRAMsim3), and for a mix of both, which is
    replayed line by line (warned)."""
    from engine.trace import suffix_format
    from engine.workloads.retarget import read_placement
    made = [suffix_format(p) == "hdf5" and read_placement(p, group) is not None for p in paths]
    if all(made):
        from engine.workloads.lines import LINE_BYTES
        return LINE_BYTES
    if any(made):
        log.warning("generated and other traces together: replayed one line a request (the "
                    "generated ones' lines are not fitted to the memory's requests)")
    return None


def fitted_requests(cfg, chunks: Iterable, paths: Sequence[str | Path],
                    line_bytes: int | str | None, group: str = "trace",
                    window: int = COALESCE_WINDOW) -> Iterator:
    """The chunks as the memory's requests (SimOptions.line_bytes; "auto": the traces'
    own, trace_line_bytes): a generated trace's 64-byte lines merged into GDDR6's 256-byte
    requests (replayed one a line, each moved 256 bytes: 4x the step's traffic), split into
    HBM3's 32-byte ones."""
    lines = trace_line_bytes(paths, group) if line_bytes == "auto" else line_bytes
    if lines is None or int(lines) == int(cfg.request_size_bytes):
        return iter(chunks)
    from engine.trace import to_request_size
    log.info("%s: %d-byte lines %s %s's %d-byte requests", ", ".join(map(str, paths)), lines,
             "merged into" if lines < cfg.request_size_bytes else "split into", cfg.name,
             cfg.request_size_bytes)
    return iter(to_request_size(chunks, int(lines), int(cfg.request_size_bytes), window))


def simulate_trace(cfg, traces: Sequence[str | Path] | str | Path,
                   options: SimOptions | None = None, *,
                   progress: ProgressFn | None = None,
                   cancel: Callable[[], bool] | None = None,
                   group: str = "trace", stop: Callable[[], bool] | None = None) -> "Stats":
    """Simulate one trace file, or several merged by time (one per core/stream).

    `group` names the HDF5 group of an HDF5 trace (a project file holds several). `cancel`
    abandons the run (SimulationCancelled); `stop`, read before each chunk of the trace, ends
    it there as if the trace ended: the requests read so far are completed and their
    statistics returned, with ``stopped_early`` and ``trace_cut_after_cycle`` (the last
    arrival read) in the summary (`simulate`'s first Ctrl-C)."""
    from engine.trace import iter_merged, iter_trace
    options = options or SimOptions()
    paths = [traces] if isinstance(traces, (str, Path)) else list(traces)
    cap = None if options.wrap_addresses else getattr(cfg, "capacity_bytes", None)

    def open_chunks() -> Iterable:
        if len(paths) == 1:
            return iter_trace(paths[0], chunk_size=options.chunk_size, capacity_bytes=cap,
                              group=group)
        return iter_merged(paths, chunk_size=options.chunk_size, capacity_bytes=cap,
                           group=group)
    chunks = _Cut(fitted_requests(cfg, open_chunks(), paths, options.line_bytes, group,
                                  options.coalesce_window),
                  stop)
    try:
        return _simulate_chunks(cfg, chunks, options, progress, cancel)
    except SimulatorInputError as exc:        # (an idle gap too long: name the file)
        raise SimulatorInputError(f"{', '.join(str(p) for p in paths)}: {exc}") from None


def _simulate_chunks(cfg, chunks: "_Cut", options: SimOptions, progress: ProgressFn | None,
                     cancel: Callable[[], bool] | None) -> "Stats":
    if options.threads > cfg.channels:
        # a thread simulates whole channels: more threads than channels would idle
        log.info("%s has %d channel(s): --threads %d runs in %d thread(s)", cfg.name,
                 cfg.channels, options.threads, cfg.channels)
    if options.threads > 1 and cfg.channels > 1:
        return chunks.noted(_simulate_threaded(cfg, chunks, options, progress, cancel))
    if options.threads > 1:
        options = dataclasses.replace(options, threads=1)     # one channel: one thread
    sim = Simulator(cfg, options)
    try:
        late = 0
        for ch in chunks:
            sim.feed(ch.addr, ch.is_write, ch.cycle, ch.stream, progress=progress,
                     cancel=cancel)
            if sim.finished:
                late = _due_in_unread_chunks(chunks, options.limit)
                break
        stats = sim.finish(progress=progress, cancel=cancel)
        stats.summary["num_requests_waiting"] += late
        return chunks.noted(stats)
    finally:
        sim.close()


class _Cut:
    """A run's chunks, ended early when `stop()` says so before a chunk (the trace is then
    cut after the last chunk read)."""

    def __init__(self, chunks: Iterable, stop: Callable[[], bool] | None) -> None:
        self._chunks, self._stop = iter(chunks), stop
        self.cut = False
        self.last_cycle: int | None = None

    def __iter__(self) -> "_Cut":
        return self

    def __next__(self):
        if self._stop is not None and self._stop():
            # (cut only if the trace had more: a stop after its last chunk leaves it whole)
            self.cut = next(self._chunks, None) is not None
            self.close()
            raise StopIteration
        ch = next(self._chunks)
        if len(ch.cycle):
            self.last_cycle = int(ch.cycle[-1])
        return ch

    def close(self) -> None:
        """Close the chunks' source (its open file), as the threaded reader does at the end."""
        close = getattr(self._chunks, "close", None)
        if close is not None:
            close()

    def noted(self, stats: "Stats") -> "Stats":
        """`stats` with the cut recorded in its summary (nothing when the run was whole)."""
        if self.cut:
            stats.summary["stopped_early"] = True
            stats.summary["trace_cut_after_cycle"] = self.last_cycle
        return stats


def _due_in_unread_chunks(chunks: Iterable, limit: int | None) -> int:
    """Requests of the chunks not yet read that were due before the cycle limit (the run
    stopped at the limit first): the front end never reached them, so they count as waiting,
    whatever the chunk size. Trace cycles never decrease, so reading stops at the first
    request due at or after the limit."""
    if limit is None:
        return 0
    n = 0
    for ch in chunks:
        due = int(np.count_nonzero(ch.cycle < limit))
        n += due
        if due < len(ch.cycle):
            break
    return n
