"""Independent JEDEC timing checker for DRAM command traces.

This module reads a command trace in DRAMsim3's ``CMD_TRACE`` format and checks every command
against the JEDEC rules (JESD79-4 DDR4, JESD79-5 DDR5, JESD209-4 LPDDR4, JESD209-5 LPDDR5,
JESD250 GDDR6, JESD235 HBM2, JESD238 HBM3) as far as the simulator models them. It is
written from the standards, **not** from the simulator: it imports nothing from the engine's
timing tables (``engine.timing``) nor the constraint declarations the tables are compiled
from; it reads plain timing parameters (tCK, CL, tRCD, ...) from a configuration object and,
from the standard's module (``engine.standards``), only the facts a datasheet states: the
family, separate row/column command buses, two-cycle commands, which JEDEC rules apply
(tPPD, DDR5's tCCD_L_WR and same-bank refresh, HBM3's tRREFD) and how many REFs may be
postponed.

DDR5 / LPDDR5 / HBM3 rules added here (JESD79-5, JESD209-5, JESD238):

* two-cycle commands (DDR5 ACT/RD/RDA/WR/WRA, LPDDR5 ACT-1 + ACT-2, HBM3 ACT on the row
  bus): the command bus is busy for both cycles (rule ``command bus``);
* DDR5 WRITE -> WRITE in the same bank group: tCCD_L_WR (rule ``tCCD_L_WR``);
* DDR5 REFsb, printed as ``refresh_bank`` with bank group -1: refreshes bank b of every bank
  group; each covered bank must be idle (tRP) and is busy for tRFCb (tRFCsb); another bank
  may be activated tREFSBRD after it (rule ``tREFSBRD``);
* HBM3 REFpb: another bank may be activated or refreshed tRREFD after it (rule ``tRREFD``;
  the configuration's ``tREFSBRD`` field holds it) and refreshed tRRD_S after an ACT to
  another bank; PRE -> PRE is tPPD;
* the refresh-rate limit follows the standard's postponement allowance (DDR5: 4 REFs, i.e.
  no gap over 5 x tREFI; the others 8, i.e. 9 x tREFI).

Trace format, one command a line (``#`` comments and blank lines are skipped)::

    CYCLE  CMD  CHANNEL  RANK  BANKGROUP  BANK  ROW  COLUMN
    6      activate   0  0  0  0  0x2800  0x0
    6300   refresh   -1  0 -1 -1   -0x1  -0x1

``CMD`` is one of ``read read_p write write_p activate precharge refresh_bank refresh
self_refresh_enter self_refresh_exit``. DRAMsim3 prints -1 for fields a command does not use
(rank-level commands, and the channel of the precharges a refresh issues).

Rule families, one small class each (``_RuleFamily`` subclasses): every family first *checks*
a command against what it remembers, then all families *update* their memory with it.

* :class:`BankStateRules` — the bank state machine (closed/open, open row, self refresh).
* :class:`SameBankRules` — tRCD / tRCDRD / tRCDWR, tRAS, tRC, tRP, tRTP, tWR, and the
  auto-precharge recoveries (``tRTP+tRP`` after READ_P, ``tDAL`` = tWR+tRP after WRITE_P).
* :class:`ActivationRules` — tRRD_L / tRRD_S, tFAW, t32AW (GDDR), tREFSBRD (DDR5) / tRREFD
  (HBM3).
* :class:`ColumnRules` — tCCD_L / tCCD_S, tWTR_L / tWTR_S.
* :class:`PrechargeRules` — tPPD (LPDDR4, LPDDR5, DDR5, GDDR, HBM3).
* :class:`RefreshRules` — tRFC, tRFCb, tXS, tCKESR and the refresh rate
  (``tREFI postponement``: at most 8 postponed REFs, i.e. no gap over 9 x tREFI).
* :class:`DataBusRules` — burst overlap and bus turnaround (tRTRS).
* :class:`CommandBusRules` — one command per cycle (HBM: one row + one column command).

Conventions shared by all rules
-------------------------------
* Cycles are DRAM clock cycles (tCK), as in the trace.
* ``Violation.required`` is the earliest cycle the command could legally have issued at with
  respect to the constraining command ``ref_line``; ``actual`` is the cycle it issued at.
  For state rules no cycle would make the command legal: ``required`` is -1 there.
* Read latency RL = AL + CL, write latency WL = AL + CWL, burst = ``cfg.burst_cycle``
  (BL/2 for DDR4, LPDDR4 and HBM; DRAMsim3 models GDDR6 as BL/16 = 1 cycle).

Readings of the standards (where DRAMsim3 and JEDEC differ, see also the class docstrings)
-----------------------------------------------------------------------------------------
* Write-to-read uses JEDEC's ``CWL + BL/2 + tWTR`` (the read is posted by AL as well, so AL
  cancels). DRAMsim3 uses ``WL + BL/2 + tWTR`` (WL = AL + CWL), stricter by AL; all shipped
  configs have AL = 0.
* READ with auto-precharge: the internal precharge starts ``AL + tRTP`` after the command
  (held back until tRAS is met, which the tRC check covers), so the next ACT needs
  ``AL + tRTP + tRP``. DRAMsim3 charges ``AL + burst + tRTP + tRP`` for ACT (stricter) but
  ``AL + tRTP + tRP`` for REFRESH.
* RD->WR: JEDEC DDR4 gives ``RL + BL/2 - WL + 2 tCK``; the 2 tCK are one cycle of bus
  turnaround plus a one-cycle write preamble. DRAMsim3's configs fold both into a single
  ``tRTRS`` (1 for DDR4-3200), i.e. its RD->WR is ``RL + burst - WL + tRTRS``. We check the
  data bus the simulator's way — a gap of tRTRS between bursts whose driver changes — and
  offer ``strict=True`` to demand the JEDEC DDR4 gap (tRTRS + tWPRE, at least 2).
* Data-bus turnaround (tRTRS) is required whenever the *driver* of the DQ bus changes: read
  to write, write to read, and reads from different ranks. Two writes to different ranks are
  both driven by the controller; DRAMsim3 lets them follow back to back (``burst`` apart) and
  JEDEC sets no rank-to-rank write rule (it is a controller/ODT matter), so no gap is demanded.
  ``strict=True`` demands tRTRS there too.
* A PRECHARGE to an already closed bank is a NOP in JEDEC; it is reported here
  (``PRE to closed bank``) because in a simulator trace it always means a scheduler bug.
* tRTP is ``cfg.tRTP``. The GDDR6 and HBM2 ini files give only ``tRTP_L`` / ``tRTP_S``, which
  DRAMsim3 ignores (it runs them with its default tRTP = 5). For HBM2 that is one cycle less
  than the file's tRTP_L = 6: DRAMsim3's HBM2 traces have RD->PRE gaps of exactly 5.
* LPDDR4 (JESD209-4) adds one cycle to write-to-read and write-to-precharge
  (``WL + 1 + BL/2 + tWTR``, ``WL + BL/2 + tWR + 1``) for the DQS-to-CK skew; DRAMsim3 does
  not. ``strict=True`` adds that cycle.
"""
from __future__ import annotations

