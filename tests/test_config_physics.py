"""Config validation with physics (issue 15): impossible devices are errors naming file,
key, value and rule; JEDEC-range what-ifs are warnings recorded in the statistics."""
from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import MemoryConfig, load_config, load_ini, load_preset
from engine.config_physics import impossible
from engine.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
BASE_INI = "DDR4_8Gb_x8_2400.ini"


def _mutated(shared_dir: Path, tmp_path: Path, changes: dict[str, str]) -> Path:
    """The base DRAMsim3 ini with some keys' values replaced (or added under [timing])."""
    text = (shared_dir / "dramsim3-configs" / BASE_INI).read_text()
    for key, value in changes.items():
        pat = re.compile(rf"^(\s*{key}\s*=\s*)\S+", re.MULTILINE | re.IGNORECASE)
        if pat.search(text):
            text = pat.sub(lambda m: m.group(1) + value, text)
        else:
            text = text.replace("[timing]", f"[timing]\n{key} = {value}", 1)
    out = tmp_path / "m.ini"
    out.write_text(text)
    return out


def test_every_dramsim3_config_still_imports(shared_dir, caplog):
    files = sorted((shared_dir / "dramsim3-configs").glob("*.ini"))
    assert len(files) == 86
    warned = {}
    with caplog.at_level(logging.WARNING, logger="engine.config"):
        for f in files:
            cfg = load_ini(f)                    # no ConfigError for any shipped config
            assert impossible(cfg) == []
            warned[f.name] = cfg.warnings
    # the odd-but-legitimate ones are warnings, not errors
    assert any("tRFC = 1" in w for w in warned["ST-1.2x.ini"])
    assert any("tCCD_L = 0 is below tCCD_S" in w for w in warned["lpddr_2Gb_x16.ini"])
    assert all(any("DRAMsim3's defaults used" in w for w in ws) for ws in warned.values())
    assert "DRAMsim3's defaults used" in caplog.text
    # currents under active standby make a command's energy negative (DRAMsim3's too): only
    # the STT-MRAM configs, whose file says its currents are not to be used for energy
    negative = {f: [w.split(" energy")[0] for w in ws if "energy is negative" in w]
                for f, ws in warned.items()}
    assert {f: n for f, n in negative.items() if n} == {
        f"ST-{x}x.ini": ["READ", "all-bank REFRESH"] for x in ("1.2", "1.5", "2.0")}


def test_negative_command_energies_are_warned_and_ignored_currents_named(
        shared_dir, tmp_path, caplog):
    """IDD4R below IDD3N gave a negative read_energy with no word (the total hid it); a
    datasheet's IDD5, which DRAMsim3 does not read, left IDD5AB at 250 mA silently."""
    path = _mutated(shared_dir, tmp_path, {"IDD4R": "10", "IDD4W": "11"})
    cfg = load_ini(path)
    assert [w.split(" energy")[0] for w in cfg.warnings if "energy is negative" in w] == [
        "READ", "WRITE"]
    text = path.read_text().replace("IDD5AB", "IDD5")
    path.write_text(text)
    with caplog.at_level(logging.INFO, logger="engine.config"):
        load_ini(path)
    assert "IDD5 is not read by DRAMsim3 and IDD5AB is missing: using IDD5AB = 250" in \
        caplog.text


