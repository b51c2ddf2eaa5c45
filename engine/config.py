"""Memory configuration: the :class:`MemoryConfig` dataclass, its validation and its file formats.

Three ways in, all ending in :meth:`MemoryConfig.validate`:

* :func:`load_ini` reads a DRAMsim3 ``.ini`` file with DRAMsim3's defaults for missing keys;
  :func:`dump_ini` writes one back (our own extensions go to a ``[diffmem]`` section, which
  DRAMsim3 ignores).
* :func:`load_preset` / :func:`save_preset` read and write our own TOML preset format
  (``resources/presets/dram/<NAME>.toml``, sections ``[organisation] [timing] [power]
  [controller]``, one commented line per value).
* :meth:`MemoryConfig.to_dict` / :meth:`MemoryConfig.from_dict` for JSON project files.

Every field is declared once, in the class body, together with its GUI section, DRAMsim3 ini
section, unit and description; :data:`PARAMETERS` lists those declarations for parsers and
form builders. The derived read-only properties reproduce DRAMsim3's ``Config`` derivations
(``InitDRAMParams``, ``CalculateSize``, ``SetAddressMapping``, ``InitTimingParams``,
``InitPowerParams``) exactly, quirks included; timing values are in DRAM clock cycles (tCK).
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from . import standards
from .errors import ConfigError
from .fileio import atomic_write_text
from .policies import PAGE_POLICIES, REFRESH_POLICIES, SCHEDULERS
from .standards import PROTOCOLS

log = logging.getLogger(__name__)

#: Folder of the shipped DRAM presets.
PRESET_DIR = Path(__file__).resolve().parents[1] / "resources" / "presets" / "dram"

# PROTOCOLS (every DRAM standard's name) comes from engine.standards, one module each;
# REFRESH_POLICIES (DRAMsim3's RefreshPolicy enum order, then DDR5's SAME_BANK_STAGGERED),
# SCHEDULERS and PAGE_POLICIES from engine.policies, declared once.
QUEUE_STRUCTURES = ("PER_BANK", "PER_RANK")
ROW_BUF_POLICIES = ("OPEN_PAGE", "CLOSE_PAGE")
ADDRESS_FIELDS = ("ch", "ra", "bg", "ba", "ro", "co")
SECTIONS = ("organisation", "timing", "power", "controller")
_INI_SECTIONS = ("dram_structure", "timing", "power", "system", "other", "hmc", "diffmem")

# Keys DRAMsim3 reads that we do not model (accepted, logged at debug level).
_DRAMSIM3_UNMODELLED = {
    "dram_structure": {"num_dies"},
    "timing": {"ideal_memory_latency"},
    "system": {"aggressive_precharging_enabled"},
    "other": {"output_level", "output_prefix"},
}
# Datasheet keys found in DRAMsim3's own shipped configs that DRAMsim3 never reads. They are
# accepted (debug log) even in strict mode, so that strict mode still catches real typos.
_DATASHEET_KEYS = {
    "timing": {"trfc2", "trfc4", "twr2", "refi", "trtp_l", "trtp_s", "refresh_period", "tcksre",
               "tcmd", "activation_window_depth", "trrefd", "trfcpb", "tcas", "tcwd"},
    "power": {"ipp0", "idd3p", "idd1", "idd2q", "idd3pf", "idd3ps", "idd5", "idd6", "idd6l",
              "idd7"},
    "other": {"validation_output"},
}
_ErrorFactory = Callable[[str, str], ConfigError]   # (key, message) -> exception
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


@dataclass(frozen=True)
class ParamSpec:
    """Declaration of one configuration field (drives parsing, defaults, dumping and GUI forms)."""

    name: str                   # field name == DRAMsim3 key (case as DRAMsim3 spells it)
    section: str                # our TOML / GUI section: organisation | timing | power | controller
    kind: str                   # "int" | "float" | "bool" | "str"
    default: Any
    unit: str
    doc: str
    ini_section: str = ""       # DRAMsim3 ini section ("diffmem" for our extensions)
    dramsim3: bool = True       # False: DRAMsim3 does not know this key
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    power_of_two: bool = False
    optional: bool = False      # None allowed (means "not given")


def _p(default: Any, section: str, ini: str, unit: str, doc: str, *, kind: str = "",
       choices: tuple[str, ...] = (), minimum: float | None = None,
       maximum: float | None = None, pow2: bool = False, dramsim3: bool | None = None,
       optional: bool = False) -> Any:
    """Declare a dataclass field together with its :class:`ParamSpec` attributes."""
    if not kind:
        kind = {bool: "bool", int: "int", float: "float", str: "str"}[type(default)]
    meta = dict(section=section, kind=kind, unit=unit, doc=doc, ini_section=ini,
                dramsim3=(ini != "diffmem") if dramsim3 is None else dramsim3, choices=choices,
                minimum=minimum, maximum=maximum, power_of_two=pow2, optional=optional)
    return field(default=default, metadata={"spec": meta})


def _t(default: int, doc: str, minimum: int = 0) -> Any:
    """A DRAMsim3 timing parameter in cycles."""
    return _p(default, "timing", "timing", "tCK", doc, minimum=minimum)


def _i(default: float, doc: str) -> Any:
    """A DRAMsim3 IDD current."""
    return _p(float(default), "power", "power", "mA", doc, minimum=0.0)


def _x(default: Any, unit: str, doc: str, **kw: Any) -> Any:
    """One of our controller extensions (DRAMsim3 does not know it)."""
    return _p(default, "controller", "diffmem", unit, doc, **kw)


def _log2(n: int) -> int:
    """DRAMsim3's LogBase2: floor(log2(n)), 0 for n <= 1."""
    return n.bit_length() - 1 if n > 1 else 0


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


