"""Tests of engine.config: DRAMsim3 .ini import/export, TOML presets, derived values, errors."""
from __future__ import annotations

import dataclasses
import json
import logging
import re
from pathlib import Path

import pytest

from engine.config import (PARAMETERS, PRESET_DIR, REFRESH_POLICIES, MemoryConfig, dump_ini,
                           list_presets, load_config, load_ini, load_preset, save_preset)
from engine.errors import ConfigError

from refdata import DATA_DIR, MISSING_DATA  # tests/data/ (provenance: tests/data/README.md)
SHARED = DATA_DIR
DS3_CONFIGS = SHARED / "dramsim3-configs"
DERIVED = SHARED / "reference" / "dramsim3" / "derived_params.txt"
INI_FILES = sorted(DS3_CONFIGS.glob("*.ini")) if DS3_CONFIGS.is_dir() else []
NO_CONFIGS = f"{MISSING_DATA}: DRAMsim3 configs not found at {DS3_CONFIGS}"
# preset -> DRAMsim3 file it copies
PRESET_SOURCES = {"DDR4-3200": "DDR4_8Gb_x8_3200.ini", "LPDDR4-2400": "LPDDR4_8Gb_x16_2400.ini",
                  "GDDR6": "GDDR6_8Gb_x16.ini", "HBM2": "HBM2_8Gb_x128.ini"}
# files strict mode rejects: "tCK = 0.666 (1/1.5)" and keys without a value
STRICT_REJECTS = {"GDDR5X_8Gb_x32", "HBM_4Gb_x128"}


def ini_params(paths: list[Path]) -> list:
    if paths:
        return [pytest.param(p, id=p.stem) for p in paths]
    return [pytest.param(None, marks=pytest.mark.skip(reason=NO_CONFIGS))]


def dramsim3_fields(cfg: MemoryConfig) -> dict:
    return {s.name: getattr(cfg, s.name) for s in PARAMETERS if s.dramsim3}


# ---- DRAMsim3 files ---------------------------------------------------------------------
def test_all_86_dramsim3_files_present() -> None:
    if not INI_FILES:
        pytest.skip(NO_CONFIGS)
    assert len(INI_FILES) == 86


@pytest.mark.parametrize("path", ini_params(INI_FILES))
def test_every_dramsim3_ini_imports(path: Path) -> None:
    cfg = load_ini(path)
    assert cfg.name == path.stem
    assert cfg.source_path == path
    assert cfg.capacity_bytes > 0 and cfg.ranks >= 1
    if path.stem in STRICT_REJECTS:
        with pytest.raises(ConfigError):
            load_ini(path, strict=True)
    else:
        assert load_ini(path, strict=True) == cfg


def _parse_derived(text: str) -> dict[str, dict[str, str]]:
    """derived_params.txt -> {config: {key: value}}, pos/mask keys prefixed."""
    blocks: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("=== "):
            current = blocks.setdefault(line[4:].strip(), {})
            continue
        if current is None or line.startswith(("T ", "WARNING")) or "=" not in line:
            continue
        prefix = ""
        for word in re.split(r"[\s:;]+", line):
            if "=" in word:
                key, value = word.split("=", 1)
                current[prefix + key] = value
            elif word:           # a label: "pos", "masks", "energy_inc", "system"
                prefix = {"pos": "pos_", "masks": "mask_"}.get(word, "")
    return blocks


DERIVED_BLOCKS = _parse_derived(DERIVED.read_text()) if DERIVED.is_file() else {}


@pytest.mark.parametrize("name", sorted(DERIVED_BLOCKS) or [pytest.param(
    None, marks=pytest.mark.skip(reason=f"{MISSING_DATA}: {DERIVED} not found"))])
def test_derived_values_match_dramsim3(name: str) -> None:
    if not DS3_CONFIGS.is_dir():
        pytest.skip(NO_CONFIGS)
    cfg = load_ini(DS3_CONFIGS / f"{name}.ini")
    expected = DERIVED_BLOCKS[name]
    renamed = {"bankgroups": "bankgroups_eff", "banks_per_group": "banks_per_group_eff",
               "columns": "columns_eff", "channel_size_MB": "channel_size_eff", "BL": "BL_eff",
               "self_refresh": "enable_self_refresh", "hbm_dual_cmd": "dual_cmd_eff"}
    energy = cfg.energy_increments
    assert len(expected) >= 70        # the parser found the whole block
    for key, text in expected.items():
        if key.startswith("pos_"):
            actual = cfg.field_positions[key[4:]]
            assert actual == int(text), key
        elif key.startswith("mask_"):
            assert cfg.field_masks[key[5:]] == int(text, 16), key
        elif key.removesuffix("/cyc") in energy:
            actual = energy[key.removesuffix("/cyc")]
            assert float(f"{actual:.6g}") == float(text), (key, actual, text)
        elif key == "refresh_policy":
            assert REFRESH_POLICIES.index(cfg.refresh_policy) == int(text)
        elif key == "tCK":
            assert cfg.tCK == float(text)
        else:
            actual = getattr(cfg, renamed.get(key, key))
            if isinstance(actual, bool):
                actual = int(actual)
            assert str(actual) == text, (key, actual, text)


