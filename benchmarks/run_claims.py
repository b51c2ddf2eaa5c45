"""The seed document's four claims re-measured on GPU-like traces (bounded: small steps).

    python benchmarks/run_claims.py [--out /tmp/diffmem-claims] [--workers 1]

Traces (``engine.workloads`` defaults: thread-block order, 2 MiB random frames, sectored L2,
GPU address hash) of the small DDPM of bench_workloads (ch 32, 32x32 images) and ResNet-50 at
32x32, batch 8 (and 16 for the batch claim), generated for the seed's platform
(DDR4-3200-8ch); for the GDDR6-vs-DDR4 claim the same steps generated for GDDR6 without the
address hash (a hash is specific to one memory's mapping, and GDDR6 has 8 GB), simulated on
DDR4-3200 and GDDR6.  Studies (every request due at once, "saturate"): timing (tRCD 18, 22,
26, 30), hotspots, technology, batch, memshare.  Prints each study's findings; reports and
findings.json under --out.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SMALL_DDPM = {"ch": 32, "ch_mult": (1, 2, 2, 2), "num_res_blocks": 1,
              "attn_resolutions": (16,)}
# label -> (workload, batch, resolution, sample, memory, address hash)
MAIN = {"ddpm": ("ddpm", 8, 32, None, "DDR4-3200-8ch", "gpu"),
        "resnet50": ("resnet50", 8, 32, 0.1, "DDR4-3200-8ch", "gpu")}
BATCH = {"ddpm-b16": ("ddpm", 16, 32, None, "DDR4-3200-8ch", "gpu"),
         "resnet50-b16": ("resnet50", 16, 32, 0.1, "DDR4-3200-8ch", "gpu")}
TECH = {"ddpm-g6": ("ddpm", 8, 32, None, "GDDR6", "none"),
        "resnet50-g6": ("resnet50", 8, 32, 0.1, "GDDR6", "none")}


def _traces(folder: Path, recipes: dict) -> list:
    from engine.studies import TraceInput
    from engine.workloads.generate import TraceSpec, generate_trace
    out = []
    for label, (wl, batch, res, sample, mem, hsh) in recipes.items():
        path = folder / f"{label}.h5"
        if not path.is_file():
            s = generate_trace(TraceSpec(wl, batch=batch, resolution=res, sample=sample,
                                         memory=mem, address_hash=hsh,
                                         overrides=SMALL_DDPM if wl == "ddpm" else {}), path)
            print(f"  trace {label}: {s['requests']} requests", flush=True)
        out.append(TraceInput(label=label, path=str(path),
                              kind="cnn" if wl == "resnet50" else "diffusion").resolved())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/diffmem-claims"))
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    from engine.studies import StudySetup, get_study, load_results, render_report, run_study
    tdir = args.out / "traces"
    tdir.mkdir(parents=True, exist_ok=True)
    main_t, batch_t, tech_t = _traces(tdir, MAIN), _traces(tdir, BATCH), _traces(tdir, TECH)
    runs = {
        "timing": StudySetup(main_t, config="DDR4-3200-8ch", arrival="saturate",
                             params={"tRCD": [18, 22, 26, 30]}),
        "hotspots": StudySetup(main_t, config="DDR4-3200-8ch", arrival="saturate"),
        "technology": StudySetup(tech_t, arrival="saturate",
                                 params={"configs": ["DDR4-3200", "GDDR6"]}),
        "batch": StudySetup(main_t + batch_t, config="DDR4-3200-8ch", arrival="saturate"),
        # the traces' own compute model (fp32, utilisation 0.5, band 0.3-0.7), DRAM on the
        # seed's platform
        "memshare": StudySetup(main_t, config="DDR4-3200-8ch",
                               params={"configs": ["DDR4-3200-8ch"]}),
    }
    found = {}
    for name, setup in runs.items():
        if args.only and name not in args.only:
            continue
        c0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime
        t0 = time.monotonic()
        folder = args.out / name
        outcome = run_study(name, setup, folder=folder, workers=args.workers)
        document, records = load_results(folder)
        analysis = get_study(name).analyse(document, records)
        render_report(document, records, folder)
        print(f"\n== {name}: {len(outcome.records)} points in {time.monotonic() - t0:.0f} s "
              f"wall ({resource.getrusage(resource.RUSAGE_SELF).ru_utime - c0:.0f} s CPU in "
              "this process)", flush=True)
        for f in analysis.findings:
            print(f"  - {f.text}", flush=True)
        found[name] = [{"key": f.key, "text": f.text, "value": f.value, "error": f.error}
                       for f in analysis.findings]
    (args.out / "findings.json").write_text(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
