"""The seed document's four claims re-measured on GPU-like traces, over several seeds.

    python benchmarks/run_claims.py [--out /tmp/diffmem-claims] [--seeds 0 1 2]
                                    [--sample 0.01] [--optimizer foreach|fused|single]
                                    [--workers 1] [--only timing ...]
    python benchmarks/run_claims.py --bounded      # the earlier single-trace run (small steps)

Traces (``engine.workloads`` defaults: thread-block order, 2 MiB random frames, sectored L2,
GPU address hash, foreach AdamW with the optimizer phase simulated whole) of DDPM (the
registry's published configuration at --ddpm-resolution, default 64x64) and ResNet-50 at
224x224, batch 8 (and 16 for the batch claim), --sample of each step's operators, generated
for the seed's platform (DDR4-3200-8ch).  Each seed draws both the kept windows
(``TraceSpec.seed``) and the physical frames (``placement_seed``), so the spread over seeds
covers sampling and page placement.  For the GDDR6-vs-DDR4 claim the studies re-place the
same traces for DDR4-3200 and GDDR6 (each memory's capacity and hash,
engine.studies.placed).  Studies (every request due at once, "saturate"): timing (tRCD 18,
22, 26, 30), hotspots, technology, batch, memshare.

Each seed's studies go to ``--out/seedN`` (reports and findings.json there; a rerun resumes);
then every finding with a value is tabulated over the seeds (mean, standard deviation,
min-max) into ``--out/claims_over_seeds.json`` and printed.
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SMALL_DDPM = {"ch": 32, "ch_mult": (1, 2, 2, 2), "num_res_blocks": 1,
              "attn_resolutions": (16,)}


def _recipes(seed: int, sample: float | None, ddpm_res: int, bounded: bool,
             optimizer: str = "foreach") -> tuple[list, list]:
    from functools import partial

    from engine.studies.suite import TraceRecipe
    TraceRecipe = partial(TraceRecipe, optimizer=optimizer)  # noqa: N806
    if bounded:       # the first run's traces: small DDPM full, ResNet-50 32x32 at 10 %
        main = [TraceRecipe("ddpm", "ddpm", 8, 32, overrides=SMALL_DDPM, kind="diffusion",
                            seed=seed, placement_seed=seed),
                TraceRecipe("resnet50", "resnet50", 8, 32, sample=0.1, kind="cnn",
                            seed=seed, placement_seed=seed)]
        batch = [TraceRecipe("ddpm-b16", "ddpm", 16, 32, overrides=SMALL_DDPM,
                             kind="diffusion", seed=seed, placement_seed=seed),
                 TraceRecipe("resnet50-b16", "resnet50", 16, 32, sample=0.1, kind="cnn",
                             seed=seed, placement_seed=seed)]
        return main, batch
    main = [TraceRecipe("ddpm", "ddpm", 8, ddpm_res, sample=sample, kind="diffusion",
                        seed=seed, placement_seed=seed),
            TraceRecipe("resnet50", "resnet50", 8, 224, sample=sample, kind="cnn",
                        seed=seed, placement_seed=seed)]
    batch = [TraceRecipe("ddpm-b16", "ddpm", 16, ddpm_res, sample=sample, kind="diffusion",
                         seed=seed, placement_seed=seed),
             TraceRecipe("resnet50-b16", "resnet50", 16, 224, sample=sample, kind="cnn",
                         seed=seed, placement_seed=seed)]
    return main, batch


def _runs(main_t: list, batch_t: list) -> dict:
    from engine.studies import StudySetup
    return {
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


def over_seeds(per_seed: dict[int, dict[str, list[dict]]]) -> list[dict]:
    """Every finding key with a finite value, its value per seed, mean, sample standard
    deviation and range (a key missing for a seed, e.g. a ratio not stated because a slope
    was not detected, is listed with the seeds that have it and its text per seed)."""
    keys: dict[tuple[str, str], dict] = {}
    for seed, studies in sorted(per_seed.items()):
        for study, found in studies.items():
            for f in found:
                k = (study, f["key"])
                e = keys.setdefault(k, {"study": study, "key": f["key"], "unit": f.get("unit"),
                                        "values": {}, "errors": {}, "texts": {}})
                e["texts"][seed] = f["text"]
                v = f.get("value")
                if v is not None and math.isfinite(v):
                    e["values"][seed] = v
                    e["errors"][seed] = f.get("error")
    out = []
    for e in keys.values():
        vals = list(e["values"].values())
        if vals:
            m = sum(vals) / len(vals)
            sd = (math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1))
                  if len(vals) > 1 else float("nan"))
            e.update(mean=m, sd=sd, min=min(vals), max=max(vals))
        out.append(e)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/diffmem-claims"))
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--sample", type=float, default=0.01)
    ap.add_argument("--ddpm-resolution", type=int, default=64)
    ap.add_argument("--bounded", action="store_true",
                    help="the earlier traces: small DDPM 32x32 full, ResNet-50 32x32 10 %%")
    ap.add_argument("--optimizer", default="foreach", choices=("foreach", "fused", "single"),
                    help="AdamW kernels of every trace (TraceSpec.optimizer)")
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    from engine.studies.suite import make_traces, print_result, run_suite
    per_seed: dict[int, dict[str, list[dict]]] = {}
    for seed in args.seeds:
        out = args.out / f"seed{seed}"
        c0 = resource.getrusage(resource.RUSAGE_SELF).ru_utime
        main_r, batch_r = _recipes(seed, args.sample, args.ddpm_resolution, args.bounded,
                                   args.optimizer)
        main_t = make_traces(out / "traces", main_r, print)
        batch_t = make_traces(out / "traces", batch_r, print)
        run_suite(_runs(main_t, batch_t), out, workers=args.workers, only=args.only,
                  report=print_result)
        print(f"== seed {seed}: "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_utime - c0:.0f} CPU-s in this "
              "process", flush=True)
        per_seed[seed] = json.loads((out / "findings.json").read_text())["findings"]
    table = over_seeds(per_seed)
    (args.out / "claims_over_seeds.json").write_text(json.dumps(
        {"seeds": args.seeds, "sample": args.sample, "bounded": args.bounded,
         "optimizer": args.optimizer,
         "ddpm_resolution": args.ddpm_resolution, "findings": table}, indent=1, default=str))
    print(f"\n== over seeds {args.seeds}")
    for e in table:
        if "mean" not in e:
            continue
        vals = " / ".join(f"{e['values'].get(s, float('nan')):.4g}" for s in args.seeds)
        print(f"  {e['study']:10s} {e['key']:45s} {vals}  mean {e['mean']:.4g} sd "
              f"{e['sd']:.3g} [{e['min']:.4g}, {e['max']:.4g}] {e['unit'] or ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
