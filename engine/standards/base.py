"""The vocabulary every DRAM standard module is written in.

A standard (one module each in this package, as Ramulator 2 keeps one ``dram/impl/*.cpp``
per standard) declares, as data:

* its **levels** (channel, rank or pseudo-channel, bank group, bank, row, column);
* its **commands**: which of the engine's command codes it has, under the standard's own
  mnemonic (``REFab``, ``REFsb``, ``REFpb`` ...), the level each addresses and how many
  command-bus cycles it takes (DDR5's ACT/RD/WR are two-cycle commands);
* its **timing constraints**: ``(scope, preceding commands, following commands, delay)``
  where the delay names one of the derived delays of :func:`engine.timing.derived_delays`;
* its **refresh kinds** (all-bank, per-bank, same-bank) with the configuration fields that
  give their cycle time and interval and the ``refresh_policy`` values that issue them;
* its **power states** and the **IDD mapping** the energy model reads;
* its **presets** (files in ``resources/presets/dram``) and the burst / column quirks the
  configuration's derived values need.

The command codes and scopes are the engine's (``engine.timing`` re-exports them; the numba
kernel reads them from there): a standard picks from them, it never renumbers them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

# ---- the engine's command codes, in DRAMsim3's CommandType order --------------------------
RD, RDP, WR, WRP, ACT, PRE, REFB, REF, SREFE, SREFX = range(10)
NCMD = 10
COMMAND_NAMES = ("read", "read_p", "write", "write_p", "activate", "precharge",
                 "refresh_bank", "refresh", "self_refresh_enter", "self_refresh_exit")
COLUMN_COMMANDS = (RD, RDP, WR, WRP)
RANK_COMMANDS = (REF, SREFE, SREFX)        # address a whole rank (pseudo channel)

# ---- timing-constraint scopes (see engine.timing) -----------------------------------------
SAME_BANK, SAME_BG, OTHER_BG, OTHER_RANK, SAME_RANK = range(5)
NSCOPE = 5
SCOPE_NAMES = ("same_bank", "other_banks_same_bankgroup", "other_bankgroups_same_rank",
               "other_ranks", "same_rank")

FAMILIES = ("DDR", "GDDR", "LPDDR", "HBM", "HMC")
LEVELS_DDR = ("channel", "rank", "bankgroup", "bank", "row", "column")
LEVELS_HBM = ("channel", "pseudochannel", "bankgroup", "bank", "row", "column")


@dataclass(frozen=True)
class Command:
    """One command of a standard, mapped onto an engine command code."""

    code: int            # engine command code (RD ... SREFX)
    mnemonic: str        # the standard's own name (RD, RDA, REFab, REFsb, REFpb, ...)
    level: str           # the level it addresses ("bank", "rank", "channel", ...)
    bus_cycles: int = 1  # command-bus cycles it occupies (DDR5 ACT/RD/WR: 2)

    @property
    def trace_name(self) -> str:
        """The name the command trace prints (DRAMsim3's CMD_TRACE spelling)."""
        return COMMAND_NAMES[self.code]


@dataclass(frozen=True)
class Constraint:
    """``following`` may not issue before ``delay`` cycles after ``preceding`` in ``scope``."""

    scope: int
    preceding: tuple[int, ...]
    following: tuple[int, ...]
    delay: str           # a key of engine.timing.derived_delays(cfg)


@dataclass(frozen=True)
class RefreshKind:
    """One refresh command kind of a standard."""

    mnemonic: str        # REFab, REFsb, REFpb
    code: int            # REF or REFB
    covers: str          # "rank", "bank", "same bank of every bank group"
    cycle_time: str      # configuration field of its cycle time (tRFC, tRFCb)
    interval: str        # configuration field of its average interval (tREFI, tREFIb)
    policies: tuple[str, ...]   # refresh_policy values that issue it


@dataclass(frozen=True)
class PowerState:
    """A background state of a rank and the IDD current the energy model charges for it."""

    name: str
    current: str         # configuration field (IDD2N, IDD3N, IDD6x, ...)
    doc: str


#: Energy terms (engine.power) -> the configuration fields they read, as DRAMsim3 maps them.
DEFAULT_IDD: Mapping[str, str] = {
    "act": "IDD0", "pre_pd": "IDD2P", "pre_stb": "IDD2N", "act_stb": "IDD3N",
    "write": "IDD4W", "read": "IDD4R", "ref": "IDD5AB", "refb": "IDD5PB", "sref": "IDD6x"}

DEFAULT_POWER_STATES = (
    PowerState("active standby", "IDD3N", "a bank of the rank is open"),
    PowerState("precharge standby", "IDD2N", "every bank of the rank is closed"),
    PowerState("self refresh", "IDD6x", "the rank is in self refresh"),
    PowerState("precharge power-down", "IDD2P", "not entered by the engine (as DRAMsim3)"),
)


def dramsim3_commands(*, refresh_bank: str = "REFpb", refresh: str = "REFab",
                      two_cycle: tuple[int, ...] = ()) -> tuple[Command, ...]:
    """The ten commands DRAMsim3 models, under a standard's mnemonics."""
    names = {RD: "RD", RDP: "RDA", WR: "WR", WRP: "WRA", ACT: "ACT", PRE: "PRE",
             REFB: refresh_bank, REF: refresh, SREFE: "SRE", SREFX: "SRX"}
    levels = {RD: "column", RDP: "column", WR: "column", WRP: "column", ACT: "row",
              PRE: "bank", REFB: "bank", REF: "rank", SREFE: "rank", SREFX: "rank"}
    return tuple(Command(c, names[c], levels[c], 2 if c in two_cycle else 1)
                 for c in range(NCMD))


def _cols(rd: str, wr: str, scope: int, preceding: tuple[int, ...]) -> tuple[Constraint, ...]:
    return (Constraint(scope, preceding, (RD, RDP), rd), Constraint(scope, preceding, (WR, WRP), wr))


#: The timing constraints DRAMsim3 applies to every standard (its Timing class), in cycles
#: of the derived delays; engine.timing compiles them into the kernel's tables.
DRAMSIM3_CONSTRAINTS: tuple[Constraint, ...] = (
    *_cols("rd_rd_l", "rd_wr", SAME_BG, (RD, RDP)),
    *_cols("rd_rd_s", "rd_wr", OTHER_BG, (RD, RDP)),
    *_cols("rd_rd_o", "rd_wr_o", OTHER_RANK, (RD, RDP)),
    *_cols("wr_rd_l", "wr_wr_l", SAME_BG, (WR, WRP)),
    *_cols("wr_rd_s", "wr_wr_s", OTHER_BG, (WR, WRP)),
    *_cols("wr_rd_o", "wr_wr_o", OTHER_RANK, (WR, WRP)),
    *_cols("rd_rd_l", "rd_wr", SAME_BANK, (RD,)),
    Constraint(SAME_BANK, (RD,), (PRE,), "rd_pre"),
    *_cols("wr_rd_l", "wr_wr_l", SAME_BANK, (WR,)),
    Constraint(SAME_BANK, (WR,), (PRE,), "wr_pre"),
    Constraint(SAME_BANK, (RDP,), (ACT,), "rdp_act"),
    Constraint(SAME_BANK, (RDP,), (REF, REFB, SREFE), "rd_act"),
    Constraint(SAME_BANK, (WRP,), (ACT, REF, REFB, SREFE), "wr_act"),
    Constraint(SAME_BANK, (ACT,), (ACT,), "act_act"),
    Constraint(SAME_BANK, (ACT,), (RD, RDP), "act_rd"),
    Constraint(SAME_BANK, (ACT,), (WR, WRP), "act_wr"),
    Constraint(SAME_BANK, (ACT,), (PRE,), "act_pre"),
    Constraint(SAME_BG, (ACT,), (ACT,), "act_act_l"),
    Constraint(SAME_BG, (ACT,), (REFB,), "act_refb"),
    Constraint(OTHER_BG, (ACT,), (ACT,), "act_act_s"),
    Constraint(OTHER_BG, (ACT,), (REFB,), "act_refb"),
    Constraint(SAME_BANK, (PRE,), (ACT, REF, REFB, SREFE), "pre_act"),
    # Per-bank refresh: our reading, not DRAMsim3's (see engine.timing.build_tables)
    Constraint(SAME_BANK, (REFB,), (ACT, REFB, REF, SREFE), "refb_act"),
    Constraint(SAME_BG, (REFB,), (ACT,), "act_act_l"),
    Constraint(SAME_BG, (REFB,), (REFB,), "refb_act"),
    Constraint(OTHER_BG, (REFB,), (ACT,), "act_act_s"),
    Constraint(OTHER_BG, (REFB,), (REFB,), "refb_act"),
    Constraint(SAME_RANK, (REF,), (ACT, REF, SREFE), "ref_act"),
    Constraint(SAME_RANK, (SREFE,), (SREFX,), "sre_srx"),
    Constraint(SAME_RANK, (SREFX,), (ACT, REF, REFB, SREFE), "srx_any"),
)

#: PRE -> PRE spacing tPPD (GDDR, LPDDR4, LPDDR5, DDR5), within a rank.
PRECHARGE_SPACING: tuple[Constraint, ...] = (
    Constraint(SAME_BG, (PRE,), (PRE,), "pre_pre"),
    Constraint(OTHER_BG, (PRE,), (PRE,), "pre_pre"),
)

def jedec_refresh_bank_rules(constraints: tuple[Constraint, ...]) -> tuple[Constraint, ...]:
    """The JEDEC rule for ACT -> per-bank/same-bank REFRESH to *another* bank: tRRD (as an
    ACT to another bank), not DRAMsim3's tRC. With DRAMsim3's rule every ACT anywhere in the
    rank pushes the pending per-bank refresh back by tRC, so under random traffic per-bank
    refresh starves (seen on LPDDR5: 9 x tREFI exceeded); the native standards use this."""
    out = []
    for c in constraints:
        if c.preceding == (ACT,) and c.following == (REFB,) and c.scope in (SAME_BG, OTHER_BG):
            out.append(Constraint(c.scope, c.preceding, c.following,
                                  "act_act_l" if c.scope == SAME_BG else "act_act_s"))
        else:
            out.append(c)
    return tuple(out)


def refresh_to_other_bank_rules(constraints: tuple[Constraint, ...]) -> tuple[Constraint, ...]:
    """REFRESH_BANK -> ACT of another bank: the configuration's ``tREFSBRD`` (DDR5 tREFSBRD
    after a same-bank refresh, HBM3 tRREFD after a per-bank refresh; 0 = tRRD_S) instead of
    the common rules' tRRD (delay ``refb_other_act``, see :func:`refb_other_act`)."""
    drop = {(SAME_BG, (REFB,), (ACT,)), (OTHER_BG, (REFB,), (ACT,))}
    return tuple(c for c in constraints if (c.scope, c.preceding, c.following) not in drop) + (
        Constraint(SAME_BG, (REFB,), (ACT,), "refb_other_act"),
        Constraint(OTHER_BG, (REFB,), (ACT,), "refb_other_act"),
    )


def refb_other_act(cfg: Any, d: Mapping[str, int]) -> int:
    """The ``refb_other_act`` delay: tREFSBRD, or tRRD_S when the configuration gives 0."""
    return cfg.tREFSBRD or d["act_act_s"]


ALL_REFRESH_POLICIES = ("RANK_LEVEL_SIMULTANEOUS", "RANK_LEVEL_STAGGERED", "BANK_LEVEL_STAGGERED")
REFAB = RefreshKind("REFab", REF, "rank", "tRFC", "tREFI",
                    ("RANK_LEVEL_SIMULTANEOUS", "RANK_LEVEL_STAGGERED"))


def per_bank_refresh(mnemonic: str = "REFpb") -> RefreshKind:
    return RefreshKind(mnemonic, REFB, "bank", "tRFCb", "tREFIb", ("BANK_LEVEL_STAGGERED",))


DelayRule = Callable[[Any, Mapping[str, int]], int]


@dataclass(frozen=True)
class Standard:
    """Everything the engine knows about one DRAM standard (see the module docstring)."""

    name: str
    family: str                       # one of FAMILIES
    document: str                     # the JEDEC document (or DRAMsim3's model of it)
    levels: tuple[str, ...]
    commands: tuple[Command, ...]
    constraints: tuple[Constraint, ...]
    refresh: tuple[RefreshKind, ...]
    presets: tuple[str, ...] = ()
    power_states: tuple[PowerState, ...] = DEFAULT_POWER_STATES
    idd: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_IDD))
    #: data-bus cycles of one burst = BL // burst_divisor (DDR 2, GDDR5 4, GDDR5X 8,
    #: GDDR6 16 as DRAMsim3 models them; LPDDR5: 2 x the WCK:CK ratio, see burst_cycles)
    burst_divisor: int = 2
    #: physical columns from the file's columns: "" as given, "BL" x BL (GDDR), "2" x 2 (HBM)
    column_scale: str = ""
    split_rcd: bool = False           # tRCDRD / tRCDWR instead of tRCD
    dual_command: bool = False        # separate row and column command buses
    wck_clock: bool = False           # data clocked by WCK at wck_ratio x CK (LPDDR5)
    dramsim3: bool = True             # DRAMsim3 knows the protocol name
    bl_choices: tuple[int, ...] = ()  # allowed burst lengths (empty: any power of two)
    max_postponed_refresh: int = 8    # REFab commands the standard lets a controller postpone
    #: derived delays the standard computes differently: name -> f(cfg, common delays)
    delay_rules: Mapping[str, DelayRule] = field(default_factory=dict)
    #: JEDEC rules the checker applies on top of the common ones (engine.jedec_check)
    checker: Mapping[str, Any] = field(default_factory=dict)
    #: configuration fields only this standard reads (tCCD_L_WR, tREFSBRD, wck_ratio)
    extra_fields: tuple[str, ...] = ()

    def command(self, code: int) -> Command:
        for c in self.commands:
            if c.code == code:
                return c
        raise KeyError(f"{self.name} has no command with code {code}")

    def mnemonic(self, code: int) -> str:
        return self.command(code).mnemonic

    @property
    def refresh_policies(self) -> tuple[str, ...]:
        """The refresh_policy values this standard supports, in declaration order."""
        out: list[str] = []
        for kind in self.refresh:
            out += [p for p in kind.policies if p not in out]
        return tuple(out)

    def refresh_kind(self, policy: str) -> RefreshKind:
        for kind in self.refresh:
            if policy in kind.policies:
                return kind
        raise KeyError(policy)

    def burst_cycles(self, bl: int, wck_ratio: int = 0) -> int:
        """Data-bus cycles (of tCK) one burst of ``bl`` beats occupies."""
        if self.wck_clock:
            return bl // (2 * max(wck_ratio, 1))
        return bl // self.burst_divisor

    def bus_cycles(self, code: int) -> int:
        try:
            return self.command(code).bus_cycles
        except KeyError:
            return 1