import gzip
import io
import logging
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import standards
from engine.errors import TraceError

logger = logging.getLogger(__name__)

__all__ = [
    "Cmd", "Violation", "CheckParams", "parse_command_trace", "check_command_trace",
    "check_commands", "COMMANDS",
]

# --------------------------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------------------------
READ, READ_P, WRITE, WRITE_P = "read", "read_p", "write", "write_p"
ACT, PRE = "activate", "precharge"
REF_BANK, REF = "refresh_bank", "refresh"
SREF_ENTER, SREF_EXIT = "self_refresh_enter", "self_refresh_exit"
COMMANDS: tuple[str, ...] = (READ, READ_P, WRITE, WRITE_P, ACT, PRE, REF_BANK, REF,
                             SREF_ENTER, SREF_EXIT)
_READS = frozenset({READ, READ_P})
_WRITES = frozenset({WRITE, WRITE_P})
_COLUMN = _READS | _WRITES
_AUTO_PRE = frozenset({READ_P, WRITE_P})
_RANK_CMDS = frozenset({REF, SREF_ENTER, SREF_EXIT})

#: Refresh postponement limit (JEDEC DDR4/LPDDR4/HBM: up to 8 REF may be postponed, so two
#: consecutive REF may be at most 9 x tREFI apart).
MAX_REFI_GAP = 9


@dataclass(frozen=True, slots=True)
class Cmd:
    """One command of a trace. ``line`` is the 1-based line number in the source."""

    line: int
    cycle: int
    kind: str
    channel: int
    rank: int
    bankgroup: int
    bank: int
    row: int
    column: int

    @property
    def is_read(self) -> bool:
        return self.kind in _READS

    @property
    def is_write(self) -> bool:
        return self.kind in _WRITES

    @property
    def is_column(self) -> bool:
        return self.kind in _COLUMN

    @property
    def bank_key(self) -> tuple[int, int]:
        """(bankgroup, bank) inside the command's rank."""
        return (self.bankgroup, self.bank)

    def describe(self) -> str:
        """Short human-readable form, e.g. ``read r0 bg1 b2 row 0x2800 @ 28 (line 5)``."""
        where = f"r{self.rank}"
        if self.kind not in _RANK_CMDS:
            where += f" bg{self.bankgroup} b{self.bank}"
            if self.is_column or self.kind == ACT:
                where += f" row {self.row:#x}"
        return f"{self.kind} {where} @ {self.cycle} (line {self.line})"


@dataclass(slots=True)
class Violation:
    """One broken rule. See the module docstring for the meaning of required / actual."""

    line: int
    cycle: int
    command: str
    rule: str
    ref_line: int | None
    required: int
    actual: int
    message: str


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------
def _open_lines(path_or_lines: str | Path | Iterable[str]) -> tuple[Iterator[str], Path | None]:
    """The lines of a trace file (gzip detected by its magic bytes) or of an iterable."""
    if isinstance(path_or_lines, (str, Path)):
        path = Path(path_or_lines)
        with open(path, "rb") as fh:
            raw = fh.read()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return iter(io.StringIO(raw.decode("ascii", errors="replace"))), path
    return iter(path_or_lines), None


