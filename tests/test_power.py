"""Tests of engine.power: DRAMsim3 core energy reproduced exactly, IO energy, splits, IO table."""
from __future__ import annotations

import configparser
import importlib
import importlib.util
import json
import logging
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from engine.errors import ConfigError
from engine.power import (
    COMPONENTS,
    DRAMSIM3_ENERGY_NAMES,
    EnergyCounts,
    IOEnergySpec,
    compute_energy,
    default_io_energy_path,
    energy_increments,
    io_energy_per_bit,
)

from refdata import DATA_DIR, MISSING_DATA  # tests/data/ (provenance: tests/data/README.md)
SHARED = DATA_DIR
DS3_REF = SHARED / "reference" / "dramsim3"
DRAMPOWER_REF = SHARED / "reference" / "drampower"
CONFIG_DIR = SHARED / "dramsim3-configs"

needs_shared = pytest.mark.skipif(
    not (DS3_REF / "results" / "raw").is_dir() or not CONFIG_DIR.is_dir(),
    reason=f"{MISSING_DATA}: {SHARED}",
)

CONFIGS = ["DDR4_8Gb_x8_3200", "LPDDR4_8Gb_x16_2400", "GDDR6_8Gb_x16", "HBM2_8Gb_x128"]
WORKLOADS = ["mixed", "random", "stream", "strided", "diffusion"]
REL = 1e-9


# ---------------------------------------------------------------------------------------------
# A stand-in for engine.config.MemoryConfig, built from DRAMsim3's own printout of its derived
# parameters (geometry, timing in cycles) plus the .ini [power] section.
# ---------------------------------------------------------------------------------------------

@dataclass
class StandInConfig:
    protocol: str
    tCK: float
    VDD: float
    IDD0: float
    IDD2P: float
    IDD2N: float
    IDD3N: float
    IDD4W: float
    IDD4R: float
    IDD5AB: float
    IDD5PB: float
    IDD6x: float
    tRAS: int
    tRP: int
    tRFC: int
    tRFCb: int
    burst_cycle: int
    devices_per_rank: int
    ranks: int
    banks: int
    channels: int
    bus_width: int
    request_size_bytes: int
    VDDQ: float | None = None

    @property
    def tRC(self) -> int:
        return self.tRAS + self.tRP


_POWER_DEFAULTS = {"VDD": 1.2, "IDD0": 48, "IDD2P": 25, "IDD2N": 34, "IDD3N": 43, "IDD4W": 123,
                   "IDD4R": 135, "IDD5AB": 250, "IDD5PB": 5, "IDD6x": 31}


def _derived_block(name: str) -> str:
    text = (DS3_REF / "derived_params.txt").read_text()
    blocks = re.split(r"^=== ", text, flags=re.M)
    for block in blocks:
        if block.startswith(name + "\n"):
            return block
    raise KeyError(name)


def _kv(line: str) -> dict[str, str]:
    return dict(tok.split("=", 1) for tok in line.split() if "=" in tok)


def standin_config(name: str) -> StandInConfig:
    block = _derived_block(name)
    lines = block.splitlines()
    geo = _kv(next(l for l in lines if l.startswith("ranks=")))
    tim = _kv(next(l for l in lines if l.startswith("tCK=")))
    ini = configparser.ConfigParser(inline_comment_prefixes=(";", "#"))
    ini.optionxform = str  # keep IDD6x etc. as written
    ini.read(CONFIG_DIR / f"{name}.ini")
    power = {k: float(ini.get("power", k, fallback=str(v))) for k, v in _POWER_DEFAULTS.items()}
    return StandInConfig(
        protocol=ini.get("dram_structure", "protocol"),
        tCK=float(tim["tCK"]), tRAS=int(tim["tRAS"]), tRP=int(tim["tRP"]),
        tRFC=int(tim["tRFC"]), tRFCb=int(tim["tRFCb"]),
        burst_cycle=int(geo["burst_cycle"]), devices_per_rank=int(geo["devices_per_rank"]),
        ranks=int(geo["ranks"]), banks=int(geo["banks"]), channels=int(geo["channels"]),
        bus_width=int(ini.get("system", "bus_width")),
        request_size_bytes=int(geo["request_size_bytes"]),
        **power,
    )


