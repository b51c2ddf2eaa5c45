"""Hardened optimiser inputs (issue 15): hardware TOML, network JSON and schedule JSON files
give clean errors naming the file and field for bad bytes, nesting, types and magnitudes."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from optimizer.errors import HardwareError, MappingError, WorkloadError
from optimizer.hardware import HARDWARE_DIR, load_hardware
from optimizer.mapping import load_schedule
from optimizer.workload import load_network

REPO = Path(__file__).resolve().parents[1]
LARGE = (HARDWARE_DIR / "large.toml").read_text()


def _hw(tmp_path, text: str) -> Path:
    p = tmp_path / "hw.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize("old,new,field,expect", [
    ("bandwidth_words_per_cycle = ", "bandwidth_words_per_cycle = 1e18 #", "dram.",
     "physical range"),
    ("read_pj = ", "read_pj = 1e-300 #", ".read_pj", "physical range"),
    ("[mac]", "[l4cache]\nread_pj = 1\n[mac]", "l4cache", "unknown section or memory level"),
    ("[mac]", "[mac]\nspeed = 3", "mac.speed", "unknown key"),
    ("rows = ", "rows = 1e300 #", "array.rows", "physical range"),
])
def test_hardware_bounds_and_layout(tmp_path, old, new, field, expect):
    p = _hw(tmp_path, LARGE.replace(old, new, 1))
    with pytest.raises(HardwareError) as err:
        load_hardware(p)
    assert expect in str(err.value) and field in str(err.value) and str(p) in str(err.value)


def test_hardware_non_utf8_and_nesting(tmp_path):
    p = tmp_path / "hw.toml"
    p.write_bytes(b"name = \"\xff\xfe\"\n")
    with pytest.raises(HardwareError, match="not UTF-8"):
        load_hardware(p)
    p.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(HardwareError):
        load_hardware(p)


def _net(tmp_path, data) -> Path:
    p = tmp_path / "net.json"
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


LAYER = {"name": "l0", "type": "conv", "dims": {"N": 1, "K": 64, "C": 64, "P": 14, "Q": 14,
                                                "R": 3, "S": 3}}


@pytest.mark.parametrize("data,expect", [
    ([{**LAYER, "dims": {**LAYER["dims"], "K": 10**18}}], "beyond 1048576"),
    ([{**LAYER, "dims": {**LAYER["dims"], "K": 10**4000}}], "digits"),
    ([{**LAYER, "dims": {**LAYER["dims"], "K": 1e300}}], "positive integer"),
    ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ({"name": ["x"], "layers": [LAYER]}, "non-empty string 'name'"),
    ([{**LAYER, "stride": 10**9}], "stride"),
])
def test_network_files(tmp_path, data, expect):
    p = _net(tmp_path, data)
    t0 = time.process_time()
    with pytest.raises(WorkloadError) as err:
        load_network(p)
    assert expect in str(err.value) and str(p) in str(err.value)
    assert time.process_time() - t0 < 10


def test_network_non_utf8(tmp_path):
    p = tmp_path / "net.json"
    p.write_bytes(b'[{"name": "\xc3\x28"}]')
    with pytest.raises(WorkloadError, match="not UTF-8"):
        load_network(p)


@pytest.mark.parametrize("fused,expect", [
    (5, "list of"), ([1, 2], "list of"), ([["a"]], "list of"), ([["a", "zz"]], "no mapping"),
])
def test_schedule_fused_edges(tmp_path, fused, expect):
    p = tmp_path / "s.json"
    base = {"network": "x", "layers": {}, "fused_edges": fused}
    p.write_text(json.dumps(base))
    with pytest.raises(MappingError, match=expect):
        load_schedule(p)


def test_cli_exit_2_on_bad_hardware(tmp_path):
    p = _hw(tmp_path, LARGE.replace("[mac]", "[l4cache]\nread_pj = 1\n[mac]", 1))
    r = subprocess.run([sys.executable, str(REPO / "main.py"), "optimize", "--network",
                        "resnet18", "--hw", str(p), "--method", "random", "--evaluations", "2",
                        "--out", str(tmp_path / "s.json")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2 and "l4cache" in r.stderr and "Traceback" not in r.stderr


def test_cli_refuses_out_of_range_seeds_iterations_and_batches(tmp_path, capsys):
    """A negative seed ran the whole search and failed in its last stage (numpy takes seeds
    0 .. 2^32 - 1), a huge one overflowed, `cosim --iterate -1` failed in its summary, a
    batch beyond the optimiser's 2^20 per dimension failed inside the search: each is now an
    error naming the option before any work."""
    import main as cli
    out = str(tmp_path / "s.json")
    for argv, said in (
            (["optimize", "--network", "resnet18", "--hw", "large", "--seed", "-1"],
             "argument --seed: expected a seed from 0 to 4294967295, got -1"),
            (["optimize", "--network", "resnet18", "--hw", "large", "--seed", str(2 ** 64)],
             f"expected a seed from 0 to 4294967295, got {2 ** 64}"),
            (["compare", "--hw", "large", "--networks", "resnet18", "--seeds", "0", "-1"],
             "argument --seeds: expected a seed"),
            (["cosim", "--network", "resnet18", "--hw", "large", "--memory", "DDR4-3200",
              "--iterate", "-1"], "argument --iterate: expected 0 or a positive integer")):
        with pytest.raises(SystemExit):
            cli.main([*argv, "--out", out])
        assert said in capsys.readouterr().err
    rc = cli.main(["optimize", "--network", "resnet18", "--hw", "large", "--batch",
                   "2000000", "--out", out])
    assert rc == 2 and "batch 2000000: layer 'conv1' would have N = 2000000, beyond " \
        "1048576 (2^20)" in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()


def test_a_dimension_with_more_splits_than_kept_keeps_the_minimal_one_and_a_spread():
    """N = 10^6 (a batch of a million) has ~10^4 ways to split over four levels: the search
    keeps MAX_SPLITS of them. The first MAX_SPLITS in enumeration order lost the split with
    everything at DRAM (the repair's fallback: the run failed) and held only small DRAM
    factors; the kept rows now include it and spread over the DRAM factors."""
    from optimizer import space as S
    hw = load_hardware("large")
    whole = S.dim_splits("conv", "N", 10 ** 6, hw)
    assert len(whole.table) == S.MAX_SPLITS
    t = whole.table
    assert ((t[:, 0] == 10 ** 6) & (t[:, 1:].prod(1) == 1)).sum() == 1      # the minimal split
    assert (t.prod(1) == 10 ** 6).all() and len({tuple(r) for r in t.tolist()}) == len(t)
    assert t[:, 0].min() == 1 and t[:, 0].max() == 10 ** 6                # DRAM factors spread
    assert np.median(t[:, 0]) > 10
    # a spatial dimension keeps its largest spatial factors first
    k = S.dim_splits("conv", "K", 2 ** 12 * 3 ** 4, hw).table
    assert len(k) == S.MAX_SPLITS and k[:, 4].max() == 32 and 2 not in k[:, 4]


def test_a_budget_below_two_network_evaluations_is_said(caplog):
    """--evaluations 1 returned the start schedule (FADiff) or spent 37 (the others) without
    a word: a budget under two evaluations of every layer is now a warning naming both."""
    import logging

    from optimizer.methods import optimize
    from optimizer.search import Budget
    with caplog.at_level(logging.WARNING, logger="optimizer.methods"):
        res, _ = optimize("resnet18", "large", "random", Budget(evaluations=5), 0)
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "a budget of 5 layer-mapping evaluations" in said[0] \
        and "21 layers" in said[0] and res.result.valid
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="optimizer.methods"):
        optimize("resnet18", "large", "random", Budget(evaluations=42), 0)
    assert not caplog.records
    with caplog.at_level(logging.WARNING, logger="optimizer.methods"):
        optimize("resnet18", "large", "random", Budget(cpu_seconds=1e-9), 0)
    assert "a budget of 1e-09 CPU seconds" in caplog.records[0].getMessage()


def test_names_are_suggested_alike_for_every_lookup():
    """One 'did you mean' (engine.names) for presets, studies, hardware and networks: a
    case variant first, then the closest spelling; hardware names now ignore case, as
    network names did ('Large' was refused)."""
    from engine.config import load_config
    from engine.errors import ConfigError
    from engine.names import close_names, did_you_mean
    from optimizer.workload import load_network
    assert close_names("ddr4-3200", ["DDR4-3200", "DDR4-3200-8ch"]) == ["DDR4-3200"]
    assert did_you_mean("DDR4-320", ["DDR4-3200", "HBM2"]) == " (did you mean 'DDR4-3200'?)"
    assert did_you_mean("zzz", ["DDR4-3200", "HBM2"]) == ""
    assert load_hardware("Large") == load_hardware("large")
    with pytest.raises(HardwareError, match=r"unknown hardware 'larg' \(did you mean 'large'"):
        load_hardware("larg")
    with pytest.raises(WorkloadError, match=r"'resnt18' \(did you mean 'resnet18'\?\)"):
        load_network("resnt18")
    with pytest.raises(ConfigError, match=r"'DDR4-320' \(did you mean 'DDR4-3200'\?\)"):
        load_config("DDR4-320")


@pytest.mark.parametrize("bad", ["2", 2.7, True, None])
def test_a_mapping_factor_must_be_a_whole_number(tmp_path, bad):
    """A loop factor written as "2" was taken, and 2.7 became 2, silently: each is now an
    error naming the layer, level and loop."""
    from optimizer.mapping import LayerMapping
    levels = {lv: {"factors": {}} for lv in ("DRAM", "Scratchpad", "Accumulator", "Registers")}
    levels["Scratchpad"]["factors"]["K"] = bad
    p = tmp_path / "s.json"
    p.write_text(json.dumps({"network": "x", "layers": {"conv": {"temporal": levels}}}))
    with pytest.raises(MappingError, match=r"layer 'conv': Scratchpad factor K = .*: expected "
                                           r"a whole number"):
        load_schedule(p)
    levels["Scratchpad"]["factors"]["K"] = 2
    ok = LayerMapping.from_notation({"temporal": levels}, "m")
    assert ok.temporal[1]["K"] == 2


def test_cosim_warns_of_an_accelerator_clock_outside_a_plausible_range(tmp_path, monkeypatch,
                                                                       caplog):
    """--acc-ghz 1000 (a THz accelerator, likely MHz typed for GHz) was taken without a word:
    it is warned (and still used: a what-if may want it); 1.5 GHz is not."""
    import logging

    import main as cli
    import optimizer.cosim_job as job

    class Reached(Exception):
        pass

    def stop(*a, **k):
        raise Reached
    monkeypatch.setattr(job, "run_cosim_job", stop)
    for ghz, warned in (("1000", True), ("1.5", False)):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="diffmem"), pytest.raises(Reached):
            cli.main(["cosim", "--network", "resnet18", "--hw", "large", "--memory",
                      "DDR4-3200", "--acc-ghz", ghz, "--out", str(tmp_path / "c.json")])
        said = [r.getMessage() for r in caplog.records if "--acc-ghz" in r.getMessage()]
        assert bool(said) == warned and (not warned or "outside 0.05-10 GHz" in said[0])
