"""Fault trials on project files (issue 15): kill -9 during save, and a full disk during
create / open / add_trace / add_run / save.  Used by ``tests/test_hardening_projects.py``
(few trials) and by ``benchmarks/reliability.py`` (the campaign: 100 kill trials).

Every trial runs the project code in a child process, so a crash (segfault) is seen as the
child's exit status instead of taking the harness down.

    python benchmarks/fault_trials.py kill 100
    python benchmarks/fault_trials.py diskfull [--no-space-check]
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable

# --------------------------------------------------------------------------------------------
# Child programs
# --------------------------------------------------------------------------------------------

_SAVER = r"""
import sys
sys.path.insert(0, sys.argv[1])
from engine.config import load_config
from projects.store import Project
cfg = load_config("DDR4-3200")
path = sys.argv[2]
print("ready", flush=True)
i = 0
while True:
    with Project.open(path) as p:
        p.add_config(f"cfg{i}", cfg)
        p.save()
    print(f"saved {i}", flush=True)
    i += 1
"""

_DISKFULL = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
from engine.config import load_config
from engine.errors import DiffMemError
from projects.store import Project
if os.environ.get("DIFFMEM_TRIAL_NO_SPACE_CHECK"):      # the second line of defence alone
    import projects.safefs as F
    F.free_bytes = lambda folder: None
folder, trace, steps = sys.argv[2], sys.argv[3], sys.argv[4].split(",")
path = os.path.join(folder, "p.dmproj")
cfg = load_config("DDR4-3200")
done, error = [], None
try:
    p = Project.open(path) if os.path.exists(path) else Project.create(path)
    done.append("open")
    try:
        for step in steps:
            if step == "config":
                p.add_config(f"c{len(done)}", cfg)
            elif step == "trace":
                p.add_trace(f"t{len(done)}", trace)
            elif step == "save":
                p.save()
            done.append(step)
    finally:
        p.close()
except DiffMemError as e:
    error = f"{type(e).__name__}: {e}"
print(json.dumps({"done": done, "error": error}), flush=True)
"""


def _tiny_trace(path: Path, n: int) -> Path:
    sys.path.insert(0, str(REPO))
    import numpy as np

    from engine.trace import TraceChunk, write_binary
    rng = np.random.default_rng(n)
    chunk = TraceChunk.from_arrays((rng.integers(0, 1 << 30, n) & ~63).astype(np.uint64),
                                   rng.random(n) < 0.3, np.arange(n, dtype=np.int64) * 3)
    write_binary(path, chunk)
    return path


def _inspect(path: Path) -> dict[str, Any]:
    """Open a project after a trial (in a child: a crash must not kill the harness)."""
    code = (f"import sys, json; sys.path.insert(0, {str(REPO)!r})\n"
            "from projects.store import Project\n"
            f"with Project.open({str(path)!r}) as p:\n"
            "    print(json.dumps({'configs': p.configs(), 'traces': p.traces()}))\n")
    r = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return {"ok": False, "rc": r.returncode, "stderr": r.stderr[-400:]}
    return {"ok": True, **json.loads(r.stdout.strip().splitlines()[-1])}


# --------------------------------------------------------------------------------------------
# kill -9 during save
# --------------------------------------------------------------------------------------------

@dataclass
class KillResult:
    trials: int = 0
    intact: int = 0
    corrupt: int = 0
    lost: int = 0                 # a save reported done but missing afterwards
    old: int = 0                  # the kill landed before the last save replaced the file
    new: int = 0
    orphans_after_kill: int = 0   # temporary files right after the kill
    orphans_after_open: int = 0   # ... and after the next open (must be 0)
    details: list[str] = field(default_factory=list)


def kill_trials(n: int, *, seed: int = 0, workdir: Path | None = None,
                trace_requests: int = 150_000) -> KillResult:
    """Kill a process that saves a project in a loop at a random moment, ``n`` times; after
    each kill open the project (a fresh process) and check it."""
    rng = random.Random(seed)
    res = KillResult()
    base = Path(tempfile.mkdtemp(prefix="diffmem-kill-", dir=workdir))
    try:
        seed_proj = base / "seed.dmproj"
        trace = _tiny_trace(base / "t.dmt", trace_requests)
        sys.path.insert(0, str(REPO))
        from projects.store import Project
        with Project.create(seed_proj) as p:
            p.add_trace("t", trace)          # some MB, so that saves take a while
            p.save()
        for trial in range(n):
            folder = base / f"k{trial}"
            folder.mkdir()
            path = folder / "p.dmproj"
            shutil.copyfile(seed_proj, path)
            child = subprocess.Popen([PY, "-c", _SAVER, str(REPO), str(path)],
                                     stdout=subprocess.PIPE, text=True)
            assert child.stdout is not None
            child.stdout.readline()              # "ready": imports done
            time.sleep(rng.uniform(0.0, 1.2))
            os.kill(child.pid, signal.SIGKILL)
            out, _ = child.communicate()
            saved = [int(x.split()[1]) for x in out.split("\n") if x.startswith("saved")]
            res.trials += 1
            res.orphans_after_kill += sum(1 for x in os.listdir(folder)
                                          if x != "p.dmproj" and not x.endswith(".lock"))
            info = _inspect(path)
            if not info["ok"]:
                res.corrupt += 1
                res.details.append(f"trial {trial}: cannot open: {info}")
                continue
            have = sorted(int(c[3:]) for c in info["configs"])
            want = list(range(len(saved)))
            if have[:len(want)] != want or "t" not in info["traces"]:
                res.lost += 1
                res.details.append(f"trial {trial}: saved {len(saved)}, file has {have}")
                continue
            res.intact += 1
            if len(have) == len(saved):
                res.old += 1
            else:
                res.new += 1                     # killed after the replace, before "saved"
            left = [x for x in os.listdir(folder) if x != "p.dmproj"]
            res.orphans_after_open += len(left)
            if left:
                res.details.append(f"trial {trial}: left after open: {left}")
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return res


