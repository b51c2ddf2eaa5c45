"""DRAM energy: DRAMsim3's IDD model for the core, plus IO (data-pin) energy per bit moved.

Core energy (reproduces DRAMsim3 exactly)
-----------------------------------------
DRAMsim3 (``Config::InitPowerParams``, ``SimpleStats``) charges, per rank and with
``devices = devices_per_rank`` (= bus_width / device_width) and ``tRC = tRAS + tRP``:

====================  =================================================  ======================
increment             formula                                            charged per
====================  =================================================  ======================
``act_energy_inc``    VDD * (IDD0*tRC - (IDD3N*tRAS + IDD2N*tRP)) * dev  ACT (covers its PRE)
``read_energy_inc``   VDD * (IDD4R - IDD3N) * burst_cycle * dev          READ, READ_PRECHARGE
``write_energy_inc``  VDD * (IDD4W - IDD3N) * burst_cycle * dev          WRITE, WRITE_PRECHARGE
``ref_energy_inc``    VDD * (IDD5AB - IDD3N) * tRFC * dev                all-bank REFRESH
``refb_energy_inc``   VDD * (IDD5PB - IDD3N) * tRFCb * dev               REFRESH_BANK
``act_stb``           VDD * IDD3N * dev                                  rank-cycle, a bank open
``pre_stb``           VDD * IDD2N * dev                                  rank-cycle, all closed
``sref``              VDD * IDD6x * dev                                  rank-cycle in SREF
====================  =================================================  ======================

Times are in clock cycles and currents in mA, so every DRAMsim3 value is in **mW x cycles**
("raw units"). DRAMsim3 labels them pJ but never multiplies by tCK (upstream issue #18, PR #49;
``shared/reference/dramsim3/NOTES.md`` §6): they are pJ only when tCK = 1 ns (the HBM configs).
This module returns both: :attr:`EnergyReport.dramsim3_units` holds the raw values under
DRAMsim3's own names, bit-for-bit the same formulas, and every ``*_pJ`` field is ``raw * tCK``.
DRAMsim3's ``average_power`` (raw energy / cycles) is already mW: the core energy over the
run's time (:attr:`EnergyReport.average_power_mW` adds IO; the statistics report both, as
``average_power`` and ``average_power_with_io``).

What DRAMsim3 leaves out, and so do we: power-down (IDD2P/IDD3P; ``pre_pd_energy_inc`` is computed
but never charged), the VPP domain (IPP0...; +26 % on DDR4 random according to DRAMPower), and IO.

Where DRAMPower differs (``shared/reference/drampower/NOTES.md`` §4)
-------------------------------------------------------------------
With rho = 1 and I_beta = IDD0, DRAMPower uses the same IDD model; in 15 reference runs every
difference was explained by two accounting choices, with a residual of 0.0 pJ:

1. **PRE is charged per ACT here, per PRE in DRAMPower.** DRAMsim3's ``act_energy_inc`` covers the
   ACT and its later PRE. DRAMPower charges E_act = VDD*(IDD0-IDD3N)*tRAS per ACT and
   E_pre = VDD*(IDD0-IDD2N)*tRP per PRE. The sums agree, except that rows still open at the end
   of the window lack their PRE share in DRAMPower: delta = (N_PRE - N_ACT) * E_pre.
2. **The refresh window counts as idle here, active in DRAMPower.** During tRFC DRAMsim3 counts
   the rank as all-bank idle (IDD2N background); DRAMPower opens all banks (IDD3N). Both add
   (IDD5AB - IDD3N)*tRFC per REF, so DRAMsim3 charges IDD5AB - IDD3N + IDD2N during refresh.
   delta = sum over REF of VDD*(IDD3N-IDD2N)*min(tRFC, end - t_REF)*dev.

Totals differ by -0.16 % ... +0.95 % on the reference runs. **We follow DRAMsim3**, so that our
results agree with it exactly; the ``pre`` counts are accepted (and checked) but not charged.

IO energy
---------
DRAMsim3 has none (issue #53). We add ``bits * pJ_per_bit`` for reads and writes, with
``bits = commands * request_size_bytes * 8`` (DRAMsim3's request size: one column command moves
``bus_width/8 * BL`` bytes). The pJ/bit per standard come from ``resources/io_energy.toml``: the
DRAMPower interface formula (DQ pins only), measured with DRAMPower for DDR4 and LPDDR4 and
evaluated with stated, editable assumptions for GDDR6 and HBM2. See that file for sources.

Splits
------
* ``per_bank_pJ``: see :func:`compute_energy`.
* ``by_cause_pJ``: ``row_conflict`` = ACT(+PRE) energy of ACTs that reopened a bank closed for
  another row; the extra background time those conflicts cause is not estimable from counts and
  stays in ``background``. ``row_miss`` = the other ACTs; ``data`` = core read+write;
  ``refresh`` = all-bank + per-bank refresh; ``background`` = act_stb + pre_stb + sref;
  ``io`` = io_read + io_write. They sum to ``total``.
"""
from __future__ import annotations