def parse_command_trace(path_or_lines: str | Path | Iterable[str]) -> list[Cmd]:
    """Parse a DRAMsim3 command trace (plain or gzip file, or an iterable of lines).

    Raises :class:`engine.errors.TraceError` (with file and line) on a malformed line.
    """
    lines, path = _open_lines(path_or_lines)
    cmds: list[Cmd] = []

    def error(message: str) -> TraceError:
        return TraceError(message if path is not None else f"line {lineno}: {message}",
                          path=path, line=lineno)

    for lineno, text in enumerate(lines, start=1):
        text = text.split("#", 1)[0].strip()
        if not text:
            continue
        parts = text.split()
        if "," in text:
            raise error(f"{text!r} is not a DRAMsim3 command-trace line (CYCLE CMD CHANNEL RANK "
                        "BANKGROUP BANK ROW COLUMN): comma-separated lines are Ramulator 2's "
                        "command recorder's (the ramulator command's --cmd-trace), which this "
                        "checker does not read; simulate --cmd-trace writes DRAMsim3's format")
        if len(parts) != 8:
            raise error(f"expected 8 fields (CYCLE CMD CHANNEL RANK BANKGROUP BANK ROW "
                             f"COLUMN), got {len(parts)}: {text!r}")
        kind = parts[1].lower()
        if kind not in COMMANDS:
            raise error(f"unknown command {parts[1]!r}; expected one of "
                             f"{', '.join(COMMANDS)}")
        try:
            cycle = int(parts[0], 10)
            ch, rank, bg, bank, row, col = (int(p, 0) for p in parts[2:])
        except ValueError as exc:
            raise error(f"bad number in {text!r}: {exc}") from None
        if cycle < 0:
            raise error(f"negative cycle {cycle}")
        if rank < 0:
            raise error(f"{kind} without a rank")
        if kind not in _RANK_CMDS and bank < 0:
            raise error(f"{kind} needs a bank group and bank")
        if kind not in _RANK_CMDS and bg < 0 and kind != REF_BANK:
            raise error(f"{kind} needs a bank group and bank (only a same-bank "
                        f"refresh_bank may give bank group -1: every bank group)")
        cmds.append(Cmd(lineno, cycle, kind, ch, rank, bg, bank, row, col))
    logger.debug("parsed %d commands from %s", len(cmds), path or "<lines>")
    return cmds


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckParams:
    """The timing values the checker uses, in cycles, taken from a configuration.

    Built by :meth:`from_config`; exposed so tests and reports can show what was checked.
    """

    protocol: str
    ranks: int
    bankgroups: int
    banks_per_group: int
    burst: int
    AL: int
    RL: int
    WL: int
    CWL: int
    tRCD_rd: int          # ACT -> READ  (tRCD - AL, or tRCDRD for GDDR/HBM)
    tRCD_wr: int          # ACT -> WRITE (tRCD - AL, or tRCDWR for GDDR/HBM)
    rcd_rd_name: str
    rcd_wr_name: str
    tRAS: int
    tRC: int
    tRP: int
    tRTP: int
    tWR: int
    tRRD_L: int
    tRRD_S: int
    tFAW: int
    t32AW: int | None     # GDDR only
    tCCD_L: int
    tCCD_S: int
    tWTR_L: int
    tWTR_S: int
    tRTRS: int
    tPPD: int             # 0 = not checked
    tRFC: int
    tRFCb: int
    tREFI: int
    tXS: int | None
    tCKESR: int | None
    hbm_dual_cmd: bool
    wr_extra: int = 0     # strict LPDDR4: +1 on WR->RD and WR->PRE
    tCCD_L_WR: int = 0    # DDR5: WR -> WR same bank group (0 = tCCD_L)
    tREFSBRD: int = 0     # DDR5: REFsb -> ACT, HBM3: REFpb -> ACT / REFpb, of another bank
    refb_other_rule: str = "tREFSBRD"   # that rule's JEDEC name (HBM3: tRREFD)
    refb_refb_other: bool = False       # HBM3: tRREFD also spaces REFpb -> REFpb
    act_refb_rrd: bool = False          # HBM3: ACT -> REFpb of another bank waits tRRD_S
    same_bank_refresh: bool = False   # refresh_bank with bank group -1 covers every group
    bus_cycles: tuple[tuple[str, int], ...] = ()   # command -> command-bus cycles (> 1)
    max_refi_gap: int = 9  # REFs may be at most this many tREFI apart (postponement + 1)
    rd_wr_gap: int = 0    # data-bus gap demanded between a read burst and a later write burst
    wr_wr_rank_gap: int = 0  # gap demanded between writes to different ranks

    @classmethod
    def from_config(cls, cfg: Any, *, strict: bool = False) -> "CheckParams":
        """Read the plain JEDEC parameters of ``cfg`` (a MemoryConfig or a stand-in)."""
        def get(name: str, default: Any = None) -> Any:
            return getattr(cfg, name, default)

        protocol = str(get("protocol", "DDR4")).upper()
        std = standards.find(protocol)
        family = std.family if std is not None else ""
        is_gddr = bool(get("is_gddr", family == "GDDR" or protocol.startswith("GDDR")))
        is_hbm = bool(get("is_hbm", family == "HBM" or protocol.startswith("HBM")))
        jedec = dict(std.checker) if std is not None else {}
        bankgroups = int(get("bankgroups_eff", get("bankgroups", 1)))
        single_bg = bankgroups <= 1
        al, cl, cwl = int(cfg.AL), int(cfg.CL), int(cfg.CWL)
        rl, wl = al + cl, al + cwl
        t_rp, t_ras = int(cfg.tRP), int(cfg.tRAS)
        t_rc = get("tRC")
        t_rc = int(t_rc) if t_rc is not None else t_ras + t_rp
        if std.split_rcd if std is not None else (is_gddr or is_hbm):
            rcd_rd, rcd_wr = int(cfg.tRCDRD), int(cfg.tRCDWR)
            rcd_rd_name, rcd_wr_name = "tRCDRD", "tRCDWR"
        else:
            rcd_rd = rcd_wr = int(cfg.tRCD) - al
            rcd_rd_name = rcd_wr_name = "tRCD"
        t_ppd = int(get("tPPD", 0) or 0)
        if not jedec.get("tPPD", std is None and (is_gddr or protocol.startswith("LPDDR4"))):
            t_ppd = 0
        t_rtrs = int(cfg.tRTRS)
        rd_wr_gap = t_rtrs
        wr_extra = 0
        wr_wr_rank_gap = 0
        if strict:
            wr_wr_rank_gap = t_rtrs
            if jedec.get("rd_wr_preamble"):
                # JESD79-4: RD->WR = RL + BL/2 - WL + 2 tCK (1 tCK write preamble) -> bus gap 2,
                # one more with the 2 tCK write preamble.
                rd_wr_gap = max(t_rtrs, 1 + int(get("tWPRE", 1) or 1))
            if jedec.get("dqs_skew"):
                wr_extra = 1
        xs, ckesr = get("tXS"), get("tCKESR")
        return cls(
            protocol=protocol,
            ranks=int(get("ranks", 1)),
            bankgroups=max(bankgroups, 1),
            banks_per_group=int(get("banks_per_group_eff", get("banks_per_group", 1))),
            burst=int(cfg.burst_cycle),
            AL=al, RL=rl, WL=wl, CWL=cwl,
            tRCD_rd=rcd_rd, tRCD_wr=rcd_wr, rcd_rd_name=rcd_rd_name, rcd_wr_name=rcd_wr_name,
            tRAS=t_ras, tRC=t_rc, tRP=t_rp, tRTP=int(cfg.tRTP), tWR=int(cfg.tWR),
            tRRD_L=int(cfg.tRRD_S) if single_bg else int(cfg.tRRD_L),
            tRRD_S=int(cfg.tRRD_S),
            tFAW=int(cfg.tFAW),
            t32AW=int(cfg.t32AW) if is_gddr and get("t32AW") is not None else None,
            tCCD_L=int(cfg.tCCD_S) if single_bg else int(cfg.tCCD_L),
            tCCD_S=int(cfg.tCCD_S),
            tWTR_L=int(cfg.tWTR_S) if single_bg else int(cfg.tWTR_L),
            tWTR_S=int(cfg.tWTR_S),
            tRTRS=t_rtrs, tPPD=t_ppd,
            tRFC=int(cfg.tRFC), tRFCb=int(get("tRFCb", 0) or 0), tREFI=int(cfg.tREFI),
            tXS=int(xs) if xs is not None else None,
            tCKESR=int(ckesr) if ckesr is not None else None,
            hbm_dual_cmd=bool(is_hbm and get("hbm_dual_cmd", True)),
            wr_extra=wr_extra, rd_wr_gap=rd_wr_gap, wr_wr_rank_gap=wr_wr_rank_gap,
            tCCD_L_WR=int(get("tCCD_L_WR", 0) or 0) if jedec.get("tCCD_L_WR") else 0,
            tREFSBRD=int(get("tREFSBRD", 0) or 0) if (jedec.get("same_bank_refresh")
                                                      or jedec.get("tRREFD")) else 0,
            refb_other_rule="tRREFD" if jedec.get("tRREFD") else "tREFSBRD",
            refb_refb_other=bool(jedec.get("tRREFD")),
            act_refb_rrd=bool(jedec.get("act_refb_tRRD")),
            same_bank_refresh=bool(jedec.get("same_bank_refresh")),
            bus_cycles=tuple((c.trace_name, c.bus_cycles) for c in
                             (std.commands if std is not None else ()) if c.bus_cycles > 1),
            max_refi_gap=(std.max_postponed_refresh + 1) if std is not None else MAX_REFI_GAP,
        )


# --------------------------------------------------------------------------------------------
# Rule families
# --------------------------------------------------------------------------------------------
def _violation(cmd: Cmd, rule: str, ref: Cmd | None, required: int, detail: str = "") -> Violation:
    """Build a Violation with a readable message."""
    if required >= 0:
        text = (f"{cmd.describe()}: {rule} requires cycle >= {required}"
                f" ({required - cmd.cycle} cycle(s) early)")
    else:
        text = f"{cmd.describe()}: {rule}"
    if ref is not None:
        text += f" after {ref.describe()}"
    if detail:
        text += f"; {detail}"
    return Violation(line=cmd.line, cycle=cmd.cycle, command=cmd.kind, rule=rule,
                     ref_line=ref.line if ref is not None else None,
                     required=required, actual=cmd.cycle, message=text)