def _engine_config_loader() -> Callable[[str], Any] | None:
    if importlib.util.find_spec("engine.config") is None:
        return None
    module = importlib.import_module("engine.config")
    load_ini = getattr(module, "load_ini", None)
    if load_ini is None:
        return None
    return lambda name: load_ini(CONFIG_DIR / f"{name}.ini")


def _config_factories() -> list[Any]:
    params = [pytest.param(standin_config, id="standin")]
    loader = _engine_config_loader()
    params.append(pytest.param(loader, id="engine.config",
                               marks=pytest.mark.skipif(loader is None,
                                                        reason="engine.config.load_ini not "
                                                               "available yet")))
    return params


# ---------------------------------------------------------------------------------------------
# Counts from a DRAMsim3 result file, spread over banks arbitrarily (totals are what matter).
# ---------------------------------------------------------------------------------------------

def _spread(total: int, n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.multinomial(total, np.full(n, 1.0 / n)).astype(np.int64) if n else np.zeros(0)


def load_raw(name: str, workload: str) -> dict[str, Any]:
    path = DS3_REF / "results" / "raw" / f"{name}__{workload}.dramsim3.json"
    if not path.is_file():
        pytest.skip(f"{MISSING_DATA}: {path}")
    return json.loads(path.read_text())


def counts_from_dramsim3(raw: dict[str, Any], ranks: int, banks: int,
                         seed: int = 7) -> EnergyCounts:
    rng = np.random.default_rng(seed)
    channels = len(raw)
    cycles = {raw[str(c)]["num_cycles"] for c in range(channels)}
    assert len(cycles) == 1, "channels report different num_cycles"
    out = EnergyCounts.zeros(channels, ranks, banks, num_cycles=cycles.pop())
    for c in range(channels):
        ch = raw[str(c)]
        for field, key in (("act", "num_act_cmds"), ("pre", "num_pre_cmds"),
                           ("rd", "num_read_cmds"), ("wr", "num_write_cmds"),
                           ("refb", "num_refb_cmds")):
            getattr(out, field)[c] = _spread(int(ch[key]), ranks * banks, rng).reshape(ranks, banks)
        # conflicts: DRAMsim3's on-demand PREs (closed a row for another row) as the estimate
        ondemand = _spread(int(ch["num_ondemand_pres"]), ranks * banks, rng)
        out.act_conflict[c] = np.minimum(out.act[c], ondemand.reshape(ranks, banks))
        out.ref[c] = _spread(int(ch["num_ref_cmds"]), ranks, rng)
        for r in range(ranks):
            out.rank_active_cycles[c, r] = ch["rank_active_cycles"][str(r)]
            out.all_bank_idle_cycles[c, r] = ch["all_bank_idle_cycles"][str(r)]
            out.sref_cycles[c, r] = ch["sref_cycles"][str(r)]
            out.bank_open_cycles[c, r] = rng.integers(0, out.rank_active_cycles[c, r] + 1, banks)
    return out


def _close(a: float, b: float, rel: float = REL) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-9)


def _rank_sum(value: Any) -> float:
    return float(sum(value.values())) if isinstance(value, dict) else float(value)


# ---------------------------------------------------------------------------------------------
# DRAMsim3 agreement
# ---------------------------------------------------------------------------------------------

@needs_shared
@pytest.mark.parametrize("make_cfg", _config_factories())
@pytest.mark.parametrize("name", CONFIGS)
def test_increments_match_dramsim3_printout(name: str, make_cfg: Callable[[str], Any]) -> None:
    cfg = make_cfg(name)
    line = next(l for l in _derived_block(name).splitlines() if l.startswith("energy_inc:"))
    printed = {k.replace("/cyc", ""): float(v) for k, v in
               (tok.split("=") for tok in line.split()[1:])}
    inc = energy_increments(cfg)
    for key, value in printed.items():  # printed with 6 significant digits
        assert math.isclose(inc[f"{key}_energy_inc"], value, rel_tol=1e-5), key


