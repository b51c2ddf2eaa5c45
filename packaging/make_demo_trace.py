"""Generate the bundled demo trace, resources/traces/demo.trace (run once; the file is committed).

The trace is deterministic (fixed numpy seed) and shaped like one training step of a small
diffusion model, in DRAMsim3's text format ``0xADDR READ|WRITE CYCLE`` with 64-byte aligned
addresses below 1 GiB and one request every 4 cycles:

1. forward pass: sequential feature-map reads, every 4th line written back (activations saved
   for the backward pass);
2. attention: scattered runs of 4 consecutive lines (K/V tiles gathered from a large buffer);
3. backward pass: the feature maps read again in reverse order (last layer first, lines
   descending);
4. optimizer step: one sequential burst of weight writes.

    python packaging/make_demo_trace.py [--out resources/traces/demo.trace]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

LINE = 64                      # bytes per request
CYCLE_STEP = 4                 # cycles between consecutive requests
SEED = 20240611

FEATURES_BASE = 0x0100_0000    # 16 MiB: activations / feature maps
ATTENTION_BASE = 0x1000_0000   # 256 MiB: attention K/V buffer
ATTENTION_BYTES = 64 << 20     # 64 MiB scattered over
WEIGHTS_BASE = 0x3000_0000     # 768 MiB: parameters / optimizer state

LAYERS = 6
LINES_PER_LAYER = 1000         # 64 000 bytes per feature map
LAYER_STRIDE = 1 << 20         # feature maps 1 MiB apart
ATTENTION_RUNS = 1000
RUN_LINES = 4
BACKWARD_LINES = 4500
OPTIMIZER_LINES = 4000

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "resources" / "traces" / "demo.trace"


def build() -> tuple[np.ndarray, np.ndarray]:
    """(addresses, is_write) of the whole step, in issue order."""
    rng = np.random.default_rng(SEED)
    addr: list[int] = []
    write: list[bool] = []

    # 1. forward: read each feature map sequentially, write back every 4th line
    for layer in range(LAYERS):
        base = FEATURES_BASE + layer * LAYER_STRIDE
        for i in range(LINES_PER_LAYER):
            a = base + i * LINE
            addr.append(a)
            write.append(False)
            if i % 4 == 3:
                addr.append(a)
                write.append(True)

    # 2. attention: scattered 4-line runs (256-byte aligned starts)
    starts = rng.integers(0, ATTENTION_BYTES // (RUN_LINES * LINE), size=ATTENTION_RUNS)
    for s in starts:
        base = ATTENTION_BASE + int(s) * RUN_LINES * LINE
        for j in range(RUN_LINES):
            addr.append(base + j * LINE)
            write.append(False)

    # 3. backward: feature maps read in reverse (last layer first, lines descending)
    done = 0
    for layer in reversed(range(LAYERS)):
        base = FEATURES_BASE + layer * LAYER_STRIDE
        for i in reversed(range(LINES_PER_LAYER)):
            if done == BACKWARD_LINES:
                break
            addr.append(base + i * LINE)
            write.append(False)
            done += 1

    # 4. optimizer: sequential write burst over the weights
    for i in range(OPTIMIZER_LINES):
        addr.append(WEIGHTS_BASE + i * LINE)
        write.append(True)

    a = np.asarray(addr, dtype=np.uint64)
    assert np.all(a % LINE == 0) and int(a.max()) < (1 << 30)
    return a, np.asarray(write, dtype=bool)


def write_trace(path: Path) -> int:
    addr, is_write = build()
    lines = [f"{int(a):#x} {'WRITE' if w else 'READ'} {k * CYCLE_STEP}\n"
             for k, (a, w) in enumerate(zip(addr, is_write))]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="ascii")
    return len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output trace file")
    args = parser.parse_args()
    n = write_trace(args.out)
    print(f"wrote {n} requests to {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
