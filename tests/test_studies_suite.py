"""The shared study loop of the benchmark scripts (engine.studies.suite)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("h5py")

from engine.studies import StudySetup  # noqa: E402
from engine.studies.suite import run_suite  # noqa: E402
from engine.studies.synthetic import write_training_step  # noqa: E402


def test_run_suite_writes_reports_and_keeps_other_studies_findings(tmp_path: Path) -> None:
    t = [write_training_step(tmp_path / "d.h5", "syn-diffusion", "diffusion", 8).resolved(),
         write_training_step(tmp_path / "c.h5", "syn-cnn", "cnn", 8).resolved()]
    runs = {"timing": StudySetup(t, config="DDR4-3200", arrival="saturate",
                                 params={"tRCD": [18, 26]}),
            "technology": StudySetup(t, arrival="saturate",
                                     params={"configs": ["DDR4-3200", "HBM2"]})}
    seen = []
    res = run_suite(runs, tmp_path / "out", workers=1, only=["timing"], report=seen.append)
    assert list(res) == ["timing"] and seen == [res["timing"]]
    r = res["timing"]
    assert r.points == 4 and r.ran == 4 and r.failed == 0 and r.findings
    assert (tmp_path / "out" / "timing" / "report.html").is_file()
    res2 = run_suite(runs, tmp_path / "out", workers=1, only=["technology"])
    assert res2["technology"].points == 4 and res2["technology"].failed == 0
    stored = json.loads((tmp_path / "out" / "findings.json").read_text())["findings"]
    assert set(stored) == {"timing", "technology"}
    assert stored["timing"] == r.findings
    # a rerun resumes: nothing simulated again
    again = run_suite(runs, tmp_path / "out", workers=1, only=["timing"])
    assert again["timing"].ran == 0 and again["timing"].reused == 4


def test_a_trace_that_does_not_fit_a_memory_is_announced_and_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    import logging

    import engine.studies.placed as placed
    from engine.config import load_config
    from engine.studies.suite import print_result
    t = [write_training_step(tmp_path / "d.h5", "syn-diffusion", "diffusion", 8).resolved(),
         write_training_step(tmp_path / "c.h5", "syn-cnn", "cnn", 8).resolved()]
    hbm = load_config("HBM2").name
    real = placed.placed_input

    def placed_input(trace, cfg):
        # the diffusion step "needs" more than HBM2 holds; everything else places as usual
        if trace.label == "syn-diffusion" and cfg.name == hbm:
            return "the training step needs 20 GB of device memory but HBM2 holds 8.59 GB"
        return real(trace, cfg)

    monkeypatch.setattr(placed, "placed_input", placed_input)
    runs = {"technology": StudySetup(t, arrival="saturate",
                                     params={"configs": ["DDR4-3200", "HBM2"]})}
    with caplog.at_level(logging.WARNING, logger="engine.studies.run"):
        res = run_suite(runs, tmp_path / "out", workers=1)["technology"]
    # said once, before any point ran, naming the trace, the memory and the reason
    said = [r.getMessage() for r in caplog.records if r.name == "engine.studies.run"]
    assert said == [f"study 'technology': 1 point of trace 'syn-diffusion' on {hbm} cannot "
                    "run: the training step needs 20 GB of device memory but HBM2 holds "
                    "8.59 GB"]
    # the other three points ran; the report counts the failure and gives its reason
    assert (res.points, res.ran, res.failed) == (4, 4, 1)
    assert res.errors == ["1 point: RetargetError: the training step needs 20 GB of device "
                          "memory but HBM2 holds 8.59 GB"]
    print_result(res)
    out = capsys.readouterr().out
    assert "(4 run, 0 reused, 1 failed)" in out
    assert "  failed: 1 point: RetargetError: the training step needs 20 GB" in out