@dataclass
class MemoryConfig:
    """One memory system: organisation, timing, power and controller settings.

    Fields hold values as given in the file (raw); DRAMsim3's derived values are properties.
    The object stays editable; call :meth:`validate` (or use :meth:`replace`) after edits.
    """

    name: str = "unnamed"
    # ---- organisation ------------------------------------------------------------------
    protocol: str = _p("DDR3", "organisation", "dram_structure", "", "DRAM standard",
                       choices=PROTOCOLS)
    bankgroups: int = _p(2, "organisation", "dram_structure", "", "bank groups per rank",
                         minimum=1, pow2=True)
    banks_per_group: int = _p(2, "organisation", "dram_structure", "", "banks per bank group",
                              minimum=1, pow2=True)
    bankgroup_enable: bool = _p(True, "organisation", "dram_structure", "",
                                "false folds all banks into one bank group (GDDR)")
    rows: int = _p(1 << 16, "organisation", "dram_structure", "", "rows per bank",
                   minimum=1, pow2=True)
    columns: int = _p(1 << 10, "organisation", "dram_structure", "",
                      "columns per row as in the file (GDDR: x BL, HBM: x 2 internally)",
                      minimum=1, pow2=True)
    device_width: int = _p(8, "organisation", "dram_structure", "bits", "data pins per device",
                           minimum=1, pow2=True)
    BL: int = _p(8, "organisation", "dram_structure", "beats",
                 "burst length (HMC derives it from block_size)", minimum=0)
    wck_ratio: int = _p(0, "organisation", "diffmem", "", "LPDDR5: WCK to CK clock ratio "
                        "(2 or 4; a burst takes BL / (2 x ratio) cycles of tCK); unused by "
                        "other standards", minimum=0, maximum=4)
    channels: int = _p(1, "organisation", "system", "", "independent channels",
                       minimum=1, pow2=True)
    bus_width: int = _p(64, "organisation", "system", "bits", "data bus width per channel",
                        minimum=8, pow2=True)
    channel_size: int = _p(1024, "organisation", "system", "MB",
                           "requested capacity per channel (sets the number of ranks)", minimum=1)
    address_mapping: str = _p("chrobabgraco", "organisation", "system", "",
                              "six 2-letter fields (ch ra bg ba ro co), most significant first")
    num_links: int = _p(4, "organisation", "hmc", "", "HMC links", minimum=1)
    link_width: int = _p(16, "organisation", "hmc", "bits", "HMC link width", minimum=1)
    link_speed: int = _p(15000, "organisation", "hmc", "MHz", "HMC link speed", minimum=1)
    block_size: int = _p(64, "organisation", "hmc", "bytes", "HMC block size (sets BL)",
                         minimum=1)
    xbar_queue_depth: int = _p(16, "organisation", "hmc", "", "HMC crossbar queue depth",
                               minimum=1)
    # ---- timing ------------------------------------------------------------------------
    tCK: float = _p(1.0, "timing", "timing", "ns", "clock period", minimum=0.0)
    AL: int = _t(0, "additive latency")
    CL: int = _t(12, "CAS (read) latency")
    CWL: int = _t(12, "CAS write latency")
    tCCD_L: int = _t(6, "column to column, same bank group")
    tCCD_S: int = _t(4, "column to column, other bank group")
    tCCD_L_WR: int = _p(0, "timing", "diffmem", "tCK", "DDR5: WRITE to WRITE, same bank group "
                        "(0 = tCCD_L); unused by other standards", minimum=0)
    tRTRS: int = _t(2, "rank to rank switch / bus turnaround")
    tRTP: int = _t(5, "READ to PRECHARGE")
    tWTR_L: int = _t(5, "end of write data to READ, same bank group")
    tWTR_S: int = _t(5, "end of write data to READ, other bank group")
    tWR: int = _t(10, "write recovery: end of write data to PRECHARGE")
    tRP: int = _t(10, "PRECHARGE to ACTIVATE")
    tRRD_L: int = _t(4, "ACTIVATE to ACTIVATE, same bank group")
    tRRD_S: int = _t(4, "ACTIVATE to ACTIVATE, other bank group")
    tRAS: int = _t(24, "ACTIVATE to PRECHARGE")
    tRCD: int = _t(10, "ACTIVATE to READ/WRITE (not GDDR/HBM)")
    tRFC: int = _t(74, "all-bank REFRESH cycle time")
    tRFCb: int = _t(20, "per-bank REFRESH cycle time")
    tREFI: int = _t(7800, "average all-bank refresh interval", minimum=1)
    tREFIb: int = _t(1950, "per-bank refresh interval", minimum=1)
    tREFSBRD: int = _p(0, "timing", "diffmem", "tCK", "DDR5 tREFSBRD, HBM3 tRREFD: same-bank or "
                       "per-bank REFRESH to ACTIVATE of another bank (0 = tRRD_S); unused by "
                       "other standards", minimum=0)
    tFAW: int = _t(50, "four-activate window")
    t32AW: int = _t(330, "32-activate window (GDDR)")
    tPPD: int = _t(0, "PRECHARGE to PRECHARGE (GDDR, LPDDR4)")
    tRCDRD: int = _t(24, "ACTIVATE to READ (GDDR/HBM)")
    tRCDWR: int = _t(20, "ACTIVATE to WRITE (GDDR/HBM)")
    tCKE: int = _t(6, "CKE minimum pulse width (not modelled by DRAMsim3)")
    tCKESR: int = _t(12, "self-refresh entry to exit")
    tXS: int = _t(432, "self-refresh exit to next valid command")
    tXP: int = _t(8, "power-down exit (not modelled by DRAMsim3)")
    tRPRE: int = _t(1, "read preamble (not modelled by DRAMsim3)")
    tWPRE: int = _t(1, "write preamble (not modelled by DRAMsim3)")
    # ---- power -------------------------------------------------------------------------
    VDD: float = _p(1.2, "power", "power", "V", "core supply voltage", minimum=0.0)
    IDD0: float = _i(48, "one-bank ACTIVATE-PRECHARGE current")
    IDD2P: float = _i(25, "precharge power-down current")
    IDD2N: float = _i(34, "precharge standby current")
    IDD3N: float = _i(43, "active standby current")
    IDD4W: float = _i(123, "burst write current")
    IDD4R: float = _i(135, "burst read current")
    IDD5AB: float = _i(250, "all-bank refresh current")
    IDD5PB: float = _i(5, "per-bank refresh current")
    IDD6x: float = _i(31, "self-refresh current")
    VDDQ: float | None = _p(None, "power", "power", "V", "I/O supply voltage for IO energy "
                            "(unset: the standard's in resources/io_energy.toml; IO energy is "
                            "reported apart from DRAMsim3's core energy)", kind="float",
                            minimum=0.0, dramsim3=False, optional=True)
    # ---- controller (DRAMsim3 keys) ----------------------------------------------------
    queue_structure: str = _p("PER_BANK", "controller", "system", "",
                              "command queue per bank or per rank", choices=QUEUE_STRUCTURES)
    row_buf_policy: str = _p("OPEN_PAGE", "controller", "system", "",
                             "DRAMsim3 row-buffer policy", choices=ROW_BUF_POLICIES)
    cmd_queue_size: int = _p(16, "controller", "system", "commands", "capacity of each command "
                             "queue", minimum=1)
    trans_queue_size: int = _p(32, "controller", "system", "requests",
                               "read queue and write buffer capacity", minimum=1)
    unified_queue: bool = _p(False, "controller", "system", "", "one queue for reads and writes")
    write_buf_size: int = _p(16, "controller", "system", "requests",
                             "parsed but unused by DRAMsim3", minimum=1)
    refresh_policy: str = _p("RANK_LEVEL_STAGGERED", "controller", "system", "",
                             "refresh scheme", choices=REFRESH_POLICIES)
    enable_self_refresh: bool = _p(False, "controller", "system", "", "enter self refresh "
                                   "when a rank idles")
    sref_threshold: int = _p(1000, "controller", "system", "tCK", "idle cycles before self "
                             "refresh", minimum=0)
    hbm_dual_cmd: bool = _p(True, "controller", "dram_structure", "", "issue a row and a column "
                            "command in one cycle (only where the standard has separate row "
                            "and column command buses: HBM, HBM2, HBM3)")
    epoch_period: int = _p(100000, "controller", "other", "tCK", "statistics epoch length",
                           minimum=1)
    # ---- controller (our extensions; defaults reproduce DRAMsim3) -----------------------
    scheduler: str = _x("dramsim3", "", "command scheduler", choices=SCHEDULERS)
    page_policy: str = _x("open", "", "row policy (row_buf_policy CLOSE_PAGE means 'close')",
                          choices=PAGE_POLICIES)
    early_precharge_conflicts: int = _x(0, "requests", "pending conflicts that close a row "
                                        "early (early_precharge)", minimum=0)
    row_hit_cap: int = _x(4, "hits", "row hits served before a pending conflict may precharge",
                          minimum=0)
    write_high_watermark: int = _x(0, "requests", "start draining writes at this many "
                                   "(0 = DRAMsim3: when the write buffer is full)", minimum=0)
    write_low_watermark: int = _x(8, "requests", "drain when more than this many writes wait "
                                  "and every command queue is empty", minimum=0)
    write_priority_pct: float = _x(0.0, "%", "lower (> 0) or raise (< 0) write priority: a "
                                   "drain moves that share fewer of the waiting writes, or "
                                   "starts when the buffer is that share less full",
                                   minimum=-90.0, maximum=90.0)
    dynamic_bank_grouping: bool = _x(False, "", "dynamic bank grouping, a controller policy "
                                     "(the device is unchanged): prefer a ready column "
                                     "command to another bank group than the last one "
                                     "(tCCD_S instead of tCCD_L) and alternate bank groups "
                                     "in write drains, within bank_group_window")
    bank_group_window: int = _x(8, "requests", "dynamic bank grouping: how far, in arrival "
                                "order, a command may overtake the scheduler's pick (and how "
                                "many waiting writes a drain looks at)", minimum=1,
                                maximum=64)
    parbs_marking_cap: int = _x(5, "requests", "PAR-BS batch marking cap per bank", minimum=1)
    xor_bank_interleave: bool = _x(False, "", "XOR bank bits with low row bits")

    def __post_init__(self) -> None:
        # user input is kept as given; derived values (dual_cmd_eff, ...) are properties
        self._path: Path | None = None
        self._lines: dict[str, int] = {}
        self._load_warnings: list[str] = []

    # ---- provenance --------------------------------------------------------------------
    @property
    def source_path(self) -> Path | None:
        """File this configuration was read from (None if built in code)."""
        return self._path

    @property
    def source_lines(self) -> Mapping[str, int]:
        """Field name -> line number in :attr:`source_path`, for values read from the file."""
        return dict(self._lines)

    def _attach(self, path: Path | None, lines: Mapping[str, int]) -> None:
        self._path, self._lines = path, dict(lines)

    @property
    def warnings(self) -> list[str]:
        """Legitimate but unusual settings (outside the JEDEC ranges, see
        :func:`engine.config_physics.unusual`) and the keys a file left to DRAMsim3's
        defaults; recorded in the statistics JSON as ``config_warnings``."""
        from .config_physics import unusual
        return list(self._load_warnings) + shipped_placeholder_warnings(self) + unusual(self)

    # ---- protocol families (declared by engine.standards) --------------------------------
    @property
    def standard(self) -> standards.Standard:
        """The DRAM standard's declarations (engine.standards)."""
        return standards.get(self.protocol)

    def _family(self) -> str:
        std = standards.find(self.protocol)
        return std.family if std is not None else ""

    @property
    def is_gddr(self) -> bool:
        return self._family() == "GDDR"

    @property
    def is_hbm(self) -> bool:
        return self._family() == "HBM"

    @property
    def is_lpddr(self) -> bool:
        return self._family() == "LPDDR"

    @property
    def is_hmc(self) -> bool:
        return self._family() == "HMC"

    @property
    def dual_cmd_eff(self) -> bool:
        """A row and a column command may share a cycle: hbm_dual_cmd where the standard has
        separate row and column command buses (DRAMsim3: HBM only)."""
        std = standards.find(self.protocol)
        return bool(self.hbm_dual_cmd) and std is not None and std.dual_command

    # ---- organisation (DRAMsim3 InitDRAMParams / CalculateSize) ------------------------
    @property
    def bankgroups_eff(self) -> int:
        return self.bankgroups if self.bankgroup_enable else 1

    @property
    def banks_per_group_eff(self) -> int:
        return self.banks_per_group if self.bankgroup_enable else (
            self.banks_per_group * self.bankgroups)

    @property
    def banks(self) -> int:
        return self.bankgroups_eff * self.banks_per_group_eff

    @property
    def _bl_raw(self) -> int:
        """BL before the BL == 0 rule (HMC: block_size * 8 / device_width)."""
        return self.block_size * 8 // self.device_width if self.is_hmc else self.BL

    @property
    def burst_cycle(self) -> int:
        """Cycles of the data bus per burst: BL/2, GDDR5 BL/4, GDDR5X BL/8, GDDR6 BL/16,
        LPDDR5 BL/(2 x wck_ratio) (the standard's declaration)."""
        return self.standard.burst_cycles(self._bl_raw, self.wck_ratio)

    @property
    def BL_eff(self) -> int:
        """Burst length used for sizes (validate() refuses BL = 0; DRAMsim3 counted it as 8,
        HBM 4, for a broken ideal-bandwidth mode)."""
        bl = self._bl_raw
        return bl if bl != 0 else (4 if self.is_hbm else 8)

    @property
    def columns_eff(self) -> int:
        """Physical columns (device_width bits each): as the standard declares them, i.e.
        GDDR columns * BL, DRAMsim3's HBM and HBM2 columns * 2, otherwise columns."""
        scale = standards.find(self.protocol)
        scale = scale.column_scale if scale is not None else ""
        if scale == "BL":
            return self.columns * self.BL_eff
        return self.columns * 2 if scale == "2" else self.columns

    @property
    def devices_per_rank(self) -> int:
        return self.bus_width // self.device_width

    @property
    def page_size_bytes(self) -> int:
        """Row size of one device in bytes (DRAMsim3's page_size; a rank's is x devices)."""
        return self.columns_eff * self.device_width // 8

    @property
    def _megs_per_rank(self) -> int:
        """Rank size in MB with DRAMsim3's integer arithmetic."""
        megs_per_bank = self.page_size_bytes * (self.rows // 1024) // 1024
        return megs_per_bank * self.banks * self.devices_per_rank

    @property
    def ranks(self) -> int:
        """channel_size // rank size; 1 when one rank is already larger than channel_size."""
        megs = self._megs_per_rank
        return 1 if megs <= 0 or megs > self.channel_size else self.channel_size // megs

    @property
    def channel_size_eff(self) -> int:
        """Channel capacity in MB that DRAMsim3 actually builds (ranks * rank size)."""
        return self.ranks * self._megs_per_rank

    @property
    def capacity_bytes(self) -> int:
        """Capacity of all channels in bytes."""
        return (self.channels * self.ranks * self.devices_per_rank * self.banks * self.rows
                * self.page_size_bytes)

    # ---- address mapping (DRAMsim3 SetAddressMapping) ----------------------------------
    @property
    def request_size_bytes(self) -> int:
        return self.bus_width // 8 * self.BL_eff

    @property
    def peak_bandwidth_GBps(self) -> float:
        """Peak data bandwidth (GB/s): every channel moving one request per burst, request
        bytes / (burst cycles x tCK)."""
        return self.channels * self.request_size_bytes / (self.burst_cycle * self.tCK)

    @property
    def shift_bits(self) -> int:
        return _log2(self.request_size_bytes)

    @property
    def field_widths(self) -> dict[str, int]:
        return {"ch": _log2(self.channels), "ra": _log2(self.ranks),
                "bg": _log2(self.bankgroups_eff), "ba": _log2(self.banks_per_group_eff),
                "ro": _log2(self.rows), "co": _log2(self.columns_eff) - _log2(self.BL_eff)}

    @property
    def field_positions(self) -> dict[str, int]:
        """Bit position of each field after the low shift_bits are dropped."""
        widths, pos, out = self.field_widths, 0, {}
        for i in range(len(self.address_mapping) - 2, -1, -2):
            token = self.address_mapping[i:i + 2]
            out[token] = pos
            pos += widths.get(token, 0)
        return {k: out[k] for k in ADDRESS_FIELDS if k in out}

    @property
    def field_masks(self) -> dict[str, int]:
        return {k: (1 << max(w, 0)) - 1 for k, w in self.field_widths.items()}

    # ---- timing (DRAMsim3 InitTimingParams) --------------------------------------------
    @property
    def RL(self) -> int:
        return self.AL + self.CL

    @property
    def WL(self) -> int:
        return self.AL + self.CWL

    @property
    def read_delay(self) -> int:
        return self.RL + self.burst_cycle

    @property
    def write_delay(self) -> int:
        return self.WL + self.burst_cycle

    @property
    def tRC(self) -> int:
        """tRAS + tRP (DRAMsim3 never reads tRC from the file)."""
        return self.tRAS + self.tRP

    # ---- power (DRAMsim3 InitPowerParams) ----------------------------------------------
    @property
    def energy_increments(self) -> dict[str, float]:
        """DRAMsim3's energy increments, in its units (V x mA x cycles, i.e. pJ only if
        tCK = 1 ns): per command act, read, write, ref, refb; per rank-cycle act_stb,
        pre_stb, pre_pd, sref. Computed by engine.power.energy_increments (one formula)."""
        from .power import energy_increments
        return {k.removesuffix("_energy_inc"): v for k, v in energy_increments(self).items()}

    # ---- validation --------------------------------------------------------------------
    def _error(self, key: str, message: str) -> ConfigError:
        return ConfigError(message, path=self._path, line=self._lines.get(key), key=key)

    def validate(self) -> None:
        """Raise :class:`ConfigError` (naming file, line and key) if anything is inconsistent."""
        if not isinstance(self.name, str):
            raise self._error("name", f"name = {self.name!r}: expected a string")
        for spec in PARAMETERS:
            _check_value(spec, getattr(self, spec.name), self._error)
        std = self.standard
        if not self.is_hmc and (self.BL == 0 or not _is_pow2(self.BL)):
            raise self._error("BL", f"BL = {self.BL}: expected a power of two (DRAMsim3's "
                              "BL = 0 'ideal bandwidth' mode is not supported: it sizes "
                              "requests as BL 8 but moves no data on the bus)")
        if std.bl_choices and not self.is_hmc and self.BL not in std.bl_choices:
            raise self._error("BL", f"BL = {self.BL}: {std.name} expects "
                              f"{' or '.join(map(str, std.bl_choices))}")
        if std.wck_clock and self.wck_ratio not in (2, 4):
            raise self._error("wck_ratio", f"wck_ratio = {self.wck_ratio}: {std.name} "
                              "expects the WCK:CK ratio, 2 or 4")
        if self.refresh_policy not in std.refresh_policies:
            raise self._error("refresh_policy", f"refresh_policy = {self.refresh_policy}: "
                              f"{std.name} supports {', '.join(std.refresh_policies)}")
        if self.tCK <= 0:
            raise self._error("tCK", f"tCK = {self.tCK}: expected a positive clock period in ns")
        tokens = [self.address_mapping[i:i + 2] for i in range(0, len(self.address_mapping), 2)]
        if len(self.address_mapping) != 12 or sorted(tokens) != sorted(ADDRESS_FIELDS):
            raise self._error("address_mapping", f"address_mapping = {self.address_mapping}: "
                              "expected 12 characters made of ch ra bg ba ro co, each exactly "
                              "once (e.g. rochrababgco)")
        if self.bus_width % self.device_width:
            raise self._error("bus_width", f"bus_width = {self.bus_width}: expected a multiple "
                              f"of device_width ({self.device_width})")
        if self.is_hmc and not _is_pow2(self._bl_raw):
            raise self._error("block_size", f"block_size = {self.block_size}: expected "
                              "block_size * 8 / device_width to be a power of two (HMC burst)")
        if self.field_widths["co"] < 0:
            raise self._error("columns", f"columns = {self.columns}: fewer columns than one "
                              f"burst (BL {self.BL_eff})")
        if self._megs_per_rank < 1:
            raise self._error("rows", f"rows = {self.rows}: a rank of this geometry is smaller "
                              "than 1 MB, which DRAMsim3 cannot size")
        if not _is_pow2(self.ranks):
            raise self._error("channel_size", f"channel_size = {self.channel_size}: gives "
                              f"{self.ranks} ranks of {self._megs_per_rank} MB; expected a "
                              "power-of-two number of ranks")
        if (self.row_buf_policy == "CLOSE_PAGE") != (self.page_policy == "close"):
            raise self._error("page_policy", f"page_policy = {self.page_policy}: conflicts with "
                              f"row_buf_policy = {self.row_buf_policy} (CLOSE_PAGE goes with "
                              "page_policy 'close' and only with it)")
        if self.write_high_watermark > self.trans_queue_size:
            raise self._error("write_high_watermark", f"write_high_watermark = "
                              f"{self.write_high_watermark}: expected at most "
                              f"trans_queue_size ({self.trans_queue_size})")
        if 0 < self.write_high_watermark <= self.write_low_watermark:
            raise self._error("write_high_watermark", f"write_high_watermark = "
                              f"{self.write_high_watermark}: expected more than "
                              f"write_low_watermark ({self.write_low_watermark}), or 0")
        from .config_physics import impossible
        for key, message in impossible(self)[:1]:
            raise self._error(key, message)

    # ---- conversions -------------------------------------------------------------------
    def replace(self, **changes: Any) -> MemoryConfig:
        """A validated copy with some fields changed."""
        known = {"name", *PARAM_BY_NAME}
        for key in changes:
            if key not in known:
                raise ConfigError(f"unknown parameter{_suggest(key, known)}", key=key)
        new = dataclasses.replace(self, **changes)
        new._attach(self._path, {k: v for k, v in self._lines.items() if k not in changes})
        new._load_warnings = list(self._load_warnings)
        try:
            new.validate()
        except ConfigError as exc:
            if exc.key not in changes:
                raise
            # the bad value is the caller's, not the file's: say so rather than name a line
            # of the file as its source
            base = f" (given on top of {self._path})" if self._path is not None else ""
            raise ConfigError(f"{exc.detail}{base}", key=exc.key) from None
        return new

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict of every field."""
        return {"name": self.name, **{s.name: getattr(self, s.name) for s in PARAMETERS}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryConfig:
        """Inverse of :meth:`to_dict` (missing keys take their defaults); validated."""
        values = dict(data)
        name = values.pop("name", "unnamed")
        for key, value in values.items():
            spec = PARAM_BY_NAME.get(key)
            if spec is None:
                raise ConfigError(f"unknown parameter{_suggest(key, PARAM_BY_NAME)}", key=key)
            values[key] = _coerce(spec, value, lambda k, m: ConfigError(m, key=k))
        return _build(name, values, None, {})


PARAMETERS: list[ParamSpec] = [
    ParamSpec(name=f.name, default=f.default, **f.metadata["spec"])
    for f in dataclasses.fields(MemoryConfig) if "spec" in f.metadata]
PARAM_BY_NAME: dict[str, ParamSpec] = {s.name: s for s in PARAMETERS}
_BY_INI_KEY: dict[tuple[str, str], ParamSpec] = {(s.ini_section, s.name.lower()): s
                                                 for s in PARAMETERS}


def _suggest(key: str, names: Any) -> str:
    """' (did you mean ...?)' for a misspelt key, or ''."""
    from engine.names import did_you_mean
    return did_you_mean(key, names, n=3)


def _check_value(spec: ParamSpec, value: Any, error: _ErrorFactory) -> None:
    """Check one field's type and range; *error(key, message)* builds the exception."""
    shown = f"{spec.name} = {value!r}"
    if value is None and spec.optional:
        return
    ok = {"int": isinstance(value, int) and not isinstance(value, bool),
          "float": isinstance(value, (int, float)) and not isinstance(value, bool),
          "bool": isinstance(value, bool), "str": isinstance(value, str)}[spec.kind]
    if ok and spec.kind == "int" and abs(value) > 2 ** 53:
        raise error(spec.name, f"{spec.name} = {value}: beyond 2^53, the largest integer a "
                               f"configuration may hold")
    if ok and spec.kind == "float" and isinstance(value, int) and abs(value) > 2 ** 53:
        raise error(spec.name, f"{spec.name} = {value}: beyond 2^53")
    if ok and spec.kind == "float" and not math.isfinite(value):
        raise error(spec.name, f"{shown}: expected a finite number")
    if not ok:
        article = "an" if spec.kind == "int" else "a"
        raise error(spec.name, f"{shown}: expected {article} {spec.kind}")
    if spec.choices and value not in spec.choices:
        raise error(spec.name, f"{shown}: expected one of {', '.join(spec.choices)}")
    if spec.minimum is not None and value < spec.minimum:
        what = "a non-negative value" if spec.minimum == 0 else f"at least {spec.minimum:g}"
        raise error(spec.name, f"{shown}: expected {what}" + (
            f" ({spec.unit})" if spec.unit else ""))
    if spec.maximum is not None and value > spec.maximum:
        raise error(spec.name, f"{shown}: expected at most {spec.maximum:g}")
    if spec.power_of_two and not _is_pow2(value):
        raise error(spec.name, f"{spec.name} = {value}: expected a power of two")


def _coerce(spec: ParamSpec, value: Any, error: _ErrorFactory) -> Any:
    """Type-check a value from TOML/JSON (ints are accepted for float fields)."""
    if spec.kind == "float" and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not (value is None and spec.optional):
        _check_value(dataclasses.replace(spec, choices=(), minimum=None, maximum=None,
                                         power_of_two=False), value, error)
    return value


def _build(name: str, values: dict[str, Any], path: Path | None,
           lines: Mapping[str, int], load_warnings: list[str] | None = None) -> MemoryConfig:
    """Construct, attach provenance, validate, log the warnings once: the common tail of
    every loader."""
    if "page_policy" not in values and values.get("row_buf_policy") == "CLOSE_PAGE":
        values["page_policy"] = "close"
    cfg = MemoryConfig(name=name, **values)
    cfg._attach(path, lines)
    cfg._load_warnings = list(load_warnings or [])
    cfg.validate()
    # (a shipped preset's notes -- a DRAMsim3 quirk its header names, placeholder currents --
    # are said at INFO: nothing for the user to act on in that file, and a study's every
    # worker loads it again; they are in every run's config_warnings)
    shipped = path is not None and Path(path).parent == PRESET_DIR
    if path is not None:
        for w in cfg.warnings:
            log.log(logging.INFO if shipped else logging.WARNING, "%s: %s", path, w)
    if cfg._megs_per_rank > cfg.channel_size:
        log.log(logging.INFO if shipped else logging.WARNING,
                "%s: channel_size = %d MB is smaller than one rank (%d MB); using 1 rank of "
                "%d MB, as DRAMsim3 does", path or name, cfg.channel_size,
                cfg._megs_per_rank, cfg._megs_per_rank)
    return cfg


# ==== DRAMsim3 .ini ===================================================================
_INT_RE = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F]+|\d+)")
_FLOAT_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_KEY_VALUE_RE = re.compile(r"([^=:]+?)\s*[=:]\s*(.*)$")