def _late(cmd: Cmd, rule: str, ref: Cmd | None, required: int, detail: str = "") -> list[Violation]:
    """[violation] if ``cmd`` issued before ``required``, else []."""
    if ref is not None and cmd.cycle < required:
        return [_violation(cmd, rule, ref, required, detail)]
    return []


def _covered(cmd: Cmd, p: CheckParams) -> list[Cmd]:
    """The per-bank commands a command stands for: a same-bank refresh (DDR5 REFsb, printed
    with bank group -1) covers bank ``cmd.bank`` of every bank group; others stand for
    themselves."""
    if cmd.kind == REF_BANK and cmd.bankgroup < 0 and p.same_bank_refresh:
        return [Cmd(cmd.line, cmd.cycle, cmd.kind, cmd.channel, cmd.rank, g, cmd.bank,
                    cmd.row, cmd.column) for g in range(p.bankgroups)]
    return [cmd]


class _RuleFamily:
    """A family of related rules with its own memory of the commands seen so far."""

    def __init__(self, p: CheckParams) -> None:
        self.p = p

    def check(self, cmd: Cmd) -> list[Violation]:
        """Violations ``cmd`` commits against the commands already seen."""
        raise NotImplementedError

    def update(self, cmd: Cmd) -> None:
        """Remember ``cmd`` (called for every command, legal or not, after all checks)."""
        raise NotImplementedError


@dataclass
class _Bank:
    """What the bank state machine knows of one bank."""

    open_act: Cmd | None = None        # the ACT that opened the current row, None if closed
    closed_by: Cmd | None = None       # the PRE / READ_P / WRITE_P that last closed it


class BankStateRules(_RuleFamily):
    """The bank state machine (JEDEC simplified state diagram).

    * READ/WRITE(/_P) and PRE only to an open bank; a column command must address the open row;
    * ACT only to a closed (idle) bank;
    * REFRESH and SELF_REFRESH_ENTER only with every bank of the rank closed, REFRESH_BANK only
      to a closed bank;
    * READ_P / WRITE_P close the bank (auto-precharge);
    * in self refresh only SELF_REFRESH_EXIT is legal; SELF_REFRESH_EXIT only in self refresh.

    The PRE's row field is not checked: DRAMsim3 prints the row of the request that caused the
    precharge (the *next* row), and -1 for refresh precharges.
    """

    def __init__(self, p: CheckParams) -> None:
        super().__init__(p)
        self.banks: dict[tuple[int, int, int], _Bank] = {}
        self.in_sref: dict[int, Cmd] = {}

    def _bank(self, cmd: Cmd) -> _Bank:
        return self.banks.setdefault((cmd.rank, cmd.bankgroup, cmd.bank), _Bank())

    def _open_banks(self, rank: int) -> list[_Bank]:
        return [b for (r, _, _), b in self.banks.items() if r == rank and b.open_act is not None]

    def check(self, cmd: Cmd) -> list[Violation]:
        covered = _covered(cmd, self.p)
        if len(covered) > 1:
            return [v for c in covered for v in self._check(c)]
        return self._check(cmd)

    def _check(self, cmd: Cmd) -> list[Violation]:
        p = self.p
        out: list[Violation] = []
        if cmd.rank >= p.ranks or (cmd.kind not in _RANK_CMDS and (
                cmd.bankgroup >= p.bankgroups or cmd.bank >= p.banks_per_group)):
            out.append(_violation(cmd, "address range", None, -1,
                                  f"configuration has {p.ranks} rank(s) x {p.bankgroups} bank "
                                  f"group(s) x {p.banks_per_group} bank(s)"))
        sref = self.in_sref.get(cmd.rank)
        if cmd.kind == SREF_EXIT:
            if sref is None:
                out.append(_violation(cmd, "SRX without SRE", None, -1))
            return out
        if sref is not None:
            out.append(_violation(cmd, "command during self refresh", sref, -1))
            return out
        if cmd.kind in (REF, SREF_ENTER):
            opened = self._open_banks(cmd.rank)
            if opened:
                first = min((b.open_act for b in opened if b.open_act), key=lambda c: c.line)
                out.append(_violation(cmd, f"{'REF' if cmd.kind == REF else 'SRE'} with open bank",
                                      first, -1, f"{len(opened)} bank(s) of rank {cmd.rank} open"))
            return out
        bank = self._bank(cmd)
        if cmd.kind == REF_BANK:
            if bank.open_act is not None:
                out.append(_violation(cmd, "REFb to open bank", bank.open_act, -1))
        elif cmd.kind == ACT:
            if bank.open_act is not None:
                out.append(_violation(cmd, "ACT to open bank", bank.open_act, -1,
                                      f"row {bank.open_act.row:#x} is open"))
        elif cmd.kind == PRE:
            if bank.open_act is None:
                out.append(_violation(cmd, "PRE to closed bank", bank.closed_by, -1,
                                      "a JEDEC NOP, but a scheduler bug in a simulator"))
        elif cmd.is_column:
            if bank.open_act is None:
                out.append(_violation(cmd, "column to closed bank", bank.closed_by, -1))
            elif bank.open_act.row != cmd.row:
                out.append(_violation(cmd, "wrong row", bank.open_act, -1,
                                      f"open row is {bank.open_act.row:#x}, "
                                      f"command addresses {cmd.row:#x}"))
        return out

    def update(self, cmd: Cmd) -> None:
        if cmd.kind == SREF_ENTER:
            self.in_sref[cmd.rank] = cmd
        elif cmd.kind == SREF_EXIT:
            self.in_sref.pop(cmd.rank, None)
        elif cmd.kind in (REF, REF_BANK):
            pass
        elif cmd.kind == ACT:
            self._bank(cmd).open_act = cmd
        elif cmd.kind == PRE or cmd.kind in _AUTO_PRE:
            bank = self._bank(cmd)
            if bank.open_act is not None or cmd.kind in _AUTO_PRE:
                bank.open_act = None
                bank.closed_by = cmd


@dataclass
class _BankTiming:
    """Per-bank command history for the same-bank rules."""

    act: Cmd | None = None             # last ACT
    last_read: Cmd | None = None       # last READ(_P) since that ACT
    last_write: Cmd | None = None      # last WRITE(_P) since that ACT
    pre: Cmd | None = None             # last PRE / READ_P / WRITE_P
    idle_at: int = -1                  # cycle the bank is precharged (tRP done)
    idle_rule: str = "tRP"
    refb: Cmd | None = None            # last REFRESH_BANK of this bank


