"""The baseline search methods (random, GA, Bayesian, DOSA-style), the method registry, the
schedule file and its timeline, and the optimize/evaluate/compare commands — on tiny budgets
and a two-layer network so the whole file runs in well under a minute."""
from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import main as cli
from optimizer.costmodel import evaluate_schedule
from optimizer.errors import OptimizationCancelled
from optimizer.hardware import load_hardware
from optimizer.mapping import Schedule
from optimizer.methods import METHODS, UnknownMethodError, get_method, optimize, schedule_json
from optimizer.search import Budget
from optimizer.space import SearchSpace
from optimizer.timeline import build_timeline
from optimizer.workload import network_from_json
from refdata import MISSING_DATA, data_path  # tests/data/ (provenance: tests/data/README.md)

REPO = Path(__file__).resolve().parents[1]
REFERENCE = data_path("reference/costmodel/reference.json") or Path("reference.json")
BASELINES = ("random", "ga", "bo", "dosa")
BUDGET = 40

TWO_LAYERS = {"name": "two_convs", "layers": [
    {"name": "a", "type": "conv", "dims": {"N": 1, "K": 16, "C": 8, "P": 8, "Q": 8, "R": 3,
                                           "S": 3}, "producer": ["input"]},
    {"name": "b", "type": "conv", "dims": {"N": 1, "K": 32, "C": 16, "P": 8, "Q": 8, "R": 1,
                                           "S": 1}, "producer": ["a"]}]}


@pytest.fixture(scope="module")
def space() -> SearchSpace:
    return SearchSpace.build(network_from_json(TWO_LAYERS, "two_convs"), load_hardware("small"))


@pytest.fixture(scope="module")
def net_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("net") / "two_convs.json"
    path.write_text(json.dumps(TWO_LAYERS), encoding="utf-8")
    return path


@pytest.mark.parametrize("method", BASELINES)
def test_method_returns_a_valid_schedule_within_budget(space: SearchSpace, method: str) -> None:
    reports = []
    res = get_method(method)(space, Budget(evaluations=BUDGET), 3, reports.append)
    assert res.result.valid, res.result.problems
    assert 0 < res.evaluations <= BUDGET
    assert reports and reports[-1].evaluations <= BUDGET
    # the schedule the method reports is the one the exact evaluator scores
    again = evaluate_schedule(space.net, res.schedule, space.hw)
    assert again.edp == pytest.approx(res.result.edp, rel=1e-12)
    assert math.isfinite(res.result.edp) and res.result.edp > 0


@pytest.mark.parametrize("method", BASELINES)
def test_method_is_deterministic_for_a_seed(space: SearchSpace, method: str) -> None:
    run = get_method(method)
    first = run(space, Budget(evaluations=30), 7)
    second = run(space, Budget(evaluations=30), 7)
    assert first.schedule.to_json()["layers"] == second.schedule.to_json()["layers"]
    assert first.schedule.fused == second.schedule.fused
    assert first.result.edp == second.result.edp


@pytest.mark.parametrize("method", BASELINES)
def test_method_honours_cancel(space: SearchSpace, method: str) -> None:
    calls = []

    def cancel() -> bool:
        calls.append(1)
        return len(calls) > 2

    with pytest.raises(OptimizationCancelled):
        get_method(method)(space, Budget(evaluations=10_000), 0, None, cancel)


def test_time_budget_stops_a_search(space: SearchSpace) -> None:
    res = get_method("random")(space, Budget(seconds=0.5), 0)
    assert res.result.valid
    assert res.evaluations > 0


def test_ga_beats_its_own_first_generation(space: SearchSpace) -> None:
    res = get_method("ga")(space, Budget(evaluations=96), 1)
    first_best = min(p.loss for p in res.history[:1])
    assert math.log(res.result.edp) <= first_best + 1e-9


def test_registry_errors() -> None:
    with pytest.raises(UnknownMethodError, match="unknown method 'nope'"):
        get_method("nope")
    if "fadiff" not in METHODS:
        with pytest.raises(UnknownMethodError, match="not available"):
            get_method("fadiff")


