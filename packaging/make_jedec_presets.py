"""Write the DDR5, LPDDR5 and HBM3 presets (resources/presets/dram/) from JEDEC values in ns.

Run from the repository root: ``.venv/bin/python packaging/make_jedec_presets.py``. Each preset is
built from the times the standards state (ns, or "max(n nCK, t ns)"), converted to clock
cycles with JEDEC's rounding (nCK = ceil(t / tCK - 0.025), the 2.5 % guard band of the
standards' rounding algorithm; refresh intervals, which are maxima, are floored), then
validated and written with a provenance note on every value. Editing a value here and
re-running is how these presets are maintained.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.config import PRESET_DIR, MemoryConfig, save_preset  # noqa: E402


def ck(t_ns: float, tck: float) -> int:
    """JEDEC rounding of a time to clock cycles."""
    return max(1, math.ceil(t_ns / tck - 0.025))


def mx(nck: int, t_ns: float, tck: float) -> int:
    return max(nck, ck(t_ns, tck))


def floor(t_ns: float, tck: float) -> int:
    return int(t_ns / tck + 1e-9)


def ddr5(name: str, tck: float, cl: int, rcd: int, rp: int) -> tuple[MemoryConfig, dict, str]:
    src = "JESD79-5"
    t = {"tCK": tck, "CL": cl, "CWL": cl - 2, "tRCD": rcd, "tRP": rp,
         "tRAS": ck(32, tck), "tWR": ck(30, tck), "tRTP": mx(12, 7.5, tck),
         "tCCD_L": mx(8, 5, tck), "tCCD_S": 8, "tCCD_L_WR": mx(16, 10, tck),
         "tWTR_L": mx(16, 10, tck), "tWTR_S": mx(4, 2.5, tck),
         "tRRD_L": mx(8, 5, tck), "tRRD_S": 8, "tFAW": 32,
         "tRFC": ck(295, tck), "tRFCb": ck(130, tck), "tREFI": floor(3900, tck),
         "tREFSBRD": ck(30 * 0.625, tck), "tPPD": 2, "tRTRS": 2,
         "tXS": ck(295 + 10, tck), "tXP": mx(8, 7.5, tck), "tCKE": 8, "tCKESR": 9,
         "tRPRE": 1, "tWPRE": 2, "AL": 0}
    t["tREFIb"] = t["tREFI"] // 4
    notes = {
        "tCK": f"{src} speed bin {name[5:]}", "CL": f"{src} speed bin (tAA)",
        "CWL": f"{src}: CWL = CL - 2", "tRCD": f"{src} speed bin", "tRP": f"{src} speed bin",
        "tRAS": f"{src}: 32 ns", "tWR": f"{src}: 30 ns", "tRTP": f"{src}: max(12 nCK, 7.5 ns)",
        "tCCD_L": f"{src}: max(8 nCK, 5 ns)", "tCCD_S": f"{src}: 8 nCK (BL16)",
        "tCCD_L_WR": f"{src} tCCD_L_WR2 (no read-modify-write): max(16 nCK, 10 ns)",
        "tWTR_L": f"{src}: max(16 nCK, 10 ns)", "tWTR_S": f"{src}: max(4 nCK, 2.5 ns)",
        "tRRD_L": f"{src}: max(8 nCK, 5 ns)", "tRRD_S": f"{src}: 8 nCK",
        "tFAW": f"{src}: 32 nCK (x8, 1 KB page)", "tRFC": f"{src} tRFC1, 16 Gb: 295 ns",
        "tRFCb": f"{src} tRFCsb, 16 Gb: 130 ns", "tREFI": f"{src}: 3.9 us (normal temperature)",
        "tREFIb": "REFsb interval: tREFI / 4 (4 banks per bank group: each bank once a tREFI)",
        "tREFSBRD": "Ramulator 2's DDR5 preset value (30 nCK at 3200 = 18.75 ns, kept in ns)",
        "tPPD": f"{src}: 2 nCK", "tXS": f"{src}: tRFC1 + 10 ns", "tXP": f"{src}: 7.5 ns",
    }
    org = {"protocol": "DDR5", "bankgroups": 8, "banks_per_group": 4, "bankgroup_enable": True,
           "rows": 65536, "columns": 1024, "device_width": 8, "BL": 16, "channels": 2,
           "bus_width": 32, "channel_size": 8192, "address_mapping": "rorabgbachco"}
    power = {"VDD": 1.1, "IDD0": 57.0, "IDD2P": 25.0, "IDD2N": 37.0, "IDD3N": 52.0,
             "IDD4W": 150.0, "IDD4R": 168.0, "IDD5AB": 250.0, "IDD5PB": 5.0, "IDD6x": 30.0}
    ctrl = {"queue_structure": "PER_BANK", "cmd_queue_size": 8, "trans_queue_size": 32,
            "refresh_policy": "RANK_LEVEL_STAGGERED"}
    notes.update({k: "JESD79-5 16 Gb x8" for k in ("bankgroups", "banks_per_group", "rows",
                                                   "columns", "device_width", "BL")})
    notes.update({"channels": "one DIMM = two independent 32-bit sub-channels",
                  "bus_width": "DDR5 sub-channel (without ECC)",
                  "channel_size": "4 x8 devices of 16 Gb per sub-channel",
                  "VDD": "JESD79-5: 1.1 V",
                  "refresh_policy": "REFab (normal refresh mode); SAME_BANK_STAGGERED gives REFsb"})
    for k in power:
        if k != "VDD":
            notes[k] = "placeholder: the DDR4-3200 preset's current (set your part's datasheet value)"
    cfg = MemoryConfig(name=name, **org, **t, **power, **ctrl)
    header = (f"{name}: DDR5 16 Gb x8 devices, one DIMM = 2 independent 32-bit sub-channels of "
              f"8 GB each (tCK {tck} ns), BL16, 64-byte requests.\n"
              "Source: JESD79-5 times in ns converted with JEDEC rounding by "
              "packaging/make_jedec_presets.py (re-run it after editing).\n"
              "IDD currents are placeholders (DDR4-3200's); DDR5 currents are per vendor part.")
    return cfg, notes, header


def lpddr5(name: str, wck: int, bg_mode: bool, rl: int, wl: int) -> tuple[MemoryConfig, dict, str]:
    src = "JESD209-5"
    tck = 1.25
    burst = 16 // (2 * wck)
    t = {"tCK": tck, "CL": rl, "CWL": wl, "tRCD": ck(18, tck), "tRP": ck(18, tck),
         "tRAS": ck(42, tck), "tWR": ck(34, tck), "tRTP": mx(4, 7.5, tck),
         "tCCD_L": 4 if bg_mode else burst, "tCCD_S": burst,
         "tWTR_L": ck(12, tck), "tWTR_S": ck(6.25, tck), "tRRD_L": mx(2, 5, tck),
         "tRRD_S": mx(2, 5, tck), "tFAW": ck(20, tck), "tPPD": 2, "tRTRS": 2,
         "tRFC": ck(210, tck), "tRFCb": ck(120, tck), "tREFI": floor(3906, tck),
         "tXS": ck(210 + 7.5, tck), "tXP": mx(3, 7.5, tck), "tCKE": mx(3, 5, tck),
         "tCKESR": mx(3, 15, tck), "AL": 0}
    t["tREFIb"] = t["tREFI"] // 16
    notes = {"tCK": "CK 800 MHz (WCK 3.2 GHz at 4:1 = 6400 MT/s; 1.6 GHz at 2:1 = 3200 MT/s)",
             "CL": f"{src} read latency RL (nCK of CK)", "CWL": f"{src} write latency WL",
             "tRCD": f"{src}: 18 ns", "tRP": f"{src} tRPpb: 18 ns (the engine precharges per bank)",
             "tRAS": f"{src}: 42 ns", "tWR": f"{src}: 34 ns", "tRTP": f"{src}: 7.5 ns",
             "tCCD_L": f"{src}: 4 nCK in bank-group mode (BL16)" if bg_mode else
             f"{src}: BL/(2 x WCK ratio) = {burst} nCK (16-bank mode: one bank group)",
             "tCCD_S": f"{src}: BL16 / (2 x WCK ratio) = {burst} nCK",
             "tWTR_L": f"{src}: 12 ns", "tWTR_S": f"{src}: 6.25 ns",
             "tRRD_L": f"{src}: 5 ns", "tRRD_S": f"{src}: 5 ns", "tFAW": f"{src}: 20 ns",
             "tPPD": f"{src}: 2 nCK", "tRFC": f"{src} tRFCab, 8 Gb: 210 ns",
             "tRFCb": f"{src} tRFCpb, 8 Gb: 120 ns", "tREFI": f"{src}: 3.906 us",
             "tREFIb": "per-bank refresh of one bank at a time: tREFI / 16 (JEDEC's REFpb "
                       "refreshes a pair every tREFI / 8: the same bank time)",
             "tXS": f"{src}: tRFCab + 7.5 ns", "wck_ratio": f"{src} WCK:CK ratio",
             "bankgroup_enable": "bank-group mode" if bg_mode else "16-bank mode",
             "VDD": f"{src}: VDD2H 1.05 V"}
    org = {"protocol": "LPDDR5", "bankgroups": 4, "banks_per_group": 4,
           "bankgroup_enable": bg_mode, "rows": 32768, "columns": 1024, "device_width": 16,
           "BL": 16, "wck_ratio": wck, "channels": 4, "bus_width": 16, "channel_size": 1024,
           "address_mapping": "rorabgbachco"}
    power = {"VDD": 1.05, "IDD0": 80.0, "IDD2P": 25.0, "IDD2N": 34.0, "IDD3N": 47.0,
             "IDD4W": 228.0, "IDD4R": 243.0, "IDD5AB": 280.0, "IDD5PB": 5.0, "IDD6x": 30.0}
    for k in power:
        if k != "VDD":
            notes[k] = "placeholder: the LPDDR4-3200 preset's current (set your part's value)"
    ctrl = {"queue_structure": "PER_BANK", "cmd_queue_size": 8, "trans_queue_size": 32,
            "refresh_policy": "BANK_LEVEL_STAGGERED"}
    notes["refresh_policy"] = "per-bank refresh REFpb (RANK_LEVEL_* gives REFab)"
    cfg = MemoryConfig(name=name, **org, **t, **power, **ctrl)
    mode = "bank-group mode (4 x 4 banks)" if bg_mode else "16-bank mode"
    header = (f"{name}: LPDDR5 8 Gb x16 channels, {mode}, WCK:CK = {wck}:1, CK 800 MHz "
              f"(tCK 1.25 ns), BL16 = 32-byte requests, 4 channels of 1 GB (a 64-bit interface).\n"
              "Source: JESD209-5 times in ns converted with JEDEC rounding by "
              "packaging/make_jedec_presets.py; RL/WL as given in the notes.\n"
              "WCK always-on mode assumed (no CAS-WS synchronisation commands). IDD currents "
              "are placeholders (LPDDR4-3200's).")
    return cfg, notes, header


def hbm3() -> tuple[MemoryConfig, dict, str]:
    tck = 0.625
    # DRAMsim3's HBM2 preset (tCK 1 ns) core timings, kept in ns: the HBM DRAM array
    t = {"tCK": tck, "CL": ck(14, tck), "CWL": ck(4, tck), "tRCDRD": ck(14, tck),
         "tRCDWR": ck(14, tck), "tRCD": ck(14, tck), "tRP": ck(14, tck), "tRAS": ck(34, tck),
         "tWR": ck(16, tck), "tRTP": ck(6, tck), "tCCD_L": ck(2, tck) + 1, "tCCD_S": 2,
         "tWTR_L": ck(8, tck), "tWTR_S": ck(6, tck), "tRRD_L": ck(6, tck),
         "tRRD_S": ck(4, tck), "tFAW": ck(30, tck), "tRTRS": 1,
         "tRFC": ck(350, tck), "tRFCb": ck(160, tck), "tREFI": floor(3900, tck),
         "tXS": ck(350 + 10, tck), "tXP": ck(8, tck), "tCKE": ck(8, tck), "tCKESR": ck(12, tck),
         "AL": 0}
    t["tREFIb"] = t["tREFI"] // 16
    hbm2 = "DRAMsim3's HBM2 preset value in ns (JESD238 core timings are not available here)"
    notes = {k: hbm2 for k in ("CL", "CWL", "tRCDRD", "tRCDWR", "tRCD", "tRP", "tRAS", "tWR",
                               "tRTP", "tWTR_L", "tWTR_S", "tRRD_L", "tRRD_S", "tFAW")}
    notes.update({"tCK": "JESD238: CK 1.6 GHz at 6.4 Gb/s per pin",
                  "tCCD_S": "BL8 burst = 2 nCK", "tCCD_L": "HBM2's 2 ns + 1 nCK",
                  "tRFC": "tRFCab 350 ns (8 Gb, as Ramulator 2's HBM3 table)",
                  "tRFCb": "tRFCpb 160 ns (Ramulator 2's HBM3 nRFCSB at 1 ns)",
                  "tREFI": "JESD238: 3.9 us", "tREFIb": "tREFI / 16 banks",
                  "channels": "16 channels x 2 pseudo-channels per stack",
                  "bus_width": "a pseudo-channel's 32 DQ",
                  "refresh_policy": "per-bank refresh REFpb (RANK_LEVEL_* gives REFab)"})
    org = {"protocol": "HBM3", "bankgroups": 4, "banks_per_group": 4, "bankgroup_enable": True,
           "rows": 16384, "columns": 256, "device_width": 32, "BL": 8, "channels": 32,
           "bus_width": 32, "channel_size": 256, "address_mapping": "rorabgbachco"}
    power = {"VDD": 1.1, "IDD0": 65.0, "IDD2P": 28.0, "IDD2N": 40.0, "IDD3N": 55.0,
             "IDD4W": 500.0, "IDD4R": 390.0, "IDD5AB": 250.0, "IDD5PB": 5.0, "IDD6x": 31.0}
    for k in power:
        if k != "VDD":
            notes[k] = "placeholder: the HBM2 preset's current (set your part's value)"
    notes["VDD"] = "JESD238: VDD 1.1 V"
    ctrl = {"queue_structure": "PER_BANK", "cmd_queue_size": 8, "trans_queue_size": 32,
            "refresh_policy": "BANK_LEVEL_STAGGERED", "hbm_dual_cmd": True}
    cfg = MemoryConfig(name="HBM3-6400", **org, **t, **power, **ctrl)
    header = ("HBM3-6400: one HBM3 stack at 6.4 Gb/s per pin, 32 pseudo-channels of 32 bits "
              "(tCK 0.625 ns), BL8 = 32-byte requests, 256 MB per pseudo-channel.\n"
              "Source: JESD238 organisation, clock and refresh; core timings (tRCD, tRP, tRAS, "
              "...) are DRAMsim3's HBM2 values in ns,\n"
              "converted at the HBM3 clock by packaging/make_jedec_presets.py (the JESD238 tables "
              "were not available; Ramulator 2's HBM3 preset is HBM2's too).")
    return cfg, notes, header


def refb_current(cfg: MemoryConfig, banks_per_refb: int) -> float:
    """IDD5PB placeholder that charges a per-bank (or same-bank) refresh the same energy per
    bank refreshed as an all-bank refresh (DRAMsim3's default, 5 mA, is below IDD3N and would
    make per-bank refresh energy negative)."""
    share = banks_per_refb / cfg.banks
    return round(cfg.IDD3N + (cfg.IDD5AB - cfg.IDD3N) * cfg.tRFC * share / cfg.tRFCb, 1)


def main() -> None:
    builds = [ddr5("DDR5-3200AN", 0.625, 22, 22, 22), ddr5("DDR5-4800B", 1 / 2.4, 40, 39, 39),
              lpddr5("LPDDR5-6400", 4, True, 20, 11),
              lpddr5("LPDDR5-3200-16B", 2, False, 10, 6), hbm3()]
    for cfg, notes, header in builds:
        per_refb = cfg.bankgroups if cfg.protocol == "DDR5" else 1
        cfg.IDD5PB = refb_current(cfg, per_refb)
        notes["IDD5PB"] = ("placeholder: the energy per bank refreshed of REFab, i.e. IDD3N + "
                           "(IDD5AB - IDD3N) x tRFC x banks covered / banks / tRFCb")
        cfg.validate()
        save_preset(cfg, PRESET_DIR / f"{cfg.name}.toml", header=header, sources=notes)
        print(PRESET_DIR / f"{cfg.name}.toml")


if __name__ == "__main__":
    main()
