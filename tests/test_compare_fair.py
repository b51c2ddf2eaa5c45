"""Like for like in `compare`: budgets in CPU-seconds or evaluations only (no wall clock),
the refinement alone as a reference row, FADiff's raw figure without its archive, baselines
that can fuse (aligned tiles), one EDP unit, the hardware recorded by content, and the
fused-input rule only mattering where something is fused.  Tiny networks and budgets."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import main as cli
from optimizer import fadiff
from optimizer.baselines import common
from optimizer.compare import RunRecord, format_table, run_comparison
from optimizer.errors import OptimizerError
from optimizer.hardware import HARDWARE_DIR, load_hardware
from optimizer.search import Budget, Tracker
from optimizer.space import SearchSpace, repair_fusion
from optimizer.workload import network_from_json

TWO_LAYERS = {"name": "two_convs", "layers": [
    {"name": "a", "type": "conv", "dims": {"N": 1, "K": 16, "C": 8, "P": 8, "Q": 8, "R": 3,
                                           "S": 3}, "producer": ["input"]},
    {"name": "b", "type": "conv", "dims": {"N": 1, "K": 32, "C": 16, "P": 8, "Q": 8, "R": 1,
                                           "S": 1}, "producer": ["a"]}]}
# four layers of different shapes: FADiff's archive moves this one's result (seed 1)
MIX = {"name": "mix", "layers": [
    {"name": "a", "type": "conv", "dims": {"N": 1, "K": 16, "C": 8, "P": 16, "Q": 16, "R": 3,
                                           "S": 3}, "producer": ["input"]},
    {"name": "b", "type": "conv", "dims": {"N": 1, "K": 32, "C": 16, "P": 16, "Q": 16,
                                           "R": 1, "S": 1}, "producer": ["a"]},
    {"name": "c", "type": "conv", "dims": {"N": 1, "K": 64, "C": 32, "P": 8, "Q": 8, "R": 3,
                                           "S": 3}, "producer": ["b"]},
    {"name": "d", "type": "conv", "dims": {"N": 1, "K": 64, "C": 64, "P": 8, "Q": 8, "R": 1,
                                           "S": 1}, "producer": ["c"]}]}


@pytest.fixture(autouse=True)
def one_thread() -> None:
    import torch
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def net_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("net") / "two_convs.json"
    path.write_text(json.dumps(TWO_LAYERS), encoding="utf-8")
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    rc = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_compare_takes_no_wall_clock_budget(net_file: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """compare's default budget is CPU-seconds alone (it was 6 CPU-s or 20 s wall, and under
    load the wall cap ended the runs); --seconds is a usage error naming it; the API refuses
    a wall-clock budget too.  optimize keeps its documented wall option and default cap."""
    args = cli.build_parser().parse_args(["compare", "--hw", "small"])
    budget = cli._budget(args)
    assert budget.seconds is None and budget.cpu_seconds == cli.DEFAULT_CPU_SECONDS
    assert args.seeds == [0, 1, 2]
    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args(["compare", "--hw", "small", "--seconds", "5"])
    assert exc.value.code == 2
    assert "--seconds: a wall-clock budget is not accepted" in capsys.readouterr().err
    with pytest.raises(OptimizerError, match="wall-clock budget"):
        run_comparison("small", [str(net_file)], ["random"], Budget(seconds=5.0,
                                                                     evaluations=20))
    opt = cli.build_parser().parse_args(["optimize", "--network", "resnet18", "--hw", "small",
                                         "--out", "x.json"])
    assert cli._budget(opt).seconds == 60.0
    opt = cli.build_parser().parse_args(["optimize", "--network", "resnet18", "--hw", "small",
                                         "--seconds", "3", "--out", "x.json"])
    assert cli._budget(opt).seconds == 3.0


def test_refine_only_row_gets_the_same_budget(net_file: Path) -> None:
    """refine-only does no search (its raw result is the trivial schedule, no evaluation)
    and its refinement spends the whole budget; every row is counted alike."""
    n = 300
    comp = run_comparison("small", [str(net_file)], ["random", "refine-only"],
                          Budget(evaluations=n), seeds=[0, 1])
    ref = [r for r in comp.runs if r.method == "refine-only"]
    rnd = [r for r in comp.runs if r.method == "random"]
    assert len(ref) == len(rnd) == 2
    for r in ref:
        assert r.raw_evaluations == 0 and 0 < r.evaluations <= n
        assert r.edp <= r.raw_edp and r.valid and r.fused_edges == 0
    for r in rnd:
        assert 0 < r.raw_evaluations < r.evaluations <= n
    data = comp.to_json()
    assert set(data["per_network"]["two_convs"]) == {"random", "refine-only"}
    assert data["evaluations_mean"]["refine-only"] == sum(r.evaluations for r in ref) / 2
    text = format_table(comp)
    assert "refine-only: no search" in text and "geomean/refine-only" in text
    with pytest.raises(OptimizerError, match="needs the refinement"):
        run_comparison("small", [str(net_file)], ["refine-only"], Budget(evaluations=n),
                       refine=False)


def test_fadiff_raw_is_the_search_without_its_archive() -> None:
    """FADiff's archive (a decoding no baseline gets) is not in its raw figure: the run's
    ``search_only`` is exactly what the same run without the archive returns, and the
    refinement keeps it as ``raw`` and the archived result as ``post``."""
    space = SearchSpace.build(network_from_json(MIX, "mix"), load_hardware("small"))
    budget = Budget(evaluations=3000)
    with_arch = fadiff.run(space, budget, 1, settings=fadiff.FADiffSettings(archive=24))
    without = fadiff.run(space, budget, 1, settings=fadiff.FADiffSettings(archive=0))
    assert with_arch.search_only is not None                     # the archive moved it
    assert with_arch.search_only.edp == without.result.edp
    assert with_arch.result.edp < with_arch.search_only.edp
    assert without.search_only is None
    from optimizer.polish import refine
    out = refine(space, with_arch, Budget(evaluations=200), seed=1)
    assert out.raw is with_arch.search_only and out.post is with_arch.result
    rec = RunRecord("mix", "fadiff", 1, out.result.edp, 0.0, 0.0, True, 0.0, 0, 0,
                    out.raw.edp, post_edp=out.post.edp)
    assert rec.value("raw") > rec.value("post") >= rec.value("refined")
    # optimize --no-refine: the same split, and the schedule file says both
    from optimizer.methods import optimize, schedule_json
    res, sp = optimize(space.net, space.hw, "fadiff", budget, 1, refine=False)
    assert res.raw is res.search_only and res.post is res.result
    assert res.raw.edp == without.result.edp and res.result.edp == with_arch.result.edp
    data = schedule_json(res, sp)
    assert data["raw_search"]["edp"] == res.raw.edp
    assert data["post_search"]["edp"] == data["edp"] < data["raw_search"]["edp"]
    base = RunRecord("mix", "ga", 1, 1.0, 0.0, 0.0, True, 0.0, 0, 0, 2.0)
    assert base.value("post") == base.value("raw") == 2.0          # no post step: = raw


def test_baseline_fusion_bits_align_the_tiles() -> None:
    """A fusion bit on random tiles used to be dropped (unaligned: ~1 % survived, so the
    baselines never fused); now the tiles are aligned first and the edge runs fused, counted
    as one more candidate evaluation only when the aligned form overflows."""
    space = SearchSpace.build(network_from_json(TWO_LAYERS, "two_convs"),
                              load_hardware("large"))
    rng = np.random.default_rng(0)
    k = space.fusable_edges[0]
    kept_old = kept_new = tried = 0
    for _ in range(40):
        choices = space.random_choices(rng)
        if repair_fusion(space, choices, [k]):
            continue                                    # already aligned: not the case
        tried += 1
        kept_old += bool(repair_fusion(space, choices, [k]))
        tracker = Tracker("t", Budget(evaluations=10_000), None, None)
        cand = common.evaluate(space, tracker, choices, [k])
        assert tracker.evaluations in (2, 4)            # L, or 2 L with the fallback
        if cand.fused:
            kept_new += 1
            assert cand.valid and repair_fusion(space, cand.choices, [k]) == [k]
    assert tried > 20 and kept_old == 0 and kept_new > tried // 2


def test_random_search_fuses_and_the_table_counts_fused_edges(net_file: Path) -> None:
    comp = run_comparison("large", [str(net_file)], ["random"], Budget(evaluations=400),
                          seeds=[0, 1, 2], refine=False)
    assert all(r.fused_edges == 1 for r in comp.runs)
    assert comp.to_json()["fused_edges_mean"]["random"] == 1.0
    text = format_table(comp)
    assert "fused edges" in text and "evaluations/run" in text and "geomean EDP" in text
    assert "average EDP (arith.)" in text


def test_hardware_is_recorded_by_content(tmp_path: Path, net_file: Path) -> None:
    """An edited copy of a shipped file keeps its name but not its digest: the JSON records
    the config, digest and path, and the table marks it."""
    stock = run_comparison("small", [str(net_file)], ["random"], Budget(evaluations=30),
                           seeds=[0], refine=False)
    data = stock.to_json()
    assert data["hardware_stock"] == "small" and data["hardware_config"]["rows"] == 16
    assert data["hardware_path"] == str(HARDWARE_DIR / "small.toml")
    assert "NOT STOCK" not in format_table(stock)
    text = (HARDWARE_DIR / "small.toml").read_text()
    edited = tmp_path / "small.toml"
    hw = load_hardware("small")
    edited.write_text(text.replace(f"{hw.e_mac:g}", f"{hw.e_mac * 2:g}", 1)
                      if f"{hw.e_mac:g}" in text else hw.to_toml().replace(
                          f"{hw.e_mac!r}", f"{hw.e_mac * 2!r}"))
    assert load_hardware(edited).name == hw.name and load_hardware(edited).e_mac != hw.e_mac
    other = run_comparison(str(edited), [str(net_file)], ["random"], Budget(evaluations=30),
                           seeds=[0], refine=False)
    odata = other.to_json()
    assert odata["hardware"] == data["hardware"] and odata["hardware_stock"] is None
    assert odata["hardware_digest"] != data["hardware_digest"]
    assert odata["hardware_path"] == str(edited.absolute())
    assert f"NOT STOCK: edited config {odata['hardware_digest']}" in format_table(other)


def test_one_edp_unit_and_the_halo_rule_without_fused_edges(
        tmp_path: Path, net_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """optimize, evaluate and compare print EDP in pJ x cycles only (J x cycles was mixed
    in); a schedule with no fused edge re-scored under the other fused-input rule is
    reproduced (the rule changes nothing there), not 'not comparable'."""
    out = tmp_path / "s.json"
    rc, text, err = run_cli(capsys, "optimize", "--network", net_file, "--hw", "small",
                            "--method", "dosa", "--evaluations", "200", "--out", out)
    assert rc == 0, err
    assert json.loads(out.read_text())["fused_edges"] == []
    assert " J x cycles" not in text and "uJ x cycles" not in text and "pJ x cycles" in text
    rc, text, err = run_cli(capsys, "evaluate", "--schedule", out, "--hw", "small",
                            "--fused-halo", "slide")
    assert rc == 0, err
    assert " J x cycles" not in text and "reproduced" in text and "not comparable" not in text
    rc, text, err = run_cli(capsys, "compare", "--hw", "small", "--networks", net_file,
                            "--methods", "random", "--seeds", "0", "--evaluations", "30")
    assert rc == 0, err
    assert " J x cycles" not in err + text and "pJ x cycles" in err
    assert math.isnan(RunRecord("n", "m", 0, 1.0, 0, 0, True, 0, 0, 0).post_edp)
    from types import SimpleNamespace
    saved = SimpleNamespace(hardware_config=None, batch=1, fused_halo="refetch", edp=5.0)
    assert "reproduced" in cli._saved_score_line(saved, 5.0, {}, 1, "slide", fused_edges=0)
    assert "(fused inputs refetch): not comparable" in cli._saved_score_line(
        saved, 5.0, {}, 1, "slide", fused_edges=2)
