"""Study findings are stated only when supported; report tables fit the PDF page."""
from __future__ import annotations

import math

import pytest

from engine.studies.catalog import Analysis, Finding, screen_findings
from engine.studies.report import table_lines


def test_findings_without_support_say_no_effect_detected() -> None:
    a = Analysis("t", findings=[
        Finding("x grows by 3 ± 1 %", "slope/x", 3.0, 1.0, "%"),             # CI excludes 0
        Finding("y grows by 1 ± 2 %", "slope/y", 1.0, 2.0, "%"),             # CI includes 0
        Finding("z is -3.54x", "ratio/z", -3.54, math.nan, "x"),             # no interval
        Finding("w is inf", "ratio/w", math.inf, 0.1, "x"),                  # not finite
        Finding("r is 0.76x", "ratio/tRCD", 0.761, 0.419, "x"),             # CI holds 1
        Finding("q is 1.8x", "ratio/tRP", 1.8, 0.2, "x"),                    # CI excludes 1
        Finding("a slope", "rel_time_slope/tRCD/ddpm", 0.2, math.nan, "%/cycle"),
        Finding("exact change of a deterministic run", "pct/v", -2.0, None, "%"),
        Finding("a sentence without a number"),
    ])
    texts = [f.text for f in screen_findings(a).findings]
    assert texts[0] == "x grows by 3 ± 1 %"
    assert texts[1].startswith("slope/y: no effect detected (estimate 1 %, 95 % CI -2.92 to")
    assert texts[1].endswith("which includes 0)")
    # no interval: not tested (it was "no effect detected", which the data cannot say)
    assert texts[2].startswith("z: diffusion/CNN step-time sensitivity ratio: not tested "
                               "(estimate -3.54 x; too few points for an interval")
    assert texts[3] == ("w: diffusion/CNN step-time sensitivity ratio: not tested (the "
                        "estimate is not finite)")
    # a ratio's "no effect" is 1, not 0 (0.761 +- 1.96 x 0.419 holds 1 but not 0)
    assert texts[4] == ("tRCD: diffusion/CNN step-time sensitivity ratio: no effect detected "
                        "(estimate 0.761 x, 95 % CI -0.0602 to 1.58, which includes 1)")
    assert texts[5] == "q is 1.8x"
    # the subject in words, not the finding's key
    assert texts[6].startswith("ddpm: step time per cycle of tRCD: not tested (estimate 0.2")
    assert texts[7:] == ["exact change of a deterministic run", "a sentence without a number"]
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


def test_small_samples_take_student_t_not_the_normal_quantile() -> None:
    """A 3-point sweep's slope has 1 degree of freedom: its 95 % interval is 12.7 standard
    errors wide each side, not 1.96 (the intervals were ~6x too narrow)."""
    from engine.studies import fits
    assert fits.t975(1) == pytest.approx(12.7062, abs=1e-4) and fits.t975(None) == fits.Z95
    # (exact between and above the printed table's rows: 11 df is not 10's, 45 not 1.96)
    assert fits.t975(11) == pytest.approx(2.2010, abs=1e-4)
    assert fits.t975(45) == pytest.approx(2.0141, abs=1e-4)
    assert math.isnan(fits.t975(0))
    f = fits.fit_line([10, 12, 14], [100.0, 103.0, 104.5])
    lo, hi = f.slope_ci95
    assert f.dof == 1 and (hi - f.slope) == pytest.approx(12.7062 * f.slope_se, rel=1e-5)
    # the same estimate and error: an effect with 30 degrees of freedom, none with 2
    many = Finding("x grows", "slope/x", 3.0, 1.0, "%", dof=30)
    few = Finding("x grows", "slope/x", 3.0, 1.0, "%", dof=2)
    texts = [g.text for g in screen_findings(Analysis("t", findings=[many, few])).findings]
    assert texts[0] == "x grows"
    assert texts[1] == ("slope/x: no effect detected (estimate 3 %, 95 % CI -1.3 to 7.3, "
                        "which includes 0)")


def test_a_slope_resting_on_one_variant_is_noted() -> None:
    """Seven variants at ~99 % row hits and one (close page) at 0 %: the energy-vs-hits
    line joins two clusters, which the hotspots analysis now says; an even spread does not."""
    import numpy as np

    from engine.studies import fits
    from engine.studies.catalog import Row, _leverage_note

    def rows(hits, energy):
        return [Row(str(i), {"label": "w"}, {"variant": f"v{i}", "order": i},
                    {"energy_total_pJ": e}) for i, e in enumerate(energy)]

    hits = np.array([99.0, 99.1, 99.05, 98.95, 99.1, 99.0, 99.08, 0.0])
    energy = [100.0, 117.0, 101.0, 99.0, 98.0, 100.5, 99.5, 480.0]
    f = fits.fit_line(hits, energy)
    note = _leverage_note("w", rows(hits, energy), hits, 100.0, f)
    assert note.startswith("w: the energy-vs-row-hit slope rests on the variant 'v7' (row "
                           "hits 0.0 %): without it,")
    even = np.linspace(50, 99, 8)
    line = [400.0 - 3.0 * h + (0.5 if i % 2 else -0.5) for i, h in enumerate(even)]
    assert _leverage_note("w", rows(even, line), even, 100.0, fits.fit_line(even, line)) == ""
