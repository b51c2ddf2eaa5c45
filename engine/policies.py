"""The controller policies the engine offers, declared once: name, kernel code, description.

``engine.config`` (the allowed values), ``engine.simulator`` (name -> kernel code),
``engine.kernel`` (the codes it branches on) and the command line read these tables; forms
and studies should list :data:`SCHEDULERS`, :data:`PAGE_POLICIES` and :data:`REFRESH_POLICIES`
rather than spelling the names again. A pure module (no numba), cheap to import.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    name: str
    code: int
    doc: str


SCHEDULER_TABLE = (
    Policy("dramsim3", 0, "DRAMsim3's first-ready round robin over the command queues"),
    Policy("fcfs", 1, "first come, first served"),
    Policy("frfcfs", 2, "first ready (row hits), then first come, first served"),
    Policy("parbs", 3, "PAR-BS: batches marked per source and bank, then FR-FCFS"),
)
#: internal: DRAMsim3's round robin picked through the priority path (dynamic bank grouping)
SCHED_DRAMSIM3_RR = 4

PAGE_POLICY_TABLE = (
    Policy("open", 0, "keep the row open until a conflict"),
    Policy("close", 1, "precharge after the last pending hit (DRAMsim3 CLOSE_PAGE)"),
    Policy("open_adaptive", 2, "open, but close when no pending request hits the row"),
    Policy("early_precharge", 3, "open, close early after N pending conflicts"),
)

#: refresh_policy values; the first three in DRAMsim3's RefreshPolicy enum order (the index is
#: DRAMsim3's numeric value); the code is the kernel's
REFRESH_POLICY_TABLE = (
    Policy("RANK_LEVEL_SIMULTANEOUS", 1, "all-bank refresh of every rank at once"),
    Policy("RANK_LEVEL_STAGGERED", 0, "all-bank refresh, ranks in turn"),
    Policy("BANK_LEVEL_STAGGERED", 2, "per-bank refresh, banks in turn"),
    Policy("SAME_BANK_STAGGERED", 3, "DDR5 same-bank refresh (bank b of every bank group)"),
)

SCHEDULERS: tuple[str, ...] = tuple(p.name for p in SCHEDULER_TABLE)
PAGE_POLICIES: tuple[str, ...] = tuple(p.name for p in PAGE_POLICY_TABLE)
REFRESH_POLICIES: tuple[str, ...] = tuple(p.name for p in REFRESH_POLICY_TABLE)
SCHEDULER_CODES = {p.name: p.code for p in SCHEDULER_TABLE}
PAGE_POLICY_CODES = {p.name: p.code for p in PAGE_POLICY_TABLE}
REFRESH_POLICY_CODES = {p.name: p.code for p in REFRESH_POLICY_TABLE}
SCHED_DRAMSIM3, SCHED_FCFS, SCHED_FRFCFS, SCHED_PARBS = (SCHEDULER_CODES[n] for n in SCHEDULERS)
PAGE_OPEN, PAGE_CLOSE, PAGE_OPEN_ADAPTIVE, PAGE_EARLY_PRE = (PAGE_POLICY_CODES[n]
                                                              for n in PAGE_POLICIES)
REF_RANK_STAGGERED = REFRESH_POLICY_CODES["RANK_LEVEL_STAGGERED"]
REF_RANK_SIMULTANEOUS = REFRESH_POLICY_CODES["RANK_LEVEL_SIMULTANEOUS"]
REF_BANK_STAGGERED = REFRESH_POLICY_CODES["BANK_LEVEL_STAGGERED"]
REF_SAME_BANK = REFRESH_POLICY_CODES["SAME_BANK_STAGGERED"]
