"""The numba core: one memory system (all channels), advanced cycle by cycle, skipping idle time.

Everything here is plain arrays and integers (structure of arrays). `run_kernel` takes them as
three bundles, :class:`Consts` (configuration vector, timing tables), :class:`State` (the
mutable state) and :class:`Chunk` (the input requests), plus three scalars; `engine.simulator`
allocates the bundles from the config, feeds request chunks in, and turns the counters into
statistics.

Order of one cycle t, as DRAMsim3 does it (NOTES.md §2), so results compare cycle for cycle:

1. completions due at t are returned (reads done, writes done);
2. every channel's controller ticks:
   a. refresh bookkeeping (a refresh becomes due every refresh interval);
   b. one command is chosen: a pending refresh's PRECHARGE/REFRESH first, else the scheduler's
      pick among the command queues; HBM may issue a second one (row + column pair);
   c. rank power states are counted (active if any bank open, else precharged-idle), in
      closed form: up to a command that opens a rank's first row or closes its last one, and
      on leaving the loop;
   d. at most one transaction moves from the read queue / write buffer into a command queue;
3. the front end offers the next trace request (at most one a cycle, in order; it waits while
   the target channel's queue is full) and the controller records it as added at cycle t + 1.

When a cycle changes nothing (no command, no transaction moved, no request accepted), the
kernel jumps to the earliest cycle at which something can change: a command becoming legal,
a refresh falling due, the next request's arrival, a completion, or the caller's stop cycle.
Each command queue keeps a lower bound of the cycle at which any of its entries can be ready,
valid until its content or its bank's state changes, so busy cycles skip waiting banks cheaply.

No code in this module indexes an array with a negative value: numba compiles it without
Python's negative-index wrap-around (engine/numba_nowrap.py), and
tests/test_kernel_no_negative_index.py runs it under numba's bounds checks to keep it so.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from engine.bits import trailing_zeros
from engine.lazy_jit import njit   # numba.njit, numba imported at first use (kernel_aot)
from engine.timing import (ACT, OTHER_BG, OTHER_RANK, PRE, RD, RDP, REF, REFB, SREFE,
                           SAME_BANK, SAME_BG, SAME_RANK, WR, WRP)

INF = np.int64(1) << np.int64(62)

# ---- configuration vector P (int64) ------------------------------------------------------
(P_CHANNELS, P_RANKS, P_BGS, P_BPG, P_BANKS, P_NQ, P_CQ_SIZE, P_TQ_SIZE, P_UNIFIED,
 P_PER_RANK_Q, P_REF_POLICY, P_REF_INTERVAL, P_TFAW, P_T32AW, P_IS_GDDR, P_DUAL_CMD,
 P_READ_DELAY, P_WRITE_DELAY, P_SHIFT, P_CH_POS, P_CH_MASK, P_RA_POS, P_RA_MASK, P_BG_POS,
 P_BG_MASK, P_BA_POS, P_BA_MASK, P_RO_POS, P_RO_MASK, P_CO_POS, P_CO_MASK, P_ROW_HIT_CAP,
 P_SCHED, P_PAGE, P_EP_N, P_WR_HIGH, P_WR_LOW, P_PARBS_CAP, P_XOR, P_TRACK_IDS,
 P_PHANTOM_EOF, P_WR_LOW_DRAIN_EMPTY, P_CMDLOG, P_FOLDED, P_WR_PRIO_BP, P_WATCHDOG,
 P_DBG_W) = range(47)
NP = 47
# front-end intake (SimOptions.intake): INTAKE_DRAMSIM3 offers one request a cycle to the whole
# memory system, in trace order (DRAMsim3's trace-driven CPU); INTAKE_PER_CHANNEL lets every
# channel accept one request a cycle, each channel in trace order, a full queue blocking only
# its own channel (a GPU crossbar); see _intake_per_channel
INTAKE_DRAMSIM3, INTAKE_PER_CHANNEL = 0, 1
P_INTAKE = NP
NP += 1
# derived from P_RANKS / P_BANKS / P_BPG by fill_derived (no divisions in the event loop):
# P_NB banks of a channel; P_TBASE the first rank slot of the folded timing table; P_POW2 1
# when banks and bpg are powers of two (then P_BANK_SH / P_BPG_SH are their log2: a bank's
# rank is b >> P_BANK_SH, its bank group b >> P_BPG_SH, else b // banks, b // bpg)
P_NB, P_TBASE, P_POW2, P_BANK_SH, P_BPG_SH = NP, NP + 1, NP + 2, NP + 3, NP + 4
NP += 5

# SCHED_DRAMSIM3_RR: DRAMsim3's round-robin order, picked by _pick_priority so that dynamic
# bank grouping can reorder it (the plain SCHED_DRAMSIM3 path never sees that option)
# policy codes: declared once, in engine.policies (REF_SAME_BANK: DDR5's REFsb, bank b of
# every bank group at once, refq bank group -1)
from engine.policies import (PAGE_CLOSE, PAGE_EARLY_PRE, PAGE_OPEN,  # noqa: E402,F401
                             PAGE_OPEN_ADAPTIVE, REF_BANK_STAGGERED, REF_RANK_SIMULTANEOUS,
                             REF_RANK_STAGGERED, REF_SAME_BANK, SCHED_DRAMSIM3,
                             SCHED_DRAMSIM3_RR, SCHED_FCFS, SCHED_FRFCFS, SCHED_PARBS)

# ---- per-channel scalar state CS[ch, k] --------------------------------------------------
(CS_QIDX, CS_WDRAIN, CS_INREF, CS_REFQ_HEAD, CS_REFQ_N, CS_REF_RANK, CS_REF_BG, CS_REF_BANK,
 CS_PR_FREE, CS_PW_FREE, CS_NMARKED, CS_SEQ, CS_TQ_BLOCKED, CS_CQ_TOTAL, CS_MINLB,
 CS_DBG_COL, CS_DBG_WR, CS_DBG_WADDR) = range(18)
NCS = 18         # dynamic bank grouping: CS_DBG_COL bank group (rank * bankgroups + bg) of
                 # the last column command issued; CS_DBG_WR / CS_DBG_WADDR group and address
                 # of the write last put at the front of the write buffer (-1: none yet)
REFQ_CAP = 64
# per-channel intake: index of the channel's next request not yet accepted in the input chunk
# (every earlier request to that channel is accepted; the simulator resets it with G_POS)
CS_INTAKE_POS = NCS
NCS += 1
# a channel's sleep (valid within one run_kernel call, zero between calls): CS_WAKE is the
# first cycle at which its controller tick can do anything (0: tick now); CS_PWR_FROM the
# first cycle whose rank power states are not yet counted (counted in closed form when a
# command changes a rank's state, and on leaving run_kernel)
CS_WAKE, CS_PWR_FROM = NCS, NCS + 1
NCS += 2
# the DRAMsim3 scan's due queues (with at most QMASK_MAX queues): CS_QMASK has bit q set for
# each queue q known to be due since it was last looked at (its bound cleared or come due, or
# a refresh held it back); CS_QMIN is at most the bound of every other queue. While CS_QMIN > t,
# the queues of CS_QMASK are the only ones due, and the scan visits only them; once a bound
# comes due (CS_QMIN <= t), one pass (_due_queues) adds every due queue to the mask and makes
# CS_QMIN the least bound of the others
CS_QMASK, CS_QMIN = NCS, NCS + 1
NCS += 2
QMASK_MAX = 62

# ---- per-channel counters C[ch, k] --------------------------------------------------------
(C_READ_CMDS, C_WRITE_CMDS, C_READ_HITS, C_WRITE_HITS, C_ACT, C_PRE, C_ONDEMAND_PRE, C_REF,
 C_REFB, C_DUAL, C_READS_DONE, C_WRITES_DONE, C_READS_ACCEPTED, C_WRITES_ACCEPTED,
 C_READ_LAT_SUM, C_WRITE_LAT_SUM, C_WRITE_LAT_N, C_WBUF_HITS, C_READ_MERGES, C_WRITE_MERGES,
 C_ROW_MISSES, C_ROW_CONFLICTS, C_REF_PRE, C_RW_LIVELOCK_BREAKS) = range(24)
NC = 24

# ---- per-bank counters BK[ch, bank, k] (bank = rank*banks + bg*bpg + ba) -----------------
(BK_ACT, BK_ACT_CONFLICT, BK_PRE, BK_RD, BK_WR, BK_HITS, BK_MISSES, BK_CONFLICTS,
 BK_OPEN_CYCLES, BK_REFB) = range(10)
NBK = 10

# ---- per-rank counters RK[ch, rank, k] ------------------------------------------------------
RK_ACTIVE, RK_IDLE, RK_SREF, RK_REF = range(4)
NRK = 4

# ---- global scalars G[k] ---------------------------------------------------------------------
(G_CLK, G_POS, G_FRONT_DONE, G_ACCEPTED, G_COMPLETED, G_FINISHED, G_NUM_CYCLES,
 G_RING_R_HEAD, G_RING_R_N, G_RING_F_HEAD, G_RING_F_N, G_NCOMP_OUT, G_LAST_ACCEPT,
 G_PHANTOM_DONE, G_PHANTOM_ADDED, G_FRONT_LAG_SUM, G_NLOG, G_LAST_COMPLETE) = range(18)
NG = 18
LOG_COLS = 9   # command log: cycle, command, printed channel, rank, bankgroup, bank, row,
               # column, channel (DRAMsim3 prints channel -1 for refresh commands)

SEQ_MASK = (1 << 40) - 1   # arrival sequence numbers, for age comparisons
NSRC = 64               # request sources (trace files / cores) PAR-BS tells apart
# ---- command-queue entry fields cq[ch, queue, entry, field] ---------------------------------
(CQ_TYPE, CQ_ADDR, CQ_BANK, CQ_RANK, CQ_BG, CQ_BA, CQ_ROW, CQ_COL, CQ_SEQ, CQ_SRC, CQ_MARK,
 CQ_ID) = range(12)
NCQ = 12
RING = 1 << 16          # completion rings (reads from DRAM; posted/forwarded completions)
# a completion's code in the rings: (request id << CODE_ID_SHIFT) | (channel << CODE_CH_SHIFT)
# | is_write, the channel below CODE_CH_MASK + 1
CODE_ID_SHIFT, CODE_CH_SHIFT, CODE_CH_MASK = 8, 1, 127
HASH_BUCKETS = 1024     # per channel, for the pending read / write maps

# kernel return codes
NEED_INPUT, FINISHED, PAUSED, DEADLOCK = 0, 1, 2, 3


# ---- the kernel's arguments, three bundles (one typed argument each) -------------------------
# The named tuples declare the bundles (names, order); run_kernel receives each as a plain
# tuple of its fields (numba compiles one specialisation of each variant: the array ranks
# never vary) and unpacks it once at entry, in this order. The arrays are allocated in one place
# (engine.simulator.Simulator._build_state); the field names are the state's names there
# (Simulator.s maps them to the same arrays).
class Consts(NamedTuple):
    """What a run does not change: the configuration vector and the timing tables."""

    P: np.ndarray        # int64[NP + 1]: P_* configuration slots
    TN: np.ndarray       # timing tables (engine.timing.build_tables: count, nxt, delay)
    TX: np.ndarray
    TD: np.ndarray


class State(NamedTuple):
    """The memory system's mutable state (every array int64; see the index constants above)."""

    G: np.ndarray                # [NG] global scalars
    CS: np.ndarray               # [ch, NCS] per-channel scalars
    C: np.ndarray                # [ch, NC] per-channel counters
    BK: np.ndarray               # [ch, bank, NBK] per-bank counters
    RK: np.ndarray               # [ch, rank, NRK] per-rank counters
    b_state: np.ndarray          # [ch, bank]: bank open / closed, its row, hits since ACT, ...
    b_row: np.ndarray
    b_hits: np.ndarray
    b_timing: np.ndarray         # [ch, command, slot]: earliest legal cycle per scope slot
    b_open_since: np.ndarray
    b_last_conflict: np.ndarray
    b_streak: np.ndarray
    r_open: np.ndarray           # [ch, rank] open banks
    faw: np.ndarray              # [ch, rank, 4] / [ch, rank]: tFAW window
    faw_n: np.ndarray
    aw32: np.ndarray             # [ch, rank, 32] / [ch, rank]: GDDR t32AW window
    aw32_n: np.ndarray
    refq: np.ndarray             # [ch, REFQ_CAP, 4] pending refreshes
    q_lb: np.ndarray             # [ch, queue] lower bound of a queue's next ready cycle
    src_rank: np.ndarray         # [ch, NSRC] PAR-BS source ranking
    tq_n: np.ndarray             # [ch, 2] transaction queues (read/unified, write)
    tq_addr: np.ndarray          # [ch, 2, size]
    tq_isw: np.ndarray
    tq_src: np.ndarray
    tq_q: np.ndarray
    cq_n: np.ndarray             # [ch, queue] command queues
    cq: np.ndarray               # [ch, queue, entry, NCQ]
    pr_head: np.ndarray          # pending reads: [ch, HASH_BUCKETS] heads, [ch, cap] lists
    pr_next: np.ndarray
    pr_addr: np.ndarray
    pr_added: np.ndarray
    pr_id: np.ndarray
    pw_head: np.ndarray          # pending writes, the same
    pw_next: np.ndarray
    pw_addr: np.ndarray
    pw_added: np.ndarray
    pw_id: np.ndarray
    ring_r_t: np.ndarray         # [RING] completions of reads from DRAM
    ring_r_code: np.ndarray
    ring_r_lat: np.ndarray
    ring_f_t: np.ndarray         # [RING] posted / forwarded completions
    ring_f_code: np.ndarray
    ring_f_lat: np.ndarray
    hist_r: np.ndarray           # [ch, bins] latency histograms
    hist_w: np.ndarray
    comp_out: np.ndarray         # [rows, 2] (request id, completion cycle)
    cmd_log: np.ndarray          # [rows, LOG_COLS] command log
    scratch: np.ndarray          # [banks + 3, NSRC] PAR-BS work space


