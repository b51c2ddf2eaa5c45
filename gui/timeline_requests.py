"""Request lifetimes for the command timeline (Qt-free): which request each RD / WR command of
a recorded command trace served, and so when that request arrived and when its data moved.

The command trace (DRAMsim3's format) does not name requests, but a column command names the
exact location it reads or writes (channel, rank, bank group, bank, row, column), and the trace
names each request's address, which the config's address mapping decodes into the same fields
(:func:`engine.address.decode`, the engine's own decoder).  A column command is
matched to the earliest-arrived, still unserved request of its direction to that location that
arrived no later than the command (requests to one location are interchangeable for this).
A read that arrives while a write to its location waits in the write queue is answered from that
queue without a command (as DRAMsim3 does): it is marked ``forwarded`` and never matched.

Times are memory-clock cycles: a read's data is back ``read_delay`` (RL + BL/2) cycles after
its RD, a write's data is on the bus ``write_delay`` (WL + BL/2) after its WR.  A lifetime
counts from the request's cycle in the trace; the engine's (DRAMsim3's) read latency counts from
the controller's acceptance, one cycle later when the queue has room (later when it is full).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from engine.address import decode as engine_decode


@dataclass(frozen=True)
class Lifetime:
    """One request, as the timeline's hover shows it (cycles of the memory clock)."""

    address: int
    is_write: bool
    arrival: int
    issued: int             # its RD / WR command
    done: int               # read: data returned; write: data written

    @property
    def queued(self) -> int:
        return self.issued - self.arrival

    @property
    def latency(self) -> int:
        """Cycles from the request (its cycle in the trace) to its data."""
        return self.done - self.arrival


@dataclass
class Matching:
    """The requests each RD / WR served (more than one when requests to one location were
    merged), by (channel, line of the command trace)."""

    by_line: dict[tuple[int, int], list[Lifetime]]   # (channel, line) -> served requests
    matched: int = 0
    column_commands: int = 0
    unmatched_commands: int = 0  # RD / WR that found no request of theirs by arrival order
    forwarded: int = 0          # reads answered from the write queue (no command)
    pending: int = 0            # requests that arrived but were not served by the window's end


def decode(cfg: Any, addr: np.ndarray) -> dict[str, np.ndarray]:
    """Address fields (``ch ra bg ba ro co``) of byte addresses under ``cfg``'s mapping: the
    engine's decoder (:func:`engine.address.decode`, the XOR bank interleave included, as
    the command trace prints the bank the kernel decoded)."""
    f = engine_decode(cfg, addr)
    return {k: getattr(f, k) for k in ("ch", "ra", "bg", "ba", "ro", "co")}