# ---- presets ---------------------------------------------------------------------------
def test_presets_are_listed() -> None:
    assert set(PRESET_SOURCES) | {"LPDDR4-3200"} <= set(list_presets())


@pytest.mark.parametrize("preset", sorted(PRESET_SOURCES))
def test_preset_equals_its_dramsim3_source(preset: str) -> None:
    if not DS3_CONFIGS.is_dir():
        pytest.skip(NO_CONFIGS)
    cfg = load_preset(preset)
    source = load_ini(DS3_CONFIGS / PRESET_SOURCES[preset])
    assert cfg.name == preset
    assert dramsim3_fields(cfg) == dramsim3_fields(source)
    assert cfg.replace(name=source.name) == source     # extensions at DRAMsim3 behaviour too
    text = (PRESET_DIR / f"{preset}.toml").read_text()
    assert text.startswith("#") and PRESET_SOURCES[preset] in text.split("\n\n")[0]


def test_lpddr4_3200_is_derived_from_2400() -> None:
    fast, slow = load_preset("LPDDR4-3200"), load_preset("LPDDR4-2400")
    assert (fast.tCK, fast.RL, fast.WL) == (0.625, 28, 14)
    assert (fast.tRCD, fast.tRP, fast.tRAS, fast.tRC) == (29, 29, 68, 97)
    assert (fast.tRRD_S, fast.tFAW, fast.tWTR_L, fast.tRTP, fast.tWR) == (16, 64, 16, 12, 29)
    assert (fast.tRFC, fast.tREFI) == (448, 6246)
    for spec in PARAMETERS:
        if spec.section != "timing" and spec.name != "epoch_period":
            assert getattr(fast, spec.name) == getattr(slow, spec.name), spec.name
    assert "JESD209-4" in (PRESET_DIR / "LPDDR4-3200.toml").read_text()


def test_load_config_dispatch(tmp_path: Path) -> None:
    by_name = load_config("DDR4-3200")
    assert load_config(PRESET_DIR / "DDR4-3200.toml") == by_name
    dump_ini(by_name, tmp_path / "DDR4-3200.ini")
    assert load_config(str(tmp_path / "DDR4-3200.ini")) == by_name
    with pytest.raises(ConfigError, match="no preset named 'DDR9'"):
        load_config("DDR9")


# ---- round trips -----------------------------------------------------------------------
def _round_trip_inputs() -> list[MemoryConfig]:
    configs = [load_preset(name) for name in list_presets()]
    configs += [load_ini(p) for p in INI_FILES]
    configs.append(load_preset("DDR4-3200").replace(
        name="tweaked", scheduler="parbs", page_policy="early_precharge",
        early_precharge_conflicts=3, row_hit_cap=2, write_high_watermark=24,
        write_low_watermark=12, write_priority_pct=12.5, parbs_marking_cap=7,
        xor_bank_interleave=True, VDDQ=1.1, tCK=0.625, queue_structure="PER_RANK",
        refresh_policy="BANK_LEVEL_STAGGERED", unified_queue=True))
    return configs


def test_ini_round_trip(tmp_path: Path) -> None:
    for cfg in _round_trip_inputs():
        path = tmp_path / f"{cfg.name}.ini"
        dump_ini(cfg, path)
        assert load_ini(path, strict=True) == cfg, cfg.name
    assert not list(tmp_path.glob(".*.tmp"))          # atomic writer cleaned up


def test_toml_round_trip(tmp_path: Path) -> None:
    for cfg in _round_trip_inputs():
        path = tmp_path / f"{cfg.name}.toml"
        save_preset(cfg, path, header="test preset", sources={"tCK": "src: test"})
        back = load_preset(path)
        assert back == cfg, cfg.name
        assert back.source_lines["tCK"] > 0
    assert not list(tmp_path.glob(".*.tmp"))


