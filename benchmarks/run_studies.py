#!/usr/bin/env python3
"""Run the seven shipped studies on the shipped workloads and print their findings.

    python benchmarks/run_studies.py [--out DIR] [--workers N] [--synthetic]

Traces (``engine.studies.suite``; generated for the seed's platform DDR4-3200-8ch and
re-placed by each study for the memory it runs them on): ``engine.workloads`` training
steps (DDPM and the ResNet-50 CNN baseline at batch 64, LDM super-resolution at 32 and
trajectory DiT at 16, the batches whose steps fit every memory the studies use, 8.6 GB;
DDPM and ResNet-50 also at batch 128 for the batch study), reduced so that the run fits a
2-core machine: DDPM at 32x32 pixels and LDM-SR at 128x128 instead of 256x256, ResNet-50 at
64x64 instead of 224x224, and every trace *sampled*
(only a fraction of the operators expanded, see ``python main.py trace --sample``).
``--synthetic`` uses the small synthetic steps of :mod:`engine.studies.synthetic` instead (no
torch needed).

All studies run with arrival ``saturate`` (requests offered as fast as the memory takes
them): a sampled trace keeps the arrival times of the full step, so with trace timing the
run would mostly measure the gaps between the sampled operators.

Writes ``DIR/traces/*.h5``, one results folder per study (``study.json``, ``results.jsonl``,
``report.html``, ``report.pdf``) and ``DIR/findings.json``; rerunning resumes (finished
points and existing traces are kept).
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.studies import StudySetup, TraceInput  # noqa: E402

def _recipes():
    from engine.studies.suite import TraceRecipe
    main = [TraceRecipe("ddpm", "ddpm", 64, 32, sample=0.02),
            # LDM-SR at batch 32 and DiT at 16: the studies re-place every trace on the
            # one-stack HBM2, GDDR6 and LPDDR4-3200 presets (8.6 GB) and the one-channel
            # DDR4-3200 (17.2 GB); at batch 64 their steps need 10.3 GB and 23.8 GB, and
            # every point of a trace that does not fit its memory fails
            TraceRecipe("ldm-sr", "ldm-sr", 32, 128, sample=0.002),
            TraceRecipe("dit-traj", "dit-traj", 16, None, sample=0.001),
            TraceRecipe("resnet50", "resnet50", 64, 64, sample=0.05)]
    batch = [TraceRecipe("ddpm-b128", "ddpm", 128, 32, sample=0.02),
             TraceRecipe("resnet50-b128", "resnet50", 128, 64, sample=0.05)]
    return main, batch


CLAIMS = {
    "tRCD": "diffusion tRCD sensitivity ≈ 2.3x the CNN's",
    "conflicts": "bank (row) conflicts ≈ 23 % of DRAM energy",
    "batch": "batch 64 → 128 ≈ 7 % better energy efficiency",
    "gddr6": "GDDR6 ≈ 12 % less IO energy than DDR4",
}


def synthetic_traces(folder: Path) -> tuple[list[TraceInput], list[TraceInput]]:
    from engine.studies.synthetic import write_training_step

    main = [write_training_step(folder / "syn-diffusion.h5", "syn-diffusion", "diffusion", 64),
            write_training_step(folder / "syn-cnn.h5", "syn-cnn", "cnn", 64)]
    extra = [write_training_step(folder / "syn-diffusion-b128.h5", "syn-diffusion-b128",
                                 "diffusion", 128),
             write_training_step(folder / "syn-cnn-b128.h5", "syn-cnn-b128", "cnn", 128)]
    return main, extra


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "diffmem-studies")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--synthetic", action="store_true", help="synthetic traces (no torch)")
    ap.add_argument("--only", nargs="*", help="run only these studies")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from engine.studies.suite import make_traces, print_result, run_suite
    tdir = args.out / "traces"
    tdir.mkdir(parents=True, exist_ok=True)
    print(f"traces in {tdir}", flush=True)
    if args.synthetic:
        traces, extra = synthetic_traces(tdir)
        traces = [t.resolved() for t in traces]
        extra = [t.resolved() for t in extra]
    else:
        main_r, batch_r = _recipes()
        traces, extra = make_traces(tdir, main_r, print), make_traces(tdir, batch_r, print)
    main_traces = traces
    batch_traces = [t for t in traces if t.batch] + extra
    for t in main_traces + extra:
        print(f"  {t.label}: kind {t.kind}, batch {t.batch}, flops {t.flops:.3g}" if t.flops
              else f"  {t.label}: kind {t.kind}, batch {t.batch}")
    runs = {
        "timing": StudySetup(main_traces, config="DDR4-3200", arrival="saturate",
                             params={"tRCD": [18, 20, 22, 24, 26, 30], "tRP": [18, 22, 26, 30],
                                     "tRAS": [44, 52, 60]}),
        "architecture": StudySetup(main_traces, config="DDR4-3200", arrival="saturate"),
        "policy": StudySetup(main_traces, config="DDR4-3200", arrival="saturate"),
        "technology": StudySetup(main_traces, arrival="saturate"),
        "hotspots": StudySetup(main_traces, config="DDR4-3200", arrival="saturate"),
        "batch": StudySetup(batch_traces, config="HBM2", arrival="saturate"),
        # an A100 40 GB has 5 HBM2 stacks (the HBM2 preset is one, 8 channels); the traces
        # are float32 steps: A100 FP32 peak 19.5 TFLOP/s (312 is BF16 tensor-core peak)
        "memshare": StudySetup(main_traces, config="HBM2",
                               compute={"memory_copies": 5, "peak_flops": 19.5e12},
                               params={"configs": ["HBM2", "DDR4-3200"]}),
    }
    run_suite(runs, args.out, workers=args.workers, only=args.only, report=print_result)
    print(f"\nfindings: {args.out / 'findings.json'}")
    print("claims to compare: " + "; ".join(CLAIMS.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
