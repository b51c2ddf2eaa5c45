"""Physical sanity of a memory configuration (issue 15), beyond the per-field type and range
checks of :mod:`engine.config`.

Two levels:

* :func:`impossible` -- what no device can be (hard errors, raised by
  ``MemoryConfig.validate`` as ConfigError naming key, value and rule): integers beyond 2^53,
  a clock faster than 20 GHz or slower than 10 MHz, ``tRAS < tRCD``, ``tRFC >= tREFI``
  (refresh would never end), per-bank ``tRFCb >= tREFIb`` under bank-level refresh, an address
  space beyond 64 bits, controller queues that would take more memory than the simulator may
  allocate (with the amount).
  ``tRC >= tRAS + tRP`` holds by construction: tRC is derived as tRAS + tRP.
* :func:`unusual` -- values outside the JEDEC ranges of the standards that are legitimate
  what-if settings (``tFAW = 0``, ``tCCD_L < tCCD_S``, a refresh interval or a clock outside the shipped standards' range ...): warnings,
  logged once by the loaders and recorded in the statistics JSON (``config_warnings``).

The 86 DRAMsim3 configs of ``../shared/dramsim3-configs`` all pass :func:`impossible` (some
give :func:`unusual` warnings: ``ST-*.ini`` refresh in one cycle, ``lpddr_2Gb_x16.ini`` has
``tCCD_L = 0``); ``tests/test_config_physics.py`` checks every one.
"""
from __future__ import annotations

from typing import Any

#: Largest integer a config may hold (JSON and float round trips are exact below it).
MAX_INT = 2 ** 53
#: Clock period bounds (ns) for any device at all.
TCK_MIN_NS, TCK_MAX_NS = 0.05, 100.0
#: Bytes the simulator's controller arrays may take (beyond that: an error naming the amount).
MAX_SIM_BYTES = 4 << 30
#: Range (ns) of the JEDEC standards shipped: clock and average refresh interval.
JEDEC_TCK_NS = (0.2, 5.0)
JEDEC_TREFI_NS = (1000.0, 16000.0)
#: Shortest all-bank refresh (ns) of a real device.
JEDEC_TRFC_MIN_NS = 20.0
#: Below this (ns) an activate-to-read or precharge time (twice it: tRAS) is no device's
#: (JEDEC's are 10-20 ns); a warning, as a what-if may want it
JEDEC_CORE_MIN_NS = 5.0
# the kernel's per-entry widths (int64 words), see engine.kernel / engine.simulator
_NCQ = 12
_PENDING_WORDS = 5


def simulator_bytes(cfg: Any) -> int:
    """Approximate bytes of the arrays :class:`engine.simulator.Simulator` allocates for
    ``cfg`` (command queues, transaction queues, pending-request tables, bank state)."""
    nch = cfg.channels
    ranks = cfg.ranks
    nb = ranks * cfg.banks
    nq = nb if cfg.queue_structure == "PER_BANK" else ranks
    cqs, tqs = cfg.cmd_queue_size, cfg.trans_queue_size
    pcap = tqs + nq * cqs
    words = (nq * cqs * _NCQ + 8 * tqs + 2 * _PENDING_WORDS * pcap + 40 * nb + 20 * nq)
    return 8 * nch * words


def impossible(cfg: Any) -> list[tuple[str, str]]:
    """(key, message) for every value no device can have; empty when physically sound.

    Call after the per-field checks (types, minimums, powers of two) have passed."""
    from engine.config import PARAMETERS
    out: list[tuple[str, str]] = []
    for spec in PARAMETERS:
        v = getattr(cfg, spec.name)
        if spec.kind == "int" and isinstance(v, int) and abs(v) > MAX_INT:
            out.append((spec.name, f"{spec.name} = {v}: beyond 2^53, the largest integer a "
                                   f"configuration may hold"))
    if out:
        return out
    if not TCK_MIN_NS <= cfg.tCK <= TCK_MAX_NS:
        out.append(("tCK", f"tCK = {cfg.tCK} ns: a clock of {1e3 / cfg.tCK:.4g} MHz; expected "
                           f"{TCK_MIN_NS:g} to {TCK_MAX_NS:g} ns (20 GHz to 10 MHz)"))
    rcd_key = "tRCDRD" if (cfg.is_gddr or cfg.is_hbm) else "tRCD"
    rcd = getattr(cfg, rcd_key)
    if cfg.tRAS < rcd:
        out.append(("tRAS", f"tRAS = {cfg.tRAS}: shorter than {rcd_key} = {rcd}; a row must "
                            f"stay open at least until it can be read (tRAS >= {rcd_key})"))
    if cfg.tRFC >= cfg.tREFI:
        out.append(("tRFC", f"tRFC = {cfg.tRFC}: not shorter than tREFI = {cfg.tREFI}; a "
                            f"refresh would last longer than the interval between refreshes "
                            f"(expected tRFC < tREFI)"))
    if cfg.refresh_policy == "BANK_LEVEL_STAGGERED" and cfg.tRFCb >= cfg.tREFIb:
        out.append(("tRFCb", f"tRFCb = {cfg.tRFCb}: not shorter than tREFIb = {cfg.tREFIb} "
                             f"under BANK_LEVEL_STAGGERED refresh (expected tRFCb < tREFIb)"))
    try:
        widths = cfg.field_widths
        bits = cfg.shift_bits + sum(max(w, 0) for w in widths.values())
    except (ValueError, OverflowError, ZeroDivisionError):
        bits = 0
    if bits > 64:
        keys = {"ch": "channels", "ra": "channel_size", "bg": "bankgroups",
                "ba": "banks_per_group", "ro": "rows", "co": "columns"}
        widest = max(widths, key=lambda k: widths[k])
        out.append((keys[widest], f"the geometry (channels {cfg.channels}, ranks {cfg.ranks}, "
                            f"banks {cfg.banks}, rows {cfg.rows}, columns {cfg.columns}) needs "
                            f"{bits} address bits; expected at most 64"))
    need = simulator_bytes(cfg)
    if need > MAX_SIM_BYTES:
        key = ("cmd_queue_size" if cfg.cmd_queue_size > cfg.trans_queue_size
               else "trans_queue_size")
        if cfg.channels > 1024:
            key = "channels"
        out.append((key, f"{key} = {getattr(cfg, key)}: the controller queues would need "
                         f"about {need / 2**30:.1f} GiB of memory (cmd_queue_size "
                         f"{cfg.cmd_queue_size}, trans_queue_size {cfg.trans_queue_size}, "
                         f"{cfg.channels} channel(s)); expected at most "
                         f"{MAX_SIM_BYTES / 2**30:.0f} GiB"))
    return out