class SameBankRules(_RuleFamily):
    """Same-bank timing.

    ===============  ==========================================  ==========
    earlier -> next  minimum distance                            rule
    ===============  ==========================================  ==========
    ACT -> READ      tRCD - AL   (GDDR6, HBM: tRCDRD)            tRCD(RD)
    ACT -> WRITE     tRCD - AL   (GDDR6, HBM: tRCDWR)            tRCD(WR)
    ACT -> PRE       tRAS                                        tRAS
    ACT -> ACT       tRC                                         tRC
    READ -> PRE      AL + tRTP                                   tRTP
    WRITE -> PRE     WL + burst + tWR                            tWR
    PRE -> ACT/REF   tRP                                         tRP
    READ_P -> ACT    AL + tRTP + tRP                             tRTP+tRP
    WRITE_P -> ACT   WL + burst + tWR + tRP  (JEDEC tDAL)        tDAL
    REFb -> ACT      tRFCb                                       tRFCb
    ===============  ==========================================  ==========

    "Precharged" (``idle_at``) also gates REFRESH, REFRESH_BANK and SELF_REFRESH_ENTER: a
    refresh needs every bank of the rank precharged for tRP. With auto-precharge the internal
    precharge is held until tRAS is met; tRC (ACT->ACT) covers that for the next ACT.
    """

    def __init__(self, p: CheckParams) -> None:
        super().__init__(p)
        self.banks: dict[tuple[int, int, int], _BankTiming] = {}

    def _bank(self, cmd: Cmd) -> _BankTiming:
        return self.banks.setdefault((cmd.rank, cmd.bankgroup, cmd.bank), _BankTiming())

    def _idle_check(self, cmd: Cmd, bank: _BankTiming) -> list[Violation]:
        return _late(cmd, bank.idle_rule, bank.pre, bank.idle_at)

    def check(self, cmd: Cmd) -> list[Violation]:
        covered = _covered(cmd, self.p)
        if len(covered) > 1:
            return [v for c in covered for v in self._check(c)]
        return self._check(cmd)

    def update(self, cmd: Cmd) -> None:
        for c in _covered(cmd, self.p):
            self._update(c)

    def _check(self, cmd: Cmd) -> list[Violation]:
        p = self.p
        if cmd.kind in (REF, SREF_ENTER):
            # Every bank of the rank must have finished its precharge: report the latest one.
            closed = [b for (r, _, _), b in self.banks.items() if r == cmd.rank and b.pre]
            worst = max(closed, key=lambda b: b.idle_at, default=None)
            return self._idle_check(cmd, worst) if worst is not None else []
        if cmd.kind == SREF_EXIT:
            return []
        bank = self._bank(cmd)
        out: list[Violation] = []
        if cmd.kind == ACT:
            out += self._idle_check(cmd, bank)
            if bank.act is not None:
                out += _late(cmd, "tRC", bank.act, bank.act.cycle + p.tRC)
            if bank.refb is not None:
                out += _late(cmd, "tRFCb", bank.refb, bank.refb.cycle + p.tRFCb)
        elif cmd.kind == REF_BANK:
            out += self._idle_check(cmd, bank)
            if bank.refb is not None:
                out += _late(cmd, "tRFCb", bank.refb, bank.refb.cycle + p.tRFCb)
        elif cmd.kind == PRE:
            if bank.act is not None and bank.act.line > (bank.pre.line if bank.pre else -1):
                out += _late(cmd, "tRAS", bank.act, bank.act.cycle + p.tRAS)
                if bank.last_read is not None:
                    out += _late(cmd, "tRTP", bank.last_read, bank.last_read.cycle + p.AL + p.tRTP)
                if bank.last_write is not None:
                    out += _late(cmd, "tWR", bank.last_write,
                                 bank.last_write.cycle + p.WL + p.burst + p.tWR + p.wr_extra)
        elif cmd.is_column and bank.act is not None:
            if cmd.is_read:
                out += _late(cmd, p.rcd_rd_name, bank.act, bank.act.cycle + p.tRCD_rd)
            else:
                out += _late(cmd, p.rcd_wr_name, bank.act, bank.act.cycle + p.tRCD_wr)
        return out

    def _update(self, cmd: Cmd) -> None:
        p = self.p
        if cmd.kind in _RANK_CMDS:
            return
        bank = self._bank(cmd)
        if cmd.kind == ACT:
            bank.act, bank.last_read, bank.last_write = cmd, None, None
        elif cmd.kind == REF_BANK:
            bank.refb = cmd
        elif cmd.is_read:
            bank.last_read = cmd
        elif cmd.is_write:
            bank.last_write = cmd
        if cmd.kind == PRE and bank.act is not None:
            # A PRE to a closed bank is a NOP: it does not restart tRP.
            if bank.pre is None or bank.act.line > bank.pre.line:
                bank.pre, bank.idle_at, bank.idle_rule = cmd, cmd.cycle + p.tRP, "tRP"
        elif cmd.kind == READ_P:
            bank.pre, bank.idle_rule = cmd, "tRTP+tRP"
            bank.idle_at = cmd.cycle + p.AL + p.tRTP + p.tRP
        elif cmd.kind == WRITE_P:
            bank.pre, bank.idle_rule = cmd, "tDAL"
            bank.idle_at = cmd.cycle + p.WL + p.burst + p.tWR + p.wr_extra + p.tRP