def _read_ini(path: Path) -> list[tuple[str, str, str, int]]:
    """(section, key, value, line) for every assignment; sections lower-cased as inih does."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc}", path=path) from exc
    section, entries, seen = "", [], {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        stripped = re.split(r"[;#]", raw, maxsplit=1)[0].strip()
        if not stripped:
            continue
        if stripped.startswith("["):
            end = stripped.find("]")
            if end < 0:
                raise ConfigError(f"{stripped}: expected ']' closing the section name",
                                  path=path, line=lineno)
            section = stripped[1:end].strip().lower()
            continue
        match = _KEY_VALUE_RE.match(stripped)
        if not match:
            raise ConfigError(f"{stripped!r}: expected 'key = value'", path=path, line=lineno)
        key, value = match.group(1).strip(), match.group(2).strip()
        if (section, key.lower()) in seen:
            raise ConfigError(f"duplicate key (first set on line {seen[section, key.lower()]})",
                              path=path, line=lineno, key=key)
        seen[section, key.lower()] = lineno
        entries.append((section, key, value, lineno))
    return entries


def _parse_ini_value(spec: ParamSpec, key: str, text: str, strict: bool, path: Path,
                     line: int) -> Any:
    """Convert one ini value; a number followed by a space and text (e.g. ``0.666 (1/1.5)``)
    is read as DRAMsim3's strtol/strtod would, with a warning (an error if *strict*)."""
    def fail(expected: str) -> ConfigError:
        return ConfigError(f"{key} = {text}: expected {expected}", path=path, line=line, key=key)

    if spec.kind == "bool":
        if text.lower() in _TRUE | _FALSE:
            return text.lower() in _TRUE
        raise fail("true or false")
    if spec.kind == "str":
        if not text:
            raise fail("a value")
        return text
    pattern, expected = (_INT_RE, "an integer") if spec.kind == "int" else (_FLOAT_RE, "a number")
    match = pattern.match(text)
    if not match or (match.end() < len(text) and not text[match.end()].isspace()):
        raise fail(expected)
    token = match.group(0)
    if match.end() < len(text):
        if strict:
            raise fail(f"{expected} and nothing after it")
        log.warning("%s:%d: %s = %s: text after the number ignored (DRAMsim3 reads %s)",
                    path, line, key, text, token)
    if spec.kind == "float":
        return float(token)
    return int(token, 16) if "x" in token.lower() else int(token, 10)


