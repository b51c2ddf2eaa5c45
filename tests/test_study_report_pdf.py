"""The PDF report never draws empty boxes: text the PDF's monospace font cannot draw (the seed
document's Chinese quotations where no CJK font is installed) is replaced and said to be."""
from __future__ import annotations

import warnings

from engine.studies.report import MISSING_GLYPHS, _drawable, write_pdf


def test_undrawable_runs_are_replaced_once_per_run_and_announced(tmp_path, monkeypatch):
    from matplotlib import ft2font
    real = ft2font.FT2Font.get_charmap
    # a font without the ideographs, whatever is installed here
    monkeypatch.setattr(ft2font.FT2Font, "get_charmap",
                        lambda self: {k: v for k, v in real(self).items() if k < 0x3000})
    lines = _drawable(["write queue (“降低写队列优先级”) -15 %", "Δ ±1.0 µs"])
    assert lines[0].startswith(f"({MISSING_GLYPHS} marks text")
    assert lines[1] == f"write queue (“{MISSING_GLYPHS}”) -15 %"
    assert lines[2] == "Δ ±1.0 µs"
    assert _drawable(["plain"]) == ["plain"]                      # nothing to announce
    with warnings.catch_warnings():
        warnings.simplefilter("error")                            # no "Glyph missing" warning
        assert write_pdf(tmp_path / "r.pdf", ["“降低”"], []) == 1


def test_a_failed_render_leaves_the_earlier_pdf_and_no_temporary_file(tmp_path, monkeypatch):
    """The PDF goes through a temporary file of a unique name (it was report.pdf.part, the
    same for two processes rendering into one folder, and left behind when a render
    failed): a failure keeps the earlier report and leaves nothing else."""
    import pytest

    from engine.studies import report
    from engine.studies.catalog import FigureSpec
    out = tmp_path / "report.pdf"
    assert write_pdf(out, ["first"], []) == 1
    before = out.read_bytes()

    def broken(spec):
        raise RuntimeError("render failed")
    monkeypatch.setattr(report, "_render", broken)
    spec = FigureSpec.__new__(FigureSpec)
    with pytest.raises(RuntimeError, match="render failed"):
        write_pdf(out, ["second"], [spec])
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.pdf"]
