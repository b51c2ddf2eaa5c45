"""Build the example projects shipped in projects/examples/.

    .venv/bin/python projects/examples/make_examples.py [--out DIR]

``ddr4_vs_hbm2_diffusion.dmproj``: the bundled diffusion-training trace
(``resources/traces/demo.trace``, one training step of a small diffusion U-Net) simulated on
the DDR4-3200 and HBM2 presets, both runs stored with their epochs and per-bank arrays.  The
trace is embedded (about 20 k requests, compressed; the file stays well under 2 MB) so the
project opens anywhere.  ``python main.py`` opens a copy of it; ``python main.py demo`` writes
the same project next to its JSON results (:func:`write_demo_project`).

No Qt here.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

EXAMPLES = Path(__file__).resolve().parent
DEMO_TRACE = ROOT / "resources" / "traces" / "demo.trace"
DEMO_PROJECT_NAME = "ddr4_vs_hbm2_diffusion.dmproj"
DEMO_PRESETS = ("DDR4-3200", "HBM2")
DEMO_EPOCH = 2000                  # cycles: ~50 epochs on DDR4 for the demo trace
TRACE_NAME = "diffusion-step"
MAX_SHIPPED_BYTES = 2 << 20

log = logging.getLogger(__name__)


def run_id_for(preset: str) -> str:
    """The run id of a preset in the demo project ("DDR4-3200" -> "ddr4-3200")."""
    return preset.lower()


def simulate_demo(presets: Sequence[str] = DEMO_PRESETS, epoch: int = DEMO_EPOCH,
                  trace: Path = DEMO_TRACE) -> list[tuple[str, Any, Any]]:
    """(preset, MemoryConfig, Stats) for the demo trace on each preset."""
    from engine.config import load_config
    from engine.simulator import SimOptions, simulate_trace

    out = []
    for preset in presets:
        cfg = load_config(preset)
        out.append((preset, cfg, simulate_trace(cfg, trace, SimOptions(epoch=epoch))))
    return out


def write_demo_project(path: Path, runs: Sequence[tuple[str, Any, Any]], *,
                       epoch: int = DEMO_EPOCH, trace: Path = DEMO_TRACE,
                       embed: bool = True) -> Path:
    """Write a project holding ``trace`` and one run per (preset, config, stats); an existing
    file at ``path`` is replaced (atomically, by the project's own save)."""
    from projects.store import Project

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.new")
    for stale in (tmp, tmp.with_name(tmp.name + ".lock")):
        stale.unlink(missing_ok=True)
    with Project.create(tmp) as p:
        p.add_trace(TRACE_NAME, trace, embed=embed)
        for preset, cfg, stats in runs:
            p.add_config(preset, cfg)
            p.add_run(run_id_for(preset), preset, TRACE_NAME, {"epoch": epoch}, stats)
        p.save()
    tmp.replace(path)
    return path


def build_examples(out: Path = EXAMPLES) -> list[Path]:
    """Build every example project into ``out``; returns their paths."""
    path = write_demo_project(out / DEMO_PROJECT_NAME, simulate_demo())
    size = path.stat().st_size
    if size > MAX_SHIPPED_BYTES:
        raise RuntimeError(f"{path}: {size} bytes, over the {MAX_SHIPPED_BYTES} bytes an "
                           "example may ship with; reference the trace instead of embedding it")
    return [path]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=EXAMPLES, help="output folder")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for path in build_examples(args.out):
        print(f"{path} ({path.stat().st_size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
