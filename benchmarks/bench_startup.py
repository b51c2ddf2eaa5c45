"""Start-up and demo time of DiffMem Studio, from source and as the packaged application.

    .venv/bin/python benchmarks/bench_startup.py [--runs 5] [--bundle dist/diffmem/diffmem]
                                                 [--no-source] [--no-demo]

Window start-up: the time from starting the process to the main window being mapped on a
virtual X screen (Xvfb, no window manager; polled with xwininfo every 10 ms), with an empty
settings folder each time.  Demo: the wall time of `demo --headless` with an empty numba
cache (first start: kernels compile) and again with the cache filled.  Prints a Markdown
table for benchmarks/RESULTS.md.  Needs Xvfb and xwininfo (x11-utils).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

REPO = Path(__file__).resolve().parents[1]
WINDOW_TITLE = "DiffMem Studio"
POLL_S = 0.01


@contextmanager
def xvfb(size: str = "1400x900x24") -> Iterator[str]:
    """A virtual X screen for the duration; yields its DISPLAY (":N")."""
    if shutil.which("Xvfb") is None:
        raise RuntimeError("Xvfb not found (apt-get install xvfb)")
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", size,
                             "-nolisten", "tcp", "-noreset"], pass_fds=(write_fd,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    try:
        with os.fdopen(read_fd) as f:
            number = f.readline().strip()
        if not number:
            raise RuntimeError("Xvfb did not start")
        yield f":{number}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def window_viewable(display: str, title: str = WINDOW_TITLE) -> bool:
    res = subprocess.run(["xwininfo", "-display", display, "-name", title],
                         capture_output=True, text=True)
    return res.returncode == 0 and "IsViewable" in res.stdout


def clean_env(display: str | None, home: Path) -> dict[str, str]:
    """The environment of a user who has neither our venv nor our settings."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "QT_QPA_PLATFORM",
                        "NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    env["HOME"] = str(home)
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    if display is None:
        env.pop("DISPLAY", None)
        env["QT_QPA_PLATFORM"] = "offscreen"
    else:
        env["DISPLAY"] = display
    return env


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a (Linux) process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_to_window(cmd: Sequence[str], display: str,
                   timeout_s: float = 120.0) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process) from starting cmd until its main window is
    viewable; the process is ended.  The CPU time hardly depends on what else the machine
    runs, the wall time does."""
    with tempfile.TemporaryDirectory(prefix="diffmem-start-") as home:
        env = clean_env(display, Path(home))
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=home, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        try:
            while True:
                if window_viewable(display):
                    return time.perf_counter() - t0, cpu_seconds(proc.pid)
                if proc.poll() is not None:
                    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                    raise RuntimeError(f"{cmd[0]} exited ({proc.returncode}) before its "
                                       f"window showed:\n{err[-2000:]}")
                if time.perf_counter() - t0 > timeout_s:
                    raise RuntimeError(f"no window within {timeout_s} s")
                time.sleep(POLL_S)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def time_demo(cmd: Sequence[str], home: Path, out: Path, *, source: bool) -> float:
    """Wall time of `demo --headless`; the numba cache lives under home (empty at first):
    the bundle's per-user cache by HOME, the source checkout's by NUMBA_CACHE_DIR."""
    env = clean_env(None, home)
    if source:
        env["NUMBA_CACHE_DIR"] = str(home / "numba-cache")
    t0 = time.perf_counter()
    subprocess.run([*cmd, "demo", "--headless", "--out", str(out)], cwd=home, env=env,
                   check=True, capture_output=True, timeout=1800)
    return time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="window starts per target")
    ap.add_argument("--bundle", default=str(REPO / "dist" / "diffmem" / "diffmem"))
    ap.add_argument("--no-source", action="store_true", help="skip `python main.py`")
    ap.add_argument("--no-demo", action="store_true", help="skip the headless demo timing")
    args = ap.parse_args(argv)

    targets: list[tuple[str, list[str]]] = []
    if not args.no_source:
        targets.append(("source (`.venv/bin/python main.py`)",
                        [str(REPO / ".venv" / "bin" / "python"), str(REPO / "main.py")]))
    if Path(args.bundle).is_file():
        targets.append(("bundle (`dist/diffmem/diffmem`)", [str(Path(args.bundle).resolve())]))
    else:
        print(f"(no bundle at {args.bundle}: build it with packaging/build.sh)", file=sys.stderr)

    rows = []
    print(f"load average before: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    with xvfb() as display:
        for name, cmd in targets:
            runs = [time_to_window(cmd, display) for _ in range(args.runs)]
            rows.append((name, runs))
            print(f"{name}: window after " + ", ".join(f"{w:.2f} s ({c:.2f} s CPU)"
                                                       for w, c in runs),
                  file=sys.stderr, flush=True)
    print(f"load average after the start-ups: {os.getloadavg()[0]:.1f}", file=sys.stderr)
    print("| start-up: process start to main window shown (Xvfb) | wall: first | wall: "
          "median of the rest | wall: min | CPU: median |")
    print("|---|---|---|---|---|")
    for name, runs in rows:
        walls = [w for w, _ in runs]
        rest = walls[1:] or walls
        print(f"| {name} | {walls[0]:.2f} s | {statistics.median(rest):.2f} s | "
              f"{min(walls):.2f} s | {statistics.median(c for _, c in runs):.2f} s |")

    if not args.no_demo:
        print()
        print("| `demo --headless` (2 simulations of 20,000 requests) | empty kernel cache "
              "| cache filled |")
        print("|---|---|---|")
        for name, cmd in targets:
            with tempfile.TemporaryDirectory(prefix="diffmem-demo-") as home:
                source = "source" in name
                cold = time_demo(cmd, Path(home), Path(home) / "out1", source=source)
                warm = time_demo(cmd, Path(home), Path(home) / "out2", source=source)
            print(f"| {name} | {cold:.1f} s | {warm:.1f} s |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
