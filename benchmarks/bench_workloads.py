"""Workload trace generation: throughput, peak memory and sampled-mode extrapolation error.

    python benchmarks/bench_workloads.py full [--workload ddpm] [--batch 8]
        one full training-step trace (paper-size model): requests written per second of wall
        time and the process's peak resident memory
    python benchmarks/bench_workloads.py sampled [--batches 64 128] [--sample 0.05]
        a smaller DDPM (ch 32, ch_mult 1,2,2,2, one res block, 32x32 images): the full trace
        and sampled ones (one per seed) at each batch; the error of the sampled runs'
        extrapolated totals (DRAM bytes read, written, requests) against the full run

Each case runs in a fresh child process so its peak memory is its own.  Results print as
JSON lines.  Traces go to a temporary folder, deleted afterwards.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SMALL_DDPM = {"ch": 32, "ch_mult": (1, 2, 2, 2), "num_res_blocks": 1,
              "attn_resolutions": (16,)}


def _child(args: argparse.Namespace) -> None:
    """Run one generation and print its measurements (in the child process)."""
    sys.path.insert(0, str(REPO))
    from engine.workloads.generate import TraceSpec, generate_trace

    spec = TraceSpec(args.workload, batch=args.batch, resolution=args.resolution,
                     sample=args.sample, seed=args.seed,
                     overrides=SMALL_DDPM if args.small else {})
    t0 = time.perf_counter()
    s = generate_trace(spec, Path(args.out))
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({
        "workload": args.workload, "batch": args.batch, "small": args.small,
        "sample": args.sample, "seconds": wall, "requests": s["requests"],
        "requests_per_s": s["requests"] / wall, "peak_rss_bytes": peak,
        "file_bytes": Path(args.out).stat().st_size, "operators": s["operators"],
        "read_bytes": s["dram_bytes"]["read"], "write_bytes": s["dram_bytes"]["write"],
        "footprint_bytes": s["footprint_bytes"], "step_time_ns": s["step_time_ns"],
        "extrapolated": s.get("extrapolated"),
    }))


def _run_child(**kw: object) -> dict:
    cmd = [sys.executable, __file__, "_child"]
    for k, v in kw.items():
        if v is None or v is False:
            continue
        cmd.append("--" + k.replace("_", "-"))
        if v is not True:
            cmd.append(str(v))
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("full")
    f.add_argument("--workload", default="ddpm")
    f.add_argument("--batch", type=int, default=8)
    s = sub.add_parser("sampled")
    s.add_argument("--batches", type=int, nargs="+", default=[64, 128])
    s.add_argument("--sample", type=float, default=0.05)
    s.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    c = sub.add_parser("_child")
    c.add_argument("--workload", default="ddpm")
    c.add_argument("--batch", type=int, required=True)
    c.add_argument("--resolution", type=int)
    c.add_argument("--sample", type=float)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--small", action="store_true")
    c.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.cmd == "_child":
        _child(args)
        return
    with tempfile.TemporaryDirectory(dir=REPO / "build" if (REPO / "build").is_dir()
                                     else None) as tmp:
        if args.cmd == "full":
            print(json.dumps(_run_child(workload=args.workload, batch=args.batch,
                                        out=f"{tmp}/full.h5")), flush=True)
            return
        for b in args.batches:
            full = _run_child(batch=b, resolution=32, small=True, out=f"{tmp}/f{b}.h5")
            print(json.dumps({"batch": b, "full": full}), flush=True)
            for seed in args.seeds:
                smp = _run_child(batch=b, resolution=32, small=True, sample=args.sample,
                                 seed=seed, out=f"{tmp}/s{b}.h5")
                est = smp["extrapolated"]
                err = {
                    "read": est["dram_bytes"]["read"] / full["read_bytes"] - 1,
                    "write": est["dram_bytes"]["write"] / full["write_bytes"] - 1,
                    "requests": est["requests"] / full["requests"] - 1,
                }
                print(json.dumps({"batch": b, "sample": args.sample, "seed": seed,
                                  "speedup": full["seconds"] / smp["seconds"],
                                  "sampled": smp, "relative_error": err}), flush=True)


if __name__ == "__main__":
    main()
