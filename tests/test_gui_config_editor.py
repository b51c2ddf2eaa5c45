"""The configuration editor (gui.views.config_editor), offscreen."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QLineEdit,  # noqa: E402
                               QSpinBox)

from engine.config import (PARAMETERS, SECTIONS, MemoryConfig, list_presets,  # noqa: E402
                           load_config, load_preset)
from gui.views.config_editor import ERROR_COLOR, ConfigEditor  # noqa: E402


@pytest.fixture
def editor(qtbot):
    view = ConfigEditor()
    qtbot.addWidget(view)
    return view


def test_a_row_for_every_parameter(editor):
    assert sum(editor.tables[s].rowCount() for s in SECTIONS) == len(PARAMETERS)
    assert [editor.tabs.tabText(i).lower() for i in range(editor.tabs.count())] == list(SECTIONS)
    for spec in PARAMETERS:
        table, row = editor.row_of(spec.name)
        assert table is editor.tables[spec.section]
        assert table.item(row, 0).text() == spec.name
        assert table.item(row, 2).text() == spec.unit
        assert table.item(row, 3).text() == spec.doc
        widget = table.cellWidget(row, 1)
        expected = (QComboBox if spec.choices else QCheckBox if spec.kind == "bool"
                    else QSpinBox if spec.kind == "int" else QLineEdit if spec.kind == "str"
                    else QDoubleSpinBox)
        if spec.optional:
            assert widget.findChild(QDoubleSpinBox) is not None
        else:
            assert isinstance(widget, expected), spec.name
        if spec.kind == "int" and spec.minimum is not None:
            assert widget.minimum() == spec.minimum
        assert editor.value(spec.name) == getattr(MemoryConfig(), spec.name)
    assert editor.is_valid() and editor.error_label.text() == ""


def test_preset_hbm2(editor, qtbot):
    assert editor.preset_combo.findText("HBM2") > 0
    assert editor.preset_combo.count() == len(list_presets()) + 1
    with qtbot.waitSignal(editor.config_changed) as blocker:
        editor.preset_combo.setCurrentText("HBM2")
    assert editor.value("protocol") == "HBM"
    table, row = editor.row_of("protocol")
    assert table.cellWidget(row, 1).currentText() == "HBM"
    assert editor.config() == load_config("HBM2")
    assert blocker.args[0] == load_config("HBM2")
    assert editor.derived_labels["channels"].text() == "8"
    assert editor.derived_labels["ranks"].text() == "1"
    assert editor.derived_labels["request_size"].text() == "64 bytes"
    assert editor.derived_labels["capacity"].text() == "8 GiB"
    cfg = load_config("HBM2")
    assert editor.derived_labels["tRC"].text() == f"{cfg.tRC} tCK"
    assert editor.derived_labels["rl_wl"].text() == f"{cfg.RL} / {cfg.WL} tCK"


def test_edit_trcd_updates_config_and_emits(editor, qtbot):
    editor.load(load_config("DDR4-3200"))
    old = editor.config().tRCD
    with qtbot.waitSignal(editor.config_changed) as blocker:
        editor.set_value("tRCD", old + 3)
    assert blocker.args[0].tRCD == old + 3
    assert editor.config().tRCD == old + 3
    assert editor.value("tRCD") == old + 3
    # through the spin box itself, as a user would
    table, row = editor.row_of("tRCD")
    with qtbot.waitSignal(editor.config_changed) as blocker:
        table.cellWidget(row, 1).setValue(old + 5)
    assert blocker.args[0].tRCD == old + 5 and editor.config().tRCD == old + 5
    # derived values follow edits
    editor.set_value("tRAS", 40)
    assert editor.derived_labels["tRC"].text() == f"{40 + editor.value('tRP')} tCK"


def test_invalid_rows_highlighted(editor, qtbot):
    emitted = []
    editor.config_changed.connect(emitted.append)
    editor.set_value("rows", 1000)
    assert not emitted
    assert not editor.is_valid() and editor.error_key() == "rows"
    assert "rows" in editor.error_label.text()
    assert editor.is_highlighted("rows")
    table, row = editor.row_of("rows")
    assert table.item(row, 0).background().color() == ERROR_COLOR
    assert not editor.is_highlighted("columns")
    assert editor.derived_labels["ranks"].text() == "—"
    with pytest.raises(Exception, match="rows"):
        editor.config()
    editor.set_value("rows", 1024)
    assert editor.is_valid() and editor.error_label.text() == ""
    assert not editor.is_highlighted("rows")
    assert emitted and emitted[-1].rows == 1024


def test_optional_and_float_values(editor):
    editor.set_value("VDDQ", 1.1)
    assert editor.config().VDDQ == 1.1
    editor.set_value("VDDQ", None)
    assert editor.config().VDDQ is None
    editor.set_value("tCK", 0.625)
    assert editor.config().tCK == 0.625
    editor.set_value("bankgroup_enable", False)
    assert editor.config().bankgroup_enable is False
    editor.set_value("address_mapping", "rochrababgco")
    assert editor.config().address_mapping == "rochrababgco"
    editor.set_value("address_mapping", "nonsense")
    assert editor.error_key() == "address_mapping"


def test_export_import_ini_round_trip(editor, tmp_path: Path, monkeypatch):
    editor.load(load_config("LPDDR4-3200"))
    editor.set_value("tRCD", 33)
    editor.set_value("VDDQ", 0.6)
    before = editor.config()
    path = tmp_path / "edited.ini"
    asked = []
    monkeypatch.setattr(editor, "_ask_save_path", lambda f: asked.append(f) or str(path))
    monkeypatch.setattr(editor, "_ask_open_path", lambda f: asked.append(f) or str(path))
    editor.export_button.click()
    assert path.is_file() and ".ini" in asked[0]
    editor.load(MemoryConfig())
    editor.import_button.click()
    after = editor.config()
    assert after.name == "edited"
    assert after.replace(name=before.name) == before


def test_save_preset_round_trip(editor, tmp_path: Path, monkeypatch):
    editor.load(load_config("GDDR6"))
    editor.set_value("CL", 30)
    path = tmp_path / "mine.toml"
    monkeypatch.setattr(editor, "_ask_save_path", lambda f: str(path))
    editor.save_preset_button.click()
    assert load_preset(path) == editor.config()


def test_cancelled_dialog_and_invalid_export(editor, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(editor, "_ask_save_path", lambda f: "")
    monkeypatch.setattr(editor, "_ask_open_path", lambda f: "")
    assert editor.export_ini() is False and editor.import_ini() is False
    editor.set_value("rows", 1000)
    path = tmp_path / "bad.ini"
    monkeypatch.setattr(editor, "_ask_save_path", lambda f: str(path))
    assert editor.export_ini() is False and not path.exists()
    bad = tmp_path / "broken.ini"
    bad.write_text("[dram_structure]\nrows = many\n")
    monkeypatch.setattr(editor, "_ask_open_path", lambda f: str(bad))
    assert editor.import_ini() is False
    assert "rows" in editor.error_label.text()


def test_a_valid_but_unphysical_value_is_warned_in_the_editor(editor, qtbot):
    """tRCD = 0 and tRP = 1 were accepted and simulated without a word: they stay valid (a
    what-if) but the editor now says what no device has, and the warning goes when fixed."""
    editor.preset_combo.setCurrentText("DDR4-3200")
    assert editor.is_valid() and editor.error_label.text() == ""
    rcd = editor.value("tRCD")
    editor.set_value("tRCD", 0)
    assert editor.is_valid()
    text = editor.error_label.text()
    assert text.startswith("Warning: tRCD = 0 (0 ns) is shorter than any JEDEC device's")
    assert "#a15c00" in editor.error_label.styleSheet()
    editor.set_value("tRCD", rcd)
    assert editor.error_label.text() == ""
