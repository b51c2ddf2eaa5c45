"""Application start-up and the main window: central views in tabs, the project dock.

    python main.py            # opens this window (with the demo project, see gui.demo)

Central views live in a QTabWidget (``MainWindow.views``): "Simulation" and "Energy" here;
another view is one call, ``window.add_view(widget, "Optimiser")``.  Edit > Undo / Redo
(Ctrl+Z, Ctrl+Shift+Z) act on the project tree's undo stack.  Double-clicking a stored run
(or "Open" in its context menu) shows its plots without simulating it again.

Keep start-up light: nothing here imports torch or the numba kernels; views that need them
import them when first used (``projects.store`` and h5py are imported on the first project
action).

Projects: File > New / Open / Save / Close work on one :class:`projects.store.Project` at a
time (``MainWindow.project``).  While one is open, every simulation that finishes in the
simulation view is stored in it (its config and trace are added first when missing).  The
window title shows the project name, with "*" while it has unsaved changes.  Dialogs go
through small methods (``_ask_save_path``, ``_ask_open_path``, ``_show_error``,
``_confirm_discard``) so tests can monkeypatch them.
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, Sequence

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QApplication, QDockWidget, QFileDialog, QMainWindow,
                               QMessageBox, QTabWidget, QWidget)

APP_NAME = "DiffMem Studio"
SETTINGS_ORG = "DiffMem"
LAYOUT_VERSION = 1      # bump when docks change, so an old saved layout is ignored
PROJECT_SUFFIX = ".dmproj"
PROJECT_FILTER = f"DiffMem projects (*{PROJECT_SUFFIX} *.h5);;All files (*)"
APP_ICON = Path(__file__).resolve().parents[1] / "resources" / "icons" / "diffmem.png"
REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "README.md"
MAX_RECENT = 8
#: (shortcut, what it does) for Help > Keyboard shortcuts.
SHORTCUTS = (("Ctrl+N", "New project"), ("Ctrl+O", "Open project"), ("Ctrl+S", "Save project"),
             ("Ctrl+Shift+S", "Save project as"), ("Ctrl+W", "Close project"),
             ("Ctrl+Q", "Quit (a running simulation is cancelled)"),
             ("Ctrl+Z / Ctrl+Shift+Z", "Undo / redo a project edit"),
             ("Ctrl+1 … Ctrl+6", "Show a tab"), ("F1", "Documentation"),
             ("Mouse wheel / drag", "Zoom / pan a plot; right-click: plot menu"))


def readable_name(base: str, taken: Sequence[str]) -> str:
    """``"<base> #1"``, ``#2``, … : the first number not yet taken (names users can read in
    the project tree, instead of a timestamp and a hash)."""
    taken = set(taken)
    i = 1
    while f"{base} #{i}" in taken:
        i += 1
    return f"{base} #{i}"


def versions() -> dict[str, str]:
    """Versions of the app and the libraries it runs on (Help > About); nothing heavy is
    imported (package metadata only)."""
    import platform
    from importlib import metadata

    from engine.version import APP_VERSION
    out = {"DiffMem Studio": APP_VERSION, "Python": platform.python_version()}
    try:
        from PySide6 import QtCore
        out["Qt"] = QtCore.qVersion()
    except Exception:  # noqa: BLE001
        pass
    for dist in ("PySide6", "pyqtgraph", "numpy", "numba", "h5py", "torch"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out


def _preset_names() -> list[str]:
    """The engine's shipped DRAM presets (engine.config is light: no numba kernels)."""
    try:
        from engine.config import list_presets
        return list_presets()
    except Exception:  # noqa: BLE001 - the window must open even if the engine is broken
        return []