import logging
import math
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol

import numpy as np
from numpy.typing import NDArray

from . import standards
from .errors import ConfigError
from .standards.base import DEFAULT_IDD

logger = logging.getLogger(__name__)

__all__ = [
    "EnergyCounts",
    "EnergyReport",
    "IOEnergySpec",
    "PowerConfig",
    "COMPONENTS",
    "DRAMSIM3_ENERGY_NAMES",
    "compute_energy",
    "default_io_energy_path",
    "energy_increments",
    "io_energy_per_bit",
]

#: Keys of :attr:`EnergyReport.components_pJ`, in display order (totals excluded).
COMPONENTS: tuple[str, ...] = (
    "act", "read", "write", "ref", "refb", "act_stb", "pre_stb", "sref", "io_read", "io_write",
)
_CORE_COMPONENTS: tuple[str, ...] = COMPONENTS[:8]

#: DRAMsim3's energy stat names, in its order; ``components_pJ`` key for each.
DRAMSIM3_ENERGY_NAMES: dict[str, str] = {
    "act_energy": "act",
    "read_energy": "read",
    "write_energy": "write",
    "ref_energy": "ref",
    "refb_energy": "refb",
    "act_stb_energy": "act_stb",
    "pre_stb_energy": "pre_stb",
    "sref_energy": "sref",
}

#: DRAMsim3's defaults when a power/timing key is absent from its .ini (``configuration.cc``).
#: Used only when the config object has the attribute missing or ``None``.
_DRAMSIM3_DEFAULTS: dict[str, float] = {
    "VDD": 1.2, "IDD0": 48.0, "IDD2P": 25.0, "IDD2N": 34.0, "IDD3N": 43.0, "IDD4W": 123.0,
    "IDD4R": 135.0, "IDD5AB": 250.0, "IDD5PB": 5.0, "IDD6x": 31.0, "tRFC": 74, "tRFCb": 20,
}

_IO_FILE_NAME = "io_energy.toml"
_warned_fallbacks: set[tuple[str, str]] = set()
_noted_aliases: set[tuple[str, str]] = set()      # (table, protocol) aliases said at INFO


class PowerConfig(Protocol):
    """The attributes of :class:`engine.config.MemoryConfig` this module reads.

    Currents in mA, VDD in V, tCK in ns, all other times in clock cycles. Also read when present:
    VDD, IDD0, IDD2P, IDD2N, IDD3N, IDD4W, IDD4R, IDD5AB, IDD5PB, IDD6x, tRFC, tRFCb (DRAMsim3's
    defaults when missing or ``None``) and the optional VDDQ (IO energy).
    """

    protocol: Any           # str (or an enum whose ``name`` is the protocol)
    tCK: float
    tRAS: int
    tRP: int
    burst_cycle: int
    devices_per_rank: int
    ranks: int
    banks: int              # banks per rank (bankgroups * banks_per_group)
    channels: int
    request_size_bytes: int


# ---------------------------------------------------------------------------------------------
# Data types
# ---------------------------------------------------------------------------------------------

