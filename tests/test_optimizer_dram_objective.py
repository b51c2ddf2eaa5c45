"""``--memory`` on optimize / compare / evaluate: the objective's DRAM energy is the memory's
DRAM term (background and refresh over the schedule's cycles, data and ACT energy per line)
instead of the hardware file's per-byte energy; the choice is recorded, ``evaluate`` flags a
saved EDP priced another way, and without ``--memory`` one line says DRAM is priced per byte."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import main as cli
from optimizer.costmodel import evaluate_schedule
from optimizer.dram_objective import objective_hardware, objective_json, objective_mismatch
from optimizer.hardware import load_hardware
from optimizer.mapping import load_saved_schedule
from optimizer.workload import load_network

TINY = {"name": "tiny2", "layers": [
    {"name": "a", "type": "conv", "dims": {"N": 1, "K": 16, "C": 8, "P": 8, "Q": 8, "R": 3,
                                           "S": 3}},
    {"name": "b", "type": "conv", "dims": {"N": 1, "K": 16, "C": 16, "P": 8, "Q": 8, "R": 3,
                                           "S": 3}, "producer": ["a"]}]}
MEMORY = "DDR4-3200"


@pytest.fixture()
def net_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny2.json"
    path.write_text(json.dumps(TINY))
    return path


@pytest.fixture(autouse=True)
def calibration_cache(dram_calibration_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The session's calibration cache (each memory calibrated once per session)."""
    monkeypatch.setenv("DIFFMEM_CACHE_DIR", str(dram_calibration_dir))


def run_cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    rc = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _optimize(capsys, net_file: Path, out: Path, *extra: str) -> tuple[str, dict]:
    rc, text, err = run_cli(capsys, "optimize", "--network", net_file, "--hw", "small",
                            "--method", "random", "--evaluations", "40", "--seed", "1",
                            *extra, "--out", out)
    assert rc == 0, err
    return text, json.loads(out.read_text())


def test_memory_reaches_the_objective_and_is_recorded(tmp_path, net_file, capsys):
    """optimize --memory scores with the DRAM term: the schedule's EDP differs from its
    per-byte EDP, the file records the memory and the term, and re-scoring it with the same
    memory reproduces its EDP; without --memory one note line says DRAM is per byte."""
    text, data = _optimize(capsys, net_file, tmp_path / "m.json", "--memory", MEMORY)
    assert f"DRAM energy: the DRAM term of {MEMORY}" in text
    assert f"on {load_hardware('small').name}+{MEMORY} by random" in text
    assert "per byte" not in text
    assert data["memory"] == MEMORY and data["hardware"] == load_hardware("small").name
    obj = data["dram_objective"]
    assert obj["model"] == "term" and obj["memory"] == MEMORY and obj["layout"] == "nhwc"
    # the hardware file stays the hardware file: the term is recorded apart
    assert data["hardware_config"] == load_hardware("small").to_dict()
    rc, text, err = run_cli(capsys, "evaluate", "--schedule", tmp_path / "m.json", "--hw",
                            "small", "--memory", MEMORY, "--out", tmp_path / "e.json")
    assert rc == 0, err
    assert "reproduced" in text
    assert json.loads((tmp_path / "e.json").read_text())["edp"] == data["edp"]
    rc, text, err = run_cli(capsys, "evaluate", "--schedule", tmp_path / "m.json", "--hw",
                            "small", "--out", tmp_path / "p.json")
    assert rc == 0, err
    per_byte = json.loads((tmp_path / "p.json").read_text())
    assert per_byte["dram_objective"]["model"] == "per-byte" and per_byte["memory"] is None
    assert per_byte["edp"] != data["edp"]
    notes = [x for x in text.splitlines() if x.startswith("note: DRAM energy is per byte")]
    assert notes == ["note: DRAM energy is per byte (64 pJ/B, the hardware file's; no "
                     "background or refresh); --memory PRESET prices it as the engine does"]