@needs_shared
@pytest.mark.parametrize("make_cfg", _config_factories())
@pytest.mark.parametrize("workload", WORKLOADS)
@pytest.mark.parametrize("name", CONFIGS)
def test_reproduces_dramsim3_energy(name: str, workload: str,
                                    make_cfg: Callable[[str], Any]) -> None:
    cfg = make_cfg(name)
    raw = load_raw(name, workload)
    assert len(raw) == cfg.channels
    counts = counts_from_dramsim3(raw, cfg.ranks, cfg.banks)
    report = compute_energy(cfg, counts, io=False)

    for ds3_name in (*DRAMSIM3_ENERGY_NAMES, "total_energy"):
        expected = sum(_rank_sum(raw[str(c)][ds3_name]) for c in range(cfg.channels))
        assert _close(report.dramsim3_units[ds3_name], expected), ds3_name
        ours = report.components_pJ["core_total" if ds3_name == "total_energy"
                                    else DRAMSIM3_ENERGY_NAMES[ds3_name]]
        assert _close(ours, expected * cfg.tCK), ds3_name
    # per channel, and DRAMsim3's average_power (mW per channel, summed)
    for c in range(cfg.channels):
        assert _close(report.per_channel_pJ[c]["core_total"],
                      raw[str(c)]["total_energy"] * cfg.tCK)
    expected_power = sum(raw[str(c)]["average_power"] for c in range(cfg.channels))
    assert _close(report.average_power_mW, expected_power)

    # the tCK-corrected pJ recorded next to the raw file
    summary_path = DS3_REF / "results" / f"{name}__{workload}.json"
    if summary_path.is_file():
        corrected = json.loads(summary_path.read_text())["energy_pJ_tck_corrected"]
        for ds3_name, value in corrected.items():
            key = "core_total" if ds3_name == "total_energy" else DRAMSIM3_ENERGY_NAMES[ds3_name]
            assert _close(report.components_pJ[key], value), ds3_name


@needs_shared
@pytest.mark.parametrize("name", CONFIGS)
def test_splits_sum_to_totals(name: str) -> None:
    cfg = standin_config(name)
    counts = counts_from_dramsim3(load_raw(name, "mixed"), cfg.ranks, cfg.banks)
    report = compute_energy(cfg, counts)
    comp = report.components_pJ

    assert set(COMPONENTS) <= set(comp)
    assert _close(sum(comp[k] for k in COMPONENTS), comp["total"])
    assert _close(comp["core_total"] + comp["io_total"], comp["total"])
    assert set(report.by_cause_pJ) == {"row_conflict", "row_miss", "data", "refresh",
                                       "background", "io"}
    assert _close(sum(report.by_cause_pJ.values()), comp["total"])
    assert _close(report.by_cause_pJ["row_conflict"] + report.by_cause_pJ["row_miss"], comp["act"])
    assert report.by_cause_pJ["row_conflict"] > 0

    assert report.per_bank_pJ.shape == (cfg.channels, cfg.ranks, cfg.banks)
    assert _close(float(report.per_bank_pJ.sum()), comp["core_total"])
    assert np.all(report.per_bank_pJ > 0)
    for key in (*COMPONENTS, "core_total", "io_total", "total"):
        assert _close(sum(ch[key] for ch in report.per_channel_pJ), comp[key]), key
    assert _close(report.average_power_mW, comp["total"] / (counts.num_cycles * cfg.tCK))


@needs_shared
def test_per_bank_split_follows_open_cycles() -> None:
    cfg = standin_config("DDR4_8Gb_x8_3200")
    counts = EnergyCounts.zeros(cfg.channels, cfg.ranks, cfg.banks, num_cycles=1000)
    counts.rank_active_cycles[0, 0] = 600
    counts.all_bank_idle_cycles[0, 0] = 400
    counts.all_bank_idle_cycles[0, 1] = 1000
    counts.bank_open_cycles[0, 0, 3] = 450
    counts.bank_open_cycles[0, 0, 5] = 150
    counts.act[0, 0, 3] = 2
    inc = energy_increments(cfg)
    per_bank = compute_energy(cfg, counts, io=False).per_bank_pJ / cfg.tCK
    pre_share = 400 * inc["pre_stb_energy_inc"] / cfg.banks
    assert _close(per_bank[0, 0, 3], 2 * inc["act_energy_inc"] + 0.75 * 600
                  * inc["act_stb_energy_inc"] + pre_share)
    assert _close(per_bank[0, 0, 5], 0.25 * 600 * inc["act_stb_energy_inc"] + pre_share)
    assert _close(per_bank[0, 0, 0], pre_share)
    assert np.allclose(per_bank[0, 1], 1000 * inc["pre_stb_energy_inc"] / cfg.banks)


# ---------------------------------------------------------------------------------------------
# tCK correction and IO scaling
# ---------------------------------------------------------------------------------------------

