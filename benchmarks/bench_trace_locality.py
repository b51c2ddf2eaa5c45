"""Row-buffer locality of generated workload traces, by phase and by operator class.

    python benchmarks/bench_trace_locality.py --workload ddpm --batch 8 --small \
        --memories DDR4-3200 DDR4-3200-8ch HBM2 [--spec '{"address_hash": "gpu"}']

For every memory config: generate the trace for that config (the address hash and the
capacity check depend on it), then simulate on the engine with every request due at cycle 0
(saturated: the controller takes requests as fast as its queues allow, so the row-buffer hit
rate and bandwidth are the DRAM's, not the arrival gaps') -- the whole trace, then the
requests of each phase and of each operator class as their own traces (classes: ``gemm``
= matrix multiplies and convolutions, ``elementwise`` = everything else outside the
optimizer, ``optimizer`` = the optimizer step; the end-of-step write-back is ``flush``).
A phase's or class's hit rate is therefore that stream's own locality, without the
interference of the neighbouring operators.  A (sub-)trace longer than ``--max-requests``
is simulated on 20 evenly spaced contiguous stretches of it (locality is a property of
contiguous stretches; the bound keeps a run within minutes on a shared machine).  Prints one
JSON line per config.

``--spec`` passes extra :class:`~engine.workloads.generate.TraceSpec` fields as JSON, so the
same script measures before/after variants (``{"order": "sequential", ...}``).
"""
from __future__ import annotations

import argparse
import inspect
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SMALL_DDPM = {"ch": 32, "ch_mult": (1, 2, 2, 2), "num_res_blocks": 1,
              "attn_resolutions": (16,)}
TILED = {"mm", "addmm", "bmm", "baddbmm", "convolution", "convolution_backward",
         "_convolution", "linear", "matmul", "addbmm"}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _simulate(cfg, addr: np.ndarray, is_write: np.ndarray, cap: int) -> dict:
    from engine.simulator import SimOptions, Simulator

    n_all = int(addr.shape[0])
    if cap and n_all > cap:          # 20 evenly spaced contiguous stretches of the stream
        starts = np.linspace(0, n_all - cap // 20, 20).astype(np.int64)
        idx = (starts[:, None] + np.arange(cap // 20)[None, :]).reshape(-1)
        addr, is_write = addr[idx], is_write[idx]

    sim = Simulator(cfg, SimOptions())
    try:
        step = 1 << 20
        for i in range(0, addr.shape[0], step):
            sim.feed(addr[i:i + step], is_write[i:i + step],
                     np.zeros(min(step, addr.shape[0] - i), np.int64))
        s = sim.finish().summary
    finally:
        sim.close()
    return {"requests": n_all, "simulated": int(addr.shape[0]),
            "row_hit_rate": s["row_hit_rate"],
            "bandwidth_GBps": s["average_bandwidth"], "cycles": s["num_cycles"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workload", default="ddpm")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--resolution", type=int)
    ap.add_argument("--small", action="store_true", help="the small DDPM of bench_workloads")
    ap.add_argument("--size", default="paper")
    ap.add_argument("--sample", type=float)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--memories", nargs="+", default=["DDR4-3200", "DDR4-3200-8ch", "HBM2"])
    ap.add_argument("--spec", default="{}", help="extra TraceSpec fields (JSON)")
    ap.add_argument("--label", default="")
    ap.add_argument("--max-requests", type=int, default=2_000_000,
                    help="simulate at most this many requests per (sub-)trace: 20 evenly "
                         "spaced contiguous stretches (0: all)")
    args = ap.parse_args()

    import h5py

    from engine.config import load_config
    from engine.workloads.generate import TraceSpec, generate_trace

    extra = json.loads(args.spec)
    known = set(inspect.signature(TraceSpec).parameters)
    bad = set(extra) - known
    if bad:
        raise SystemExit(f"--spec: unknown TraceSpec fields {sorted(bad)}")
    with tempfile.TemporaryDirectory() as tmp:
        for mem in args.memories:
            cfg = load_config(mem)
            spec = TraceSpec(args.workload, batch=args.batch, resolution=args.resolution,
                             size=args.size, sample=args.sample, seed=args.seed, memory=mem,
                             overrides=SMALL_DDPM if args.small else {}, **extra)
            c0 = _cpu()
            out = Path(tmp) / f"{mem}.h5"
            summary = generate_trace(spec, out)
            c_gen = _cpu() - c0
            with h5py.File(out, "r") as f:
                g = f["trace"]
                addr = g["addr"][...]
                isw = g["is_write"][...].astype(bool)
                phase = g["phase"][...]
                op = g["op"][...]
                names = [n.decode() for n in f["ops"]["name"][...]]
                phases = json.loads(g.attrs["phase_names"])
            n_ops = len(names)
            op_class = np.array([("gemm" if n.split(".")[1] in TILED else "elementwise")
                                 for n in names] + ["flush"], dtype=object)
            flush_mask = np.zeros(addr.shape[0], bool)
            nf = summary.get("flush_requests")
            if nf:
                flush_mask[addr.shape[0] - nf:] = True
            elif nf is None:              # older traces: the trailing writes at the last cycle
                with h5py.File(out, "r") as f:
                    cyc = f["trace"]["cycle"][...]
                tail = (cyc == cyc[-1]) & isw
                k = addr.shape[0] - int(np.argmin(tail[::-1])) if not tail.all() else 0
                flush_mask[k:] = True
            cls = op_class[np.minimum(op, n_ops - 1)].copy()
            cls[phase == phases.index("optimizer")] = "optimizer"
            cls[flush_mask] = "flush"
            c0 = _cpu()
            row = {"label": args.label, "memory": mem, "workload": args.workload,
                   "batch": args.batch, "small": args.small, "sample": args.sample,
                   "seed": args.seed, "spec": extra, "generate_cpu_s": round(c_gen, 1),
                   "dram_bytes": summary["dram_bytes"]["read"] + summary["dram_bytes"]["write"],
                   "all": _simulate(cfg, addr, isw, args.max_requests), "by_phase": {}, "by_class": {}}
            for i, p in enumerate(phases):
                m = phase == i
                if m.any():
                    row["by_phase"][p] = _simulate(cfg, addr[m], isw[m], args.max_requests)
            for c in ("gemm", "elementwise", "optimizer", "flush"):
                m = cls == c
                if m.any():
                    row["by_class"][c] = _simulate(cfg, addr[m], isw[m], args.max_requests)
            row["simulate_cpu_s"] = round(_cpu() - c0, 1)
            row["wall_s"] = round(time.time(), 0)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
