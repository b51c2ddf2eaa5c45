"""engine.kernel is compiled without negative-index wrap-around (engine/numba_nowrap.py), so it
must never index an array with a negative value. These tests check the mechanism on a small
function and run the real kernels under numba's bounds checks (every index checked against
``0 <= i < size`` after the fix-up: a negative one raises IndexError instead of wrapping)
over the configurations, policies and front ends the engine offers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _jit(fn, module: str):
    import numba
    fn.__module__ = module
    return numba.njit(boundscheck=True)(fn)


def test_wraparound_is_off_only_in_the_kernel_module() -> None:
    from engine import numba_nowrap
    assert numba_nowrap.install() and numba_nowrap.installed()

    def in_kernel(a, i):
        return a[i]

    def elsewhere(a, i):
        return a[i]

    a = np.arange(5, dtype=np.int64)
    kernel_fn = _jit(in_kernel, "engine.kernel")
    other_fn = _jit(elsewhere, "engine.kernelish")   # a prefix of the name is not the module
    assert kernel_fn(a, 4) == 4
    with pytest.raises(IndexError):
        kernel_fn(a, -1)                             # not wrapped: the bounds check sees -1
    assert other_fn(a, -1) == 4                      # Python's semantics kept elsewhere


def test_mangled_prefix_matches_numbas_names() -> None:
    from engine import numba_nowrap
    assert numba_nowrap.mangled_prefix("engine.kernel") == "_ZN6engine6kernel"
    assert numba_nowrap._no_wrap("_ZN6engine6kernel19run_kernel_dramsim3B3v15")
    assert not numba_nowrap._no_wrap("_ZN6engine7kernelx3fooB2v1")
    assert not numba_nowrap._no_wrap("_ZN5numba2np8arrayobj3fooB2v1")


# The cases run under NUMBA_BOUNDSCHECK=1 in a child process (numba's bounds checks are chosen
# when a kernel compiles; a fresh cache folder makes the child compile its own).
DRIVER = r"""
import json, sys
from pathlib import Path
import numba
import numpy as np
from engine import numba_nowrap
from engine.config import load_config
from engine.simulator import SimOptions, simulate_trace
from engine.trace import TraceChunk, write_trace

out = Path(sys.argv[1])
rng = np.random.default_rng(11)

def trace(name, n, span, writes, stride=None):
    p = out / f"{name}.trace"
    if stride:
        addrs = (np.arange(n) * stride) % span
    else:
        addrs = rng.integers(0, span // 64, n) * 64
    write_trace(p, TraceChunk(addrs.astype(np.uint64), rng.random(n) < writes,
                              2 * np.arange(n, dtype=np.int64), np.zeros(n, np.uint16)))
    return p

ddr4 = load_config("DDR4-3200")
hbm2 = load_config("HBM2")
span = 1 << 30
mixed = trace("mixed", 3000, span, 0.4)
reads = trace("reads", 3000, span, 0.0)
stream = trace("stream", 3000, span, 0.3, stride=64)
hot = trace("hot", 3000, 1 << 16, 0.5)         # few lines: pending-read merges, R/W hazards
cases = [
    ("ddr4 open", ddr4, {}, mixed),
    ("ddr4 close", ddr4.replace(page_policy="close", row_buf_policy="CLOSE_PAGE"), {}, mixed),
    ("ddr4 per-rank queues", ddr4.replace(queue_structure="PER_RANK"), {}, mixed),
    ("ddr4 unified queue", ddr4.replace(unified_queue=True), {}, hot),
    ("ddr4 fcfs", ddr4.replace(scheduler="fcfs"), {}, mixed),
    ("ddr4 frfcfs adaptive", ddr4.replace(scheduler="frfcfs", page_policy="open_adaptive"),
     {}, mixed),
    ("ddr4 parbs early", ddr4.replace(scheduler="parbs", page_policy="early_precharge",
                                      early_precharge_conflicts=1), {}, mixed),
    ("ddr4 bank grouping", ddr4.replace(dynamic_bank_grouping=True), {}, stream),
    ("ddr4 write priority xor", ddr4.replace(write_priority_pct=-75.0,
                                             xor_bank_interleave=True), {}, hot),
    ("ddr4 bank refresh", ddr4.replace(refresh_policy="BANK_LEVEL_STAGGERED"), {}, reads),
    ("ddr4 self refresh", ddr4.replace(enable_self_refresh=True, sref_threshold=100), {},
     stream),
    ("ddr4 cmd trace, cycles", ddr4,
     {"cmd_trace": out / "cmd", "cycles": 9000, "track_completions": True}, mixed),
    ("ddr4 per-channel intake", load_config("DDR4-3200-8ch"), {"intake": "per-channel"},
     mixed),
    ("ddr4 phantom eof, max cycles", ddr4, {"phantom_eof_read": True, "max_cycles": 7000},
     hot),
    ("hbm2", hbm2, {}, mixed),
    ("hbm2 threads", hbm2, {"threads": 2, "chunk_size": 512}, stream),
    ("hbm2 wrap", hbm2, {"wrap_addresses": True}, trace("wide", 2000, 1 << 36, 0.3)),
]
for preset in ("DDR5-4800B", "LPDDR5-6400", "HBM3-6400", "GDDR6", "LPDDR4-3200"):
    cases.append((preset, load_config(preset), {}, mixed))
ddr5 = load_config("DDR5-4800B").replace(refresh_policy="SAME_BANK_STAGGERED")
gddr6 = load_config("GDDR6")
cases += [
    ("ddr5 same-bank refresh", ddr5, {}, reads),
    ("ddr5 same-bank refresh frfcfs", ddr5.replace(scheduler="frfcfs"), {}, mixed),
    ("ddr4 simultaneous refresh", ddr4.replace(refresh_policy="RANK_LEVEL_SIMULTANEOUS"), {},
     reads),
    ("ddr4 per-rank frfcfs bank refresh", ddr4.replace(queue_structure="PER_RANK",
                                                       scheduler="frfcfs",
                                                       refresh_policy="BANK_LEVEL_STAGGERED"),
     {}, mixed),
    ("gddr6 per-rank close", gddr6.replace(queue_structure="PER_RANK", page_policy="close",
                                           row_buf_policy="CLOSE_PAGE"), {}, mixed),
    ("ddr4 lower write priority", ddr4.replace(write_priority_pct=75.0), {}, hot),
]
done = {}
for name, cfg, opts, tr in cases:
    st = simulate_trace(cfg, tr, SimOptions(epoch=0, **opts))
    done[name] = int(st.summary["num_reads_done"]) + int(st.summary["num_writes_done"])
# the checks this run relies on were in force: wrap-around off, bounds checked
assert numba_nowrap.installed() and numba.config.BOUNDSCHECK, "hook or bounds checks off"
print(json.dumps(done))
"""


def test_kernels_never_index_negatively(tmp_path: Path) -> None:
    env = dict(os.environ)
    env.update(NUMBA_BOUNDSCHECK="1", DIFFMEM_KERNEL="jit",
               NUMBA_CACHE_DIR=str(tmp_path / "numba"), OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    done = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(done) == 28
    # every case simulated requests (a case that ran nothing would check nothing)
    assert all(v > 0 for v in done.values()), done
