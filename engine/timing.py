"""Command-to-command timing tables, compiled once from a memory configuration.

A table entry says: when command X issues at cycle t, command Y may not issue before t + d in
every bank of scope S. The scopes are the ones a JEDEC controller distinguishes:

    SAME_BANK          the bank X addressed
    SAME_BG            the other banks of X's bank group
    OTHER_BG           the banks of the other bank groups of X's rank
    OTHER_RANK         every bank of the other ranks of the channel
    SAME_RANK          every bank of X's rank (rank commands: REFRESH, self refresh)

The delays are DRAMsim3's derivations (see ../shared/reference/dramsim3/NOTES.md §4), so that
the engine agrees with it, with one deliberate difference: per-bank refresh (see build_tables),
which DRAMsim3 models inconsistently (its upstream issue #24).
The constraints themselves are declared by each standard (``engine.standards``: which
command pairs, in which scope, take which named delay); this module computes the named delays
and compiles the declarations. The numba kernel reads these tables and never re-derives a
timing rule.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine import standards
# Command codes (DRAMsim3's CommandType order) and scopes: declared once, in engine.standards.
from engine.standards.base import (ACT, COMMAND_NAMES, NCMD, NSCOPE, OTHER_BG, OTHER_RANK,  # noqa: F401
                                   PRE, RD, RDP, REF, REFB, SAME_BANK, SAME_BG, SAME_RANK,
                                   SCOPE_NAMES, SREFE, SREFX, WR, WRP)

MAX_RULES = 8   # rules per (scope, command) in the tables of the DRAMsim3 standards; more
                # widen the table (the kernel walks count[scope, cmd] rules, whatever the width)


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
    std = standards.find(cfg.protocol)
    if std is not None:
        common = dict(d)
        for name, rule in std.delay_rules.items():
            d[name] = int(rule(cfg, common))
    return d


def build_tables(cfg) -> TimingTables:
    """Compile a configuration's standard (its constraint declarations) into the kernel's
    timing tables.

    Where two declarations constrain the same (scope, command, next command), the longer
    delay wins. A command the standard says occupies the command bus for n > 1 cycles keeps
    every command of the channel (with separate row and column buses: every row command)
    off the bus for n cycles.

    Per-bank refresh is where we differ from DRAMsim3 on purpose (it has no reference run):
    DRAMsim3 lists the refreshed bank's own delay under same_rank, which its update never
    reads (upstream issue #24), and holds every other bank of the rank off ACT for tRFC and
    off the next per-bank refresh for a whole tREFI, so a rotation over 16 banks takes
    16 x tREFI and refresh falls behind. We apply tRFCb to the refreshed bank and, as
    LPDDR4's per-bank refresh does, let the other banks activate after tRRD and take the
    next per-bank refresh after tRFCb (engine.standards.base.DRAMSIM3_CONSTRAINTS).
    """
    d = derived_delays(cfg)
    std = standards.get(cfg.protocol)
    rules: dict[tuple[int, int], dict[int, int]] = {}
    for c in std.constraints:
        for cmd in c.preceding:
            slot = rules.setdefault((c.scope, cmd), {})
            for n in c.following:
                slot[n] = max(slot.get(n, d[c.delay]), d[c.delay])
    row_cmds = (ACT, PRE, REFB, REF, SREFE, SREFX)
    for command in std.commands:
        if command.bus_cycles <= 1:
            continue
        blocked = row_cmds if (std.dual_command and command.code in row_cmds) else range(NCMD)
        for scope in (SAME_BANK, SAME_BG, OTHER_BG, OTHER_RANK):
            slot = rules.setdefault((scope, command.code), {})
            for n in blocked:
                if n == SREFX:
                    continue
                slot[n] = max(slot.get(n, 0), command.bus_cycles)
    width = max([MAX_RULES] + [len(v) for v in rules.values()])
    count = np.zeros((NSCOPE, NCMD), np.int64)
    nxt = np.zeros((NSCOPE, NCMD, width), np.int64)
    delay = np.zeros((NSCOPE, NCMD, width), np.int64)
    for (scope, cmd), slot in rules.items():
        for k, (n, dl) in enumerate(slot.items()):
            nxt[scope, cmd, k] = n
            delay[scope, cmd, k] = dl
        count[scope, cmd] = len(slot)
    return TimingTables(count=count, nxt=nxt, delay=delay)


def folding_is_exact(tables: TimingTables, cfg) -> tuple[bool, list[str]]:
    """Can the kernel keep one timing slot per bank group and per rank (see kernel._update_timing)?

    Folding applies a bank-group rule to the issuing bank too, and an other-bank-group rule
    to the whole rank. That changes nothing when, for every command pair, the wider scope's
    delay is at most the narrower scope's, or when the bank's own state already forbids the
    constrained command for at least that long (e.g. a REFRESH_BANK after an ACT must wait
    for PRE and tRP, i.e. tRC). Returns (exact, reasons it is not)."""
    d = derived_delays(cfg)
    # earliest a command can follow on the issuing bank because of its own state
    own_state_floor = {
        (ACT, REFB): cfg.tRAS + cfg.tRP,              # PRE after tRAS, then tRP
        (PRE, PRE): cfg.tRP + cfg.tRAS,               # ACT after tRP, PRE after tRAS
    }
    for c in (RD, WR, RDP, WRP):
        own_state_floor[(RDP, c)] = d["rdp_act"] + min(d["act_rd"], d["act_wr"])
        own_state_floor[(WRP, c)] = d["wr_act"] + min(d["act_rd"], d["act_wr"])
    problems: list[str] = []

    def rules(scope: int, cmd: int) -> dict[int, int]:
        return {int(tables.nxt[scope, cmd, k]): int(tables.delay[scope, cmd, k])
                for k in range(int(tables.count[scope, cmd]))}

    for cmd in (RD, RDP, WR, WRP, ACT, PRE):
        bank, bg, obg = rules(SAME_BANK, cmd), rules(SAME_BG, cmd), rules(OTHER_BG, cmd)
        for wide, narrow_list in ((bg, (bank,)), (obg, (bg, bank))):
            for nxt, dl in wide.items():
                for narrow in narrow_list:
                    bound = narrow.get(nxt)
                    if bound is None and narrow is bank:
                        bound = own_state_floor.get((cmd, nxt))
                    if bound is None and narrow is bg:
                        # a bank-group scope without this rule: the other banks of the group
                        # are free of it, so folding would over-constrain them
                        bound = -1 if dl > 0 else dl
                    if bound is not None and dl > bound:
                        problems.append(f"{COMMAND_NAMES[cmd]} -> {COMMAND_NAMES[nxt]}: "
                                        f"{dl} > {bound}")
    return not problems, problems