def unusual(cfg: Any) -> list[str]:
    """Warnings for legitimate what-if values outside the JEDEC ranges."""
    w: list[str] = []
    if cfg.tFAW == 0:
        w.append("tFAW = 0: the four-activate window is disabled (JEDEC devices have one)")
    for lo, hi in (("tCCD_S", "tCCD_L"), ("tRRD_S", "tRRD_L"), ("tWTR_S", "tWTR_L")):
        if getattr(cfg, hi) < getattr(cfg, lo):
            w.append(f"{hi} = {getattr(cfg, hi)} is below {lo} = {getattr(cfg, lo)}: JEDEC "
                     f"requires the same-bank-group delay to be at least the other-group one")
    lo_ns, hi_ns = JEDEC_TCK_NS
    if not lo_ns <= cfg.tCK <= hi_ns:
        w.append(f"tCK = {cfg.tCK} ns is outside the {lo_ns}-{hi_ns} ns of the shipped "
                 f"standards")
    refi_ns = cfg.tREFI * cfg.tCK
    if not JEDEC_TREFI_NS[0] <= refi_ns <= JEDEC_TREFI_NS[1]:
        w.append(f"tREFI = {cfg.tREFI} ({refi_ns:.0f} ns) is outside the JEDEC range "
                 f"{JEDEC_TREFI_NS[0]:.0f}-{JEDEC_TREFI_NS[1]:.0f} ns")
    if cfg.tRFC * cfg.tCK < JEDEC_TRFC_MIN_NS:
        w.append(f"tRFC = {cfg.tRFC} ({cfg.tRFC * cfg.tCK:.3g} ns) is shorter than any JEDEC "
                 f"refresh ({JEDEC_TRFC_MIN_NS:.0f} ns)")
    if cfg.CL == 0:
        w.append("CL = 0: a read returns data in the cycle it is issued")
    rcd_key = "tRCDRD" if (cfg.is_gddr or cfg.is_hbm) else "tRCD"
    for key, floor in ((rcd_key, JEDEC_CORE_MIN_NS), ("tRP", JEDEC_CORE_MIN_NS),
                       ("tRAS", 2 * JEDEC_CORE_MIN_NS)):
        v = getattr(cfg, key)
        if v * cfg.tCK < floor:
            w.append(f"{key} = {v} ({v * cfg.tCK:.3g} ns) is shorter than any JEDEC device's "
                     f"(at least {floor:g} ns; a row takes about 10-20 ns to open or close)")
    w += negative_energies(cfg)
    return w


#: Per-command energy increments (engine.power.energy_increments) and what they charge.
_COMMAND_ENERGY = (("act_energy_inc", "ACTIVATE", "IDD0 x tRC against IDD3N x tRAS + IDD2N x tRP"),
                   ("read_energy_inc", "READ", "IDD4R against IDD3N"),
                   ("write_energy_inc", "WRITE", "IDD4W against IDD3N"),
                   ("ref_energy_inc", "all-bank REFRESH", "IDD5AB against IDD3N"))


def negative_energies(cfg: Any) -> list[str]:
    """A warning for each command whose energy is negative with the config's currents
    (DRAMsim3 charges the current above active standby: a READ's is VDD x (IDD4R - IDD3N) x
    the burst, so an IDD4R below IDD3N takes energy away at every READ, and the component
    in the statistics is negative; the totals hide it).  The per-bank refresh's own warning
    is given by engine.power when such refreshes happen."""
    from engine.power import energy_increments
    try:
        inc = energy_increments(cfg)
    except (AttributeError, KeyError, TypeError, ValueError):
        return []
    return [f"{what} energy is negative ({rule}: {inc[key]:.4g} mW x cycles a command): "
            f"the statistics' {key.split('_')[0]}_energy will be below zero, as DRAMsim3 "
            f"computes it; check the IDD currents"
            for key, what, rule in _COMMAND_ENERGY if inc[key] < 0]
