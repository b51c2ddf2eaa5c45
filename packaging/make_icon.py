"""Render resources/icons/diffmem.svg to diffmem.png (256 px) with Qt's SVG renderer.

    .venv/bin/python packaging/make_icon.py

Run by hand after editing the SVG; both files are committed (the .desktop file and the
window use the PNG; PyInstaller turns it into .ico/.icns on Windows/macOS).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ICONS = Path(__file__).resolve().parents[1] / "resources" / "icons"
SIZE = 256


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(ICONS / "diffmem.svg"))
    if not renderer.isValid():
        print("error: cannot read diffmem.svg", file=sys.stderr)
        return 2
    image = QImage(SIZE, SIZE, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    app.processEvents()
    out = ICONS / "diffmem.png"
    if not image.save(str(out)):
        print(f"error: cannot write {out}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
