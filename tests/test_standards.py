"""DRAM standards as data (engine.standards) and the DDR5 / LPDDR5 / HBM3 standards built on it."""
from __future__ import annotations

import pytest

from engine import standards
from engine.config import PROTOCOLS, ConfigError, MemoryConfig, list_presets, load_preset
from engine.jedec_check import CheckParams, check_command_trace, check_commands, parse_command_trace
from engine.simulator import SimOptions, Simulator, cmd_trace_paths
from engine.standards.base import COMMAND_NAMES, NCMD, REFB
from engine.timing import build_tables, derived_delays

import importlib.util
import math
from pathlib import Path

import numpy as np

_GEN = Path(__file__).resolve().parents[1] / "packaging" / "make_jedec_presets.py"


def _generator():
    """packaging/make_jedec_presets.py, the one home of the JEDEC presets' values."""
    spec = importlib.util.spec_from_file_location("make_jedec_presets", _GEN)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- the registry -------------------------------------------------------------------------
def test_every_protocol_has_one_standard_module() -> None:
    assert PROTOCOLS == standards.PROTOCOLS
    assert {"DDR5", "LPDDR5", "HBM3"} <= set(PROTOCOLS)
    for name, std in standards.STANDARDS.items():
        assert std.name == name
        assert sorted(c.code for c in std.commands) == list(range(NCMD)), name
        assert std.refresh_policies, name
    with pytest.raises(KeyError, match="expected one of"):
        standards.get("DDR9")


@pytest.mark.parametrize("preset", list_presets())
def test_presets_belong_to_their_standard(preset: str) -> None:
    cfg = load_preset(preset)
    std = standards.get(cfg.protocol)
    if std.name in ("DDR5", "LPDDR5", "HBM3"):
        assert preset in std.presets
    # every constraint names a delay the configuration derives, and the tables compile
    delays = derived_delays(cfg)
    assert all(c.delay in delays for c in std.constraints)
    tables = build_tables(cfg)
    assert tables.count.sum() > 0


def test_declared_presets_exist() -> None:
    shipped = set(list_presets())
    for std in standards.STANDARDS.values():
        assert set(std.presets) <= shipped, std.name


# ---- configuration: derived values, never overwritten input ---------------------------------
def test_dual_command_is_derived_not_overwritten() -> None:
    ddr4 = load_preset("DDR4-3200")
    assert ddr4.hbm_dual_cmd is True and ddr4.dual_cmd_eff is False
    as_hbm = ddr4.replace(protocol="HBM2", tRCDRD=22, tRCDWR=22)
    assert as_hbm.dual_cmd_eff is True          # was False: __post_init__ overwrote it


def test_bl_zero_is_an_error_naming_the_key() -> None:
    with pytest.raises(ConfigError) as exc:
        load_preset("DDR4-3200").replace(BL=0)
    assert exc.value.key == "BL" and "power of two" in str(exc.value)


def test_standard_checks_burst_wck_and_refresh_kind() -> None:
    lp5 = load_preset("LPDDR5-6400")
    assert (lp5.wck_ratio, lp5.burst_cycle) == (4, 2)
    assert lp5.replace(wck_ratio=2).burst_cycle == 4
    with pytest.raises(ConfigError, match="wck_ratio = 0: LPDDR5 expects"):
        lp5.replace(wck_ratio=0)
    with pytest.raises(ConfigError, match="BL = 8: DDR5 expects 16"):
        load_preset("DDR5-3200AN").replace(BL=8)
    with pytest.raises(ConfigError, match="refresh_policy = SAME_BANK_STAGGERED: DDR4 supports"):
        load_preset("DDR4-3200").replace(refresh_policy="SAME_BANK_STAGGERED")
    hbm3 = load_preset("HBM3-6400")
    assert hbm3.columns_eff == hbm3.columns         # no DRAMsim3 HBM x 2
    assert hbm3.burst_cycle == 2 and hbm3.request_size_bytes == 32
    ddr5 = load_preset("DDR5-3200AN")
    assert ddr5.burst_cycle == 8 and ddr5.request_size_bytes == 64 and ddr5.bankgroups == 8


