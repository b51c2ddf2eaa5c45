"""Ramulator 2.0's device models (commit 5e58d25) as data, for the Ramulator-compatible mode.

Each spec lists the levels that are nodes (channel, rank, bank group, bank; rows and columns
are indices), the commands with the level they address and whether they open / close a row,
the requests and their final commands, and the timing constraints as Ramulator declares them:
``(level, preceding commands, following commands, latency, window, sibling)`` -- a constraint
at level L holds for the node of level L the preceding command addressed (``sibling``: for
the *other* nodes of that level), ``window`` n counts from the n-th last preceding command
(tFAW: 4). Latencies are functions of the timing values (``t["nCL"]`` ...). Facts from
``src/dram/impl/DDR4.cpp``, ``DDR5.cpp``, ``HBM3.cpp`` and ``LPDDR5.cpp``; written down here, not translated code.
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
    #: the final commands of read and write requests (LPDDR5: RD16 / WR16)
    rd: str = "RD"
    wr: str = "WR"
    #: AllBank refresh loops over the "rank" level; standards without one (HBM2 / HBM3: the
    #: second level is the pseudo-channel) get no refresh at all
    has_rank: bool = True
    #: LPDDR5's two-step activation (ACT-1 -> bank "Pre-Opened", ACT-2 -> "Opened")
    act2: str = ""
    #: LPDDR5's WCK2CK sync: command -> cycles after issue until which the rank stays synced
    #: (``m_final_synced_cycle = clk + m_timings["nCL"] + ...``: Ramulator adds the *indices*
    #: of the timing names in its timing list -- nBL16 = 1, nCL = 2, nCWL = 10 -- not their
    #: values); a RD16 / WR16 needs its CASRD / CASWR first when the rank's synced cycle < clk
    cas_sync: Mapping[str, int] = field(default_factory=dict)
    cas_cmd: Mapping[str, str] = field(default_factory=dict)   # final -> its sync command


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

_HBM3_CMDS = ("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REFab", "REFsb", "RFMab", "RFMsb")
HBM3 = DeviceSpec(
    # src/dram/impl/HBM3.cpp: levels channel, pseudochannel, bankgroup, bank (the pseudo-channel
    # sits in our second node level); the RD / WR buses are per pseudo-channel; REFab / PREA
    # address the channel; no rank level, so AllBank refreshes nothing
    name="HBM3",
    commands=_HBM3_CMDS,
    scope={"ACT": ROW, "PRE": BANK, "PREA": CHANNEL, "RD": COLUMN, "WR": COLUMN,
           "RDA": COLUMN, "WRA": COLUMN, "REFab": CHANNEL, "REFsb": BANK, "RFMab": CHANNEL,
           "RFMsb": BANK},
    opening=frozenset({"ACT"}),
    closing=frozenset({"PRE", "PREA", "RDA", "WRA"}),
    read_latency=lambda t: t["nCL"] + t["nBL"],
    has_rank=False,
    constraints=(
        # two-cycle ACT (row commands only) on the channel
        _c(CHANNEL, "ACT", "ACT PRE PREA REFab REFsb RFMab RFMsb", lambda t: 2),
        # pseudo-channel (declared there twice for ACT -> ACT: kept, it changes nothing)
        _c(RANK, "ACT", "ACT", lambda t: t["nRRDS"]),
        _c(RANK, "ACT", "ACT", lambda t: t["nFAW"], window=4),
        _c(RANK, "ACT", "REFsb RFMsb", lambda t: t["nRRDS"] + 1),
        _c(RANK, "REFsb RFMsb", "REFsb RFMsb", lambda t: t["nRREFD"]),
        _c(RANK, "REFsb RFMsb", "ACT", lambda t: t["nRREFD"] - 1),
        _c(RANK, "RD RDA", "RD RDA", lambda t: t["nBL"]),
        _c(RANK, "WR WRA", "WR WRA", lambda t: t["nBL"]),
        _c(RANK, "RD RDA", "RD RDA", lambda t: t["nCCDS"]),
        _c(RANK, "WR WRA", "WR WRA", lambda t: t["nCCDS"]),
        _c(RANK, "RD RDA", "WR WRA", lambda t: t["nCL"] + t["nBL"] + 2 - t["nCWL"]),
        _c(RANK, "WR WRA", "RD RDA", lambda t: t["nCWL"] + t["nBL"] + t["nWTRS"]),
        _c(RANK, "RD", "PREA", lambda t: t["nRTPS"]),
        _c(RANK, "WR", "PREA", lambda t: t["nCWL"] + t["nBL"] + t["nWR"]),
        _c(RANK, "ACT", "ACT", lambda t: t["nRRDS"]),
        _c(RANK, "ACT", "ACT", lambda t: t["nFAW"], window=4),
        _c(RANK, "ACT", "PREA", lambda t: t["nRAS"]),
        _c(RANK, "PREA", "ACT", lambda t: t["nRP"]),
        _c(RANK, "ACT", "REFab RFMab", lambda t: t["nRC"]),
        _c(RANK, "PRE PREA", "REFab RFMab", lambda t: t["nRP"]),
        _c(RANK, "RDA", "REFab RFMab", lambda t: t["nRP"] + t["nRTPS"]),
        _c(RANK, "WRA", "REFab RFMab", lambda t: t["nCWL"] + t["nBL"] + t["nWR"] + t["nRP"]),
        _c(RANK, "REFab RFMab", "ACT REFsb RFMsb", lambda t: t["nRFC"]),
        _c(BANKGROUP, "RD RDA", "RD RDA", lambda t: t["nCCDL"]),
        _c(BANKGROUP, "WR WRA", "WR WRA", lambda t: t["nCCDL"]),
        _c(BANKGROUP, "WR WRA", "RD RDA", lambda t: t["nCWL"] + t["nBL"] + t["nWTRL"]),
        _c(BANKGROUP, "ACT", "ACT", lambda t: t["nRRDL"]),
        _c(BANKGROUP, "ACT", "REFsb RFMsb", lambda t: t["nRRDL"] + 1),
        _c(BANKGROUP, "REFsb RFMsb", "ACT", lambda t: t["nRRDL"] - 1),
        _c(BANK, "RD", "PRE", lambda t: t["nRTPS"]),
        _c(BANK, "ACT", "ACT", lambda t: t["nRC"]),
        _c(BANK, "ACT", "RD RDA", lambda t: t["nRCDRD"]),
        _c(BANK, "ACT", "WR WRA", lambda t: t["nRCDWR"]),
        _c(BANK, "ACT", "PRE", lambda t: t["nRAS"]),
        _c(BANK, "PRE", "ACT", lambda t: t["nRP"]),
        _c(BANK, "RD", "PRE", lambda t: t["nRTPL"]),
        _c(BANK, "WR", "PRE", lambda t: t["nCWL"] + t["nBL"] + t["nWR"]),
        _c(BANK, "RDA", "ACT REFsb RFMsb", lambda t: t["nRTPL"] + t["nRP"]),
        _c(BANK, "WRA", "ACT REFsb RFMsb", lambda t: t["nCWL"] + t["nBL"] + t["nWR"] + t["nRP"]),
    ))

_LP5_CMDS = ("ACT-1", "ACT-2", "PRE", "PREA", "CASRD", "CASWR", "RD16", "WR16", "RD16A",
             "WR16A", "REFab", "REFpb", "RFMab", "RFMpb")
LPDDR5 = DeviceSpec(
    # src/dram/impl/LPDDR5.cpp. Our timing keys: nBL = nBL16, nCCDS = nCCD, nRRDS = nRRD,
    # nRP = nRPpb, nRFC = nRFCab (engine.ramulator.presets). ACT-2, CASRD and CASWR have no
    # constraints; REFab has no state action (banks stay Closed, no REFab_end)
    name="LPDDR5",
    commands=_LP5_CMDS,
    scope={"ACT-1": ROW, "ACT-2": ROW, "PRE": BANK, "PREA": RANK, "CASRD": RANK,
           "CASWR": RANK, "RD16": COLUMN, "WR16": COLUMN, "RD16A": COLUMN, "WR16A": COLUMN,
           "REFab": RANK, "REFpb": RANK, "RFMab": RANK, "RFMpb": RANK},
    opening=frozenset({"ACT-2"}),
    closing=frozenset({"PRE", "PREA", "RD16A", "WR16A"}),
    read_latency=lambda t: t["nCL"] + t["nBL"],
    rd="RD16", wr="WR16", act2="ACT-2",
    cas_sync={"CASRD": 2 + 1 + 1, "CASWR": 10 + 1 + 1, "RD16": 2 + 1, "WR16": 10 + 1},
    cas_cmd={"RD16": "CASRD", "WR16": "CASWR"},
    constraints=(
        _c(CHANNEL, "RD16 RD16A", "RD16 RD16A", lambda t: t["nBL"]),
        _c(CHANNEL, "WR16 WR16A", "WR16 WR16A", lambda t: t["nBL"]),
        _c(RANK, "RD16 RD16A", "RD16 RD16A", lambda t: t["nCCDS"]),
        _c(RANK, "WR16 WR16A", "WR16 WR16A", lambda t: t["nCCDS"]),
        _c(RANK, "RD16 RD16A", "WR16 WR16A", lambda t: t["nCL"] + t["nBL"] + 2 - t["nCWL"]),
        _c(RANK, "WR16 WR16A", "RD16 RD16A", lambda t: t["nCWL"] + t["nBL"] + t["nWTRS"]),
        _c(RANK, "RD16 RD16A", "RD16 RD16A WR16 WR16A", lambda t: t["nBL"] + t["nCS"],
           sibling=True),
        _c(RANK, "WR16 WR16A", "RD16 RD16A",
           lambda t: t["nCL"] + t["nBL"] + t["nCS"] - t["nCWL"], sibling=True),
        _c(RANK, "RD16", "PREA", lambda t: t["nRTP"]),
        _c(RANK, "WR16", "PREA", lambda t: t["nCWL"] + t["nBL"] + t["nWR"]),
        _c(RANK, "ACT-1", "ACT-1 REFpb", lambda t: t["nRRDS"]),
        _c(RANK, "ACT-1", "ACT-1", lambda t: t["nFAW"], window=4),
        _c(RANK, "ACT-1", "PREA", lambda t: t["nRAS"]),
        _c(RANK, "PREA", "ACT-1", lambda t: t["nRPab"]),
        _c(RANK, "ACT-1", "REFab", lambda t: t["nRC"]),
        _c(RANK, "PRE", "REFab", lambda t: t["nRP"]),
        _c(RANK, "PREA", "REFab", lambda t: t["nRPab"]),
        _c(RANK, "RD16A", "REFab", lambda t: t["nRP"] + t["nRTP"]),
        _c(RANK, "WR16A", "REFab", lambda t: t["nCWL"] + t["nBL"] + t["nWR"] + t["nRP"]),
        _c(RANK, "REFab", "REFab ACT-1 REFpb", lambda t: t["nRFC"]),
        _c(RANK, "ACT-1", "REFpb", lambda t: t["nPBR2ACT"]),
        _c(RANK, "REFpb", "REFpb", lambda t: t["nPBR2PBR"]),
        _c(BANKGROUP, "RD16 RD16A", "RD16 RD16A", lambda t: t["nCCDS"]),
        _c(BANKGROUP, "WR16 WR16A", "WR16 WR16A", lambda t: t["nCCDS"]),
        _c(BANKGROUP, "WR16 WR16A", "RD16 RD16A", lambda t: t["nCWL"] + t["nBL"] + t["nWTRL"]),
        _c(BANKGROUP, "ACT-1", "ACT-1", lambda t: t["nRRDS"]),
        _c(BANK, "ACT-1", "ACT-1", lambda t: t["nRC"]),
        _c(BANK, "ACT-1", "RD16 RD16A WR16 WR16A", lambda t: t["nRCD"]),
        _c(BANK, "ACT-1", "PRE", lambda t: t["nRAS"]),
        _c(BANK, "PRE", "ACT-1", lambda t: t["nRP"]),
        _c(BANK, "RD16", "PRE", lambda t: t["nRTP"]),
        _c(BANK, "WR16", "PRE", lambda t: t["nCWL"] + t["nBL"] + t["nWR"]),
        _c(BANK, "RD16A", "ACT-1", lambda t: t["nRTP"] + t["nRP"]),
        _c(BANK, "WR16A", "ACT-1", lambda t: t["nCWL"] + t["nBL"] + t["nWR"] + t["nRP"]),
    ))

SPECS = {"DDR4": DDR4, "DDR5": DDR5, "HBM3": HBM3, "LPDDR5": LPDDR5}
