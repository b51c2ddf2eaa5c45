"""The Ramulator-2-compatible mode: Ramulator 2.0's memory system, reproduced for its run files.

What :func:`run` reproduces, mechanism by mechanism (Ramulator 2.0 at commit 5e58d25):

* **Front end** (LoadStoreTrace): the main loop runs ``i = 0, 1, ...``; at every iteration
  where ``(i mod F*M) mod M == 0`` the front end offers the current line (re-offered until
  accepted), then the memory system ticks where ``(i mod F*M) mod F == 0`` (F, M: the
  Frontend and MemorySystem clock ratios). The run ends right after the last line is
  accepted; ``cycles`` is the memory clock then.
* **Address mappers** RoBaRaCoCh and ChRaBaRoCo: transaction offset log2(prefetch x channel
  width / 8), column bits log2(columns / prefetch), higher address bits dropped.
* **Generic controller**: read / write buffers that accept while holding at most 32 (33
  entries), a 1568-entry priority buffer, a 32(+1)-entry active buffer; per tick: serve the
  head of the in-order pending-read queue if due; refresh manager; pick (active buffer's
  best if ready; else the priority buffer's head -- if it is not ready nothing is issued;
  else the read or write buffer by write mode: to writes when the write buffer holds more
  than 0.8 x 32 or no read waits, back when fewer than 0.2 x 32 and a read waits); a closing
  command is vetoed while any active-buffer request targets its bank; issue; a request
  whose ACT issued moves to the active buffer; a read's final RD sends it to the pending queue
  with ``depart = clk + read latency``. A read whose address is in the write buffer is
  answered at clk + 1 without entering the read buffer (its latency is counted from
  arrive = -1, as Ramulator does). Row hit / miss / conflict is classified when a request's
  first command issues.
* **FRFCFS**: ready first, then the smallest arrival; ties keep the earlier buffer entry.
* **AllBank refresh**: every nREFI controller cycles (first at nREFI) one all-bank refresh
  per rank, all at once, into the priority buffer; it becomes PREA (if a bank is open) and
  REFab; banks are "Refreshing" until REFab_end, nRFC - 1 cycles after the REFab.
* **Device timing**: every constraint of :mod:`engine.ramulator.specs` kept per node and
  command as Ramulator's ``m_cmd_ready_clk`` and ``m_cmd_history`` (node.h semantics:
  constraints of the target node; sibling constraints on the other nodes of a level).
* **HBM3**: the pseudo-channel is the second node level (RD / WR buses, tRRD, tFAW, tCCD_S
  per pseudo-channel; the only channel-level rule is the 2-cycle ACT that blocks row
  commands); AllBank loops over a "rank" level HBM3 does not have, so nothing is refreshed.
* **LPDDR5**: ACT-1 (bank "Pre-Opened", not an opening command: the request stays in its
  buffer) then ACT-2 (opening: to the active buffer); a bank keeps the set of rows ACT-1 /
  ACT-2 added (Ramulator's ``m_row_state``) until PRE / PREA / RD16A / WR16A; a RD16 / WR16
  on an open row first needs CASRD / CASWR when the rank's synced cycle is < clk, the synced
  cycle being set by CASRD / CASWR / RD16 / WR16 to clk + 4 / 12 / 3 / 11 (Ramulator adds
  the *indices* of nCL, nBL16, nCWL in its timing list, not their values); REFab changes no
  bank state. Stock 2.0 looks up row 0 instead of the requested row (``lpddr5_rowcheck_fix``
  selects the patched build); both of Ramulator's aborts are raised as ``RuntimeError`` with
  its message: "Failed to send refresh!" (the priority buffer overflows behind a PREA vetoed
  forever: the stock deadlock) and "[RowHit::Bank] Invalid bank state ..." (a request whose
  first command is ACT-2).
* **Row policies**: OpenRowPolicy (nothing). ClosedRowPolicy(cap) is not reproduced yet.

Statistics come out under our names and Ramulator's definitions: ``num_cycles`` (memory clock
at the last acceptance), ``num_reads_accepted``, ``average_read_latency`` (summed read latency
of the reads served by then / accepted reads), row hits / misses / conflicts, command counts.
Idle ticks are skipped exactly (to the next cycle at which a command can become ready, a
refresh falls due, a state changes or the front end can be accepted); the pending-read queue
is still served one read a tick.
"""
from __future__ import annotations

