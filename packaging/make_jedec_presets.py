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


#: The HBM3 source: Ramulator 2.1's HBM3 model. Its org presets cite JESD238 Table 4 and its
#: tRFCab resolver Table 84; its HBM3_6400Mbps timing preset (below) cites no table.
HBM3_SOURCE = ("Ramulator 2.1 (CMU-SAFARI/ramulator2 38c51d4, python/ramulator/dram/hbm3.py) "
               "HBM3_6400Mbps")

#: That preset's values, in nCK of tCK 0.625 ns, under Ramulator's names (nBL: data-bus cycles
#: of a BL8 burst). nCCDR (RD -> RD to another SID) is not used: our HBM3 has one SID.
HBM3_6400_NCK = {"nBL": 2, "nCL": 20, "nCWL": 10, "nRCDRD": 31, "nRCDWR": 15, "nRP": 26,
                 "nRAS": 45, "nRC": 72, "nWR": 33, "nRTP": 9, "nCCDS": 2, "nCCDL": 4,
                 "nCCDR": 3, "nRRDS": 4, "nRRDL": 5, "nFAW": 24, "nWTRS": 7, "nWTRL": 10,
                 "nRTW": 20, "nRFCpb": 320, "nREFI": 6240, "nPPD": 2}

#: JESD238 Table 84 (as Ramulator 2.1's _resolve_nRFC): tRFCab in ns by channel density, the
#: largest density (Gb per channel) each value covers.
HBM3_TRFCAB_NS = ((4, 260), (8, 350), (16, 450), (float("inf"), 550))


