"""Compile (or load) the engine's numba kernels once, so the first simulation a user starts
does not wait for numba: ``install.sh`` runs it after installing the packages, and
``build.sh`` runs the built bundle's copy into the cache it ships.

    python packaging/warm_kernels.py            # prints the seconds it took and where

It simulates the shipped demo trace for a few thousand cycles with the options the window
uses (epochs, a command trace), which compiles every kernel a GUI or CLI simulation calls:
the kernels' types do not depend on the memory or the options (those are array values);
the event loop's variant depends on the scheduler and page policy (and, for DRAMsim3's, on
whether the memory has one channel), so each variant runs.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def warm(cycles: int = 20_000) -> float:
    """Run the demo trace for ``cycles`` on DDR4-3200 and HBM2 (the event loop's DRAMsim3
    variants for one channel and for several), then with another scheduler (its general
    variant: engine.kernel.VARIANTS); returns the CPU seconds."""
    from engine.config import load_config
    from engine.simulator import SimOptions, simulate_trace

    demo = REPO / "resources" / "traces" / "demo.trace"
    t0 = time.process_time()
    ddr4 = load_config("DDR4-3200")
    with tempfile.TemporaryDirectory(prefix="diffmem-warm-") as tmp:
        for cfg in (ddr4, load_config("HBM2"), ddr4.replace(scheduler="frfcfs")):
            simulate_trace(cfg, demo,
                           SimOptions(cycles=cycles, epoch=2000,
                                      cmd_trace=Path(tmp) / f"{cfg.name}.cmd"))
    return time.process_time() - t0


def main() -> int:
    t0 = time.monotonic()
    cpu = warm()
    print(f"numba kernels ready in {time.monotonic() - t0:.1f} s ({cpu:.1f} CPU s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
