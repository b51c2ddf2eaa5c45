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

    python benchmarks/bench_sampling.py design [--batch 16] [--sample 0.05] [--seeds 0 1 2]
        bias or variance: one full run of the small DDPM records every stream position's
        issued lines and DRAM requests; the sampling design (same windows and strata as a
        sampled run) is then evaluated exactly on those counts -- the windows-only
        estimator's expectation over the random start (bias), its spread (standard
        deviation), and how often its 95 % interval holds the truth (coverage, Monte Carlo
        over independent starts per stratum) -- and the sampled runs of ``--seeds`` are
        compared stratum by stratum with the same design at their own start (any difference
        is the cache state their warm-ups left, not the estimator)

    python benchmarks/bench_sampling.py full [--workload ddpm] [--batch 8] [--resolution 256]
        the paper-size model generated whole, its requests counted but not written (a
        DDPM 256x256 step is about 2 billion requests): the truth the ``spread`` estimates
        are compared with

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
            "floor_without_l2_bytes": s["floor_without_l2_bytes"],
            "l2_hit_rate": s["l2_hit_rate"], "total_bytes": (
                (e or s)["dram_bytes"]["read"] + (e or s)["dram_bytes"]["write"]),
            "operators_expanded": s["operators_expanded"], "operators": s["operators"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("error", "spread", "design", "full"))
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
    ap.add_argument("--draws", type=int, default=4000,
                    help="design: Monte Carlo draws of the strata's starts for coverage")
    ap.add_argument("--estimator", default="mixed",
                    choices=("mixed", "ratio", "ratio-all", "expansion"),
                    help="design: the stratum estimator evaluated (mixed, the generator's: "
                         "reads by the window's issued reads, writes by all its issued "
                         "lines; ratio: both by the issued lines of their direction (before "
                         "issue 12s); ratio-all: both by all issued lines; "
                         "expansion: N/n sum y)")
    ap.add_argument("--warmup-factor", type=float,
                    help="design: warm-up before each kept window in L2 capacities "
                         "(default: the generator's WARMUP_FACTOR)")
    args = ap.parse_args()
    census = {"census_phases": ()} if args.no_census else {}

    from engine.workloads.generate import TraceSpec, generate_trace

    with tempfile.TemporaryDirectory() as tmp:
        if args.mode == "design":
            _design(args, census, Path(tmp))
        elif args.mode == "full":
            import engine.workloads.generate as gen

            class _Discard:
                """Counts nothing, writes nothing: the summary is all that is wanted."""

                def __init__(self, path: Path, compression: str | None) -> None:
                    self.n = 0

                def append(self, cols: dict) -> None:
                    self.n += cols["addr"].shape[0]

                def finish(self, attrs: dict, ops: dict) -> None:
                    pass

                def abort(self) -> None:
                    pass

            gen._Writer = _Discard
            c0 = _cpu()
            s = generate_trace(TraceSpec(args.workload, batch=args.batch or 8,
                                         resolution=args.resolution, memory=args.memory),
                               Path(tmp) / "full.h5")
            print(json.dumps(_row(s, _cpu() - c0, kind="full")), flush=True)
        elif args.mode == "error":
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