def test_ddr5_tables_follow_its_declarations() -> None:
    cfg = load_preset("DDR5-3200AN")
    t = build_tables(cfg)
    from engine.timing import ACT, OTHER_BG, OTHER_RANK, RD, SAME_BG, WR
    assert t.rules(SAME_BG, WR)["write"] == cfg.tCCD_L_WR > cfg.tCCD_L
    assert t.rules(SAME_BG, RD)["read"] == cfg.tCCD_L
    assert t.rules(OTHER_BG, REFB)["activate"] == cfg.tREFSBRD
    # two-cycle ACT: nothing else on the sub-channel in the next cycle
    assert t.rules(OTHER_BG, ACT)["read"] == 2 and t.rules(OTHER_RANK, ACT)["precharge"] == 2
    hbm3 = build_tables(load_preset("HBM3-6400"))
    assert "read" not in hbm3.rules(OTHER_BG, ACT)   # row bus only: RD may follow at once
    assert hbm3.rules(OTHER_BG, ACT)["precharge"] == 2


def test_hbm3_preset_is_what_the_generator_writes() -> None:
    gen = _generator()
    built, notes, _ = gen.hbm3()
    built.IDD5PB = gen.refb_current(built, 1)
    shipped = load_preset("HBM3-6400")
    assert shipped.to_dict() == built.to_dict()
    # every timing the source gives carries its provenance in the file
    text = (Path(shipped.source_path)).read_text()
    for key in ("CL", "CWL", "tRCDRD", "tRCDWR", "tRP", "tRAS", "tWR", "tRTP", "tRTRS", "tPPD",
                "tRFC", "tRFCb", "tREFSBRD"):
        assert key in notes and notes[key] in text, key


