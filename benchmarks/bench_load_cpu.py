"""Why a CPU-second buys less work under load (issue 13c): a fixed piece of work timed in this
process's CPU time, alone and beside 1, 2, 4, 8 co-runner processes of two kinds.

    nice -n 10 .venv/bin/python benchmarks/bench_load_cpu.py --out RUNS.jsonl \
        [--corunners 0 1 2 4 8] [--kinds yes mem] [--reps 3]
    .venv/bin/python benchmarks/bench_load_cpu.py --out RUNS.jsonl --report

The work (one process, one torch thread, warmed up first so no compilation is timed):

- ``alu``: a numba xorshift loop that lives in registers (no cache or memory footprint): what
  the CPU-time accounting itself does under load (hypervisor steal charged to the guest, clock
  changes);
- ``exact``: random search on ResNet18 / gemmini-large for a fixed count of layer-mapping
  evaluations, no refinement (the numba/numpy exact evaluator);
- ``fadiff``: FADiff on the same for a fixed count of evaluations, no refinement (torch).

The co-runners, started before and stopped after each measurement, at this process's
niceness (they inherit it): ``yes`` (``yes >/dev/null``: a tight loop of 8 KiB writes into
/dev/null, its working set a few KiB: time-slicing with no cache pressure to speak of) and
``mem`` (a numpy loop ``a += 1`` over a 64 MiB float64 array: streams twice the 32 MiB L3
each pass, so it evicts the shared L3 and uses memory bandwidth).

Per measurement, one JSON line: CPU-s of the work (``time.process_time`` and the thread's
``time.thread_time``), wall time, the scheduler's view of this process from
``/proc/self/schedstat`` (ns on a CPU, ns waiting runnable, time slices), voluntary and
involuntary context switches (``getrusage``), the system-wide ``/proc/stat`` deltas
(user, nice, system, idle, steal jiffies), ``procs_running`` sampled during the work, the
load average, the threads of this process and their CPU time (a spinning torch/OpenMP pool
would show there), and the co-runners' CPU time.  Conditions are shuffled within each
repetition so that the background load of the shared machine drifts over all of them alike.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MEM_HOG = ("import numpy as np\n"
           "a = np.ones(8 * 1024 * 1024)\n"          # 64 MiB of float64
           "while True:\n"
           "    a += 1.0\n")
#: evaluations of each measured work item (about 0.3-0.7 CPU-s each alone on this VM)
EXACT_EVALUATIONS = 4000
FADIFF_EVALUATIONS = 6000
ALU_ITERATIONS = 200_000_000


def _schedstat() -> tuple[int, int, int]:
    run, wait, slices = Path("/proc/self/schedstat").read_text().split()[:3]
    return int(run), int(wait), int(slices)


def _proc_stat() -> list[int]:
    """The aggregate cpu line of /proc/stat: user nice system idle iowait irq softirq steal."""
    return [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]


def _threads() -> list[dict[str, Any]]:
    """This process's threads: name and CPU jiffies (utime + stime)."""
    out = []
    for task in sorted(Path("/proc/self/task").iterdir()):
        try:
            stat = (task / "stat").read_text()
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        out.append({"tid": int(task.name), "name": name,
                    "jiffies": int(fields[11]) + int(fields[12])})
    return out