@dataclass
class EnergyCounts:
    """What the simulator counted over ``num_cycles`` cycles (all arrays int64).

    Shapes: ``[channels, ranks, banks]`` for per-bank arrays (bank index =
    bankgroup * banks_per_group + bank), ``[channels, ranks]`` for per-rank arrays.
    For every rank, ``rank_active_cycles + all_bank_idle_cycles + sref_cycles == num_cycles``
    in DRAMsim3; a mismatch is logged (it does not change the formulas).
    """

    num_cycles: int
    act: NDArray[np.int64]
    act_conflict: NDArray[np.int64]
    pre: NDArray[np.int64]
    rd: NDArray[np.int64]
    wr: NDArray[np.int64]
    ref: NDArray[np.int64]
    refb: NDArray[np.int64]
    rank_active_cycles: NDArray[np.int64]
    all_bank_idle_cycles: NDArray[np.int64]
    sref_cycles: NDArray[np.int64]
    bank_open_cycles: NDArray[np.int64]

    _BANK_FIELDS = ("act", "act_conflict", "pre", "rd", "wr", "refb", "bank_open_cycles")
    _RANK_FIELDS = ("ref", "rank_active_cycles", "all_bank_idle_cycles", "sref_cycles")

    @classmethod
    def zeros(cls, channels: int, ranks: int, banks: int, num_cycles: int = 0) -> EnergyCounts:
        """All-zero counts of the given geometry (handy for accumulating in a simulator)."""
        bank = (channels, ranks, banks)
        rank = (channels, ranks)
        return cls(
            num_cycles=int(num_cycles),
            **{f: np.zeros(bank, np.int64) for f in cls._BANK_FIELDS},
            **{f: np.zeros(rank, np.int64) for f in cls._RANK_FIELDS},
        )

    def validate(self, channels: int, ranks: int, banks: int) -> None:
        """Raise ``ValueError`` unless every array has the expected shape and sane values."""
        if self.num_cycles < 0:
            raise ValueError(f"num_cycles must be >= 0, got {self.num_cycles}")
        for names, shape in ((self._BANK_FIELDS, (channels, ranks, banks)),
                             (self._RANK_FIELDS, (channels, ranks))):
            for name in names:
                arr = np.asarray(getattr(self, name))
                if arr.shape != shape:
                    raise ValueError(f"EnergyCounts.{name} has shape {arr.shape}, expected {shape} "
                                     "(channels, ranks[, banks]) from the memory configuration")
                if arr.size and arr.min() < 0:
                    raise ValueError(f"EnergyCounts.{name} has negative entries")
        if np.any(np.asarray(self.act_conflict) > np.asarray(self.act)):
            raise ValueError("EnergyCounts.act_conflict exceeds act for some bank")
        state_sum = (np.asarray(self.rank_active_cycles) + np.asarray(self.all_bank_idle_cycles)
                     + np.asarray(self.sref_cycles))
        if state_sum.size and np.any(state_sum != self.num_cycles):
            logger.warning("rank_active + all_bank_idle + sref cycles (%s) != num_cycles (%d) for "
                           "some rank; background energy uses the per-state counts as given",
                           np.unique(state_sum).tolist(), self.num_cycles)
        if int(np.sum(self.pre)) > int(np.sum(self.act)):
            logger.warning("more PRE (%d) than ACT (%d) commands counted", int(np.sum(self.pre)),
                           int(np.sum(self.act)))