import contextlib
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from engine.errors import ConfigError, SimulationError

from .config import RamulatorConfig, load_yaml
from .specs import BANK, BANKGROUP, CHANNEL, RANK, SPECS, DeviceSpec
from .trace import read_loadstore

CLOSED, OPENED, REFRESHING, PREOPENED = 0, 1, 2, 3
READ, WRITE, REFRESH = 0, 1, 2
BUF_MAX = 32                      # ReqBuffer.max_size (enqueue while size <= 32)
PRIORITY_MAX = 512 * 3 + 32
WR_HIGH, WR_LOW = 0.8, 0.2
NEVER = 1 << 62


class RamulatorAbort(SimulationError, RuntimeError):
    """The run reached a state where Ramulator 2.0 itself stops with this message (the
    compatible mode reproduces the abort rather than guessing what Ramulator meant)."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{message} (Ramulator 2.0 stops on this run with the same message; "
                         f"see engine/ramulator/compat.py)")


@dataclass
class _Req:
    addr: int
    av: tuple[int, ...]           # channel, rank, bankgroup, bank, row, column (-1: all)
    kind: int
    final: int
    arrive: int = -1
    depart: int = -1
    command: int = -1
    stat: bool = False
    nodes: tuple[int, ...] = ()   # node index per level down to the first -1 (a cache)


@dataclass
class CompatStats:
    num_cycles: int = 0
    num_reads_accepted: int = 0
    num_writes_accepted: int = 0
    read_latency_sum: int = 0
    row_hits: int = 0
    row_misses: int = 0
    row_conflicts: int = 0
    commands: dict[str, int] = field(default_factory=dict)

    @property
    def average_read_latency(self) -> float:
        return self.read_latency_sum / self.num_reads_accepted if self.num_reads_accepted else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"num_cycles": self.num_cycles, "num_reads_accepted": self.num_reads_accepted,
                "num_writes_accepted": self.num_writes_accepted,
                "average_read_latency": self.average_read_latency,
                "read_latency_sum": self.read_latency_sum, "num_row_hits": self.row_hits,
                "num_row_misses": self.row_misses, "num_row_conflicts": self.row_conflicts,
                "num_act_cmds": self.commands.get("ACT", 0) + self.commands.get("ACT-1", 0),
                "commands": dict(self.commands)}


class _Device:
    """Node timing (ready cycle and history per node and command) and bank states."""

    def __init__(self, spec: DeviceSpec, t: dict[str, int], counts: tuple[int, ...],
                 row0_bug: bool = False) -> None:
        self.spec = spec
        self.row0_bug = row0_bug
        self.cmd = {c: i for i, c in enumerate(spec.commands)}
        n = len(spec.commands)
        ch, ra, bg, ba = counts[:4]
        self.counts = (ch, ra, bg, ba)
        self.sizes = (ch, ch * ra, ch * ra * bg, ch * ra * bg * ba)
        self.scope = [spec.scope[c] for c in spec.commands]
        self.opening = [c in spec.opening for c in spec.commands]
        self.closing = [c in spec.closing for c in spec.commands]
        # constraints by (level, preceding command): list of (following, latency, window, sib)
        self.cons: list[list[list[tuple[int, int, int, bool]]]] = [
            [[] for _ in range(n)] for _ in range(4)]
        window = np.zeros((4, n), np.int64)
        for c in spec.constraints:
            lat = int(c.latency(t))
            for p in c.preceding:
                for f in c.following:
                    self.cons[c.level][self.cmd[p]].append((self.cmd[f], lat, c.window,
                                                            c.sibling))
                if not c.sibling:
                    window[c.level, self.cmd[p]] = max(window[c.level, self.cmd[p]], c.window)
        # plain lists: element access is the hot path
        self.ready = [[[-1] * n for _ in range(sz)] for sz in self.sizes]
        wmax = int(window.max()) or 1
        self.hist = [[[[-1] * wmax for _ in range(n)] for _ in range(sz)] for sz in self.sizes]
        self.window = window.tolist()
        nb = self.sizes[BANK]
        self.state = [CLOSED] * nb
        self.row = [-1] * nb
        self.clk = 0
        self.memo: dict[tuple[int, int], int] = {}
        self.future: list[tuple[int, int, tuple[int, ...]]] = []   # (clk, cmd, av)
        self.rd, self.wr = self.cmd[spec.rd], self.cmd[spec.wr]
        self.act = self.cmd["ACT"] if "ACT" in self.cmd else self.cmd["ACT-1"]
        self.pre = self.cmd["PRE"]
        # LPDDR5: two-step activation, the rows a bank's m_row_state holds (ACT-1 and ACT-2 add
        # their row, PRE clears), WCK2CK sync per rank
        self.act2 = self.cmd[spec.act2] if spec.act2 else -1
        self.rows: list[set[int]] | None = [set() for _ in range(nb)] if spec.act2 else None
        self.sync_after = {self.cmd[k]: v for k, v in spec.cas_sync.items()}
        self.cas = {self.cmd[k]: self.cmd[v] for k, v in spec.cas_cmd.items()}
        self.synced = [-1] * self.sizes[RANK]
        self.refab_state = "REFab_end" in self.cmd    # LPDDR5 / HBM3: REFab changes no state
        self.future_rule = {self.cmd[k]: (self.cmd[v[0]], int(v[1](t)))
                            for k, v in spec.future.items()}

    # node index of level L for address vector av (all ids given)
    def _idx(self, level: int, ids: tuple[int, ...]) -> int:
        i = 0
        for lv in range(level + 1):
            i = i * self.counts[lv] + ids[lv]
        return i

    def _children(self, level: int, ids: tuple[int, ...], av: tuple[int, ...]):
        """ids of the next level's nodes addressed by av below node ids (all if av is -1)."""
        want = av[level + 1]
        if want >= 0:
            return (ids + (want,),)
        return tuple(ids + (k,) for k in range(self.counts[level + 1]))

    def nodes(self, av: tuple[int, ...]) -> tuple[int, ...]:
        out, i = [], 0
        for lv in range(4):
            if av[lv] < 0:
                break
            i = i * self.counts[lv] + av[lv]
            out.append(i)
        return tuple(out)

    def check_ready(self, cmd: int, av: tuple[int, ...], nodes: tuple[int, ...] = ()) -> bool:
        return self.earliest(cmd, av, nodes) <= self.clk

    def earliest(self, cmd: int, av: tuple[int, ...], nodes: tuple[int, ...] = ()) -> int:
        """The first DRAM cycle at which ``cmd`` passes check_ready (node.h walk)."""
        scope = self.scope[cmd]
        depth = min(scope, BANK) + 1
        if len(nodes) >= depth:           # fast path: one node per level
            key = (cmd, nodes[depth - 1])
            r = self.memo.get(key)
            if r is not None:
                return r
            ready = self.ready
            r = -1
            for lv in range(depth):
                x = ready[lv][nodes[lv]][cmd]
                if x > r:
                    r = x
            self.memo[key] = r            # valid until the next command changes timings
            return r

        def walk(level: int, ids: tuple[int, ...]) -> int:
            r = self.ready[level][self._idx(level, ids)][cmd]
            if level == scope or level == BANK:
                return r
            return max([r] + [walk(level + 1, c) for c in self._children(level, ids, av)])
        return walk(CHANNEL, (av[0],))

    def issue(self, cmd: int, av: tuple[int, ...]) -> None:
        clk = self.clk
        self.memo.clear()
        self._timing(CHANNEL, (av[0],), cmd, av, clk)
        self._states(cmd, av)
        rule = self.future_rule.get(cmd)
        if rule is not None:
            self.future.append((clk + rule[1], rule[0], av))

    def _timing(self, level: int, ids: tuple[int, ...], cmd: int, av: tuple[int, ...],
                clk: int) -> None:
        node = self._idx(level, ids)
        ready = self.ready[level][node]
        if av[level] != -1 and ids[level] != av[level]:
            for f, lat, _w, sib in self.cons[level][cmd]:
                if sib and clk + lat > ready[f]:
                    ready[f] = clk + lat
            return
        w = self.window[level][cmd]
        h = self.hist[level][node][cmd]
        if w:
            h[1:w] = h[0:w - 1]
            h[0] = clk
        for f, lat, win, sib in self.cons[level][cmd]:
            if sib:
                continue
            past = h[win - 1]
            if past < 0:
                continue
            if past + lat > ready[f]:
                ready[f] = past + lat
        if level == BANK:
            return
        for k in range(self.counts[level + 1]):
            self._timing(level + 1, ids + (k,), cmd, av, clk)

    def _banks(self, av: tuple[int, ...], level: int) -> list[int]:
        """Bank indices under the node of ``level`` that av addresses."""
        ch, ra, bg, ba = self.counts
        ranks = [av[1]] if level >= RANK and av[1] >= 0 else range(ra)
        out = []
        for r in ranks:
            bgs = [av[2]] if level >= BANKGROUP and av[2] >= 0 else range(bg)
            for g in bgs:
                bas = [av[3]] if level >= BANK and av[3] >= 0 else range(ba)
                for b in bas:
                    out.append(((av[0] * ra + r) * bg + g) * ba + b)
        return out

    def _states(self, cmd: int, av: tuple[int, ...]) -> None:
        name = self.spec.commands[cmd]
        rows = self.rows
        if cmd in self.sync_after:
            self.synced[av[0] * self.counts[1] + av[1]] = self.clk + self.sync_after[cmd]
        if name in ("ACT", "ACT-2"):
            b = self._banks(av, BANK)[0]
            self.state[b], self.row[b] = OPENED, av[4]
            if rows is not None:
                rows[b].add(av[4])
        elif name == "ACT-1":
            b = self._banks(av, BANK)[0]
            self.state[b], self.row[b] = PREOPENED, av[4]
            rows[b].add(av[4])
        elif name in ("PRE", "RDA", "WRA", "RD16A", "WR16A"):
            b = self._banks(av, BANK)[0]
            self.state[b], self.row[b] = CLOSED, -1
            if rows is not None:
                rows[b].clear()
        elif name == "PREA":
            for b in self._banks(av, RANK):
                self.state[b], self.row[b] = CLOSED, -1
                if rows is not None:
                    rows[b].clear()
        elif name == "REFab" and self.refab_state:
            for b in self._banks(av, RANK):
                self.state[b] = REFRESHING
        elif name == "REFab_end":
            for b in self._banks(av, RANK):
                self.state[b] = CLOSED

    def preq(self, final: int, av: tuple[int, ...], nodes: tuple[int, ...] = ()) -> int:
        """get_preq_command: the command a request needs next."""
        if final == self.rd or final == self.wr:
            b = nodes[3] if len(nodes) == 4 else self._banks(av, BANK)[0]
            s = self.state[b]
            if self.rows is not None:          # LPDDR5's RD16 / WR16 prerequisite
                if s == CLOSED:
                    return self.act
                if s == PREOPENED:
                    return self.act2
                if s != OPENED:
                    raise RamulatorAbort("[Preq::Bank] Invalid bank state for an RD/WR command!")
                # stock 2.0 looks up row 0 instead of the requested row (NOTES.md, bug 1)
                if (0 if self.row0_bug else av[4]) not in self.rows[b]:
                    return self.pre
                if self.synced[av[0] * self.counts[1] + av[1]] < self.clk:
                    return self.cas[final]
                return final
            if s == OPENED:
                return final if self.row[b] == av[4] else self.pre
            return self.act
        name = self.spec.commands[final]
        if name == "REFab":
            for b in self._banks(av, RANK):
                s = self.state[b]
                if s == CLOSED:
                    continue
                return final if s == REFRESHING else self.cmd["PREA"]
            return final
        if name in ("RD", "WR"):
            b = self._banks(av, BANK)[0]
            s = self.state[b]
            if s == OPENED:
                return final if self.row[b] == av[4] else self.cmd["PRE"]
            return self.cmd["ACT"]
        return final

    def next_sync(self) -> int:
        """The first cycle at which a rank's WCK2CK sync runs out (preq changes), or NEVER."""
        t = NEVER
        for s in self.synced:
            if s >= self.clk and s + 1 < t:
                t = s + 1
        return t

    def bank_of(self, av: tuple[int, ...]) -> int:
        return self._banks(av, BANK)[0]

    def tick(self) -> bool:
        """DRAM tick: clock + due future actions; True if a state changed."""
        self.clk += 1
        changed = False
        for i in range(len(self.future) - 1, -1, -1):
            when, cmd, av = self.future[i]
            if when == self.clk:
                self._states(cmd, av)
                del self.future[i]
                changed = True
        return changed