class ActivationRules(_RuleFamily):
    """Rank-level activation rules.

    * ACT -> ACT, same rank: tRRD_L within a bank group, tRRD_S across bank groups
      (tRRD_S everywhere when the device has a single bank group);
    * tFAW: at most 4 ACTs in any tFAW window, i.e. ACT n and ACT n-4 at least tFAW apart;
    * t32AW (GDDR): at most 32 ACTs in any t32AW window;
    * per-bank / same-bank REFRESH -> ACT of a bank it did not refresh: DDR5 tREFSBRD, HBM3
      tRREFD (which also spaces two per-bank refreshes of different banks);
    * HBM3: ACT -> REFpb of another bank waits tRRD_S (rule ``tRRD (ACT -> REFpb)``).
    """

    def __init__(self, p: CheckParams) -> None:
        super().__init__(p)
        self.last_act: dict[tuple[int, int], Cmd] = {}       # (rank, bg) -> last ACT
        self.window: dict[int, deque[Cmd]] = {}              # rank -> recent ACTs
        self.depth = 32 if p.t32AW is not None else 4
        self.last_refb: dict[int, Cmd] = {}                  # rank -> last REFRESH_BANK

    def _after_refb(self, cmd: Cmd) -> list[Violation]:
        """tREFSBRD / tRREFD: ``cmd`` to a bank the rank's last REFRESH_BANK did not cover."""
        p = self.p
        refb = self.last_refb.get(cmd.rank)
        if refb is None or p.tREFSBRD <= 0 or any(
                c.bank_key == cmd.bank_key for c in _covered(refb, p)):
            return []
        return _late(cmd, p.refb_other_rule, refb, refb.cycle + p.tREFSBRD)

    def _act_before_refb(self, cmd: Cmd) -> list[Violation]:
        """ACT -> REFpb of another bank: tRRD_S after the rank's latest ACT (an ACT to the
        refreshed bank itself is followed by its PRE and tRP, far more than tRRD)."""
        last = max((a for (r, _), a in self.last_act.items() if r == cmd.rank),
                   key=lambda a: a.cycle, default=None)
        if last is None or last.bank_key == cmd.bank_key:
            return []
        return _late(cmd, "tRRD (ACT -> REFpb)", last, last.cycle + self.p.tRRD_S)

    def check(self, cmd: Cmd) -> list[Violation]:
        if cmd.kind == REF_BANK:
            out = self._after_refb(cmd) if self.p.refb_refb_other else []
            return out + (self._act_before_refb(cmd) if self.p.act_refb_rrd else [])
        if cmd.kind != ACT:
            return []
        p = self.p
        out = self._after_refb(cmd)
        same = self.last_act.get((cmd.rank, cmd.bankgroup))
        other = max((a for (r, g), a in self.last_act.items()
                     if r == cmd.rank and g != cmd.bankgroup),
                    key=lambda a: a.cycle, default=None)
        if same is not None:
            out += _late(cmd, "tRRD_L" if p.bankgroups > 1 else "tRRD_S", same,
                         same.cycle + p.tRRD_L)
        if other is not None:
            out += _late(cmd, "tRRD_S", other, other.cycle + p.tRRD_S)
        recent = self.window.get(cmd.rank, deque())
        if len(recent) >= 4:
            fourth = recent[-4]
            out += _late(cmd, "tFAW", fourth, fourth.cycle + p.tFAW,
                         "5 ACTs in one tFAW window")
        if p.t32AW is not None and len(recent) >= 32:
            first = recent[-32]
            out += _late(cmd, "t32AW", first, first.cycle + p.t32AW,
                         "33 ACTs in one t32AW window")
        return out

    def update(self, cmd: Cmd) -> None:
        if cmd.kind == REF_BANK:
            self.last_refb[cmd.rank] = cmd
        if cmd.kind != ACT:
            return
        self.last_act[(cmd.rank, cmd.bankgroup)] = cmd
        self.window.setdefault(cmd.rank, deque(maxlen=self.depth)).append(cmd)


class ColumnRules(_RuleFamily):
    """Column-to-column rules within a rank.

    * READ -> READ and WRITE -> WRITE: tCCD_L within a bank group, tCCD_S across bank groups
      (tCCD_S everywhere with a single bank group). The data-bus rule adds "at least a burst";
    * WRITE -> READ: CWL + burst + tWTR_L (same bank group) / tWTR_S (other bank group),
      i.e. tWTR counted from the end of the write burst to the read (JEDEC; AL cancels).
      Strict LPDDR4 adds 1 cycle.
    * READ -> WRITE is a data-bus turnaround rule (:class:`DataBusRules`).

    Across ranks only the data bus constrains column commands.
    """

    def __init__(self, p: CheckParams) -> None:
        super().__init__(p)
        # (rank, bg, is_write) -> last column command of that direction
        self.last: dict[tuple[int, int, bool], Cmd] = {}

    def _latest(self, rank: int, bg: int, write: bool, same_bg: bool) -> Cmd | None:
        if same_bg:
            return self.last.get((rank, bg, write))
        return max((c for (r, g, w), c in self.last.items()
                    if r == rank and g != bg and w == write), key=lambda c: c.cycle, default=None)

    def check(self, cmd: Cmd) -> list[Violation]:
        if not cmd.is_column:
            return []
        p = self.p
        multi_bg = p.bankgroups > 1
        out: list[Violation] = []
        write = cmd.is_write
        same = self._latest(cmd.rank, cmd.bankgroup, write, True)
        other = self._latest(cmd.rank, cmd.bankgroup, write, False)
        if same is not None and write and p.tCCD_L_WR > 0 and multi_bg:
            out += _late(cmd, "tCCD_L_WR", same, same.cycle + max(p.tCCD_L_WR, p.burst))
        elif same is not None:
            out += _late(cmd, "tCCD_L" if multi_bg else "tCCD_S", same, same.cycle + p.tCCD_L)
        if other is not None:
            out += _late(cmd, "tCCD_S", other, other.cycle + p.tCCD_S)
        if not write:
            base = p.CWL + p.burst + p.wr_extra
            wsame = self._latest(cmd.rank, cmd.bankgroup, True, True)
            wother = self._latest(cmd.rank, cmd.bankgroup, True, False)
            if wsame is not None:
                out += _late(cmd, "tWTR_L" if multi_bg else "tWTR_S", wsame,
                             wsame.cycle + base + p.tWTR_L)
            if wother is not None:
                out += _late(cmd, "tWTR_S", wother, wother.cycle + base + p.tWTR_S)
        return out

    def update(self, cmd: Cmd) -> None:
        if cmd.is_column:
            self.last[(cmd.rank, cmd.bankgroup, cmd.is_write)] = cmd


class PrechargeRules(_RuleFamily):
    """PRE -> PRE within a rank: tPPD (where the standard has it, only when tPPD > 0)."""

    def __init__(self, p: CheckParams) -> None:
        super().__init__(p)
        self.last_pre: dict[int, Cmd] = {}

    def check(self, cmd: Cmd) -> list[Violation]:
        if cmd.kind != PRE or self.p.tPPD <= 0:
            return []
        prev = self.last_pre.get(cmd.rank)
        return _late(cmd, "tPPD", prev, prev.cycle + self.p.tPPD) if prev else []

    def update(self, cmd: Cmd) -> None:
        if cmd.kind == PRE:
            self.last_pre[cmd.rank] = cmd