class MainWindow(QMainWindow):
    """The top-level window: the simulation view, the project dock, the File menu and the
    presets in the status bar."""

    def __init__(self) -> None:
        super().__init__()
        from gui import gc_guard
        gc_guard.install()                # garbage is collected in this thread only (why: there)
        self.project: Any = None          # the open projects.store.Project, or None
        self.setWindowTitle(APP_NAME)
        self.resize(900, 600)

        from gui.views.energy import EnergyView
        from gui.views.simulation import SimulationView   # pyqtgraph; no numba until a run

        self.views = QTabWidget(self)
        self.views.setObjectName("centralViews")
        self.views.setDocumentMode(True)
        self.setCentralWidget(self.views)
        self.simulation_view = SimulationView(self)
        self.simulation_view.setObjectName("simulationView")
        self.add_view(self.simulation_view, "Simulation")
        self.energy_view = EnergyView(self)
        self.energy_view.setObjectName("energyView")
        self.add_view(self.energy_view, "Energy by bank")
        self.simulation_view.record_shown.connect(self.energy_view.set_record)
        from gui.views.timeline import TimelineView     # pyqtgraph; engine on a recording
        self.timeline_view = TimelineView(self)
        self.timeline_view.setObjectName("timelineView")
        self.add_view(self.timeline_view, "Command timeline")
        self.timeline_view.source = lambda: (self.simulation_view.chosen_config()[1],
                                             self.simulation_view.trace_edit.text().strip())
        self.timeline_view.set_link_target(self.simulation_view.plots["bandwidth"],
                                           self.simulation_view.shows_memory)
        from gui.views.optimizer import OptimizerView   # pyqtgraph only; torch on first run

        self.optimizer_view = OptimizerView(self)
        self.optimizer_view.setObjectName("optimizerView")
        self.add_view(self.optimizer_view, "Optimiser")
        self.optimizer_view.result_added.connect(self._on_optimizer_result)
        self.optimizer_view.cosim_finished.connect(self._on_cosim_finished)
        from gui.views.studies import StudiesView   # engine.studies: numpy; no kernels
        self.studies_view = StudiesView(self, project=lambda: self.project)
        self.add_view(self.studies_view, "Studies")
        self.studies_view.study_stored.connect(
            lambda _n: (self.project_tree.refresh(), self._update_title()))

        from gui.views.project_tree import ProjectTreeView   # Qt only

        self.project_tree = ProjectTreeView(self)
        self.project_tree.setObjectName("projectTreeView")
        self.project_tree.changed.connect(self._update_title)
        self.project_tree.changed.connect(self.simulation_view.refresh_runs)
        self.project_tree.changed.connect(self.simulation_view.refresh_configs)
        self.project_tree.open_requested.connect(self.open_item)
        self.project_dock = QDockWidget("Project", self)
        self.project_dock.setObjectName("projectDock")
        self.project_dock.setWidget(self.project_tree)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.project_dock)
        self.simulation_view.run_finished.connect(self._on_run_finished)

        from gui.views.config_editor import ConfigEditor   # engine.config only: no kernels

        self.config_editor = ConfigEditor(parent=self)
        self.config_editor.setObjectName("configEditor")
        self.config_editor.store_requested.connect(self.store_config)
        self.simulation_view.editor_config = self.config_editor.config
        self.config_dock = QDockWidget("Memory configuration", self)
        self.config_dock.setObjectName("configDock")
        # in a scroll area: the editor's tables would otherwise hold the dock (and the project
        # dock tabified with it) at ~490 px, squeezing the plots
        from PySide6.QtWidgets import QScrollArea
        scroll = QScrollArea()
        scroll.setObjectName("configScroll")
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.config_editor)
        self.config_dock.setWidget(scroll)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.config_dock)
        self.tabifyDockWidget(self.project_dock, self.config_dock)
        self.project_dock.raise_()
        self.resizeDocks([self.project_dock], [300], Qt.Orientation.Horizontal)

        file_menu = self.menuBar().addMenu("&File")
        file_menu.setObjectName("fileMenu")
        self.file_menu = file_menu
        self.new_project_action = self._action("&New Project…", "actionNewProject",
                                               self.new_project, QKeySequence.StandardKey.New)
        self.open_project_action = self._action("&Open Project…", "actionOpenProject",
                                                self.open_project, QKeySequence.StandardKey.Open)
        self.save_project_action = self._action("&Save Project", "actionSaveProject",
                                                self.save_project, QKeySequence.StandardKey.Save)
        self.save_as_action = self._action("Save Project &As…", "actionSaveProjectAs",
                                           self.save_project_as, QKeySequence("Ctrl+Shift+S"))
        self.close_project_action = self._action("&Close Project", "actionCloseProject",
                                                 self.close_project, QKeySequence("Ctrl+W"))
        file_menu.addAction(self.new_project_action)
        file_menu.addAction(self.open_project_action)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.setObjectName("recentMenu")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self._fill_recent_menu()
        for a in (self.save_project_action, self.save_as_action, self.close_project_action):
            file_menu.addAction(a)
        file_menu.addSeparator()
        self.quit_action = QAction("&Quit", self)
        self.quit_action.setObjectName("actionQuit")
        self.quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        self.quit_action.triggered.connect(self.close)
        file_menu.addAction(self.quit_action)

        edit_menu = self.menuBar().addMenu("&Edit")
        edit_menu.setObjectName("editMenu")
        self.edit_menu = edit_menu
        stack = self.project_tree.undo_stack
        self.undo_action = stack.createUndoAction(self, "&Undo")
        self.undo_action.setObjectName("actionUndo")
        self.undo_action.setShortcut(QKeySequence("Ctrl+Z"))
        self.redo_action = stack.createRedoAction(self, "&Redo")
        self.redo_action.setObjectName("actionRedo")
        self.redo_action.setShortcuts([QKeySequence("Ctrl+Shift+Z"),
                                       QKeySequence(QKeySequence.StandardKey.Redo)])
        edit_menu.addAction(self.undo_action)
        edit_menu.addAction(self.redo_action)
        self._build_view_menu()
        self._build_help_menu()
        for i in range(self.views.count()):          # Ctrl+1 ... shows a tab
            a = QAction(self)
            a.setShortcut(QKeySequence(f"Ctrl+{i + 1}"))
            a.triggered.connect(lambda _c=False, k=i: self.views.setCurrentIndex(k))
            self.addAction(a)

        presets = _preset_names()
        self.statusBar().showMessage(
            "DRAM presets: " + ", ".join(presets) if presets
            else "No DRAM presets found (resources/presets/dram)")
        self._update_title()

    # ---------------------------------------------------------------- View and Help menus
    def _build_view_menu(self) -> None:
        from PySide6.QtGui import QActionGroup

        from gui import theme as T
        menu = self.menuBar().addMenu("&View")
        menu.setObjectName("viewMenu")
        self.view_menu = menu
        for dock in (self.project_dock, self.config_dock):   # a closed dock comes back here
            action = dock.toggleViewAction()
            action.setObjectName(f"action_{dock.objectName()}")
            menu.addAction(action)
        menu.addSeparator()
        theme_menu = menu.addMenu("&Theme")
        group = QActionGroup(self)
        self.theme_actions: dict[str, QAction] = {}
        for name in T.THEMES:
            a = theme_menu.addAction(name.capitalize())
            a.setObjectName(f"actionTheme_{name}")
            a.setCheckable(True)
            group.addAction(a)
            a.triggered.connect(lambda _c=False, n=name: self.set_theme(n))
            self.theme_actions[name] = a
        export_menu = menu.addMenu("&Export plots in")
        egroup = QActionGroup(self)
        self.export_theme_actions: dict[str, QAction] = {}
        for name, title in (("light", "Light theme (default)"), ("dark", "Dark theme"),
                            ("shown", "The theme shown")):
            a = export_menu.addAction(title)
            a.setObjectName(f"actionExportTheme_{name}")
            a.setCheckable(True)
            egroup.addAction(a)
            a.triggered.connect(lambda _c=False, n=name: self.set_export_theme(n))
            self.export_theme_actions[name] = a
        self.export_theme_actions[T.export_theme()].setChecked(True)
        name = str(self._settings().value("view/theme", T.DEFAULT_THEME))
        self.set_theme(name if name in T.THEMES else T.DEFAULT_THEME, remember=False)

    def set_theme(self, name: str, remember: bool = True) -> None:
        """View > Theme: the window and every plot in the dark or light theme."""
        from gui import theme as T
        T.apply_theme(self, name)
        self.theme_actions[name].setChecked(True)
        if remember:
            self._settings().setValue("view/theme", name)

    def set_export_theme(self, name: str) -> None:
        """View > Export plots in: the theme of PNG/SVG exports ("shown": as on screen)."""
        self._settings().setValue("view/export_theme", name)
        self.export_theme_actions[name].setChecked(True)

    def _build_help_menu(self) -> None:
        menu = self.menuBar().addMenu("&Help")
        menu.setObjectName("helpMenu")
        self.help_menu = menu
        self.docs_action = self._action("&Documentation", "actionDocs", self.show_docs,
                                        QKeySequence.StandardKey.HelpContents)
        self.shortcuts_action = self._action("&Keyboard Shortcuts", "actionShortcuts",
                                             self.show_shortcuts)
        self.about_action = self._action("&About DiffMem Studio", "actionAbout", self.show_about)
        for a in (self.docs_action, self.shortcuts_action, self.about_action):
            menu.addAction(a)

    def about_text(self) -> str:
        rows = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>" for k, v in versions().items())
        return (f"<h3>{APP_NAME}</h3><p>DRAM simulation (DRAMsim3-exact), DL training traces "
                f"and Gemmini schedule optimisation.</p><table>{rows}</table>")

    def show_about(self) -> str:
        text = self.about_text()
        self._show_info("About " + APP_NAME, text)
        return text

    def shortcuts_text(self) -> str:
        rows = "".join(f"<tr><td><b>{k}</b></td><td>{v}</td></tr>" for k, v in SHORTCUTS)
        return f"<table>{rows}</table>"

    def show_shortcuts(self) -> str:
        text = self.shortcuts_text()
        self._show_info("Keyboard shortcuts", text)
        return text

    def show_docs(self) -> str:
        """Help > Documentation: the README (the walk-through and every tab) in a browser."""
        from PySide6.QtCore import QUrl
        url = QUrl.fromLocalFile(str(DOCS)).toString()
        self._open_url(url)
        return url

    def _show_info(self, title: str, text: str) -> None:
        QMessageBox.about(self, title, text)

    def _open_url(self, url: str) -> None:
        from PySide6.QtCore import QUrl
        from PySide6.QtGui import QDesktopServices
        QDesktopServices.openUrl(QUrl(url))

    # ---------------------------------------------------------------- recent files
    def recent_files(self) -> list[str]:
        value = self._settings().value("recent/files", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _remember_recent(self, path: str | Path) -> None:
        p = str(Path(path).absolute())
        files = [p] + [f for f in self.recent_files() if f != p]
        self._settings().setValue("recent/files", files[:MAX_RECENT])
        self._fill_recent_menu()

    def _fill_recent_menu(self) -> None:
        menu = self.recent_menu
        menu.clear()
        files = self.recent_files()
        for i, f in enumerate(files):
            a = menu.addAction(f"&{i + 1} {Path(f).name}")
            a.setObjectName(f"actionRecent_{i}")
            a.setToolTip(f)
            a.setData(f)
            a.triggered.connect(lambda _c=False, path=f: self.open_project(path))
        if not files:
            a = menu.addAction("No recent projects")
            a.setEnabled(False)
        else:
            menu.addSeparator()
            clear = menu.addAction("Clear list")
            clear.triggered.connect(lambda: (self._settings().setValue("recent/files", []),
                                             self._fill_recent_menu()))

    def add_view(self, widget: QWidget, title: str) -> int:
        """Add a central view as a tab; returns its index."""
        return self.views.addTab(widget, title)

    def show_view(self, widget: QWidget) -> None:
        self.views.setCurrentWidget(widget)

    def _action(self, text: str, name: str, slot, shortcut=None) -> QAction:
        action = QAction(text, self)
        action.setObjectName(name)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(lambda _checked=False: slot())
        return action

    # ---------------------------------------------------------------- dialogs (monkeypatched)
    def _ask_save_path(self) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, "New project", "", PROJECT_FILTER)
        return path or None

    def _ask_open_path(self) -> str | None:
        path, _ = QFileDialog.getOpenFileName(self, "Open project", "", PROJECT_FILTER)
        return path or None

    def _show_error(self, msg: str) -> None:
        QMessageBox.critical(self, APP_NAME, msg)

    def _confirm_discard(self) -> bool:
        """Ask whether the open project's unsaved changes may be discarded."""
        name = Path(self.project.path).name if self.project is not None else "the project"
        answer = QMessageBox.question(
            self, APP_NAME, f"{name} has unsaved changes. Discard them?",
            QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel)
        return answer == QMessageBox.StandardButton.Discard

    # ---------------------------------------------------------------- project actions
    def _update_title(self) -> None:
        p = self.project
        if p is None:
            self.setWindowTitle(APP_NAME)
        else:
            star = "*" if getattr(p, "modified", False) else ""
            self.setWindowTitle(f"{Path(p.path).stem}{star} — {APP_NAME}")
        has = p is not None
        for a in ("save_project_action", "save_as_action", "close_project_action"):
            if hasattr(self, a):
                getattr(self, a).setEnabled(has)

    def _set_project(self, project: Any) -> None:
        self.project = project
        self.project_tree.set_project(project)
        self.simulation_view.set_project(project)
        self._load_stored_optimizer_runs(project)
        self.optimizer_view.refresh_memories(project)
        self._update_title()

    def _load_stored_optimizer_runs(self, project: Any) -> None:
        """The optimiser tab lists the project's stored runs (after a restart too)."""
        view = self.optimizer_view
        if view.is_running():
            return
        view.clear_results()
        if project is None:
            return
        for rid in project.optimizer_runs():
            try:
                view.show_stored(project.load_optimizer_run(rid), select=False)
            except Exception as exc:  # noqa: BLE001 - a corrupt entry is skipped, and said
                view.status_label.setText(f"Stored optimiser run '{rid}' unreadable: {exc}")

    def open_item(self, kind: str, name: str) -> bool:
        """Show a stored run's plots (read from the project, not simulated again), or load
        a stored configuration into the editor."""
        project = self.project
        if project is None:
            return False
        try:
            if kind == "run":
                if self.simulation_view.is_running():
                    self._show_error("A simulation is running: cancel it or wait for it to "
                                     "finish before opening a stored run.")
                    return False
                from gui.run_data import RunRecord
                self.simulation_view.show_record(RunRecord.from_project(project, name))
                self.show_view(self.simulation_view)
                return True
            if kind == "config":
                self.config_editor.load(project.get_config(name))
                self.config_dock.show()
                self.config_dock.raise_()
                return True
            if kind == "optimizer_run":
                if self.optimizer_view.is_running():
                    self._show_error("The optimiser is running: cancel it or wait for it to "
                                     "finish before opening a stored run.")
                    return False
                self.optimizer_view.show_stored(project.load_optimizer_run(name))
                self.show_view(self.optimizer_view)
                return True
            if kind == "study":
                if self.studies_view.is_running():
                    self._show_error("A study is running: cancel it or wait for it to finish "
                                     "before opening a stored study.")
                    return False
                self.studies_view.show_stored(name)
                self.show_view(self.studies_view)
                return True
        except Exception as exc:  # noqa: BLE001 - a corrupt entry: shown to the user
            self._show_error(f"Cannot open {kind} '{name}': {exc}")
        return False

    def new_project(self) -> bool:
        """File > New Project…: create a project file and make it the open project."""
        if not self.close_project():
            return False
        path = self._ask_save_path()
        if not path:
            return False
        p = Path(path)
        if not p.suffix:
            p = p.with_suffix(PROJECT_SUFFIX)
        from projects.store import Project
        try:
            project = Project.create(p)
        except Exception as exc:  # noqa: BLE001 - ProjectError, OSError: shown to the user
            self._show_error(f"Cannot create project {p}: {exc}")
            return False
        self._set_project(project)
        self._remember_recent(p)
        return True

    def open_project(self, path: str | None = None) -> bool:
        """File > Open Project…: open a project file (errors are shown, never raised).

        The open project stays open until the new one has opened: a file that fails to open
        leaves the window as it was."""
        path = path or self._ask_open_path()
        if not path:
            return False
        current = self.project
        if current is not None:
            try:
                if Path(path).resolve() == Path(current.path).resolve():
                    return True                       # already the open project
            except OSError:
                pass
            if getattr(current, "modified", False) and not self._confirm_discard():
                return False
        from projects.store import Project, ProjectInUse
        try:
            project = Project.open(path)
        except ProjectInUse as exc:
            self._show_error(f"Cannot open {path}: it is in use. {exc}")
            return False
        except Exception as exc:  # noqa: BLE001 - ProjectError, OSError: shown to the user
            msg = str(exc)
            if str(Path(path).name) not in msg:
                msg = f"{path}: {msg}"
            self._show_error(f"Cannot open project: {msg}")
            return False
        if current is not None:
            self.close_project(ask=False)
        self._set_project(project)
        self._remember_recent(path)
        return True

    def save_project(self) -> bool:
        if self.project is None:
            return False
        try:
            self.project.save()
        except Exception as exc:  # noqa: BLE001 - shown to the user
            self._show_error(f"Cannot save project: {exc}")
            return False
        finally:
            self._update_title()
        return True

    def _ask_save_as_path(self) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, "Save project as", "", PROJECT_FILTER)
        return path or None

    def save_project_as(self, path: str | None = None) -> bool:
        """File > Save Project As…: write the open project (with its unsaved changes) to a
        new file and continue in that file; the old file stays as it was last saved."""
        project = self.project
        if project is None:
            return False
        path = path or self._ask_save_as_path()
        if not path:
            return False
        target = Path(path)
        if not target.suffix:
            target = target.with_suffix(PROJECT_SUFFIX)
        if target.exists() and target.resolve() == Path(project.path).resolve():
            return self.save_project()
        try:
            new, moved_out = project.save_as(target)
        except Exception as exc:  # noqa: BLE001 - shown; the open project stays open
            self._show_error(f"Cannot save the project as {target}: {exc}")
            return False
        self.close_project(ask=False)
        self._set_project(new)
        self._remember_recent(target)
        if moved_out:
            self.statusBar().showMessage(
                f"Saved as {target}. Trace(s) {', '.join(moved_out)} stay where they are, "
                f"outside the new project's folder: they are referred to by absolute path "
                f"(opening this project again asks before reading them).", 15000)
        return True

    def close_project(self, *, ask: bool = True) -> bool:
        """Close the open project (asks before discarding unsaved changes); True when none
        is open afterwards.  The lock is always released when it closes."""
        project = self.project
        if project is None:
            return True
        if ask and getattr(project, "modified", False) and not self._confirm_discard():
            return False
        self._set_project(None)
        try:
            project.close()
        except Exception as exc:  # noqa: BLE001 - shown; the project is gone either way
            self._show_error(f"Error while closing {project.path}: {exc}")
        return True

    # ---------------------------------------------------------------- runs into the project
    def _on_optimizer_result(self, outcome: Any) -> None:
        """Store a finished optimiser run in the open project (settings, schedule, curves)."""
        project = self.project
        if project is None or getattr(project, "closed", False) or getattr(
                project, "readonly", False):
            return
        settings = {"network": outcome.network, "hardware": outcome.hardware,
                    "method": outcome.method, "seed": outcome.seed,
                    "wall_s": outcome.wall_s, "evaluations": outcome.evaluations}
        try:
            name = readable_name(f"{outcome.method} {outcome.network} on {outcome.hardware}",
                                 project.optimizer_runs())
            outcome.run_id = project.add_optimizer_run(name, settings, outcome.schedule,
                                                       outcome.history)
        except Exception as exc:  # noqa: BLE001 - the result stays in the view
            self._show_error(f"Cannot store the optimiser run in the project: {exc}")
        self.project_tree.refresh()
        self._update_title()

    def store_config(self, name: str, cfg: Any) -> bool:
        """Store a configuration from the editor (or an .ini import) in the open project under
        ``name`` (replacing one of that name) and offer it in the Memory list."""
        project = self.project
        if project is None or getattr(project, "readonly", False):
            self.statusBar().showMessage(
                f"Configuration '{name}' not stored: open or create a project first", 8000)
            return False
        try:
            project.add_config(name, cfg, replace=name in project.configs())
        except Exception as exc:  # noqa: BLE001 - ProjectError: shown to the user
            self._show_error(f"Cannot store configuration '{name}': {exc}")
            return False
        self.project_tree.refresh()
        self.simulation_view.refresh_configs()
        self.simulation_view.select_config(name)
        self.optimizer_view.refresh_memories(project)
        self.statusBar().showMessage(f"Configuration '{name}' stored in the project", 5000)
        self._update_title()
        return True

    def _on_cosim_finished(self, payload: dict) -> None:
        """Keep a finished co-simulation with its optimiser run in the open project (the run
        is written again with the co-simulation in its settings; same name)."""
        project = self.project
        outcome = self.optimizer_view.shown
        rid = getattr(outcome, "run_id", None)
        if project is None or getattr(project, "readonly", False) or rid is None \
                or rid not in project.optimizer_runs():
            return
        from gui.cosim_process import storable_payload
        try:
            data = project.load_optimizer_run(rid)
            settings = dict(data.get("settings", {}))
            settings["cosim"] = storable_payload(payload)
            history = [dict(zip(data["history"], vals))
                       for vals in zip(*data["history"].values())] if data["history"] else []
            project.delete("optimizer_run", rid)
            project.add_optimizer_run(rid, settings, data["schedule"], history)
        except Exception as exc:  # noqa: BLE001 - the co-simulation stays on screen
            self._show_error(f"Cannot store the co-simulation with '{rid}': {exc}")
            return
        self.project_tree.refresh()
        self._update_title()

    def _on_run_finished(self, stats: Any) -> None:
        """Store a finished simulation in the open project (config, trace, run)."""
        project = self.project
        if project is None or getattr(project, "closed", False) or getattr(
                project, "readonly", False):
            return
        view = self.simulation_view
        # the inputs stay as they were for the run
        cfg_name, cfg, where = getattr(view, "run_config", (view.config_combo.currentText(),
                                                            None, "preset"))
        trace_path = Path(view.trace_edit.text().strip()).absolute()
        epoch = int(view.epoch_spin.value())
        try:
            if where == "editor":           # unsaved edits: stored under a name of their own
                cfg_name = readable_name(f"{cfg_name} edited", project.configs())
                project.add_config(cfg_name, cfg)
            elif cfg_name not in project.configs():
                if cfg is None:
                    from engine.config import load_config
                    cfg = load_config(cfg_name)
                project.add_config(cfg_name, cfg)
            trace_name = self._trace_name(project, trace_path)
            if trace_name not in project.traces():
                project.add_trace(trace_name, trace_path, embed=False,
                                  allow_external=True)   # the file the user chose
            run_id = project.add_run(readable_name(f"{cfg_name} on {trace_name}",
                                                   project.runs()),
                                     cfg_name, trace_name, {"epoch": epoch}, stats)
        except Exception as exc:  # noqa: BLE001 - the run is not lost from the view
            self._show_error(f"Cannot store the run in the project: {exc}")
            run_id = None
        self.project_tree.refresh()
        self.simulation_view.refresh_runs()
        self.simulation_view.refresh_configs()
        if run_id is not None:
            self.project_tree.select("run", run_id)
            if view.record is not None:
                view.record.run_id = run_id
        self._update_title()

    @staticmethod
    def _trace_name(project: Any, path: Path) -> str:
        """The project trace for ``path``: one already referring to it, else a free name
        based on the file's stem."""
        names = project.traces()
        for name in names:
            try:
                if Path(project.trace_info(name)["source"]) == path:
                    return name
            except Exception:  # noqa: BLE001 - a corrupt entry is skipped
                continue
        name, i = path.stem or "trace", 2
        while name in names:
            name, i = f"{path.stem}-{i}", i + 1
        return name

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt override
        project = self.project
        if project is not None and getattr(project, "modified", False) \
                and not self._confirm_discard():
            event.ignore()
            return
        self.simulation_view.shutdown()
        self.timeline_view.shutdown()
        self.optimizer_view.shutdown()
        self.studies_view.shutdown()
        self.close_project(ask=False)
        self.save_layout()
        super().closeEvent(event)

    # ---- window layout (QSettings, not the project file) --------------------------------
    def _settings(self):
        from PySide6.QtCore import QSettings
        return QSettings(SETTINGS_ORG, APP_NAME)

    def save_layout(self) -> None:
        """Remember the window geometry and the dock arrangement for the next start."""
        settings = self._settings()
        settings.setValue("window/geometry", self.saveGeometry())
        settings.setValue("window/state", self.saveState(LAYOUT_VERSION))
        settings.sync()

    def restore_layout(self) -> bool:
        """Restore what save_layout() stored; False when there was nothing (first start)."""
        settings = self._settings()
        geometry = settings.value("window/geometry")
        state = settings.value("window/state")
        if geometry is None or state is None:
            return False
        return bool(self.restoreGeometry(geometry)) and bool(self.restoreState(state,
                                                                              LAYOUT_VERSION))


