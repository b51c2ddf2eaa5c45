"""Ctrl-C during a local study: the workers leave SIGINT to the parent, which ends them at
once and exits with 'interrupted'; what was stored stays stored."""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def test_workers_ignore_ctrl_c_and_are_ended_at_once() -> None:
    from engine.studies.runner import _stop_workers, _worker_init
    out = subprocess.run(
        [sys.executable, "-c", "import os, signal; from engine.studies.runner import "
         "_worker_init; _worker_init(os.getppid()); "
         "print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"],
        cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    pool = cf.ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=_worker_init, initargs=(os.getpid(),))
    futures = [pool.submit(time.sleep, 600) for _ in range(4)]
    while len(pool._processes or {}) < 2 or not any(f.running() for f in futures):
        time.sleep(0.05)
    procs = list(pool._processes.values())
    _stop_workers(pool)                 # (waiting would take the 600 s sleeps)
    assert all(not p.is_alive() for p in procs)


def test_ctrl_c_on_a_study_exits_with_interrupted_and_keeps_what_was_stored(
        tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 400_000
    addr = rng.integers(0, 1 << 27, n) * 64
    trace = tmp_path / "big.trace"
    trace.write_text("".join(f"{a:#x} {'WRITE' if i % 3 == 0 else 'READ'} {i}\n"
                             for i, a in enumerate(addr.tolist())))
    out = tmp_path / "study"
    values = ",".join(str(v) for v in range(10, 90))
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), "study", "timing", "--trace",
         f"a={trace}", "--param", f"tRP={values}", "--workers", "2", "--out", str(out)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
        # (a shell's background job ignores SIGINT, and its children inherit that: Python
        # then installs no Ctrl-C handler; a terminal's foreground job has the default)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        journal = out / "results.jsonl"
        while proc.poll() is None and not (journal.is_file() and journal.read_text()):
            time.sleep(0.05)
        assert proc.poll() is None, "the study ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)      # as a terminal does: the whole group
        _, err = proc.communicate(timeout=120)  # (it hung here before: workers got it too)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130 and err.rstrip().endswith("interrupted")
    assert "Traceback" not in err and "Exception ignored" not in err
    stored = [line for line in journal.read_text().splitlines() if line.strip()]
    assert 1 <= len(stored) < 80


def test_a_worker_started_with_ctrl_c_blocked_ignores_it_once_initialised() -> None:
    """The parent spawns its workers with SIGINT blocked (a Ctrl-C during their start-up
    printed their import traceback, or 'EOFError: Ran out of input'); the initializer
    ignores SIGINT, then unblocks it: one sent meanwhile is dropped, not raised."""
    out = subprocess.run(
        [sys.executable, "-c", "import os, signal; "
         "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}); "
         "os.kill(os.getpid(), signal.SIGINT); "            # pending while blocked
         "from engine.studies.runner import _worker_init; _worker_init(os.getppid()); "
         "print(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, set()), "
         "signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.split() == ["False", "True"], out.stderr


def test_ctrl_c_while_matplotlib_initialises_is_held_until_it_is_done() -> None:
    """matplotlib's ft2font keeps Python objects in C++ statics while it initialises: a
    KeyboardInterrupt in the middle left some owned by them alone, and the process aborted at
    exit (SIGABRT, 'Fatal Python error: PyThreadState_Get', 14 of 40 targeted probes). The
    report imports it with SIGINT held back and delivered after: here a SIGINT sent inside
    the block is raised once the block ends, and matplotlib is whole."""
    code = ("import os, signal, sys\n"
            "from engine.studies import report\n"
            "reached = False\n"
            "try:\n"
            "    with report._sigint_held():\n"
            "        os.kill(os.getpid(), signal.SIGINT)\n"
            "        Figure = report._matplotlib()\n"
            "        reached = True\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted after the block', reached)\n"
            "from matplotlib import ft2font\n"
            "print(ft2font.Kerning.DEFAULT is not None)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["interrupted after the block True", "True"]


def test_an_error_raised_while_a_ctrl_c_unwinds_ends_as_interrupted(monkeypatch,
                                                                     capsys) -> None:
    """A library's clean-up that fails because of the Ctrl-C (matplotlib's PdfPages closing
    a half-written PDF: AssertionError) ends the command as 'interrupted', 130, not as a
    traceback; an error not caused by a Ctrl-C is still raised."""
    import main as cli

    def interrupted_cleanup(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise AssertionError("No offset for object 17 (marker 0)")
    monkeypatch.setattr(cli, "cmd_presets", interrupted_cleanup)
    assert cli.main(["presets"]) == 130
    assert "interrupted" in capsys.readouterr().err

    def plain_bug(args):
        raise AssertionError("a bug")
    monkeypatch.setattr(cli, "cmd_presets", plain_bug)
    import pytest
    with pytest.raises(AssertionError, match="a bug"):
        cli.main(["presets"])
