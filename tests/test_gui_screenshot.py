"""A screenshot of the main window after a demo run, taken on a virtual X screen (Xvfb) by
docs/screenshot_demo.py, written to build/screenshots/main_window.png (README names it)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "screenshots" / "main_window.png"


@pytest.mark.gui
def test_screenshot_of_main_window_after_demo_run():
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run not installed (install.sh installs the xvfb package)")
    env = dict(os.environ)
    env.pop("QT_QPA_PLATFORM", None)          # a real X server this time, not offscreen
    env["QT_QPA_PLATFORM"] = "xcb"
    if OUT.exists():
        OUT.unlink()
    proc = subprocess.run(
        ["xvfb-run", "-a", "-s", "-screen 0 1400x900x24", sys.executable,
         str(ROOT / "docs" / "screenshot_demo.py"), str(OUT)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from PySide6.QtGui import QImage
    img = QImage(str(OUT))
    assert not img.isNull()
    assert (img.width(), img.height()) == (1400, 900)
    # the plots drew something: many distinct colours, not a blank screen
    colours = {img.pixel(x, y) for x in range(0, img.width(), 7) for y in range(0, img.height(), 7)}
    assert len(colours) > 50


@pytest.mark.gui
def test_screenshots_of_every_tab_in_both_themes(tmp_path):
    """docs/screenshot_tabs.py (what docs/screenshots/ holds, shown in the README): every tab,
    dark and light, at 1280x800 (the README's 1920x1080 set is made the same way)."""
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run not installed (install.sh installs the xvfb package)")
    env = dict(os.environ)
    env["QT_QPA_PLATFORM"] = "xcb"
    proc = subprocess.run(
        ["xvfb-run", "-a", "-s", "-screen 0 1280x800x24", sys.executable,
         str(ROOT / "docs" / "screenshot_tabs.py"), "1280x800", str(tmp_path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from PySide6.QtGui import QImage
    tabs = ("simulation", "energy", "timeline", "optimiser", "studies")
    for theme, ink in (("dark", "#000000"), ("light", "#ffffff")):
        for tab in tabs:
            img = QImage(str(tmp_path / f"{theme}-1280x800-{tab}.png"))
            assert (img.width(), img.height()) == (1280, 800), (theme, tab)
            colours = {img.pixel(x, y) for x in range(0, 1280, 9) for y in range(0, 800, 9)}
            assert len(colours) > 30, (theme, tab)
        # the plot background is the theme's (a point inside the simulation plot grid)
        sim = QImage(str(tmp_path / f"{theme}-1280x800-simulation.png"))
        assert sim.pixelColor(300, 230).name() == ink, theme
