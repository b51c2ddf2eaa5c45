"""The seed document's four claims re-measured on GPU-like traces (bounded: small steps).

    python benchmarks/run_claims.py [--out /tmp/diffmem-claims] [--workers 1]

Traces (``engine.workloads`` defaults: thread-block order, 2 MiB random frames, sectored L2,
GPU address hash) of the small DDPM of bench_workloads (ch 32, 32x32 images) and ResNet-50 at
32x32, batch 8 (and 16 for the batch claim), generated for the seed's platform
(DDR4-3200-8ch); for the GDDR6-vs-DDR4 claim the studies re-place the same traces for
DDR4-3200 and GDDR6 (each memory's capacity and hash, engine.studies.placed).  Studies (every request due at once, "saturate"): timing (tRCD 18, 22,
26, 30), hotspots, technology, batch, memshare.  Prints each study's findings; reports and
findings.json under --out.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SMALL_DDPM = {"ch": 32, "ch_mult": (1, 2, 2, 2), "num_res_blocks": 1,
              "attn_resolutions": (16,)}


def _recipes() -> tuple[list, list]:
    from engine.studies.suite import TraceRecipe
    main = [TraceRecipe("ddpm", "ddpm", 8, 32, overrides=SMALL_DDPM, kind="diffusion"),
            TraceRecipe("resnet50", "resnet50", 8, 32, sample=0.1, kind="cnn")]
    batch = [TraceRecipe("ddpm-b16", "ddpm", 16, 32, overrides=SMALL_DDPM, kind="diffusion"),
             TraceRecipe("resnet50-b16", "resnet50", 16, 32, sample=0.1, kind="cnn")]
    return main, batch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/diffmem-claims"))
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    from engine.studies import StudySetup
    from engine.studies.suite import make_traces, print_result, run_suite
    main_r, batch_r = _recipes()
    main_t = make_traces(args.out / "traces", main_r, print)
    batch_t = make_traces(args.out / "traces", batch_r, print)
    runs = {
        "timing": StudySetup(main_t, config="DDR4-3200-8ch", arrival="saturate",
                             params={"tRCD": [18, 22, 26, 30]}),
        "hotspots": StudySetup(main_t, config="DDR4-3200-8ch", arrival="saturate"),
        # the same traces, re-placed by the study for each memory (its capacity and hash)
        "technology": StudySetup(main_t, arrival="saturate",
                                 params={"configs": ["DDR4-3200", "GDDR6"]}),
        "batch": StudySetup(main_t + batch_t, config="DDR4-3200-8ch", arrival="saturate"),
        # the traces' own compute model (fp32, utilisation 0.5, band 0.3-0.7), DRAM on the
        # seed's platform
        "memshare": StudySetup(main_t, config="DDR4-3200-8ch",
                               params={"configs": ["DDR4-3200-8ch"]}),
    }
    run_suite(runs, args.out, workers=args.workers, only=args.only, report=print_result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
