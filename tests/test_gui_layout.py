"""Layouts from 1280x800 up, and splitters wherever a table or plot grid can be cramped
(issue 16, item 8: the methods table showed two rows at 1920x1080 and could not be enlarged;
the left plot grid was cut off below 1400 px)."""
from __future__ import annotations

import gc

import pytest
from PySide6.QtCore import QCoreApplication, QEvent

pytestmark = pytest.mark.gui


@pytest.fixture
def window(qtbot):
    from gui.app import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1280, 800)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.close()
    w.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    gc.collect()


def test_every_tab_fits_1280x800(window) -> None:
    hint = window.minimumSizeHint()
    assert hint.width() <= 1280 and hint.height() <= 800, hint
    assert window.width() == 1280 and window.height() == 800      # not forced wider
    for i in range(window.views.count()):
        view = window.views.widget(i)
        window.views.setCurrentIndex(i)
        QCoreApplication.processEvents()
        # nothing cut off: the tab's content is no wider than the space it has
        assert view.minimumSizeHint().width() <= window.views.width(), window.views.tabText(i)


def test_methods_table_can_be_enlarged_with_its_splitter(window, qtbot) -> None:
    ov = window.optimizer_view
    window.show_view(ov)
    QCoreApplication.processEvents()
    t = ov.results_table
    rows = t.verticalHeader().defaultSectionSize()
    assert t.height() >= 4 * rows                      # more than two rows to start with
    before = t.height()
    sizes = ov.splitter.sizes()
    ov.splitter.setSizes([sizes[0] - 200, sizes[1] + 200])   # the user drags the handle up
    QCoreApplication.processEvents()
    assert t.height() >= before + 150


def test_comparison_table_and_list_share_a_splitter(window) -> None:
    sv = window.simulation_view
    sp = sv.compare_splitter
    assert sp.widget(0) is sv.compare_list and sp.widget(1) is sv.compare_table
    a, b = sp.sizes()
    sp.setSizes([a - 60, b + 60])
    QCoreApplication.processEvents()
    assert sp.sizes()[1] > b
    assert sv.splitter.widget(0) is sv.plot_widget        # the plot grid beside the panel


@pytest.mark.parametrize("size", [(1920, 1080), (1400, 900), (1280, 800)])
def test_comparison_columns_are_not_cut(window, qtbot, tmp_path, size) -> None:
    """The demo's comparison (this run, hbm2 and its Δ %) shows every column whole at
    1920x1080 and 1400x900 (there only "this run" showed: the cycles with their clock made
    the columns wide); at 1280x800 it takes at most COMPARE_MAX_SHARE of the tab (then
    scrolls)."""
    import shutil
    from pathlib import Path

    from PySide6.QtCore import Qt

    example = Path(__file__).resolve().parents[1] / "projects" / "examples" / \
        "ddr4_vs_hbm2_diffusion.dmproj"
    path = tmp_path / "demo.dmproj"
    shutil.copyfile(example, path)
    window.resize(*size)
    assert window.open_project(str(path))
    assert window.open_item("run", "ddr4-3200")
    sv = window.simulation_view
    window.show_view(sv)
    item = next(sv.compare_list.item(i) for i in range(sv.compare_list.count())
                if sv.compare_list.item(i).text() == "hbm2")
    item.setCheckState(Qt.CheckState.Checked)
    QCoreApplication.processEvents()
    t = sv.compare_table
    headers = [t.horizontalHeaderItem(c).text() for c in range(t.columnCount())]
    assert headers == ["this run", "hbm2", "Δ %"]
    time_row = [t.verticalHeaderItem(r).text() for r in range(t.rowCount())].index("Time")
    assert t.item(time_row, 1).text() == "80.00 µs"               # what the user reads
    needed = sum(t.columnWidth(c) for c in range(t.columnCount()))
    total = sum(sv.splitter.sizes())
    if size[0] >= 1400:
        assert t.viewport().width() >= needed, (t.viewport().width(), needed)
        assert not t.horizontalScrollBar().isVisible()
    assert sv.splitter.sizes()[1] <= sv.COMPARE_MAX_SHARE * total + 1
    window.close_project(ask=False)
