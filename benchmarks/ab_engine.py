"""A/B the engine's speed between two source trees, alternating runs (CPU time).

    .venv/bin/python benchmarks/ab_engine.py OLD_TREE [NEW_TREE] [--rounds 5] [--repeat 5]

OLD_TREE is e.g. ``git archive <commit> | tar -x -C /tmp/old`` (numba compiles each tree's
kernel into its own cache). Each round runs OLD then NEW in fresh processes; each process
simulates every case once to warm up (JIT excluded) and then ``--repeat`` times, and reports
its best CPU seconds. Traces: ``benchmarks/.traces`` (made by bench_engine.py) or ``--traces``.

``--env-old`` / ``--env-new KEY=VALUE`` (repeatable) set variables in one side's processes:
e.g. one tree twice, ``--env-old DIFFMEM_KERNEL=jit --env-new DIFFMEM_KERNEL=aot``, A/Bs
numba's kernel against the ahead-of-time compiled one (engine/kernel_aot.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = (("HBM2_8Gb_x128.ini", "traces/mixed.trace"),
         ("DDR4_8Gb_x8_3200.ini", "traces1m/random.trace"),
         ("DDR4_8Gb_x8_3200.ini", "traces1m/stream.trace"))

CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from engine.config import load_ini
from engine.simulator import SimOptions, simulate_trace
out = []
for ini, tr in zip(sys.argv[3::2], sys.argv[4::2]):
    cfg = load_ini(ini)
    simulate_trace(cfg, tr, SimOptions(epoch=0))
    best = float("inf")
    for _ in range(int(sys.argv[2])):
        t0 = time.process_time()
        simulate_trace(cfg, tr, SimOptions(epoch=0))
        best = min(best, time.process_time() - t0)
    out.append(best)
print(" ".join(f"{x:.4f}" for x in out))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path, nargs="?", default=ROOT)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--traces", type=Path, default=ROOT / "benchmarks" / ".traces")
    ap.add_argument("--configs", type=Path, default=ROOT.parent / "shared" / "dramsim3-configs")
    ap.add_argument("--env-old", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--env-new", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--cases", nargs="+", metavar="INI:TRACE",
                    help="cases instead of the default three, e.g. "
                         "HBM2_8Gb_x128.ini:traces1m/stream.trace")
    args = ap.parse_args()
    cases = CASES if not args.cases else tuple(tuple(c.split(":", 1)) for c in args.cases)
    envs = {}
    for name, pairs in (("old", args.env_old), ("new", args.env_new)):
        env = dict(os.environ)
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or not key:
                ap.error(f"--env-{name} {pair!r}: expected KEY=VALUE")
            env[key] = value
        envs[name] = env
    case_args = []
    for ini, tr in cases:
        case_args += [str(args.configs / ini), str(args.traces / tr)]
    times: dict[str, list[list[float]]] = {"old": [], "new": []}
    for r in range(args.rounds):
        for name, tree in (("old", args.old), ("new", args.new)):
            res = subprocess.run([sys.executable, "-c", CHILD, str(tree.resolve()),
                                  str(args.repeat), *case_args], capture_output=True,
                                 text=True, check=True, cwd=tree, env=envs[name])
            times[name].append([float(x) for x in res.stdout.split()])
            print(f"round {r + 1} {name}: {res.stdout.strip()}  load {os.getloadavg()[0]:.1f}",
                  flush=True)
    for i, (ini, tr) in enumerate(cases):
        old = [t[i] for t in times["old"]]
        new = [t[i] for t in times["new"]]
        print(f"{ini:<24} {tr:<24} old best {min(old):.4f} s, new best {min(new):.4f} s: "
              f"speed new/old {min(old) / min(new):.3f} (median {statistics.median(old) / statistics.median(new):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
