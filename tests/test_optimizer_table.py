"""benchmarks/optimizer_table.py's report on a hand-made results file: the targets table's
ratios of means, geomean, wins and verdict, and the report's footer (runs, CPU-s, fused
edges) counted over the table's networks and methods only."""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import optimizer_table  # noqa: E402


def _run(net: str, method: str, seed: int, raw: float, edp: float, fused: int = 0,
         cpu: float = 3.0) -> dict:
    return {"record": optimizer_table.RECORD_VERSION, "config": "large", "network": net,
            "method": method, "seed": seed, "tag": "",
            "raw_edp": raw, "edp": edp, "valid": True, "fused": fused, "cpu_s": cpu,
            "load": 1.0, "budget_cpu_s": 5.0}


@pytest.fixture
def runs_file(tmp_path) -> Path:
    rows = []
    for s in (0, 1):
        rows += [_run("a", "fadiff", s, 1.0 + s, 8.0, fused=2, cpu=2.0),
                 _run("a", "ga", s, 10.0, 9.0), _run("a", "dosa", s, 20.0, 9.0),
                 _run("a", "random", s, 100.0, 10.0 - 4 * s),     # wins on seed 0 only
                 _run("b", "fadiff", s, 4.0, 1.0), _run("b", "ga", s, 5.0, 1.0),
                 _run("b", "dosa", s, 5.0, 1.0), _run("b", "random", s, 9.0, 2.0),
                 # a third network outside the tables below: never counted there
                 _run("c", "fadiff", s, 1.0, 1.0, fused=7, cpu=9.0),
                 _run("c", "random", s, 1.0, 1.0)]
    path = tmp_path / "runs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _targets(path: Path) -> list[list[str]]:
    ns = argparse.Namespace(out=str(path), configs=["large"], networks=["a", "b"],
                            seeds=[0, 1], tag=None, methods_order=None)
    text = optimizer_table.targets(ns)
    return [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()[2:]]


def test_targets_table(runs_file) -> None:
    rows = {r[0]: r for r in _targets(runs_file)}
    ga = rows["fadiff raw / ga raw"]
    # a: mean(1, 2) / 10 = 0.15; b: 4 / 5 = 0.8; geomean sqrt(0.12)
    assert ga[1:5] == ["large", "2", "0.150", "0.800"]
    assert float(ga[5]) == pytest.approx(math.sqrt(0.15 * 0.8), abs=5e-4)
    assert ga[6] == "4 of 4" and ga[7] == "<= 0.9: met"
    rnd = rows["fadiff refined / random refined"]
    # a: 8 / mean(10, 6) = 1.0; b: 1 / 2 = 0.5; geomean 0.707; wins: a seed 0, b both
    assert rnd[3:5] == ["1.000", "0.500"] and rnd[5] == "0.707" and rnd[6] == "3 of 4"
    assert rnd[7] == "<= 0.95: met"


def test_report_footer_counts_the_tables_networks_only(runs_file) -> None:
    ns = argparse.Namespace(out=str(runs_file), configs=["large"], networks=["a", "b"],
                            seeds=[0, 1], tag=None, methods_order=["fadiff", "ga", "random"])
    text = optimizer_table.report(ns)
    assert "; 12 runs," in text                          # 2 networks x 3 methods x 2 seeds
    assert "fadiff 2.50" in text and "fadiff 4" in text   # CPU-s mean, fused edges (not c's)
    assert "| c |" not in text


def test_evaluation_budget_is_the_same_for_every_method(tmp_path) -> None:
    """--evaluations N: every method's run gets N layer-mapping evaluations, the search half
    of them and the refinement the rest; a --cpu-cap method gets the CPU limit on top."""
    out = tmp_path / "evals.jsonl"
    n = 420                                       # 20 schedules of ResNet18's 21 layers
    assert optimizer_table.main(["--out", str(out), "--configs", "large", "--networks",
                                 "resnet18", "--methods", "random", "ga", "--seeds", "0",
                                 "--evaluations", str(n), "--cpu-cap", "ga=30"]) == 0
    runs = {r["method"]: r for r in optimizer_table.read_runs(out)}
    assert set(runs) == {"random", "ga"}
    layers = 21
    for m, r in runs.items():
        assert r["budget_evaluations"] == n
        assert n // 2 - layers < r["raw_evaluations"] <= n // 2 + layers      # the search
        assert n - layers < r["evaluations"] <= n + layers                   # + refinement
        assert r["search_stopped_by"] == "evaluations"
    assert runs["random"]["budget_cpu_s"] is None and runs["ga"]["budget_cpu_s"] == 30.0
    text = optimizer_table.report(argparse.Namespace(
        out=str(out), configs=["large"], networks=["resnet18"], seeds=[0], tag=None,
        methods_order=None))
    assert "420 layer-mapping evaluations per run (ga capped at 30 CPU-s)" in text
    assert "mean evaluations per run, search / total: random 2" in text


def test_stopped_by_and_caps() -> None:
    from types import SimpleNamespace

    from optimizer.search import Budget

    capped = Budget(evaluations=1000, cpu_seconds=5.0)
    assert optimizer_table._stopped_by(capped, SimpleNamespace(raw_evaluations=495), True) \
        == "evaluations"
    assert optimizer_table._stopped_by(capped, SimpleNamespace(raw_evaluations=300), True) \
        == "cpu_seconds"
    assert optimizer_table._stopped_by(capped, SimpleNamespace(raw_evaluations=950), False) \
        == "evaluations"
    assert optimizer_table._stopped_by(Budget(cpu_seconds=5.0),
                                       SimpleNamespace(raw_evaluations=10), True) == "cpu_seconds"
    assert optimizer_table.parse_caps(["bo=5", "ga=2.5"]) == {"bo": 5.0, "ga": 2.5}
    for bad in (["bo"], ["bo=x"], ["=3"], ["bo=0"]):
        with pytest.raises(SystemExit):
            optimizer_table.parse_caps(bad)


def test_records_of_another_version_are_neither_tabulated_nor_reused(runs_file, capsys) -> None:
    """Records from before 2026-12-08 meant FADiff's archived result by raw_edp and came from
    baselines that could not fuse: they are left out, and said to be."""
    lines = runs_file.read_text().splitlines()
    old = [json.loads(x) for x in lines]
    for r in old:
        r.pop("record")
    runs_file.write_text("".join(json.dumps(r) + "\n" for r in old))
    assert optimizer_table._current(optimizer_table.read_runs(runs_file), runs_file) == []
    assert "of another version left out" in capsys.readouterr().err
