"""Ramulator 2.0's device models (commit 5e58d25) as data, for the Ramulator-compatible mode.

Each spec lists the levels that are nodes (channel, rank, bank group, bank; rows and columns
are indices), the commands with the level they address and whether they open / close a row,
the requests and their final commands, and the timing constraints as Ramulator declares them:
``(level, preceding commands, following commands, latency, window, sibling)`` -- a constraint
at level L holds for the node of level L the preceding command addressed (``sibling``: for
the *other* nodes of that level), ``window`` n counts from the n-th last preceding command
(tFAW: 4). Latencies are functions of the timing values (``t["nCL"]`` ...). Facts from
``src/dram/impl/DDR4.cpp`` and ``DDR5.cpp``; written down here, not translated code.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

CHANNEL, RANK, BANKGROUP, BANK, ROW, COLUMN = range(6)
LEVEL_NAMES = ("channel", "rank", "bankgroup", "bank", "row", "column")

Latency = Callable[[Mapping[str, int]], int]


@dataclass(frozen=True)
class Cons:
    level: int
    preceding: tuple[str, ...]
    following: tuple[str, ...]
    latency: Latency
    window: int = 1
    sibling: bool = False


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    commands: tuple[str, ...]
    scope: Mapping[str, int]             # command -> level it addresses
    opening: frozenset[str]
    closing: frozenset[str]
    constraints: tuple[Cons, ...]
    read_latency: Latency
    #: command -> (follow-up command applied as a state change, delay after issue)
    future: Mapping[str, tuple[str, Latency]] = field(default_factory=dict)


def _c(level, pre, fol, lat, window=1, sibling=False) -> Cons:
    return Cons(level, tuple(pre.split()), tuple(fol.split()), lat, window, sibling)


DDR4 = DeviceSpec(
    name="DDR4",
    commands=("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REFab", "REFab_end"),
    scope={"ACT": ROW, "PRE": BANK, "PREA": RANK, "RD": COLUMN, "WR": COLUMN, "RDA": COLUMN,
           "WRA": COLUMN, "REFab": RANK, "REFab_end": RANK},
    opening=frozenset({"ACT"}),
    closing=frozenset({"PRE", "PREA", "RDA", "WRA", "REFab_end"}),
    read_latency=lambda t: t["nCL"] + t["nBL"],
    future={"REFab": ("REFab_end", lambda t: t["nRFC"] - 1)},
    constraints=(
        _c(CHANNEL, "RD RDA", "RD RDA", lambda t: t["nBL"]),
        _c(CHANNEL, "WR WRA", "WR WRA", lambda t: t["nBL"]),
        _c(RANK, "RD RDA", "RD RDA", lambda t: t["nCCDS"]),
        _c(RANK, "WR WRA", "WR WRA", lambda t: t["nCCDS"]),
        _c(RANK, "RD RDA", "WR WRA", lambda t: t["nCL"] + t["nBL"] + 2 - t["nCWL"]),
        _c(RANK, "WR WRA", "RD RDA", lambda t: t["nCWL"] + t["nBL"] + t["nWTRS"]),
        _c(RANK, "RD RDA", "RD RDA WR WRA", lambda t: t["nBL"] + t["nCS"], sibling=True),
        _c(RANK, "WR WRA", "RD RDA", lambda t: t["nCL"] + t["nBL"] + t["nCS"] - t["nCWL"],
           sibling=True),
        _c(RANK, "RD", "PREA", lambda t: t["nRTP"]),
        _c(RANK, "WR", "PREA", lambda t: t["nCWL"] + t["nBL"] + t["nWR"]),
        _c(RANK, "ACT", "ACT", lambda t: t["nRRDS"]),
        _c(RANK, "ACT", "ACT", lambda t: t["nFAW"], window=4),
        _c(RANK, "ACT", "PREA", lambda t: t["nRAS"]),
        _c(RANK, "PREA", "ACT", lambda t: t["nRP"]),
        _c(RANK, "ACT", "REFab", lambda t: t["nRC"]),
        _c(RANK, "PRE PREA", "REFab", lambda t: t["nRP"]),
        _c(RANK, "RDA", "REFab", lambda t: t["nRP"] + t["nRTP"]),
        _c(RANK, "WRA", "REFab", lambda t: t["nCWL"] + t["nBL"] + t["nWR"] + t["nRP"]),
        _c(RANK, "REFab", "ACT PREA", lambda t: t["nRFC"]),
        _c(BANKGROUP, "RD RDA", "RD RDA", lambda t: t["nCCDL"]),
        _c(BANKGROUP, "WR WRA", "WR WRA", lambda t: t["nCCDL"]),
        _c(BANKGROUP, "WR WRA", "RD RDA", lambda t: t["nCWL"] + t["nBL"] + t["nWTRL"]),
        _c(BANKGROUP, "ACT", "ACT", lambda t: t["nRRDL"]),
        _c(BANK, "ACT", "ACT", lambda t: t["nRC"]),
        _c(BANK, "ACT", "RD RDA WR WRA", lambda t: t["nRCD"]),
        _c(BANK, "ACT", "PRE", lambda t: t["nRAS"]),
        _c(BANK, "PRE", "ACT", lambda t: t["nRP"]),
        _c(BANK, "RD", "PRE", lambda t: t["nRTP"]),
        _c(BANK, "WR", "PRE", lambda t: t["nCWL"] + t["nBL"] + t["nWR"]),
        _c(BANK, "RDA", "ACT", lambda t: t["nRTP"] + t["nRP"]),
        _c(BANK, "WRA", "ACT", lambda t: t["nCWL"] + t["nBL"] + t["nWR"] + t["nRP"]),
    ))

_DDR5_CMDS = ("ACT", "PRE", "PREA", "PREsb", "RD", "WR", "RDA", "WRA", "REFab", "REFsb",
              "REFab_end", "REFsb_end")
DDR5 = DeviceSpec(
    name="DDR5",
    commands=_DDR5_CMDS,
    scope={"ACT": ROW, "PRE": BANK, "PREA": RANK, "PREsb": BANK, "RD": COLUMN, "WR": COLUMN,
           "RDA": COLUMN, "WRA": COLUMN, "REFab": RANK, "REFsb": BANK, "REFab_end": RANK,
           "REFsb_end": BANK},
    opening=frozenset({"ACT"}),
    closing=frozenset({"PRE", "PREA", "PREsb", "RDA", "WRA", "REFab_end", "REFsb_end"}),
    read_latency=lambda t: t["nCL"] + t["nBL"],
    future={"REFab": ("REFab_end", lambda t: t["nRFC1"] - 1),
            "REFsb": ("REFsb_end", lambda t: t["nRFCsb"] - 1)},
    constraints=(
        # two-cycle commands: nothing else on the channel in the next cycle
        _c(CHANNEL, "ACT RD RDA WR WRA", " ".join(_DDR5_CMDS), lambda t: 2),
        _c(CHANNEL, "RD RDA", "RD RDA", lambda t: t["nBL"]),
        _c(CHANNEL, "WR WRA", "WR WRA", lambda t: t["nBL"]),
        _c(RANK, "RD RDA", "RD RDA", lambda t: t["nCCDS"]),
        _c(RANK, "WR WRA", "WR WRA", lambda t: t["nCCDS_WR"]),
        _c(RANK, "RD RDA", "WR WRA", lambda t: t["nCL"] + t["nBL"] + 2 - t["nCWL"] + 2),
        _c(RANK, "WR WRA", "RD RDA", lambda t: t["nCCDS_WTR"]),
        _c(RANK, "RD RDA", "RD RDA WR WRA", lambda t: t["nBL"] + t["nCS"], sibling=True),
        _c(RANK, "WR WRA", "RD RDA", lambda t: t["nCL"] + t["nBL"] + t["nCS"] - t["nCWL"],
           sibling=True),
        _c(RANK, "RD", "PREA", lambda t: t["nRTP"]),
        _c(RANK, "WR", "PREA", lambda t: t["nCWL"] + t["nBL"] + t["nWR"]),
        _c(RANK, "ACT", "ACT", lambda t: t["nRRDS"]),
        _c(RANK, "ACT", "ACT", lambda t: t["nFAW"], window=4),
        _c(RANK, "ACT", "PREA", lambda t: t["nRAS"]),
        _c(RANK, "PREA", "ACT", lambda t: t["nRP"]),
        _c(RANK, "ACT", "REFab", lambda t: t["nRC"]),
        _c(RANK, "PRE PREsb", "REFab", lambda t: t["nRP"]),
        _c(RANK, "PREA", "REFab REFsb", lambda t: t["nRP"]),
        _c(RANK, "RDA", "REFab", lambda t: t["nRP"] + t["nRTP"]),
        _c(RANK, "WRA", "REFab", lambda t: t["nCWL"] + t["nBL"] + t["nWR"] + t["nRP"]),
        _c(RANK, "REFab", "ACT PREA REFab REFsb", lambda t: t["nRFC1"]),
        _c(RANK, "REFsb", "PREA REFab", lambda t: t["nRFCsb"]),
        _c(BANKGROUP, "RD RDA", "RD RDA", lambda t: t["nCCDL"]),
        _c(BANKGROUP, "WR WRA", "WR WRA", lambda t: t["nCCDL_WR"]),
        _c(BANKGROUP, "WR WRA", "RD RDA", lambda t: t["nCCDL_WTR"]),
        _c(BANKGROUP, "ACT", "ACT", lambda t: t["nRRDL"]),
        _c(BANK, "ACT", "ACT REFsb", lambda t: t["nRC"]),
        _c(BANK, "ACT", "RD RDA WR WRA", lambda t: t["nRCD"]),
        _c(BANK, "ACT", "PRE PREsb", lambda t: t["nRAS"]),
        _c(BANK, "PRE PREsb", "ACT REFsb", lambda t: t["nRP"]),
        _c(BANK, "RD", "PRE PREsb", lambda t: t["nRTP"]),
        _c(BANK, "WR", "PRE PREsb", lambda t: t["nCWL"] + t["nBL"] + t["nWR"]),
        _c(BANK, "RDA", "ACT REFsb", lambda t: t["nRTP"] + t["nRP"]),
        _c(BANK, "WRA", "ACT REFsb", lambda t: t["nCWL"] + t["nBL"] + t["nWR"] + t["nRP"]),
        _c(BANK, "WR", "RDA", lambda t: t["nCWL"] + t["nBL"] + t["nWR"] - t["nRTP"]),
    ))

SPECS = {"DDR4": DDR4, "DDR5": DDR5}