def load_ini(path: str | os.PathLike[str], *, strict: bool = False) -> MemoryConfig:
    """Read a DRAMsim3 ``.ini`` file; missing keys take DRAMsim3's defaults, name = file stem.

    Keys are case-insensitive (as in DRAMsim3's inih reader); ``;`` and ``#`` start comments.
    Keys DRAMsim3 reads but we do not model, the ``[thermal]`` section and the datasheet keys
    found in DRAMsim3's shipped configs are ignored (debug log). Any other unknown key or
    section is a warning, or a :class:`ConfigError` if *strict*.
    """
    path = Path(path)
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    present: set[str] = set()
    for section, key, text, line in _read_ini(path):
        low = key.lower()
        present.add(low)
        spec = _BY_INI_KEY.get((section, low))
        if spec is not None and not text and spec.kind != "str" and not strict:
            log.warning("%s:%d: key '%s' has no value; using DRAMsim3's default %s", path, line,
                        key, spec.default)
        elif spec is not None:
            values[spec.name] = _parse_ini_value(spec, key, text, strict, path, line)
            lines[spec.name] = line
        elif (section == "thermal" or low in _DRAMSIM3_UNMODELLED.get(section, ())
              or low in _DATASHEET_KEYS.get(section, ())):
            log.debug("%s:%d: [%s] %s not used by DiffMem Studio; ignored", path, line, section,
                      key)
        else:
            if section not in _INI_SECTIONS:
                message = f"unknown section [{section}]" if section else "key outside a section"
            elif low == "trc":
                message = "tRC cannot be set: it is derived as tRAS + tRP"
            else:
                names = [s.name for s in PARAMETERS if s.ini_section == section]
                message = f"unknown key in [{section}]{_suggest(key, names)}"
            if strict:
                raise ConfigError(message, path=path, line=line, key=key)
            log.warning("%s:%d: key '%s': %s; ignored", path, line, key, message)
    for shadow, real in (("tRTP_L", "tRTP"), ("REFI", "tREFI"), ("IDD5", "IDD5AB"),
                         ("IDD6", "IDD6x")):
        if shadow.lower() in present and real not in values:
            log.info("%s: %s is not read by DRAMsim3 and %s is missing: using %s = %s",
                     path, shadow, real, real, PARAM_BY_NAME[real].default)
    if not values:
        raise ConfigError("no settings: the file is empty or holds only comments (expected "
                          "a DRAMsim3 .ini with [dram_structure], [timing], [power] and "
                          "[system] sections)", path=path)
    return _build(path.stem, values, path, lines, _defaulted(values))