def main(argv: Sequence[str] | None = None, *, demo: bool = True) -> int:
    """Create the QApplication (or reuse one), show the main window (with the demo project
    open, see :mod:`gui.demo`, unless ``demo`` is false), run the event loop."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(list(sys.argv if argv is None else argv) or [APP_NAME])
    app.setApplicationName(APP_NAME)
    from engine.version import APP_VERSION

    app.setApplicationVersion(APP_VERSION)
    app.setDesktopFileName("diffmem")        # matches packaging/diffmem.desktop
    if APP_ICON.is_file():
        from PySide6.QtGui import QIcon
        app.setWindowIcon(QIcon(str(APP_ICON)))
    window = MainWindow()
    restored = window.restore_layout()
    window.show()
    if not restored:                  # first start: a sensible size, a narrow project dock
        window.resize(1400, 900)
        window.resizeDocks([window.project_dock], [300], Qt.Orientation.Horizontal)
    if demo:
        from gui.demo import open_demo
        open_demo(window)
    import signal
    before = signal.getsignal(signal.SIGINT)
    interrupted = _close_on_ctrl_c(window)
    try:
        code = int(app.exec())
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, before)
    return 130 if interrupted.is_set() and code == 0 else code


def _close_on_ctrl_c(window: QMainWindow) -> threading.Event:
    """A Ctrl-C in the terminal closes the window as its close button does (runs stop, an
    unsaved project is asked about), and the process then ends with 130. Without this the
    KeyboardInterrupt surfaced in whichever Qt callback ran Python next: a traceback, and
    the window went on. Python runs a signal handler only between its own bytecodes, so a
    timer gives it a turn while Qt waits for events. Returns the event set when a Ctrl-C
    closed the window (not when the user kept it)."""
    import signal
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        return interrupted

    def close() -> None:
        # (the user may keep the window: an unsaved project's question answered "no")
        if window.close():
            interrupted.set()

    def handler(signum: int, frame: Any) -> None:
        QTimer.singleShot(0, close)
    signal.signal(signal.SIGINT, handler)
    tick = QTimer(window)
    tick.timeout.connect(lambda: None)
    tick.start(200)
    return interrupted


if __name__ == "__main__":
    sys.exit(main())
