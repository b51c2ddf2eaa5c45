"""How often the DRAMsim3 intake stalls: the requests whose channel refused them when the front
end offered them (queue full), counted by the threaded run's refusal count (engine.simulator.
_StreamThreads, one thread, no one-thread start or fallback). This decides what threads gain under
that intake: every refusal is a synchronisation of all channels.

    .venv/bin/python benchmarks/count_intake_stalls.py --config HBM2 DIR/stream.trace ...
"""
from __future__ import annotations

import argparse

from engine import simulator as S
from engine.config import load_config
from engine.trace import iter_trace


def count(cfg, path: str) -> tuple[int, int, int]:
    """(requests, refusals, windows) of one run."""
    seen = []

    class Counted(S._StreamThreads):
        def stats(self):
            seen.append((self._taken, self.refusals, self.windows))
            return super().stats()
    S.DENSE_REFUSALS = 1 << 60
    S.HANDOVER_AFTER = 0          # threads from the first request (no one-thread start)
    opts = S.SimOptions(threads=1, epoch=10**12)
    S._simulate_threaded(cfg, iter_trace(path, chunk_size=opts.chunk_size), opts, None, None,
                         runner=Counted)
    return seen[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="HBM2")
    ap.add_argument("trace", nargs="+")
    args = ap.parse_args()
    cfg = load_config(args.config)
    for path in args.trace:
        n, refusals, windows = count(cfg, path)
        print(f"{path}: {n:,} requests, {refusals:,} refusals ({windows:,} windows)",
              flush=True)


if __name__ == "__main__":
    main()
