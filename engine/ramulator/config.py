"""Ramulator 2 YAML configurations, read into a :class:`engine.config.MemoryConfig`.

:func:`load_yaml` reads the blocks a Ramulator 2 run file has (``Frontend``, ``MemorySystem``
with ``DRAM`` org / timing presets and overrides, ``Controller`` with ``Scheduler``,
``RefreshManager``, ``RowPolicy``, and ``AddrMapper``) and builds the memory configuration
our engine runs: the same organisation, the same timings in the same cycles (Ramulator's
presets and derivation rules, :mod:`engine.ramulator.presets`), its address mapping written
as our mapping string, FR-FCFS scheduling, its all-bank refresh (every rank at once) and its
row policy. The result also says how the front end offers requests and where the import is
exact and where it is not (:attr:`RamulatorConfig.differences`).

The YAML is data: it is read with ``yaml.safe_load`` and never executed. Errors name the
file, the YAML path of the key (``MemorySystem.DRAM.org.preset``) and what was expected.
"""
from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.config import MemoryConfig
from engine.errors import ConfigError

from .presets import CHANNEL_WIDTH, ORG_PRESETS, PREFETCH, TIMING_PRESETS, derived_timings, jedec_rounding

log = logging.getLogger(__name__)

SUFFIXES = (".yaml", ".yml")
#: Ramulator's AddrMapper -> our mapping string (most significant field first). RoBaRaCoCh
#: puts, from the LSB up: channel, column, rank, bank group, bank, row; ChRaBaRoCo: column,
#: row, bank, bank group, rank, channel.
MAPPERS = {"RoBaRaCoCh": "robabgracoch", "ChRaBaRoCo": "chrabgbaroco"}
SCHEDULERS = {"FRFCFS": "frfcfs", "FCFS": "fcfs"}
ROW_POLICIES = ("OpenRowPolicy", "ClosedRowPolicy")
#: the memory system and controller implementations the import reproduces (a key left out
#: means this one, as in Ramulator's own example run files)
IMPLS = {"MemorySystem.impl": "GenericDRAM", "MemorySystem.Controller.impl": "Generic"}
READ_BUFFER = 32            # Generic controller: read / write buffer max_size


@dataclass
class RamulatorConfig:
    """A Ramulator 2 run file, as our engine runs it."""

    memory: MemoryConfig
    path: Path
    offer_interval: int          # memory cycles between two front-end offers
    mapper: str
    row_policy: str
    row_policy_cap: int | None
    scheduler: str
    exact: bool                  # organisation, timings, mapping and refresh all carried over
    differences: list[str] = field(default_factory=list)
    # ---- Ramulator's own view (for the Ramulator-compatible mode, engine.ramulator.compat)
    standard: str = ""
    timings: dict[str, int] = field(default_factory=dict)   # every nXXX, in cycles
    counts: tuple[int, ...] = ()     # channel, rank, bankgroup, bank, row, column
    prefetch: int = 0
    channel_width: int = 0
    frontend_ratio: int = 1
    memory_ratio: int = 1
    groups: tuple[str, ...] = ()     # the DRAM block's parameter groups (org, timing, RFM ...)


def _get(tree: Any, path: str, file: Path, default: Any = ..., kind: type | tuple = object) -> Any:
    node = tree
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            if default is not ...:
                return default
            raise ConfigError(f"{path}: missing (expected a Ramulator 2 run file with "
                              f"Frontend and MemorySystem blocks)", path=file, key=path)
        node = node[part]
    if kind is not object and not isinstance(node, kind):
        raise ConfigError(f"{path} = {node!r}: expected {getattr(kind, '__name__', kind)}",
                          path=file, key=path)
    return node