def test_hbm3_tables_are_jesd238_as_ramulator_21_gives_it() -> None:
    """The kernel's HBM3 delays, re-derived from the source's values with the source's own
    formulas (Ramulator 2.1 hbm3.py timing_constraints), not read back from our preset."""
    from engine.timing import ACT, OTHER_BG, PRE, RD, SAME_BANK, SAME_BG, WR, WRP
    r = _generator().HBM3_6400_NCK
    cfg = load_preset("HBM3-6400")
    t = build_tables(cfg)
    bank, bg, obg = (t.rules(s, c) for s, c in ((SAME_BANK, ACT), (SAME_BG, ACT), (OTHER_BG, ACT)))
    assert (bank["activate"], bank["read"], bank["write"]) == (r["nRC"], r["nRCDRD"], r["nRCDWR"])
    assert bank["precharge"] >= r["nRAS"] and cfg.tRC == r["nRC"]
    assert (bg["activate"], obg["activate"]) == (r["nRRDL"], r["nRRDS"])
    assert t.rules(SAME_BANK, PRE)["activate"] == r["nRP"]
    assert t.rules(SAME_BANK, RD)["precharge"] == r["nRTP"]
    assert t.rules(SAME_BANK, WR)["precharge"] == r["nCWL"] + r["nBL"] + r["nWR"]
    assert t.rules(SAME_BANK, WRP)["activate"] == r["nCWL"] + r["nBL"] + r["nWR"] + r["nRP"]
    for scope in (SAME_BANK, SAME_BG, OTHER_BG):
        assert t.rules(scope, RD)["write"] == r["nRTW"], scope
    assert t.rules(SAME_BG, RD)["read"] == r["nCCDL"]
    assert t.rules(OTHER_BG, RD)["read"] == r["nCCDS"]
    assert t.rules(SAME_BG, WR)["read"] == r["nCWL"] + r["nBL"] + r["nWTRL"]
    assert t.rules(OTHER_BG, WR)["read"] == r["nCWL"] + r["nBL"] + r["nWTRS"]
    assert t.rules(SAME_BG, PRE)["precharge"] == t.rules(OTHER_BG, PRE)["precharge"] == r["nPPD"]
    assert t.rules(SAME_BANK, REFB)["activate"] == r["nRFCpb"]
    trrefd = max(3, math.ceil(8 / cfg.tCK))             # max(3 nCK, 8 ns)
    assert t.rules(SAME_BG, REFB)["activate"] == t.rules(OTHER_BG, REFB)["activate"] == trrefd
    assert (cfg.tFAW, cfg.tREFI, cfg.tREFIb) == (r["nFAW"], r["nREFI"], r["nREFI"] // 16)
    # one SID, 2 x 2 Gb pseudo-channels: a 4 Gb channel, JESD238 Table 84's 260 ns
    assert cfg.capacity_bytes * 8 // cfg.channels * 2 == 4 << 30
    assert cfg.tRFC == math.ceil(260 / cfg.tCK)


# ---- the checker, written from the standards --------------------------------------------------
def _rules(lines: list[str], cfg: MemoryConfig) -> list[str]:
    return [v.rule for v in check_command_trace(lines, cfg)]


def test_checker_ddr5_rules() -> None:
    cfg = load_preset("DDR5-3200AN")
    ok = ["0 activate 0 0 0 0 0x1 0x0", "22 write 0 0 0 0 0x1 0x0",
          f"{22 + cfg.tCCD_L_WR} write 0 0 0 0 0x1 0x8"]
    assert _rules(ok, cfg) == []
    early = ok[:2] + [f"{22 + cfg.tCCD_L_WR - 1} write 0 0 0 0 0x1 0x8"]
    assert _rules(early, cfg) == ["tCCD_L_WR"]
    two_cycle = ["0 activate 0 0 0 0 0x1 0x0", "1 precharge 0 0 1 0 0x1 0x0"]
    assert "command bus" in _rules(two_cycle, cfg)
    # REFsb (bank group -1): bank 0 of every bank group must be closed
    refsb_open = ["0 activate 0 0 3 0 0x1 0x0", "200 refresh_bank -1 0 -1 0 -0x1 -0x1"]
    assert "REFb to open bank" in _rules(refsb_open, cfg)
    refsb = ["0 refresh_bank -1 0 -1 1 -0x1 -0x1", f"{cfg.tREFSBRD - 1} activate 0 0 2 0 0x1 0x0",
             f"{cfg.tRFCb - 1} activate 0 0 5 1 0x1 0x0"]
    assert sorted(_rules(refsb, cfg)) == ["tREFSBRD", "tRFCb"]
    # DDR5 allows 4 postponed REFs: 5 x tREFI
    late = [f"{5 * cfg.tREFI + 1} refresh -1 0 -1 -1 -0x1 -0x1"]
    assert _rules(late, cfg) == ["tREFI postponement"]


def test_checker_hbm3_row_bus_two_cycle_act() -> None:
    cfg = load_preset("HBM3-6400")
    ok = ["0 activate 0 0 0 0 0x1 0x0", "1 read 0 0 1 0 0x1 0x0"]
    assert "command bus" not in _rules(ok, cfg)
    bad = ["0 activate 0 0 0 0 0x1 0x0", "1 activate 0 0 1 0 0x1 0x0"]
    assert "command bus" in _rules(bad, cfg)


def test_checker_hbm3_trrefd_and_tppd() -> None:
    cfg = load_preset("HBM3-6400")
    d = cfg.tREFSBRD                                      # JESD238 tRREFD
    refpb = "0 refresh_bank 0 0 1 2 -0x1 -0x1"
    assert _rules([refpb, f"{d} activate 0 0 0 2 0x1 0x0"], cfg) == []
    assert _rules([refpb, f"{d} refresh_bank 0 0 3 0 -0x1 -0x1"], cfg) == []
    assert _rules([refpb, f"{d - 1} activate 0 0 1 3 0x1 0x0"], cfg) == ["tRREFD"]
    assert _rules([refpb, f"{d - 1} refresh_bank 0 0 0 0 -0x1 -0x1"], cfg) == ["tRREFD"]
    # the refreshed bank itself waits tRFCb, not tRREFD
    assert _rules([refpb, f"{d} activate 0 0 1 2 0x1 0x0"], cfg) == ["tRFCb"]
    # ACT -> REFpb of another bank: tRRD_S
    act = "0 activate 0 0 0 0 0x1 0x0"
    assert _rules([act, f"{cfg.tRRD_S} refresh_bank 0 0 1 1 -0x1 -0x1"], cfg) == []
    assert _rules([act, f"{cfg.tRRD_S - 1} refresh_bank 0 0 1 1 -0x1 -0x1"],
                  cfg) == ["tRRD (ACT -> REFpb)"]
    acts = ["0 activate 0 0 0 0 0x1 0x0", "5 activate 0 0 1 0 0x1 0x0"]
    pre = f"{cfg.tRAS + 5} precharge 0 0 1 0 0x1 0x0"
    assert _rules(acts + [f"{cfg.tRAS + 5 - cfg.tPPD} precharge 0 0 0 0 0x1 0x0", pre], cfg) == []
    assert _rules(acts + [f"{cfg.tRAS + 6 - cfg.tPPD} precharge 0 0 0 0 0x1 0x0", pre],
                  cfg) == ["tPPD"]


# ---- native runs pass the checker ---------------------------------------------------------------
def _run(cfg: MemoryConfig, tmp_path, n: int = 3000) -> tuple[list, dict]:
    rng = np.random.default_rng(7)
    addr = (rng.integers(0, cfg.capacity_bytes // 64, n) * 64).astype(np.int64)
    is_w = rng.random(n) < 0.3
    cyc = np.arange(n, dtype=np.int64) * 3
    out = tmp_path / f"{cfg.name}.cmd"
    sim = Simulator(cfg, SimOptions(cmd_trace=out))
    try:
        sim.feed(addr, is_w, cyc, np.zeros(n, np.int64))
        st = sim.finish()
    finally:
        sim.close()
    found = []
    for p in cmd_trace_paths(out, cfg.channels):
        found += check_command_trace(p, cfg)
    d = st.to_dict()
    return found, d.get("summary", d)


@pytest.mark.parametrize("preset,policy", [("DDR5-3200AN", "SAME_BANK_STAGGERED"),
                                           ("DDR5-3200AN", "RANK_LEVEL_STAGGERED"),
                                           ("LPDDR5-6400", "BANK_LEVEL_STAGGERED"),
                                           ("LPDDR5-3200-16B", "BANK_LEVEL_STAGGERED"),
                                           ("HBM3-6400", "BANK_LEVEL_STAGGERED"),
                                           ("HBM3-6400", "RANK_LEVEL_STAGGERED")])
def test_native_runs_are_jedec_clean(preset: str, policy: str, tmp_path) -> None:
    cfg = load_preset(preset).replace(refresh_policy=policy, channels=1,
                                      channel_size=load_preset(preset).channel_size)
    found, s = _run(cfg, tmp_path)
    assert found == [], found[:3]
    assert s["num_reads_done"] + s["num_writes_done"] > 0
    refreshes = s["num_refb_cmds"] if policy != "RANK_LEVEL_STAGGERED" else s["num_ref_cmds"]
    assert refreshes > 0


def test_refsb_prints_every_bank_group(tmp_path) -> None:
    cfg = load_preset("DDR5-3200AN").replace(refresh_policy="SAME_BANK_STAGGERED", channels=1)
    _run(cfg, tmp_path, n=1500)
    lines = [ln.split() for ln in (tmp_path / f"{cfg.name}.cmd").read_text().splitlines()
             if "refresh_bank" in ln]
    assert lines and all(f[4] == "-1" for f in lines)          # bank group -1
    assert {f[5] for f in lines} >= {"0", "1"}                  # banks in turn


@pytest.mark.parametrize("policy", ["BANK_LEVEL_STAGGERED", "RANK_LEVEL_STAGGERED"])
def test_native_hbm3_runs_at_the_jesd238_limits(policy: str, tmp_path) -> None:
    """The HBM3 trace is clean with the preset's timings and breaks each of them when it is
    one cycle longer: the kernel issues at exactly those limits and the checker reads them
    from the configuration."""
    cfg = load_preset("HBM3-6400").replace(channels=1, refresh_policy=policy)
    found, _ = _run(cfg, tmp_path)
    assert found == []
    cmds = parse_command_trace(cmd_trace_paths(tmp_path / f"{cfg.name}.cmd", 1)[0])
    rules = {"tRTRS": "RD->WR turnaround", "tRCDRD": "tRCDRD", "tRCDWR": "tRCDWR",
             "tRAS": "tRAS", "tRP": "tRP", "tRTP": "tRTP", "tWR": "tWR", "tWTR_L": "tWTR_L",
             "tCCD_L": "tCCD_L", "tRRD_L": "tRRD_L", "tFAW": "tFAW", "tPPD": "tPPD"}
    if policy == "BANK_LEVEL_STAGGERED":
        rules.update(tREFSBRD="tRREFD", tRFCb="tRFCb")
    for key, rule in rules.items():
        longer = cfg.replace(**{key: getattr(cfg, key) + 1})
        broken = {v.rule for v in check_commands(cmds, CheckParams.from_config(longer))}
        assert rule in broken, (key, broken)