class RefreshRules(_RuleFamily):
    """Refresh and self-refresh timing of a rank.

    * REFRESH -> ACT / REFRESH / REFRESH_BANK / SELF_REFRESH_ENTER: tRFC;
    * REFRESH_BANK -> REFRESH (same rank): tRFCb (the per-bank refresh must be finished;
      REFb -> ACT/REFb of the same bank is in :class:`SameBankRules`);
    * SELF_REFRESH_ENTER -> SELF_REFRESH_EXIT: tCKESR; SELF_REFRESH_EXIT -> ACT / REF / REFb /
      SRE: tXS (both only when the configuration gives them);
    * refresh rate: every bank must be refreshed (REFRESH, its REFRESH_BANK, or self refresh) at
      least every 9 x tREFI — JEDEC lets a controller postpone up to 8 REFs. The trace is
      assumed to start at cycle 0 with a freshly initialised device. A missed deadline is
      reported once, on the first command of the channel past it (rule ``tREFI postponement``).
    """

    def __init__(self, p: CheckParams) -> None:
        super().__init__(p)
        self.last_ref: dict[int, Cmd] = {}
        self.last_refb_rank: dict[int, Cmd] = {}
        self.sre: dict[int, Cmd] = {}
        self.srx: dict[int, Cmd] = {}
        self.in_sref: set[int] = set()
        # Refresh-rate bookkeeping: rank -> {bank or None (= all banks): (cycle, cmd)}
        self.refreshed: dict[int, dict[tuple[int, int] | None, tuple[int, Cmd | None]]] = {
            r: {None: (0, None)} for r in range(p.ranks)}
        self.reported: set[tuple[int, int]] = set()

    def _oldest(self, rank: int) -> tuple[int, Cmd | None]:
        """The least recently refreshed bank of a rank: (cycle, refreshing command)."""
        marks = self.refreshed.setdefault(rank, {None: (0, None)})
        all_banks = marks[None]
        per_bank = [v for k, v in marks.items() if k is not None]
        if self.p.banks_per_group * self.p.bankgroups > len(per_bank):
            return min([all_banks] + per_bank, key=lambda v: v[0])
        return min(per_bank, key=lambda v: v[0])

    def _postponement(self, cmd: Cmd) -> list[Violation]:
        out: list[Violation] = []
        gap = self.p.max_refi_gap
        limit = gap * self.p.tREFI
        for rank in sorted(self.refreshed):
            if rank in self.in_sref:
                continue
            since, by = self._oldest(rank)
            deadline = since + limit
            if cmd.cycle > deadline and (rank, since) not in self.reported:
                self.reported.add((rank, since))
                text = (f"{cmd.describe()}: tREFI postponement: rank {rank} must be refreshed "
                        f"by cycle {deadline} ({gap} x tREFI = {limit} cycles after "
                        f"{by.describe() if by else 'the start of the trace'})")
                out.append(Violation(line=cmd.line, cycle=cmd.cycle, command=cmd.kind,
                                     rule="tREFI postponement",
                                     ref_line=by.line if by else None, required=deadline,
                                     actual=cmd.cycle, message=text))
        return out

    def check(self, cmd: Cmd) -> list[Violation]:
        p = self.p
        out = self._postponement(cmd)
        ref = self.last_ref.get(cmd.rank)
        if cmd.kind in (ACT, REF, REF_BANK, SREF_ENTER):
            if ref is not None:
                out += _late(cmd, "tRFC", ref, ref.cycle + p.tRFC)
            srx = self.srx.get(cmd.rank)
            if srx is not None and p.tXS is not None:
                out += _late(cmd, "tXS", srx, srx.cycle + p.tXS)
        if cmd.kind in (REF, SREF_ENTER):
            refb = self.last_refb_rank.get(cmd.rank)
            if refb is not None:
                out += _late(cmd, "tRFCb", refb, refb.cycle + p.tRFCb)
        if cmd.kind == SREF_EXIT and p.tCKESR is not None:
            sre = self.sre.get(cmd.rank)
            if sre is not None:
                out += _late(cmd, "tCKESR", sre, sre.cycle + p.tCKESR)
        return out

    def update(self, cmd: Cmd) -> None:
        marks = self.refreshed.setdefault(cmd.rank, {None: (0, None)})
        if cmd.kind in (REF, SREF_EXIT):
            if cmd.kind == REF:
                self.last_ref[cmd.rank] = cmd
            else:
                self.srx[cmd.rank] = cmd
                self.in_sref.discard(cmd.rank)
            marks.clear()
            marks[None] = (cmd.cycle, cmd)
        elif cmd.kind == REF_BANK:
            self.last_refb_rank[cmd.rank] = cmd
            for c in _covered(cmd, self.p):
                marks[c.bank_key] = (cmd.cycle, cmd)
        elif cmd.kind == SREF_ENTER:
            self.sre[cmd.rank] = cmd
            self.in_sref.add(cmd.rank)


@dataclass(slots=True)
class _Burst:
    start: int
    end: int
    is_read: bool
    cmd: Cmd


class DataBusRules(_RuleFamily):
    """The shared DQ bus of a channel.

    A READ issued at t drives data in [t + RL, t + RL + burst), a WRITE in
    [t + WL, t + WL + burst). Bursts must not overlap (``data bus overlap``), and when the
    driver of the bus changes there must be a gap of tRTRS cycles between them:

    * read burst then write burst: ``RD->WR turnaround`` (gap ``tRTRS``; strict DDR4:
      tRTRS + write preamble, at least 2, i.e. JEDEC's RL + BL/2 - WL + 2 tCK);
    * write burst then read burst: ``WR->RD turnaround`` (gap tRTRS; within a rank tWTR is
      larger and reported by :class:`ColumnRules`);
    * read bursts from different ranks: ``rank switch turnaround`` (gap tRTRS);
    * write bursts to different ranks: no gap (the controller drives both; strict: tRTRS).

    This is how DRAMsim3 uses tRTRS. JEDEC's DDR4 RD->WR formula RL + BL/2 - WL + 2 tCK
    contains one turnaround cycle plus the 1 tCK write preamble; DRAMsim3's configs fold both
    into tRTRS (= 1 for DDR4-3200), so by default we demand exactly tRTRS.

    Bursts are compared in time order, not command order: a WRITE issued after a READ can
    put its burst first because WL < RL.
    """

    def __init__(self, p: CheckParams) -> None:
        super().__init__(p)
        self.bursts: list[_Burst] = []
        self.max_gap = max(p.tRTRS, p.rd_wr_gap, p.wr_wr_rank_gap)

    def _burst(self, cmd: Cmd) -> _Burst:
        lat = self.p.RL if cmd.is_read else self.p.WL
        return _Burst(cmd.cycle + lat, cmd.cycle + lat + self.p.burst, cmd.is_read, cmd)

    def _gap(self, first: _Burst, second: _Burst) -> tuple[int, str]:
        """Gap required between two bursts in time order, and the rule's name."""
        p = self.p
        if first.is_read and not second.is_read:
            return p.rd_wr_gap, "RD->WR turnaround"
        if not first.is_read and second.is_read:
            return p.tRTRS, "WR->RD turnaround"
        if first.cmd.rank != second.cmd.rank:
            return (p.tRTRS if first.is_read else p.wr_wr_rank_gap), "rank switch turnaround"
        return 0, "data bus overlap"

    def check(self, cmd: Cmd) -> list[Violation]:
        if not cmd.is_column:
            return []
        new = self._burst(cmd)
        lat = new.start - cmd.cycle
        worst: Violation | None = None
        for old in self.bursts:
            if new.start >= old.start:
                gap, rule = self._gap(old, new)
                ok = new.start >= old.end + gap
            else:
                gap, rule = self._gap(new, old)
                ok = new.end + gap <= old.start
            if ok:
                continue
            if new.start < old.end and old.start < new.end:
                rule = "data bus overlap"
            required = old.end + gap - lat
            v = _violation(cmd, rule, old.cmd, required,
                           f"bursts [{old.start},{old.end}) and [{new.start},{new.end}), "
                           f"gap needed {gap}")
            if worst is None or v.required > worst.required:
                worst = v
        return [worst] if worst is not None else []

    def update(self, cmd: Cmd) -> None:
        if cmd.is_column:
            self.bursts.append(self._burst(cmd))
        # Forget bursts no future burst can reach (future bursts start >= now + min latency).
        horizon = cmd.cycle + min(self.p.RL, self.p.WL) - self.max_gap
        if self.bursts and self.bursts[0].end < horizon:
            self.bursts = [b for b in self.bursts if b.end >= horizon]