@dataclass(frozen=True)
class IOEnergySpec:
    """IO energy per data bit for one standard, as loaded from ``resources/io_energy.toml``."""

    protocol: str                 # the protocol asked for (upper case)
    standard: str                 # the entry used (differs from protocol on alias/fallback)
    read_pJ_per_bit: float
    write_pJ_per_bit: float
    source: str
    basis: str                    # "drampower_run", "assumption", or "fixed"
    static_pJ_per_bit: float = 0.0
    dynamic_pJ_per_bit: float = 0.0
    parameters: dict[str, float] = field(default_factory=dict)
    note: str = ""                # alias/fallback note, empty when the entry is the protocol's own

    def as_dict(self) -> dict[str, Any]:
        """The values used, with their source, as :attr:`EnergyReport.io_pj_per_bit` holds them."""
        out: dict[str, Any] = {
            "read_pJ_per_bit": self.read_pJ_per_bit,
            "write_pJ_per_bit": self.write_pJ_per_bit,
            "standard": self.standard,
            "basis": self.basis,
            "source": self.source,
        }
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class EnergyReport:
    """Energy of one run. All ``*_pJ`` values are true pJ (DRAMsim3 raw units x tCK).

    ``components_pJ``: ``act read write ref refb act_stb pre_stb sref io_read io_write`` plus
    ``core_total``, ``io_total`` and ``total``.
    ``dramsim3_units``: DRAMsim3's ``act_energy`` ... ``sref_energy`` and ``total_energy`` in its
    raw mW x cycles (core only, tCK not applied), summed over channels and ranks as DRAMsim3's JSON
    would be when its channels are added up.
    ``per_channel_pJ``: one dict per channel with the ``components_pJ`` keys and the channel's
    ``average_power_mW``.
    ``per_bank_pJ``: ``[channels, ranks, banks]`` core energy per bank (see :func:`compute_energy`).
    ``by_cause_pJ``: ``row_conflict row_miss data refresh background io`` (sums to total).
    ``average_power_mW``: ``total`` (core and IO) over the run's time; DRAMsim3's
    ``average_power`` is the core part alone (``core_total`` over the time).
    ``io_pj_per_bit``: the read/write pJ/bit used, the standard and the source text.
    """

    components_pJ: dict[str, float]
    dramsim3_units: dict[str, float]
    per_channel_pJ: list[dict[str, float]]
    per_bank_pJ: NDArray[np.float64]
    by_cause_pJ: dict[str, float]
    average_power_mW: float
    io_pj_per_bit: dict[str, Any]


# ---------------------------------------------------------------------------------------------
# Core (DRAMsim3) model
# ---------------------------------------------------------------------------------------------

def _param(cfg: Any, name: str) -> float:
    value = getattr(cfg, name, None)
    if value is None:
        if name not in _DRAMSIM3_DEFAULTS:
            raise ConfigError(f"memory configuration has no '{name}', needed for energy", key=name)
        logger.debug("config has no %s; using DRAMsim3's default %s", name,
                     _DRAMSIM3_DEFAULTS[name])
        return _DRAMSIM3_DEFAULTS[name]
    return value


def _protocol_name(cfg_or_protocol: Any) -> str:
    proto = getattr(cfg_or_protocol, "protocol", cfg_or_protocol)
    return str(getattr(proto, "name", proto)).strip().upper()


def _idd_fields(cfg: Any) -> Mapping[str, str]:
    """The standard's IDD mapping (engine.standards), DRAMsim3's for an unknown protocol."""
    std = standards.find(_protocol_name(cfg))
    return std.idd if std is not None else DEFAULT_IDD


def energy_increments(cfg: PowerConfig) -> dict[str, float]:
    """DRAMsim3's per-command and per-cycle energy increments, in its raw units (mW x cycles).

    Keys are DRAMsim3's ``Config`` member names: ``act_energy_inc``, ``read_energy_inc``,
    ``write_energy_inc``, ``ref_energy_inc``, ``refb_energy_inc`` (per command, per rank) and
    ``act_stb_energy_inc``, ``pre_stb_energy_inc``, ``pre_pd_energy_inc``, ``sref_energy_inc``
    (per rank and cycle; ``pre_pd`` is never charged by DRAMsim3, listed for completeness).
    ``tRC`` is ``tRAS + tRP`` as in DRAMsim3, whatever the config says about tRC.
    """
    vdd = float(_param(cfg, "VDD"))
    idd = _idd_fields(cfg)        # energy term -> IDD field, as the standard maps them
    idd0, idd2p, idd2n, idd3n = (float(_param(cfg, idd[n]))
                                 for n in ("act", "pre_pd", "pre_stb", "act_stb"))
    idd4w, idd4r = float(_param(cfg, idd["write"])), float(_param(cfg, idd["read"]))
    idd5ab, idd5pb, idd6x = (float(_param(cfg, idd[n])) for n in ("ref", "refb", "sref"))
    t_ras, t_rp = int(cfg.tRAS), int(cfg.tRP)
    t_rfc, t_rfcb = int(_param(cfg, "tRFC")), int(_param(cfg, "tRFCb"))
    t_rc = t_ras + t_rp
    burst = int(cfg.burst_cycle)
    devices = float(cfg.devices_per_rank)
    # Same expressions, same evaluation order as configuration.cc, so results match to the bit.
    return {
        "act_energy_inc": vdd * (idd0 * t_rc - (idd3n * t_ras + idd2n * t_rp)) * devices,
        "read_energy_inc": vdd * (idd4r - idd3n) * burst * devices,
        "write_energy_inc": vdd * (idd4w - idd3n) * burst * devices,
        "ref_energy_inc": vdd * (idd5ab - idd3n) * t_rfc * devices,
        "refb_energy_inc": vdd * (idd5pb - idd3n) * t_rfcb * devices,
        "act_stb_energy_inc": vdd * idd3n * devices,
        "pre_stb_energy_inc": vdd * idd2n * devices,
        "pre_pd_energy_inc": vdd * idd2p * devices,
        "sref_energy_inc": vdd * idd6x * devices,
    }


