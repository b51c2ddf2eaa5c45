"""The project tree: the open project's configurations, traces and runs.

Rename / Delete / Duplicate (buttons or the context menu) call the :class:`projects.store.Project`
methods and then :meth:`ProjectTreeView.refresh`.  Each goes on :attr:`ProjectTreeView.undo_stack`
(a ``QUndoStack``; the main window's Edit menu has its Undo / Redo actions): a rename is undone
by renaming back, a duplicate by deleting the copy, a delete by putting back an in-memory copy
of what was deleted (``Project.take_out`` / ``put_back``).  Deleting something larger than
:data:`UNDO_MAX_BYTES` (a big embedded trace) is not cheap to undo: the view asks, deletes it
for good and clears the undo history.

Double-clicking a run, or "Open" in its context menu, emits :attr:`ProjectTreeView.open_requested`
(the main window shows the stored run's plots); for a configuration it loads the configuration
editor.  Dialogs go through ``_ask_text``, ``_confirm`` and ``_show_error`` so tests can
monkeypatch them.
"""
from __future__ import annotations

import json
import math
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack
from PySide6.QtWidgets import (QHBoxLayout, QInputDialog, QMenu, QMessageBox, QPushButton,
                               QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget)

KIND_ROLE = Qt.ItemDataRole.UserRole          # "config" | "trace" | "run" on leaf items
NAME_ROLE = Qt.ItemDataRole.UserRole + 1      # the entity's name in the project
SECTIONS = (("config", "Configurations"), ("trace", "Traces"), ("run", "Runs"),
            ("optimizer_run", "Optimiser runs"), ("study", "Studies"))
#: kinds a double-click (or "Open") shows: runs, configurations, optimiser runs, studies
OPENABLE = ("run", "config", "optimizer_run", "study")
UNDO_MAX_BYTES = 64 << 20      # larger entities are deleted without an undo copy


def run_summary_text(summary: dict[str, Any]) -> str:
    """A short summary of a run: simulated time, row-hit rate and average read latency (in
    time, as everywhere in the app: runs of different clocks sit side by side in the tree)."""
    from gui.units import fmt, percent
    parts = []
    try:
        t = float(summary.get("simulated_time_ns",
                              float(summary["num_cycles"]) * float(summary["tCK_ns"])))
        parts.append(fmt(t, "ns"))
    except (KeyError, TypeError, ValueError):
        pass
    try:
        parts.append("row-hit rate " + percent(float(summary["row_hit_rate"])))
    except (KeyError, TypeError, ValueError):
        pass
    try:
        lat = float(summary.get("average_read_latency_ns",
                                float(summary["average_read_latency"])
                                * float(summary["tCK_ns"])))
        parts.append("avg read latency " + fmt(lat, "ns"))
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


class _EditCommand(QUndoCommand):
    """One tree edit: ``do`` was already applied when pushed; undo / redo call the view."""

    def __init__(self, view: "ProjectTreeView", text: str, do, undo) -> None:
        super().__init__(text)
        self._view, self._do, self._undo = view, do, undo
        self._first = True

    def redo(self) -> None:
        if self._first:                   # pushed after the edit succeeded
            self._first = False
            return
        self._view._run_edit(self._do)

    def undo(self) -> None:
        self._view._run_edit(self._undo)