class CommandBusRules(_RuleFamily):
    """The command bus of a channel: one command per cycle, and commands in time order.

    HBM (``hbm_dual_cmd``) has separate row and column command buses, so one row command
    (ACT, PRE, REF, REFb, SRE, SRX) and one column command may share a cycle. A two-cycle
    command (``bus_cycles``: DDR5 ACT/RD/WR, LPDDR5 ACT-1+ACT-2, HBM3 ACT) keeps its bus busy
    in the following cycle too.
    """

    def __init__(self, p: CheckParams) -> None:
        super().__init__(p)
        self.cycle = -1
        self.same_cycle: list[Cmd] = []
        self.cycles = dict(p.bus_cycles)
        self.busy: dict[bool, tuple[int, Cmd]] = {}    # bus (column?) -> (free at, by)

    def _bus(self, cmd: Cmd) -> bool:
        return cmd.is_column if self.p.hbm_dual_cmd else False

    def check(self, cmd: Cmd) -> list[Violation]:
        if cmd.cycle < self.cycle:
            return [_violation(cmd, "command order", self.same_cycle[-1], self.cycle,
                               "trace cycles must not decrease")]
        busy = self.busy.get(self._bus(cmd))
        if busy is not None and busy[1].cycle < cmd.cycle < busy[0]:
            return [_violation(cmd, "command bus", busy[1], busy[0],
                               f"{busy[1].kind} is a {busy[0] - busy[1].cycle}-cycle command")]
        if cmd.cycle > self.cycle or not self.same_cycle:
            return []
        if self.p.hbm_dual_cmd and len(self.same_cycle) == 1 and \
                self.same_cycle[0].is_column != cmd.is_column:
            return []
        return [_violation(cmd, "command bus", self.same_cycle[0], cmd.cycle + 1,
                           "one command per cycle" + (" (HBM: one row + one column)"
                                                      if self.p.hbm_dual_cmd else ""))]

    def update(self, cmd: Cmd) -> None:
        if cmd.cycle != self.cycle:
            if cmd.cycle < self.cycle:
                return
            self.cycle, self.same_cycle = cmd.cycle, []
        self.same_cycle.append(cmd)
        n = self.cycles.get(cmd.kind, 1)
        if n > 1:
            self.busy[self._bus(cmd)] = (cmd.cycle + n, cmd)


_FAMILIES: tuple[type[_RuleFamily], ...] = (
    CommandBusRules, BankStateRules, SameBankRules, ActivationRules, ColumnRules,
    PrechargeRules, RefreshRules, DataBusRules)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------
def check_commands(cmds: Iterable[Cmd], params: CheckParams) -> list[Violation]:
    """Check the commands of ONE channel, in trace order, against every rule family."""
    families = [f(params) for f in _FAMILIES]
    out: list[Violation] = []
    for cmd in cmds:
        for fam in families:
            out.extend(fam.check(cmd))
        for fam in families:
            fam.update(cmd)
    return out


def _split_channels(cmds: list[Cmd], channel: int | None, source: str,
                    channels: int | None = None) -> dict[int, list[Cmd]]:
    """Group commands by channel; lines printing channel -1 go to ``channel``. A channel
    outside the config's ``channels`` (given or printed) is a TraceError."""
    path = Path(source) if source != "<lines>" else None

    def error(message: str, line: int | None = None) -> TraceError:
        # (lines without a file: the line number leads the message, as the parser's do)
        if path is None and line is not None:
            message = f"line {line}: {message}"
        return TraceError(message, path=path, line=line)
    if channels is not None and channel is not None and not 0 <= channel < channels:
        raise error(f"channel {channel}: the memory has {channels} channel(s) (expected 0 to "
                    f"{channels - 1})")
    if channels is not None:
        bad = next((c for c in cmds if c.channel >= channels), None)
        if bad is not None:
            raise error(f"channel {bad.channel}: the memory has {channels} channel(s) "
                        f"(expected 0 to {channels - 1}; is this the config the trace was "
                        "made with?)", bad.line)
    seen = sorted({c.channel for c in cmds if c.channel >= 0})
    if channel is None:
        if len(seen) > 1 and any(c.channel < 0 for c in cmds):
            first = next(c for c in cmds if c.channel < 0)
            raise error(f"the trace mixes channels {seen} and commands without a channel "
                        "(-1, as a one-channel command trace prints them): check each "
                        "channel's file on its own (--channel N names the channel of a file's "
                        "-1 lines)", first.line)
        channel = seen[0] if seen else 0
    groups: dict[int, list[Cmd]] = {}
    for c in cmds:
        groups.setdefault(c.channel if c.channel >= 0 else channel, []).append(c)
    return groups


def check_command_trace(path_or_lines: str | Path | Iterable[str], cfg: Any, *,
                        channel: int | None = None, strict: bool = False) -> list[Violation]:
    """Check a DRAMsim3 command trace against the JEDEC timing rules of ``cfg``.

    ``path_or_lines`` is a trace file (plain or gzip) or an iterable of lines; ``cfg`` an
    ``engine.config.MemoryConfig`` (or any object with the same attribute names). Commands
    printing channel -1 belong to ``channel`` (default: the one channel the file names).
    ``strict=True`` adds the JEDEC terms DRAMsim3 leaves out (see the module docstring).

    Returns the violations sorted by line; an empty list means the trace is clean.
    """
    cmds = parse_command_trace(path_or_lines)
    params = CheckParams.from_config(cfg, strict=strict)
    source = str(path_or_lines) if isinstance(path_or_lines, (str, Path)) else "<lines>"
    out: list[Violation] = []
    channels = getattr(cfg, "channels", None)
    for ch, ch_cmds in sorted(_split_channels(cmds, channel, source,
                                              int(channels) if channels else None).items()):
        found = check_commands(ch_cmds, params)
        logger.debug("%s channel %d: %d commands, %d violations", source, ch, len(ch_cmds),
                     len(found))
        out.extend(found)
    out.sort(key=lambda v: (v.line, v.rule))
    if out:
        logger.debug("%s: %d JEDEC timing violation(s); first: %s", source, len(out),
                     out[0].message)
    else:
        logger.debug("%s: %d commands, no JEDEC timing violations", source, len(cmds))
    return out
