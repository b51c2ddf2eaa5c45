"""How often the DRAMsim3 intake stalls: the trace's requests whose channel refused them when
the front end offered them (queue full), counted with the kernel's P_STOP_BLOCKED report in
one one-state run. This decides what threads gain under that intake (engine.simulator.
_StreamThreads: every refusal is a synchronisation of all channels).

    .venv/bin/python benchmarks/count_intake_stalls.py --config HBM2 DIR/stream.trace ...

Prints per trace: requests, refusals, the cycles the front end waited in all, and the median
and 10th percentile of the requests between two refusals.
"""
from __future__ import annotations

import argparse

import numpy as np

from engine import kernel as K
from engine.config import load_config
from engine.simulator import SimOptions, Simulator
from engine.trace import iter_trace


def count(cfg, path: str) -> tuple[int, np.ndarray]:
    """(requests, [refused request index, cycle refused, cycle taken] per refusal)."""
    chunks = list(iter_trace(path))
    sim = Simulator(cfg, SimOptions(epoch=10**12))
    a, w, c, s, rid = sim._admit(*(np.concatenate([getattr(ch, f) for ch in chunks])
                                   for f in ("addr", "is_write", "cycle", "stream")))
    G = sim.s["G"]
    n, pos, out = len(a), 0, []
    while pos < n:
        sim.P[K.P_STOP_BLOCKED] = 1
        G[K.G_POS] = 0
        rc = sim._call(a[pos:], w[pos:], c[pos:], s[pos:], rid[pos:], False, K.INF, 0)
        pos += int(G[K.G_POS])
        if rc == K.NEED_INPUT:
            break
        if rc != K.BLOCKED:
            raise RuntimeError(f"{path}: kernel returned {rc}")
        refused = sim.clock - 1
        sim.P[K.P_STOP_BLOCKED] = 0          # offer that request alone until it is taken
        G[K.G_POS] = 0
        one = slice(pos, pos + 1)
        sim._call(a[one], w[one], c[one], s[one], rid[one], False, K.INF, 0)
        out.append((pos, refused, sim.clock - 1))
        pos += 1
    sim.close()
    return n, np.array(out, np.int64).reshape(-1, 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="HBM2")
    ap.add_argument("trace", nargs="+")
    args = ap.parse_args()
    cfg = load_config(args.config)
    for path in args.trace:
        n, r = count(cfg, path)
        gaps = np.diff(r[:, 0]) if len(r) > 1 else np.zeros(0, np.int64)
        between = (f"median {np.median(gaps):.0f}, p10 {np.percentile(gaps, 10):.0f}"
                   if gaps.size else "-")
        print(f"{path}: {n:,} requests, {len(r)} refusals, {int((r[:, 2] - r[:, 1]).sum()):,} "
              f"cycles waited; requests between refusals: {between}", flush=True)


if __name__ == "__main__":
    main()
