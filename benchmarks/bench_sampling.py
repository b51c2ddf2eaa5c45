"""Stratified sampling of workload traces: error against full generation, seed-to-seed spread.

    python benchmarks/bench_sampling.py error [--batch 16] [--sample 0.05] [--seeds 0 1 2]
        the small DDPM of bench_workloads (ch 32, ch_mult 1,2,2,2, one res block, 32x32):
        a full trace and one sampled trace per seed; per phase and direction the sampled
        estimate's error against the full run, whether the full value lies in the 95 %
        interval, and the phase's share of the step's bytes -- for the estimator (what the
        cache simulation measured at converged positions, the rest from the kept windows)
        and for the kept windows alone (windows_only_*)
    python benchmarks/bench_sampling.py spread [--workload ddpm] [--batch 8] [--sample 0.01]
        the paper-size model (DDPM 256x256 by default) sampled with each seed: per-phase
        estimates, intervals, the optimizer floor, and the analytic floor of the whole step

Traces go to a temporary folder.  One JSON line per trace; CPU seconds per generation.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SMALL_DDPM = {"ch": 32, "ch_mult": (1, 2, 2, 2), "num_res_blocks": 1,
              "attn_resolutions": (16,)}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _row(s: dict, cpu: float, **extra) -> dict:
    e = s.get("extrapolated")
    return {**extra, "cpu_s": round(cpu, 1), "requests": s["requests"],
            "parameters": s["parameters"], "footprint_bytes": s["footprint_bytes"],
            "by_phase": (e or s)["dram_bytes"]["by_phase"],
            "ci95_by_phase": e["ci95_by_phase"] if e else None,
            "windows_only_by_phase": e.get("windows_only_by_phase") if e else None,
            "windows_only_ci95_by_phase": e.get("windows_only_ci95_by_phase") if e else None,
            "converged_share_by_phase": e.get("converged_share_by_phase") if e else None,
            "floored": e["floored"] if e else None,
            "floor_bytes_by_phase": s["floor_bytes_by_phase"],
            "analytic_floor_bytes": s["analytic_floor_bytes"],
            "l2_hit_rate": s["l2_hit_rate"], "total_bytes": (
                (e or s)["dram_bytes"]["read"] + (e or s)["dram_bytes"]["write"]),
            "operators_expanded": s["operators_expanded"], "operators": s["operators"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("error", "spread"))
    ap.add_argument("--workload", default="ddpm")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--resolution", type=int)
    ap.add_argument("--sample", type=float)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--memory", default="DDR4-3200-8ch")
    ap.add_argument("--cache-mib", type=float, default=40.0,
                    help="L2 size; a small L2 on the small DDPM puts its optimizer lists "
                         "far above the cache, as at paper size (issue 12b)")
    ap.add_argument("--windows", type=int,
                    help="windows the stream is cut into (default: auto_windows); few "
                         "windows leave gaps longer than the warm-up, as at paper size")
    ap.add_argument("--no-census", action="store_true",
                    help="extrapolate the optimizer phase from its kept windows instead of "
                         "running it whole through the cache model (the estimator before "
                         "issue 12b)")
    args = ap.parse_args()
    census = {"census_phases": ()} if args.no_census else {}

    from engine.workloads.generate import TraceSpec, generate_trace

    with tempfile.TemporaryDirectory() as tmp:
        if args.mode == "error":
            kw = dict(batch=args.batch or 16, resolution=args.resolution or 32,
                      overrides=SMALL_DDPM, memory=args.memory,
                      cache_bytes=int(args.cache_mib * 2 ** 20))
            c0 = _cpu()
            full = generate_trace(TraceSpec(args.workload, **kw), Path(tmp) / "full.h5")
            print(json.dumps(_row(full, _cpu() - c0, kind="full")), flush=True)
            fb = full["dram_bytes"]
            total = fb["read"] + fb["write"]
            for seed in args.seeds:
                c0 = _cpu()
                s = generate_trace(TraceSpec(args.workload, **kw, sample=args.sample or 0.05,
                                             seed=seed, windows=args.windows, **census),
                                   Path(tmp) / f"s{seed}.h5")
                row = _row(s, _cpu() - c0, kind="sampled", seed=seed)
                err = {}
                for p, v in fb["by_phase"].items():
                    for d in ("read", "write"):
                        if v[d] == 0:
                            continue
                        est = row["by_phase"][p][d]
                        lo, hi = row["ci95_by_phase"][p][d]
                        w_est = row["windows_only_by_phase"][p][d]
                        wlo, whi = row["windows_only_ci95_by_phase"][p][d]
                        err[f"{p}.{d}"] = {"full": v[d], "share": v[d] / total,
                                           "rel_error": est / v[d] - 1.0,
                                           "in_ci": bool(lo <= v[d] <= hi),
                                           "windows_only_rel_error": w_est / v[d] - 1.0,
                                           "windows_only_in_ci": bool(wlo <= v[d] <= whi)}
                # per phase (reads + writes), as RESULTS reports it
                for p, v in fb["by_phase"].items():
                    f = v["read"] + v["write"]
                    if f:
                        est = sum(row["by_phase"][p][d] for d in ("read", "write"))
                        w_est = sum(row["windows_only_by_phase"][p][d]
                                    for d in ("read", "write"))
                        err[p] = {"full": f, "share": f / total, "rel_error": est / f - 1.0,
                                  "windows_only_rel_error": w_est / f - 1.0,
                                  "converged_share": row["converged_share_by_phase"][p]}
                row["errors"] = err
                print(json.dumps(row), flush=True)
        else:
            for seed in args.seeds:
                c0 = _cpu()
                s = generate_trace(TraceSpec(args.workload, batch=args.batch or 8,
                                             resolution=args.resolution,
                                             sample=args.sample or 0.01, seed=seed,
                                             memory=args.memory, windows=args.windows,
                                             **census), Path(tmp) / f"s{seed}.h5")
                print(json.dumps(_row(s, _cpu() - c0, kind="sampled", seed=seed)), flush=True)
                (Path(tmp) / f"s{seed}.h5").unlink()


if __name__ == "__main__":
    main()