#: keys every one of DRAMsim3's 86 shipped .ini files sets (section, key): a file imported as
#: a preset must set them too (DRAMsim3 itself, and load_ini, run a file without them on
#: defaults: a misspelt [timming] header imported as a DDR4 preset with tCK = 1 ns)
CORE_INI_KEYS = (
    ("dram_structure", ("protocol", "bankgroups", "banks_per_group", "rows", "columns",
                        "device_width")),
    ("timing", ("tCK", "CL", "CWL", "tRP", "tRAS", "tRFC", "tWR", "tFAW")),
    ("system", ("bus_width", "channels", "channel_size")))


def import_ini(path: str | os.PathLike[str]) -> MemoryConfig:
    """A DRAMsim3 .ini read to be saved as a preset: as :func:`load_ini`, but a section it
    does not know (a misspelt header) or a core key left out (CORE_INI_KEYS) is a
    ConfigError naming it, not DRAMsim3's default silently kept in a preset that is reused."""
    path = Path(path)
    present: set[tuple[str, str]] = set()
    for section, key, _text, line in _read_ini(path):
        if section not in _INI_SECTIONS and section != "thermal":
            raise ConfigError(f"unknown section [{section}]" if section else
                              "key outside a section", path=path, line=line, key=key)
        present.add((section, key.lower()))
    missing = [f"[{section}] {key}" for section, keys in CORE_INI_KEYS for key in keys
               if (section, key.lower()) not in present]
    if missing:
        raise ConfigError(f"not set: {', '.join(missing)} (every DRAMsim3 config sets them; a "
                          "preset would keep DRAMsim3's defaults for them)", path=path)
    return load_ini(path)


