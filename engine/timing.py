"""Command-to-command timing tables, compiled once from a memory configuration.

A table entry says: when command X issues at cycle t, command Y may not issue before t + d in
every bank of scope S. The scopes are the ones a JEDEC controller distinguishes:

    SAME_BANK          the bank X addressed
    SAME_BG            the other banks of X's bank group
    OTHER_BG           the banks of the other bank groups of X's rank
    OTHER_RANK         every bank of the other ranks of the channel
    SAME_RANK          every bank of X's rank (rank commands: REFRESH, self refresh)

The delays are DRAMsim3's derivations (see ../shared/reference/dramsim3/NOTES.md §4), so that
the engine agrees with it, with one deliberate difference: DRAMsim3 never applies tRFCb to the
bank a per-bank refresh addresses (its upstream issue #24); we do.
The numba kernel reads these tables and never re-derives a timing rule.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Command codes, in DRAMsim3's CommandType order.
RD, RDP, WR, WRP, ACT, PRE, REFB, REF, SREFE, SREFX = range(10)
NCMD = 10
COMMAND_NAMES = ("read", "read_p", "write", "write_p", "activate", "precharge",
                 "refresh_bank", "refresh", "self_refresh_enter", "self_refresh_exit")

SAME_BANK, SAME_BG, OTHER_BG, OTHER_RANK, SAME_RANK = range(5)
NSCOPE = 5
SCOPE_NAMES = ("same_bank", "other_banks_same_bankgroup", "other_bankgroups_same_rank",
               "other_ranks", "same_rank")
MAX_RULES = 8


@dataclass(frozen=True)
class TimingTables:
    """Flat rule lists the kernel walks: for (scope, cmd), rules k < count[scope, cmd]."""

    count: np.ndarray   # int64 [NSCOPE, NCMD]
    nxt: np.ndarray     # int64 [NSCOPE, NCMD, MAX_RULES]: the constrained command
    delay: np.ndarray   # int64 [NSCOPE, NCMD, MAX_RULES]: cycles after the issuing command

    def rules(self, scope: int, cmd: int) -> dict[str, int]:
        """The rules of one (scope, command) pair by next-command name (for reports and tests)."""
        n = int(self.count[scope, cmd])
        return {COMMAND_NAMES[int(self.nxt[scope, cmd, k])]: int(self.delay[scope, cmd, k])
                for k in range(n)}


def derived_delays(cfg) -> dict[str, int]:
    """The named inter-command delays of a configuration, in cycles."""
    bc = cfg.burst_cycle
    single_bg = cfg.bankgroups_eff == 1
    tccd_l = cfg.tCCD_S if single_bg else cfg.tCCD_L
    twtr_l = cfg.tWTR_S if single_bg else cfg.tWTR_L
    trrd_l = cfg.tRRD_S if single_bg else cfg.tRRD_L
    gddr_or_hbm = cfg.is_gddr or cfg.is_hbm
    d = {
        "rd_rd_l": max(bc, tccd_l),
        "rd_rd_s": max(bc, cfg.tCCD_S),
        "rd_rd_o": bc + cfg.tRTRS,
        "rd_wr": cfg.RL + bc - cfg.WL + cfg.tRTRS,
        "rd_wr_o": cfg.read_delay + bc + cfg.tRTRS - cfg.write_delay,
        "rd_pre": cfg.AL + cfg.tRTP,
        "rdp_act": cfg.AL + bc + cfg.tRTP + cfg.tRP,
        "wr_rd_l": cfg.write_delay + twtr_l,
        "wr_rd_s": cfg.write_delay + cfg.tWTR_S,
        "wr_rd_o": cfg.write_delay + bc + cfg.tRTRS - cfg.read_delay,
        "wr_wr_l": max(bc, tccd_l),
        "wr_wr_s": max(bc, cfg.tCCD_S),
        "wr_wr_o": bc,
        "wr_pre": cfg.WL + bc + cfg.tWR,
        "pre_act": cfg.tRP,
        "pre_pre": cfg.tPPD,
        "act_act": cfg.tRC,
        "act_act_l": trrd_l,
        "act_act_s": cfg.tRRD_S,
        "act_pre": cfg.tRAS,
        "act_rd": cfg.tRCDRD if gddr_or_hbm else cfg.tRCD - cfg.AL,
        "act_wr": cfg.tRCDWR if gddr_or_hbm else cfg.tRCD - cfg.AL,
        "act_refb": cfg.tRC,
        "ref_ref": cfg.tREFI,
        "ref_act": cfg.tRFC,
        "refb_act": cfg.tRFCb,
        "sre_srx": cfg.tCKESR,
        "srx_any": cfg.tXS,
    }
    d["rd_act"] = d["rd_pre"] + d["pre_act"]
    d["wr_act"] = d["wr_pre"] + d["pre_act"]
    return d


def build_tables(cfg) -> TimingTables:
    """Compile a configuration into the kernel's timing tables."""
    d = derived_delays(cfg)
    count = np.zeros((NSCOPE, NCMD), np.int64)
    nxt = np.zeros((NSCOPE, NCMD, MAX_RULES), np.int64)
    delay = np.zeros((NSCOPE, NCMD, MAX_RULES), np.int64)

    def put(scope: int, cmd: int, rules: list[tuple[int, int]]) -> None:
        for k, (n, dl) in enumerate(rules):
            nxt[scope, cmd, k] = n
            delay[scope, cmd, k] = dl
        count[scope, cmd] = len(rules)

    def columns(rd: int, wr: int) -> list[tuple[int, int]]:
        return [(RD, rd), (WR, wr), (RDP, rd), (WRP, wr)]

    for rd_cmd in (RD, RDP):
        put(SAME_BG, rd_cmd, columns(d["rd_rd_l"], d["rd_wr"]))
        put(OTHER_BG, rd_cmd, columns(d["rd_rd_s"], d["rd_wr"]))
        put(OTHER_RANK, rd_cmd, columns(d["rd_rd_o"], d["rd_wr_o"]))
    for wr_cmd in (WR, WRP):
        put(SAME_BG, wr_cmd, columns(d["wr_rd_l"], d["wr_wr_l"]))
        put(OTHER_BG, wr_cmd, columns(d["wr_rd_s"], d["wr_wr_s"]))
        put(OTHER_RANK, wr_cmd, columns(d["wr_rd_o"], d["wr_wr_o"]))
    put(SAME_BANK, RD, columns(d["rd_rd_l"], d["rd_wr"]) + [(PRE, d["rd_pre"])])
    put(SAME_BANK, WR, columns(d["wr_rd_l"], d["wr_wr_l"]) + [(PRE, d["wr_pre"])])
    put(SAME_BANK, RDP, [(ACT, d["rdp_act"]), (REF, d["rd_act"]), (REFB, d["rd_act"]),
                         (SREFE, d["rd_act"])])
    put(SAME_BANK, WRP, [(ACT, d["wr_act"]), (REF, d["wr_act"]), (REFB, d["wr_act"]),
                         (SREFE, d["wr_act"])])
    put(SAME_BANK, ACT, [(ACT, d["act_act"]), (RD, d["act_rd"]), (WR, d["act_wr"]),
                         (RDP, d["act_rd"]), (WRP, d["act_wr"]), (PRE, d["act_pre"])])
    put(SAME_BG, ACT, [(ACT, d["act_act_l"]), (REFB, d["act_refb"])])
    put(OTHER_BG, ACT, [(ACT, d["act_act_s"]), (REFB, d["act_refb"])])
    put(SAME_BANK, PRE, [(ACT, d["pre_act"]), (REF, d["pre_act"]), (REFB, d["pre_act"]),
                         (SREFE, d["pre_act"])])
    if cfg.is_gddr or cfg.protocol == "LPDDR4":
        put(SAME_BG, PRE, [(PRE, d["pre_pre"])])
        put(OTHER_BG, PRE, [(PRE, d["pre_pre"])])
    # Per-bank refresh. DRAMsim3 lists the refreshed bank's own delay under same_rank, which
    # its update never reads (upstream issue #24); we apply tRFCb to that bank.
    put(SAME_BANK, REFB, [(ACT, d["refb_act"]), (REFB, d["refb_act"]), (REF, d["refb_act"]),
                          (SREFE, d["refb_act"])])
    put(SAME_BG, REFB, [(ACT, d["ref_act"]), (REFB, d["ref_ref"])])
    put(OTHER_BG, REFB, [(ACT, d["ref_act"]), (REFB, d["ref_ref"])])
    put(SAME_RANK, REF, [(ACT, d["ref_act"]), (REF, d["ref_act"]), (SREFE, d["ref_act"])])
    put(SAME_RANK, SREFE, [(SREFX, d["sre_srx"])])
    put(SAME_RANK, SREFX, [(ACT, d["srx_any"]), (REF, d["srx_any"]), (REFB, d["srx_any"]),
                           (SREFE, d["srx_any"])])
    return TimingTables(count=count, nxt=nxt, delay=delay)