def test_schedule_json_and_timeline(space: SearchSpace) -> None:
    res, sp = optimize(space.net, space.hw, "ga", Budget(evaluations=BUDGET), seed=2)
    data = schedule_json(res, sp)
    for key in ("edp", "energy_pj", "latency_cycles", "valid", "network", "hardware", "method",
                "seed", "wall_s", "evaluations", "layers", "fused_edges", "groups", "timeline"):
        assert key in data
    assert data["edp"] == pytest.approx(data["energy_pj"] * data["latency_cycles"])
    assert data["edp_uj_cycles"] == pytest.approx(data["edp"] * 1e-6)
    assert data["edp_j_cycles"] == pytest.approx(data["edp"] * 1e-12)
    assert [x["name"] for x in data["layers"]] == ["a", "b"]
    assert sum(x["energy_pj"] for x in data["layers"]) == pytest.approx(data["energy_pj"])
    json.dumps(data, allow_nan=False)           # strict JSON: no NaN/Infinity
    # the file reads back as the same schedule
    back = Schedule.from_json(json.loads(json.dumps(data)))
    assert evaluate_schedule(sp.net, back, sp.hw).edp == pytest.approx(data["edp"])
    # timeline: sequential units covering the latency; compute and DMA inside each unit
    t = data["timeline"]
    assert t[0]["start"] == 0
    for prev, unit in zip(t, t[1:]):
        assert unit["start"] == pytest.approx(prev["end"])
    assert t[-1]["end"] == pytest.approx(data["latency_cycles"])
    for unit in t:
        for row in ("compute", "dma"):
            assert unit["start"] <= unit[row]["start"] <= unit[row]["end"] <= unit["end"] + 1e-6
    lay = {x["name"]: x for x in data["layers"]}
    for unit in t:
        dma = sum(lay[n]["dram_bytes"] for n in unit["layers"]) / sp.hw.dram_bw
        assert unit["dma"]["end"] - unit["dma"]["start"] == pytest.approx(dma)


def test_timeline_merges_a_fused_group(space: SearchSpace) -> None:
    res = evaluate_schedule(space.net, space.schedule(space.minimal_choices(), []), space.hw)
    fused = dataclasses.replace(res, layers=[dataclasses.replace(x, group=0)
                                             for x in res.layers])
    units = build_timeline(fused, space.hw)
    assert len(units) == 1 and units[0].layers == ["a", "b"]
    assert units[0].end == pytest.approx(sum(x.cycles for x in res.layers))
    assert len(build_timeline(res, space.hw)) == 2


