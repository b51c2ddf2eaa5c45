#!/usr/bin/env python3
"""Run the seven shipped studies on the shipped workloads and print their findings.

    python benchmarks/run_studies.py [--out DIR] [--workers N] [--synthetic]

Traces: ``engine.workloads`` training steps (DDPM, LDM super-resolution, trajectory DiT and
the ResNet-50 CNN baseline, batch 64; DDPM and ResNet-50 also at batch 128 for the batch
study), reduced so that the run fits a 2-core machine: DDPM at 32x32 pixels and LDM-SR at
128x128 instead of 256x256, ResNet-50 at 64x64 instead of 224x224, and every trace *sampled*
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
import json
import logging
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.studies import StudySetup, TraceInput, get_study, run_study  # noqa: E402

# label -> (workload, batch, resolution or None, sample fraction)
WORKLOADS = {
    "ddpm": ("ddpm", 64, 32, 0.02),
    "ldm-sr": ("ldm-sr", 64, 128, 0.002),
    "dit-traj": ("dit-traj", 64, None, 0.001),
    "resnet50": ("resnet50", 64, 64, 0.05),
}
BATCH_128 = {"ddpm-b128": ("ddpm", 128, 32, 0.02),
             "resnet50-b128": ("resnet50", 128, 64, 0.05)}
CLAIMS = {
    "tRCD": "diffusion tRCD sensitivity ≈ 2.3x the CNN's",
    "conflicts": "bank (row) conflicts ≈ 23 % of DRAM energy",
    "batch": "batch 64 → 128 ≈ 7 % better energy efficiency",
    "gddr6": "GDDR6 ≈ 12 % less IO energy than DDR4",
}


def workload_traces(folder: Path, recipes: dict[str, tuple]) -> list[TraceInput]:
    from engine.workloads.generate import TraceSpec, generate_trace

    out = []
    for label, (workload, batch, resolution, sample) in recipes.items():
        path = folder / f"{label}.h5"
        if not path.is_file():
            t0 = time.monotonic()
            s = generate_trace(TraceSpec(workload=workload, batch=batch, resolution=resolution,
                                         sample=sample), path)
            print(f"  trace {label}: {s['requests']} requests "
                  f"({time.monotonic() - t0:.0f} s)", flush=True)
        out.append(TraceInput(label=label, path=str(path)))
    return out


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
    tdir = args.out / "traces"
    tdir.mkdir(parents=True, exist_ok=True)
    print(f"traces in {tdir}", flush=True)
    if args.synthetic:
        traces, extra = synthetic_traces(tdir)
    else:
        traces = workload_traces(tdir, WORKLOADS)
        extra = workload_traces(tdir, BATCH_128)
    resolved = {t.label: t.resolved() for t in traces + extra}
    main_traces = [resolved[t.label] for t in traces]
    batch_traces = [resolved[t.label] for t in traces if resolved[t.label].batch] + \
        [resolved[t.label] for t in extra]
    for t in main_traces + batch_traces[len(main_traces):]:
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
    findings_path = args.out / "findings.json"
    findings: dict[str, list[dict]] = (json.loads(findings_path.read_text())["findings"]
                                       if findings_path.is_file() else {})
    for name, setup in runs.items():
        if args.only and name not in args.only:
            continue
        t0 = time.monotonic()
        folder = args.out / name
        outcome = run_study(name, setup, folder=folder, workers=args.workers)
        from engine.studies import load_results, render_report
        document, records = load_results(folder)
        analysis = get_study(name).analyse(document, records)
        render_report(document, records, folder)
        print(f"\n== {name}: {len(outcome.records)} points ({outcome.ran} run, "
              f"{outcome.reused} reused) in {time.monotonic() - t0:.0f} s; report "
              f"{folder / 'report.html'}")
        for f in analysis.findings:
            print(f"  - {f.text}")
        for n in analysis.notes:
            print(f"  note: {n[:300]}")
        findings[name] = [{"key": f.key, "text": f.text, "value": f.value, "error": f.error,
                           "unit": f.unit} for f in analysis.findings]
    findings_path.write_text(json.dumps(
        {"machine": platform.platform(), "python": platform.python_version(),
         "findings": findings}, indent=1))
    print(f"\nfindings: {args.out / 'findings.json'}")
    print("claims to compare: " + "; ".join(CLAIMS.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
