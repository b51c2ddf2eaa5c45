"""Ramulator 2.0's organisation and timing presets, as data (facts read from its source at
commit 5e58d25, ``src/dram/impl/{DDR4,DDR5,LPDDR5,HBM2,HBM3}.cpp``; see
../shared/reference/ramulator2-ddr5/NOTES.md), and its rules for the derived timings.

Only the numbers are kept here; how they become a :class:`engine.config.MemoryConfig` is in
:mod:`engine.ramulator.config`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OrgPreset:
    standard: str
    density_mb: int
    dq: int
    bankgroups: int
    banks: int
    rows: int
    columns: int
    pseudochannels: int = 0      # HBM: per channel


def _ddr4() -> dict[str, OrgPreset]:
    out = {}
    for gb, rows_x8 in ((2, 1 << 14), (4, 1 << 15), (8, 1 << 16), (16, 1 << 17)):
        out[f"DDR4_{gb}Gb_x4"] = OrgPreset("DDR4", gb << 10, 4, 4, 4, rows_x8 * 2, 1 << 10)
        out[f"DDR4_{gb}Gb_x8"] = OrgPreset("DDR4", gb << 10, 8, 4, 4, rows_x8, 1 << 10)
        out[f"DDR4_{gb}Gb_x16"] = OrgPreset("DDR4", gb << 10, 16, 2, 4, rows_x8, 1 << 10)
    return out


ORG_PRESETS: dict[str, OrgPreset] = {
    **_ddr4(),
    "DDR5_8Gb_x4": OrgPreset("DDR5", 8 << 10, 4, 8, 2, 1 << 16, 1 << 11),
    "DDR5_8Gb_x8": OrgPreset("DDR5", 8 << 10, 8, 8, 2, 1 << 16, 1 << 10),
    "DDR5_8Gb_x16": OrgPreset("DDR5", 8 << 10, 16, 4, 2, 1 << 16, 1 << 10),
    "DDR5_16Gb_x4": OrgPreset("DDR5", 16 << 10, 4, 8, 4, 1 << 16, 1 << 11),
    "DDR5_16Gb_x8": OrgPreset("DDR5", 16 << 10, 8, 8, 4, 1 << 16, 1 << 10),
    "DDR5_16Gb_x16": OrgPreset("DDR5", 16 << 10, 16, 4, 4, 1 << 16, 1 << 10),
    "DDR5_32Gb_x4": OrgPreset("DDR5", 32 << 10, 4, 8, 4, 1 << 17, 1 << 11),
    "DDR5_32Gb_x8": OrgPreset("DDR5", 32 << 10, 8, 8, 4, 1 << 17, 1 << 10),
    "DDR5_32Gb_x16": OrgPreset("DDR5", 32 << 10, 16, 4, 4, 1 << 17, 1 << 10),
    "LPDDR5_2Gb_x16": OrgPreset("LPDDR5", 2 << 10, 16, 4, 4, 1 << 13, 1 << 10),
    "LPDDR5_4Gb_x16": OrgPreset("LPDDR5", 4 << 10, 16, 4, 4, 1 << 14, 1 << 10),
    "LPDDR5_8Gb_x16": OrgPreset("LPDDR5", 8 << 10, 16, 4, 4, 1 << 15, 1 << 10),
    "LPDDR5_16Gb_x16": OrgPreset("LPDDR5", 16 << 10, 16, 4, 4, 1 << 16, 1 << 10),
    "HBM2_2Gb": OrgPreset("HBM2", 2 << 10, 128, 4, 2, 1 << 14, 1 << 6, 2),
    "HBM2_4Gb": OrgPreset("HBM2", 4 << 10, 128, 4, 4, 1 << 14, 1 << 6, 2),
    "HBM2_8Gb": OrgPreset("HBM2", 8 << 10, 128, 4, 4, 1 << 15, 1 << 6, 2),
    "HBM3_2Gb": OrgPreset("HBM3", 2 << 10, 128, 4, 4, 1 << 13, 1 << 6, 2),
    "HBM3_4Gb": OrgPreset("HBM3", 4 << 10, 128, 4, 4, 1 << 14, 1 << 6, 2),
    "HBM3_8Gb": OrgPreset("HBM3", 8 << 10, 128, 4, 4, 1 << 15, 1 << 6, 2),
}

_DDR4_COLS = ("rate", "nBL", "nCL", "nRCD", "nRP", "nRAS", "nRC", "nWR", "nRTP", "nCWL",
              "nCCDS", "nCCDL", "nWTRS", "nWTRL")
_DDR4_ROWS = {
    "DDR4_1600J": (1600, 4, 10, 10, 10, 28, 38, 12, 6, 9, 4, 5, 2, 6),
    "DDR4_1600K": (1600, 4, 11, 11, 11, 28, 39, 12, 6, 9, 4, 5, 2, 6),
    "DDR4_1600L": (1600, 4, 12, 12, 12, 28, 40, 12, 6, 9, 4, 5, 2, 6),
    "DDR4_1866L": (1866, 4, 12, 12, 12, 32, 44, 14, 7, 10, 4, 5, 3, 7),
    "DDR4_1866M": (1866, 4, 13, 13, 13, 32, 45, 14, 7, 10, 4, 5, 3, 7),
    "DDR4_1866N": (1866, 4, 14, 14, 14, 32, 46, 14, 7, 10, 4, 5, 3, 7),
    "DDR4_2133N": (2133, 4, 14, 14, 14, 36, 50, 16, 8, 11, 4, 6, 3, 8),
    "DDR4_2133P": (2133, 4, 15, 15, 15, 36, 51, 16, 8, 11, 4, 6, 3, 8),
    "DDR4_2133R": (2133, 4, 16, 16, 16, 36, 52, 16, 8, 11, 4, 6, 3, 8),
    "DDR4_2400P": (2400, 4, 15, 15, 15, 39, 54, 18, 9, 12, 4, 6, 3, 9),
    "DDR4_2400R": (2400, 4, 16, 16, 16, 39, 55, 18, 9, 12, 4, 6, 3, 9),
    "DDR4_2400U": (2400, 4, 17, 17, 17, 39, 56, 18, 9, 12, 4, 6, 3, 9),
    "DDR4_2400T": (2400, 4, 18, 18, 18, 39, 57, 18, 9, 12, 4, 6, 3, 9),
    "DDR4_2666T": (2666, 4, 17, 17, 17, 43, 60, 20, 10, 14, 4, 7, 4, 10),
    "DDR4_2666U": (2666, 4, 18, 18, 18, 43, 61, 20, 10, 14, 4, 7, 4, 10),
    "DDR4_2666V": (2666, 4, 19, 19, 19, 43, 62, 20, 10, 14, 4, 7, 4, 10),
    "DDR4_2666W": (2666, 4, 20, 20, 20, 43, 63, 20, 10, 14, 4, 7, 4, 10),
    "DDR4_2933V": (2933, 4, 19, 19, 19, 47, 66, 22, 11, 16, 4, 8, 4, 11),
    "DDR4_2933W": (2933, 4, 20, 20, 20, 47, 67, 22, 11, 16, 4, 8, 4, 11),
    "DDR4_2933Y": (2933, 4, 21, 21, 21, 47, 68, 22, 11, 16, 4, 8, 4, 11),
    "DDR4_2933AA": (2933, 4, 22, 22, 22, 47, 69, 22, 11, 16, 4, 8, 4, 11),
    "DDR4_3200W": (3200, 4, 20, 20, 20, 52, 72, 24, 12, 16, 4, 8, 4, 12),
    "DDR4_3200AA": (3200, 4, 22, 22, 22, 52, 74, 24, 12, 16, 4, 8, 4, 12),
    "DDR4_3200AC": (3200, 4, 24, 24, 24, 52, 76, 24, 12, 16, 4, 8, 4, 12),
}


def _ddr5(cl: int, rc: int) -> dict[str, int]:
    cwl = cl - 2
    return dict(rate=3200, nBL=8, nCL=cl, nRCD=cl, nRP=cl, nRAS=52, nRC=rc, nWR=48, nRTP=12,
                nCWL=cwl, nCCDS=8, nCCDS_WR=8, nCCDS_WTR=cwl + 8 + 4, nCCDL=8, nCCDL_WR=16,
                nCCDL_WTR=cwl + 8 + 16, nWTRS=4, nWTRL=16, nRRDS=8, nREFSBRD=30, nCS=2,
                nPPD=2)


TIMING_PRESETS: dict[str, dict[str, int]] = {
    **{k: dict(zip(_DDR4_COLS, v), nCS=2) for k, v in _DDR4_ROWS.items()},
    # DDR5's nCCDS_WTR = CWL + 8 + 4 and nCCDL_WTR = CWL + 8 + 16: tWTR_S 4, tWTR_L 16
    "DDR5_3200AN": _ddr5(24, 75), "DDR5_3200BN": _ddr5(26, 77), "DDR5_3200C": _ddr5(28, 79),
    # LPDDR5: the preset's cycles are of the 800 MHz CK, but Ramulator runs them at
    # tCK = 1E6 / (6400 / 2) = 312 ps (NOTES.md) -- kept as it runs them
    "LPDDR5_6400": dict(rate=6400, nBL=4, nCL=20, nRCD=15, nRPab=17, nRP=15, nRAS=34, nRC=30,
                        nWR=28, nRTP=4, nCWL=11, nCCDS=4, nCCDL=4, nRRDS=4, nRRDL=4, nWTRS=5,
                        nWTRL=10, nFAW=16, nPPD=2, nCS=2),
    "HBM2_2Gbps": dict(rate=2000, nBL=4, nCL=7, nRCDRD=7, nRCDWR=7, nRP=7, nRAS=17, nRC=19,
                       nWR=8, nRTP=3, nCWL=2, nCCDS=1, nCCDL=2, nRRDS=2, nRRDL=3, nWTRS=3,
                       nWTRL=4, nFAW=15, nREFI=3900, nCS=1),
    "HBM3_2Gbps": dict(rate=2000, nBL=4, nCL=7, nRCDRD=7, nRCDWR=7, nRP=7, nRAS=17, nRC=19,
                       nWR=8, nRTP=3, nCWL=2, nCCDS=1, nCCDL=2, nRRDS=2, nRRDL=3, nWTRS=3,
                       nWTRL=4, nFAW=15, nREFI=3900, nCS=1, nRTPS=2, nRTPL=3, nRTW=3,
                       nRFCSB=160, nRREFD=8),
}

#: Prefetch (burst) and channel width per standard (Ramulator's m_internal_prefetch_size and
#: org.channel_width defaults).
PREFETCH = {"DDR4": 8, "DDR5": 16, "LPDDR5": 8, "HBM2": 2, "HBM3": 2}
CHANNEL_WIDTH = {"DDR4": 64, "DDR5": 32, "LPDDR5": 32, "HBM2": 64, "HBM3": 64}

_DDR4_RATE = (1600, 1866, 2133, 2400, 2666, 2933, 3200)
_DDR4_RRDS = {4: (4,) * 7, 8: (4,) * 7, 16: (5, 5, 6, 7, 8, 8, 9)}
_DDR4_RRDL = {4: (5, 5, 6, 6, 7, 8, 8), 8: (5, 5, 6, 6, 7, 8, 8), 16: (6, 6, 7, 8, 9, 10, 11)}
_DDR4_FAW = {4: (16,) * 7, 8: (20, 22, 23, 26, 28, 31, 34), 16: (28, 28, 32, 36, 40, 44, 48)}
_DENSITIES = (2048, 4096, 8192, 16384)


def jedec_rounding(t_ns: float, tck_ps: int) -> int:
    """Ramulator 2's JEDEC_rounding (base/utils.cpp), integer arithmetic as it does it."""
    return ((int(t_ns * 1000) * 1000 // tck_ps) + 974) // 1000


def jedec_rounding_ddr5(t_ns: float, tck_ps: int) -> int:
    """Ramulator 2's JEDEC_rounding_DDR5."""
    return ((int(t_ns * 1000) * 997 // tck_ps) + 1000) // 1000


def derived_timings(standard: str, org: OrgPreset, t: dict[str, int], tck_ps: int) -> dict[str, int]:
    """The timings Ramulator derives from rate, DQ and density (set_timing_vals)."""
    out: dict[str, int] = {}
    if standard == "DDR4":
        if org.dq in _DDR4_RRDS and t["rate"] in _DDR4_RATE:
            i = _DDR4_RATE.index(t["rate"])
            out.update(nRRDS=_DDR4_RRDS[org.dq][i], nRRDL=_DDR4_RRDL[org.dq][i],
                       nFAW=_DDR4_FAW[org.dq][i])
        d = _DENSITIES.index(org.density_mb)
        out["nRFC"] = jedec_rounding((160, 260, 360, 550)[d], tck_ps)
        out["nREFI"] = jedec_rounding(7800, tck_ps)
    elif standard == "DDR5":
        out.update(nRRDL=5, nFAW=40 if org.dq == 4 else 32)
        d = (8192, 16384, 32768).index(org.density_mb)
        out["nRFC"] = out["nRFC1"] = jedec_rounding_ddr5((195, 295, 410)[d], tck_ps)
        if org.dq == 4:
            out["nCCDL_WR"] = 32          # Ramulator's x4 tCCD_L_WR2 table
        out["nRFCsb"] = jedec_rounding_ddr5((115, 130, 190)[d], tck_ps)
        out["nREFI"] = jedec_rounding_ddr5(3900, tck_ps)
    elif standard == "LPDDR5":
        # tRFCab / tRFCpb in ns for the densities whose values the reference runs show
        # (8 Gb: nRFCab 674, nRFCpb 385; 16 Gb: 898, 449, at 312 ps)
        ab, pb = {8192: (210, 120), 16384: (280, 140)}[org.density_mb]
        out["nRFC"] = jedec_rounding(ab, tck_ps)
        out["nRFCsb"] = jedec_rounding(pb, tck_ps)
        out["nREFI"] = jedec_rounding(3906, tck_ps)
        d = _DENSITIES.index(org.density_mb) if org.density_mb in _DENSITIES else 2
        out["nPBR2PBR"] = jedec_rounding((60, 90, 90, 90)[d], tck_ps)
        out["nPBR2ACT"] = jedec_rounding(8, tck_ps)
    elif standard in ("HBM2", "HBM3"):
        d = _DENSITIES.index(org.density_mb)
        out["nRFC"] = jedec_rounding((160, 260, 350, 450)[d], tck_ps)
    return out