class Chunk(NamedTuple):
    """One chunk of input requests, in trace order (int64 arrays of one length)."""

    addr: np.ndarray
    isw: np.ndarray      # 1: write
    cyc: np.ndarray      # arrival cycle
    src: np.ndarray      # request source (PAR-BS)
    id: np.ndarray       # request id (completions), -1: none


def fill_derived(P: np.ndarray) -> None:
    """Set P's derived slots (P_NB ... P_BPG_SH) from P_RANKS, P_BANKS and P_BPG."""
    banks, bpg = int(P[P_BANKS]), int(P[P_BPG])
    nb = int(P[P_RANKS]) * banks
    P[P_NB] = nb
    P[P_TBASE] = nb + nb // bpg
    pow2 = banks > 0 and bpg > 0 and banks & (banks - 1) == 0 and bpg & (bpg - 1) == 0
    P[P_POW2] = int(pow2)
    P[P_BANK_SH] = banks.bit_length() - 1 if pow2 else 0
    P[P_BPG_SH] = bpg.bit_length() - 1 if pow2 else 0


@njit(cache=True, inline='always', _nrt=False)
def _bank_rank(P, b):
    """The rank of channel bank index b (b // P_BANKS)."""
    if P[P_POW2] != 0:
        return b >> P[P_BANK_SH]
    return b // P[P_BANKS]


@njit(cache=True, inline='always', _nrt=False)
def _bank_group(P, b):
    """The rank-wide bank group index of channel bank index b (b // P_BPG)."""
    if P[P_POW2] != 0:
        return b >> P[P_BPG_SH]
    return b // P[P_BPG]


@njit(cache=True, inline='always', _nrt=False)
def _hash(addr):
    h = (addr >> 6) ^ (addr >> 16) ^ (addr >> 27)
    return h & (HASH_BUCKETS - 1)


@njit(cache=True, inline='always', _nrt=False)
def _channel(P, addr):
    """The channel field of an address (the first field _decode reads)."""
    return ((addr >> P[P_SHIFT]) >> P[P_CH_POS]) & P[P_CH_MASK]


@njit(cache=True, inline='always', _nrt=False)
def _decode(P, addr):
    """DRAMsim3 address mapping (plus optional XOR bank interleave) -> fields."""
    a = addr >> P[P_SHIFT]
    ch = _channel(P, addr)
    ra = (a >> P[P_RA_POS]) & P[P_RA_MASK]
    bg = (a >> P[P_BG_POS]) & P[P_BG_MASK]
    ba = (a >> P[P_BA_POS]) & P[P_BA_MASK]
    ro = (a >> P[P_RO_POS]) & P[P_RO_MASK]
    co = (a >> P[P_CO_POS]) & P[P_CO_MASK]
    if P[P_XOR] != 0:
        ba = ba ^ (ro & P[P_BA_MASK])
        nba = 0
        m = P[P_BA_MASK]
        while m > 0:
            nba += 1
            m >>= 1
        bg = bg ^ ((ro >> nba) & P[P_BG_MASK])
    return ch, ra, bg, ba, ro, co


@njit(cache=True, inline='always', _nrt=False)
def _count_pending(head, nxt, paddr, ch, addr):
    n = 0
    i = head[ch, _hash(addr)]
    while i >= 0:
        if paddr[ch, i] == addr:
            n += 1
        i = nxt[ch, i]
    return n


@njit(cache=True, inline='always', _nrt=False)
def _insert_pending(CS, free_slot, head, nxt, paddr, padded, pid, ch, addr, added, rid):
    i = CS[ch, free_slot]
    if i < 0:
        return False
    CS[ch, free_slot] = nxt[ch, i]
    h = _hash(addr)
    paddr[ch, i] = addr
    padded[ch, i] = added
    pid[ch, i] = rid
    nxt[ch, i] = head[ch, h]
    head[ch, h] = i
    return True


@njit(cache=True, inline='always', _nrt=False)
def _ring_push(G, ring_t, ring_code, ring_lat, head_k, n_k, t, code, lat):
    """Queue a completion at cycle t; code: see CODE_ID_SHIFT."""
    n = G[n_k]
    if n >= RING:
        return False
    j = (G[head_k] + n) & (RING - 1)
    ring_t[j] = t
    ring_code[j] = code
    ring_lat[j] = lat
    G[n_k] = n + 1
    return True


@njit(cache=True, inline='always', _nrt=False)
def _pop_completions(G, C, ring_t, ring_code, ring_lat, head_k, n_k, hist_r, comp_out, track, t,
                     one_channel):
    """Return every completion of one ring due by cycle t (ReturnDoneTrans): count it, and
    record a read's latency (cycles from acceptance by the controller to completion).
    `one_channel`: the memory has one channel (a compile-time constant: _make_run_kernel)."""
    while G[n_k] > 0 and ring_t[G[head_k]] <= t:
        j = G[head_k]
        code = ring_code[j]
        ch = 0 if one_channel else (code >> CODE_CH_SHIFT) & CODE_CH_MASK
        if code & 1:
            C[ch, C_WRITES_DONE] += 1
        else:
            C[ch, C_READS_DONE] += 1
            lat = ring_lat[j]
            C[ch, C_READ_LAT_SUM] += lat
            hist_r[ch, min(lat, hist_r.shape[1] - 1)] += 1
        if track:
            comp_out[G[G_NCOMP_OUT], 0] = code >> CODE_ID_SHIFT
            comp_out[G[G_NCOMP_OUT], 1] = t
            G[G_NCOMP_OUT] += 1
        G[G_COMPLETED] += 1
        G[G_LAST_COMPLETE] = t
        G[head_k] = (j + 1) & (RING - 1)
        G[n_k] -= 1


@njit(cache=True, inline='always', _nrt=False)
def _count_power(CS, RK, r_open, nranks, ch, upto):
    """Count channel ch's rank power states for the cycles from CS_PWR_FROM to upto (r_open
    is constant over them: only the channel's own commands change it). Called when a command
    is about to change whether a rank has a row open (_command_state) and on leaving
    run_kernel (_wake_all); the counts are sums over cycles, so counting at those points only
    gives what counting at every tick gave."""
    n = upto - CS[ch, CS_PWR_FROM]
    if n > 0:
        for r in range(nranks):
            if r_open[ch, r] > 0:
                RK[ch, r, RK_ACTIVE] += n
            else:
                RK[ch, r, RK_IDLE] += n
        CS[ch, CS_PWR_FROM] = upto


@njit(cache=True, _nrt=False)
def _wake_all(CS, RK, r_open, nch, nranks, upto):
    """On leaving run_kernel: count every sleeping channel's power states up to `upto` (the
    first cycle not simulated) and clear the sleep slots, so that the state between calls
    does not depend on them."""
    for ch in range(nch):
        _count_power(CS, RK, r_open, nranks, ch, upto)
        CS[ch, CS_WAKE] = 0
        CS[ch, CS_PWR_FROM] = 0


@njit(cache=True, inline='always', _nrt=False)
def _bank_ready_time(P, b_state, b_row, b_timing, faw, faw_n, aw32, aw32_n, ch, rank, bidx,
                     row, ctype):
    """(required command, earliest cycle) for a queued column command of the given row."""
    if b_state[ch, bidx] == 1:
        if b_row[ch, bidx] == row:
            return ctype, _ready_at(P, b_timing, ch, ctype, bidx)
        return PRE, _ready_at(P, b_timing, ch, PRE, bidx)
    return ACT, _act_ready_at(P, b_timing, faw, faw_n, aw32, aw32_n, ch, rank, bidx)


@njit(cache=True, inline='always', _nrt=False)
def _act_ready_at(P, b_timing, faw, faw_n, aw32, aw32_n, ch, rank, bidx):
    """Earliest cycle an ACT may issue to closed bank bidx of the rank: its timing and the
    activation windows, tFAW (4 ACTs) and, for GDDR, t32AW (32 ACTs)."""
    t = _ready_at(P, b_timing, ch, ACT, bidx)
    if faw_n[ch, rank] >= 4:
        if faw[ch, rank, 0] > t:
            t = faw[ch, rank, 0]
    if P[P_IS_GDDR] != 0 and aw32_n[ch, rank] >= 32:
        if aw32[ch, rank, 0] > t:
            t = aw32[ch, rank, 0]
    return t


@njit(cache=True, inline='always', _nrt=False)
def _arbitrate_precharge(P, C, b_row, b_hits, cq_n, cq, ch, q, k, bidx, count):
    """DRAMsim3's ArbitratePrecharge: may the entry k of queue q close its bank's open row?"""
    for j in range(k):
        if cq[ch, q, j, CQ_BANK] == bidx:
            return False
    open_row = b_row[ch, bidx]
    pending_hit = False
    for j in range(k, cq_n[ch, q]):
        if cq[ch, q, j, CQ_BANK] == bidx and cq[ch, q, j, CQ_ROW] == open_row:
            pending_hit = True
            break
    if (not pending_hit) or b_hits[ch, bidx] >= P[P_ROW_HIT_CAP]:
        if count:
            C[ch, C_ONDEMAND_PRE] += 1
        return True
    return False


@njit(cache=True, inline='always', _nrt=False)
def _rw_dependency(cq_n, cq, ch, q, k):
    """A write may not pass an older read of the same bank, row and column."""
    for j in range(k):
        t = cq[ch, q, j, CQ_TYPE]
        if (t == RD or t == RDP) and cq[ch, q, j, CQ_BANK] == cq[ch, q, k, CQ_BANK] \
                and cq[ch, q, j, CQ_ROW] == cq[ch, q, k, CQ_ROW] and cq[ch, q, j, CQ_COL] == cq[ch, q, k, CQ_COL]:
            return True
    return False


