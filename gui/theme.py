"""Dark and light themes for the window and its plots; exports use the light one by default.

    apply_theme(window, "light")            # View > Theme: Qt palette + every pyqtgraph view
    with plot_theme(scene, "light"):        # a PNG/SVG export in the export theme
        scene.render(...)

A theme is the plot colours (background, axis ink, title and legend text) applied to every
``pyqtgraph.GraphicsView`` below a widget, so plots made before the switch change too; the
widgets keep the desktop's style.  Curves keep their colours in both themes (chosen to read on white and on black).
The chosen theme and the export theme are remembered with QSettings (``view/theme``,
``view/export_theme``); the export theme is "light" unless the user picks "as shown".
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator

THEMES = ("dark", "light")
#: text colours of a message beside a form or figures, in either theme: an error, and a note
#: or warning (valid, but what the user should know: engine.config_physics, a comparison's)
ERROR_STYLE = "color: #b00020;"
NOTE_STYLE = "color: #a15c00;"
DEFAULT_THEME = "dark"
DEFAULT_EXPORT_THEME = "light"          # "light", "dark" or "shown"
CURRENT = [DEFAULT_THEME]               # the theme the window shows now


@dataclass(frozen=True)
class Theme:
    name: str
    background: str       # plot background
    foreground: str       # axis lines, tick labels, titles
    window: str           # Qt window / base colours
    base: str
    text: str
    highlight: str


_THEMES = {
    "dark": Theme("dark", "#000000", "#d0d0d0", "#2b2b2b", "#1e1e1e", "#e6e6e6", "#2f65ca"),
    "light": Theme("light", "#ffffff", "#202020", "#f2f2f2", "#ffffff", "#141414", "#2f65ca"),
}


def get(name: str) -> Theme:
    try:
        return _THEMES[name]
    except KeyError:
        raise ValueError(f"unknown theme {name!r}: expected one of {', '.join(THEMES)}") \
            from None


def _plot_items(scene: Any) -> list[Any]:
    import pyqtgraph as pg
    return [it for it in scene.items() if isinstance(it, pg.PlotItem)]


def _style_scene(scene: Any, theme: Theme) -> None:
    """Axis ink, titles, legends of every plot in a pyqtgraph scene."""
    import pyqtgraph as pg
    for p in _plot_items(scene):
        for name in ("left", "bottom", "right", "top"):
            ax = p.getAxis(name)
            ax.setPen(pg.mkPen(theme.foreground))
            ax.setTextPen(pg.mkPen(theme.foreground))
            if ax.label is not None:
                ax.label.setDefaultTextColor(pg.mkColor(theme.foreground))
        if p.titleLabel is not None and p.titleLabel.text:
            p.titleLabel.setText(p.titleLabel.text, color=theme.foreground)
        legend = getattr(p, "legend", None)
        if legend is not None:
            legend.setLabelTextColor(theme.foreground)
            bg = (255, 255, 255, 200) if theme.name == "light" else (20, 20, 20, 170)
            legend.setBrush(pg.mkBrush(*bg))
            for _sample, label in legend.items:
                label.setText(label.text, color=theme.foreground)
    for it in scene.items():
        if isinstance(it, pg.ColorBarItem):
            for ax in (it.axis,):
                ax.setPen(pg.mkPen(theme.foreground))
                ax.setTextPen(pg.mkPen(theme.foreground))


def _views_of(widget: Any) -> list[Any]:
    import pyqtgraph as pg
    views = widget.findChildren(pg.GraphicsView)
    if isinstance(widget, pg.GraphicsView):
        views.append(widget)
    return views


def apply_plot_theme(widget: Any, name: str) -> None:
    """Restyle every pyqtgraph view under ``widget`` (and new ones: pyqtgraph's defaults)."""
    import pyqtgraph as pg
    theme = get(name)
    CURRENT[0] = name
    pg.setConfigOption("background", theme.background)
    pg.setConfigOption("foreground", theme.foreground)
    for view in _views_of(widget):
        view.setBackground(theme.background)
        _style_scene(view.scene(), theme)
        view.resetCachedContent()          # pyqtgraph caches the background
        view.viewport().repaint()


def palette(name: str) -> Any:
    from PySide6.QtGui import QColor, QPalette
    t = get(name)
    pal = QPalette()
    R = QPalette.ColorRole
    pal.setColor(R.Window, QColor(t.window))
    pal.setColor(R.WindowText, QColor(t.text))
    pal.setColor(R.Base, QColor(t.base))
    pal.setColor(R.AlternateBase, QColor(t.window))
    pal.setColor(R.Text, QColor(t.text))
    pal.setColor(R.Button, QColor(t.window))
    pal.setColor(R.ButtonText, QColor(t.text))
    pal.setColor(R.ToolTipBase, QColor(t.base))
    pal.setColor(R.ToolTipText, QColor(t.text))
    pal.setColor(R.Highlight, QColor(t.highlight))
    pal.setColor(R.HighlightedText, QColor("#ffffff"))
    pal.setColor(R.PlaceholderText, QColor("#808080"))
    return pal


def apply_theme(window: Any, name: str) -> None:
    """Every plot of the window in theme ``name``.  The widgets keep the desktop's own style
    (a half-applied Qt palette looked worse than none); :func:`palette` is there for a
    desktop without one."""
    apply_plot_theme(window, name)
    window.setProperty("theme", name)


@contextlib.contextmanager
def plot_theme(scene: Any, name: str | None) -> Iterator[Theme | None]:
    """Render a scene in theme ``name`` for the duration (None or "shown": as it is)."""
    if name in (None, "shown"):
        yield None
        return
    theme = get(name)
    views = list(scene.views())
    before = [v.backgroundBrush() for v in views]
    shown = get(CURRENT[0])
    for v in views:
        v.setBackground(theme.background)
    _style_scene(scene, theme)
    try:
        yield theme
    finally:
        for v, brush in zip(views, before):
            v.setBackgroundBrush(brush)
        _style_scene(scene, shown)


def export_theme() -> str:
    """The theme exports are drawn in (QSettings ``view/export_theme``; default light)."""
    try:
        from PySide6.QtCore import QSettings
        value = QSettings("DiffMem", "DiffMem Studio").value("view/export_theme",
                                                             DEFAULT_EXPORT_THEME)
        return str(value) if value in (*THEMES, "shown") else DEFAULT_EXPORT_THEME
    except Exception:  # noqa: BLE001 - no settings: the default
        return DEFAULT_EXPORT_THEME


__all__ = ["THEMES", "Theme", "get", "apply_theme", "apply_plot_theme", "plot_theme",
           "export_theme", "palette"]