def _defaulted(values: Mapping[str, Any]) -> list[str]:
    """One warning naming the DRAMsim3 keys a file left to DRAMsim3's defaults."""
    protocol = values.get("protocol", PARAM_BY_NAME["protocol"].default)
    missing = [s.name for s in PARAMETERS
               if s.dramsim3 and not s.optional and s.name not in values
               and (s.ini_section != "hmc" or protocol == "HMC")]
    if not missing:
        return []
    return [f"{len(missing)} key(s) not set, DRAMsim3's defaults used: "
            + ", ".join(f"{k}={PARAM_BY_NAME[k].default}" for k in missing)]


def _ini_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def dump_ini(cfg: MemoryConfig, path: str | os.PathLike[str]) -> None:
    """Write *cfg* as a DRAMsim3-readable ``.ini`` (atomically).

    Our extensions and VDDQ are written too (``[diffmem]`` / ``[power]``); DRAMsim3 ignores
    them, :func:`load_ini` reads them back.
    """
    out = [f"; DRAMsim3 configuration '{cfg.name}', written by DiffMem Studio.",
           "; Timing in cycles of tCK; tRC is derived by DRAMsim3 as tRAS + tRP.", ""]
    for section in _INI_SECTIONS:
        specs = [s for s in PARAMETERS if s.ini_section == section]
        if section == "hmc" and not cfg.is_hmc and all(
                getattr(cfg, s.name) == s.default for s in specs):
            continue
        out.append(f"[{section}]")
        if section == "diffmem":
            out.append("; DiffMem Studio controller extensions (not read by DRAMsim3)")
        out += [f"{s.name} = {_ini_text(getattr(cfg, s.name))}" for s in specs
                if getattr(cfg, s.name) is not None]
        out.append("")
    atomic_write_text(Path(path), "\n".join(out))


