"""DiffMem Studio: the one entry point.

    python main.py                 open the GUI
    python main.py <command> ...   run a job headless (see `python main.py --help`)

Thin on purpose: parse the command line, call the library (engine/, later optimizer/), print
and write the results. Heavy modules (numba kernels, Qt, torch) are imported only by the
commands that need them, so `--help` and `presets` answer at once.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

REPO = Path(__file__).resolve().parent
DEMO_TRACE = REPO / "resources" / "traces" / "demo.trace"
DEMO_PRESETS = ("DDR4-3200", "HBM2")
DEMO_OUT = REPO / "demo_out"
MAX_VIOLATIONS_SHOWN = 20
PROGRESS_EVERY_S = 2.0

SCHEDULER_CHOICES = ("dramsim3", "fcfs", "frfcfs", "parbs")
PAGE_POLICY_CHOICES = ("open", "close", "open_adaptive", "early_precharge")

log = logging.getLogger("diffmem")


# ==== simulate =================================================================================
def _stderr_progress() -> Callable[[Any, Any], None] | None:
    """A progress callback that prints the current cycle to stderr every few seconds.

    None (no output at all) when stderr is not a terminal: logs and CI stay clean."""
    if not sys.stderr.isatty():
        return None
    last = [time.monotonic()]

    def progress(sim: Any, epoch: Any) -> None:
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY_S:
            return
        last[0] = now
        done = ""
        if epoch is not None:
            done = f", epoch [{epoch.start}, {epoch.end}): {epoch.reads_done} reads, " \
                   f"{epoch.writes_done} writes done"
        print(f"  ... cycle {sim.clock}{done}", file=sys.stderr, flush=True)

    return progress


def _apply_overrides(cfg: Any, scheduler: str | None, page_policy: str | None) -> Any:
    """cfg with --scheduler / --page-policy applied (row_buf_policy follows page_policy)."""
    changes: dict[str, Any] = {}
    if scheduler is not None:
        changes["scheduler"] = scheduler
    if page_policy is not None:
        changes["page_policy"] = page_policy
        # the config requires row_buf_policy CLOSE_PAGE exactly when page_policy is 'close'
        changes["row_buf_policy"] = "CLOSE_PAGE" if page_policy == "close" else "OPEN_PAGE"
    return cfg.replace(**changes) if changes else cfg


def run_simulation(config: str, traces: Sequence[str | Path], out: str | Path | None, *,
                   cycles: int | None = None, epoch: int | None = None,
                   cmd_trace: str | Path | None = None, phantom_eof_read: bool = False,
                   scheduler: str | None = None, page_policy: str | None = None) -> Any:
    """Load the config, simulate the traces, write the statistics JSON; returns the Stats."""
    from engine.config import load_config
    from engine.simulator import SimOptions, simulate_trace

    cfg = _apply_overrides(load_config(config), scheduler, page_policy)
    options = SimOptions(cycles=cycles, epoch=epoch,
                         cmd_trace=Path(cmd_trace) if cmd_trace is not None else None,
                         phantom_eof_read=phantom_eof_read)
    log.debug("simulating %s on %s", ", ".join(str(t) for t in traces), cfg.name)
    stats = simulate_trace(cfg, [Path(t) for t in traces], options,
                           progress=_stderr_progress())
    if out is not None:
        stats.write_json(out)
    return stats


def _requests_per_second(s: dict[str, Any]) -> float:
    wall = float(s.get("wall_seconds") or 0.0)
    return (s["num_reads_done"] + s["num_writes_done"]) / wall if wall > 0 else float("nan")


def format_summary(name: str, s: dict[str, Any]) -> str:
    """A short human summary of Stats.summary."""
    return "\n".join([
        f"{name}: {s['num_cycles']} cycles, {s['num_reads_done']} reads and "
        f"{s['num_writes_done']} writes done",
        f"  average read latency  {s['average_read_latency']:.1f} cycles "
        f"({s['average_read_latency_ns']:.1f} ns)",
        f"  row-hit rate          {100.0 * s['row_hit_rate']:.1f} %",
        f"  bandwidth             {s['average_bandwidth']:.2f} GB/s",
        f"  total energy          {s['total_energy']:.4g} pJ",
        f"  speed                 {_requests_per_second(s):.3g} requests/s "
        f"({s['wall_seconds']:.2f} s wall)",
    ])


def cmd_simulate(args: argparse.Namespace) -> int:
    stats = run_simulation(args.config, args.trace, args.out, cycles=args.cycles,
                           epoch=args.epoch, cmd_trace=args.cmd_trace,
                           phantom_eof_read=args.phantom_eof_read, scheduler=args.scheduler,
                           page_policy=args.page_policy)
    print(format_summary(str(stats.summary.get("config", args.config)), stats.summary))
    print(f"statistics written to {args.out}")
    if args.cmd_trace is not None:
        print(f"command trace written to {args.cmd_trace}")
    return 0


# ==== demo =====================================================================================
def cmd_demo(args: argparse.Namespace) -> int:
    # The demo is always headless for now; --headless is accepted so scripts keep working once
    # the GUI can show its results.
    out_dir = Path(args.out)
    if not DEMO_TRACE.is_file():
        from engine.errors import TraceError
        raise TraceError("bundled demo trace missing (regenerate it with "
                         "tools/make_demo_trace.py)", path=DEMO_TRACE)
    rows = []
    for preset in DEMO_PRESETS:
        out = out_dir / f"demo_{preset}.json"
        print(f"simulating the demo trace on {preset} ...", flush=True)
        stats = run_simulation(preset, [DEMO_TRACE], out)
        rows.append((preset, stats.summary, out))
    width = max(len(p) for p, _, _ in rows)
    print(f"\nDemo: {DEMO_TRACE.relative_to(REPO)} (one diffusion training step, "
          f"{rows[0][1]['num_reads_done'] + rows[0][1]['num_writes_done']} requests)")
    for preset, s, _ in rows:
        print(f"  {preset:<{width}}  read latency {s['average_read_latency']:7.1f} cycles "
              f"({s['average_read_latency_ns']:6.1f} ns)  row hits "
              f"{100.0 * s['row_hit_rate']:5.1f} %  {s['average_bandwidth']:7.2f} GB/s  "
              f"{s['total_energy']:.4g} pJ  in {s['num_cycles']} cycles")
    print("results: " + ", ".join(str(out) for _, _, out in rows))
    return 0


# ==== check-commands ===========================================================================
def cmd_check_commands(args: argparse.Namespace) -> int:
    from engine.config import load_config
    from engine.jedec_check import check_command_trace

    cfg = load_config(args.config)
    violations = check_command_trace(Path(args.cmdtrace), cfg, channel=args.channel)
    if not violations:
        print(f"{args.cmdtrace}: no JEDEC timing violations ({cfg.name})")
        return 0
    print(f"{args.cmdtrace}: {len(violations)} JEDEC timing violation(s) ({cfg.name})")
    for v in violations[:MAX_VIOLATIONS_SHOWN]:
        print(f"  line {v.line}, cycle {v.cycle}: {v.message}")
    if len(violations) > MAX_VIOLATIONS_SHOWN:
        print(f"  ... and {len(violations) - MAX_VIOLATIONS_SHOWN} more")
    return 1


# ==== convert-trace ============================================================================
def cmd_convert_trace(args: argparse.Namespace) -> int:
    from engine.trace import convert

    n = convert(args.src, args.dst)
    print(f"converted {n} requests: {args.src} -> {args.dst}")
    return 0


# ==== presets ==================================================================================
def cmd_presets(args: argparse.Namespace) -> int:
    from engine import config as C

    if args.import_ini is None:
        if args.out is not None:
            raise C.ConfigError("--out needs --import-ini FILE.ini")
        for name in C.list_presets():
            print(name)
        return 0
    if args.out is None:
        raise C.ConfigError("--import-ini needs --out NAME.toml")
    cfg = C.load_ini(args.import_ini)
    out = Path(args.out)
    if out.suffix.lower() != ".toml":
        out = out.with_name(out.name + ".toml")
    C.save_preset(cfg, out, header=f"Imported from the DRAMsim3 config {args.import_ini} "
                                   "by DiffMem Studio (python main.py presets --import-ini).")
    print(f"wrote preset {cfg.name} to {out}")
    return 0


# ==== GUI ======================================================================================
def open_gui() -> int:
    import os

    if (sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM")
            and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")):
        print("error: no display for the GUI (DISPLAY is not set); run it under "
              "`xvfb-run -a python main.py`, or use a headless command (python main.py --help)",
              file=sys.stderr)
        return 2
    from gui.app import main as gui_main

    return gui_main(sys.argv[:1])


# ==== argument parsing =========================================================================
def _positive_int(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="main.py",
        description="DiffMem Studio: DRAM behaviour of deep-learning workloads. "
                    "Without a command, opens the GUI.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="<command>")

    p = sub.add_parser("simulate", help="simulate request traces on a memory config, "
                                        "write statistics JSON",
                       description="Simulate one or more request traces (merged by time) on a "
                                   "DRAM configuration and write the statistics as JSON.")
    p.add_argument("--config", required=True,
                   help="preset name (see 'presets') or a .toml preset / DRAMsim3 .ini path")
    p.add_argument("--trace", required=True, action="append", metavar="TRACE",
                   help="request trace (.trace/.txt DRAMsim3 text, .dmt binary, .h5 HDF5); "
                        "repeat for several streams")
    p.add_argument("--out", required=True, metavar="STATS.json", help="statistics output")
    p.add_argument("--cycles", type=_positive_int, metavar="N",
                   help="stop at this cycle (like DRAMsim3's -c)")
    p.add_argument("--epoch", type=_positive_int, metavar="N",
                   help="epoch length in cycles (default: the config's epoch_period)")
    p.add_argument("--cmd-trace", metavar="FILE", help="write every DRAM command to FILE")
    p.add_argument("--phantom-eof-read", action="store_true",
                   help="reproduce DRAMsim3's extra READ at the end of a trace")
    p.add_argument("--scheduler", choices=SCHEDULER_CHOICES,
                   help="override the config's command scheduler")
    p.add_argument("--page-policy", choices=PAGE_POLICY_CHOICES,
                   help="override the config's row-buffer policy")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("demo", help="simulate the bundled demo trace on DDR4-3200 and HBM2",
                       description="Simulate resources/traces/demo.trace (one diffusion-model "
                                   "training step) on DDR4-3200 and HBM2 and compare.")
    p.add_argument("--out", default=str(DEMO_OUT), metavar="DIR",
                   help="folder for demo_<preset>.json (default: demo_out/ in the repository)")
    p.add_argument("--headless", action="store_true",
                   help="never open a window (the demo is headless for now)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("check-commands", help="check a DRAM command trace against JEDEC timing",
                       description="Check a DRAMsim3-format command trace against the JEDEC "
                                   "timing rules of a config; exit 1 if any rule is broken.")
    p.add_argument("--config", required=True, help="preset name or .toml/.ini path")
    p.add_argument("cmdtrace", metavar="CMDTRACE", help="command trace file (plain or gzip)")
    p.add_argument("--channel", type=int, metavar="N",
                   help="channel of commands printed with channel -1")
    p.set_defaults(func=cmd_check_commands)

    p = sub.add_parser("convert-trace", help="convert a request trace between formats",
                       description="Convert a request trace; the formats follow the file "
                                   "extensions: .dmt binary, .h5 HDF5, anything else DRAMsim3 "
                                   "text.")
    p.add_argument("src", metavar="SRC")
    p.add_argument("dst", metavar="DST")
    p.set_defaults(func=cmd_convert_trace)

    p = sub.add_parser("presets", help="list memory presets, or import a DRAMsim3 .ini as one",
                       description="List the shipped memory presets, or convert a DRAMsim3 "
                                   ".ini into a TOML preset.")
    p.add_argument("--import-ini", metavar="FILE.ini", help="DRAMsim3 config to import")
    p.add_argument("--out", metavar="NAME.toml", help="where to write the imported preset")
    p.set_defaults(func=cmd_presets)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    if args.command is None:
        return open_gui()
    from engine.errors import DiffMemError

    try:
        return int(args.func(args))
    except DiffMemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:          # unreadable input, unwritable output: the user's to fix
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