def compute_energy(cfg: PowerConfig, counts: EnergyCounts, *, io: bool = True,
                   io_spec: IOEnergySpec | None = None) -> EnergyReport:
    """Energy of a run from its command and state counts.

    Core components reproduce DRAMsim3 (raw units in ``dramsim3_units``; pJ = raw * tCK).
    IO energy is added when ``io`` is true, with ``io_spec`` or, by default,
    :func:`io_energy_per_bit` for ``cfg.protocol`` (with ``cfg.VDDQ`` in place of the table's
    VDDQ when the configuration sets it). ``io=False`` gives DRAMsim3's core-only view.

    ``per_bank_pJ`` (core only; sums to ``components_pJ["core_total"]``): each bank gets its own
    ACT, READ, WRITE and per-bank REFRESH energy, plus a share of its rank's rank-level energy:

    * all-bank refresh, precharge standby and self refresh: split equally over the rank's banks
      (no bank is distinguished while all are closed or all refresh);
    * active standby: split in proportion to the bank's ``bank_open_cycles`` within the rank (a
      bank that keeps a row open longer holds the rank active longer); equally if the rank shows
      active cycles but no bank open cycles.

    DRAMsim3 charges IDD3N once per rank-cycle however many banks are open, so the active-standby
    split is an attribution, not a measurement.
    """
    channels, ranks, banks = int(cfg.channels), int(cfg.ranks), int(cfg.banks)
    counts.validate(channels, ranks, banks)
    inc = energy_increments(cfg)
    tck = float(cfg.tCK)

    def per_channel(arr: NDArray[np.int64]) -> NDArray[np.int64]:
        return np.asarray(arr, dtype=np.int64).reshape(channels, -1).sum(axis=1)

    # Raw (DRAMsim3) energies per channel: count * increment, as SimpleStats does per channel.
    raw: dict[str, NDArray[np.float64]] = {
        "act": per_channel(counts.act) * inc["act_energy_inc"],
        "read": per_channel(counts.rd) * inc["read_energy_inc"],
        "write": per_channel(counts.wr) * inc["write_energy_inc"],
        "ref": per_channel(counts.ref) * inc["ref_energy_inc"],
        "refb": per_channel(counts.refb) * inc["refb_energy_inc"],
        # DRAMsim3 multiplies per rank, then sums the ranks.
        "act_stb": (np.asarray(counts.rank_active_cycles, np.int64)
                    * inc["act_stb_energy_inc"]).sum(axis=1),
        "pre_stb": (np.asarray(counts.all_bank_idle_cycles, np.int64)
                    * inc["pre_stb_energy_inc"]).sum(axis=1),
        "sref": (np.asarray(counts.sref_cycles, np.int64) * inc["sref_energy_inc"]).sum(axis=1),
    }
    if int(np.sum(counts.refb)) > 0 and inc["refb_energy_inc"] < 0:
        logger.warning("per-bank refresh energy is negative: IDD5PB (%s mA) < IDD3N (%s mA); "
                       "DRAMsim3's default IDD5PB is 5 mA. Set IDD5PB in the configuration.",
                       _param(cfg, "IDD5PB"), _param(cfg, "IDD3N"))

    # IO energy per channel.
    if io:
        vddq = getattr(cfg, "VDDQ", None)
        spec = io_spec if io_spec is not None else io_energy_per_bit(
            _protocol_name(cfg), vddq_V=float(vddq) if vddq is not None else None)
        bits_per_cmd = int(cfg.request_size_bytes) * 8
        io_read = per_channel(counts.rd) * bits_per_cmd * spec.read_pJ_per_bit
        io_write = per_channel(counts.wr) * bits_per_cmd * spec.write_pJ_per_bit
        io_info: dict[str, Any] = spec.as_dict()
    else:
        io_read = np.zeros(channels)
        io_write = np.zeros(channels)
        io_info = {"read_pJ_per_bit": 0.0, "write_pJ_per_bit": 0.0, "standard": "",
                   "basis": "disabled", "source": "IO energy not computed (io=False)"}

    # Per channel, in pJ.
    time_ns = counts.num_cycles * tck
    per_channel_pJ: list[dict[str, float]] = []
    for c in range(channels):
        comp = {name: float(raw[name][c]) * tck for name in _CORE_COMPONENTS}
        comp["io_read"] = float(io_read[c])
        comp["io_write"] = float(io_write[c])
        comp["core_total"] = sum(comp[n] for n in _CORE_COMPONENTS)
        comp["io_total"] = comp["io_read"] + comp["io_write"]
        comp["total"] = comp["core_total"] + comp["io_total"]
        comp["average_power_mW"] = comp["total"] / time_ns if time_ns > 0 else 0.0
        per_channel_pJ.append(comp)

    # Raw totals exactly as DRAMsim3 forms them (per channel, then summed over channels).
    dramsim3_units = {ds3: float(raw[ours].sum()) for ds3, ours in DRAMSIM3_ENERGY_NAMES.items()}
    dramsim3_units["total_energy"] = float(sum(
        raw["act"][c] + raw["read"][c] + raw["write"][c] + raw["ref"][c] + raw["refb"][c]
        + (raw["act_stb"][c] + raw["pre_stb"][c] + raw["sref"][c]) for c in range(channels)))

    components = {name: dramsim3_units[ds3] * tck for ds3, name in DRAMSIM3_ENERGY_NAMES.items()}
    components["io_read"] = float(io_read.sum())
    components["io_write"] = float(io_write.sum())
    components["core_total"] = dramsim3_units["total_energy"] * tck
    components["io_total"] = components["io_read"] + components["io_write"]
    components["total"] = components["core_total"] + components["io_total"]

    per_bank = _per_bank_energy(counts, inc, banks) * tck

    act_all = int(np.sum(counts.act))
    act_conflict = int(np.sum(counts.act_conflict))
    by_cause = {
        "row_conflict": act_conflict * inc["act_energy_inc"] * tck,
        "row_miss": (act_all - act_conflict) * inc["act_energy_inc"] * tck,
        "data": components["read"] + components["write"],
        "refresh": components["ref"] + components["refb"],
        "background": components["act_stb"] + components["pre_stb"] + components["sref"],
        "io": components["io_total"],
    }

    report = EnergyReport(
        components_pJ=components,
        dramsim3_units=dramsim3_units,
        per_channel_pJ=per_channel_pJ,
        per_bank_pJ=per_bank,
        by_cause_pJ=by_cause,
        average_power_mW=components["total"] / time_ns if time_ns > 0 else 0.0,
        io_pj_per_bit=io_info,
    )
    logger.debug("energy: core %.6g pJ, io %.6g pJ over %d cycles (tCK %g ns)",
                 components["core_total"], components["io_total"], counts.num_cycles, tck)
    return report