# ==== our TOML presets ================================================================
def list_presets() -> list[str]:
    """Names of the shipped presets (files in :data:`PRESET_DIR`)."""
    return sorted(p.stem for p in PRESET_DIR.glob("*.toml"))


def _preset_path(name_or_path: str | os.PathLike[str]) -> Path:
    path = Path(name_or_path)
    if path.suffix.lower() == ".toml" or path.is_file():
        if not path.is_file():
            raise ConfigError("file not found", path=path)
        return path
    if path.is_dir():
        raise ConfigError("a folder, expected a preset name or a .toml/.ini file", path=path)
    candidate = PRESET_DIR / f"{name_or_path}.toml"
    if not candidate.is_file():
        from engine.names import did_you_mean
        names = list_presets()
        hint = did_you_mean(str(name_or_path), names)
        raise ConfigError(f"no preset named '{name_or_path}'{hint}; available: "
                          f"{', '.join(names) or 'none'}")
    return candidate


def _toml_key_lines(text: str) -> dict[tuple[str, str], int]:
    """(section, key) -> line number, for error messages (tomllib keeps no positions)."""
    section, out = "", {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        header = re.match(r"\s*\[\s*([^\]\s]+)\s*\]", raw)
        if header:
            section = header.group(1)
            continue
        key = re.match(r"\s*([A-Za-z0-9_-]+)\s*=", raw)
        if key:
            out.setdefault((section, key.group(1)), lineno)
    return out


def load_preset(name_or_path: str | os.PathLike[str], *, strict: bool = True) -> MemoryConfig:
    """Read a preset by name (``"DDR4-3200"``) or from a ``.toml`` path.

    Unknown keys, or keys in the wrong section, raise :class:`ConfigError` (a warning if not
    *strict*). Missing keys take DRAMsim3's defaults.
    """
    path = _preset_path(name_or_path)
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc}", path=path) from exc
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        raise ConfigError(f"not valid TOML: {exc}", path=path,
                          line=int(found.group(1)) if found else None) from exc
    key_lines = _toml_key_lines(text)
    if not data or all(isinstance(v, dict) and not v for v in data.values()):
        raise ConfigError("no settings: the file is empty or holds only comments (expected "
                          "a preset with [organisation], [timing], [power] and [controller] "
                          "sections)", path=path)
    name = data.pop("name", path.stem)
    if not isinstance(name, str):
        raise ConfigError(f"name = {name!r}: expected a string", path=path,
                          line=key_lines.get(("", "name")), key="name")
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for section, table in data.items():
        if section not in SECTIONS or not isinstance(table, dict):
            table, section = {section: table}, ""
        for key, value in table.items():
            line = key_lines.get((section, key))
            spec = PARAM_BY_NAME.get(key)
            if spec is None or spec.section != section:
                message = (f"unknown key{_suggest(key, PARAM_BY_NAME)}" if spec is None
                           else f"belongs in [{spec.section}], found in [{section or 'top'}]")
                if strict:
                    raise ConfigError(message, path=path, line=line, key=key)
                log.warning("%s:%s: key '%s': %s; ignored", path, line, key, message)
                continue
            values[key] = _coerce(spec, value, lambda k, m, ln=line: ConfigError(
                m, path=path, line=ln, key=k))
            if line is not None:
                lines[key] = line
    # (a shipped preset's placeholders are found again from its name by MemoryConfig.warnings,
    # which a config rebuilt from a project or a study point keeps; a user's file says so here)
    shipped = path.parent == PRESET_DIR
    return _build(name, values, path, lines,
                  [] if shipped else _placeholder_warning(_PLACEHOLDER_RE.findall(text)))