def hbm3() -> tuple[MemoryConfig, dict, str]:
    tck = 0.625
    r = HBM3_6400_NCK
    org = {"protocol": "HBM3", "bankgroups": 4, "banks_per_group": 4, "bankgroup_enable": True,
           "rows": 16384, "columns": 256, "device_width": 32, "BL": 8, "channels": 32,
           "bus_width": 32, "channel_size": 256, "address_mapping": "rorabgbachco"}
    # a JESD238 channel is two pseudo-channels (one engine channel each) and, here, one SID
    channel_gb = 2 * org["channel_size"] * 8 / 1024
    trfcab_ns = next(ns for top, ns in HBM3_TRFCAB_NS if channel_gb <= top)
    col_gap = r["nCL"] + r["nBL"] - r["nCWL"]      # RL + burst - WL: RD -> WR without turnaround
    t = {"tCK": tck, "AL": 0, "CL": r["nCL"], "CWL": r["nCWL"], "tRCDRD": r["nRCDRD"],
         "tRCDWR": r["nRCDWR"], "tRCD": r["nRCDRD"], "tRP": r["nRP"],
         "tRAS": max(r["nRAS"], r["nRC"] - r["nRP"]), "tWR": r["nWR"], "tRTP": r["nRTP"],
         "tCCD_L": r["nCCDL"], "tCCD_S": r["nCCDS"], "tWTR_L": r["nWTRL"], "tWTR_S": r["nWTRS"],
         "tRRD_L": r["nRRDL"], "tRRD_S": r["nRRDS"], "tFAW": r["nFAW"], "tPPD": r["nPPD"],
         "tRTRS": r["nRTW"] - col_gap, "tRFC": ck(trfcab_ns, tck), "tRFCb": r["nRFCpb"],
         "tREFI": r["nREFI"], "tREFSBRD": mx(3, 8, tck),
         "tXS": ck(trfcab_ns + 10, tck), "tXP": ck(8, tck), "tCKE": ck(8, tck),
         "tCKESR": ck(12, tck)}
    t["tREFIb"] = t["tREFI"] // 16
    assert r["nBL"] == org["BL"] // 4 and t["tREFI"] == floor(3900, tck)

    def src(*names: str) -> str:
        return "Ramulator 2.1 HBM3_6400Mbps (JESD238, no table cited): " + ", ".join(
            f"{n} {r[n]} ({r[n] * tck:g} ns)" for n in names)

    notes = {key: src(name) for key, name in (
        ("CL", "nCL"), ("CWL", "nCWL"), ("tRCDRD", "nRCDRD"), ("tRCDWR", "nRCDWR"),
        ("tRP", "nRP"), ("tWR", "nWR"), ("tRTP", "nRTP"), ("tCCD_L", "nCCDL"),
        ("tCCD_S", "nCCDS"), ("tWTR_L", "nWTRL"), ("tWTR_S", "nWTRS"), ("tRRD_L", "nRRDL"),
        ("tRRD_S", "nRRDS"), ("tFAW", "nFAW"), ("tPPD", "nPPD"), ("tRFCb", "nRFCpb"))}
    notes.update({
        "tCK": "JESD238: CK 1.6 GHz at 6.4 Gb/s per pin (tCK_ps 625)",
        "tRCD": "unused by HBM (tRCDRD / tRCDWR); set to tRCDRD",
        "tRAS": src("nRAS", "nRC", "nRP") + "; tRC is derived as tRAS + tRP, so tRAS = "
                f"nRC - nRP ({t['tRAS'] - r['nRAS']} cycle(s) over the nRAS minimum)",
        "tRTRS": src("nRTW") + f"; RD -> WR = RL + burst - WL + tRTRS, so tRTRS = nRTW - "
                 f"{col_gap} (one rank per pseudo-channel: no rank switch)",
        "tRFC": f"JESD238 Table 84 (Ramulator 2.1's resolver): tRFCab {trfcab_ns} ns for a "
                f"{channel_gb:g} Gb channel (2 pseudo-channels, 1 SID)",
        "tREFI": src("nREFI") + " (3.9 us)",
        "tREFIb": "tREFIpb = tREFI / 16 banks (Ramulator 2.1's resolver)",
        "tREFSBRD": "HBM3 tRREFD (REFpb -> ACT or REFpb of another bank): max(3 nCK, 8 ns) "
                    "as Ramulator 2.1's resolver (its preset's nRREFD 8 nCK = 5 ns is Ramulator "
                    "2.0's HBM2/HBM3 8 nCK at tCK 1 ns, kept in nCK)",
        "tXS": "tRFCab + 10 ns (not in the source; as DDR's tXS)",
        "tXP": "HBM2's 8 ns (not in the source; not modelled by the engine)",
        "tCKE": "HBM2's 8 ns (not in the source; not modelled by the engine)",
        "tCKESR": "HBM2's 12 ns (not in the source)",
        "channels": "16 channels x 2 pseudo-channels per stack",
        "bus_width": "a pseudo-channel's 32 DQ",
        "channel_size": "2 Gb per pseudo-channel: JESD238 Table 4 as Ramulator 2.1's org "
                        "preset HBM3_4Gb (4 Gb die = 4 Gb channel, 1 SID, 4 x 4 banks)",
        "rows": "HBM3_4Gb: 16K rows", "columns": "HBM3_4Gb: 32 bursts of BL8 per row",
        "refresh_policy": "per-bank refresh REFpb (RANK_LEVEL_* gives REFab)"})
    power = {"VDD": 1.1, "IDD0": 65.0, "IDD2P": 28.0, "IDD2N": 40.0, "IDD3N": 55.0,
             "IDD4W": 500.0, "IDD4R": 390.0, "IDD5AB": 250.0, "IDD5PB": 5.0, "IDD6x": 31.0}
    for k in power:
        if k != "VDD":
            notes[k] = ("placeholder: the HBM2 preset's current (Ramulator 2.1 and DRAMPower "
                        "give no HBM3 IDD values; set your part's value)")
    notes["VDD"] = "JESD238: VDD 1.1 V"
    ctrl = {"queue_structure": "PER_BANK", "cmd_queue_size": 8, "trans_queue_size": 32,
            "refresh_policy": "BANK_LEVEL_STAGGERED", "hbm_dual_cmd": True}
    cfg = MemoryConfig(name="HBM3-6400", **org, **t, **power, **ctrl)
    header = ("HBM3-6400: one HBM3 stack at 6.4 Gb/s per pin, 32 pseudo-channels of 32 bits "
              "(tCK 0.625 ns), BL8 = 32-byte requests, 256 MB per pseudo-channel.\n"
              f"Source: JESD238 timings and refresh as {HBM3_SOURCE} gives them (its org "
              "presets cite JESD238 Table 4,\n"
              "its tRFCab resolver Table 84), written by packaging/make_jedec_presets.py; "
              "the notes say how each maps onto the engine.\n"
              "IDD currents are placeholders (HBM2's); nCCDR (another SID) is not modelled.")
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