def test_dict_round_trip_is_json() -> None:
    for cfg in _round_trip_inputs()[:8]:
        data = json.loads(json.dumps(cfg.to_dict()))
        assert MemoryConfig.from_dict(data) == cfg


# ---- model rules -----------------------------------------------------------------------
def test_parameters_declare_every_field_once() -> None:
    names = [s.name for s in PARAMETERS]
    assert len(names) == len(set(names))
    assert set(names) | {"name"} == {f.name for f in dataclasses.fields(MemoryConfig)}
    assert all(s.section in ("organisation", "timing", "power", "controller") for s in PARAMETERS)
    default = MemoryConfig()
    assert all(getattr(default, s.name) == s.default for s in PARAMETERS)


def test_dramsim3_rules() -> None:
    ddr4 = load_preset("DDR4-3200")
    assert ddr4.dual_cmd_eff is False and load_preset("HBM2").dual_cmd_eff is True
    assert ddr4.tRC == ddr4.tRAS + ddr4.tRP
    assert ddr4.replace(tRAS=60).tRC == 60 + ddr4.tRP
    with pytest.raises(ConfigError, match="BL = 0: expected a power of two"):
        ddr4.replace(BL=0)
    assert ddr4.capacity_bytes == 16 << 30
    assert ddr4.page_size_bytes == 1024
    closed = MemoryConfig.from_dict({"row_buf_policy": "CLOSE_PAGE"})
    assert closed.page_policy == "close"


# ---- bad input -------------------------------------------------------------------------
def _bad_ini(tmp_path: Path, key: str, new_line: str) -> tuple[Path, int]:
    """DDR4-3200 as an ini with the line of *key* replaced; returns (path, line number)."""
    path = tmp_path / "bad.ini"
    dump_ini(load_preset("DDR4-3200"), path)
    lines = path.read_text().splitlines()
    index = next(i for i, ln in enumerate(lines) if ln.split("=")[0].strip() == key)
    lines[index] = new_line
    path.write_text("\n".join(lines) + "\n")
    return path, index + 1


@pytest.mark.parametrize("key, new_line, expected", [
    ("rows", "rows = 1000", "rows = 1000: expected a power of two"),
    ("tRCD", "tRCD = -3", "tRCD = -3: expected a non-negative value"),
    ("address_mapping", "address_mapping = rochrababgcx", "address_mapping = rochrababgcx: "
     "expected 12 characters made of ch ra bg ba ro co"),
    ("address_mapping", "address_mapping = rochrababg", "expected 12 characters"),
    ("CL", "CL = abc", "CL = abc: expected an integer"),
    ("CL", "CL = 22.5", "CL = 22.5: expected an integer"),
    ("protocol", "protocol = DDR9", "protocol = 'DDR9': expected one of DDR3, DDR4"),
    ("bus_width", "bus_width = 4", "bus_width = 4: expected at least 8"),
    ("unified_queue", "unified_queue = maybe", "unified_queue = maybe: expected true or false"),
])
def test_bad_ini_values_name_file_line_and_key(tmp_path: Path, key: str, new_line: str,
                                               expected: str) -> None:
    path, line = _bad_ini(tmp_path, key, new_line)
    with pytest.raises(ConfigError) as info:
        load_ini(path)
    message = str(info.value)
    assert f"{path}:{line}" in message and f"key '{key}'" in message and expected in message
    assert (info.value.path, info.value.line, info.value.key) == (path, line, key)