@needs_shared
@pytest.mark.parametrize("name", CONFIGS)
def test_tck_correction(name: str) -> None:
    cfg = standin_config(name)
    counts = counts_from_dramsim3(load_raw(name, "random"), cfg.ranks, cfg.banks)
    report = compute_energy(cfg, counts, io=False)
    for ds3_name, key in DRAMSIM3_ENERGY_NAMES.items():
        assert _close(report.components_pJ[key], report.dramsim3_units[ds3_name] * cfg.tCK)
    # raw units do not depend on tCK; pJ scale with it
    slow = compute_energy(replace(cfg, tCK=1.0), counts, io=False)
    assert slow.dramsim3_units == report.dramsim3_units
    assert _close(slow.components_pJ["core_total"], report.dramsim3_units["total_energy"])
    assert _close(slow.components_pJ["core_total"] * cfg.tCK, report.components_pJ["core_total"])
    # average power in mW is tCK-invariant for the core (energy and time both scale)
    assert _close(slow.average_power_mW, report.average_power_mW)


@needs_shared
@pytest.mark.parametrize("make_cfg", _config_factories())
@pytest.mark.parametrize("name", CONFIGS)
def test_io_energy_scales_with_bits(name: str, make_cfg: Callable[[str], Any]) -> None:
    cfg = make_cfg(name)
    counts = counts_from_dramsim3(load_raw(name, "mixed"), cfg.ranks, cfg.banks)
    spec = io_energy_per_bit(cfg.protocol)
    report = compute_energy(cfg, counts)
    bits_rd = int(counts.rd.sum()) * cfg.request_size_bytes * 8
    bits_wr = int(counts.wr.sum()) * cfg.request_size_bytes * 8
    assert _close(report.components_pJ["io_read"], bits_rd * spec.read_pJ_per_bit)
    assert _close(report.components_pJ["io_write"], bits_wr * spec.write_pJ_per_bit)
    assert report.io_pj_per_bit["read_pJ_per_bit"] == spec.read_pJ_per_bit
    assert report.io_pj_per_bit["source"]

    doubled = replace(counts, rd=counts.rd * 2, wr=counts.wr * 3)
    report2 = compute_energy(cfg, doubled)
    assert _close(report2.components_pJ["io_read"], 2 * report.components_pJ["io_read"])
    assert _close(report2.components_pJ["io_write"], 3 * report.components_pJ["io_write"])

    custom = IOEnergySpec(protocol="X", standard="X", read_pJ_per_bit=1.0,
                          write_pJ_per_bit=2.0, source="test", basis="fixed")
    report3 = compute_energy(cfg, counts, io_spec=custom)
    assert _close(report3.components_pJ["io_total"], bits_rd + 2.0 * bits_wr)

    no_io = compute_energy(cfg, counts, io=False)
    assert no_io.components_pJ["io_total"] == 0.0
    assert _close(no_io.components_pJ["core_total"], report.components_pJ["core_total"])


# ---------------------------------------------------------------------------------------------
# IO energy table
# ---------------------------------------------------------------------------------------------

def test_io_table_ships_with_the_engine() -> None:
    assert default_io_energy_path().is_file()


@pytest.mark.skipif(not (DRAMPOWER_REF / "results" / "io_energy_per_bit.json").is_file(),
                    reason=f"{MISSING_DATA}: DRAMPower results")
@pytest.mark.parametrize("protocol, group, memspec", [
    ("DDR4", "DDR4-3200 x8 (rank 64 bit)", "DDR4_8Gb_x8_3200.physIO.dqonly.json"),
    ("LPDDR4", "LPDDR4-2400 x16 (rank 64 bit)", "LPDDR4_8Gb_x16_2400.physIO.dqonly.json"),
])
def test_io_formula_reproduces_drampower(protocol: str, group: str, memspec: str) -> None:
    ref = json.loads((DRAMPOWER_REF / "results" / "io_energy_per_bit.json").read_text())
    run = ref[group][memspec]
    spec = io_energy_per_bit(protocol)
    assert spec.standard == protocol and spec.basis == "drampower_run"
    assert math.isclose(spec.read_pJ_per_bit, run["RD"]["pJ_per_bit_total"], rel_tol=1e-12)
    assert math.isclose(spec.write_pJ_per_bit, run["WR"]["pJ_per_bit_total"], rel_tol=1e-12)
    assert math.isclose(spec.static_pJ_per_bit, run["RD"]["pJ_per_bit_static"], rel_tol=1e-12)
    assert math.isclose(spec.dynamic_pJ_per_bit, run["RD"]["pJ_per_bit_dynamic"], rel_tol=1e-12)
    assert "DRAMPower" in spec.source