def load_yaml(path: str | os.PathLike[str]) -> RamulatorConfig:
    """Read a Ramulator 2 YAML run file (see the module docstring)."""
    file = Path(path)
    try:
        tree = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the file: {exc}", path=file) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"not valid YAML: {exc}", path=file,
                          line=mark.line + 1 if mark is not None else None) from exc
    if not isinstance(tree, dict):
        raise ConfigError("expected a YAML mapping with Frontend and MemorySystem blocks",
                          path=file)
    diffs: list[str] = []
    front = _get(tree, "Frontend.impl", file, kind=str)
    if front != "LoadStoreTrace":
        raise ConfigError(f"Frontend.impl = {front}: only LoadStoreTrace is supported",
                          path=file, key="Frontend.impl")
    fe_ratio = _get(tree, "Frontend.clock_ratio", file, 1, int)
    mem_ratio = _get(tree, "MemorySystem.clock_ratio", file, 1, int)
    for key, ratio in (("Frontend.clock_ratio", fe_ratio), ("MemorySystem.clock_ratio", mem_ratio)):
        if ratio <= 0:
            raise ConfigError(f"{key} = {ratio}: expected a positive integer (clock ticks per "
                              "simulation tick)", path=file, key=key)
    if mem_ratio % fe_ratio:
        raise ConfigError(f"MemorySystem.clock_ratio = {mem_ratio}, Frontend.clock_ratio = "
                          f"{fe_ratio}: expected a whole number of memory cycles per offer",
                          path=file, key="MemorySystem.clock_ratio")
    for key, name in IMPLS.items():
        got = _get(tree, key, file, name, str)
        if got != name:
            raise ConfigError(f"{key} = {got}: expected {name} (the only implementation "
                              "this import reproduces)", path=file, key=key)
    impl = _get(tree, "MemorySystem.DRAM.impl", file, kind=str)
    standards = sorted({v.standard for v in ORG_PRESETS.values()})
    if impl not in standards:
        raise ConfigError(f"MemorySystem.DRAM.impl = {impl}: expected one of "
                          f"{', '.join(standards)}", path=file, key="MemorySystem.DRAM.impl")
    org_name = _get(tree, "MemorySystem.DRAM.org.preset", file, kind=str)
    org = ORG_PRESETS.get(org_name)
    if org is None or org.standard != impl:
        names = sorted(k for k, v in ORG_PRESETS.items() if v.standard == impl)
        raise ConfigError(f"MemorySystem.DRAM.org.preset = {org_name}: expected one of "
                          f"{', '.join(names) or '(no presets for ' + impl + ')'}", path=file,
                          key="MemorySystem.DRAM.org.preset")
    tim_name = _get(tree, "MemorySystem.DRAM.timing.preset", file, kind=str)
    if tim_name not in TIMING_PRESETS or not tim_name.startswith(impl + "_"):
        names = sorted(k for k in TIMING_PRESETS if k.startswith(impl + "_"))
        raise ConfigError(f"MemorySystem.DRAM.timing.preset = {tim_name}: expected one of "
                          f"{', '.join(names)}", path=file, key="MemorySystem.DRAM.timing.preset")
    t = dict(TIMING_PRESETS[tim_name])
    tck_ps = int(1e6 / (t["rate"] / 2))
    t.update(derived_timings(impl, org, t, tck_ps))
    for key, value in (_get(tree, "MemorySystem.DRAM.timing", file, {}, dict) or {}).items():
        if key in ("preset", "rate"):
            continue
        if key.startswith("n") and isinstance(value, int):
            t[key] = value
        elif key.startswith("t") and isinstance(value, (int, float)):
            t["n" + key[1:]] = jedec_rounding(float(value), tck_ps)
        else:
            raise ConfigError(f"MemorySystem.DRAM.timing.{key} = {value!r}: expected nXXX "
                              "(cycles, integer) or tXXX (ns)", path=file,
                              key=f"MemorySystem.DRAM.timing.{key}")
    o = _get(tree, "MemorySystem.DRAM.org", file, kind=dict)
    channels = int(o.get("channel", 1))
    ranks = int(o.get("rank", 1))
    width = int(o.get("channel_width", CHANNEL_WIDTH[impl]))
    dq = int(o.get("dq", org.dq))
    counts = {k: int(o.get(k, getattr(org, k + "s" if k != "bankgroup" else "bankgroups")))
              for k in ("bank", "row", "column")}
    bgs = int(o.get("bankgroup", org.bankgroups))
    sched = _get(tree, "MemorySystem.Controller.Scheduler.impl", file, "FRFCFS", str)
    if sched not in SCHEDULERS:
        raise ConfigError(f"MemorySystem.Controller.Scheduler.impl = {sched}: expected one of "
                          f"{', '.join(SCHEDULERS)}", path=file,
                          key="MemorySystem.Controller.Scheduler.impl")
    refresh = _get(tree, "MemorySystem.Controller.RefreshManager.impl", file, "AllBank", str)
    if refresh != "AllBank":
        raise ConfigError(f"MemorySystem.Controller.RefreshManager.impl = {refresh}: expected "
                          "AllBank (the only refresh manager Ramulator 2.0 has)", path=file,
                          key="MemorySystem.Controller.RefreshManager.impl")
    rowpol = _get(tree, "MemorySystem.Controller.RowPolicy.impl", file, "OpenRowPolicy", str)
    if rowpol not in ROW_POLICIES:
        raise ConfigError(f"MemorySystem.Controller.RowPolicy.impl = {rowpol}: expected one of "
                          f"{', '.join(ROW_POLICIES)}", path=file,
                          key="MemorySystem.Controller.RowPolicy.impl")
    cap = _get(tree, "MemorySystem.Controller.RowPolicy.cap", file, None)
    mapper = _get(tree, "MemorySystem.AddrMapper.impl", file, kind=str)
    if mapper not in MAPPERS:
        raise ConfigError(f"MemorySystem.AddrMapper.impl = {mapper}: expected one of "
                          f"{', '.join(MAPPERS)}", path=file, key="MemorySystem.AddrMapper.impl")
    if _get(tree, "MemorySystem.Controller.plugins", file, None):
        diffs.append("Controller.plugins ignored (command counters / recorders are not needed: "
                     "our statistics and --cmd-trace give the same)")
    prefetch = PREFETCH[impl]
    bl = 2 * t["nBL"] if impl != "LPDDR5" else 16
    fields: dict[str, Any] = dict(
        protocol=impl, bankgroups=bgs, banks_per_group=counts["bank"], bankgroup_enable=True,
        rows=counts["row"], columns=counts["column"], device_width=dq, BL=bl,
        channels=channels, bus_width=width, address_mapping=MAPPERS[mapper],
        tCK=tck_ps / 1000.0, AL=0, CL=t["nCL"], CWL=t["nCWL"],
        tCCD_S=t["nCCDS"], tCCD_L=max(t["nCCDL"], t["nCCDS"]),
        tRRD_S=t["nRRDS"], tRRD_L=max(t.get("nRRDL", t["nRRDS"]), t["nRRDS"]),
        tWTR_S=t["nWTRS"], tWTR_L=t["nWTRL"], tRTP=t["nRTP"], tWR=t["nWR"], tRP=t["nRP"],
        tRAS=t["nRAS"], tRCD=t.get("nRCD", t.get("nRCDRD", 0)), tFAW=t["nFAW"],
        tRTRS=t["nCS"], tRFC=t["nRFC"], tREFI=t.get("nREFI", 1 << 30),
        tRCDRD=t.get("nRCDRD", t.get("nRCD", 0)), tRCDWR=t.get("nRCDWR", t.get("nRCD", 0)),
        tPPD=t.get("nPPD", 0), refresh_policy="RANK_LEVEL_SIMULTANEOUS",
        scheduler=SCHEDULERS[sched], queue_structure="PER_RANK", trans_queue_size=READ_BUFFER + 1,
        cmd_queue_size=READ_BUFFER + 1, write_high_watermark=26, write_low_watermark=6)
    if impl == "DDR5":
        fields.update(tCCD_L_WR=t["nCCDL_WR"], tREFSBRD=t["nREFSBRD"], tRFCb=t["nRFCsb"],
                      tREFIb=max(1, t["nREFI"] // 4), tRTRS=4)
        diffs.append("DDR5: RD->WR turnaround is Ramulator's nCL+nBL+2-nCWL+2 (tRTRS = 4); "
                     "its rank-to-rank nCS = 2 is not used (one rank)")
    if impl == "LPDDR5":
        fields.update(wck_ratio=2, tRFCb=t["nRFCsb"], tREFIb=max(1, t["nREFI"] // 16))
        diffs.append("LPDDR5: Ramulator moves 32-byte transactions (prefetch 8 x 32 bits) while "
                     "a BL16 read moves 64 bytes; we map 64-byte requests, so its column "
                     "field is one bit wider than ours; CAS-WS commands are not modelled")
    if impl in ("HBM2", "HBM3"):
        pcs = int(o.get("pseudochannel", org.pseudochannels))
        fields.update(protocol="HBM3" if impl == "HBM3" else "HBM2", channels=channels * pcs,
                      bus_width=64, device_width=64, BL=8 if impl == "HBM3" else 4,
                      tREFI=1 << 30, tRFCb=t["nRFC"], tREFIb=1 << 30)
        diffs.append(f"{impl}: pseudo-channels become channels (Ramulator's RoBaRaCoCh puts the "
                     "pseudo-channel bit above the column: our single channel field differs); "
                     "no refresh (Ramulator's AllBank has no rank level to refresh: none issued)")
        if impl == "HBM2":
            fields["columns"] = counts["column"] // 2      # DRAMsim3's HBM x 2 quirk
    if rowpol == "ClosedRowPolicy":
        fields.update(row_buf_policy="CLOSE_PAGE", page_policy="close")
        diffs.append(f"ClosedRowPolicy(cap={cap if cap is not None else 10_000_000}) becomes "
                     "close page (precharge after the last pending hit), not 'close after cap "
                     "column commands'")
    diffs.append("front end: Ramulator re-offers a rejected request at its next front-end "
                 f"tick (every {mem_ratio // fe_ratio} memory cycles); ours accepts it at the "
                 "first cycle the queue has room")
    diffs.append("controller: our FR-FCFS over per-rank command queues of "
                 f"{READ_BUFFER + 1} and write drain at 26/6 entries approximates Ramulator's "
                 "Generic controller (read/write buffers of 33, write mode at > 0.8 x 32, "
                 "< 0.2 x 32, one active-buffer request per bank)")
    # channel_size: the rank size our sizing gives (DRAMsim3's rule) x Ramulator's ranks
    probe = MemoryConfig(name="probe", **{**fields, "channel_size": 1})
    fields["channel_size"] = probe._megs_per_rank * ranks
    name = file.stem
    try:
        cfg = MemoryConfig(name=name, **fields)
        cfg._attach(file, {})
        cfg.validate()
    except ConfigError as exc:
        raise ConfigError(f"the configuration it describes is not valid here: {exc}",
                          path=file) from exc
    # the data rate the file gives against the peak of the memory as imported (its clock
    # and our standard's burst): LPDDR5's preset cycles are of the 800 MHz CK but Ramulator
    # runs them at tCK = 312 ps (NOTES.md); Ramulator's HBM3 clock is HBM2's (CK = rate / 2),
    # on which our HBM3 rule moves a BL8 burst in 2 cycles
    rate_peak = cfg.channels * cfg.bus_width / 8 * t["rate"] / 1000.0
    if cfg.peak_bandwidth_GBps > 1.01 * rate_peak:
        why = {"LPDDR5": "Ramulator's 312 ps clock runs the preset's cycles of the 800 MHz CK",
               "HBM3": "Ramulator's HBM3 clock is HBM2's (CK = rate / 2), on which our HBM3 "
                       "burst rule (BL8 in 2 CK) is twice as fast"}.get(impl, "")
        cfg._load_warnings.append(
            f"{impl} as imported (tCK {cfg.tCK * 1000:.0f} ps, a burst in "
            f"{cfg.burst_cycle} cycles) peaks at {cfg.peak_bandwidth_GBps:.4g} GB/s, "
            f"{cfg.peak_bandwidth_GBps / rate_peak:.3g}x what {t['rate']} MT/s on "
            f"{cfg.channels} x {cfg.bus_width} bits moves ({rate_peak:.4g} GB/s)"
            + (f": {why}" if why else "") + "; bandwidth and time are not the device's (for "
            f"the device run our {impl} presets; for Ramulator's figures, the ramulator "
            "command)")
    if cfg.ranks != ranks:
        raise ConfigError(f"MemorySystem.DRAM.org.rank = {ranks}: our sizing gives "
                          f"{cfg.ranks} ranks", path=file, key="MemorySystem.DRAM.org.rank")
    # the second node level: rank, or the pseudo-channel for HBM2 / HBM3
    level1 = int(o.get("pseudochannel", org.pseudochannels)) if impl in ("HBM2", "HBM3") else ranks
    exact = impl in ("DDR4", "DDR5")
    if math.log2(prefetch * width // 8) != cfg.shift_bits:
        exact = False
        diffs.append(f"transaction offset: Ramulator log2({prefetch} x {width} / 8) = "
                     f"{int(math.log2(prefetch * width // 8))} bits, ours {cfg.shift_bits}")
    return RamulatorConfig(memory=cfg, path=file, offer_interval=mem_ratio // fe_ratio,
                           mapper=mapper, row_policy=rowpol, row_policy_cap=cap,
                           scheduler=sched, exact=exact, differences=diffs, standard=impl,
                           timings=t, counts=(channels, level1, bgs, counts["bank"],
                                              counts["row"], counts["column"]),
                           prefetch=prefetch, channel_width=width, frontend_ratio=fe_ratio,
                           memory_ratio=mem_ratio,
                           groups=tuple(str(k) for k in (_get(tree, "MemorySystem.DRAM", file,
                                                              {}) or {}) if isinstance(k, str)))