def test_unknown_key_strict_and_lenient(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path, line = _bad_ini(tmp_path, "tRCD", "tRCDD = 22")
    with pytest.raises(ConfigError) as info:
        load_ini(path, strict=True)
    message = str(info.value)
    assert f"{path}:{line}" in message and "key 'tRCDD'" in message
    assert "unknown key in [timing] (did you mean" in message and "'tRCD'" in message
    with caplog.at_level(logging.WARNING, logger="engine.config"):
        cfg = load_ini(path)
    assert cfg.tRCD == MemoryConfig().tRCD            # DRAMsim3's default, as DRAMsim3 would
    assert any("tRCDD" in r.getMessage() for r in caplog.records)


def test_datasheet_and_thermal_keys_accepted_in_strict_mode(tmp_path: Path) -> None:
    path, _ = _bad_ini(tmp_path, "tRCD", "tRCD = 22\ntRFC2 = 416\n[thermal]\namb_temp = 40")
    assert load_ini(path, strict=True).tRCD == 22


def test_tRC_in_file_is_refused_in_strict_mode(tmp_path: Path) -> None:
    path, line = _bad_ini(tmp_path, "tRAS", "tRAS = 52\ntRC = 99")
    with pytest.raises(ConfigError, match="derived as tRAS \\+ tRP"):
        load_ini(path, strict=True)
    assert load_ini(path).tRC == 52 + 22


def test_duplicate_key_and_syntax_error(tmp_path: Path) -> None:
    path, line = _bad_ini(tmp_path, "CL", "CL = 22\nCL = 23")
    with pytest.raises(ConfigError, match=f"duplicate key \\(first set on line {line}\\)"):
        load_ini(path)
    path, line = _bad_ini(tmp_path, "CL", "CL 22")
    with pytest.raises(ConfigError, match=f":{line}: 'CL 22': expected 'key = value'"):
        load_ini(path)


def test_bad_toml_names_file_line_and_key(tmp_path: Path) -> None:
    good = (PRESET_DIR / "DDR4-3200.toml").read_text().splitlines()
    cases = [("rows", "rows = 1000", "rows = 1000: expected a power of two"),
             ("tRCD", "tRCD = -1", "tRCD = -1: expected a non-negative value"),
             ("CL", 'CL = "abc"', "CL = 'abc': expected an int"),
             ("tCK", "tCKK = 0.63", "unknown key (did you mean 'tCK'")]
    for key, new_line, expected in cases:
        lines = list(good)
        index = next(i for i, ln in enumerate(lines) if ln.startswith(f"{key} ="))
        lines[index] = new_line
        path = tmp_path / f"bad_{key}.toml"
        path.write_text("\n".join(lines))
        with pytest.raises(ConfigError) as info:
            load_preset(path)
        message = str(info.value)
        assert f"{path}:{index + 1}" in message and expected in message, message
    path = tmp_path / "broken.toml"
    path.write_text("name = 'x'\n[timing\n")
    with pytest.raises(ConfigError, match=":2: not valid TOML"):
        load_preset(path)


def test_replace_and_from_dict_validate() -> None:
    cfg = load_preset("DDR4-3200")
    with pytest.raises(ConfigError, match="rows = 3: expected a power of two"):
        cfg.replace(rows=3)
    with pytest.raises(ConfigError, match="did you mean .*'tRCD'"):
        cfg.replace(tRCDX=3)
    with pytest.raises(ConfigError, match="page_policy = close: conflicts"):
        cfg.replace(page_policy="close")
    with pytest.raises(ConfigError, match="write_high_watermark = 6: expected more than"):
        cfg.replace(write_high_watermark=6)
    with pytest.raises(ConfigError, match="expected a multiple of device_width"):
        cfg.replace(device_width=16, bus_width=8)
    with pytest.raises(ConfigError, match="unknown parameter"):
        MemoryConfig.from_dict({"nope": 1})
    with pytest.raises(ConfigError, match="tCK = nan: expected a finite number"):
        MemoryConfig.from_dict({"tCK": float("nan")})
    with pytest.raises(ConfigError, match="CL = 1.5: expected an int"):
        MemoryConfig.from_dict({"CL": 1.5})
    # after replace() and a GUI-style edit, a value read from the file still names its line
    edited = cfg.replace(CL=20)
    edited.tRCD = -1
    with pytest.raises(ConfigError, match=r"DDR4-3200\.toml:\d+, key 'tRCD'"):
        edited.validate()
    # a replaced value is the caller's: the file is named as what it was given on top of
    with pytest.raises(ConfigError, match=r"^key 'CL': CL = -1: .*\(given on top of .*"
                                          r"DDR4-3200\.toml\)$"):
        edited.replace(tRCD=22, CL=-1)


def test_channel_size_below_a_rank_warns_for_a_user_file_not_for_the_shipped_preset(
        tmp_path: Path, caplog) -> None:
    """GDDR6's DRAMsim3 file asks for 4,096 MB a channel, less than its one rank of 8,192 MB:
    DRAMsim3 (and the engine) build the rank. The shipped preset copies that file and says
    so in its header, so loading it logs at INFO; the same values in a user's own file (or
    DRAMsim3's .ini) are a WARNING naming the file."""
    import logging
    with caplog.at_level(logging.INFO, logger="engine.config"):
        cfg = load_preset("GDDR6")
    said = [r for r in caplog.records if "smaller than one rank" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.INFO] and cfg.ranks == 1
    own = tmp_path / "my_gddr6.toml"
    own.write_text((PRESET_DIR / "GDDR6.toml").read_text())
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="engine.config"):
        mine = load_config(own)
    said = [r for r in caplog.records if "smaller than one rank" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.WARNING] and str(own) in said[0].getMessage()
    assert mine.ranks == cfg.ranks and mine.capacity_bytes == cfg.capacity_bytes


