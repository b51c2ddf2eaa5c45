"""Export of plots: PNG and SVG pictures of a region of a QGraphicsScene, and CSV tables.

Every file is written atomically (a temporary file in the same folder, then ``os.replace``).

SVG is written with Qt's own ``QSvgGenerator`` rather than pyqtgraph's ``SVGExporter``: with
Qt 6.12 that exporter fails on every plot, because Qt now closes rectangle paths with ``Z``
and pyqtgraph 0.14 cannot parse that (pyqtgraph issue #3495).  Curves, bars and text stay
vectors; images (the heatmap) are embedded as pictures.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Callable, Sequence

from PySide6.QtCore import QRectF, QSize
from PySide6.QtGui import QColor, QImage, QPainter

from engine.fileio import atomic_path, atomic_write_text, replace_target

FORMATS = ("png", "svg", "csv")
BACKGROUND = "black"       # the dark theme's; exports use gui.theme.export_theme() (light)


def _export_theme(theme: str | None) -> str | None:
    """The theme an export is drawn in: ``theme``, else the user's export theme (light)."""
    from gui import theme as T
    name = T.export_theme() if theme is None else theme
    return None if name == "shown" else name


def _background(theme: str | None) -> QColor:
    from gui import theme as T
    return QColor(T.get(theme).background if theme else T.get(T.CURRENT[0]).background)


def _atomic(path: Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a temporary file next to ``path`` (with its extension: the
    image writers pick the format by it) and move it onto ``path`` (engine.fileio)."""
    with atomic_path(path, suffix=Path(path).suffix or ".tmp") as tmp:
        write(tmp)
    return replace_target(path)


def render_png(scene: Any, source: QRectF, path: str | Path, scale: float = 2.0,
               theme: str | None = None) -> Path:
    """Paint ``source`` (scene coordinates) into a PNG ``scale`` times its size, in the
    export theme (``theme``: "light", "dark", "shown"; default the user's choice, light)."""
    from gui.theme import plot_theme

    theme = _export_theme(theme)
    w = max(1, int(round(source.width() * scale)))
    h = max(1, int(round(source.height() * scale)))
    image = QImage(w, h, QImage.Format.Format_ARGB32)
    image.fill(_background(theme))
    with plot_theme(scene, theme):
        painter = QPainter(image)
        try:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            scene.render(painter, QRectF(0, 0, w, h), source)
        finally:
            painter.end()

    def write(tmp: Path) -> None:
        if not image.save(str(tmp), "PNG"):
            raise OSError(f"{path}: could not write the PNG")
    return _atomic(Path(path), write)


def render_svg(scene: Any, source: QRectF, path: str | Path, title: str = "",
               theme: str | None = None) -> Path:
    """Paint ``source`` (scene coordinates) into an SVG file of the same size (export theme
    as in :func:`render_png`)."""
    from PySide6.QtSvg import QSvgGenerator

    from gui.theme import plot_theme

    theme = _export_theme(theme)

    w = max(1, int(round(source.width())))
    h = max(1, int(round(source.height())))

    def write(tmp: Path) -> None:
        gen = QSvgGenerator()
        gen.setFileName(str(tmp))
        gen.setSize(QSize(w, h))
        gen.setViewBox(QRectF(0, 0, w, h))
        gen.setTitle(title or Path(path).stem)
        gen.setDescription("DiffMem Studio plot")
        painter = QPainter()
        if not painter.begin(gen):
            raise OSError(f"{path}: could not start the SVG")
        try:
            painter.fillRect(QRectF(0, 0, w, h), _background(theme))
            with plot_theme(scene, theme):
                scene.render(painter, QRectF(0, 0, w, h), source)
        finally:
            painter.end()
        if tmp.stat().st_size == 0:
            raise OSError(f"{path}: the SVG came out empty")
    return _atomic(Path(path), write)


def write_csv(path: str | Path, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> Path:
    """Write a header and rows as CSV."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(header))
    w.writerows(rows)
    atomic_write_text(path, buf.getvalue())
    return Path(path)


def format_for(path: str | Path, fmt: str | None = None) -> str:
    """The export format named by ``fmt`` or by the file's suffix (png, svg or csv)."""
    kind = (fmt or Path(path).suffix.lstrip(".")).lower()
    if kind not in FORMATS:
        raise ValueError(f"{path}: unknown export format {kind!r}; expected one of "
                         f"{', '.join(FORMATS)}")
    return kind