def test_dram_energy_under_the_term_includes_background_that_grows_with_cycles(
        tmp_path, net_file, capsys):
    """The same schedule and DRAM traffic on a slower bus (more cycles): under the DRAM term
    its DRAM energy grows by (background + refresh per cycle) x the extra cycles; per byte it
    does not move."""
    _optimize(capsys, net_file, tmp_path / "s.json")
    sched, _ = load_saved_schedule(tmp_path / "s.json")
    net = load_network(str(net_file))
    hw = load_hardware("small")
    slow_hw = dataclasses.replace(hw, dram_bw=hw.dram_bw / 64)
    dhw = objective_hardware(hw, MEMORY)
    slow_dhw = dataclasses.replace(dhw, dram_bw=hw.dram_bw / 64)
    term = dhw.dram

    def dram_pj(h):
        res = evaluate_schedule(net, sched, h)
        return sum(lr.energy_parts["DRAM"] for lr in res.layers), res.latency_cycles
    pb, pb_cyc = dram_pj(hw)
    pb_slow, pb_slow_cyc = dram_pj(slow_hw)
    assert pb_slow_cyc > pb_cyc and pb_slow == pytest.approx(pb, rel=1e-12)
    tm, tm_cyc = dram_pj(dhw)
    tm_slow, tm_slow_cyc = dram_pj(slow_dhw)
    assert tm_slow_cyc > tm_cyc
    per_cycle = term.background_pj_per_cycle + term.refresh_pj_per_cycle
    assert per_cycle > 0
    assert tm_slow - tm == pytest.approx(per_cycle * (tm_slow_cyc - tm_cyc), rel=1e-9)
    # background and refresh are part of the DRAM energy: more than the lines alone
    assert tm > per_cycle * tm_cyc


def test_evaluate_flags_a_schedule_saved_under_another_dram_objective(
        tmp_path, net_file, capsys):
    """A per-byte schedule re-scored with --memory, and a --memory schedule re-scored per
    byte or with another memory: the saved EDP is 'not comparable', naming the objective it
    was saved under."""
    _optimize(capsys, net_file, tmp_path / "pb.json")
    _optimize(capsys, net_file, tmp_path / "m.json", "--memory", MEMORY)
    rc, text, _ = run_cli(capsys, "evaluate", "--schedule", tmp_path / "pb.json", "--hw",
                          "small", "--memory", MEMORY)
    assert rc == 0
    assert "was on another setting (DRAM objective per-byte DRAM): not comparable" in text
    rc, text, _ = run_cli(capsys, "evaluate", "--schedule", tmp_path / "m.json", "--hw",
                          "small")
    assert rc == 0
    assert (f"was on another setting (DRAM objective DRAM term of {MEMORY}): not comparable"
            in text)
    rc, text, _ = run_cli(capsys, "evaluate", "--schedule", tmp_path / "m.json", "--hw",
                          "small", "--memory", "DDR4-3200-2ch")
    assert rc == 0 and "not comparable" in text
    # files from before the option carry no objective: per byte
    old = json.loads((tmp_path / "pb.json").read_text())
    del old["dram_objective"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    rc, text, _ = run_cli(capsys, "evaluate", "--schedule", tmp_path / "old.json", "--hw",
                          "small")
    assert rc == 0 and "reproduced" in text
    assert objective_mismatch(None, objective_json(load_hardware("small"))) is None


def test_compare_with_memory_records_it(tmp_path, capsys):
    out = tmp_path / "table.json"
    rc, text, err = run_cli(capsys, "compare", "--hw", "small", "--networks", "resnet18",
                            "--methods", "random", "--evaluations", "60", "--no-refine",
                            "--memory", MEMORY, "--out", out)
    assert rc == 0, err
    assert f"DRAM energy: the DRAM term of {MEMORY}" in text
    data = json.loads(out.read_text())
    assert data["memory"] == MEMORY and data["dram_objective"]["model"] == "term"
    # the hardware is its file's, as optimize and evaluate record it (the DRAM term apart)
    assert data["hardware"] == load_hardware("small").name
    assert data["hardware_stock"] == "small" and data["hardware_path"].endswith("small.toml")


def test_bad_memory_name_and_memory_with_reference_are_refused(tmp_path, net_file, capsys):
    out = tmp_path / "s.json"
    for cmd in (["optimize", "--network", net_file, "--out", out],
                ["compare", "--networks", "resnet18"],):
        rc, _, err = run_cli(capsys, *cmd, "--hw", "small", "--evaluations", "40",
                             "--memory", "DDR4-320")
        assert rc == 2
        assert "error: no preset named 'DDR4-320' (did you mean 'DDR4-3200'?)" in err
    assert not out.exists()
    rc, _, err = run_cli(capsys, "evaluate", "--reference", tmp_path / "r.json", "--out",
                         tmp_path / "o.json", "--memory", MEMORY)
    assert rc == 2 and "--memory does not apply to --reference" in err