def read_requests(trace: str | Path, until: int, **kw: Any
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(addr, cycle, is_write) of the requests of ``trace`` arriving before cycle ``until``
    (keyword arguments go to :func:`engine.trace.iter_trace`, e.g. ``group``)."""
    from engine.trace import iter_trace
    addrs, cycles, writes = [], [], []
    for c in iter_trace(trace, chunk_size=1 << 16, **kw):
        cyc = np.asarray(c.cycle, dtype=np.int64)
        keep = cyc < until
        addrs.append(np.asarray(c.addr, dtype=np.uint64)[keep])
        cycles.append(cyc[keep])
        writes.append(np.asarray(c.is_write, dtype=bool)[keep])
        if len(cyc) and not keep[-1]:
            break
    if not addrs:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, bool)
    return np.concatenate(addrs), np.concatenate(cycles), np.concatenate(writes)


def match(cmds: Sequence[Any], cfg: Any, addr: np.ndarray, cycle: np.ndarray,
          is_write: np.ndarray) -> Matching:
    """Match the column commands of ``cmds`` (sorted by cycle; ``parse_command_trace``
    records with their channel filled in) to the requests (sorted by arrival)."""
    f = decode(cfg, addr)
    keys = list(zip(f.get("ch", np.zeros_like(addr)).tolist(), f["ra"].tolist(),
                    f["bg"].tolist(), f["ba"].tolist(), f["ro"].tolist(), f["co"].tolist()))
    arrival = np.asarray(cycle, dtype=np.int64).tolist()
    writes = np.asarray(is_write, dtype=bool).tolist()
    addresses = np.asarray(addr, dtype=np.uint64).tolist()
    read_done, write_done = int(cfg.read_delay), int(cfg.write_delay)
    # location -> the requests one command will serve (DRAMsim3 merges a request into a
    # pending one of the same direction and address: one RD / WR serves them all)
    pending: dict[tuple[Any, ...], list[int]] = {}
    out = Matching(by_line={})
    i, n = 0, len(arrival)
    for c in cmds:
        if not c.kind.startswith(("read", "write")):
            continue
        while i < n and arrival[i] <= c.cycle:
            k = keys[i]
            if not writes[i] and pending.get((True, k)):
                out.forwarded += 1            # answered from the write queue
            else:
                pending.setdefault((writes[i], k), []).append(i)
            i += 1
        out.column_commands += 1
        w = c.kind.startswith("write")
        group = pending.pop((w, (c.channel, c.rank, c.bankgroup, c.bank, c.row, c.column)), None)
        if not group:
            out.unmatched_commands += 1
            continue
        done = int(c.cycle) + (write_done if w else read_done)
        out.by_line[(c.channel, c.line)] = [
            Lifetime(int(addresses[j]), w, int(arrival[j]), int(c.cycle), done) for j in group]
        out.matched += len(group)
    out.pending = sum(len(q) for q in pending.values()) + (n - i)
    return out


@dataclass
class WindowData:
    """What the timeline draws of one recording: the window's commands (sorted by cycle), with
    the ACT of each row still open when the window starts (its bar begins before the window),
    and the requests matched to the window's RD / WR."""

    cmds: list[Any]
    matching: Matching | None
    note: str = ""                  # why the lifetimes are missing, if they are


def load_window(cmd_trace: str | Path, cfg: Any, window: tuple[int, int],
                trace: str | Path | None) -> WindowData:
    """Read a recording's command trace (one file per channel, see
    :func:`engine.simulator.cmd_trace_paths`), keep what :class:`WindowData` holds and match the
    requests of ``trace``.  Runs off the GUI thread (the trace of a late window is long)."""
    import dataclasses

    from engine.jedec_check import parse_command_trace
    from engine.simulator import cmd_trace_paths
    cmds: list[Any] = []
    for i, p in enumerate(cmd_trace_paths(Path(cmd_trace), int(cfg.channels))):
        if p.exists():          # refresh lines carry channel -1: the file says which
            cmds.extend(c if c.channel >= 0 else dataclasses.replace(c, channel=i)
                        for c in parse_command_trace(p))
    cmds.sort(key=lambda c: c.cycle)
    c0, c1 = int(window[0]), int(window[1])
    matching: Matching | None = None
    note = ""
    if trace is not None:
        try:
            matching = match(cmds, cfg, *read_requests(trace, c1))
        except Exception as exc:  # noqa: BLE001 - the timeline still shows the commands
            note = str(exc)
    open_at_start: dict[tuple[int, int, int, int], Any] = {}
    inside: list[Any] = []
    for c in cmds:
        if c.cycle >= c1:
            break
        if c.cycle >= c0:
            inside.append(c)
            continue
        if c.bank < 0 or c.bankgroup < 0:
            continue
        lane = (c.channel, c.rank, c.bankgroup, c.bank)
        if c.kind == "activate":
            open_at_start[lane] = c
        elif c.kind in ("precharge", "read_p", "write_p"):
            open_at_start.pop(lane, None)
    keep = sorted(open_at_start.values(), key=lambda c: c.cycle) + inside
    if matching is not None:
        lines = {(c.channel, c.line) for c in inside}
        matching.by_line = {k: v for k, v in matching.by_line.items() if k in lines}
    return WindowData(keep, matching, note)
