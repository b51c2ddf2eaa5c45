"""Studies refuse Run without a trace, with a plain sentence (issue 16, item 12: it answered
with CLI syntax and a traceback)."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.gui


def test_run_without_a_trace_is_refused_in_plain_words(qtbot, monkeypatch, tmp_path) -> None:
    from gui.views.studies import StudiesView

    v = StudiesView(project=lambda: None)
    qtbot.addWidget(v)
    v.show()
    shown = []
    monkeypatch.setattr(v, "_show_error", lambda msg, det: shown.append((msg, det)))
    monkeypatch.setattr(v, "_results_root", lambda: tmp_path / "studies")
    assert v.traces_table.rowCount() == 0
    qtbot.mouseClick(v.run_button, Qt.MouseButton.LeftButton)
    assert not v.is_running()
    assert len(shown) == 1
    msg, details = shown[0]
    assert msg.startswith("Add a trace first") and details == ""     # no traceback
    assert "--" not in msg and "Traceback" not in msg                # no CLI syntax
    assert v.status_label.text().startswith("No trace")