def _per_bank_energy(counts: EnergyCounts, inc: dict[str, float],
                     banks: int) -> NDArray[np.float64]:
    """Raw per-bank core energy [channels, ranks, banks]; see :func:`compute_energy`."""
    act = np.asarray(counts.act, np.float64)
    own = (act * inc["act_energy_inc"]
           + np.asarray(counts.rd, np.float64) * inc["read_energy_inc"]
           + np.asarray(counts.wr, np.float64) * inc["write_energy_inc"]
           + np.asarray(counts.refb, np.float64) * inc["refb_energy_inc"])
    rank_shared = (np.asarray(counts.ref, np.float64) * inc["ref_energy_inc"]
                   + np.asarray(counts.all_bank_idle_cycles, np.float64) * inc["pre_stb_energy_inc"]
                   + np.asarray(counts.sref_cycles, np.float64) * inc["sref_energy_inc"])
    act_stb = np.asarray(counts.rank_active_cycles, np.float64) * inc["act_stb_energy_inc"]

    open_cycles = np.asarray(counts.bank_open_cycles, np.float64)
    open_total = open_cycles.sum(axis=2, keepdims=True)
    equal = np.full_like(open_cycles, 1.0 / banks)
    with np.errstate(invalid="ignore", divide="ignore"):
        weights = np.where(open_total > 0, open_cycles / np.where(open_total > 0, open_total, 1.0),
                           equal)
    return own + rank_shared[:, :, None] / banks + act_stb[:, :, None] * weights


