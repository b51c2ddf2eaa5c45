"""Counters the engine's statistics do not keep, read from its command traces: column
commands back to back in the same bank group (each pays tCCD_L) or another one (tCCD_S),
read/write bus turnarounds (one when a write drain starts, one when reads resume), and
channel parallelism.  Used by the recommendations study (its bank-grouping and write-priority
verdicts) and ``benchmarks/bench_recommendations.py``."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

COLUMN = {"read", "read_p", "write", "write_p"}
#: cycles per window of the channel-parallelism count
WINDOW = 10_000


def count_command_trace(paths: Sequence[Path]) -> dict[str, float]:
    """Same- / other-bank-group column pairs and read/write turnarounds, over all channels
    (a command trace per channel, lines ``cycle command channel rank bankgroup bank row
    column``), and ``active_channels``: the mean number of channels issuing column commands
    per 10,000-cycle window (over the windows where any does)."""
    out: dict[str, float] = {"column": 0, "same_bg_pairs": 0, "other_bg_pairs": 0,
                             "rw_turnarounds": 0}
    windows: dict[int, set[int]] = {}
    for ch, p in enumerate(paths):
        last_g = None
        last_w = None
        with open(p) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 5 or parts[1] not in COLUMN:
                    continue
                g = (parts[3], parts[4])
                w = parts[1].startswith("write")
                windows.setdefault(int(parts[0]) // WINDOW, set()).add(ch)
                out["column"] += 1
                if last_g is not None:
                    out["same_bg_pairs" if g == last_g else "other_bg_pairs"] += 1
                    if w != last_w:
                        out["rw_turnarounds"] += 1
                last_g, last_w = g, w
    out["active_channels"] = (sum(len(v) for v in windows.values()) / len(windows)
                              if windows else 0.0)
    return out
