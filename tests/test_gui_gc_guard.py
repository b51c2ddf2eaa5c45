"""Garbage is collected in the GUI thread only while the window is up (gui.gc_guard): a
cycle dropped by the GUI is never collected by a background thread's allocations (that
destroyed Qt objects in the wrong thread and deadlocked the window and the test suite)."""
from __future__ import annotations

import gc
import threading

import pytest

pytestmark = pytest.mark.gui


class _Cycle:
    def __init__(self, where: list[int]) -> None:
        self.me = self
        self.where = where

    def __del__(self) -> None:
        self.where.append(threading.get_ident())


def test_a_background_thread_never_collects_the_guis_garbage(qtbot) -> None:
    from gui import gc_guard
    from gui.app import MainWindow

    w = MainWindow()                       # installs the guard (the fixture did already)
    qtbot.addWidget(w)
    assert gc_guard.installed() and not gc.isenabled()
    where: list[int] = []
    _Cycle(where)                          # garbage, reachable only from itself

    def allocate() -> None:                # far past every threshold: would collect, unguarded
        for _ in range(20):
            junk = [[i] for i in range(50_000)]
            del junk

    t = threading.Thread(target=allocate)
    t.start()
    t.join()
    assert where == []                      # not collected by the background thread
    qtbot.waitUntil(lambda: bool(where), timeout=10_000)     # the GUI thread's timer did
    assert where == [threading.main_thread().ident]


def test_uninstall_gives_collection_back(qtbot) -> None:
    from gui import gc_guard
    assert gc_guard.install()
    gc_guard.uninstall()
    assert gc.isenabled() and not gc_guard.installed()
    gc_guard.install()                      # as the fixture expects to find it
