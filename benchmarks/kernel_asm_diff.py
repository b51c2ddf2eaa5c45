"""Compare the machine code numba makes of the event loop (``engine.kernel``, the variant
DDR4-3200 runs on) in two source trees.

    .venv/bin/python benchmarks/kernel_asm_diff.py OLD_TREE [NEW_TREE]

A same-session A/B (``ab_engine.py``) on a loaded machine cannot resolve a few per cent; when
a change is meant to leave the event loop alone (a new calling convention, a refactoring),
this shows whether the compiled loop is the same. Each tree is compiled fresh in its own
process (``NUMBA_CACHE_DIR`` an empty temporary folder, so no cached kernel is used; about
40 CPU-s a tree), on a short DDR4-3200 run of the demo trace; then, for every function of
the kernel's machine code, the instruction counts of both trees, and for ``run_kernel``
itself the opcode sequences compared: how many differing diff lines fall in each stretch of
500 instructions (entry and exits differ when the arguments change; the loop should not).
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from engine import kernel as K
from engine.config import load_config
from engine.simulator import SimOptions, Simulator, simulate_trace
cfg = load_config("DDR4-3200")
simulate_trace(cfg, sys.argv[1] + "/resources/traces/demo.trace", SimOptions(cycles=2000))
# the event-loop variant DDR4-3200 runs on (trees before the variants: the one run_kernel)
if hasattr(K, "KERNELS"):
    sim = Simulator(cfg)
    k = K.KERNELS[K.kernel_variant(sim.P)]
    sim.close()
else:
    k = K.run_kernel
sys.stdout.write(k.inspect_asm(k.signatures[0]))
"""

LABEL = re.compile(r"^([A-Za-z_$][\w.$@]*):")
# a numba function symbol: _ZN<module parts>, <qualname length><qualname>B...
SYMBOL = re.compile(r"^_ZN(?:7cpython)?6engine6kernel\d+(\w+?)B\d")


def functions(asm: str) -> dict[str, list[str]]:
    """Opcodes of each function of an assembly listing, by symbol."""
    out: dict[str, list[str]] = {}
    cur = None
    for line in asm.splitlines():
        m = LABEL.match(line)
        if m:
            cur = m.group(1)
            out.setdefault(cur, [])
            continue
        if cur is not None and line.startswith("\t") and not line.startswith("\t."):
            out[cur].append(line.split()[0])
    return {k: v for k, v in out.items() if v}


def short(symbol: str) -> str:
    m = SYMBOL.match(symbol)
    if not m:
        return symbol[:40]
    name = m.group(1)
    # an event-loop variant (run_kernel_dramsim3, ...: engine.kernel.KERNELS) compares with
    # the one run_kernel of trees before the variants
    if name.startswith("run_kernel"):
        name = "run_kernel"
    return ("cpython wrapper of " if symbol.startswith("_ZN7cpython") else "") + name


def compile_tree(tree: Path) -> dict[str, list[str]]:
    with tempfile.TemporaryDirectory(prefix="kernel-asm-") as cache:
        # (numba's kernel, not the compiled-ahead library: the listing is numba's)
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, DIFFMEM_KERNEL="jit")
        res = subprocess.run([sys.executable, "-c", CHILD, str(tree.resolve())], env=env,
                             capture_output=True, text=True, check=True, cwd=tree)
    merged: dict[str, list[str]] = {}
    for sym, ops in functions(res.stdout).items():
        merged.setdefault(short(sym), []).extend(ops)
    return merged


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("new", type=Path, nargs="?", default=ROOT)
    args = ap.parse_args()
    old, new = compile_tree(args.old), compile_tree(args.new)
    print(f"{'function':<40} {'old':>8} {'new':>8}")
    for name in sorted(set(old) | set(new), key=lambda n: -len(old.get(n, new.get(n, [])))):
        print(f"{name:<40} {len(old.get(name, [])):>8} {len(new.get(name, [])):>8}")
    a, b = old.get("run_kernel", []), new.get("run_kernel", [])
    where: Counter[int] = Counter()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            where[i1 // 500 * 500] += max(i2 - i1, j2 - j1)
    print(f"run_kernel: {len(a)} -> {len(b)} instructions; differing opcodes by stretch of "
          f"the old sequence:")
    for start in sorted(where):
        print(f"  {start:>6}-{start + 499:<6} {where[start]}")
    if not where:
        print("  none: the same opcode sequence")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