@pytest.mark.parametrize("path", ini_params(INI_FILES))
def test_every_dramsim3_ini_imports_as_a_preset(path: Path) -> None:
    from engine.config import import_ini
    assert import_ini(path) == load_ini(path)


def test_a_broken_ini_is_refused_as_a_preset(tmp_path: Path) -> None:
    """presets --import-ini took a misspelt [timming] header (every timing then DRAMsim3's
    default: tCK 1 ns in a 'DDR4-3200' preset) and a file without protocol (a DDR3 preset),
    with warnings only; importing refuses both, naming what is wrong. Simulating such a file
    still runs as DRAMsim3 would."""
    from engine.config import import_ini
    if not DS3_CONFIGS.is_dir():
        pytest.skip(NO_CONFIGS)
    text = (DS3_CONFIGS / "DDR4_8Gb_x8_3200.ini").read_text()
    bad = tmp_path / "bad.ini"
    bad.write_text(text.replace("[timing]", "[timming]"))
    with pytest.raises(ConfigError, match=r"bad.ini:\d+.*unknown section \[timming\]"):
        import_ini(bad)
    assert load_ini(bad).tCK == 1.0                       # (DRAMsim3's default, as DRAMsim3)
    bad.write_text("\n".join(x for x in text.splitlines() if not x.startswith("protocol")))
    with pytest.raises(ConfigError, match=r"not set: \[dram_structure\] protocol"):
        import_ini(bad)


def test_did_you_mean_prefers_the_names_a_prefix_begins() -> None:
    """`--config DDR4` suggested 'GDDR6' (the closest spelling); the presets it begins come
    first now, shortest first, then the closest spellings."""
    from engine.names import close_names
    presets = ["DDR4-3200", "DDR4-3200-8ch", "GDDR6", "HBM2", "HBM3-6400"]
    assert close_names("DDR4", presets) == ["DDR4-3200"]
    assert close_names("ddr4", presets, n=3) == ["DDR4-3200", "DDR4-3200-8ch", "GDDR6"]
    assert close_names("HBM2", presets) == ["HBM2"]
    assert close_names("GDR6", presets) == ["GDDR6"]
    assert close_names("", presets) == []


def test_placeholder_currents_are_said_in_every_run(tmp_path: Path) -> None:
    """The DDR5 / LPDDR5 / HBM3 presets' IDD currents are another standard's (no datasheet of
    a generic part): only their files' comments said so, and a run's energy looked like a
    real part's. The notes now become a config warning, in the statistics' config_warnings
    (also of a config rebuilt from a project or a study point); a copy with the user's own
    currents (the note gone) says nothing."""
    from engine.config import PRESET_DIR
    for name in ("DDR5-4800B", "LPDDR5-6400", "HBM3-6400"):
        (w,) = [w for w in load_config(name).warnings if "placeholder" in w]
        assert w.startswith("IDD0, IDD2P, IDD2N, IDD3N, IDD4W, IDD4R, IDD5AB, IDD5PB, IDD6x "
                            "are placeholders")
    assert not any("placeholder" in w for w in load_config("DDR4-3200").warnings)
    # a config rebuilt from its dict (a project's, a study point's) still says so
    again = MemoryConfig.from_dict(load_config("DDR5-4800B").to_dict())
    assert any("are placeholders" in w for w in again.warnings)
    text = (PRESET_DIR / "DDR5-4800B.toml").read_text()
    # the user's own currents, notes removed: nothing said (a copy whose values are still
    # the placeholders, under the preset's name, is still said to be one)
    own = "\n".join(line.split("=")[0] + "= 77.0" if line.lstrip().startswith("IDD") else line
                    for line in text.splitlines())
    (tmp_path / "mine.toml").write_text(own)
    assert not any("placeholder" in w for w in load_config(tmp_path / "mine.toml").warnings)
    kept = "\n".join(line.split("#")[0] if line.lstrip().startswith("IDD") else line
                     for line in text.splitlines())
    (tmp_path / "kept.toml").write_text(kept)
    assert any("placeholder" in w for w in load_config(tmp_path / "kept.toml").warnings)