@njit(cache=True, inline='always', _nrt=False)
def _entry_ready(P, C, b_state, b_row, b_hits, b_timing, faw, faw_n, aw32, aw32_n,
                 cq_n, cq, ch, q, k, t, count):
    """Is the next command for queue entry k ready at t? -> (ready, cmd type, earliest time)."""
    bidx = cq[ch, q, k, CQ_BANK]
    ctype = cq[ch, q, k, CQ_TYPE]
    need, tr = _bank_ready_time(P, b_state, b_row, b_timing, faw, faw_n, aw32, aw32_n, ch,
                                cq[ch, q, k, CQ_RANK], bidx, cq[ch, q, k, CQ_ROW], ctype)
    if need == PRE:
        if not _arbitrate_precharge(P, C, b_row, b_hits, cq_n, cq, ch, q, k,
                                    bidx, count and tr <= t):
            return False, need, INF
    elif need == WR or need == WRP:
        if _rw_dependency(cq_n, cq, ch, q, k):
            return False, need, INF
    return tr <= t, need, tr


@njit(cache=True, inline='always', _nrt=False)
def _queue_skipped_for_refresh(P, CS, refq, ch, q):
    if CS[ch, CS_INREF] == 0:
        return False
    j = CS[ch, CS_REFQ_HEAD]
    rtype = refq[ch, j, 0]
    rank = refq[ch, j, 1]
    if rtype == REF:
        if P[P_PER_RANK_Q] != 0:
            return q == rank
        return q // P[P_BANKS] == rank
    if P[P_PER_RANK_Q] != 0:
        return q == rank
    if refq[ch, j, 2] < 0:      # same-bank refresh: bank b of every bank group
        off = q - rank * P[P_BANKS]
        return 0 <= off < P[P_BANKS] and off % P[P_BPG] == refq[ch, j, 3]
    return q == rank * P[P_BANKS] + refq[ch, j, 2] * P[P_BPG] + refq[ch, j, 3]


@njit(cache=True, _nrt=False)
def _scan_queue(P, C, b_state, b_row, b_hits, b_timing, faw, faw_n, aw32, aw32_n, cq_n, cq, ch,
                q, t):
    """A per-rank queue, oldest entry first: (entry, command) of the first ready one, else
    (-1, -1, earliest cycle any of them may be ready). A call (per-rank queues are the rarer
    structure): its code stays out of the event loop."""
    lb = INF
    for k in range(cq_n[ch, q]):
        ok, need, tr = _entry_ready(P, C, b_state, b_row, b_hits, b_timing, faw, faw_n,
                                    aw32, aw32_n, cq_n, cq, ch, q, k, t, True)
        if ok:
            return k, need, lb
        if tr < lb:
            lb = tr
    return -1, -1, lb


@njit(cache=True, _nrt=False)
def _due_queues(q_lb, ch, nq, t):
    """(mask of the queues whose bound is at most t, least bound of the others). A call: its
    loop stays out of the event loop's registers."""
    m = np.int64(0)
    mn = INF
    for q in range(nq):
        lbq = q_lb[ch, q]
        later = (t - lbq) >> 63          # -1 if the bound lies after t, else 0 (no branch:
        m |= (later + 1) << q            # the bounds' order is random)
        v = (lbq & later) | (INF & ~later)
        mn = min(mn, v)
    return m, mn


@njit(cache=True, inline='always', _nrt=False)
def _pick_dramsim3(P, CS, C, refq, b_state, b_row, b_hits, b_timing, faw, faw_n, aw32, aw32_n,
                   cq_n, cq, q_lb, ch, t):
    """DRAMsim3's GetCommandToIssue: round robin over queues, first ready entry oldest-first."""
    if CS[ch, CS_MINLB] > t:
        # no queue can have a ready command before then (a full failed scan leaves the
        # round-robin pointer where it was, so skipping the scan changes nothing)
        return -1, -1, -1
    nq = P[P_NQ]
    per_bank = P[P_PER_RANK_Q] == 0
    inref = CS[ch, CS_INREF] != 0
    qidx = CS[ch, CS_QIDX]
    mn = INF
    # round robin from the queue after the one that issued last; CS_QIDX becomes the queue
    # that issues (a full failed scan leaves it where it was)
    qi = qidx
    left = nq
    # only the queues of CS_QMASK due: visit its bits, from qidx + 1 up, then from 0
    by_mask = nq <= QMASK_MAX
    seg = 0
    rest = 0
    if by_mask:
        m = CS[ch, CS_QMASK]
        mn = CS[ch, CS_QMIN]
        if mn <= t:
            # a bound came due: every queue whose bound has come due joins the mask, and
            # CS_QMIN becomes the least bound of the others. (Before, the scan walked the
            # queues' bounds in round-robin order up to the first due one, with a
            # mispredicted exit per scan: 4-14 % more kernel CPU on five of the six 1M DDR4
            # and HBM2 runs, HBM2 stream within noise; benchmarks/RESULTS.md)
            due, mn = _due_queues(q_lb, ch, nq, t)
            m |= due
            CS[ch, CS_QMASK] = m
            CS[ch, CS_QMIN] = mn
        start = qidx + 1
        if start >= nq:
            start = 0
        low = (np.int64(1) << start) - 1
        seg = m & ~low
        rest = m & low
    while True:
        if by_mask:
            if seg == 0:
                if rest == 0:
                    break
                seg = rest
                rest = 0
            qi = trailing_zeros(seg)        # (one instruction compiled: engine/bits.py)
            seg &= seg - 1
        else:
            # (more than QMASK_MAX queues) pass over the queues whose bound has not come
            # due, in a loop of their own
            # (few values live: the scan's per-queue work below stays out of it)
            while left > 0:
                qi += 1
                if qi >= nq:
                    qi = 0
                left -= 1
                lbq = q_lb[ch, qi]
                if lbq <= t:
                    break
                mn = min(mn, lbq)
            else:
                break
        if inref and _queue_skipped_for_refresh(P, CS, refq, ch, qi):
            # due, not looked at: stays in the mask
            CS[ch, CS_QMASK] |= np.int64(1) << (qi & 63)
            continue
        n = cq_n[ch, qi]
        lb = INF
        if n == 0:
            # an empty queue: nothing to issue until a transaction joins it (which clears
            # its bound)
            q_lb[ch, qi] = INF
            _bound_set(CS, ch, qi, INF)
            continue
        if per_bank:
            # Every entry of a per-bank queue addresses the same bank, so the bank's state
            # decides for all of them: a closed bank needs an ACT for the oldest entry; an open
            # bank serves row hits in age order and lets only the oldest entry precharge it.
            bidx = qi
            if b_state[ch, bidx] != 1:
                # a closed bank: the oldest entry needs an ACT (_entry_ready's answer for it,
                # without looking its bank and rank up in the queue again)
                tr = _act_ready_at(P, b_timing, faw, faw_n, aw32, aw32_n, ch,
                                   _bank_rank(P, bidx), bidx)
                if tr <= t:
                    CS[ch, CS_QIDX] = qi
                    return qi, 0, ACT
                q_lb[ch, qi] = tr
                _bound_set(CS, ch, qi, tr)
                if tr < mn:
                    mn = tr
                continue
            open_row = b_row[ch, bidx]
            # readiness of a row hit depends only on its command type: look each up once
            t_rd = INF
            t_wr = INF
            for k in range(n):
                if cq[ch, qi, k, CQ_ROW] == open_row:
                    ct = cq[ch, qi, k, CQ_TYPE]
                    if ct == RD:
                        if t_rd == INF:
                            t_rd = _ready_at(P, b_timing, ch, RD, bidx)
                        tr = t_rd
                    elif ct == WR:
                        if t_wr == INF:
                            t_wr = _ready_at(P, b_timing, ch, WR, bidx)
                        tr = t_wr
                    else:
                        tr = _ready_at(P, b_timing, ch, ct, bidx)
                    if tr <= t:
                        if (ct == WR or ct == WRP) and _rw_dependency(
                                cq_n, cq, ch, qi, k):
                            continue
                        CS[ch, CS_QIDX] = qi
                        return qi, k, ct
                    if tr < lb:
                        lb = tr
                elif k == 0:
                    # only the oldest entry may precharge, and only when no queued command
                    # hits the open row or the row has served its cap of hits
                    tr = _ready_at(P, b_timing, ch, PRE, bidx)
                    if tr <= t:
                        allowed = b_hits[ch, bidx] >= P[P_ROW_HIT_CAP]
                        if not allowed:
                            allowed = True
                            for j in range(1, n):
                                if cq[ch, qi, j, CQ_ROW] == open_row:
                                    allowed = False
                                    break
                        if allowed:
                            C[ch, C_ONDEMAND_PRE] += 1
                            CS[ch, CS_QIDX] = qi
                            return qi, 0, PRE
                    elif tr < lb:
                        # a lower bound: the precharge may still be refused then
                        lb = tr
            q_lb[ch, qi] = lb
            _bound_set(CS, ch, qi, lb)
            if lb < mn:
                mn = lb
            continue
        k, need, lb = _scan_queue(P, C, b_state, b_row, b_hits, b_timing, faw, faw_n, aw32,
                                  aw32_n, cq_n, cq, ch, qi, t)
        if k >= 0:
            CS[ch, CS_QIDX] = qi
            return qi, k, need
        q_lb[ch, qi] = lb
        _bound_set(CS, ch, qi, lb)
        if lb < mn:
            mn = lb
    # a full failed scan leaves the round-robin pointer where it started
    CS[ch, CS_QIDX] = qidx
    CS[ch, CS_MINLB] = mn
    # every queue not in the mask was visited (or, by_mask, is bounded by CS_QMIN)
    CS[ch, CS_QMIN] = mn
    return -1, -1, -1