class ProjectTreeView(QWidget):
    """A tree of Configurations / Traces / Runs with Rename, Delete, Duplicate and undo."""

    changed = Signal()          # the project was edited through this view
    open_requested = Signal(str, str)     # kind, name: show this entity (double-click / Open)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._project = None
        self.tree = QTreeWidget()
        self.tree.setObjectName("projectTree")
        self.tree.setHeaderLabels(["Name", "Summary"])
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._context_menu)
        self.tree.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.tree.itemDoubleClicked.connect(lambda item, _col: self._open_item(item))
        self.undo_stack = QUndoStack(self)
        self.undo_stack.setObjectName("projectUndoStack")
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
        self.undo_stack.clear()
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

    def _run_edit(self, fn) -> None:
        """Undo / redo of one edit (errors are shown; the tree is refreshed either way)."""
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - e.g. the name was taken meanwhile
            self._show_error(f"Cannot undo/redo: {exc}")
        self.refresh()
        self.changed.emit()

    def _push(self, text: str, do, undo) -> None:
        self.undo_stack.push(_EditCommand(self, text, do, undo))

    def rename(self, kind: str, name: str, new: str) -> bool:
        """Rename an entity (undoable)."""
        p = self._project
        if not self._apply(p.rename, kind, name, new):
            return False
        self._push(f"Rename {kind} {name} to {new}", lambda: p.rename(kind, name, new),
                   lambda: p.rename(kind, new, name))
        self.select(kind, new)
        return True

    def duplicate(self, kind: str, name: str, new: str) -> bool:
        """Copy an entity under a new name (undoable)."""
        p = self._project
        if not self._apply(p.duplicate, kind, name, new):
            return False
        self._push(f"Duplicate {kind} {name}", lambda: p.duplicate(kind, name, new),
                   lambda: p.delete(kind, new))
        self.select(kind, new)
        return True

    def delete(self, kind: str, name: str) -> bool:
        """Delete an entity (undoable unless it is larger than UNDO_MAX_BYTES)."""
        p = self._project
        try:
            big = p.entity_nbytes(kind, name) > UNDO_MAX_BYTES
        except Exception:  # noqa: BLE001 - let delete() report the problem
            big = False
        if big:
            if not self._confirm(f"Delete {kind}", f"The {kind} '{name}' is too large to keep "
                                 "a copy for undo. Delete it for good (and clear the undo "
                                 "history)?"):
                return False
            ok = self._apply(p.delete, kind, name)
            if ok:
                self.undo_stack.clear()
            return ok
        held: dict[str, Any] = {}

        def take() -> None:
            held["copy"] = p.take_out(kind, name)

        def put() -> None:
            p.put_back(kind, name, held.pop("copy"))

        if not self._apply(take):
            return False
        self._push(f"Delete {kind} {name}", take, put)
        return True

    def rename_selected(self) -> bool:
        sel = self.selected()
        if sel is None or not self._editable():
            return False
        kind, name = sel
        new = self._ask_text(f"Rename {kind}", "New name:", name)
        if not new or new == name:
            return False
        return self.rename(kind, name, new)

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
        return self.duplicate(kind, name, new)

    def delete_selected(self) -> bool:
        sel = self.selected()
        if sel is None or not self._editable():
            return False
        kind, name = sel
        if not self._confirm(f"Delete {kind}", f"Delete the {kind} '{name}' from the project?"
                             " (Edit > Undo brings it back.)"):
            return False
        return self.delete(kind, name)

    def open_selected(self) -> bool:
        """Show the selected run (or load the selected configuration)."""
        sel = self.selected()
        if sel is None or sel[0] not in OPENABLE:
            return False
        self.open_requested.emit(*sel)
        return True

    def _open_item(self, item: QTreeWidgetItem) -> None:
        if item is not None and item.data(0, KIND_ROLE) in OPENABLE:
            self.tree.setCurrentItem(item)
            self.open_selected()

    def _context_menu(self, pos) -> None:
        item = self.tree.itemAt(pos)
        if item is None or item.data(0, KIND_ROLE) is None:
            return
        self.tree.setCurrentItem(item)
        menu = self.context_menu_for(item)
        if not menu.isEmpty():
            menu.exec(self.tree.viewport().mapToGlobal(pos))

    def context_menu_for(self, item: QTreeWidgetItem) -> QMenu:
        """The context menu of a leaf item: Open (runs, configs), Rename, Duplicate, Delete."""
        menu = QMenu(self)
        if item.data(0, KIND_ROLE) in OPENABLE:
            menu.addAction("Open", self.open_selected).setObjectName("actionOpenItem")
        if self._editable():
            menu.addAction("Rename…", self.rename_selected).setObjectName("actionRenameItem")
            menu.addAction("Duplicate…", self.duplicate_selected).setObjectName(
                "actionDuplicateItem")
            menu.addAction("Delete", self.delete_selected).setObjectName("actionDeleteItem")
        return menu