# ---------------------------------------------------------------------------------------------
# IO energy per bit
# ---------------------------------------------------------------------------------------------

def default_io_energy_path() -> Path:
    """``resources/io_energy.toml`` next to the ``engine`` package (or inside a frozen bundle)."""
    bundle = getattr(sys, "_MEIPASS", None)
    if getattr(sys, "frozen", False) and bundle:
        return Path(bundle) / "resources" / _IO_FILE_NAME
    return Path(__file__).resolve().parents[1] / "resources" / _IO_FILE_NAME


def _load_io_table(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            table = tomllib.load(fh)
    except FileNotFoundError as exc:
        raise ConfigError("IO energy table not found", path=path) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"IO energy table is not valid TOML: {exc}", path=path) from exc
    if not isinstance(table.get("standards"), dict) or not table["standards"]:
        raise ConfigError("IO energy table has no [standards.*] entries", path=path,
                          key="standards")
    return table


def _number(entry: dict[str, Any], key: str, path: Path, std: str, *,
            default: float | None = None, lo: float = 0.0, hi: float = math.inf) -> float:
    value = entry.get(key, default)
    if value is None:
        raise ConfigError(f"standard {std} needs '{key}'", path=path, key=f"standards.{std}.{key}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"'{key}' must be a number, got {value!r}", path=path,
                          key=f"standards.{std}.{key}")
    value = float(value)
    if not (lo <= value <= hi) or math.isnan(value):
        raise ConfigError(f"'{key}' = {value} is outside [{lo}, {hi}]", path=path,
                          key=f"standards.{std}.{key}")
    return value


def _spec_from_entry(protocol: str, std: str, entry: dict[str, Any], path: Path,
                     note: str, vddq_V: float | None = None) -> IOEnergySpec:
    """Evaluate one ``[standards.X]`` entry with DRAMPower's interface formula."""
    vddq = _number(entry, "vddq_V", path, std)
    table_vddq = vddq
    if vddq_V is not None:
        if not (vddq_V >= 0.0) or math.isinf(vddq_V):
            raise ConfigError(f"VDDQ = {vddq_V} V is not a valid voltage", key="VDDQ")
        vddq = float(vddq_V)
    c_pf = _number(entry, "c_pF", path, std, default=0.0)
    r_eq = _number(entry, "r_eq_ohm", path, std, default=0.0)
    toggle = _number(entry, "toggle_rate", path, std, default=0.5, hi=1.0)
    duty = _number(entry, "duty", path, std, default=0.5, hi=1.0)
    if "bit_time_ns" in entry:
        bit_time = _number(entry, "bit_time_ns", path, std)
    elif "data_rate_Gbps" in entry:
        rate = _number(entry, "data_rate_Gbps", path, std)
        if rate <= 0:
            raise ConfigError("'data_rate_Gbps' must be > 0", path=path,
                              key=f"standards.{std}.data_rate_Gbps")
        bit_time = 1.0 / rate
    elif r_eq > 0:
        raise ConfigError("a terminated link needs 'bit_time_ns' or 'data_rate_Gbps'", path=path,
                          key=f"standards.{std}")
    else:
        bit_time = 0.0

    # V^2 / ohm = W; W * ns = nJ -> * 1000 = pJ.   pF * V^2 = pJ.
    static = (1.0 - duty) * vddq * vddq / r_eq * bit_time * 1000.0 if r_eq > 0 else 0.0
    dynamic = toggle / 2.0 * c_pf * vddq * vddq
    formula = static + dynamic

    reference = entry.get("reference_pJ_per_bit")
    if vddq != table_vddq:
        note = "; ".join(n for n in (note, f"VDDQ {vddq:g} V from the configuration instead of "
                                           f"the table's {table_vddq:g} V") if n)
    elif isinstance(reference, (int, float)) and not math.isclose(formula, float(reference),
                                                                  rel_tol=1e-6):
        logger.info("IO energy for %s: parameters give %.4f pJ/bit, the recorded reference is "
                    "%.4f pJ/bit (parameters edited?); using the parameters", std, formula,
                    float(reference))

    read = (_number(entry, "read_pJ_per_bit", path, std) if "read_pJ_per_bit" in entry
            else formula)
    write = (_number(entry, "write_pJ_per_bit", path, std) if "write_pJ_per_bit" in entry
             else formula)
    basis = str(entry.get("basis", "assumption"))
    if "read_pJ_per_bit" in entry or "write_pJ_per_bit" in entry:
        basis = "fixed"
        if vddq != table_vddq:
            logger.info("IO energy for %s: fixed read/write pJ/bit do not follow VDDQ", std)
    source = " ".join(str(entry.get("source", "(no source given)")).split())
    params = {"vddq_V": vddq, "r_eq_ohm": r_eq, "c_pF": c_pf, "bit_time_ns": bit_time,
              "toggle_rate": toggle, "duty": duty}
    return IOEnergySpec(protocol=protocol, standard=std, read_pJ_per_bit=read,
                        write_pJ_per_bit=write, source=source, basis=basis,
                        static_pJ_per_bit=static, dynamic_pJ_per_bit=dynamic,
                        parameters=params, note=note)


