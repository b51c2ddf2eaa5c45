"""The project tree: the open project's configurations, traces and runs.

Rename / Delete / Duplicate (buttons or the context menu) call the :class:`projects.store.Project`
methods and then :meth:`ProjectTreeView.refresh`.  Dialogs go through ``_ask_text`` and
``_show_error`` so tests can monkeypatch them.
"""
from __future__ import annotations

import json
import math
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QHBoxLayout, QInputDialog, QMenu, QMessageBox, QPushButton,
                               QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

KIND_ROLE = Qt.ItemDataRole.UserRole          # "config" | "trace" | "run" on leaf items
NAME_ROLE = Qt.ItemDataRole.UserRole + 1      # the entity's name in the project
SECTIONS = (("config", "Configurations"), ("trace", "Traces"), ("run", "Runs"))


def run_summary_text(summary: dict[str, Any]) -> str:
    """A short summary of a run: row-hit rate and average read latency."""
    parts = []
    try:
        rate = float(summary["row_hit_rate"])
        parts.append("row-hit rate " + ("n/a" if math.isnan(rate) else f"{100.0 * rate:.1f} %"))
    except (KeyError, TypeError, ValueError):
        pass
    try:
        lat = float(summary["average_read_latency"])
        parts.append("avg read latency " + ("n/a" if math.isnan(lat) else f"{lat:.1f} cycles"))
    except (KeyError, TypeError, ValueError):
        pass
    return " · ".join(parts)


def _run_summary(project: Any, run_id: str) -> dict[str, Any]:
    """The run's summary dict, read from its attributes only (not its epochs and arrays)."""
    try:
        from projects import schema as S
        raw = project.h5[S.RUNS][run_id].attrs.get(S.RUN_SUMMARY)
        return json.loads(S.attr_str(raw)) if raw is not None else {}
    except Exception:  # noqa: BLE001 - fall back on the public (heavier) API
        try:
            return dict(project.load_run(run_id).get("summary", {}))
        except Exception:  # noqa: BLE001 - a corrupt run shows without a summary
            return {}