def _pid_jiffies(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    fields = stat[stat.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


class Sampler(threading.Thread):
    """Samples /proc/stat's procs_running every 50 ms while the work runs (sleeps otherwise:
    its own CPU time is a few ms and is not in the work's thread_time)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[int] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.05):
            for line in Path("/proc/stat").read_text().splitlines():
                if line.startswith("procs_running"):
                    self.samples.append(int(line.split()[1]) - 1)   # less this sampler
                    break


def start_hogs(kind: str, n: int, cpus: set[int] | None = None) -> list[subprocess.Popen]:
    """``n`` co-runners of ``kind``; ``cpus``: the CPUs they may run on (default: any)."""
    hogs = []
    pre = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    for _ in range(n):
        if kind == "yes":
            p = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL, preexec_fn=pre)
        elif kind == "mem":
            p = subprocess.Popen([sys.executable, "-c", MEM_HOG], preexec_fn=pre)
        else:
            raise ValueError(kind)
        hogs.append(p)
    time.sleep(0.6 if kind == "mem" else 0.2)          # numpy imported, the array touched
    return hogs


def stop_hogs(hogs: list[subprocess.Popen]) -> int:
    """Stops the co-runners; returns their CPU jiffies."""
    jiffies = sum(_pid_jiffies(p.pid) for p in hogs)
    for p in hogs:
        p.kill()
    for p in hogs:
        p.wait()
    return jiffies


def make_work() -> dict[str, tuple[Callable[[], int], str]]:
    """The measured work items: name -> (callable returning its units, the unit)."""
    import numba
    import numpy as np
    import torch

    from optimizer.methods import optimize
    from optimizer.search import Budget

    torch.set_num_threads(1)

    @numba.njit(cache=False)
    def alu(n: int) -> int:
        x = np.uint64(88172645463325252)     # xorshift64: a serial chain, no memory
        for _ in range(n):
            x ^= x << np.uint64(13)
            x ^= x >> np.uint64(7)
            x ^= x << np.uint64(17)
        return int(x)

    def run_alu() -> int:
        alu(ALU_ITERATIONS)
        return ALU_ITERATIONS

    def run_method(method: str, n: int) -> Callable[[], int]:
        def go() -> int:
            res, _ = optimize("resnet18", "large", method, Budget(evaluations=n), 0,
                              refine=False)
            return res.evaluations
        return go

    return {"alu": (run_alu, "iterations"),
            "exact": (run_method("random", EXACT_EVALUATIONS), "evaluations"),
            "fadiff": (run_method("fadiff", FADIFF_EVALUATIONS), "evaluations")}


def measure(name: str, work: Callable[[], int], kind: str, n: int, rep: int,
            pin: str = "") -> dict[str, Any]:
    """One measurement; ``pin``: "" (nothing pinned), "same" (this process and the
    co-runners on CPU 0: they time-slice with it) or "other" (this process on CPU 0, the
    co-runners on CPU 1: they share only the L3 and memory with it)."""
    cpus = {"same": {0}, "other": {1}}.get(pin)
    hogs = start_hogs(kind, n, cpus) if n else []
    sampler = Sampler()
    ru0 = resource.getrusage(resource.RUSAGE_SELF)
    s0, st0, th0 = _schedstat(), _proc_stat(), {t["tid"]: t["jiffies"] for t in _threads()}
    w0, c0, t0 = time.perf_counter(), time.process_time(), time.thread_time()
    sampler.start()
    units = work()
    t1, c1, w1 = time.thread_time(), time.process_time(), time.perf_counter()
    sampler.done.set()
    s1, st1, ths = _schedstat(), _proc_stat(), _threads()
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    hog_jiffies = stop_hogs(hogs)
    sampler.join()
    d = [b - a for a, b in zip(st0, st1)]
    return {"work": name, "kind": kind if n else "none", "corunners": n, "rep": rep,
            "pin": pin, "affinity": sorted(os.sched_getaffinity(0)),
            "units": units, "cpu_s": c1 - c0, "thread_cpu_s": t1 - t0, "wall_s": w1 - w0,
            "sched_run_s": (s1[0] - s0[0]) / 1e9, "sched_wait_s": (s1[1] - s0[1]) / 1e9,
            "timeslices": s1[2] - s0[2],
            "nvcsw": ru1.ru_nvcsw - ru0.ru_nvcsw, "nivcsw": ru1.ru_nivcsw - ru0.ru_nivcsw,
            "stat_jiffies": dict(zip(("user", "nice", "system", "idle", "iowait", "irq",
                                      "softirq", "steal"), d)),
            "procs_running": sampler.samples, "load": os.getloadavg()[0],
            "threads": [{"name": t["name"], "jiffies": t["jiffies"] - th0.get(t["tid"], 0)}
                        for t in ths],
            "corunner_cpu_s": hog_jiffies / os.sysconf("SC_CLK_TCK"),
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}


def run_all(args: argparse.Namespace) -> None:
    import torch

    work = make_work()
    for name, (fn, _) in work.items():          # warm-up: compile, load caches
        fn()
    env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                           "NUMBA_NUM_THREADS", "OMP_WAIT_POLICY")}
    header = {"header": True, "torch_threads": torch.get_num_threads(),
              "torch_interop_threads": torch.get_num_interop_threads(), "env": env,
              "threads_after_warmup": [t["name"] for t in _threads()],
              "nice": os.nice(0), "torch": torch.__version__,
              "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())}
    out = Path(args.out)
    with out.open("a") as fh:
        fh.write(json.dumps(header) + "\n")
    pins = args.pin or [""]
    if args.pin:
        os.sched_setaffinity(0, {0})             # the measured process on CPU 0
    conds = [("none", 0, "")] + [(k, n, p) for k in args.kinds for n in args.corunners if n
                                 for p in pins]
    rng = random.Random(0)
    for rep in range(args.reps):
        order = conds[:]
        rng.shuffle(order)
        for kind, n, pin in order:
            for name in args.works:
                rec = measure(name, work[name][0], kind, n, rep, pin)
                with out.open("a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                print(f"rep {rep} {kind} x{n} {pin} {name}: {rec['cpu_s']:.3f} CPU-s, "
                      f"{rec['wall_s']:.2f} s wall, {rec['timeslices']} slices, "
                      f"co-runners {rec['corunner_cpu_s']:.1f} CPU-s", flush=True)


def report(args: argparse.Namespace) -> str:
    rows = [json.loads(line) for line in Path(args.out).read_text().splitlines() if line]
    head = [r for r in rows if r.get("header")]
    runs = [r for r in rows if not r.get("header")]
    lines = []
    if head:
        h = head[-1]
        lines.append(f"measured process: torch threads {h['torch_threads']} (inter-op "
                     f"{h['torch_interop_threads']}), env {h['env']}, nice {h['nice']}, "
                     f"threads {h['threads_after_warmup']}")
        lines.append("")
    per = {"alu": 1e9, "exact": 1e3, "fadiff": 1e3}
    unit = {"alu": "CPU-s per 1e9 iterations", "exact": "CPU-s per 1000 evaluations",
            "fadiff": "CPU-s per 1000 evaluations"}
    works = list(dict.fromkeys(r["work"] for r in runs))
    conds = sorted({(r["kind"], r["corunners"], r.get("pin", "")) for r in runs},
                   key=lambda c: (c[0] != "none", c[2], c[0], c[1]))
    cond = (lambda r: (r["kind"], r["corunners"], r.get("pin", "")))
    lines.append("| co-runners | " + " | ".join(f"{w}: {unit[w]} (x alone)" for w in works)
                 + " | mean slice ms (exact) | wait / run (exact) | procs running | steal % |")
    lines.append("|---|" + "---:|" * (len(works) + 4))
    base = {}
    for w in works:
        v = [r["cpu_s"] / r["units"] * per[w] for r in runs if r["work"] == w
             and r["kind"] == "none" and not r.get("pin")]
        base[w] = statistics.mean(v) if v else float("nan")
    for kind, n, pin in conds:
        cells = []
        for w in works:
            v = [r["cpu_s"] / r["units"] * per[w] for r in runs if r["work"] == w
                 and cond(r) == (kind, n, pin)]
            if not v:
                cells.append("-")
                continue
            m = statistics.mean(v)
            sd = statistics.stdev(v) if len(v) > 1 else 0.0
            cells.append(f"{m:.3f} +- {sd:.3f} ({m / base[w]:.2f}x)")
        rs = [r for r in runs if cond(r) == (kind, n, pin)]
        ex = [r for r in rs if r["work"] == "exact"] or rs
        sl = statistics.mean(r["sched_run_s"] / max(1, r["timeslices"]) * 1e3 for r in ex)
        wr = statistics.mean(r["sched_wait_s"] / r["sched_run_s"] for r in ex)
        pr = [x for r in rs for x in r["procs_running"]]
        tot = sum(sum(r["stat_jiffies"].values()) for r in rs)
        steal = sum(r["stat_jiffies"]["steal"] for r in rs)
        where = f" ({pin} CPU)" if pin else ""
        lines.append(f"| {kind} x{n}{where} | " + " | ".join(cells) + f" | {sl:.2f} | {wr:.2f} | "
                     f"{statistics.mean(pr) if pr else float('nan'):.1f} | "
                     f"{100 * steal / max(1, tot):.2f} |")
    hog = sum(r["corunner_cpu_s"] for r in runs)
    meas = sum(r["cpu_s"] for r in runs)
    extra = sum(t["jiffies"] for r in runs for t in r["threads"][1:])   # all but the main
    lines.append("")
    lines.append(f"{len(runs)} measurements; measured work {meas:.0f} CPU-s, co-runners "
                 f"{hog:.0f} CPU-s; CPU jiffies of threads other than the main one (the "
                 f"procs_running sampler included), all runs: {extra}; process CPU - main-thread CPU, max over runs "
                 f"{max(r['cpu_s'] - r['thread_cpu_s'] for r in runs):.3f} s; loads "
                 f"{min(r['load'] for r in runs):.1f}-{max(r['load'] for r in runs):.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--corunners", nargs="+", type=int, default=[0, 1, 2, 4, 8])
    ap.add_argument("--kinds", nargs="+", choices=["yes", "mem"], default=["yes", "mem"])
    ap.add_argument("--works", nargs="+", choices=["alu", "exact", "fadiff"],
                    default=["alu", "exact", "fadiff"])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pin", nargs="+", choices=["same", "other"], default=None,
                    help="pin this process to CPU 0 and the co-runners to CPU 0 (same) or 1 "
                         "(other); the baseline \"none\" is then pinned to CPU 0 too")
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args(argv)
    if args.report:
        print(report(args))
        return 0
    run_all(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