def test_io_assumed_standards() -> None:
    gddr6 = io_energy_per_bit("GDDR6")
    assert gddr6.basis == "assumption" and "ASSUMPTION" in gddr6.source
    assert math.isclose(gddr6.static_pJ_per_bit, 0.5 * 1.35 ** 2 / 100.0 / 14.0 * 1000.0)
    assert math.isclose(gddr6.dynamic_pJ_per_bit, 0.25 * 2.0 * 1.35 ** 2)
    hbm2 = io_energy_per_bit("hbm2")
    assert hbm2.static_pJ_per_bit == 0.0  # unterminated
    assert math.isclose(hbm2.read_pJ_per_bit, 0.25 * 0.4 * 1.2 ** 2)
    ddr4 = io_energy_per_bit("DDR4")
    assert hbm2.read_pJ_per_bit < gddr6.read_pJ_per_bit < ddr4.read_pJ_per_bit


def test_vddq_from_configuration_rescales_io() -> None:
    base = io_energy_per_bit("DDR4")
    scaled = io_energy_per_bit("DDR4", vddq_V=1.2 * math.sqrt(2.0))
    assert math.isclose(scaled.read_pJ_per_bit, 2.0 * base.read_pJ_per_bit)
    assert "VDDQ" in scaled.note and scaled.parameters["vddq_V"] == pytest.approx(1.697, rel=1e-3)
    cfg = _tiny_config(VDDQ=1.2 * math.sqrt(2.0))
    counts = EnergyCounts.zeros(2, 2, 4, num_cycles=10)
    counts.all_bank_idle_cycles[:] = 10
    counts.rd[0, 0, 0] = 1
    report = compute_energy(cfg, counts)
    assert _close(report.components_pJ["io_read"], 64 * 8 * 2.0 * base.read_pJ_per_bit)
    assert _close(compute_energy(_tiny_config(), counts).components_pJ["io_read"],
                  64 * 8 * base.read_pJ_per_bit)


def test_io_alias_and_fallbacks(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="engine.power"):
        hbm = io_energy_per_bit("HBM")
    assert hbm.standard == "HBM2" and hbm.note
    for proto, family in [("DDR3", "DDR4"), ("GDDR5", "GDDR6"), ("GDDR5X", "GDDR6"),
                          ("LPDDR", "LPDDR4"), ("LPDDR3", "LPDDR4"), ("HMC", "GDDR6")]:
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="engine.power"):
            spec = io_energy_per_bit(proto)
        assert spec.standard == family and spec.protocol == proto
        assert family in spec.note
        assert any(proto in rec.getMessage() for rec in caplog.records)
    with pytest.raises(ConfigError):
        io_energy_per_bit("DDR9")