# --------------------------------------------------------------------------------------------
# Disk full (a small tmpfs)
# --------------------------------------------------------------------------------------------

def tmpfs_unavailable() -> str | None:
    """Why a tmpfs cannot be mounted here (None: it can)."""
    if not sys.platform.startswith("linux"):
        return "tmpfs mounts need Linux"
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "mount/umount not found"
    d = tempfile.mkdtemp(prefix="diffmem-tmpfs-probe-")
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", d],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return f"mount -t tmpfs is not permitted here ({r.stderr.strip()[:100]})"
        subprocess.run(["umount", d], check=False)
        return None
    finally:
        os.rmdir(d)


@dataclass
class DiskFullTrial:
    free_kib: int
    steps: str
    rc: int
    outcome: dict[str, Any]
    after: dict[str, Any]
    leftovers: list[str]

    @property
    def crashed(self) -> bool:
        return self.rc != 0

    @property
    def intact(self) -> bool:
        return self.after.get("ok", True)


def disk_full_trial(free_kib: int, steps: str, trace: Path, *, preexisting: bool = False,
                    size_kib: int = 16384) -> DiskFullTrial:
    """Mount a tmpfs, fill it to ``free_kib`` KiB free, run the steps in a child, free the
    space, and check the project (if any) opens and nothing is left behind."""
    mnt = Path(tempfile.mkdtemp(prefix="diffmem-full-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(mnt)],
                   check=True)
    try:
        if preexisting:
            code = (f"import sys; sys.path.insert(0, {str(REPO)!r})\n"
                    "from projects.store import Project\n"
                    f"Project.create({str(mnt / 'p.dmproj')!r}).close()\n")
            subprocess.run([PY, "-c", code], check=True, timeout=120)
        filler = mnt / "filler"
        free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        fill = max(0, free - free_kib * 1024)
        with open(filler, "wb") as f:
            if fill:
                f.write(b"\0" * fill)
        r = subprocess.run([PY, "-c", _DISKFULL, str(REPO), str(mnt), str(trace), steps],
                           capture_output=True, text=True, timeout=300)
        try:
            outcome = json.loads(r.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            outcome = {"stdout": r.stdout[-300:], "stderr": r.stderr[-300:]}
        filler.unlink()
        lock_left = (mnt / "p.dmproj.lock").exists()
        after: dict[str, Any] = {}
        if (mnt / "p.dmproj").exists():
            after = _inspect(mnt / "p.dmproj")
        leftovers = sorted(x for x in os.listdir(mnt) if x != "p.dmproj")
        if lock_left:
            leftovers.append("(lock left after the failed run)")
        return DiskFullTrial(free_kib, steps, r.returncode, outcome, after, leftovers)
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
        os.rmdir(mnt)


def disk_full_trials(free_kib: list[int], *, trace_requests: int = 60_000) -> list[DiskFullTrial]:
    """The disk-full campaign: create+config+trace+save on a fresh disk, and the same edits
    on an existing project, at each free-space level."""
    base = Path(tempfile.mkdtemp(prefix="diffmem-fulltrace-"))
    try:
        trace = _tiny_trace(base / "t.dmt", trace_requests)
        out = []
        for kib in free_kib:
            out.append(disk_full_trial(kib, "config,trace,save", trace))
            out.append(disk_full_trial(kib, "config,save,trace,save", trace, preexisting=True))
        return out
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "kill"
    if what == "kill":
        n = int(argv[1]) if len(argv) > 1 else 100
        r = kill_trials(n)
        print(json.dumps(r.__dict__, indent=1))
        return 0 if r.corrupt == r.lost == r.orphans_after_open == 0 else 1
    why = tmpfs_unavailable()
    if why:
        print(f"skipped: {why}")
        return 0
    if "--no-space-check" in argv:
        # the free-space check off: a disk another program fills right after the check
        os.environ["DIFFMEM_TRIAL_NO_SPACE_CHECK"] = "1"
    trials = disk_full_trials([0, 16, 32, 64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096,
                               8192])
    bad = 0
    for t in trials:
        print(f"{t.free_kib:6d} KiB free  {t.steps:24s} rc={t.rc} intact={t.intact} "
              f"left={t.leftovers} -> {t.outcome}")
        bad += t.crashed or not t.intact or bool(t.leftovers)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
