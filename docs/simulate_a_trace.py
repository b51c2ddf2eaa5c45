"""Simulate a request trace on two memories and compare them; plot-free, prints a table.

    .venv/bin/python docs/simulate_a_trace.py [TRACE]

TRACE defaults to the bundled demo trace (one diffusion training step, 20,000 requests).
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.config import load_config  # noqa: E402
from engine.simulator import SimOptions, simulate_trace  # noqa: E402


def main() -> None:
    trace = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "resources/traces/demo.trace"
    print(f"{'memory':12s} {'cycles':>10s} {'read lat ns':>12s} {'p99 ns':>8s} {'hit rate':>9s}"
          f" {'GB/s':>7s} {'energy uJ':>10s} {'conflict uJ':>12s}")
    for name in ("DDR4-3200", "LPDDR4-3200", "GDDR6", "HBM2"):
        cfg = load_config(name)
        s = simulate_trace(cfg, trace, SimOptions(epoch=0)).summary
        print(f"{name:12s} {s['num_cycles']:>10,d} {s['average_read_latency_ns']:>12.1f} "
              f"{s['read_latency_p99_ns']:>8.1f} {s['row_hit_rate']:>9.1%} "
              f"{s['average_bandwidth']:>7.2f} {s['total_energy_with_io'] / 1e6:>10.2f} "
              f"{s['energy_by_cause']['row_conflict'] / 1e6:>12.3f}")


if __name__ == "__main__":
    main()