def test_io_table_is_editable(tmp_path: Path) -> None:
    table = tmp_path / "io.toml"
    table.write_text(
        '[standards.DDR4]\nsource = "mine"\nvddq_V = 1.0\nr_eq_ohm = 50.0\nc_pF = 1.0\n'
        'data_rate_Gbps = 2.0\ntoggle_rate = 0.5\nduty = 0.5\nwrite_pJ_per_bit = 9.0\n'
        '[fallback]\nDDR3 = "DDR4"\n')
    spec = io_energy_per_bit("DDR4", path=table)
    assert math.isclose(spec.read_pJ_per_bit, 0.5 * 1.0 / 50.0 * 0.5 * 1000.0 + 0.25)
    assert spec.write_pJ_per_bit == 9.0 and spec.basis == "fixed"
    assert io_energy_per_bit("DDR3", path=table).standard == "DDR4"
    with pytest.raises(ConfigError):
        io_energy_per_bit("GDDR6", path=table)

    bad = tmp_path / "bad.toml"
    bad.write_text('[standards.DDR4]\nvddq_V = "high"\n')
    with pytest.raises(ConfigError, match="vddq_V"):
        io_energy_per_bit("DDR4", path=bad)
    with pytest.raises(ConfigError):
        io_energy_per_bit("DDR4", path=tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text("[standards.DDR4\n")
    with pytest.raises(ConfigError):
        io_energy_per_bit("DDR4", path=broken)


# ---------------------------------------------------------------------------------------------
# Input checking
# ---------------------------------------------------------------------------------------------

def _tiny_config(**overrides: Any) -> StandInConfig:
    base = dict(protocol="DDR4", tCK=0.5, VDD=1.2, IDD0=60, IDD2P=25, IDD2N=34, IDD3N=43,
                IDD4W=123, IDD4R=135, IDD5AB=250, IDD5PB=5, IDD6x=31, tRAS=30, tRP=15,
                tRFC=300, tRFCb=20, burst_cycle=4, devices_per_rank=8, ranks=2, banks=4,
                channels=2, bus_width=64, request_size_bytes=64)
    base.update(overrides)
    return StandInConfig(**base)


def test_hand_computed_example() -> None:
    cfg = _tiny_config()
    counts = EnergyCounts.zeros(2, 2, 4, num_cycles=100)
    counts.act[1, 0, 2] = 3
    counts.rd[1, 0, 2] = 5
    counts.rank_active_cycles[:] = 40
    counts.all_bank_idle_cycles[:] = 60
    report = compute_energy(cfg, counts, io=False)
    act_inc = 1.2 * (60 * 45 - (43 * 30 + 34 * 15)) * 8
    assert _close(report.dramsim3_units["act_energy"], 3 * act_inc)
    assert _close(report.dramsim3_units["read_energy"], 5 * 1.2 * (135 - 43) * 4 * 8)
    assert _close(report.dramsim3_units["act_stb_energy"], 4 * 40 * 1.2 * 43 * 8)
    assert _close(report.components_pJ["act"], 3 * act_inc * 0.5)
    assert report.per_channel_pJ[0]["act"] == 0.0
    assert energy_increments(cfg)["pre_pd_energy_inc"] == pytest.approx(1.2 * 25 * 8)


def test_negative_refb_increment_is_reproduced_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    cfg = _tiny_config()
    counts = EnergyCounts.zeros(2, 2, 4, num_cycles=10)
    counts.all_bank_idle_cycles[:] = 10
    counts.refb[0, 0, 0] = 1
    with caplog.at_level(logging.WARNING, logger="engine.power"):
        report = compute_energy(cfg, counts, io=False)
    assert report.dramsim3_units["refb_energy"] == pytest.approx(1.2 * (5 - 43) * 20 * 8)
    assert any("IDD5PB" in rec.getMessage() for rec in caplog.records)


def test_missing_power_keys_use_dramsim3_defaults() -> None:
    cfg = _tiny_config()
    cfg.IDD5PB = None  # type: ignore[assignment]
    assert energy_increments(cfg)["refb_energy_inc"] == pytest.approx(1.2 * (5 - 43) * 20 * 8)


def test_bad_counts_are_rejected() -> None:
    cfg = _tiny_config()
    good = EnergyCounts.zeros(2, 2, 4, num_cycles=10)
    good.all_bank_idle_cycles[:] = 10
    compute_energy(cfg, good, io=False)
    with pytest.raises(ValueError, match="shape"):
        compute_energy(cfg, EnergyCounts.zeros(1, 2, 4, num_cycles=10), io=False)
    conflicting = replace(good, act_conflict=good.act_conflict + 1)
    with pytest.raises(ValueError, match="act_conflict"):
        compute_energy(cfg, conflicting, io=False)
    negative = replace(good, rd=good.rd - 1)
    with pytest.raises(ValueError, match="negative"):
        compute_energy(cfg, negative, io=False)


def test_zero_cycles_gives_zero_power() -> None:
    cfg = _tiny_config()
    report = compute_energy(cfg, EnergyCounts.zeros(2, 2, 4, num_cycles=0))
    assert report.average_power_mW == 0.0
    assert report.components_pJ["total"] == 0.0


def test_an_alias_io_entry_is_said_once_a_process(caplog, monkeypatch):
    """HBM uses HBM2's IO entry: said at INFO the first time, then at DEBUG (a co-simulation
    computed it for each of 179 layers, and said it each time)."""
    import logging

    from engine import power
    monkeypatch.setattr(power, "_noted_aliases", set())
    with caplog.at_level(logging.DEBUG, logger="engine.power"):
        specs = [power.io_energy_per_bit("HBM") for _ in range(3)]
    said = [r.levelno for r in caplog.records if "uses the HBM2 IO entry" in r.getMessage()]
    assert said == [logging.INFO, logging.DEBUG, logging.DEBUG]
    assert all(s.note == specs[0].note != "" for s in specs)       # the spec still says it
