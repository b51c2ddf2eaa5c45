"""Re-score a cosim result's validation schedules with the current DRAM term, calibration only
(no refit), against the engine figures stored in the result, beside the calibrated figures the
run itself recorded (the term of the commit that made it): same schedules, same engine
measurements, so a change of the term is measured without re-running the engine.

    .venv/bin/python benchmarks/rescore_validation.py R.json [R2.json ...] [--cache-dir DIR]

Per schedule: DRAM time and energy ratio model/engine, recorded -> current; per result: the
median and worst (furthest from 1) of each, and Kendall tau of EDP under each model.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from optimizer import cosim, validation                      # noqa: E402
from optimizer.costmodel import evaluate_schedule              # noqa: E402
from optimizer.dram_model import model_parts                   # noqa: E402
from optimizer.hardware import load_hardware                   # noqa: E402
from optimizer.mapping import Schedule                         # noqa: E402
from optimizer.space import SearchSpace                        # noqa: E402
from optimizer.workload import load_network                    # noqa: E402


def _worst(xs: list[float]) -> float:
    return xs[int(np.argmax(np.abs(np.log(xs))))]


def _tau(a: list[float], b: list[float]) -> float:
    n, s = len(a), 0
    for i in range(n):
        for j in range(i + 1, n):
            s += int(np.sign(a[i] - a[j]) * np.sign(b[i] - b[j]))
    return 2.0 * s / (n * (n - 1)) if n > 1 else 1.0


def rescore(path: str, cache_dir: str | None) -> dict:
    d = json.loads(Path(path).read_text())
    net = load_network(d["network"])
    hw = load_hardware("large" if d["hardware"] == "gemmini-large" else d["hardware"])
    memory = cosim.load_memory(d["memory"])
    its = d["iterations"]
    loop = ([Schedule.from_json(it["schedule"]) for it in its if it.get("kept")]
            + [Schedule.from_json(it["schedule"]) for it in its if not it.get("kept")])
    v = d["summary"]["validation"]
    picks = validation.candidates(SearchSpace.build(net, hw), loop, v["schedules"],
                                  seed=d["seed"])
    dhw = cosim.dram_hardware(hw, memory, layout=d["layout"], cache_dir=cache_dir)
    rows = []
    for (source, s), p in zip(picks, v["points"]):
        with torch.no_grad():
            parts = model_parts(net, s, dhw)
            edp = evaluate_schedule(net, s, dhw).edp
        t = sum(x["time"] for x in parts)
        e = sum(x["background"] + x["refresh"] + x["data"] + x["act"] for x in parts)
        rows.append({"source": source, "requests": p["requests"],
                     "time_old": p["model_dram_cycles_calibrated"] / p["engine_dram_cycles"],
                     "time_new": t / p["engine_dram_cycles"],
                     "energy_old": p["model_dram_pj_calibrated"] / p["engine_dram_pj"],
                     "energy_new": e / p["engine_dram_pj"],
                     "edp_old": p["model_edp_calibrated"], "edp_new": edp,
                     "engine_edp": p["engine_edp"]})
    out = {"network": d["network"], "memory": d["memory"], "rows": rows}
    eng = [r["engine_edp"] for r in rows]
    for k in ("old", "new"):
        out[f"tau_{k}"] = _tau([r[f"edp_{k}"] for r in rows], eng)
        for q in ("time", "energy"):
            xs = [r[f"{q}_{k}"] for r in rows]
            out[f"{q}_median_{k}"] = float(np.median(xs))
            out[f"{q}_worst_{k}"] = _worst(xs)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--json", default=None, help="write the figures here too")
    a = ap.parse_args()
    allr = []
    for path in a.results:
        r = rescore(path, a.cache_dir)
        allr.append(r)
        print(f"{r['network']} on {r['memory']} (model/engine, calibration only; "
              f"recorded -> current term)")
        for x in r["rows"]:
            print(f"  {x['source']:10s} {x['requests']:9d}  time {x['time_old']:.3f} -> "
                  f"{x['time_new']:.3f}   energy {x['energy_old']:.3f} -> {x['energy_new']:.3f}")
        print(f"  tau {r['tau_old']:.3f} -> {r['tau_new']:.3f}; time median "
              f"{r['time_median_old']:.3f} -> {r['time_median_new']:.3f}, worst "
              f"{r['time_worst_old']:.3f} -> {r['time_worst_new']:.3f}; energy median "
              f"{r['energy_median_old']:.3f} -> {r['energy_median_new']:.3f}, worst "
              f"{r['energy_worst_old']:.3f} -> {r['energy_worst_new']:.3f}")
    if a.json:
        Path(a.json).write_text(json.dumps(allr, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