def io_energy_per_bit(protocol: str, path: str | Path | None = None, *,
                      vddq_V: float | None = None) -> IOEnergySpec:
    """IO energy per data bit for ``protocol`` (e.g. ``"DDR4"``), from ``resources/io_energy.toml``.

    ``vddq_V`` (e.g. the configuration's optional ``VDDQ``) replaces the table's VDDQ in the
    formula; both terms scale with VDDQ^2. Fixed ``read/write_pJ_per_bit`` overrides ignore it.

    A protocol without its own entry uses its ``[aliases]`` entry (same signalling, logged at INFO)
    or its ``[fallback]`` entry (nearest family, logged once per protocol at WARNING); otherwise a
    :class:`~engine.errors.ConfigError` is raised. The file is read on every call, so edits apply
    to the next run.
    """
    table_path = Path(path) if path is not None else default_io_energy_path()
    table = _load_io_table(table_path)
    standards: dict[str, Any] = {str(k).upper(): v for k, v in table["standards"].items()}
    aliases = {str(k).upper(): str(v).upper() for k, v in table.get("aliases", {}).items()}
    fallback = {str(k).upper(): str(v).upper() for k, v in table.get("fallback", {}).items()}

    proto = _protocol_name(protocol)
    note = ""
    if proto in standards:
        std = proto
    elif proto in aliases:
        std = aliases[proto]
        note = f"{proto} uses the {std} IO entry (same signalling)"
        # (once a table and protocol per process, as the fallback's warning: a cosim of a
        # network said it 179 times, once a layer's simulation)
        if (str(table_path), proto) not in _noted_aliases:
            _noted_aliases.add((str(table_path), proto))
            logger.info("IO energy: %s", note)
        else:
            logger.debug("IO energy: %s", note)
    elif proto in fallback:
        std = fallback[proto]
        note = (f"{proto} has no IO energy entry; using the nearest family, {std} "
                f"(approximation; add [standards.{proto}] to {table_path.name} to refine)")
        if (str(table_path), proto) not in _warned_fallbacks:
            _warned_fallbacks.add((str(table_path), proto))
            logger.warning("IO energy: %s", note)
        else:
            logger.debug("IO energy: %s", note)
    else:
        raise ConfigError(f"no IO energy entry, alias or fallback for protocol '{proto}'",
                          path=table_path, key="protocol")
    if std not in standards:
        raise ConfigError(f"alias/fallback for '{proto}' names unknown standard '{std}'",
                          path=table_path, key=proto)
    entry = standards[std]
    if not isinstance(entry, dict):
        raise ConfigError(f"[standards.{std}] must be a table", path=table_path,
                          key=f"standards.{std}")
    return _spec_from_entry(proto, std, entry, table_path, note, vddq_V)