#: a preset line whose note calls its value a placeholder (the shipped DDR5 / LPDDR5 / HBM3
#: presets' IDD currents: no datasheet for a generic part)
_PLACEHOLDER_RE = re.compile(r"^\s*(I[A-Z0-9]+|VDD\w*)\s*=[^#\n]*#.*\bplaceholder\b",
                             re.IGNORECASE | re.MULTILINE)


def _placeholder_warning(keys: Sequence[str]) -> list[str]:
    """One warning naming the currents a preset's notes call placeholders (its core energy
    is then not a real part's), or none."""
    if not keys:
        return []
    return [f"{', '.join(keys)} {'is a placeholder' if len(keys) == 1 else 'are placeholders'} "
            "(the preset's notes say so): the core energy figures are not a real part's; set "
            "your part's datasheet currents"]


@functools.lru_cache(maxsize=None)
def _shipped_placeholders(name: str) -> tuple[tuple[str, Any], ...]:
    """(key, value) of each value the shipped preset ``name`` calls a placeholder."""
    path = PRESET_DIR / f"{name}.toml"
    if not name or not path.is_file():
        return ()
    text = path.read_text(encoding="utf-8")
    keys = _PLACEHOLDER_RE.findall(text)
    data = tomllib.loads(text)
    flat = {k: v for table in data.values() if isinstance(table, dict) for k, v in table.items()}
    return tuple((k, flat[k]) for k in keys if k in flat)


def shipped_placeholder_warnings(cfg: "MemoryConfig") -> list[str]:
    """The placeholder warning of a config that is a shipped preset with its placeholder
    values unchanged (a copy with the user's own currents says nothing)."""
    return _placeholder_warning([k for k, v in _shipped_placeholders(cfg.name)
                                 if getattr(cfg, k, None) == v])


def _toml_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    escaped = []
    for ch in str(value):
        if ch in '"\\':
            escaped.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            escaped.append(f"\\u{ord(ch):04x}")
        else:
            escaped.append(ch)
    return '"' + "".join(escaped) + '"'


def save_preset(cfg: MemoryConfig, path: str | os.PathLike[str], *, header: str = "",
                sources: Mapping[str, str] | None = None) -> None:
    """Write *cfg* in our TOML preset format (atomically).

    *header* becomes a comment block at the top (say where the values come from); *sources*
    maps field names to a short provenance note appended to that value's comment.
    """
    sources = sources or {}
    out = [f"# {ln}".rstrip() for ln in header.splitlines()]
    out += ["# Units: timing in DRAM clock cycles (tCK) unless noted, currents in mA, "
            "voltages in V.", "", f"name = {_toml_text(cfg.name)}"]
    for section in SECTIONS:
        out += ["", f"[{section}]"]
        for spec in (s for s in PARAMETERS if s.section == section):
            value = getattr(cfg, spec.name)
            if spec.ini_section == "hmc" and not cfg.is_hmc and value == spec.default:
                continue
            notes = " | ".join(n for n in (spec.unit, spec.doc, sources.get(spec.name)) if n)
            if value is None:
                out.append(f"# {spec.name} = (unset)".ljust(30) + f"  # {notes}")
            else:
                out.append(f"{spec.name} = {_toml_text(value)}".ljust(30) + f"  # {notes}")
    atomic_write_text(Path(path), "\n".join(out) + "\n")


def load_config(spec: str | os.PathLike[str]) -> MemoryConfig:
    """A preset name (``"DDR4-3200"``), a ``.toml`` preset path, a DRAMsim3 ``.ini`` path or a
    Ramulator 2 ``.yaml`` run file (engine.ramulator: its memory system as we model it; the
    differences from Ramulator's own controller are logged)."""
    suffix = Path(spec).suffix.lower()
    if suffix == ".ini":
        return load_ini(spec)
    if suffix in (".yaml", ".yml"):
        from .ramulator.config import load_yaml
        ram = load_yaml(spec)
        for note in ram.differences:
            log.info("%s: %s", spec, note)
        for w in ram.memory.warnings:
            log.warning("%s: %s", spec, w)
        return ram.memory
    return load_preset(spec)