def _design(args: argparse.Namespace, census: dict, tmp: Path) -> None:
    """The ``design`` mode (module docstring)."""
    import h5py
    import numpy as np

    from engine.workloads.capture import PATTERNS, PHASES
    from engine.workloads.expand import LINE_BYTES
    from engine.workloads.generate import TraceSpec, auto_windows, generate_trace
    from engine.workloads.sampling import (Z95, design_distribution, stratum_estimate,
                                           stratum_window_sums, t975)

    import engine.workloads.generate as gen
    if args.warmup_factor is not None:
        gen.WARMUP_FACTOR = args.warmup_factor
    kw = dict(batch=args.batch or 16, resolution=args.resolution or 32,
              overrides=SMALL_DDPM, memory=args.memory,
              cache_bytes=int(args.cache_mib * 2 ** 20))
    sample = args.sample or 0.05
    parts: list = []

    def observe(g0, iw, src, dw) -> None:
        parts.append((g0, iw.copy(), src.copy(), dw.copy()))

    c0 = _cpu()
    full = generate_trace(TraceSpec(args.workload, **kw), tmp / "full.h5", observe=observe)
    cpu_full = _cpu() - c0
    with h5py.File(tmp / "full.h5", "r") as h:
        issued = h["ops/issued_lines"][:]
        stratum_of = h["ops/stratum"][:].astype(np.int64)
    lines_per_op = issued.sum(axis=1)
    total = int(lines_per_op.sum())
    xw = np.zeros(total, np.int64)
    yr = np.zeros(total, np.int64)
    yw = np.zeros(total, np.int64)
    for g0, iw, src, dw in parts:
        xw[g0:g0 + iw.shape[0]] = iw
        np.add.at(yw, g0 + src[dw], 1)
        np.add.at(yr, g0 + src[~dw], 1)
    parts.clear()
    cum = [np.concatenate([[0], np.cumsum(a)]) for a in (1 - xw, xw, yr, yw)]
    n_windows = args.windows or auto_windows(total, sample, kw["cache_bytes"] // LINE_BYTES)
    strata = stratum_window_sums(lines_per_op, stratum_of, n_windows, sample, cum)
    n_pat = len(PATTERNS)
    rng = np.random.default_rng(12345)
    truth = np.zeros((len(PHASES), 2))
    draws_est = np.zeros((args.draws, len(PHASES), 2))
    draws_var = np.zeros((args.draws, len(PHASES), 2))
    draws_v2df = np.zeros((args.draws, len(PHASES), 2))
    mean = np.zeros((len(PHASES), 2))
    var_of_est = np.zeros((len(PHASES), 2))
    rows = []
    grid = 2000
    for k, st in enumerate(strata):
        ph = st["label"] // n_pat
        if not st["n_windows"]:
            continue
        xs = [st["sums"][0], st["sums"][1]]
        ys = [st["sums"][2], st["sums"][3]]
        pick = rng.integers(0, grid, args.draws)
        row = {"phase": PHASES[ph], "class": PATTERNS[st["label"] % n_pat],
               "windows": st["n_windows"], "kept": st["n_kept"]}
        for d in (0, 1):
            x_tot = float(xs[d].sum())
            t = float(ys[d].sum())
            if args.estimator == "mixed" and d == 1:     # the generator's estimator
                aux = xs[0] + xs[1]
                aux_tot, fn = float(aux.sum()), stratum_estimate
            elif args.estimator == "ratio-all":
                aux = xs[0] + xs[1]
                aux_tot, fn = float(aux.sum()), stratum_estimate
            elif args.estimator == "expansion":
                aux, aux_tot, fn = np.zeros_like(xs[d]), 0.0, stratum_estimate
            else:
                aux, aux_tot, fn = xs[d], x_tot, stratum_estimate
            est, var = design_distribution(ys[d], aux, aux_tot, st["n_windows"],
                                           st["n_kept"], grid, fn)
            truth[ph, d] += t
            mean[ph, d] += est.mean()
            var_of_est[ph, d] += est.var()
            draws_est[:, ph, d] += est[pick]
            draws_var[:, ph, d] += var[pick]
            if st["n_kept"] > 1:
                draws_v2df[:, ph, d] += var[pick] ** 2 / (st["n_kept"] - 1)
            name = ("read", "write")[d]
            row[name] = {"truth": t, "bias": est.mean() / t - 1 if t else None,
                         "sd": est.std() / t if t else None,
                         "mean_se": float(np.sqrt(var).mean()) / t if t else None,
                         # each seed's start, as kept_windows draws it
                         "at_seed": {s: float(est[min(grid - 1, int(
                             np.random.default_rng([s, 7919 * k + 1]).random() * grid))])
                             for s in args.seeds}}
        rows.append(row)
    out = {"kind": "design", "estimator": args.estimator, "cpu_s_full": round(cpu_full, 1),
           "stream_lines": total,
           "windows": n_windows, "sample": sample, "cache_bytes": kw["cache_bytes"],
           "strata": rows, "phases": {}}
    fb = full["dram_bytes"]
    step = fb["read"] + fb["write"]
    tq = np.vectorize(t975)

    def quantile(v: np.ndarray, v2df: np.ndarray) -> np.ndarray:
        """t quantile at the Welch-Satterthwaite df, as the generator's intervals."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return tq(np.where(v2df > 0, v ** 2 / np.where(v2df > 0, v2df, 1), np.inf))

    for i, p in enumerate(PHASES):
        t = truth[i].sum()
        if not t:
            continue
        e = draws_est[:, i].sum(axis=1)
        se = np.sqrt(draws_var[:, i].sum(axis=1))
        q = quantile(draws_var[:, i].sum(axis=1), draws_v2df[:, i].sum(axis=1))
        out["phases"][p] = {
            "share": (fb["by_phase"][p]["read"] + fb["by_phase"][p]["write"]) / step,
            "bias": float(mean[i].sum() / t - 1),
            "sd": float(np.sqrt(var_of_est[i].sum()) / t),
            "coverage95": float(np.mean(np.abs(e - t) <= q * se)),
            "coverage95_normal": float(np.mean(np.abs(e - t) <= Z95 * se)),
            "mean_rel_halfwidth": float(np.mean(q * se) / t),
            "by_direction": {d: {"bias": float(mean[i, j] / truth[i, j] - 1),
                                 "sd": float(np.sqrt(var_of_est[i, j]) / truth[i, j]),
                                 "coverage95": float(np.mean(
                                     np.abs(draws_est[:, i, j] - truth[i, j])
                                     <= quantile(draws_var[:, i, j], draws_v2df[:, i, j])
                                     * np.sqrt(draws_var[:, i, j])))}
                             for j, d in enumerate(("read", "write")) if truth[i, j]}}
    print(json.dumps(out), flush=True)
    # the sampled runs at the same design, stratum by stratum
    for seed in args.seeds:
        c0 = _cpu()
        s = generate_trace(TraceSpec(args.workload, **kw, sample=sample, seed=seed,
                                     windows=n_windows, **census), tmp / f"s{seed}.h5")
        got = s["extrapolated"]["windows_only_strata"]
        cmp = []
        for row, g in zip(rows, [g for g in got if g["windows"]]):
            for d in ("read", "write"):
                if row[d]["truth"]:
                    design = row[d]["at_seed"][seed] * LINE_BYTES
                    cmp.append({"phase": row["phase"], "class": row["class"], "dir": d,
                                "sampled_bytes": g[f"{d}_bytes"], "design_bytes": design,
                                "sampled_vs_design": g[f"{d}_bytes"] / design - 1
                                if design else None,
                                "sampled_error": g[f"{d}_bytes"] / (row[d]["truth"]
                                                                   * LINE_BYTES) - 1})
        by_phase = {}
        for p in PHASES:
            i = PHASES.index(p)
            t = truth[i].sum() * LINE_BYTES
            rows_p = [c for c in cmp if c["phase"] == p]
            if t and rows_p:
                by_phase[p] = {
                    # what the warm-ups' cache state changed, and the error in all
                    "state_effect": sum(c["sampled_bytes"] - c["design_bytes"]
                                        for c in rows_p) / t,
                    "error": sum(c["sampled_bytes"] for c in rows_p) / t - 1}
        print(json.dumps({"kind": "sampled_vs_design", "seed": seed,
                          "cpu_s": round(_cpu() - c0, 1), "by_phase": by_phase,
                          "strata": cmp}), flush=True)


if __name__ == "__main__":
    main()