class _Controller:
    def __init__(self, ch: int, dev: _Device, ram: RamulatorConfig, stats: CompatStats,
                 log: TextIO | None) -> None:
        self.ch, self.dev, self.stats, self.log = ch, dev, stats, log
        self.clk = 0
        self.pending: deque[_Req] = deque()
        self.active: list[_Req] = []
        self.priority: list[_Req] = []
        self.reads: list[_Req] = []
        self.writes: list[_Req] = []
        self.write_mode = False
        self.read_latency = int(dev.spec.read_latency(ram.timings))
        # AllBank refreshes every rank; without a rank level (HBM3) it refreshes nothing
        self.nrefi = ram.timings.get("nREFI", NEVER) if dev.spec.has_rank else NEVER
        self.next_refresh = self.nrefi
        self.ranks = ram.counts[1]
        self.final = {READ: dev.rd, WRITE: dev.wr, REFRESH: dev.cmd["REFab"]}
        self.vetoed = False

    def send(self, req: _Req) -> bool:
        if req.kind == READ and any(w.addr == req.addr for w in self.writes):
            req.depart = self.clk + 1
            self.pending.append(req)
            return True
        buf = self.reads if req.kind == READ else self.writes
        if len(buf) > BUF_MAX:
            return False
        req.arrive = self.clk
        buf.append(req)
        return True

    def can_accept(self, kind: int, addr: int) -> bool:
        if kind == READ and any(w.addr == addr for w in self.writes):
            return True
        return len(self.reads if kind == READ else self.writes) <= BUF_MAX

    def _serve(self) -> None:
        if self.pending:
            r = self.pending[0]
            if r.depart <= self.clk:
                if r.depart - r.arrive > 1:
                    self.stats.read_latency_sum += r.depart - r.arrive
                self.pending.popleft()

    def _first_ready(self, buf: list[_Req]) -> tuple[_Req | None, bool]:
        """FRFCFS on a buffer kept in arrival order (read / write buffers: entries arrive one
        a cycle, appended): the first ready entry, else the first (oldest) entry."""
        dev = self.dev
        clk = dev.clk
        for r in buf:
            r.command = dev.preq(r.final, r.av, r.nodes)
            if dev.earliest(r.command, r.av, r.nodes) <= clk:
                return r, True
        if buf:
            first = buf[0]
            first.command = dev.preq(first.final, first.av, first.nodes)
            return first, False
        return None, False

    def _best(self, buf: list[_Req]) -> tuple[_Req | None, bool]:
        dev = self.dev
        best, best_ready = None, False
        for r in buf:
            r.command = dev.preq(r.final, r.av, r.nodes)
            ready = dev.earliest(r.command, r.av, r.nodes) <= dev.clk
            if best is None or (ready and not best_ready) or (
                    ready == best_ready and r.arrive < best.arrive):
                best, best_ready = r, ready
        return best, best_ready

    def _pick(self) -> tuple[_Req | None, list[_Req] | None]:
        dev = self.dev
        best, ok = self._best(self.active)
        if best is not None and ok:
            req, buf = best, self.active
        else:
            req, buf = None, None
            if self.priority:
                head = self.priority[0]
                head.command = dev.preq(head.final, head.av, head.nodes)
                if not dev.check_ready(head.command, head.av, head.nodes):
                    return None, None
                req, buf = head, self.priority
            if req is None:
                if not self.write_mode:
                    if len(self.writes) > WR_HIGH * BUF_MAX or not self.reads:
                        self.write_mode = True
                elif len(self.writes) < WR_LOW * BUF_MAX and self.reads:
                    self.write_mode = False
                b = self.writes if self.write_mode else self.reads
                best, ok = self._first_ready(b)
                if best is None or not ok:
                    return None, None
                req, buf = best, b
        if dev.closing[req.command]:
            bank = req.av[:4]
            for a in self.active:
                if all(a.av[i] == bank[i] or a.av[i] == -1 or bank[i] == -1 for i in range(4)):
                    self.vetoed = True
                    return None, None
        return req, buf

    def tick(self) -> bool:
        """One controller tick; True if anything changed (a command, a refresh request)."""
        self.clk += 1
        self.vetoed = False
        self._serve()
        changed = False
        if self.clk == self.next_refresh:
            self.next_refresh += self.nrefi
            for r in range(self.ranks):
                av = (self.ch, r, -1, -1, -1, -1)
                if len(self.priority) > PRIORITY_MAX:
                    raise RamulatorAbort("Failed to send refresh!")
                self.priority.append(_Req(-1, av, REFRESH, self.final[REFRESH],
                                          nodes=self.dev.nodes(av)))
            changed = True
        req, buf = self._pick()
        if req is None:
            return changed
        dev = self.dev
        if not req.stat and req.kind != REFRESH:
            b = req.nodes[3]
            if dev.state[b] == PREOPENED:
                # RowHit::Bank::RDWR knows Closed / Opened / Refreshing only (NOTES.md, bug 2).
                # Ramulator's plugins (its command recorder) see the picked command before the
                # request's statistics are taken, where it stops: the command is in its trace
                self._record(dev.spec.commands[req.command], req.av)
                raise RamulatorAbort("[RowHit::Bank] Invalid bank state for an RD/WR command!")
            if dev.state[b] == OPENED and (req.av[4] in dev.rows[b] if dev.rows is not None
                                           else dev.row[b] == req.av[4]):
                self.stats.row_hits += 1
            elif dev.state[b] == OPENED:
                self.stats.row_conflicts += 1
            else:
                self.stats.row_misses += 1
        req.stat = True
        dev.issue(req.command, req.av)
        name = dev.spec.commands[req.command]
        self.stats.commands[name] = self.stats.commands.get(name, 0) + 1
        self._record(name, req.av)
        if req.command == req.final:
            if req.kind == READ:
                req.depart = self.clk + self.read_latency
                self.pending.append(req)
            buf.remove(req)
        elif dev.opening[req.command] and len(self.active) <= BUF_MAX:
            self.active.append(req)
            buf.remove(req)
        return True

    def _record(self, name: str, av: tuple[int, ...]) -> None:
        """A command line of the trace, as Ramulator's command recorder writes it."""
        if self.log is not None:
            self.log.write(f"{self.clk}, {name}, {', '.join(map(str, av))}\n")

    def next_event(self) -> int:
        """Earliest controller cycle > clk at which a tick can change anything (exact)."""
        dev = self.dev
        t = self.next_refresh
        cands = list(self.active)
        if self.priority:
            cands.append(self.priority[0])
        else:
            cands += self.writes if self.write_mode else self.reads
            # the write mode may switch at the next tick (sizes changed by this tick)
            cands += self.reads if self.write_mode else self.writes
        # a vetoed pick repeats until something it depends on changes: a candidate becomes
        # ready (those ready already stay ready), a refresh, a state change, a sync expiry
        # (front-end acceptance is checked by the caller); candidates ready now count only
        # when nothing was vetoed
        floor = self.clk if self.vetoed else -1
        for r in cands:
            c = dev.preq(r.final, r.av, r.nodes)
            e = dev.earliest(c, r.av, r.nodes)
            if floor < e < t:
                t = e
        for when, _c, _a in dev.future:
            t = min(t, when)
        t = min(t, dev.next_sync())
        return max(t, self.clk + 1)


