"""What the DRAM term's inputs and the term itself cost per evaluation (CPU time, medians of
alternating repetitions, so the ratios hold under load; absolute times do not).

* ``layer_costs`` of ResNet18 (21 layers) with and without the partial-sum revisit analysis
  (``_revisit_tiles``, the only DRAM-term input that is computed rather than a view);
* ``evaluate_schedule`` under the hardware file, with and without it;
* one FADiff step (forward + backward) under the hardware file and under the DRAM term, and
  FADiff's per-order-pair mixing of LayerCosts with and without the 24 DRAM-term inputs.

    .venv/bin/python benchmarks/bench_dram_term_cost.py [--reps 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import fields
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import optimizer.costmodel as cm  # noqa: E402
import optimizer.fadiff as fd  # noqa: E402
from optimizer.cosim import dram_hardware, load_memory  # noqa: E402
from optimizer.hardware import load_hardware  # noqa: E402
from optimizer.space import SearchSpace, repair  # noqa: E402
from optimizer.workload import load_network  # noqa: E402


def _cpu(fn, n: int) -> float:
    t = time.process_time()
    for i in range(n):
        fn(i)
    return (time.process_time() - t) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--memory", default="DDR4-3200")
    ap.add_argument("--cache-dir", default=None)
    args = ap.parse_args()
    net, hw = load_network("resnet18"), load_hardware("large")
    dhw = dram_hardware(hw, load_memory(args.memory), cache_dir=args.cache_dir)
    space = SearchSpace.build(net, hw)
    rng = np.random.default_rng(0)
    chs = [repair(space, space.random_choices(rng)) for _ in range(32)]
    mts = [space.tensors(c) for c in chs]
    scheds = [space.schedule(c, [], "random") for c in chs[:16]]
    names = [f.name for f in fields(cm.LayerCosts)]
    dram_inputs = names[names.index("tile_n"):]
    real = cm._revisit_tiles

    def none(mt, lb):
        o = torch.ones(len(lb), dtype=cm.DTYPE)
        return o, o, o, o, o
    res: dict[str, list[float]] = {}
    models = {label: fd._Model(SearchSpace.build(net, h), 1, fd.FADiffSettings(),
                               torch.Generator().manual_seed(0))
              for label, h in (("hardware file", hw), ("DRAM term", dhw))}
    gen = torch.Generator().manual_seed(0)

    def step(m):
        def f(_):
            nc = m.forward(1.0, gen)[0]
            nc.edp.sum().backward()
        return f
    for _ in range(args.reps):
        for label, fn in (("with", real), ("without", none)):
            cm._revisit_tiles = fn
            res.setdefault(f"layer_costs {label}", []).append(
                _cpu(lambda i: cm.layer_costs(space.batch, mts[i % len(mts)]), 100))
            res.setdefault(f"evaluate_schedule {label}", []).append(
                _cpu(lambda i: cm.evaluate_schedule(net, scheds[i % len(scheds)], hw), 32))
        cm._revisit_tiles = real
        for label, m in models.items():
            res.setdefault(f"FADiff step, {label}", []).append(_cpu(step(m), 20))
    cm._revisit_tiles = real
    # FADiff mixes every LayerCosts field over its loop-order pairs
    m = models["hardware file"]
    reps, K, L = len(fd.ORDER_PAIRS), 1, len(net.layers)
    c9 = cm.layer_costs(m.lb, cm.MappingTensors(mts[0].temporal.repeat(reps, 1, 1), m.orders,
                                                mts[0].ks.repeat(reps), mts[0].cs.repeat(reps)))
    yo = torch.rand(K, L, reps, dtype=cm.DTYPE)

    def mix(keep):
        def f(_):
            for n in keep:
                (getattr(c9, n).reshape(reps, K, L).permute(1, 2, 0) * yo).sum(-1)
        return f
    for _ in range(args.reps):
        res.setdefault("mixing all fields", []).append(_cpu(mix(names), 200))
        res.setdefault("mixing without DRAM inputs", []).append(
            _cpu(mix([n for n in names if n not in dram_inputs]), 200))
    med = {k: statistics.median(v) for k, v in res.items()}
    print(f"load {os.getloadavg()[0]:.1f}; CPU ms per call, median of {args.reps}:")
    for k, v in med.items():
        print(f"- {k}: {v * 1e3:.3f}")
    for what in ("layer_costs", "evaluate_schedule"):
        w, wo = med[f"{what} with"], med[f"{what} without"]
        print(f"- {what}: the revisit analysis costs {(w - wo) / w:.1%}")
    a, b = med["FADiff step, hardware file"], med["FADiff step, DRAM term"]
    mixing = med["mixing all fields"] - med["mixing without DRAM inputs"]
    print(f"- FADiff step: the DRAM term costs {b / a - 1:+.1%}; mixing the DRAM inputs "
          f"{mixing / a:.1%} of a hardware-file step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