class ProjectTreeView(QWidget):
    """A tree of Configurations / Traces / Runs with Rename, Delete and Duplicate."""

    changed = Signal()          # the project was edited through this view

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._project = None
        self.tree = QTreeWidget()
        self.tree.setObjectName("projectTree")
        self.tree.setHeaderLabels(["Name", "Summary"])
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._context_menu)
        self.tree.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.rename_button = QPushButton("Rename…")
        self.rename_button.setObjectName("renameButton")
        self.rename_button.clicked.connect(self.rename_selected)
        self.duplicate_button = QPushButton("Duplicate…")
        self.duplicate_button.setObjectName("duplicateButton")
        self.duplicate_button.clicked.connect(self.duplicate_selected)
        self.delete_button = QPushButton("Delete")
        self.delete_button.setObjectName("deleteButton")
        self.delete_button.clicked.connect(self.delete_selected)
        buttons = QHBoxLayout()
        for b in (self.rename_button, self.duplicate_button, self.delete_button):
            buttons.addWidget(b)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.tree, 1)
        lay.addLayout(buttons)
        self.sections: dict[str, QTreeWidgetItem] = {}
        self.refresh()

    # ---------------------------------------------------------------- model
    def project(self):
        return self._project

    def set_project(self, project: Any | None) -> None:
        self._project = project
        self.refresh()

    def refresh(self) -> None:
        """Rebuild the tree from the project (keeps the selected item when it still exists)."""
        current = self.selected()
        self.tree.clear()
        self.sections = {}
        p = self._project
        if p is None or getattr(p, "closed", False):
            self._update_buttons()
            return
        for kind, title in SECTIONS:
            names = p.runs() if kind == "run" else p.names(kind)
            top = QTreeWidgetItem([f"{title} ({len(names)})", ""])
            top.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.tree.addTopLevelItem(top)
            self.sections[kind] = top
            for name in names:
                summary = run_summary_text(_run_summary(p, name)) if kind == "run" else ""
                item = QTreeWidgetItem([name, summary])
                item.setData(0, KIND_ROLE, kind)
                item.setData(0, NAME_ROLE, name)
                top.addChild(item)
                if current == (kind, name):
                    self.tree.setCurrentItem(item)
            top.setExpanded(True)
        self.tree.resizeColumnToContents(0)
        self._update_buttons()

    def items(self, kind: str) -> list[QTreeWidgetItem]:
        """The leaf items of one section ("config", "trace" or "run")."""
        top = self.sections.get(kind)
        return [] if top is None else [top.child(i) for i in range(top.childCount())]

    def names(self, kind: str) -> list[str]:
        return [it.data(0, NAME_ROLE) for it in self.items(kind)]

    def select(self, kind: str, name: str) -> bool:
        for it in self.items(kind):
            if it.data(0, NAME_ROLE) == name:
                self.tree.setCurrentItem(it)
                return True
        return False

    def selected(self) -> tuple[str, str] | None:
        it = self.tree.currentItem() if hasattr(self, "tree") else None
        if it is None or it.data(0, KIND_ROLE) is None:
            return None
        return it.data(0, KIND_ROLE), it.data(0, NAME_ROLE)

    def _editable(self) -> bool:
        p = self._project
        return p is not None and not getattr(p, "closed", False) and not getattr(
            p, "readonly", False)

    def _update_buttons(self) -> None:
        ok = self._editable() and self.selected() is not None
        for b in (self.rename_button, self.duplicate_button, self.delete_button):
            b.setEnabled(ok)

    # ---------------------------------------------------------------- actions
    def _ask_text(self, title: str, label: str, default: str) -> str | None:
        """A one-line text dialog; None when cancelled (tests monkeypatch this)."""
        text, ok = QInputDialog.getText(self, title, label, text=default)
        return text if ok else None

    def _confirm(self, title: str, text: str) -> bool:
        """A Yes/No question (tests monkeypatch this)."""
        return QMessageBox.question(self, title, text) == QMessageBox.StandardButton.Yes

    def _show_error(self, msg: str) -> None:
        QMessageBox.critical(self, "Project", msg)

    def _apply(self, fn, *args) -> bool:
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001 - ProjectError and friends, shown to the user
            self._show_error(str(exc))
            return False
        self.refresh()
        self.changed.emit()
        return True

    def rename_selected(self) -> bool:
        sel = self.selected()
        if sel is None or not self._editable():
            return False
        kind, name = sel
        new = self._ask_text(f"Rename {kind}", "New name:", name)
        if not new or new == name:
            return False
        ok = self._apply(self._project.rename, kind, name, new)
        if ok:
            self.select(kind, new)
        return ok

    def duplicate_selected(self) -> bool:
        sel = self.selected()
        if sel is None or not self._editable():
            return False
        kind, name = sel
        existing = set(self._project.names(kind))
        default, i = f"{name} copy", 2
        while default in existing:
            default, i = f"{name} copy {i}", i + 1
        new = self._ask_text(f"Duplicate {kind}", "Name of the copy:", default)
        if not new:
            return False
        ok = self._apply(self._project.duplicate, kind, name, new)
        if ok:
            self.select(kind, new)
        return ok

    def delete_selected(self) -> bool:
        sel = self.selected()
        if sel is None or not self._editable():
            return False
        kind, name = sel
        if not self._confirm(f"Delete {kind}", f"Delete the {kind} '{name}' from the project?"):
            return False
        return self._apply(self._project.delete, kind, name)

    def _context_menu(self, pos) -> None:
        item = self.tree.itemAt(pos)
        if item is None or item.data(0, KIND_ROLE) is None or not self._editable():
            return
        self.tree.setCurrentItem(item)
        menu = QMenu(self)
        menu.addAction("Rename…", self.rename_selected)
        menu.addAction("Duplicate…", self.duplicate_selected)
        menu.addAction("Delete", self.delete_selected)
        menu.exec(self.tree.viewport().mapToGlobal(pos))