def _mapper(ram: RamulatorConfig):
    counts = list(ram.counts)
    bits = [max(0, (c - 1).bit_length()) if c > 1 else 0 for c in counts]
    bits[-1] -= max(0, (ram.prefetch - 1).bit_length())
    offset = (ram.prefetch * ram.channel_width // 8).bit_length() - 1

    def apply(addr: int) -> tuple[int, ...]:
        a = addr >> offset
        av = [0] * 6
        if ram.mapper == "ChRaBaRoCo":
            for i in range(5, -1, -1):
                av[i] = a & ((1 << bits[i]) - 1)
                a >>= bits[i]
        else:   # RoBaRaCoCh: channel, column, then rank .. row from the LSB up
            for i in [0, 5, 1, 2, 3, 4]:
                av[i] = a & ((1 << bits[i]) - 1)
                a >>= bits[i]
        return tuple(av)
    return apply


def recorder_paths(base: str | os.PathLike[str], channels: int) -> list[Path]:
    """The command-trace files of a run, one a channel, as Ramulator 2's recorder names
    them: PATH.ch0, PATH.ch1 ..."""
    return [Path(f"{base}.ch{c}") for c in range(channels)]


def run(config: str | os.PathLike[str] | RamulatorConfig, trace: str | os.PathLike[str], *,
        cmd_trace: str | os.PathLike[str] | None = None,
        lpddr5_rowcheck_fix: bool = False) -> CompatStats:
    """Run a Ramulator 2 YAML run file on a LoadStoreTrace the way Ramulator 2.0 does.

    LPDDR5: by default as stock 2.0 (its RD16 / WR16 prerequisite looks up row 0, so a bank
    that opened another row deadlocks the channel: ``RuntimeError("Failed to send
    refresh!")`` once the priority buffer overflows); ``lpddr5_rowcheck_fix=True`` runs it as
    the build patched with ``lp5fix/lpddr5_rowcheck.patch`` (the requested row). Both raise
    ``RuntimeError`` where Ramulator exits with "Invalid bank state" (a request whose first
    command is ACT-2)."""
    ram = config if isinstance(config, RamulatorConfig) else load_yaml(config)
    spec = SPECS.get(ram.standard)
    if spec is None:
        raise ConfigError(f"MemorySystem.DRAM.impl = {ram.standard}: the Ramulator-compatible "
                          f"mode reproduces {', '.join(SPECS)} only", path=ram.path,
                          key="MemorySystem.DRAM.impl")
    if ram.row_policy != "OpenRowPolicy":
        raise ConfigError(f"MemorySystem.Controller.RowPolicy.impl = {ram.row_policy}: the "
                          "Ramulator-compatible mode reproduces OpenRowPolicy only",
                          path=ram.path, key="MemorySystem.Controller.RowPolicy.impl")
    if ram.scheduler != "FRFCFS":
        raise ConfigError(f"Scheduler {ram.scheduler}: the Ramulator-compatible mode "
                          "reproduces FRFCFS only", path=ram.path,
                          key="MemorySystem.Controller.Scheduler.impl")
    if ram.standard == "DDR5" and "RFM" not in ram.groups:
        # DDR5.cpp reads its RFM parameters at setup (NOTES.md): without the group 2.0 stops
        raise RamulatorAbort('ParamGroup "RFM" is not specified (MemorySystem.DRAM needs an '
                             'RFM group, e.g. RFM: {BRC: 2})')
    tr = read_loadstore(trace)
    apply = _mapper(ram)
    stats = CompatStats()
    dev = _Device(spec, ram.timings, ram.counts,
                  row0_bug=ram.standard == "LPDDR5" and not lpddr5_rowcheck_fix)
    logs: list[TextIO | None] = [None] * ram.counts[0]
    abort: RamulatorAbort | None = None
    # the command traces are written beside their files and moved onto them at the end (or
    # at Ramulator's own stop, whose recorder keeps what it wrote); an interrupt or an error
    # leaves the earlier files as they were and no partial one
    with contextlib.ExitStack() as replace:
        if cmd_trace is not None:
            from engine.fileio import atomic_path
            from engine.simulator import warn_stale_cmd_traces
            base = Path(cmd_trace)
            names = recorder_paths(base, ram.counts[0])
            warn_stale_cmd_traces(base, names)
            logs = [open(replace.enter_context(atomic_path(f)), "w", encoding="ascii")
                    for f in names]
        ctrls = [_Controller(c, dev, ram, stats, logs[c]) for c in range(ram.counts[0])]
        F, M = ram.frontend_ratio, ram.memory_ratio
        mult = F * M
        n = len(tr.addr)
        pos = 0
        i = 0
        clk = 0
        try:
            while True:
                accepted = False
                if (i % mult) % M == 0:
                    addr = int(tr.addr[pos])
                    kind = WRITE if tr.is_write[pos] else READ
                    av = apply(addr)
                    ctl = ctrls[av[0]]
                    if ctl.send(_Req(addr, av, kind, ctl.final[kind], nodes=dev.nodes(av))):
                        accepted = True
                        if kind == READ:
                            stats.num_reads_accepted += 1
                        else:
                            stats.num_writes_accepted += 1
                        pos += 1
                if pos >= n:
                    break
                if (i % mult) % F == 0:
                    changed = dev.tick()
                    clk += 1
                    for ctl in ctrls:
                        changed |= ctl.tick()
                    if not changed and not accepted and F == 1:
                        # skip ticks in which nothing can happen: the next command-ready cycle,
                        # refresh, state change or accepted offer; still serve one read a tick
                        nxt = min(c.next_event() for c in ctrls)
                        addr = int(tr.addr[pos])
                        kind = WRITE if tr.is_write[pos] else READ
                        if ctrls[apply(addr)[0]].can_accept(kind, addr):
                            nxt = min(nxt, clk + 1 + (-(i + 1)) % M)
                        blocked = not ctrls[apply(addr)[0]].can_accept(kind, addr)
                        while clk + 1 < nxt:
                            if blocked and not any(c.pending for c in ctrls):
                                # nothing to serve and the offer is refused until a command
                                # issues: jump (a deadlocked LPDDR5 channel waits here)
                                d = nxt - 1 - clk
                                i += d
                                dev.clk += d
                                clk += d
                                for ctl in ctrls:
                                    ctl.clk += d
                                break
                            # iteration i+1 at memory clock clk+1: a tick with no command
                            i += 1
                            if (i % mult) % M == 0 and \
                                    ctrls[apply(addr)[0]].can_accept(kind, addr):
                                i -= 1
                                break
                            dev.clk += 1
                            clk += 1
                            for ctl in ctrls:
                                ctl.clk += 1
                                ctl._serve()
                i += 1
        except RamulatorAbort as exc:
            abort = exc
        finally:
            for f in logs:
                if f is not None:
                    f.close()
    if abort is not None:
        raise abort
    stats.num_cycles = clk
    return stats
