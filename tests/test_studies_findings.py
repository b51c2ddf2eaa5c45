"""Study findings are stated only when supported; report tables fit the PDF page."""
from __future__ import annotations

import math

from engine.studies.catalog import Analysis, Finding, screen_findings
from engine.studies.report import table_lines


def test_findings_without_support_say_no_effect_detected() -> None:
    a = Analysis("t", findings=[
        Finding("x grows by 3 ± 1 %", "slope/x", 3.0, 1.0, "%"),             # CI excludes 0
        Finding("y grows by 1 ± 2 %", "slope/y", 1.0, 2.0, "%"),             # CI includes 0
        Finding("z is -3.54x", "ratio/z", -3.54, math.nan, "x"),             # no interval
        Finding("w is inf", "ratio/w", math.inf, 0.1, "x"),                  # not finite
        Finding("exact change of a deterministic run", "pct/v", -2.0, None, "%"),
        Finding("a sentence without a number"),
    ])
    texts = [f.text for f in screen_findings(a).findings]
    assert texts[0] == "x grows by 3 ± 1 %"
    assert texts[1].startswith("slope/y: no effect detected (estimate 1 %, 95 % CI -2.92 to")
    assert "no effect detected" in texts[2] and "-3.54" in texts[2]
    assert texts[3] == "ratio/w: no effect detected (the estimate is not finite)"
    assert texts[4:] == ["exact change of a deterministic run", "a sentence without a number"]
    assert not any("nan" in t for t in texts)


def test_every_study_screens_its_findings() -> None:
    from engine.studies.catalog import STUDIES
    assert all(getattr(type(s).analyse, "_screened", False) for s in STUDIES.values())


def test_wide_tables_wrap_instead_of_being_cut() -> None:
    cols = ["workload"] + [f"column number {i}" for i in range(12)]
    rows = [["ddpm-256"] + [f"{i * 1.2345:.4f} ± 0.01" for i in range(12)],
            ["resnet50"] + ["a rather long cell that must wrap onto more lines"] * 12]
    lines = table_lines(cols, rows, 100)
    assert max(len(s) for s in lines) <= 100
    text = "\n".join(lines)
    for i in range(12):                       # every column and cell is somewhere
        assert f"column number {i}" in text and f"{i * 1.2345:.4f} ± 0.01" in text
    assert text.count("continued") >= 1 and text.count("resnet50") >= 2