@pytest.mark.parametrize("changes,key,rule", [
    ({"tRAS": "5"}, "tRAS", "tRAS >= tRCD"),
    ({"tREFI": "1"}, "tRFC", "tRFC < tREFI"),
    ({"tRFC": "20000"}, "tRFC", "tRFC < tREFI"),
    ({"tCK": "1e-9"}, "tCK", "expected 0.05 to 100 ns"),
    ({"tCK": "0"}, "tCK", "positive clock"),
    ({"tRAS": "1000000000000000000"}, "tRAS", "beyond 2^53"),
    ({"tRAS": "9223372036854775808"}, "tRAS", "beyond 2^53"),
    ({"trans_queue_size": "0"}, "trans_queue_size", "at least 1"),
    ({"cmd_queue_size": "100000000"}, "cmd_queue_size", "GiB of memory"),
    ({"channels": "1099511627776"}, "channels", "address bits"),
    ({"channels": "65536", "cmd_queue_size": "4096"}, "channels", "GiB of memory"),
    ({"rows": "1099511627776", "columns": "16777216"}, "rows", "address bits"),
    ({"bankgroups": "3"}, "bankgroups", "power of two"),
    ({"device_width": "0"}, "device_width", "at least 1"),
])
def test_impossible_device_is_an_error_naming_file_key_value_rule(shared_dir, tmp_path,
                                                                   changes, key, rule):
    path = _mutated(shared_dir, tmp_path, changes)
    with pytest.raises(ConfigError) as err:
        load_ini(path)
    msg = str(err.value)
    assert str(path) in msg and f"key '{key}'" in msg and rule in msg, msg
    value = next(iter(changes.values()))
    assert value in msg or str(float(value)) in msg or key != next(iter(changes)), msg


def test_refresh_and_bank_refresh_rules_also_apply_in_code():
    ddr4 = load_config("DDR4-3200")
    with pytest.raises(ConfigError, match="tRFCb < tREFIb"):
        ddr4.replace(refresh_policy="BANK_LEVEL_STAGGERED", tRFCb=5000, tREFIb=100)
    with pytest.raises(ConfigError, match="beyond 2\\^53"):
        MemoryConfig.from_dict({**ddr4.to_dict(), "tFAW": 10 ** 18})


@pytest.mark.parametrize("text", ["", "\n\n", "; only a comment\n# another\n",
                                  "[timing]\n[system]\n"])
def test_empty_or_comment_only_file(tmp_path, text):
    path = tmp_path / "e.ini"
    path.write_text(text)
    with pytest.raises(ConfigError, match="empty or holds only comments"):
        load_ini(path)
    toml = tmp_path / "e.toml"
    toml.write_text(text.replace(";", "#"))
    with pytest.raises(ConfigError):
        load_preset(toml)


def test_what_if_values_are_warnings(shared_dir, tmp_path, caplog):
    path = _mutated(shared_dir, tmp_path, {"tFAW": "0", "tCCD_L": "2"})
    with caplog.at_level(logging.WARNING, logger="engine.config"):
        cfg = load_ini(path)
    ws = cfg.warnings
    assert any(w.startswith("tFAW = 0") for w in ws)
    assert any("tCCD_L = 2 is below tCCD_S" in w for w in ws)
    assert caplog.text.count("tFAW = 0") == 1           # printed once


def test_cli_exit_2_and_warnings_in_stats_json(shared_dir, tmp_path):
    bad = _mutated(shared_dir, tmp_path, {"tRAS": "5"})
    trace = tmp_path / "t.trace"
    trace.write_text("".join(f"0x{i * 64:x} READ {i * 10}\n" for i in range(200)))
    out = tmp_path / "s.json"
    run = [sys.executable, str(REPO / "main.py"), "simulate", "--trace", str(trace),
           "--out", str(out), "--config"]
    r = subprocess.run(run + [str(bad)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr
    assert "key 'tRAS'" in r.stderr and "tRAS = 5" in r.stderr and "Traceback" not in r.stderr
    odd = _mutated(shared_dir, tmp_path, {"tFAW": "0"})
    r = subprocess.run(run + [str(odd)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    stats = json.loads(out.read_text())
    assert any(w.startswith("tFAW = 0") for w in stats["config_warnings"])


def test_core_timings_no_device_has_are_warnings(shared_dir, tmp_path):
    """tRCD = 0 and tRP = 1 (0.8 ns at 1200 MHz) were taken without a word: a what-if may
    want them, so they are warnings; the 86 DRAMsim3 configs and the presets give none."""
    cfg = load_ini(_mutated(shared_dir, tmp_path, {"tRCD": "0", "tRP": "1"}))
    said = [w for w in cfg.warnings if "shorter than any JEDEC device" in w]
    assert [w.split(" =")[0] for w in said] == ["tRCD", "tRP"]