# ---- command line -------------------------------------------------------------------------
def run_cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    rc = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_optimize_then_evaluate(tmp_path: Path, net_file: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "schedule.json"
    rc, text, err = run_cli(capsys, "optimize", "--network", net_file, "--hw", "small",
                            "--method", "random", "--evaluations", "20", "--seed", "1",
                            "--out", out)
    assert rc == 0, err
    data = json.loads(out.read_text())
    assert data["valid"] and data["method"] == "random" and data["evaluations"] == 20
    rc, text, err = run_cli(capsys, "evaluate", "--schedule", out, "--hw", "small",
                            "--network", net_file, "--out", tmp_path / "e.json")
    assert rc == 0, err
    again = json.loads((tmp_path / "e.json").read_text())
    assert again["edp"] == pytest.approx(data["edp"])
    # the same schedule under the large configuration: other energies, same tiling
    rc, text, err = run_cli(capsys, "evaluate", "--schedule", out, "--hw", "large",
                            "--network", net_file, "--out", tmp_path / "l.json")
    large = json.loads((tmp_path / "l.json").read_text())
    assert large["hardware"] == load_hardware("large").name
    assert large["edp"] != data["edp"]


def test_cli_evaluate_rescores_with_the_settings_the_schedule_was_saved_with(
        tmp_path: Path, net_file: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A schedule saved at batch 4 with the sliding fused-input rule, from a network file:
    `evaluate` takes the batch, the rule and the network's file from the schedule (it took
    batch 1, refetch and the file's stem as a built-in name: every layer was invalid, or the
    error 'unknown network'), says the saved EDP is reproduced, and says when it is not
    (an edited file) or not comparable (another batch given); it refuses to overwrite the
    schedule with its own output."""
    from optimizer import costmodel
    monkeypatch.setattr(costmodel, "FUSED_HALO", costmodel.FUSED_HALO)   # (optimize sets it)
    out = tmp_path / "schedule.json"
    rc, text, err = run_cli(capsys, "optimize", "--network", net_file, "--hw", "small",
                            "--method", "ga", "--evaluations", "300", "--seed", "2",
                            "--batch", "4", "--fused-halo", "slide", "--out", out)
    assert rc == 0, err
    data = json.loads(out.read_text())
    assert data["network_file"] == str(net_file.absolute()) and data["batch"] == 4
    rc, text, err = run_cli(capsys, "evaluate", "--schedule", out, "--hw", "small",
                            "--out", tmp_path / "e.json")
    assert rc == 0, err
    assert "(batch 4, fused inputs: slide)" in text and "reproduced" in text
    again = json.loads((tmp_path / "e.json").read_text())
    assert again["edp"] == data["edp"] and (again["batch"], again["fused_halo"]) == (4, "slide")
    rc, text, err = run_cli(capsys, "evaluate", "--schedule", out, "--hw", "small",
                            "--batch", "1")
    assert rc == 1 and "factors of N multiply to 4, expected 1" in text
    assert "was on another setting (batch 4): not comparable" in text
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps({**data, "edp": data["edp"] * 2}))
    rc, text, err = run_cli(capsys, "evaluate", "--schedule", edited, "--hw", "small")
    assert rc == 0 and "DIFFERS by 50 %" in text
    rc, text, err = run_cli(capsys, "evaluate", "--schedule", out, "--hw", "small", "--out",
                            out)
    assert rc == 2 and "is also the schedule: it would be replaced" in err
    assert json.loads(out.read_text()) == data
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**data, "batch": "4"}))
    rc, text, err = run_cli(capsys, "evaluate", "--schedule", bad, "--hw", "small")
    assert rc == 2 and "'batch' = '4': expected a positive integer" in err


def test_cli_optimize_ctrl_c_keeps_the_best_schedule_and_a_second_aborts(
        tmp_path: Path, net_file: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A first Ctrl-C stops the search as if its budget were spent: the best schedule so far
    is written, marked stopped_early (it was lost); a second one aborts, writing nothing."""
    import signal

    import optimizer.methods as methods
    real = methods.optimize
    seen = []

    def interrupted(net, hw, method, budget, seed, **kw):
        signal.raise_signal(signal.SIGINT)            # the user's Ctrl-C, mid-run
        seen.append(budget.stopped())
        return real(net, hw, method, budget, seed, **kw)
    monkeypatch.setattr(methods, "optimize", interrupted)
    out = tmp_path / "s.json"
    rc, text, err = run_cli(capsys, "optimize", "--network", net_file, "--hw", "small",
                            "--evaluations", "100000", "--out", out)
    assert rc == 0 and seen == [True] and "stopping: the best schedule so far" in err
    data = json.loads(out.read_text())
    assert data["stopped_early"] is True and data["valid"] and data["evaluations"] < 100000
    assert "stopped early by Ctrl-C" in text

    def twice(net, hw, method, budget, seed, **kw):
        signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGINT)
        raise AssertionError("not reached")
    monkeypatch.setattr(methods, "optimize", twice)
    rc, text, err = run_cli(capsys, "optimize", "--network", net_file, "--hw", "small",
                            "--out", tmp_path / "t.json")
    assert rc == 130 and "interrupted" in err and not (tmp_path / "t.json").exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # restored


