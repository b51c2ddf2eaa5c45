"""Engine start-up in CPU seconds: a fresh process that imports the engine, loads the numba
kernel from its cache and simulates 1,000 requests (issue 17: <= 0.4 CPU-s in all).

    .venv/bin/python benchmarks/bench_engine_startup.py [--runs 5] [--markdown]

Each run is a new interpreter (`python -c`), measured from inside with
resource.getrusage (user + system CPU of the process) at each stage: interpreter start (the
CPU already used when the first line runs), `import numpy`, `import numba`, `import
engine.simulator` (our modules and the kernel's dispatcher), `load_config`, the first
kernel call on 1,000 requests (numba loads the cached machine code), and the whole process
as its parent sees it (RUSAGE_CHILDREN, including interpreter start and exit); then the
same for `main.py simulate` on a 1,000-request text trace (argument parsing, the trace
reader's kernel, the statistics JSON). A warm-up
process first fills the numba cache. Medians over the runs; the machine's load average is
printed with them, since CPU time grows on a busy machine too (cache misses, frequency).

Both kernels are measured, alternating process by process: numba's JIT kernel
(``DIFFMEM_KERNEL=jit``) and the ahead-of-time compiled library (``DIFFMEM_KERNEL=aot``,
engine/kernel_aot.py; built first with ``main.py build-kernel`` if missing, not counted): the
AOT process never imports numba (checked in the child, which fails otherwise).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import resource, time, json, sys, os
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
marks = [("interpreter", cpu())]
import numpy as np
marks.append(("import numpy", cpu()))
if os.environ["DIFFMEM_KERNEL"] == "jit":
    import numba
marks.append(("import numba", cpu()))
from engine.config import load_config
from engine.simulator import SimOptions, Simulator
marks.append(("import engine", cpu()))
cfg = load_config("DDR4-3200")
marks.append(("load config", cpu()))
n = 1000
rng = np.random.default_rng(1)
addr = (rng.integers(0, 1 << 24, n) * 64).astype(np.uint64)
sim = Simulator(cfg, SimOptions())
sim.feed(addr, np.arange(n) % 3 == 0, np.arange(n, dtype=np.int64) * 4, final=True)
st = sim.stats()
assert st.summary["num_reads_done"] + st.summary["num_writes_done"] >= n
marks.append(("1,000-request run (cached kernel)", cpu()))
if os.environ["DIFFMEM_KERNEL"] == "aot":
    assert "numba" not in sys.modules, "the AOT run imported numba"
print(json.dumps(marks))
if sys.argv[1:] == ["freeze"]:
    import gc
    gc.freeze()          # as main.py does before a headless command exits
"""


KERNELS = ("jit", "aot")


def _env(kernel: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "DIFFMEM_KERNEL": kernel}


def cli_run(trace: Path, out: Path, kernel: str) -> float:
    """CPU seconds of `main.py simulate` on the trace, as its parent sees the process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run([sys.executable, str(REPO / "main.py"), "simulate", "--config",
                          "DDR4-3200", "--trace", str(trace), "--out", str(out)],
                         cwd=REPO, capture_output=True, text=True, env=_env(kernel))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(res.stderr)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def one_run(kernel: str, freeze: bool = False) -> tuple[list[tuple[str, float]], float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = subprocess.run([sys.executable, "-c", CHILD] + (["freeze"] if freeze else []),
                         cwd=REPO, capture_output=True, text=True, env=_env(kernel))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(res.stderr)
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(res.stdout.strip().splitlines()[-1]), total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    subprocess.run([sys.executable, str(REPO / "main.py"), "build-kernel"], cwd=REPO,
                   check=True, capture_output=True, env=_env("jit"))
    for kernel in KERNELS:
        one_run(kernel)                         # fill the numba cache, load the library
    stages: dict[str, dict[str, list[float]]] = {k: {} for k in KERNELS}
    totals: dict[str, list[float]] = {k: [] for k in KERNELS}
    frozen: dict[str, list[float]] = {k: [] for k in KERNELS}
    for _ in range(args.runs):
        for kernel in KERNELS:                  # alternating kernels and plain / frozen runs
            frozen[kernel].append(one_run(kernel, freeze=True)[1])
            marks, total = one_run(kernel)
            prev = 0.0
            for name, t in marks:
                stages[kernel].setdefault(name, []).append(t - prev)
                prev = t
            stages[kernel].setdefault("interpreter exit (and other)", []).append(total - prev)
            totals[kernel].append(total)
    import tempfile
    cli: dict[str, list[float]] = {k: [] for k in KERNELS}
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "t1000.trace"
        trace.write_text("".join(f"{(i * 7919 % (1 << 24)) * 64:#x} "
                                 f"{'WRITE' if i % 3 == 0 else 'READ'} {i * 4}\n"
                                 for i in range(1000)))
        for kernel in KERNELS:
            cli_run(trace, Path(tmp) / "s.json", kernel)
        for _ in range(args.runs):
            for kernel in KERNELS:
                cli[kernel].append(cli_run(trace, Path(tmp) / "s.json", kernel))
    load = os.getloadavg()[0]
    print(f"load average (1 min) {load:.2f}, {args.runs} runs, medians in CPU seconds "
          f"(min-max); kernels: numba JIT, ahead-of-time library")

    def cells(series: dict[str, list[float]]) -> list[str]:
        return [f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})"
                for v in (series[k] for k in KERNELS)]

    rows = [(name, cells({k: stages[k][name] for k in KERNELS})) for name in stages["jit"]]
    rows.append(("whole process", cells(totals)))
    rows.append(("whole process, gc.freeze() before exit", cells(frozen)))
    rows.append(("`main.py simulate` on a 1,000-request text trace (whole process)",
                 cells(cli)))
    if args.markdown:
        print("\n| stage | numba JIT: CPU-s median (min-max) | AOT library |\n|---|---|---|")
        for name, (jit, aot) in rows:
            print(f"| {name} | {jit} | {aot} |")
    else:
        for name, (jit, aot) in rows:
            print(f"{name:66s} {jit:>22s} {aot:>22s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