@njit(cache=True, _nrt=False)
def _pick_priority(P, CS, C, refq, b_state, b_row, b_hits, b_timing, faw, faw_n, aw32, aw32_n,
                   cq_n, cq,
                   src_rank, q_lb, ch, t, tq_n, tq_addr, tq_isw, tq_src, tq_q):
    """FCFS, FR-FCFS and PAR-BS: the best ready command over all queues of the channel.

    FCFS: only each queue's oldest entry may proceed; the oldest ready one wins.
    FR-FCFS: column commands to open rows (row hits) first, then the oldest.
    PAR-BS (Mutlu & Moscibroda, ISCA 2008): marked (batched) requests first, then row hits,
    then the thread ranked first (shortest job first), then the oldest.
    DRAMSIM3_RR: DRAMsim3's order (round robin over the queues from the one after the last
    to issue, oldest ready entry first), used only with dynamic bank grouping.

    Dynamic bank grouping (P_DBG_W = window W > 0): when the scheduler's pick is a column
    command to the bank group of the last column command (tCCD_L would apply to the next
    one) or there is no pick (FCFS: heads not ready), a ready column command to another bank
    group (tCCD_S) is issued instead if it arrived within W requests of the pick; under FCFS
    the first W entries of a queue may be taken this way.
    """
    sched = P[P_SCHED]
    dbg_w = P[P_DBG_W]
    if dbg_w > 0 and CS[ch, CS_WDRAIN] > 0 and P[P_UNIFIED] == 0:
        # write drain in progress: put a write to another bank group at the front of the
        # write buffer before this cycle's transaction is scheduled
        _dbg_order_writes(P, CS, tq_n, tq_addr, tq_isw, tq_src, tq_q, cq_n, ch)
    nq = P[P_NQ]
    qidx = CS[ch, CS_QIDX]
    last_g = CS[ch, CS_DBG_COL]
    bpg = P[P_BPG]
    best_q = -1
    best_k = -1
    best_need = -1
    best_key = INF
    alt_q = -1
    alt_k = -1
    alt_need = -1
    alt_key = INF
    mn = INF
    for q in range(nq):
        if _queue_skipped_for_refresh(P, CS, refq, ch, q):
            continue
        if q_lb[ch, q] > t:
            if q_lb[ch, q] < mn:
                mn = q_lb[ch, q]
            continue
        lb = INF
        n = cq_n[ch, q]
        if sched == SCHED_FCFS and n > 1:
            n = 1 if dbg_w == 0 else min(n, dbg_w)
        for k in range(n):
            ok, need, tr = _entry_ready(P, C, b_state, b_row, b_hits, b_timing, faw, faw_n,
                                        aw32, aw32_n, cq_n, cq, ch, q, k, t, False)
            if sched == SCHED_FCFS and k == 0 and need == PRE and tr == INF:
                # FCFS serves a queue in arrival order: its oldest entry may close the open
                # row even when a younger entry would hit it (DRAMsim3's rule, which holds
                # the precharge back for that hit, would wait for a command FCFS never issues
                # before the oldest: the queue stalled until a refresh closed the row)
                tr = _ready_at(P, b_timing, ch, PRE, cq[ch, q, 0, CQ_BANK])
                ok = tr <= t
            if tr < lb:
                lb = tr
            if not ok:
                continue
            seq = cq[ch, q, k, CQ_SEQ] & SEQ_MASK
            nonhit = 0 if need == cq[ch, q, k, CQ_TYPE] else 1
            if sched == SCHED_FCFS:
                key = seq
            elif sched == SCHED_FRFCFS:
                key = nonhit * (SEQ_MASK + 1) + seq
            elif sched == SCHED_DRAMSIM3_RR:
                d = q - qidx - 1
                if d < 0:
                    d += nq
                key = d * P[P_CQ_SIZE] + k
            else:
                unmarked = 1 - cq[ch, q, k, CQ_MARK]
                rank = src_rank[ch, cq[ch, q, k, CQ_SRC] % NSRC]
                key = (((unmarked * 2 + nonhit) * 256) + rank) * (SEQ_MASK + 1) + seq
            if key < best_key and (k == 0 or sched != SCHED_FCFS):
                best_key = key
                best_q = q
                best_k = k
                best_need = need
            if dbg_w > 0 and nonhit == 0 and key < alt_key \
                    and cq[ch, q, k, CQ_BANK] // bpg != last_g:
                alt_key = key
                alt_q = q
                alt_k = k
                alt_need = need
        q_lb[ch, q] = lb
        if lb < mn:
            mn = lb
    if alt_q >= 0:
        # dynamic bank grouping: take the other bank group's column command instead
        if best_q < 0:
            best_q = alt_q
            best_k = alt_k
            best_need = alt_need
        elif best_need == cq[ch, best_q, best_k, CQ_TYPE] \
                and cq[ch, best_q, best_k, CQ_BANK] // bpg == last_g:
            d = (cq[ch, alt_q, alt_k, CQ_SEQ] & SEQ_MASK) - (cq[ch, best_q, best_k, CQ_SEQ]
                                                              & SEQ_MASK)
            if d < 0:
                d = -d
            if d < dbg_w:
                best_q = alt_q
                best_k = alt_k
                best_need = alt_need
    if best_q < 0:
        CS[ch, CS_MINLB] = mn
    if best_q >= 0:
        if sched == SCHED_DRAMSIM3_RR:
            CS[ch, CS_QIDX] = best_q
        if dbg_w > 0 and best_need == cq[ch, best_q, best_k, CQ_TYPE]:
            CS[ch, CS_DBG_COL] = cq[ch, best_q, best_k, CQ_BANK] // bpg
    if best_q >= 0 and best_need == PRE:
        # count the on-demand precharge as DRAMsim3 does (FCFS: every one it issues)
        if sched == SCHED_FCFS:
            C[ch, C_ONDEMAND_PRE] += 1
        else:
            _arbitrate_precharge(P, C, b_row, b_hits, cq_n, cq, ch, best_q, best_k,
                                 cq[ch, best_q, best_k, CQ_BANK], True)
    return best_q, best_k, best_need


@njit(cache=True, inline='always', _nrt=False)
def _erase_cq(cq_n, cq, ch, q, k):
    n = cq_n[ch, q]
    for j in range(k, n - 1):
        cq[ch, q, j, CQ_TYPE] = cq[ch, q, j + 1, CQ_TYPE]
        cq[ch, q, j, CQ_ADDR] = cq[ch, q, j + 1, CQ_ADDR]
        cq[ch, q, j, CQ_BANK] = cq[ch, q, j + 1, CQ_BANK]
        cq[ch, q, j, CQ_RANK] = cq[ch, q, j + 1, CQ_RANK]
        cq[ch, q, j, CQ_BG] = cq[ch, q, j + 1, CQ_BG]
        cq[ch, q, j, CQ_BA] = cq[ch, q, j + 1, CQ_BA]
        cq[ch, q, j, CQ_ROW] = cq[ch, q, j + 1, CQ_ROW]
        cq[ch, q, j, CQ_COL] = cq[ch, q, j + 1, CQ_COL]
        cq[ch, q, j, CQ_SEQ] = cq[ch, q, j + 1, CQ_SEQ]
        cq[ch, q, j, CQ_SRC] = cq[ch, q, j + 1, CQ_SRC]
        cq[ch, q, j, CQ_MARK] = cq[ch, q, j + 1, CQ_MARK]
        cq[ch, q, j, CQ_ID] = cq[ch, q, j + 1, CQ_ID]
    cq_n[ch, q] = n - 1