def test_cli_compare_keeps_finished_runs_and_refuses_duplicates(
        tmp_path: Path, net_file: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """--out holds the runs finished so far after each one ("complete": false), so a Ctrl-C
    in the third run keeps two (nothing was written); one seed's spread is n/a (it read
    0 %); a network, method or seed given twice is an error before any run."""
    import optimizer.compare as compare
    real, calls = compare.optimize, []

    def third_interrupted(*a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*a, **k)
    monkeypatch.setattr(compare, "optimize", third_interrupted)
    out = tmp_path / "t.json"
    rc, text, err = run_cli(capsys, "compare", "--hw", "small", "--networks", net_file,
                            "--methods", "random", "ga", "--seeds", "0", "1",
                            "--evaluations", "15", "--out", out)
    assert rc == 130
    partial = json.loads(out.read_text())
    assert partial["complete"] is False and len(partial["runs"]) == 2
    monkeypatch.setattr(compare, "optimize", real)
    rc, text, err = run_cli(capsys, "compare", "--hw", "small", "--networks", net_file,
                            "--methods", "random", "--seeds", "0", "--evaluations", "15",
                            "--out", out)
    table = json.loads(out.read_text())
    assert rc == 0 and table["complete"] is True and "(n/a)" in text
    name = table["networks"][0]
    assert table["per_network"][name]["random"]["refined"]["rel_sd"] is None
    for twice in (["--methods", "ga", "ga"], ["--seeds", "3", "3"]):
        rc, text, err = run_cli(capsys, "compare", "--hw", "small", "--networks", net_file,
                                "--evaluations", "15", *twice)
        assert rc == 2 and "given more than once" in err


def test_cli_optimize_progress_lines_are_timed_not_counted_in_steps(
        tmp_path: Path, net_file: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Progress lines come every PROGRESS_EVERY_S whatever a method's step is and where
    stderr goes (every 50th step, on a terminal only: a 50 s Bayesian run printed nothing),
    with the EDP's unit."""
    monkeypatch.setattr(cli, "PROGRESS_EVERY_S", 0.0)
    rc, text, err = run_cli(capsys, "optimize", "--network", net_file, "--hw", "small",
                            "--method", "bo", "--evaluations", "400", "--out",
                            tmp_path / "s.json")
    lines = [x for x in err.splitlines() if x.startswith("  ... bo step")]
    assert rc == 0 and lines and all(x.endswith("pJ x cycles") for x in lines)


def test_cli_compare(tmp_path: Path, net_file: Path,
                     capsys: pytest.CaptureFixture[str]) -> None:
    rc, text, err = run_cli(capsys, "compare", "--hw", "small", "--networks", net_file,
                            "--methods", "random", "ga", "--evaluations", "15", "--out",
                            tmp_path / "t.json")
    assert rc == 0, err
    assert "average EDP" in text and "wall time" in text
    table = json.loads((tmp_path / "t.json").read_text())
    assert set(table["average_edp"]) == {"random", "ga"}
    # the default seeds are 0 1 2 (one seed's spread was n/a)
    assert table["seeds"] == [0, 1, 2]
    assert table["all_valid"] and len(table["runs"]) == 2 * 3


@pytest.mark.skipif(not REFERENCE.exists(), reason=f"{MISSING_DATA}: reference/costmodel/reference.json")
def test_cli_evaluate_reference_reproduces_timeloop_counts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scores.json"
    rc, text, err = run_cli(capsys, "evaluate", "--reference", REFERENCE, "--out", out)
    assert rc == 0, err
    ours = json.loads(out.read_text())
    ref = {e["id"]: e for e in json.loads(REFERENCE.read_text())["entries"]
           if e["kind"] == "explicit_mapping"}
    assert set(ours) == set(ref)
    compared = 0
    for eid, entry in ref.items():
        mine, theirs = ours[eid]["results"], entry["results"]
        # Timeloop reports whole cycles; one DRAM-bound entry (rand07) reads 1 cycle more
        assert abs(mine["cycles"] - theirs["cycles"]) <= 1.0
        assert mine["energy_pJ"] == pytest.approx(theirs["energy_pJ"], rel=1e-6)
        for level, table in mine["per_level"].items():
            for tensor, counts in table["tensors"].items():
                for key in ("reads_total", "fills_total", "updates_total"):
                    assert counts[key] == theirs["per_level"][level]["tensors"][tensor][key], \
                        (eid, level, tensor, key)
                    compared += 1
    assert compared >= 21 * len(ref)


@pytest.mark.parametrize("content, expect", [
    ("{not json", "not valid JSON"),
    ('{"layers": 5}', "expected 'layers'"),
    ('{"network": "two_convs", "layers": {"a": {"temporal": {}}}}', "malformed mapping"),
    ('{"layers": [{"name": "a"}]}', "needs 'name' and 'mapping'"),
    ('{"layers": {"zz": {"temporal": {}}}}', "malformed mapping"),
])
def test_cli_malformed_schedule(tmp_path: Path, net_file: Path, content: str, expect: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    rc, text, err = run_cli(capsys, "evaluate", "--schedule", bad, "--hw", "small",
                            "--network", net_file)
    assert rc == 2
    assert err.startswith("error:") and expect in err and "bad.json" in err


def test_cli_bad_inputs(tmp_path: Path, net_file: Path,
                        capsys: pytest.CaptureFixture[str]) -> None:
    hw = tmp_path / "hw.toml"
    hw.write_text(load_hardware("small").to_toml().replace("rows = 16", "rows = -3"))
    rc, _, err = run_cli(capsys, "optimize", "--network", net_file, "--hw", hw,
                         "--method", "random", "--evaluations", "5", "--out", tmp_path / "o.json")
    assert rc == 2 and "hw.toml" in err and "array.rows" in err
    rc, _, err = run_cli(capsys, "optimize", "--network", "alexnet", "--hw", "small",
                         "--method", "random", "--out", tmp_path / "o.json")
    assert rc == 2 and "unknown network 'alexnet'" in err
    bad_net = tmp_path / "net.json"
    bad_net.write_text(json.dumps({"layers": [{"name": "x", "dims": {"K": 0}}]}))
    rc, _, err = run_cli(capsys, "optimize", "--network", bad_net, "--hw", "small",
                         "--method", "random", "--out", tmp_path / "o.json")
    assert rc == 2 and "net.json" in err and "dims.K" in err
    rc, _, err = run_cli(capsys, "evaluate", "--reference", tmp_path / "missing.json",
                         "--out", tmp_path / "s.json")
    assert rc == 2 and "missing.json" in err
    assert not (tmp_path / "o.json").exists()


def test_cli_evaluate_refuses_options_of_the_other_mode(
        tmp_path: Path, net_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`evaluate --reference F --hw large --network N` scored F's own architectures and
    workloads and dropped --hw and --network without a word (and --arch-file was dropped
    beside --schedule): each is refused, naming the flags, before any work."""
    ref = tmp_path / "ref.json"
    ref.write_text("{}")
    rc, _, err = run_cli(capsys, "evaluate", "--reference", ref, "--hw", "large",
                         "--network", net_file, "--out", tmp_path / "s.json")
    assert rc == 2 and "--hw, --network do not apply to --reference" in err
    rc, _, err = run_cli(capsys, "evaluate", "--schedule", ref, "--hw", "small",
                         "--arch-file", ref)
    assert rc == 2 and "--arch-file does not apply without --reference" in err
    assert not (tmp_path / "s.json").exists()


def test_cli_optimize_with_fadiff(tmp_path: Path, net_file: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """FADiff through the CLI within a small evaluation budget: a valid schedule file."""
    out = tmp_path / "o.json"
    rc, text, err = run_cli(capsys, "optimize", "--network", net_file, "--hw", "small",
                            "--method", "fadiff", "--evaluations", "60", "--out", out)
    assert rc == 0, err
    data = json.loads(out.read_text())
    assert data["method"] == "fadiff" and data["valid"] is True
    assert data["evaluations"] <= 60
    assert "fadiff" in text


def test_cli_help_stays_light() -> None:
    """optimize --help answers without importing torch (heavy imports live in commands)."""
    code = ("import sys, main\n"
            "try:\n    main.main(['optimize', '--help'])\nexcept SystemExit:\n    pass\n"
            "print('torch' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().endswith("False")
    assert "--evaluations" in res.stdout


def test_unfit_layer_is_a_clear_error() -> None:
    """A layer whose minimal mapping overflows the hardware is named in the error."""
    from optimizer.errors import MappingError
    from optimizer.space import repair
    hw = dataclasses.replace(load_hardware("small"), acc_capacity=load_hardware("small").cols)
    net = network_from_json({"layers": [{"name": "big", "type": "conv", "dims": {
        "N": 1, "K": 4, "C": 4, "P": 3, "Q": 3, "R": 1, "S": 1}}]}, "n")
    sp = SearchSpace.build(net, dataclasses.replace(hw, sp_capacity=1))
    with pytest.raises(MappingError, match="'big' fits no mapping"):
        repair(sp, sp.random_choices(np.random.default_rng(0)))


def test_cli_fused_halo_rule_is_applied_and_recorded(tmp_path: Path, net_file: Path,
                                                     capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from optimizer import costmodel
    monkeypatch.setattr(costmodel, "FUSED_HALO", costmodel.FUSED_HALO)   # restored after
    out = tmp_path / "s.json"
    rc, _, err = run_cli(capsys, "optimize", "--network", net_file, "--hw", "small",
                         "--method", "random", "--evaluations", "10", "--out", out)
    assert rc == 0, err
    assert json.loads(out.read_text())["fused_halo"] == "refetch"          # the default
    rc, _, err = run_cli(capsys, "optimize", "--network", net_file, "--hw", "small",
                         "--method", "random", "--evaluations", "10", "--fused-halo",
                         "slide", "--out", out)
    assert rc == 0, err
    assert json.loads(out.read_text())["fused_halo"] == "slide"
    assert costmodel.FUSED_HALO == "slide"
    with pytest.raises(SystemExit):
        cli.main(["optimize", "--network", str(net_file), "--hw", "small", "--fused-halo",
                  "both", "--out", str(out)])
    assert "invalid choice: 'both'" in capsys.readouterr().err
