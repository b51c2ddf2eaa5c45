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