@njit(cache=True, inline='always', _nrt=False)
def _update_timing(P, TN, TX, TD, b_timing, ch, cmd, rank, bidx, t):
    """Raise the earliest issue cycle of every command each timing rule constrains.

    b_timing is [channel, command, slot]. With folded timing (P_FOLDED, the normal case) the
    slots are: one per bank (same-bank rules), one per bank group (same-bank-group rules),
    one per rank (other-bank-group and whole-rank rules) and one per rank for the rules other
    ranks impose; a bank's earliest cycle is the max of its four slots (_ready_at). Folding is
    exact because, checked per configuration in engine.timing, a wider scope's delay never
    exceeds a narrower scope's for the same command pair where both apply. Otherwise (and for
    per-bank refresh) every bank of a scope is raised one by one, as DRAMsim3 does."""
    banks = P[P_BANKS]
    bpg = P[P_BPG]
    r0 = rank * banks
    r1 = r0 + banks
    nb = P[P_NB]
    if P[P_FOLDED] != 0 and cmd != REFB:
        g = _bank_group(P, bidx)
        for k in range(TN[SAME_BANK, cmd]):
            _raise(b_timing, ch, TX[SAME_BANK, cmd, k], bidx, bidx + 1,
                   t + TD[SAME_BANK, cmd, k])
        for k in range(TN[SAME_BG, cmd]):
            _raise(b_timing, ch, TX[SAME_BG, cmd, k], nb + g, nb + g + 1,
                   t + TD[SAME_BG, cmd, k])
        base = P[P_TBASE]
        for k in range(TN[OTHER_BG, cmd]):
            _raise(b_timing, ch, TX[OTHER_BG, cmd, k], base + rank, base + rank + 1,
                   t + TD[OTHER_BG, cmd, k])
        for k in range(TN[SAME_RANK, cmd]):
            _raise(b_timing, ch, TX[SAME_RANK, cmd, k], base + rank, base + rank + 1,
                   t + TD[SAME_RANK, cmd, k])
        base += P[P_RANKS]
        for k in range(TN[OTHER_RANK, cmd]):
            c = TX[OTHER_RANK, cmd, k]
            v = t + TD[OTHER_RANK, cmd, k]
            _raise(b_timing, ch, c, base, base + rank, v)
            _raise(b_timing, ch, c, base + rank + 1, base + P[P_RANKS], v)
        return
    if cmd == REF or cmd >= SREFE:
        for k in range(TN[SAME_RANK, cmd]):
            _raise(b_timing, ch, TX[SAME_RANK, cmd, k], r0, r1, t + TD[SAME_RANK, cmd, k])
        return
    for k in range(TN[SAME_BANK, cmd]):
        _raise(b_timing, ch, TX[SAME_BANK, cmd, k], bidx, bidx + 1, t + TD[SAME_BANK, cmd, k])
    g0 = r0 + ((bidx - r0) // bpg) * bpg
    g1 = g0 + bpg
    for k in range(TN[SAME_BG, cmd]):
        c = TX[SAME_BG, cmd, k]
        v = t + TD[SAME_BG, cmd, k]
        _raise(b_timing, ch, c, g0, bidx, v)
        _raise(b_timing, ch, c, bidx + 1, g1, v)
    for k in range(TN[OTHER_BG, cmd]):
        c = TX[OTHER_BG, cmd, k]
        v = t + TD[OTHER_BG, cmd, k]
        _raise(b_timing, ch, c, r0, g0, v)
        _raise(b_timing, ch, c, g1, r1, v)
    for k in range(TN[OTHER_RANK, cmd]):
        c = TX[OTHER_RANK, cmd, k]
        v = t + TD[OTHER_RANK, cmd, k]
        _raise(b_timing, ch, c, 0, r0, v)
        _raise(b_timing, ch, c, r1, nb, v)


@njit(cache=True, inline='always', _nrt=False)
def _ready_at(P, b_timing, ch, c, b):
    """Earliest cycle command c may issue to bank b (see _update_timing for the slots)."""
    v = b_timing[ch, c, b]
    if P[P_FOLDED] != 0:
        r = _bank_rank(P, b)
        base = P[P_TBASE]
        x = b_timing[ch, c, P[P_NB] + _bank_group(P, b)]
        if x > v:
            v = x
        x = b_timing[ch, c, base + r]
        if x > v:
            v = x
        x = b_timing[ch, c, base + P[P_RANKS] + r]
        if x > v:
            v = x
    return v


@njit(cache=True, inline='always', _nrt=False)
def _raise(b_timing, ch, c, lo, hi, v):
    for b in range(lo, hi):
        if v > b_timing[ch, c, b]:
            b_timing[ch, c, b] = v


@njit(cache=True, inline='always', _nrt=False)
def _invalidate_bank(P, CS, q_lb, ch, bidx):
    if P[P_PER_RANK_Q] != 0:
        _invalidate_q(CS, q_lb, ch, bidx // P[P_BANKS])
    else:
        _invalidate_q(CS, q_lb, ch, bidx)


@njit(cache=True, inline='always', _nrt=False)
def _invalidate_q(CS, q_lb, ch, q):
    """A queue's content or its bank's state changed: its readiness bound must be recomputed."""
    q_lb[ch, q] = 0
    CS[ch, CS_MINLB] = 0
    CS[ch, CS_QMASK] |= np.int64(1) << (q & 63)     # (unused with more than QMASK_MAX queues)


@njit(cache=True, inline='always', _nrt=False)
def _bound_set(CS, ch, q, lb):
    """Queue q was looked at and got its bound lb: out of the mask, under CS_QMIN."""
    CS[ch, CS_QMASK] &= ~(np.int64(1) << (q & 63))
    if lb < CS[ch, CS_QMIN]:
        CS[ch, CS_QMIN] = lb


@njit(cache=True, inline='always', _nrt=False)
def _complete_read(P, G, CS, pr_head, pr_next, pr_addr, pr_added, pr_id, ring_r_t,
                   ring_r_code, ring_r_lat, ch, t, addr):
    """A READ issued: every pending read of its line completes read_delay cycles later."""
    done = t + P[P_READ_DELAY]
    h = _hash(addr)
    prev = -1
    i = pr_head[ch, h]
    while i >= 0:
        nx = pr_next[ch, i]
        if pr_addr[ch, i] == addr:
            _ring_push(G, ring_r_t, ring_r_code, ring_r_lat, G_RING_R_HEAD, G_RING_R_N,
                       done, (pr_id[ch, i] << CODE_ID_SHIFT) | (ch << CODE_CH_SHIFT),
                       done - pr_added[ch, i])
            if prev < 0:
                pr_head[ch, h] = nx
            else:
                pr_next[ch, prev] = nx
            pr_next[ch, i] = CS[ch, CS_PR_FREE]
            CS[ch, CS_PR_FREE] = i
        else:
            prev = i
        i = nx


@njit(cache=True, inline='always', _nrt=False)
def _complete_write(P, C, CS, pw_head, pw_next, pw_addr, pw_added, hist_w, ch, t, addr):
    """A WRITE issued: it leaves the pending-write map; record its latency."""
    h = _hash(addr)
    prev = -1
    i = pw_head[ch, h]
    while i >= 0:
        nx = pw_next[ch, i]
        if pw_addr[ch, i] == addr:
            lat = t - pw_added[ch, i] + P[P_WRITE_DELAY]
            C[ch, C_WRITE_LAT_SUM] += lat
            C[ch, C_WRITE_LAT_N] += 1
            if lat >= hist_w.shape[1] - 1:
                hist_w[ch, hist_w.shape[1] - 1] += 1
            else:
                hist_w[ch, lat] += 1
            if prev < 0:
                pw_head[ch, h] = nx
            else:
                pw_next[ch, prev] = nx
            pw_next[ch, i] = CS[ch, CS_PW_FREE]
            CS[ch, CS_PW_FREE] = i
            break
        prev = i
        i = nx


@njit(cache=True, inline='always', _nrt=False)
def _command_stats(C, BK, RK, b_hits, b_last_conflict, b_streak, ch, cmd, rank, bidx,
                   conflict_pre):
    """Count one command: per-channel and per-bank counters, row hit / miss / conflict."""
    if cmd == RD or cmd == RDP or cmd == WR or cmd == WRP:
        is_rd = cmd == RD or cmd == RDP
        C[ch, C_READ_CMDS if is_rd else C_WRITE_CMDS] += 1
        BK[ch, bidx, BK_RD if is_rd else BK_WR] += 1
        if b_hits[ch, bidx] != 0:
            C[ch, C_READ_HITS if is_rd else C_WRITE_HITS] += 1
            BK[ch, bidx, BK_HITS] += 1
            b_streak[ch, bidx] = 0
        elif b_last_conflict[ch, bidx] != 0:
            C[ch, C_ROW_CONFLICTS] += 1
            BK[ch, bidx, BK_CONFLICTS] += 1
        else:
            C[ch, C_ROW_MISSES] += 1
            BK[ch, bidx, BK_MISSES] += 1
    elif cmd == ACT:
        C[ch, C_ACT] += 1
        BK[ch, bidx, BK_ACT] += 1
        if b_last_conflict[ch, bidx] != 0:
            BK[ch, bidx, BK_ACT_CONFLICT] += 1
            b_streak[ch, bidx] += 1
    elif cmd == PRE:
        C[ch, C_PRE] += 1
        BK[ch, bidx, BK_PRE] += 1
        if not conflict_pre:
            C[ch, C_REF_PRE] += 1
    elif cmd == REF:
        C[ch, C_REF] += 1
        RK[ch, rank, RK_REF] += 1
    elif cmd == REFB:
        C[ch, C_REFB] += 1
        BK[ch, bidx, BK_REFB] += 1


@njit(cache=True, inline='always', _nrt=False)
def _command_state(P, CS, BK, RK, b_state, b_row, b_hits, b_open_since, b_last_conflict,
                   r_open, faw, faw_n, aw32, aw32_n, q_lb, ch, t, cmd, rank, bidx, row,
                   conflict_pre):
    """Apply one command to the bank and rank state (open rows, activation windows). A
    command that opens a rank's first row or closes its last one changes the rank's power
    state from cycle t on: the cycles before t are counted first, in the state they had."""
    if cmd == ACT:
        if r_open[ch, rank] == 0:
            _count_power(CS, RK, r_open, P[P_RANKS], ch, t)
        b_state[ch, bidx] = 1
        b_row[ch, bidx] = row
        b_hits[ch, bidx] = 0
        b_open_since[ch, bidx] = t
        r_open[ch, rank] += 1
        # activation windows
        n = faw_n[ch, rank]
        if n > 0 and t >= faw[ch, rank, 0]:
            for j in range(n - 1):
                faw[ch, rank, j] = faw[ch, rank, j + 1]
            n -= 1
        faw[ch, rank, n] = t + P[P_TFAW]
        faw_n[ch, rank] = n + 1
        if P[P_IS_GDDR] != 0:
            n = aw32_n[ch, rank]
            if n > 0 and t >= aw32[ch, rank, 0]:
                for j in range(n - 1):
                    aw32[ch, rank, j] = aw32[ch, rank, j + 1]
                n -= 1
            aw32[ch, rank, n] = t + P[P_T32AW]
            aw32_n[ch, rank] = n + 1
        _invalidate_bank(P, CS, q_lb, ch, bidx)
    elif cmd == RD or cmd == WR:
        b_hits[ch, bidx] += 1
        _invalidate_bank(P, CS, q_lb, ch, bidx)
    elif cmd == RDP or cmd == WRP or cmd == PRE:
        if b_state[ch, bidx] == 1:
            BK[ch, bidx, BK_OPEN_CYCLES] += t - b_open_since[ch, bidx]
            if r_open[ch, rank] == 1:
                _count_power(CS, RK, r_open, P[P_RANKS], ch, t)
            r_open[ch, rank] -= 1
        b_state[ch, bidx] = 0
        b_row[ch, bidx] = -1
        b_hits[ch, bidx] = 0
        b_last_conflict[ch, bidx] = 1 if (cmd == PRE and conflict_pre) else 0
        _invalidate_bank(P, CS, q_lb, ch, bidx)
    if cmd == REF:
        # rank-level: all queues of the rank may change readiness
        for b in range(rank * P[P_BANKS], (rank + 1) * P[P_BANKS]):
            b_last_conflict[ch, b] = 0


@njit(cache=True, _nrt=False)
def _refresh_pick(P, CS, refq, b_state, b_timing, ch, t):
    """DRAMsim3's FinishRefresh: (cmd, bank index) of the refresh's next step, or (-1, ready time)."""
    j = CS[ch, CS_REFQ_HEAD]
    rtype = refq[ch, j, 0]
    rank = refq[ch, j, 1]
    banks = P[P_BANKS]
    if rtype == REF:
        nready = 0
        need_t = 0
        pre_t = INF
        for b in range(rank * banks, (rank + 1) * banks):
            if b_state[ch, b] == 1:
                tp = _ready_at(P, b_timing, ch, PRE, b)
                if tp <= t:
                    return PRE, b
                if tp < pre_t:
                    pre_t = tp
            else:
                tr = _ready_at(P, b_timing, ch, REF, b)
                if tr <= t:
                    nready += 1
                elif tr > need_t:
                    need_t = tr
        if nready == banks:
            return REF, rank * banks
        if pre_t < INF:
            return -1, pre_t
        return -1, need_t
    if refq[ch, j, 2] < 0:
        return _refresh_pick_same_bank(P, refq, b_state, b_timing, ch, t, j, rank)
    b = rank * banks + refq[ch, j, 2] * P[P_BPG] + refq[ch, j, 3]
    if b_state[ch, b] == 1:
        tp = _ready_at(P, b_timing, ch, PRE, b)
        if tp <= t:
            return PRE, b
        return -1, tp
    tr = _ready_at(P, b_timing, ch, REFB, b)
    if tr <= t:
        return REFB, b
    return -1, tr


@njit(cache=True, _nrt=False)
def _refresh_pick_same_bank(P, refq, b_state, b_timing, ch, t, j, rank):
    """DDR5 REFsb: precharge bank b of every bank group, then one REFB (reported on the
    bank-group-0 bank) once all of them may take it; (-1, ready time) while waiting."""
    ba = refq[ch, j, 3]
    b0 = rank * P[P_BANKS] + ba
    pre_t = INF
    need_t = 0
    for g in range(P[P_BGS]):
        b = b0 + g * P[P_BPG]
        if b_state[ch, b] == 1:
            tp = _ready_at(P, b_timing, ch, PRE, b)
            if tp <= t:
                return PRE, b
            if tp < pre_t:
                pre_t = tp
        else:
            tr = _ready_at(P, b_timing, ch, REFB, b)
            if tr > need_t:
                need_t = tr
    if pre_t < INF:
        return -1, pre_t
    if need_t <= t:
        return REFB, b0
    return -1, need_t


@njit(cache=True, _nrt=False)
def _refresh_same_bank_rest(P, CS, BK, b_timing, q_lb, TN, TX, TD, ch, rank, bidx, t):
    """The other bank groups' banks of a same-bank refresh issued on bidx (bank group 0):
    their own timing, counters and queue bounds (the issue path handled bidx)."""
    for g in range(1, P[P_BGS]):
        b = bidx + g * P[P_BPG]
        _update_timing(P, TN, TX, TD, b_timing, ch, REFB, rank, b, t)
        BK[ch, b, BK_REFB] += 1
        _invalidate_bank(P, CS, q_lb, ch, b)


@njit(cache=True, _nrt=False)
def _refresh_issued(P, CS, BK, b_timing, q_lb, TN, TX, TD, ch, cmd, rank, bidx, t):
    """A REF or REFB issued: it leaves the refresh queue; the queues of its banks must be
    looked at again."""
    CS[ch, CS_REFQ_HEAD] = (CS[ch, CS_REFQ_HEAD] + 1) % REFQ_CAP
    CS[ch, CS_REFQ_N] -= 1
    CS[ch, CS_INREF] = 0
    if cmd == REF:
        banks = P[P_BANKS]
        for b in range(rank * banks, (rank + 1) * banks):
            _invalidate_bank(P, CS, q_lb, ch, b)
    else:
        _invalidate_bank(P, CS, q_lb, ch, bidx)
        if P[P_REF_POLICY] == REF_SAME_BANK:
            _refresh_same_bank_rest(P, CS, BK, b_timing, q_lb, TN, TX, TD, ch, rank, bidx, t)


@njit(cache=True, _nrt=False)
def _refresh_due(P, CS, refq, ch):
    """Refresh::InsertRefresh for the configured policy."""
    pol = P[P_REF_POLICY]
    n = CS[ch, CS_REFQ_N]
    if n >= REFQ_CAP:
        return
    j = (CS[ch, CS_REFQ_HEAD] + n) % REFQ_CAP
    if pol == REF_BANK_STAGGERED:
        refq[ch, j, 0] = REFB
        refq[ch, j, 1] = CS[ch, CS_REF_RANK]
        refq[ch, j, 2] = CS[ch, CS_REF_BG]
        refq[ch, j, 3] = CS[ch, CS_REF_BANK]
        CS[ch, CS_REFQ_N] = n + 1
        bg = (CS[ch, CS_REF_BG] + 1) % P[P_BGS]
        CS[ch, CS_REF_BG] = bg
        if bg == 0:
            ba = (CS[ch, CS_REF_BANK] + 1) % P[P_BPG]
            CS[ch, CS_REF_BANK] = ba
            if ba == 0:
                CS[ch, CS_REF_RANK] = (CS[ch, CS_REF_RANK] + 1) % P[P_RANKS]
        return
    if pol == REF_SAME_BANK:
        refq[ch, j, 0] = REFB
        refq[ch, j, 1] = CS[ch, CS_REF_RANK]
        refq[ch, j, 2] = -1
        refq[ch, j, 3] = CS[ch, CS_REF_BANK]
        CS[ch, CS_REFQ_N] = n + 1
        ba = (CS[ch, CS_REF_BANK] + 1) % P[P_BPG]
        CS[ch, CS_REF_BANK] = ba
        if ba == 0:
            CS[ch, CS_REF_RANK] = (CS[ch, CS_REF_RANK] + 1) % P[P_RANKS]
        return
    if pol == REF_RANK_SIMULTANEOUS:
        # every rank at once (DRAMsim3 refreshes only the first rank here: a bug we fix)
        for r in range(P[P_RANKS]):
            if n >= REFQ_CAP:
                return
            j = (CS[ch, CS_REFQ_HEAD] + n) % REFQ_CAP
            refq[ch, j, 0] = REF
            refq[ch, j, 1] = r
            refq[ch, j, 2] = -1
            refq[ch, j, 3] = -1
            n += 1
        CS[ch, CS_REFQ_N] = n
        return
    refq[ch, j, 0] = REF
    refq[ch, j, 1] = CS[ch, CS_REF_RANK]
    refq[ch, j, 2] = -1
    refq[ch, j, 3] = -1
    CS[ch, CS_REFQ_N] = n + 1
    CS[ch, CS_REF_RANK] = (CS[ch, CS_REF_RANK] + 1) % P[P_RANKS]


@njit(cache=True, inline='always', _nrt=False)
def _schedule_transaction(P, CS, C, tq_n, tq_addr, tq_isw, tq_src, tq_q, cq_n, cq, pr_head, pr_next, pr_addr, q_lb, b_state,
                          b_row, b_timing, ch):
    """Controller::ScheduleTransaction: move at most one transaction into a command queue.
    True when the controller's state changed: a transaction moved, or a write drain started or
    stopped without moving one (DRAMsim3's next tick then decides again, e.g. schedules the
    read a stopped drain waited for, so the next cycle is not idle).

    Writes wait in the write buffer until it reaches the high watermark (DRAMsim3: full), or
    until it holds more than the low watermark (DRAMsim3: 8) while every command queue is
    empty; a drain then moves as many writes as the buffer held, one a cycle, reads waiting.
    """
    unified = P[P_UNIFIED] != 0
    was = CS[ch, CS_WDRAIN]
    if CS[ch, CS_WDRAIN] == 0 and not unified:
        nw = tq_n[ch, 1]
        high = P[P_WR_HIGH] if P[P_WR_HIGH] > 0 else P[P_TQ_SIZE]
        prio = P[P_WR_PRIO_BP]          # write priority change, in basis points
        if prio < 0:
            # higher write priority: drain when the buffer is that share less full
            high = max(P[P_WR_LOW] + 1, (high * (10000 + prio) + 9999) // 10000)
        drain = nw
        if prio > 0:
            # lower write priority: a drain moves that share fewer of the waiting writes
            drain = max(1, (nw * (10000 - prio) + 9999) // 10000)
        if nw >= high:
            CS[ch, CS_WDRAIN] = drain
        elif nw > P[P_WR_LOW]:
            if P[P_WR_LOW_DRAIN_EMPTY] == 0 or CS[ch, CS_CQ_TOTAL] == 0:
                CS[ch, CS_WDRAIN] = drain
    kind = 0
    if not unified and CS[ch, CS_WDRAIN] > 0:
        kind = 1
    for attempt in range(2):
        # CS_TQ_BLOCKED (kind + 1) | (n << 2): the first n transactions of queue `kind` wait
        # for full command queues (valid until a command queue frees a slot: a transaction
        # moved in or one accepted at the end only adds to it); all of them: nothing can move
        start = 0
        blk = CS[ch, CS_TQ_BLOCKED]
        if blk & 3 == kind + 1:
            start = blk >> 2
            if start >= tq_n[ch, kind]:
                return CS[ch, CS_WDRAIN] != was
        for i in range(start, tq_n[ch, kind]):
            q = tq_q[ch, kind, i]
            if cq_n[ch, q] >= P[P_CQ_SIZE]:
                continue
            addr = tq_addr[ch, kind, i]
            is_write = tq_isw[ch, kind, i] != 0
            c, ra, bg, ba, ro, co = _decode(P, addr)
            bidx = ra * P[P_BANKS] + bg * P[P_BPG] + ba
            if not unified and is_write:
                if _count_pending(pr_head, pr_next, pr_addr, ch, addr) > 0:
                    # a read of this line is still waiting: the drain stops (R->W order)
                    CS[ch, CS_WDRAIN] = 0
                    if attempt == 0 and CS[ch, CS_CQ_TOTAL] == 0:
                        # DRAMsim3 would now restart and stop this drain every cycle, never
                        # scheduling the read it waits for (its issue #2, a livelock). We
                        # schedule from the read queue instead; until this point we behave
                        # exactly as DRAMsim3 does.
                        C[ch, C_RW_LIVELOCK_BREAKS] += 1
                        kind = 0
                        break
                    return CS[ch, CS_WDRAIN] != was
                CS[ch, CS_WDRAIN] -= 1
            k = cq_n[ch, q]
            if P[P_PAGE] == PAGE_CLOSE:
                cq[ch, q, k, CQ_TYPE] = WRP if is_write else RDP
            else:
                cq[ch, q, k, CQ_TYPE] = WR if is_write else RD
            cq[ch, q, k, CQ_ADDR] = addr
            cq[ch, q, k, CQ_BANK] = bidx
            cq[ch, q, k, CQ_RANK] = ra
            cq[ch, q, k, CQ_BG] = bg
            cq[ch, q, k, CQ_BA] = ba
            cq[ch, q, k, CQ_ROW] = ro
            cq[ch, q, k, CQ_COL] = co
            cq[ch, q, k, CQ_SEQ] = CS[ch, CS_SEQ]
            CS[ch, CS_SEQ] += 1
            cq[ch, q, k, CQ_SRC] = tq_src[ch, kind, i]
            cq[ch, q, k, CQ_MARK] = 0
            cq[ch, q, k, CQ_ID] = 0
            cq_n[ch, q] = k + 1
            if k == 0 or P[P_PER_RANK_Q] != 0:
                _invalidate_q(CS, q_lb, ch, q)
            elif b_state[ch, bidx] == 1 and b_row[ch, bidx] == ro:
                # appended to a per-bank queue whose bank has this row open: the queue's
                # readiness bound can only come down to this row hit's (it may rise, if the
                # hit now forbids the oldest entry's precharge: a lower bound stays valid)
                tr = _ready_at(P, b_timing, ch, cq[ch, q, k, CQ_TYPE], bidx)
                if tr < q_lb[ch, q]:
                    q_lb[ch, q] = tr
                if tr < CS[ch, CS_MINLB]:
                    CS[ch, CS_MINLB] = tr
                if tr < CS[ch, CS_QMIN]:
                    CS[ch, CS_QMIN] = tr
            # else: behind an older entry of a closed bank, or a row miss behind it: this
            # entry cannot be the queue's first ready one, the bound stands
            n = tq_n[ch, kind]
            for j in range(i, n - 1):
                tq_addr[ch, kind, j] = tq_addr[ch, kind, j + 1]
                tq_isw[ch, kind, j] = tq_isw[ch, kind, j + 1]
                tq_src[ch, kind, j] = tq_src[ch, kind, j + 1]
                tq_q[ch, kind, j] = tq_q[ch, kind, j + 1]
            tq_n[ch, kind] = n - 1
            CS[ch, CS_CQ_TOTAL] += 1
            if blk == 0 or blk & 3 == kind + 1:
                # the transactions before i still wait (their command queues are still full)
                CS[ch, CS_TQ_BLOCKED] = (kind + 1) | (i << 2)
            return True
        else:
            CS[ch, CS_TQ_BLOCKED] = (kind + 1) | (tq_n[ch, kind] << 2)
            return CS[ch, CS_WDRAIN] != was
    return CS[ch, CS_WDRAIN] != was


@njit(cache=True, _nrt=False)
def _dbg_order_writes(P, CS, tq_n, tq_addr, tq_isw, tq_src, tq_q, cq_n, ch):
    """Dynamic bank grouping for a write drain: once the write last put at the front of the
    write buffer has moved on, bring the oldest of the first W waiting writes whose bank
    group differs from that write's to the front, so that a drain alternates bank groups
    instead of moving one group's writes back to back."""
    n = min(tq_n[ch, 1], P[P_DBG_W])
    if n == 0:
        return
    if CS[ch, CS_DBG_WADDR] >= 0 and np.int64(tq_addr[ch, 1, 0]) == CS[ch, CS_DBG_WADDR]:
        return                      # the write put in front has not moved yet
    last = CS[ch, CS_DBG_WR]
    pick = 0
    pick_g = -1
    for i in range(n):
        _c, ra, bg, _ba, _ro, _co = _decode(P, tq_addr[ch, 1, i])
        g = ra * P[P_BGS] + bg
        if i == 0:
            pick_g = g
        if g != last:
            pick = i
            pick_g = g
            break
    CS[ch, CS_DBG_WR] = pick_g
    CS[ch, CS_DBG_WADDR] = np.int64(tq_addr[ch, 1, pick])
    if pick > 0:
        blk = CS[ch, CS_TQ_BLOCKED]
        if blk & 3 == 2 and blk >> 2 <= pick:
            # the write brought to the front was not in the known-blocked prefix
            CS[ch, CS_TQ_BLOCKED] = 0
        a = tq_addr[ch, 1, pick]
        w = tq_isw[ch, 1, pick]
        s = tq_src[ch, 1, pick]
        q = tq_q[ch, 1, pick]
        for j in range(pick, 0, -1):
            tq_addr[ch, 1, j] = tq_addr[ch, 1, j - 1]
            tq_isw[ch, 1, j] = tq_isw[ch, 1, j - 1]
            tq_src[ch, 1, j] = tq_src[ch, 1, j - 1]
            tq_q[ch, 1, j] = tq_q[ch, 1, j - 1]
        tq_addr[ch, 1, 0] = a
        tq_isw[ch, 1, 0] = w
        tq_src[ch, 1, 0] = s
        tq_q[ch, 1, 0] = q


@njit(cache=True, _nrt=False)
def _parbs_mark(P, CS, cq_n, cq, src_rank, scratch, ch):
    """Form a new PAR-BS batch: mark up to `cap` oldest requests per (thread, bank); rank
    threads by their largest per-bank marked load (shortest job first), ties by total load."""
    cap = P[P_PARBS_CAP]
    nb = P[P_NB]
    per_bank = scratch[:nb, :NSRC]
    total = scratch[nb, :NSRC]
    for b in range(nb + 3):
        for s_ in range(NSRC):
            scratch[b, s_] = 0
    marked = 0
    for q in range(P[P_NQ]):
        for k in range(cq_n[ch, q]):
            s = cq[ch, q, k, CQ_SRC] % NSRC
            b = cq[ch, q, k, CQ_BANK]
            if per_bank[b, s] < cap:
                per_bank[b, s] += 1
                total[s] += 1
                cq[ch, q, k, CQ_MARK] = 1
                marked += 1
    CS[ch, CS_NMARKED] = marked
    maxload = scratch[nb + 1, :NSRC]
    for s in range(NSRC):
        m = 0
        for b in range(nb):
            if per_bank[b, s] > m:
                m = per_bank[b, s]
        maxload[s] = m
    for s in range(NSRC):
        r = 0
        for o in range(NSRC):
            if maxload[o] < maxload[s] or (maxload[o] == maxload[s] and
                                           (total[o] < total[s] or (total[o] == total[s] and o < s))):
                r += 1
        src_rank[ch, s] = min(r, 255)


@njit(cache=True, _nrt=False)
def _log(P, G, cmd_log, t, cmd, ch, rank, bidx, row, col, refresh):
    if P[P_CMDLOG] == 0:
        return
    n = G[G_NLOG]
    if n >= cmd_log.shape[0]:
        return
    cmd_log[n, 0] = t
    cmd_log[n, 1] = cmd
    cmd_log[n, 2] = -1 if refresh else ch
    cmd_log[n, 3] = rank
    if cmd == REF:
        cmd_log[n, 4] = -1
        cmd_log[n, 5] = -1
    elif cmd == REFB and P[P_REF_POLICY] == REF_SAME_BANK:
        cmd_log[n, 4] = -1      # same-bank refresh: every bank group
        cmd_log[n, 5] = (bidx - rank * P[P_BANKS]) % P[P_BPG]
    else:
        cmd_log[n, 4] = (bidx - rank * P[P_BANKS]) // P[P_BPG]
        cmd_log[n, 5] = (bidx - rank * P[P_BANKS]) % P[P_BPG]
    cmd_log[n, 6] = row
    cmd_log[n, 7] = col
    cmd_log[n, 8] = ch
    G[G_NLOG] = n + 1


def _make_run_kernel(dramsim3: bool, one_channel: bool = False):
    """The event loop, `run_kernel` below, compiled for every scheduler and page policy
    (`dramsim3` False) or for DRAMsim3's: its scheduler, with open or closed rows (True).
    numba takes a closure's variables as constants, so in that variant the branches of the
    other policies are compiled out and the loop keeps fewer values live (the call of
    _pick_priority and its ~20 array arguments, PAR-BS marking, the early and adaptive
    precharge scans); open and closed rows differ only in the helpers, which read the page
    policy from P. DRAMsim3's configs took 12-33 % less CPU so (whole process, 1M traces:
    benchmarks/RESULTS.md, issue 17, lead, 2026-12-04). numba's cache keys a closure by its
    variables too, so each variant is cached apart.

    `one_channel` (DRAMsim3's policies only) compiles the loop for a memory of one channel:
    the channel index is the constant 0, so every per-channel array's row offset (a
    multiply by a shape LLVM keeps on the stack, for ~50 arrays) folds away, in the tick,
    the completion pops and the front end alike. DDR4's DRAMsim3 configs have one channel:
    10-15 % less kernel CPU on the 1M DDR4 traces (benchmarks/RESULTS.md, issue 17, lead,
    2026-12-07)."""

    @njit(cache=True, nogil=True, _nrt=False)
    def run_kernel(k, s, inp, final, stop_cycle, horizon):
        """Advance the memory system from cycle G[G_CLK] until the input chunk is used up
        (NEED_INPUT; with no input the kernel still runs up to `horizon`, the caller's promise
        that no request arrives earlier), every accepted request has completed after the last
        input (FINISHED), or the stop cycle, a full command log or a full completion buffer is
        reached (PAUSED).

        `k`, `s` and `inp` are the fields of a :class:`Consts`, a :class:`State` and a
        :class:`Chunk` as plain tuples (``tuple(state)``: numba types a plain tuple of arrays in
        its C fast path, a named tuple in Python, 2 us more per call); `final` says the chunk
        ends the trace. The bundles are unpacked once here, in their classes' field order
        (tests/test_simulator_api.py checks the order), so the event loop below works on plain
        local arrays as before."""
        P, TN, TX, TD = k
        (G, CS, C, BK, RK, b_state, b_row, b_hits, b_timing, b_open_since, b_last_conflict,
         b_streak, r_open, faw, faw_n, aw32, aw32_n, refq, q_lb, src_rank, tq_n, tq_addr, tq_isw,
         tq_src, tq_q, cq_n, cq, pr_head, pr_next, pr_addr, pr_added, pr_id, pw_head, pw_next,
         pw_addr, pw_added, pw_id, ring_r_t, ring_r_code, ring_r_lat, ring_f_t, ring_f_code,
         ring_f_lat, hist_r, hist_w, comp_out, cmd_log, scratch) = s
        in_addr, in_isw, in_cyc, in_src, in_id = inp
        n_in = in_addr.shape[0]
        t = G[G_CLK]
        nch = 1 if one_channel else P[P_CHANNELS]
        nranks = P[P_RANKS]
        banks = P[P_BANKS]
        # (the DRAMsim3 variant's policies are constants here: see _make_run_kernel)
        if dramsim3:
            sched = SCHED_DRAMSIM3
            adaptive = False
            early = False
        else:
            sched = P[P_SCHED]
            adaptive = P[P_PAGE] == PAGE_OPEN_ADAPTIVE
            early = P[P_PAGE] == PAGE_EARLY_PRE and P[P_EP_N] > 0
        ref_interval = P[P_REF_INTERVAL]
        track = P[P_TRACK_IDS] != 0
        for ch in range(nch):
            CS[ch, CS_WAKE] = 0
            CS[ch, CS_PWR_FROM] = t
        # the next cycle at which a refresh falls due (t % ref_interval == 0, t > 0)
        next_ref = t - t % ref_interval
        if next_ref < t or t == 0:
            next_ref += ref_interval
        while True:
            if t >= stop_cycle:
                _wake_all(CS, RK, r_open, nch, nranks, t)
                G[G_CLK] = t
                return PAUSED
            if P[P_CMDLOG] != 0 and G[G_NLOG] + 4 * nch >= cmd_log.shape[0]:
                _wake_all(CS, RK, r_open, nch, nranks, t)
                G[G_CLK] = t
                return PAUSED
            if track and G[G_NCOMP_OUT] + 64 + RING >= comp_out.shape[0]:
                _wake_all(CS, RK, r_open, nch, nranks, t)
                G[G_CLK] = t
                return PAUSED
            if G[G_POS] >= n_in and final == 0 and G[G_FRONT_DONE] == 0 and t >= horizon:
                _wake_all(CS, RK, r_open, nch, nranks, t)
                G[G_CLK] = t
                return NEED_INPUT
            event = False
            # ---- 1. completions due at t ----------------------------------------------------
            _pop_completions(G, C, ring_r_t, ring_r_code, ring_r_lat, G_RING_R_HEAD, G_RING_R_N,
                             hist_r, comp_out, track, t, one_channel)
            _pop_completions(G, C, ring_f_t, ring_f_code, ring_f_lat, G_RING_F_HEAD, G_RING_F_N,
                             hist_r, comp_out, track, t, one_channel)
            # ---- 2. controllers ---------------------------------------------------------------
            ref_due = t == next_ref
            if ref_due:
                next_ref += ref_interval
            next_t = INF
            ch = -1
            while True:
                ch += 1
                # a channel whose last tick changed nothing sleeps until its next possible
                # command (CS_MINLB, a pending refresh's ready time), a refresh falling due or
                # a request accepted for it: its ticks before then would change nothing.
                # Sleeping channels are passed over in this inner loop, not by a `continue` of
                # a `for ch in range(nch)`: as a counted loop, LLVM strength-reduces every
                # per-channel array address of the tick into its own induction pointer (~25,
                # kept on the stack) and advances all of them for every channel, asleep or not
                if not ref_due:
                    while ch < nch and CS[ch, CS_WAKE] > t:
                        ch += 1
                if ch >= nch:
                    break
                if one_channel:
                    ch = 0              # (it is: a constant for the compiler)
                ch_event = False
                ch_next = INF
                if ref_due:
                    _refresh_due(P, CS, refq, ch)
                    ch_event = True
                if sched == SCHED_PARBS and CS[ch, CS_NMARKED] == 0:
                    _parbs_mark(P, CS, cq_n, cq, src_rank, scratch, ch)
                issued = 0
                first_rw = False
                for slot in range(2):
                    if slot == 1 and (issued == 0 or P[P_DUAL_CMD] == 0):
                        break
                    cmd = -1
                    bidx = 0
                    row = -1
                    col = -1
                    addr = -1
                    conflict_pre = False
                    if slot == 0 and CS[ch, CS_REFQ_N] > 0:
                        CS[ch, CS_INREF] = 1
                        rc, rv = _refresh_pick(P, CS, refq, b_state, b_timing, ch, t)
                        if rc >= 0:
                            cmd = rc
                            bidx = rv
                        else:
                            ch_next = rv
                    if cmd < 0:
                        if sched == SCHED_DRAMSIM3:
                            q, k, need = _pick_dramsim3(P, CS, C, refq, b_state, b_row, b_hits,
                                                        b_timing, faw, faw_n, aw32, aw32_n, cq_n,
                                                        cq,
                                                        q_lb, ch, t)
                        else:
                            q, k, need = _pick_priority(P, CS, C, refq, b_state, b_row, b_hits,
                                                        b_timing, faw, faw_n, aw32, aw32_n, cq_n,
                                                        cq, src_rank, q_lb,
                                                        ch, t, tq_n, tq_addr, tq_isw, tq_src, tq_q)
                        if q >= 0:
                            cmd = need
                            bidx = cq[ch, q, k, CQ_BANK]
                            row = cq[ch, q, k, CQ_ROW]
                            col = cq[ch, q, k, CQ_COL]
                            addr = cq[ch, q, k, CQ_ADDR]
                            conflict_pre = need == PRE
                            if cmd == RD or cmd == WR:
                                close = False
                                if adaptive or (early and b_streak[ch, bidx] >= P[P_EP_N]):
                                    close = True
                                    for j in range(cq_n[ch, q]):
                                        if j != k and cq[ch, q, j, CQ_BANK] == bidx \
                                                and cq[ch, q, j, CQ_ROW] == row:
                                            close = False
                                            break
                                if close:
                                    cmd = RDP if cmd == RD else WRP
                            if cmd == RD or cmd == WR or cmd == RDP or cmd == WRP:
                                if cq[ch, q, k, CQ_MARK] != 0:
                                    CS[ch, CS_NMARKED] -= 1
                                if cq_n[ch, q] >= P[P_CQ_SIZE]:
                                    # a full command queue frees a slot: the transactions
                                    # waiting for it may move (those waiting for other,
                                    # still full, queues still wait)
                                    CS[ch, CS_TQ_BLOCKED] = 0
                                _erase_cq(cq_n, cq, ch, q, k)
                                _invalidate_q(CS, q_lb, ch, q)
                                CS[ch, CS_CQ_TOTAL] -= 1
                    if cmd < 0:
                        break
                    is_rw = cmd == RD or cmd == WR or cmd == RDP or cmd == WRP
                    if slot == 1:
                        # HBM: a second command only as the other half of a row/column pair
                        if is_rw == first_rw:
                            break
                        C[ch, C_DUAL] += 1
                    rank = _bank_rank(P, bidx)
                    if cmd == RD or cmd == RDP:
                        _complete_read(P, G, CS, pr_head, pr_next, pr_addr, pr_added, pr_id,
                                       ring_r_t, ring_r_code, ring_r_lat, ch, t, addr)
                    elif cmd == WR or cmd == WRP:
                        _complete_write(P, C, CS, pw_head, pw_next, pw_addr, pw_added, hist_w, ch,
                                        t, addr)
                    # statistics before the state update: a column command is a row hit if it is
                    # not the first access since the ACT (DRAMsim3's definition)
                    _command_stats(C, BK, RK, b_hits, b_last_conflict, b_streak, ch, cmd, rank,
                                   bidx, conflict_pre)
                    _command_state(P, CS, BK, RK, b_state, b_row, b_hits, b_open_since,
                                   b_last_conflict, r_open, faw, faw_n, aw32, aw32_n, q_lb, ch, t,
                                   cmd, rank, bidx, row, conflict_pre)
                    _update_timing(P, TN, TX, TD, b_timing, ch, cmd, rank, bidx, t)
                    if P[P_CMDLOG] != 0:
                        _log(P, G, cmd_log, t, cmd, ch, rank, bidx, row, col,
                             cmd == REF or cmd == REFB or (cmd == PRE and not conflict_pre))
                    if cmd == REF or cmd == REFB:
                        _refresh_issued(P, CS, BK, b_timing, q_lb, TN, TX, TD, ch, cmd, rank,
                                        bidx, t)
                    issued += 1
                    first_rw = is_rw
                    ch_event = True
                # (this cycle's power states, after its command, are counted with the cycles
                # after it, at the next command that changes them or on leaving the loop: only
                # the channel's own commands change them)
                if _schedule_transaction(P, CS, C, tq_n, tq_addr, tq_isw, tq_src, tq_q, cq_n,
                                         cq, pr_head, pr_next,
                                         pr_addr, q_lb, b_state, b_row, b_timing, ch):
                    ch_event = True
                if ch_event:
                    event = True
                    CS[ch, CS_WAKE] = t + 1
                else:
                    if CS[ch, CS_MINLB] < ch_next:
                        ch_next = CS[ch, CS_MINLB]
                    CS[ch, CS_WAKE] = ch_next
            # ---- 3. front end: one request a cycle, in order --------------------------------
            pos = G[G_POS]
            if P[P_INTAKE] == INTAKE_PER_CHANNEL:
                nt = _intake_per_channel(P, G, CS, C, tq_n, tq_addr, tq_isw, tq_src, tq_q,
                                         pr_head, pr_next, pr_addr, pr_added, pr_id, pw_head,
                                         pw_next, pw_addr, pw_added, pw_id, ring_f_t, ring_f_code,
                                         ring_f_lat, in_addr, in_isw, in_cyc, in_src, in_id, n_in,
                                         final, t)
                if nt < 0:
                    event = True
                elif nt < next_t:
                    next_t = nt
            elif pos < n_in:
                if in_cyc[pos] <= t:
                    if _accept(P, G, CS, C, tq_n, tq_addr, tq_isw, tq_src, tq_q, pr_head, pr_next,
                               pr_addr, pr_added, pr_id, pw_head, pw_next, pw_addr, pw_added, pw_id,
                               ring_f_t, ring_f_code, ring_f_lat, in_addr[pos], in_isw[pos] != 0,
                               in_src[pos], in_id[pos], t, one_channel):
                        G[G_FRONT_LAG_SUM] += t - in_cyc[pos]
                        G[G_POS] = pos + 1
                        G[G_LAST_ACCEPT] = t
                        event = True
                        if pos + 1 >= n_in and final != 0 and P[P_PHANTOM_EOF] == 0:
                            G[G_FRONT_DONE] = 1
                elif in_cyc[pos] < next_t:
                    next_t = in_cyc[pos]
            elif final != 0 and G[G_FRONT_DONE] == 0:
                # DRAMsim3's end-of-file quirk: one phantom READ of the last address, offered
                # once, the cycle after the last line was accepted
                if P[P_PHANTOM_EOF] != 0 and n_in > 0 and G[G_PHANTOM_DONE] == 0:
                    G[G_PHANTOM_DONE] = 1
                    if _accept_cold(P, G, CS, C, tq_n, tq_addr, tq_isw, tq_src, tq_q, pr_head,
                                    pr_next, pr_addr, pr_added, pr_id, pw_head, pw_next, pw_addr,
                                    pw_added, pw_id, ring_f_t, ring_f_code, ring_f_lat,
                                    in_addr[n_in - 1], False, in_src[n_in - 1], -1, t):
                        G[G_PHANTOM_ADDED] = 1
                        event = True
                G[G_FRONT_DONE] = 1
            # ---- end of run: everything accepted has completed ------------------------------
            if G[G_FRONT_DONE] != 0 and G[G_COMPLETED] == G[G_ACCEPTED]:
                _wake_all(CS, RK, r_open, nch, nranks, t + 1)
                G[G_CLK] = t + 1
                G[G_NUM_CYCLES] = t + 1
                G[G_FINISHED] = 1
                return FINISHED
            if event:
                t += 1
                continue
            if G[G_COMPLETED] < G[G_ACCEPTED] and t - G[G_LAST_COMPLETE] > P[P_WATCHDOG] \
                    and t - G[G_LAST_ACCEPT] > P[P_WATCHDOG]:
                # requests outstanding, yet none completed for a very long time: a policy livelock
                _wake_all(CS, RK, r_open, nch, nranks, t + 1)
                G[G_CLK] = t + 1
                return DEADLOCK
            # ---- idle: jump to the next cycle at which anything can change ------------------
            # (every channel sleeps now: its wake time bounds its next command or refresh step)
            for ch in range(nch):
                if CS[ch, CS_WAKE] < next_t:
                    next_t = CS[ch, CS_WAKE]
            if next_ref < next_t:
                next_t = next_ref
            if G[G_RING_R_N] > 0 and ring_r_t[G[G_RING_R_HEAD]] < next_t:
                next_t = ring_r_t[G[G_RING_R_HEAD]]
            if G[G_RING_F_N] > 0 and ring_f_t[G[G_RING_F_HEAD]] < next_t:
                next_t = ring_f_t[G[G_RING_F_HEAD]]
            if stop_cycle < next_t:
                next_t = stop_cycle
            if G[G_POS] >= n_in and final == 0 and horizon < next_t:
                next_t = horizon
            if next_t >= INF:
                # nothing can ever happen again, yet requests are outstanding
                _wake_all(CS, RK, r_open, nch, nranks, t + 1)
                G[G_CLK] = t + 1
                return DEADLOCK
            if next_t <= t + 1:
                t += 1
                continue
            # (the skipped cycles' power states are counted at the next state change)
            t = next_t

    # a name of its own for each variant: numba names the machine code's symbol (and the
    # cache file) after __qualname__, and the two closures of one function would otherwise
    # share it whenever two processes compiled them (each the first function compiled, uid
    # 1): the library build, which links both, then failed with "multiple definition"
    variant = (VARIANT_DRAMSIM3_1CH if one_channel else VARIANT_DRAMSIM3 if dramsim3
               else VARIANT_GENERAL)
    run_kernel.py_func.__qualname__ = f"run_kernel_{VARIANTS[variant]}"
    return run_kernel


#: the compiled variants of the event loop: the general one (any scheduler and page policy),
#: DRAMsim3's (its scheduler with open or closed rows, DRAMsim3's two row-buffer policies)
#: and DRAMsim3's for one channel, in the order the ahead-of-time library exports them
#: (kernel_variant's indices)
VARIANTS = ("general", "dramsim3", "dramsim3_1ch")
VARIANT_GENERAL, VARIANT_DRAMSIM3, VARIANT_DRAMSIM3_1CH = range(len(VARIANTS))
KERNELS = (_make_run_kernel(False), _make_run_kernel(True), _make_run_kernel(True, True))
#: the event loop for any policy (tests and tools call it directly on a Simulator's bundles)
run_kernel = KERNELS[0]


def kernel_variant(P: np.ndarray) -> int:
    """The index in KERNELS of the kernel that runs a memory with configuration vector P:
    DRAMsim3's when P asks for its scheduler with open or closed rows (its one-channel
    variant for one channel), else the general one."""
    if P[P_SCHED] == SCHED_DRAMSIM3 and (P[P_PAGE] == PAGE_OPEN or P[P_PAGE] == PAGE_CLOSE):
        return VARIANT_DRAMSIM3_1CH if P[P_CHANNELS] == 1 else VARIANT_DRAMSIM3
    return VARIANT_GENERAL


@njit(cache=True, inline='always', _nrt=False)
def _accept(P, G, CS, C, tq_n, tq_addr, tq_isw, tq_src, tq_q, pr_head, pr_next, pr_addr, pr_added,
            pr_id, pw_head, pw_next, pw_addr, pw_added, pw_id, ring_f_t, ring_f_code,
            ring_f_lat, addr, is_write, src, rid, t, one_channel):
    """WillAcceptTransaction + AddTransaction at front-end tick t (controller clock t + 1).
    `one_channel`: the memory has one channel (a compile-time constant: _make_run_kernel)."""
    # the refusals first, from the channel bits alone (most offers of a random trace are
    # refused: its read queue is full); the whole address is decoded for an accepted one
    ch = 0 if one_channel else _channel(P, addr)
    unified = P[P_UNIFIED] != 0
    kind = 0 if (unified or not is_write) else 1
    if tq_n[ch, kind] >= P[P_TQ_SIZE]:
        return False
    if G[G_RING_F_N] >= RING - 1:
        return False
    added = t + 1
    _c, ra, bg, ba, ro, co = _decode(P, addr)
    qidx = ra if P[P_PER_RANK_Q] != 0 else ra * P[P_BANKS] + bg * P[P_BPG] + ba
    # (CS_TQ_BLOCKED stays valid: a transaction accepted joins its queue at the end)
    CS[ch, CS_WAKE] = 0
    code = (rid << CODE_ID_SHIFT) | (ch << CODE_CH_SHIFT)
    if is_write:
        if _count_pending(pw_head, pw_next, pw_addr, ch, addr) == 0:
            if not _insert_pending(CS, CS_PW_FREE, pw_head, pw_next, pw_addr, pw_added, pw_id,
                                   ch, addr, added, rid):
                return False
            n = tq_n[ch, kind]
            tq_addr[ch, kind, n] = addr
            tq_isw[ch, kind, n] = 1
            tq_src[ch, kind, n] = src
            tq_q[ch, kind, n] = qidx
            tq_n[ch, kind] = n + 1
        else:
            C[ch, C_WRITE_MERGES] += 1
        _ring_push(G, ring_f_t, ring_f_code, ring_f_lat, G_RING_F_HEAD, G_RING_F_N, added + 1,
                   code | 1, 1)
        C[ch, C_WRITES_ACCEPTED] += 1
    else:
        if _count_pending(pw_head, pw_next, pw_addr, ch, addr) > 0:
            # served from the write buffer
            _ring_push(G, ring_f_t, ring_f_code, ring_f_lat, G_RING_F_HEAD, G_RING_F_N,
                       added + 1, code, 1)
            C[ch, C_WBUF_HITS] += 1
        else:
            first = _count_pending(pr_head, pr_next, pr_addr, ch, addr) == 0
            if not _insert_pending(CS, CS_PR_FREE, pr_head, pr_next, pr_addr, pr_added, pr_id,
                                   ch, addr, added, rid):
                return False
            if first:
                n = tq_n[ch, kind]
                tq_addr[ch, kind, n] = addr
                tq_isw[ch, kind, n] = 0
                tq_src[ch, kind, n] = src
                tq_q[ch, kind, n] = qidx
                tq_n[ch, kind] = n + 1
            else:
                C[ch, C_READ_MERGES] += 1
        C[ch, C_READS_ACCEPTED] += 1
    G[G_ACCEPTED] += 1
    return True


@njit(cache=True, _nrt=False)
def _accept_cold(P, G, CS, C, tq_n, tq_addr, tq_isw, tq_src, tq_q, pr_head, pr_next, pr_addr,
                 pr_added, pr_id, pw_head, pw_next, pw_addr, pw_added, pw_id, ring_f_t,
                 ring_f_code, ring_f_lat, addr, is_write, src, rid, t):
    """_accept as a call, for rarely taken paths (the phantom read at the end of a trace):
    its code stays out of the event loop."""
    return _accept(P, G, CS, C, tq_n, tq_addr, tq_isw, tq_src, tq_q, pr_head, pr_next, pr_addr,
                   pr_added, pr_id, pw_head, pw_next, pw_addr, pw_added, pw_id, ring_f_t,
                   ring_f_code, ring_f_lat, addr, is_write, src, rid, t, False)


@njit(cache=True, _nrt=False)
def _intake_per_channel(P, G, CS, C, tq_n, tq_addr, tq_isw, tq_src, tq_q, pr_head, pr_next,
                        pr_addr, pr_added, pr_id, pw_head, pw_next, pw_addr, pw_added, pw_id,
                        ring_f_t, ring_f_code, ring_f_lat, in_addr, in_isw, in_cyc, in_src,
                        in_id, n_in, final, t):
    """Per-channel intake at front-end tick t: every channel accepts at most one request, its
    own next one in trace order (CS_INTAKE_POS), if it has arrived and the channel's queue
    takes it; a full queue holds back only that channel. G_POS becomes the first request not
    yet accepted (the smallest channel position). Returns -1 if a request was accepted, else
    the arrival cycle of the earliest request still to come (INF if none)."""
    nch = P[P_CHANNELS]
    accepted = False
    next_t = INF
    for ch in range(nch):
        j = CS[ch, CS_INTAKE_POS]
        if j < G[G_POS]:
            j = G[G_POS]
        # the channel's next request: skip the other channels' requests that have arrived
        while j < n_in and in_cyc[j] <= t:
            c, _ra, _bg, _ba, _ro, _co = _decode(P, in_addr[j])
            if c == ch:
                break
            j += 1
        CS[ch, CS_INTAKE_POS] = j
        if j >= n_in:
            continue
        if in_cyc[j] > t:
            if in_cyc[j] < next_t:
                next_t = in_cyc[j]
            continue
        if _accept(P, G, CS, C, tq_n, tq_addr, tq_isw, tq_src, tq_q, pr_head, pr_next,
                   pr_addr, pr_added, pr_id, pw_head, pw_next, pw_addr, pw_added, pw_id,
                   ring_f_t, ring_f_code, ring_f_lat, in_addr[j], in_isw[j] != 0,
                   in_src[j], in_id[j], t, False):
            G[G_FRONT_LAG_SUM] += t - in_cyc[j]
            G[G_LAST_ACCEPT] = t
            CS[ch, CS_INTAKE_POS] = j + 1
            accepted = True
    lo = n_in
    for ch in range(nch):
        if CS[ch, CS_INTAKE_POS] < lo:
            lo = CS[ch, CS_INTAKE_POS]
    G[G_POS] = lo
    if lo >= n_in and final != 0 and G[G_FRONT_DONE] == 0:
        G[G_FRONT_DONE] = 1
        accepted = True
    return -1 if accepted else next_t
