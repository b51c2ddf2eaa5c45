"""The DRAM configuration editor: every :data:`engine.config.PARAMETERS` entry as an editable row.

The form is generated from the parameter declarations (no hand-written field list): one table
per section (organisation, timing, power, controller) with columns Parameter / Value / Unit /
Description, and a value editor chosen by the parameter's kind (spin box for numbers with the
declared range, combo box for choices, check box for booleans, line edit for strings; an
optional number gets a "set" check box beside its spin box).

Every edit is validated at once through :meth:`MemoryConfig.replace`: a valid configuration
refreshes the read-only "Derived" panel and is emitted with :attr:`ConfigEditor.config_changed`;
a :class:`ConfigError` highlights the row of the key it names and shows its message.

The edited values are kept exactly as loaded (a float read from a file is not rounded to the
spin box's decimals unless the user edits that field).
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QComboBox, QDoubleSpinBox,
                               QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QHeaderView,
                               QLabel, QLineEdit, QPushButton, QSpinBox, QTableWidget,
                               QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget)

from engine.config import (PARAM_BY_NAME, PARAMETERS, SECTIONS, MemoryConfig, ParamSpec,
                           dump_ini, list_presets, load_config, load_ini, save_preset)
from engine.errors import ConfigError
from gui.theme import ERROR_STYLE, NOTE_STYLE

COLUMNS = ("Parameter", "Value", "Unit", "Description")
ERROR_COLOR = QColor("#f4b4b4")
INI_FILTER = "DRAMsim3 configuration (*.ini);;All files (*)"
TOML_FILTER = "DiffMem preset (*.toml);;All files (*)"
PRESET_PLACEHOLDER = "(choose a preset)"
_INT_MIN, _INT_MAX = -(2 ** 31), 2 ** 31 - 1
_FLOAT_MAX = 1e12
DERIVED = (  # (key, label)
    ("channels", "Channels"),
    ("ranks", "Ranks per channel"),
    ("banks", "Banks per rank"),
    ("burst_cycle", "Burst cycle"),
    ("request_size", "Request size"),
    ("rl_wl", "RL / WL"),
    ("tRC", "tRC"),
    ("capacity", "Capacity"),
    ("page_size", "Page size"),
)


def _derived_texts(cfg: MemoryConfig) -> dict[str, str]:
    """Display text of each derived value of a valid configuration."""
    return {
        "channels": str(cfg.channels),
        "ranks": str(cfg.ranks),
        "banks": str(cfg.banks),
        "burst_cycle": f"{cfg.burst_cycle} tCK",
        "request_size": f"{cfg.request_size_bytes} bytes",
        "rl_wl": f"{cfg.RL} / {cfg.WL} tCK",
        "tRC": f"{cfg.tRC} tCK",
        "capacity": f"{cfg.capacity_bytes / 2 ** 30:g} GiB",
        "page_size": f"{cfg.page_size_bytes} bytes",
    }


class ConfigEditor(QWidget):
    """Edit a :class:`MemoryConfig`; ``config_changed(MemoryConfig)`` after each valid edit."""

    config_changed = Signal(object)
    #: (name, MemoryConfig): "Save to project…" or an .ini import (the window stores it in
    #: the open project, where the simulation view's Memory list offers it)
    store_requested = Signal(str, object)

    def __init__(self, cfg: MemoryConfig | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._base = MemoryConfig()
        self._values: dict[str, Any] = {}
        self._editors: dict[str, QWidget] = {}
        self._rows: dict[str, tuple[QTableWidget, int]] = {}
        self._config: MemoryConfig | None = None
        self._error: ConfigError | None = None
        self._error_key: str | None = None
        self._build()
        self.load(cfg if cfg is not None else MemoryConfig())

    # ---------------------------------------------------------------- layout
    def _build(self) -> None:
        self.preset_combo = QComboBox()
        self.preset_combo.setObjectName("presetCombo")
        self.preset_combo.addItem(PRESET_PLACEHOLDER)
        try:
            self.preset_combo.addItems(list_presets())
        except Exception:  # noqa: BLE001 - the editor must open without the shipped presets
            pass
        self.preset_combo.currentIndexChanged.connect(self._preset_selected)
        self.import_button = QPushButton("Import .ini…")
        self.import_button.setObjectName("importIniButton")
        self.import_button.clicked.connect(self.import_ini)
        self.export_button = QPushButton("Export .ini…")
        self.export_button.setObjectName("exportIniButton")
        self.export_button.clicked.connect(self.export_ini)
        self.save_preset_button = QPushButton("Save preset…")
        self.save_preset_button.setObjectName("savePresetButton")
        self.save_preset_button.clicked.connect(self.save_preset)
        self.save_to_project_button = QPushButton("Save to project…")
        self.save_to_project_button.setObjectName("saveToProjectButton")
        self.save_to_project_button.setToolTip("Store this configuration in the open project "
                                               "under a name; runs can then use it")
        self.save_to_project_button.clicked.connect(lambda: self.save_to_project())
        self.name = ""                      # the project name of what is loaded, if any
        top = QHBoxLayout()
        top.addWidget(QLabel("Preset"))
        top.addWidget(self.preset_combo, 1)
        top.addWidget(self.import_button)
        top.addWidget(self.export_button)
        top.addWidget(self.save_preset_button)
        top.addWidget(self.save_to_project_button)

        self.tabs = QTabWidget()
        self.tables: dict[str, QTableWidget] = {}
        for section in SECTIONS:
            specs = [s for s in PARAMETERS if s.section == section]
            table = QTableWidget(len(specs), len(COLUMNS))
            table.setObjectName(f"{section}Table")
            table.setHorizontalHeaderLabels(list(COLUMNS))
            table.verticalHeader().setVisible(False)
            table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
            table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
            header = table.horizontalHeader()
            header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
            header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
            header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
            header.setStretchLastSection(True)
            for row, spec in enumerate(specs):
                for col, text in ((0, spec.name), (2, spec.unit), (3, spec.doc)):
                    item = QTableWidgetItem(text)
                    item.setFlags(Qt.ItemFlag.ItemIsEnabled)
                    item.setToolTip(spec.doc)
                    table.setItem(row, col, item)
                table.setItem(row, 1, QTableWidgetItem())
                editor = self._make_editor(spec)
                editor.setToolTip(spec.doc)
                table.setCellWidget(row, 1, editor)
                self._editors[spec.name] = editor
                self._rows[spec.name] = (table, row)
            self.tables[section] = table
            self.tabs.addTab(table, section.capitalize())

        self.derived_labels: dict[str, QLabel] = {}
        derived_box = QGroupBox("Derived")
        derived_box.setObjectName("derivedPanel")
        form = QFormLayout(derived_box)
        for key, label in DERIVED:
            value = QLabel("—")
            value.setObjectName(f"derived_{key}")
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.derived_labels[key] = value
            form.addRow(label, value)

        self.error_label = QLabel("")
        self.error_label.setObjectName("configErrorLabel")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet(ERROR_STYLE)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        body = QHBoxLayout()
        body.addWidget(self.tabs, 1)
        body.addWidget(derived_box)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(body, 1)
        layout.addWidget(self.error_label)

    def _make_editor(self, spec: ParamSpec) -> QWidget:
        """A value editor for *spec*; its change signal stores the value and revalidates."""
        name = spec.name
        if spec.choices:
            combo = QComboBox()
            combo.addItems(list(spec.choices))
            combo.currentTextChanged.connect(lambda text, n=name: self._edited(n, text))
            return combo
        if spec.kind == "bool":
            box = QCheckBox()
            box.toggled.connect(lambda on, n=name: self._edited(n, bool(on)))
            return box
        if spec.kind == "int":
            spin = QSpinBox()
            spin.setRange(int(spec.minimum) if spec.minimum is not None else _INT_MIN,
                          int(spec.maximum) if spec.maximum is not None else _INT_MAX)
            spin.valueChanged.connect(lambda v, n=name: self._edited(n, int(v)))
            return spin
        if spec.kind == "float":
            spin = QDoubleSpinBox()
            spin.setDecimals(6)
            spin.setRange(spec.minimum if spec.minimum is not None else -_FLOAT_MAX,
                          spec.maximum if spec.maximum is not None else _FLOAT_MAX)
            spin.setSingleStep(0.1)
            if not spec.optional:
                spin.valueChanged.connect(lambda v, n=name: self._edited(n, float(v)))
                return spin
            holder = QWidget()
            row = QHBoxLayout(holder)
            row.setContentsMargins(0, 0, 0, 0)
            check = QCheckBox("set")
            spin.setEnabled(False)
            row.addWidget(check)
            row.addWidget(spin, 1)
            holder.check, holder.spin = check, spin  # type: ignore[attr-defined]

            def changed(*_: Any, n: str = name) -> None:
                spin.setEnabled(check.isChecked())
                self._edited(n, float(spin.value()) if check.isChecked() else None)
            check.toggled.connect(changed)
            spin.valueChanged.connect(changed)
            return holder
        edit = QLineEdit()
        edit.textChanged.connect(lambda text, n=name: self._edited(n, text))
        return edit

    def _show_value(self, name: str, value: Any) -> None:
        """Put *value* into its editor without triggering an edit."""
        spec = PARAM_BY_NAME[name]
        editor = self._editors[name]
        widgets = [editor]
        if spec.optional and spec.kind == "float":
            widgets = [editor.check, editor.spin]  # type: ignore[attr-defined]
        for w in widgets:
            w.blockSignals(True)
        try:
            if spec.choices:
                editor.setCurrentText(str(value))  # type: ignore[attr-defined]
            elif spec.kind == "bool":
                editor.setChecked(bool(value))  # type: ignore[attr-defined]
            elif spec.kind == "int":
                editor.setValue(int(value))  # type: ignore[attr-defined]
            elif spec.kind == "float" and spec.optional:
                editor.check.setChecked(value is not None)  # type: ignore[attr-defined]
                editor.spin.setEnabled(value is not None)  # type: ignore[attr-defined]
                if value is not None:
                    editor.spin.setValue(float(value))  # type: ignore[attr-defined]
            elif spec.kind == "float":
                editor.setValue(float(value))  # type: ignore[attr-defined]
            else:
                editor.setText(str(value))  # type: ignore[attr-defined]
        finally:
            for w in widgets:
                w.blockSignals(False)

    # ---------------------------------------------------------------- public API
    def load(self, cfg: MemoryConfig) -> None:
        """Show *cfg* (every editor is refilled) and validate it."""
        self._base = cfg
        self._values = {s.name: getattr(cfg, s.name) for s in PARAMETERS}
        for name, value in self._values.items():
            self._show_value(name, value)
        self._revalidate()

    def load_preset(self, name: str) -> None:
        """Load a shipped preset (or any name/path :func:`load_config` accepts)."""
        try:
            cfg = load_config(name)
        except ConfigError as exc:
            self._show_error(exc)
            return
        self.load(cfg)

    def set_value(self, name: str, value: Any) -> None:
        """Set one parameter as if the user had edited it (validates, may emit)."""
        if name not in PARAM_BY_NAME:
            raise KeyError(name)
        self._show_value(name, value)
        self._edited(name, value)

    def value(self, name: str) -> Any:
        """The edited value of parameter *name*."""
        return self._values[name]

    def config(self) -> MemoryConfig:
        """The edited configuration (``replace`` of the loaded one); raises :class:`ConfigError`
        if the edits are invalid."""
        changes = {k: v for k, v in self._values.items() if v != getattr(self._base, k)
                   or type(v) is not type(getattr(self._base, k))}
        return self._base.replace(**changes) if changes else self._base.replace()

    def is_valid(self) -> bool:
        return self._error is None

    def error(self) -> ConfigError | None:
        """The current validation error, None if the edits are valid."""
        return self._error

    def error_key(self) -> str | None:
        """The parameter the current error names (its row is highlighted), or None."""
        return self._error_key

    def row_of(self, name: str) -> tuple[QTableWidget, int]:
        """(table, row) showing parameter *name*."""
        return self._rows[name]

    def is_highlighted(self, name: str) -> bool:
        table, row = self._rows[name]
        return table.item(row, 0).background().color() == ERROR_COLOR

    # ---------------------------------------------------------------- file actions
    def _ask_open_path(self, file_filter: str) -> str:
        path, _ = QFileDialog.getOpenFileName(self, "Import DRAMsim3 configuration", "",
                                              file_filter)
        return path

    def _ask_save_path(self, file_filter: str) -> str:
        path, _ = QFileDialog.getSaveFileName(self, "Save configuration", "", file_filter)
        return path

    def import_ini(self) -> bool:
        path = self._ask_open_path(INI_FILTER)
        if not path:
            return False
        try:
            cfg = load_ini(path)
        except ConfigError as exc:
            self._show_error(exc)
            return False
        self.preset_combo.blockSignals(True)
        self.preset_combo.setCurrentIndex(0)
        self.preset_combo.blockSignals(False)
        self.load(cfg)
        from pathlib import Path
        self.name = Path(path).stem
        self.store_requested.emit(self.name, cfg)       # lands in the open project
        return True

    def _ask_name(self, default: str) -> str | None:
        """The name to store the configuration under (tests monkeypatch this)."""
        from PySide6.QtWidgets import QInputDialog
        text, ok = QInputDialog.getText(self, "Save to project", "Configuration name:",
                                        text=default)
        return text.strip() if ok and text.strip() else None

    def save_to_project(self, name: str | None = None) -> bool:
        """Ask for a name and emit :attr:`store_requested` with the edited configuration."""
        try:
            cfg = self.config()
        except ConfigError as exc:
            self._show_error(exc)
            return False
        name = name or self._ask_name(self.name or cfg.name or "edited")
        if not name:
            return False
        self.name = name
        self.store_requested.emit(name, cfg)
        return True

    def export_ini(self) -> bool:
        return self._write(INI_FILTER, dump_ini)

    def save_preset(self) -> bool:
        return self._write(TOML_FILTER, save_preset)

    def _write(self, file_filter: str, writer: Any) -> bool:
        try:
            cfg = self.config()
        except ConfigError as exc:
            self._show_error(exc)
            return False
        path = self._ask_save_path(file_filter)
        if not path:
            return False
        try:
            writer(cfg, path)
        except OSError as exc:
            self.error_label.setText(f"{path}: cannot write: {exc}")
            return False
        return True

    # ---------------------------------------------------------------- internals
    def _preset_selected(self, index: int) -> None:
        if index > 0:
            self.load_preset(self.preset_combo.itemText(index))
            self.name = self.preset_combo.itemText(index)

    def _edited(self, name: str, value: Any) -> None:
        self._values[name] = value
        self._revalidate()

    def _revalidate(self) -> None:
        try:
            cfg = self.config()
        except ConfigError as exc:
            self._config = None
            self._show_error(exc)
            for label in self.derived_labels.values():
                label.setText("—")
            return
        self._config = cfg
        for name, value in self._values.items():   # e.g. hbm_dual_cmd forced off (not HBM)
            if getattr(cfg, name) != value:
                self._values[name] = getattr(cfg, name)
                self._show_value(name, self._values[name])
        self._error, self._error_key = None, None
        self._highlight(None)
        # valid, but what no device has (tRCD = 0 simulated without a word): said, not refused
        warnings = cfg.warnings
        self.error_label.setStyleSheet(NOTE_STYLE if warnings else ERROR_STYLE)
        self.error_label.setText("\n".join(f"Warning: {w}" for w in warnings))
        for key, text in _derived_texts(cfg).items():
            self.derived_labels[key].setText(text)
        self.config_changed.emit(cfg)

    def _show_error(self, exc: ConfigError) -> None:
        self._error = exc
        self._error_key = exc.key if exc.key in self._rows else None
        self._highlight(self._error_key)
        self.error_label.setStyleSheet(ERROR_STYLE)
        self.error_label.setText(str(exc))
        if self._error_key is not None:
            table, _row = self._rows[self._error_key]
            self.tabs.setCurrentWidget(table)

    def _highlight(self, name: str | None) -> None:
        for key, (table, row) in self._rows.items():
            brush = QBrush(ERROR_COLOR) if key == name else QBrush()
            for col in range(len(COLUMNS)):
                table.item(row, col).setBackground(brush)
            editor = self._editors[key]
            editor.setStyleSheet(f"background-color: {ERROR_COLOR.name()};"
                                 if key == name else "")
