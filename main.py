"""DiffMem Studio: the one entry point.

    python main.py                 open the GUI
    python main.py <command> ...   run a job headless (see `python main.py --help`)

Thin on purpose: parse the command line, call the library (engine/, later optimizer/), print
and write the results. Heavy modules (numba kernels, Qt, torch) are imported only by the
commands that need them, so `--help` and `presets` answer at once.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

REPO = Path(__file__).resolve().parent          # in a PyInstaller bundle: its _internal/
FROZEN = bool(getattr(sys, "frozen", False))    # running as the packaged application
DEMO_TRACE = REPO / "resources" / "traces" / "demo.trace"
DEMO_PRESETS = ("DDR4-3200", "HBM2")
DEMO_OUT = (Path.cwd() if FROZEN else REPO) / "demo_out"    # the bundle's folder may be read-only
MAX_VIOLATIONS_SHOWN = 20
PROGRESS_EVERY_S = 2.0         # seconds between two progress lines (simulate, optimize, trace)

# numpy's bundled OpenBLAS starts a thread per core at import, and they spin after each call.
# Nothing here multiplies matrices with numpy (torch has its own threads), so that was pure
# cost: 0.1 CPU-s of start-up and ~15 % of a 1M-request simulate (benchmarks/RESULTS.md,
# "OpenBLAS threads"). Set before numpy is first imported; a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from engine.policies import PAGE_POLICIES as PAGE_POLICY_CHOICES  # noqa: E402 (declared once)
from engine.policies import SCHEDULERS as SCHEDULER_CHOICES  # noqa: E402
from optimizer.method_names import ALL_METHODS as METHOD_CHOICES  # noqa: E402 (torch-free)
from optimizer.method_names import REFERENCE_METHODS as REFERENCE_METHOD_CHOICES  # noqa: E402
from optimizer.method_names import FUSED_HALO_RULES  # noqa: E402 (torch-free)

log = logging.getLogger("diffmem")


# ==== simulate =================================================================================
def _progress_due() -> Callable[[], bool]:
    """A clock for progress lines: True at most once every PROGRESS_EVERY_S (read at each
    call), False in between; the first True comes PROGRESS_EVERY_S after it was made."""
    last = [time.monotonic()]

    def due() -> bool:
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY_S:
            return False
        last[0] = now
        return True
    return due


def _stderr_progress() -> Callable[[Any, Any], None] | None:
    """A progress callback that prints the current cycle to stderr every few seconds.

    None (no output at all) when stderr is not a terminal: logs and CI stay clean."""
    if not sys.stderr.isatty():
        return None
    due = _progress_due()

    def progress(sim: Any, epoch: Any) -> None:
        if not due():
            return
        done = ""
        if epoch is not None:
            done = f", epoch [{epoch.start}, {epoch.end}): {epoch.reads_done} reads, " \
                   f"{epoch.writes_done} writes done"
        print(f"  ... cycle {sim.clock}{done}", file=sys.stderr, flush=True)

    return progress


def run_simulation(config: str, traces: Sequence[str | Path], out: str | Path | None,
                   **options: Any) -> Any:
    """The simulate job (engine/simulate_job.py) with progress on stderr; returns the Stats."""
    from engine.simulate_job import run_simulation as run
    return run(config, traces, out, progress=_stderr_progress(), **options)


def _requests_per_second(s: dict[str, Any]) -> float:
    wall = float(s.get("wall_seconds") or 0.0)
    return (s["num_reads_done"] + s["num_writes_done"]) / wall if wall > 0 else float("nan")


def format_summary(name: str, s: dict[str, Any]) -> str:
    """A short human summary of Stats.summary."""
    # (the JSON keeps DRAMsim3's 0 for an average over nothing; the summary says so)
    columns = s.get("num_read_cmds", 1) + s.get("num_write_cmds", 1)
    return "\n".join([
        f"{name}: {s['num_cycles']} cycles, {s['num_reads_done']} reads and "
        f"{s['num_writes_done']} writes done",
        f"  average read latency  {s['average_read_latency']:.1f} cycles "
        f"({s['average_read_latency_ns']:.1f} ns)" if s["num_reads_done"] else
        "  average read latency  n/a (no read completed)",
        f"  row-hit rate          {100.0 * s['row_hit_rate']:.1f} %" if columns else
        "  row-hit rate          n/a (no read or write command)",
        f"  bandwidth             {s['average_bandwidth']:.2f} GB/s",
        f"  energy                {s['total_energy']:.4g} pJ core (DRAMsim3's total_energy), "
        f"{s.get('total_energy_with_io', float('nan')):.4g} pJ with IO",
        f"  speed                 {_requests_per_second(s):.3g} requests/s "
        f"({s['wall_seconds']:.2f} s wall)",
    ] + _end_of_run_lines(s))


def _end_of_run_lines(s: dict[str, Any]) -> list[str]:
    """What was still in flight when a run stopped at its cycle limit, and wrapped addresses."""
    out = []
    if s.get("num_requests_pending") or s.get("num_requests_waiting"):
        out.append(f"  at the end             {s['num_requests_pending']} accepted requests "
                   f"pending, {s['num_requests_waiting']} due but not yet accepted")
    if s.get("num_addresses_wrapped"):
        out.append(f"  wrapped addresses      {s['num_addresses_wrapped']} requests beyond the "
                   f"capacity (bits above it dropped)")
    return out


def cmd_simulate(args: argparse.Namespace) -> int:
    with _ctrl_c_stops("the trace is cut here; the requests read so far are completed and "
                       "their statistics written") as stopped:
        stats = run_simulation(args.config, args.trace, args.out, cycles=args.cycles,
                               max_cycles=args.max_cycles, epoch=args.epoch,
                               cmd_trace=args.cmd_trace,
                               phantom_eof_read=args.phantom_eof_read,
                               scheduler=args.scheduler, page_policy=args.page_policy,
                               wrap_addresses=args.wrap_addresses, intake=args.intake,
                               threads=args.threads, stop=stopped.is_set)
    print(format_summary(str(stats.summary.get("config", args.config)), stats.summary))
    cut = stats.summary.get("stopped_early")
    last = stats.summary.get("trace_cut_after_cycle")
    print(f"statistics written to {args.out}" + (
        "" if not cut else " (stopped early by Ctrl-C before any request was read)"
        if last is None else f" (stopped early by Ctrl-C: the trace cut after its requests "
                             f"arriving by cycle {last})"))
    if args.cmd_trace is not None:
        from engine.simulator import cmd_trace_paths
        files = cmd_trace_paths(args.cmd_trace, int(stats.summary["channels_count"]))
        print(f"command trace written to {files[0]}" if len(files) == 1 else
              f"command traces written to {files[0]} ... {files[-1].name} ({len(files)} "
              f"channels)")
    return 0


# ==== demo =====================================================================================
def cmd_demo(args: argparse.Namespace) -> int:
    # Headless: simulates and writes results (JSON per preset and a project file with both
    # runs). `python main.py` without a command shows the same demo in the window.
    from engine.config import load_config
    from projects.examples.make_examples import DEMO_EPOCH, write_demo_project

    out_dir = Path(args.out)
    if not DEMO_TRACE.is_file():
        from engine.errors import TraceError
        raise TraceError("bundled demo trace missing (regenerate it with "
                         "packaging/make_demo_trace.py)", path=DEMO_TRACE)
    rows = []
    runs = []
    for preset in DEMO_PRESETS:
        out = out_dir / f"demo_{preset}.json"
        print(f"simulating the demo trace on {preset} ...", flush=True)
        stats = run_simulation(preset, [DEMO_TRACE], out, epoch=DEMO_EPOCH)
        rows.append((preset, stats.summary, out))
        runs.append((preset, load_config(preset), stats))
    width = max(len(p) for p, _, _ in rows)
    print(f"\nDemo: {DEMO_TRACE.relative_to(REPO)} (one diffusion training step, "
          f"{rows[0][1]['num_reads_done'] + rows[0][1]['num_writes_done']} requests)")
    for preset, s, _ in rows:
        print(f"  {preset:<{width}}  read latency {s['average_read_latency']:7.1f} cycles "
              f"({s['average_read_latency_ns']:6.1f} ns)  row hits "
              f"{100.0 * s['row_hit_rate']:5.1f} %  {s['average_bandwidth']:7.2f} GB/s  "
              f"energy {s['total_energy']:.4g} pJ core, {s['total_energy_with_io']:.4g} pJ "
              f"with IO  in {s['num_cycles']} cycles")
    project = write_demo_project(out_dir / "demo.dmproj", runs, epoch=DEMO_EPOCH,
                                 trace=DEMO_TRACE)
    print("results: " + ", ".join(str(out) for _, _, out in rows))
    print(f"project with both runs: {project} (open it in the GUI: File > Open Project)")
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


# ==== ramulator =================================================================================
#: what the Ramulator-compatible mode's figures are, written beside them (they differ from
#: Ramulator's own printed statistics of the same names where its definitions count re-offers)
RAMULATOR_DEFINITIONS = {
    "num_cycles": "memory cycles at the last request's acceptance (Ramulator's own count)",
    "average_read_latency": "read_latency_sum / num_reads_accepted, in memory cycles, from "
                            "acceptance to completion (Ramulator's avg_read_latency_0 divides "
                            "by its read requests counted at every offer, re-offers included)",
    "num_row_hits": "column commands to an open row (Ramulator's row_hits)",
    "num_act_cmds": "ACT commands (ACT-1 for LPDDR5's two-part activate)",
}


def cmd_ramulator(args: argparse.Namespace) -> int:
    import json

    from engine.fileio import atomic_write_text, prepare_output
    from engine.ramulator.compat import run

    _outputs_first(args, [("trace input", args.trace), ("run file", args.config)],
                   out="statistics output")
    if args.cmd_trace:
        # Ramulator's recorder writes PATH.ch0, PATH.ch1 ...: each checked against the inputs
        from engine.fileio import check_distinct
        from engine.ramulator.compat import recorder_paths
        from engine.ramulator.config import load_yaml
        files = recorder_paths(args.cmd_trace, load_yaml(args.config).counts[0])
        check_distinct([("command trace", f) for f in files] + [("statistics output", args.out)],
                       [("trace input", args.trace), ("run file", args.config)])
        for f in files:
            prepare_output(f, "command trace")
    st = run(args.config, args.trace, cmd_trace=args.cmd_trace,
             lpddr5_rowcheck_fix=args.lpddr5_rowcheck_fix).to_dict()
    st["definitions"] = RAMULATOR_DEFINITIONS
    text = json.dumps(st, indent=1)
    if args.out:
        atomic_write_text(args.out, text + "\n")
        print(f"statistics written to {args.out}")
    else:
        print(text)
    return 0


# ==== convert-trace ============================================================================
def cmd_convert_trace(args: argparse.Namespace) -> int:
    _outputs_first(args, [("source trace", args.src)], dst="converted trace")
    from engine.workloads.retarget import convert_to_plain

    n, note = convert_to_plain(args.src, args.dst)
    print(f"converted {n} requests: {args.src} -> {args.dst}")
    if note:
        print(f"  {note}")
    return 0


# ==== trace ====================================================================================
def cmd_trace(args: argparse.Namespace) -> int:
    from engine.errors import DiffMemError
    from engine.trace import suffix_format

    if suffix_format(args.out) != "hdf5":
        # (the trace is HDF5 whatever the name: --out x.txt wrote HDF5 into a .txt file,
        # which the readers, going by the extension, then took for text)
        raise DiffMemError(f"--out {args.out}: the trace is written as HDF5: expected a .h5 "
                           "or .hdf5 name (--text writes a DRAMsim3 text trace beside it)")
    _outputs_first(args, out="trace output", text="text trace output",
                   summary="summary output")
    from engine.fileio import atomic_write_text, json_default
    from engine.workloads.generate import TraceSpec, generate_trace
    from engine.workloads.report import format_summary

    spec = TraceSpec(workload=args.workload, batch=args.batch, resolution=args.resolution,
                     size=args.size, dtype=args.dtype, sample=args.sample, seed=args.seed,
                     cache_bytes=int(args.cache_mib * 2**20), memory=args.memory,
                     pages=args.pages, placement_seed=args.placement_seed,
                     fold_addresses=args.fold_addresses, address_hash=args.address_hash,
                     order=args.order, optimizer=args.optimizer,
                     attention=args.attention, l2_start=args.l2_start)
    due = _progress_due()

    def progress(done: int, total: int) -> None:
        # every PROGRESS_EVERY_S (a paper-size step is minutes of expansion, silent before)
        if total and due():
            print(f"  ... operator {done} of {total} ({100 * done / total:.0f} %)",
                  file=sys.stderr, flush=True)
    summary = generate_trace(spec, args.out, progress=progress)
    print(format_summary(summary))
    print(f"trace written to {args.out}")
    # the summary before the text export, which may take minutes: a Ctrl-C there kept the
    # trace but lost the summary already printed
    if args.summary is not None:
        import json

        atomic_write_text(args.summary, json.dumps(summary, indent=2, default=json_default))
        print(f"summary written to {args.summary}")
    if args.text is not None:
        from engine.workloads.retarget import convert_to_plain

        n, note = convert_to_plain(args.out, args.text)
        print(f"DRAMsim3 text trace written to {args.text} ({n} requests)")
        if note:
            print(f"  {note}")
    return 0


# ==== presets ==================================================================================
def cmd_presets(args: argparse.Namespace) -> int:
    from engine import config as C

    if args.import_ini is None:
        if args.out is not None:
            raise C.ConfigError("--out needs --import-ini FILE.ini")
        # (a DRAM architect chooses --memory by these, not by the name alone)
        rows = [("preset", "standard", "channels", "capacity", "clock (tCK)", "bus",
                 "request")]
        for name in C.list_presets():
            c = C.load_preset(name)
            rows.append((name, c.protocol, str(c.channels),
                          f"{c.capacity_bytes / 2 ** 30:g} GiB",
                          f"{1000 / c.tCK:.0f} MHz ({c.tCK:g} ns)", f"{c.bus_width} bit",
                          f"{c.request_size_bytes} B"))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print("  ".join(f"{v:<{w}}" for v, w in zip(r, widths)).rstrip())
        return 0
    if args.out is None:
        raise C.ConfigError("--import-ini needs --out NAME.toml")
    cfg = C.import_ini(args.import_ini)
    out = Path(args.out)
    if out.suffix.lower() != ".toml":
        out = out.with_name(out.name + ".toml")
    if out != Path(args.out) and Path(args.out).is_dir():
        # (--out ../bad with a folder bad wrote ../bad.toml beside it)
        raise C.ConfigError(f"--out {args.out} is a folder: expected a preset file's path "
                            "(NAME.toml)")
    from engine.fileio import prepare_output
    prepare_output(out, "preset output")
    C.save_preset(cfg, out, header=f"Imported from the DRAMsim3 config {args.import_ini} "
                                   "by DiffMem Studio (python main.py presets --import-ini).")
    print(f"wrote preset {cfg.name} to {out}")
    return 0


# ==== selfcheck (hidden: installation check, used by the installer's smoke test) ================
def cmd_selfcheck(args: argparse.Namespace) -> int:
    from engine import selfcheck
    from optimizer.selfcheck import CHECKS as OPTIMIZER_CHECKS

    results = selfcheck.run_checks(selfcheck.CHECKS + OPTIMIZER_CHECKS)
    for r in results:
        print(f"{'ok  ' if r.ok else 'FAIL'} {r.name:<10} {r.seconds:6.2f} s  {r.detail}")
    return 0 if all(r.ok for r in results) else 1


# ==== build-kernel ==============================================================================
def cmd_build_kernel(args: argparse.Namespace) -> int:
    from engine import kernel_aot

    t0 = time.process_time()
    path = kernel_aot.build(force=args.force)
    print(f"compiled kernel: {path} ({time.process_time() - t0:.1f} CPU s)")
    return 0


# ==== study ====================================================================================
def _print_analysis(document: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """A study's findings, then its notes (what limits them), as the report has them."""
    from engine.studies import get_study

    analysis = get_study(document["study"]).analyse(document, records)
    for f in analysis.findings:
        print(f"  - {f.text}")
    for n in analysis.notes:
        print(f"  note: {n}")


def _report_place(args: argparse.Namespace, study: str) -> tuple[Path, str]:
    """(folder, file stem) of a study's report: the results folder's report.html / .pdf, or,
    for a study stored in a project without --out, beside the project as
    PROJECT-STUDY-report.html / .pdf (it went into the current folder as report.html,
    replacing whatever was there)."""
    if args.out is not None:
        return Path(args.out), "report"
    where = Path(args.project).absolute()
    return where.parent, f"{where.stem}-{study}-report"


def cmd_study(args: argparse.Namespace) -> int:
    from engine.studies import (STUDIES, StudySetup, TraceInput, load_project_study,
                                load_results, render_report, run_study)
    from engine.studies.param_text import parse_key_values, study_params
    from engine.studies.spec import StudyError

    if args.list:
        width = max(len(n) for n in STUDIES)
        for name, study in STUDIES.items():
            print(f"{name:<{width}}  {study.description}")
            print(f"{'':<{width}}  parameters: {study.params_help}")
        return 0
    if args.out is not None and Path(args.out).exists() and not Path(args.out).is_dir():
        raise StudyError(f"--out {args.out} is a file: expected a folder (a study writes "
                         "study.json, results.jsonl and its report there)")
    project = None
    # a project that does not exist is made once the study's inputs are checked (there was no
    # way to make an empty project from the command line)
    new_project = (args.project is not None and not args.report
                   and not os.path.lexists(args.project))
    if args.project is not None and not new_project:
        from projects.store import Project
        project = Project.open(args.project, readonly=args.report)
    try:
        if args.report:
            if project is not None:
                if not args.name:
                    raise StudyError("--report with --project needs the study's name: "
                                     f"study NAME --report --project {args.project} (stored: "
                                     f"{', '.join(project.studies()) or 'none'})")
                document, records = load_project_study(project, args.name)
                out, stem = _report_place(args, args.name)
            else:
                if args.out is None:
                    raise StudyError("--report needs --out DIR (a folder written by a study)")
                document, records = load_results(args.out)
                out, stem = Path(args.out), "report"
                if args.name and args.name != document.get("study"):
                    raise StudyError(f"--report: {args.out} holds study "
                                     f"'{document.get('study')}', not '{args.name}'")
            files = render_report(document, records, out, stem=stem)
            _print_analysis(document, records)
            print(f"report written: {files.html}, {files.pdf} ({files.pdf_pages} "
                  f"page{'s' if files.pdf_pages != 1 else ''})")
            return 0
        if not args.name:
            raise StudyError("give a study NAME (see `python main.py study --list`)")
        if args.out is None and args.project is None:
            raise StudyError("give --out DIR (results and report) or --project FILE")
        setup = StudySetup(
            traces=[TraceInput.parse(t) for t in args.trace or []], config=args.config,
            overrides=parse_key_values(args.set or [], "--set", typed=True),
            params=study_params(args.param or [], args.variant or []), cycles=args.cycles,
            compute=parse_key_values(args.compute or [], "--compute", typed=False),
            arrival=args.arrival, intake=args.intake or "")
        study_name = args.study_name or args.name
        out, stem = _report_place(args, study_name)
        # the inputs are read again by every point: no output may be one of them
        from engine.fileio import check_distinct
        results = ([] if args.project is not None else
                   [("study definition", out / "study.json"),
                    ("study results", out / "results.jsonl")])
        check_distinct(results + [("report", out / f"{stem}.html"),
                                  ("report", out / f"{stem}.pdf")],
                       [("trace input", t.path) for t in setup.traces]
                       + [("memory config", args.config if args.config and
                           Path(args.config).is_file() else None),
                          ("project", args.project)])
        if new_project:
            from projects.store import Project
            for t in setup.traces:       # (the study resolves them: a missing one, first)
                t.file()
            project = Project.create(args.project)
            print(f"created the project {project.path}")

        def progress(done: int, total: int, record: dict[str, Any]) -> None:
            tags = " ".join(f"{k}={v}" for k, v in record.get("tags", {}).items()
                            if k not in ("order", "base"))
            state = "" if record.get("status") == "ok" else f"  FAILED: {record.get('error')}"
            print(f"  [{done}/{total}] {record.get('label')} {tags}{state}", file=sys.stderr,
                  flush=True)

        security = None
        if args.cluster:
            from engine.studies.runner import check_cluster_address, cluster_security
            security = cluster_security(check_cluster_address(args.cluster),
                                        ca_file=args.tls_ca_file, cert=args.tls_cert,
                                        key=args.tls_key)
        where = (f"on the cluster {args.cluster}" if args.cluster else
                 "on local worker processes, one per core" if args.workers is None else
                 "in this process" if args.workers == 0 else
                 f"on {args.workers} worker process(es)")
        outcome = run_study(args.name, setup, folder=args.out if project is None else None,
                            project=project, study_name=study_name, workers=args.workers,
                            cluster=args.cluster, progress=progress, security=security,
                            on_start=lambda n: print(f"study {args.name}: {n} points, run "
                                                     f"{where}", flush=True))
        print(f"{len(outcome.document['points'])} points: {outcome.ran} simulated, "
              f"{outcome.reused} reused from earlier runs")
        if project is not None:
            document, records = load_project_study(project, study_name)
            project.save()
            print(f"results stored in {project.path} as study '{study_name}'")
        else:
            document, records = load_results(args.out)
        files = render_report(document, records, out, stem=stem)
        _print_analysis(document, records)
        print(f"report written: {files.html}, {files.pdf}")
        failed = sum(1 for r in records if r.get("status") != "ok")
        return 1 if failed else 0
    finally:
        if project is not None:
            project.close()


# ==== optimize / evaluate / compare (the Gemmini schedule optimiser) ===========================
DEFAULT_CPU_SECONDS = 6.0      # optimize's default budget (process CPU seconds)


def _budget(args: argparse.Namespace) -> Any:
    """--evaluations (layer-mapping evaluations) / --cpu-seconds / --seconds; with none,
    DEFAULT_CPU_SECONDS of CPU time, or (where the command has one, ``default_wall_s`` set by
    :func:`_add_budget_args`: optimize) that or its wall-time cap, whichever comes first.
    ``compare`` has no wall limit at all (its budgets are CPU-seconds or evaluations)."""
    from optimizer.search import Budget

    cpu = getattr(args, "cpu_seconds", None)
    wall = getattr(args, "seconds", None)
    if args.evaluations is None and wall is None and cpu is None:
        return Budget(cpu_seconds=DEFAULT_CPU_SECONDS, seconds=args.default_wall_s)
    return Budget(evaluations=args.evaluations, seconds=wall, cpu_seconds=cpu)


def _add_budget_args(p: argparse.ArgumentParser, per: str, default_wall_s: float | None
                     ) -> None:
    """The search budget's flags (read by :func:`_budget`); ``per``: what one budget pays
    for, as the help says it ("", " per run", " per iteration"); ``default_wall_s`` None: the
    command takes no wall-clock budget (``compare``: like for like on a shared machine needs
    CPU-seconds or evaluations), and refuses ``--seconds``."""
    p.set_defaults(default_wall_s=default_wall_s)
    default = (f"{DEFAULT_CPU_SECONDS:g} CPU-s" if default_wall_s is None else
               f"{DEFAULT_CPU_SECONDS:g} CPU-s or {default_wall_s:g} s, whichever first")
    p.add_argument("--evaluations", type=_positive_int, metavar="N",
                   help=f"budget{per}: layer-mapping evaluations (one layer under one mapping; "
                        f"default, with no other budget: {default})")
    if default_wall_s is None:
        p.add_argument("--seconds", action=_RefuseWallBudget, metavar="T",
                       help=argparse.SUPPRESS)
    else:
        p.add_argument("--seconds", type=_positive_float, metavar="T",
                       help=f"budget{per}: wall-clock seconds (moves with the machine's load)")
    p.add_argument("--cpu-seconds", type=_positive_float, metavar="T",
                   help=f"budget{per}: process CPU seconds (search + refinement)")


class _RefuseWallBudget(argparse.Action):
    """``--seconds`` where a command compares methods: a usage error (exit 2) naming it."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        parser.error(f"{option_string}: a wall-clock budget is not accepted here: it moves "
                     "with the machine's load, so methods would not get the same budget; "
                     "use --cpu-seconds or --evaluations")


def _add_search_args(p: argparse.ArgumentParser) -> None:
    """Flags optimize and compare share beside the budget: threads, refinement, batch."""
    p.add_argument("--threads", type=_positive_int, metavar="N",
                   help="torch threads (default 1, so CPU seconds mean one core's work)")
    p.add_argument("--no-refine", action="store_true",
                   help="skip the exact refinement stage for every method: the search's "
                        "result as it is")
    p.add_argument("--batch", type=_positive_int, default=1, metavar="B",
                   help="batch size: every layer's N times B (default 1)")
    p.add_argument("--fused-halo", choices=FUSED_HALO_RULES, default=None,
                   help="input traffic of a fused group's first layer: each tile re-fetches "
                        "its window with its halo, as Stream and Gemmini's tiled convolutions "
                        "do (refetch, the default), or the window slides across the tiles "
                        "(slide, Timeloop's rule, which unfused layers always use)")


def _fused_halo(args: argparse.Namespace) -> str:
    """Apply --fused-halo for this process (the cost model's default rule); returns the rule."""
    from optimizer import costmodel

    if getattr(args, "fused_halo", None):
        costmodel.FUSED_HALO = args.fused_halo
    return costmodel.FUSED_HALO


def _add_memory_arg(p: argparse.ArgumentParser) -> None:
    """--memory: the DRAM objective (read by :func:`_objective_hardware`)."""
    p.add_argument("--memory", metavar="MEM",
                   help="price DRAM energy as the engine does: the DRAM term of this memory "
                        "(a preset, NAME-<n>ch or a .toml/.ini config, as cosim's --memory; "
                        "background and refresh over the schedule's cycles, data and ACT "
                        "energy per line); default: the hardware file's per-byte energy")


def _objective_hardware(args: argparse.Namespace, hw: Any) -> Any:
    """``hw`` with the DRAM term of --memory (calibrated on the engine at its first use, then
    cached), or unchanged without it; prints the line that says which DRAM energy the EDP
    prices."""
    from optimizer.dram_objective import objective_hardware, per_byte_note, term_line

    memory = getattr(args, "memory", None)
    if memory is None:
        print(per_byte_note(hw))
        return hw
    out = objective_hardware(hw, memory, progress=lambda m: print(
        f"  ... {m}", file=sys.stderr, flush=True))
    print(term_line(out))
    return out


def _record_objective(data: dict[str, Any], hw: Any) -> None:
    """The DRAM objective into an output document; its hardware fields name the hardware
    file (the DRAM term is recorded apart, under ``dram_objective``, and ``memory``)."""
    from optimizer.dram_objective import base_hardware, objective_json

    obj = objective_json(hw)
    base = base_hardware(hw)
    if "hardware_config" in data:
        data["hardware_config"] = base.to_dict()
    data["hardware"] = base.name
    data["memory"] = obj.get("memory")
    data["dram_objective"] = obj


def _torch_threads(args: argparse.Namespace) -> None:
    """One torch thread unless --threads: CPU-second budgets then mean one core's work."""
    import torch

    torch.set_num_threads(getattr(args, "threads", None) or 1)


def _outputs_first(args: argparse.Namespace, inputs: Sequence[tuple[str, Any]] = (),
                   **outputs: str) -> None:
    """Check the output paths a command will write (attribute of args -> what it is), and
    make their missing folders, before its work: a bad path fails at once, not after a run
    whose results would be lost; no output may be one of `inputs` ((what, path) pairs) or
    another output."""
    from engine.fileio import check_distinct, prepare_output

    check_distinct([(what, getattr(args, attr, None)) for attr, what in outputs.items()],
                   inputs)
    for attr, what in outputs.items():
        path = getattr(args, attr, None)
        if path is not None:
            prepare_output(path, what)


def _write_json(path: str | Path, data: Any) -> None:
    import json

    from engine.fileio import atomic_write_text, json_default

    atomic_write_text(path, json.dumps(data, indent=2, default=json_default))


def _edp_line(d: dict[str, Any]) -> str:
    return (f"EDP {d['edp']:.4g} pJ x cycles, "
            f"energy {d['energy_pj'] * 1e-6:.4g} uJ, latency {d['latency_cycles']:.4g} cycles, "
            f"{'valid' if d['valid'] else 'INVALID'}")


def cmd_project(args: argparse.Namespace) -> int:
    """Check a project file: its structure, and that every trace it refers to is readable
    (and stays inside the project's folder unless --allow-external)."""
    from engine.errors import DiffMemError
    from projects.store import Project
    bad = 0
    with Project.open(args.file, readonly=True, allow_external=args.allow_external) as p:
        print(f"{p.path}: schema {p.schema_on_disk}; {len(p.configs())} config(s), "
              f"{len(p.traces())} trace(s), {len(p.runs())} run(s), {len(p.studies())} "
              f"study(ies), {len(p.optimizer_runs())} optimiser run(s)")
        for name in p.traces():
            try:
                src = p.trace_source(name)
                n = sum(len(c) for c in src.iter_chunks())
                where = "embedded" if src.embedded else str(src.path)
                recorded = p.trace_info(name)["summary"].get("requests")
                wrong = ""
                if src.embedded or recorded is None:
                    pass
                elif not isinstance(recorded, int) or isinstance(recorded, bool):
                    wrong = (f"its recorded request count {recorded!r} is not a whole number "
                             "(damaged project)")
                elif recorded != n:
                    # (replaced or cut since it was added: the stored runs are of another file)
                    wrong = (f"{where} now holds {n} requests, the project recorded "
                             f"{recorded} when it was added: the file was replaced or changed "
                             "since, and the project's runs of it are not of this file")
                if wrong:
                    bad += 1
                    print(f"  trace {name}: error: {wrong}", file=sys.stderr)
                    continue
                print(f"  trace {name}: {n} requests ({where})")
            except DiffMemError as exc:
                bad += 1
                print(f"  trace {name}: error: {exc}", file=sys.stderr)
    return 2 if bad else 0


def cmd_optimize(args: argparse.Namespace) -> int:
    _outputs_first(args, out="schedule output")
    from optimizer.methods import optimize, schedule_json

    due = _progress_due()
    stage = ["search"]

    def progress(p: Any) -> None:
        # every PROGRESS_EVERY_S, whatever a method calls a step (BO's step is 8 trials: every
        # 50th step never came, and a 50 s run printed nothing), terminal or log file alike;
        # and at once when the refinement starts
        if due() or p.stage != stage[0]:
            stage[0] = p.stage
            what = p.method + (" refinement" if p.stage == "refinement" else "")
            print(f"  ... {what} step {p.step}, {p.evaluations} evaluations, best EDP "
                  f"{p.best_edp:.4g} pJ x cycles", file=sys.stderr, flush=True)

    from optimizer.batching import with_batch
    from optimizer.hardware import load_hardware
    from optimizer.workload import load_network

    _torch_threads(args)
    halo = _fused_halo(args)
    net = with_batch(load_network(args.network), args.batch)
    hw = _objective_hardware(args, load_hardware(args.hw))
    with _ctrl_c_stops() as stopped:
        budget = dataclasses.replace(_budget(args), stop=stopped.is_set)
        result, space = optimize(net, hw, args.method, budget, args.seed,
                                 progress=progress, refine=not args.no_refine)
    data = schedule_json(result, space)
    _record_objective(data, hw)
    data["batch"] = args.batch
    data["fused_halo"] = halo
    data["stopped_early"] = stopped.is_set()
    if Path(args.network).suffix.lower() == ".json" and Path(args.network).is_file():
        data["network_file"] = str(Path(args.network).absolute())   # (evaluate reads it)
    _write_json(args.out, data)
    print(f"{data['network']} (batch {args.batch}) on {hw.name} by {data['method']} "
          f"(seed {args.seed}): {result.evaluations} layer-mapping evaluations, "
          f"{result.cpu_s:.1f} CPU-s, {result.wall_s:.1f} s")
    if result.raw is not None and not args.no_refine:
        post = ("" if result.post is None or result.post is result.raw else
                f"; after the method's own post-processing (archive) {result.post.edp:.4g}")
        print(f"  search alone: EDP {result.raw.edp:.4g} pJ x cycles{post}; after the "
              "refinement:")
    print(f"  {_edp_line(data)}; {len(data['fused_edges'])} fused edge(s)")
    print(f"schedule written to {args.out}" + (
        " (stopped early by Ctrl-C: the best schedule found until then)"
        if stopped.is_set() else ""))
    return 0


@contextlib.contextmanager
def _ctrl_c_stops(kept: str = "the best schedule so far is kept"
                  ) -> Iterator[threading.Event]:
    """A first Ctrl-C sets the event (a search budget's ``stop``: the search ends as if its
    budget were spent and its best schedule is kept, refined and written, as the GUI's Stop
    does; a simulation's: the trace is cut where it is read) and says what is ``kept``; a
    second one interrupts as usual. Main thread only (elsewhere: no handler)."""
    stopped = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stopped
        return

    def first(signum: int, frame: Any) -> None:
        if stopped.is_set():
            raise KeyboardInterrupt
        stopped.set()
        print(f"stopping: {kept} (Ctrl-C again to abort)", file=sys.stderr, flush=True)
    old = signal.signal(signal.SIGINT, first)
    try:
        yield stopped
    finally:
        signal.signal(signal.SIGINT, old)


def cmd_evaluate(args: argparse.Namespace) -> int:
    _outputs_first(args, [("schedule", args.schedule), ("reference", args.reference)],
                   out="evaluation output")
    # options of the other mode would be ignored without a word: refused
    other = (("--hw", args.hw), ("--network", args.network), ("--batch", args.batch),
             ("--fused-halo", args.fused_halo), ("--memory", args.memory)
             ) if args.reference is not None else (
        ("--arch-file", args.arch_file),)
    unused = [flag for flag, value in other if value is not None]
    if unused:
        from optimizer.errors import OptimizerError
        raise OptimizerError(
            f"{', '.join(unused)} {'does' if len(unused) == 1 else 'do'} not apply "
            + ("to --reference (a reference file's entries carry their own architecture, "
               "workload and batch; --arch-file names architectures they only name)"
               if args.reference is not None else "without --reference"))
    if args.reference is not None:
        from optimizer.reference import score_reference

        if args.schedule is not None:
            from optimizer.errors import OptimizerError
            raise OptimizerError("give --schedule or --reference, not both")
        if args.out is None:
            from optimizer.errors import OptimizerError
            raise OptimizerError("--reference needs --out SCORES.json")
        scores = score_reference(args.reference, arch_file=args.arch_file)
        _write_json(args.out, scores)
        valid = sum(1 for v in scores.values() if v["results"]["valid"])
        print(f"{len(scores)} mapping(s) of {args.reference} scored ({valid} valid); "
              f"written to {args.out}")
        return 0
    if args.schedule is None or args.hw is None:
        from optimizer.errors import OptimizerError
        raise OptimizerError("evaluate needs --schedule FILE --hw HW (or --reference FILE "
                             "--out FILE)")
    from optimizer import costmodel
    from optimizer.batching import with_batch
    from optimizer.errors import OptimizerError
    from optimizer.hardware import load_hardware
    from optimizer.mapping import load_saved_schedule
    from optimizer.methods import result_json
    from optimizer.workload import load_network

    sched, saved = load_saved_schedule(args.schedule)
    name = args.network or saved.network_file or sched.network
    if not name:
        raise OptimizerError(f"{args.schedule}: the schedule names no network; give --network")
    # the settings the score depends on: the file's, unless given here
    batch = args.batch if args.batch is not None else saved.batch
    halo = args.fused_halo or saved.fused_halo or costmodel.FUSED_HALO
    net, hw = with_batch(load_network(name), batch), load_hardware(args.hw)
    hw = _objective_hardware(args, hw)
    res = costmodel.evaluate_schedule(net, sched, hw, halo=halo)
    data = result_json(res, net, hw, method=sched.method)
    data["batch"], data["fused_halo"] = batch, halo
    _record_objective(data, hw)
    print(f"{args.schedule}: {net.name} (batch {batch}, fused inputs: {halo}) on {hw.name}")
    print(f"  {_edp_line(data)}")
    n_problems = len(res.problems)
    for problem in res.problems[:MAX_VIOLATIONS_SHOWN]:
        print(f"  problem: {problem}")
    if n_problems > MAX_VIOLATIONS_SHOWN:
        print(f"  ... and {n_problems - MAX_VIOLATIONS_SHOWN} more problem(s)")
    if saved.edp is not None:
        line = _saved_score_line(saved, res.edp, data["hardware_config"], batch, halo,
                                 data["dram_objective"], len(res.fused))
        print(f"  {line}")
    if args.out is not None:
        _write_json(args.out, data)
        print(f"evaluation written to {args.out}")
    return 0 if res.valid else 1


def _saved_score_line(saved: Any, edp: float, hw: dict[str, Any], batch: int,
                      halo: str, dram_objective: dict[str, Any] | None = None,
                      fused_edges: int = 1) -> str:
    """How a re-scored schedule's EDP compares with the one saved in its file: reproduced,
    different (the cost model or the file changed), or not comparable (another hardware,
    batch, fused-input rule or DRAM objective than the run that saved it; the fused-input
    rule only counts when the schedule has ``fused_edges``: without any it changes
    nothing)."""
    from optimizer.dram_objective import objective_mismatch

    dram = (objective_mismatch(saved.dram_objective, dram_objective)
            if dram_objective is not None else None)
    other = [what for what, same in (
        ("hardware", saved.hardware_config is None or saved.hardware_config == hw),
        (f"batch {saved.batch}", saved.batch == batch),
        (f"fused inputs {saved.fused_halo}",
         saved.fused_halo in (None, halo) or fused_edges == 0),
        (dram, dram is None)) if not same]
    if other:
        return (f"saved EDP {saved.edp:.6g} pJ x cycles was on another setting "
                f"({', '.join(other)}): not comparable")
    rel = abs(edp - saved.edp) / abs(saved.edp) if saved.edp else abs(edp)
    if rel <= 1e-9:
        return f"saved EDP {saved.edp:.6g} pJ x cycles: reproduced"
    log.warning("%s: re-scored EDP %.6g differs from the saved %.6g by %.3g %% (the cost "
                "model or the file changed since it was saved)", "evaluate", edp, saved.edp,
                100 * rel)
    return f"saved EDP {saved.edp:.6g} pJ x cycles: DIFFERS by {100 * rel:.3g} %"


def cmd_compare(args: argparse.Namespace) -> int:
    _outputs_first(args, out="table output")
    from optimizer.compare import format_table, run_comparison
    from optimizer.methods import METHODS

    def on_run(r: Any) -> None:
        print(f"  {r.network:<14} {r.method:<11} seed {r.seed}: EDP raw {r.raw_edp:.4g}, "
              f"refined {r.edp:.4g} pJ x cycles, {r.fused_edges} fused edge(s), "
              f"{r.evaluations} evaluations, {r.cpu_s:.1f} CPU-s"
              f"{'' if r.valid else ' INVALID'}", file=sys.stderr, flush=True)

    from optimizer.hardware import load_hardware

    _torch_threads(args)
    halo = _fused_halo(args)
    # by default every method and, with the refinement on, the refinement alone as the
    # reference row (what the refined column owes to the refinement stage)
    methods = args.methods or (list(METHODS)
                               + ([] if args.no_refine else list(REFERENCE_METHOD_CHOICES)))
    hw = _objective_hardware(args, load_hardware(args.hw))
    dram: dict[str, Any] = {}
    _record_objective(dram, hw)
    del dram["hardware"]             # (the comparison names its hardware file itself)

    def keep(comp: Any) -> None:
        # the runs finished so far, after each one: a Ctrl-C or a failure in a later run
        # keeps them ("complete": false)
        _write_json(args.out, {**comp.to_json(complete=False), "fused_halo": halo, **dram})
    comp = run_comparison(hw, args.networks, methods, _budget(args),
                          args.seeds, on_run=on_run, refine=not args.no_refine,
                          batch=args.batch, on_progress=keep if args.out else None,
                          hardware_source=args.hw)
    print(format_table(comp))
    if args.out is not None:
        _write_json(args.out, {**comp.to_json(), "fused_halo": halo, **dram})
        print(f"table written to {args.out}")
    return 0


# ==== cosim (schedule -> DRAM traffic -> engine -> back into the optimiser) ====================
def cmd_cosim(args: argparse.Namespace) -> int:
    _outputs_first(args, out="results output")
    from optimizer import cosim
    from optimizer.cosim_job import run_cosim_job
    from optimizer.hardware import load_hardware
    from optimizer.search import Budget
    from optimizer.workload import load_network

    _torch_threads(args)
    if not 0.05 <= args.acc_ghz <= 10.0:
        # (accepted: a what-if may want it; but a typo of MHz for GHz is the likelier cause)
        log.warning("--acc-ghz %g: an accelerator clock of %g GHz is outside 0.05-10 GHz "
                    "(Gemmini runs at ~1 GHz): the DRAM requests are timed with it",
                    args.acc_ghz, args.acc_ghz)
    net = load_network(args.network)
    hw = load_hardware(args.hw)
    memory = cosim.load_memory(args.memory)
    if args.cpu_seconds is not None:
        budget = Budget(evaluations=args.evaluations, seconds=args.seconds,
                        cpu_seconds=args.cpu_seconds)
    else:
        budget = _budget(args)

    def progress(message: str) -> None:
        # (every layer's simulation too: a large network's iteration simulates tens of
        # millions of requests, a minute with no line otherwise)
        print(f"  ... {message}", file=sys.stderr, flush=True)

    data, iters = run_cosim_job(net, hw, memory, method=args.method, seed=args.seed,
                                budget=budget, iterations=args.iterate, layout=args.layout,
                                placement=args.placement, acc_ghz=args.acc_ghz,
                                cache_dir=args.cache_dir, validate=args.validate or 0,
                                progress=progress,
                                # (the iterations measured so far, after each: a Ctrl-C or a
                                # failure later keeps them, "complete": false)
                                on_partial=lambda doc: _write_json(args.out, doc))
    summary = data["summary"]
    _write_json(args.out, data)
    print(f"{net.name} on {hw.name} with {memory.name} ({args.layout}, {args.placement}):")
    for it in iters:
        c = it.cosim
        print(f"  iteration {it.iteration} (optimised under the {it.hardware['dram_model']} "
              f"DRAM model): model EDP {it.model_edp:.4g} with per-byte DRAM, "
              f"{c.model_edp:.4g} with the DRAM term as fitted then; engine EDP "
              f"{c.engine_edp:.4g} pJ x cycles, {len(it.fused)} fused edge(s)"
              f"{' (kept)' if it.kept else ''}")
    print(f"  engine-measured EDP {summary['engine_edp_first']:.4g} -> "
          f"{summary['engine_edp_last']:.4g} ({summary['engine_edp_change']:+.1%}); fusion "
          f"changed: {summary['fusion_changed']}")
    if "validation" in summary:
        v = summary["validation"]
        print(f"  validation on {v['schedules']} schedules: Kendall tau of EDP "
              f"{v['kendall_tau_edp']:.3f}; DRAM time model/engine median "
              f"{v['dram_cycles_ratio_median']:.3f} (worst {v['dram_cycles_ratio_worst']:.3f}), "
              f"energy median {v['dram_energy_ratio_median']:.3f} "
              f"(worst {v['dram_energy_ratio_worst']:.3f})")
    print(f"results written to {args.out}")
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
def _int_at_least(text: str, least: int, wanted: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got '{text}'") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected {wanted}, got {value}")
    return value


def _positive_int(text: str) -> int:
    return _int_at_least(text, 1, "a positive integer")


def _non_negative_int(text: str) -> int:
    return _int_at_least(text, 0, "0 or a positive integer")


def _seed(text: str) -> int:
    """A random seed: numpy's generators take 0 .. 2^32 - 1 (a negative seed ran the whole
    search and failed in its last stage; a huge one overflowed)."""
    value = _int_at_least(text, 0, "a seed from 0 to 4294967295")
    if value >= 2 ** 32:
        raise argparse.ArgumentTypeError(f"expected a seed from 0 to 4294967295, got {value}")
    return value


def _cache_mib(text: str) -> float:
    """An on-chip cache size in MiB: 0 (none) up to 1024 (nan and inf crashed the trace's
    set-up, 10^9 asked numpy for 60 TiB)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of MiB, got '{text}'") from None
    if not 0 <= value <= 1024:
        raise argparse.ArgumentTypeError(f"expected 0 (no cache) to 1024 MiB, got {text}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="diffmem" if FROZEN else "main.py",
        description="DiffMem Studio: DRAM behaviour of deep-learning workloads. "
                    "Without a command, opens the GUI.")
    loud = parser.add_mutually_exclusive_group()
    loud.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    loud.add_argument("-q", "--quiet", action="store_true",
                      help="log warnings and errors only (default: also what a run notes at "
                           "INFO, e.g. the Ramulator mode's deliberate differences)")
    from engine.version import APP_VERSION

    parser.add_argument("--version", action="version", version=f"%(prog)s {APP_VERSION}")
    sub = parser.add_subparsers(dest="command", metavar="<command>")

    p = sub.add_parser("simulate", help="simulate request traces on a memory config, "
                                        "write statistics JSON",
                       description="Simulate one or more request traces (merged by time) on a "
                                   "DRAM configuration and write the statistics as JSON.")
    p.add_argument("--config", required=True,
                   help="preset name (see 'presets'), a .toml preset, a DRAMsim3 .ini or a "
                        "Ramulator 2 .yaml run file (its memory in our engine; the ramulator "
                        "command runs it as Ramulator 2.0 does)")
    p.add_argument("--trace", required=True, action="append", metavar="TRACE",
                   help="request trace (.trace/.txt DRAMsim3 text, .dmt binary, .h5 HDF5); "
                        "repeat for several streams")
    p.add_argument("--out", required=True, metavar="STATS.json", help="statistics output")
    run_len = p.add_mutually_exclusive_group()
    run_len.add_argument("--cycles", type=_positive_int, metavar="N",
                         help="simulate exactly N cycles, as DRAMsim3's -c does: the trace may "
                              "end earlier (refresh, background energy and write drains go "
                              "on); requests still queued at N are reported as pending")
    run_len.add_argument("--max-cycles", type=_positive_int, metavar="N",
                         help="stop at cycle N or when every request is done, whichever "
                              "comes first (default: run until every request is done)")
    p.add_argument("--epoch", type=_positive_int, metavar="N",
                   help="epoch length in cycles (default: the config's epoch_period)")
    p.add_argument("--cmd-trace", metavar="FILE", help="write every DRAM command to FILE "
                   "(with several channels, one file per channel: .chN before FILE's "
                   "suffix, x.cmd -> x.ch0.cmd ...)")
    p.add_argument("--wrap-addresses", action="store_true",
                   help="drop address bits above the memory's capacity, as DRAMsim3 does "
                        "(counted and warned; default: such an address is an error)")
    p.add_argument("--phantom-eof-read", action="store_true",
                   help="reproduce DRAMsim3's extra READ at the end of a trace")
    p.add_argument("--intake", choices=("dramsim3", "per-channel"), default="dramsim3",
                   help="front end: one request a cycle for the whole memory, in trace order, "
                        "as DRAMsim3 (default), or one a cycle per channel, in trace order per "
                        "channel, a full queue holding back only its channel (a GPU crossbar)")
    p.add_argument("--threads", type=_positive_int, default=1, metavar="N",
                   help="simulate the channels in N threads, under either intake "
                        "(statistics and command traces identical to 1 thread)")
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
                   help="never open a window (the demo command never does; `python main.py` "
                        "shows the demo project in the GUI)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("check-commands", help="check a DRAM command trace against JEDEC timing",
                       description="Check a DRAMsim3-format command trace against the JEDEC "
                                   "timing rules of a config; exit 1 if any rule is broken.")
    p.add_argument("--config", required=True,
                   help="preset name or .toml/.ini/.yaml path: the memory the trace was made on")
    p.add_argument("cmdtrace", metavar="CMDTRACE",
                   help="one channel's DRAMsim3-format command trace (simulate --cmd-trace "
                        "writes one a channel), plain or gzip")
    p.add_argument("--channel", type=int, metavar="N",
                   help="channel of commands printed with channel -1")
    p.set_defaults(func=cmd_check_commands)

    p = sub.add_parser("ramulator", help="run a Ramulator 2 run file as Ramulator 2.0 does "
                       "(Ramulator-compatible mode, DDR4/DDR5/HBM3/LPDDR5)",
                       description="Run a Ramulator 2 YAML run file on a LoadStoreTrace "
                                   "(LD|ST 0xADDR) with Ramulator 2.0's front end, Generic "
                                   "controller, FRFCFS and AllBank refresh reproduced; prints "
                                   "its statistics (num_cycles, average_read_latency, row hits, "
                                   "command counts) as JSON. DDR4, DDR5, HBM3 and LPDDR5; where "
                                   "Ramulator 2.0 aborts (stock LPDDR5's row-0 lookup "
                                   "deadlocks), this mode stops with the same message.")
    p.add_argument("--config", required=True, help="Ramulator 2 .yaml run file")
    p.add_argument("--trace", required=True, help="LoadStoreTrace file")
    p.add_argument("--cmd-trace", metavar="PATH", help="write Ramulator's TraceRecorder "
                   "format to PATH.chN")
    p.add_argument("--lpddr5-rowcheck-fix", action="store_true",
                   help="LPDDR5: run as Ramulator 2.0 with its row-hit check patched to look "
                        "up the requested row (../shared/reference/ramulator2-ddr5/lp5fix), "
                        "not stock 2.0's row 0")
    p.add_argument("--out", metavar="FILE.json", help="write the statistics here")
    p.set_defaults(func=cmd_ramulator)

    p = sub.add_parser("convert-trace", help="convert a request trace between formats",
                       description="Convert a request trace; the formats follow the file "
                                   "extensions: .dmt binary, .h5 HDF5, anything else DRAMsim3 "
                                   "text.")
    p.add_argument("src", metavar="SRC")
    p.add_argument("dst", metavar="DST")
    p.set_defaults(func=cmd_convert_trace)

    p = sub.add_parser("trace", help="generate the DRAM trace of one training step of a "
                                     "deep-learning workload",
                       description="Capture one training step (forward, loss, backward, "
                                   "AdamW) of a workload model on PyTorch's meta device and "
                                   "write its DRAM request trace (HDF5, with phase/operator/"
                                   "role tags) and a summary.")
    p.add_argument("--workload", required=True, metavar="NAME",
                   help="ddpm, ldm-sr, dit-traj or resnet50")
    p.add_argument("--batch", required=True, type=int, metavar="N", help="batch size")
    p.add_argument("--resolution", type=int, metavar="R",
                   help="image side in pixels (image workloads; default: the paper's)")
    p.add_argument("--size", default="paper", choices=("paper", "tiny"),
                   help="model size: the published configuration, or a tiny one for tests")
    p.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"),
                   help="the step's one dtype: parameters, gradients, activations and AdamW's "
                        "moments all in it (a pure bf16/fp16 step, not mixed precision with "
                        "fp32 master weights)")
    p.add_argument("--sample", type=float, metavar="F",
                   help="keep only this fraction of the step's request stream (stratified "
                        "windows, chosen deterministically from --seed); totals are "
                        "extrapolated")
    p.add_argument("--seed", type=_seed, default=0, help="seed of the sampled windows")
    p.add_argument("--cache-mib", type=_cache_mib, default=40.0, metavar="MIB",
                   help="on-chip cache in front of DRAM, MiB (default 40, an A100 L2; 0: none)")
    p.add_argument("--memory", default="HBM2", metavar="PRESET",
                   help="memory config giving the clock and capacity (default HBM2)")
    p.add_argument("--l2-start", default="steady", choices=("steady", "cold"),
                   help="the on-chip cache at the step's start: steady (default: as the "
                        "previous, identical training step left it; its dirty lines are "
                        "written back when this step evicts them, and none at the end) or "
                        "cold (empty, and every dirty line written back at the step's end)")
    p.add_argument("--pages", default="random", choices=("random", "identity"),
                   help="virtual to physical placement: 2 MiB frames drawn by a seeded "
                        "permutation (default), or the allocator's addresses unchanged")
    p.add_argument("--placement-seed", type=_seed, default=0, metavar="S",
                   help="seed of the frame permutation (default 0)")
    p.add_argument("--fold-addresses", action="store_true",
                   help="allow a footprint larger than the memory: pages share frames "
                        "(aliasing; recorded in the summary). Without it such a step stops "
                        "with an error")
    p.add_argument("--address-hash", default="gpu", choices=("gpu", "none"),
                   help="GPU-style XOR channel/bank hash applied before the memory's address "
                        "mapping (default), or the preset's mapping alone")
    p.add_argument("--order", default="gpu", choices=("gpu", "sequential"),
                   help="request order within an operator: thread blocks in flight on the "
                        "GPU's SMs (default), or each tensor in address order")
    p.add_argument("--optimizer", default="foreach", choices=("foreach", "fused", "single"),
                   help="AdamW kernels: multi-tensor foreach (PyTorch's CUDA default), fused "
                        "(fused=True: one kernel, 16 B read + 12 B written per fp32 "
                        "parameter) or one set of kernels per parameter tensor (foreach=False)")
    p.add_argument("--attention", default="math", choices=("math", "flash"),
                   help="attention kernel: math (the models' own matmul-softmax-matmul, score "
                        "matrix in memory: the reference implementations) or flash (PyTorch's "
                        "fused memory-efficient SDPA kernel, no score matrix; docs/workloads.md)")
    p.add_argument("--out", required=True, metavar="TRACE.h5", help="HDF5 trace output")
    p.add_argument("--text", metavar="TRACE.txt", help="also export a DRAMsim3 text trace")
    p.add_argument("--summary", metavar="SUMMARY.json", help="also write the summary as JSON")
    p.set_defaults(func=cmd_trace)

    p = sub.add_parser("presets", help="list memory presets, or import a DRAMsim3 .ini as one",
                       description="List the shipped memory presets, or convert a DRAMsim3 "
                                   ".ini into a TOML preset.")
    p.add_argument("--import-ini", metavar="FILE.ini", help="DRAMsim3 config to import")
    p.add_argument("--out", metavar="NAME.toml", help="where to write the imported preset")
    p.set_defaults(func=cmd_presets)

    p = sub.add_parser("study", help="run a study (parameter sweep) and write its report",
                       description="Run a study: many simulations over a parameter grid, in "
                                   "local worker processes or on a Dask cluster, then an HTML "
                                   "and PDF design-review report. Restarting with the same "
                                   "--out (or project) resumes: finished points are kept.")
    p.add_argument("name", nargs="?", metavar="NAME", help="study to run (see --list)")
    p.add_argument("--list", action="store_true", help="list the studies and their parameters")
    p.add_argument("--trace", action="append", metavar="LABEL=PATH[,batch=N,flops=X,kind=K]",
                   help="a workload trace (any format the engine reads); repeat for several. "
                        "kind is diffusion|cnn|other (guessed from the label if not given)")
    p.add_argument("--config", default="DDR4-3200",
                   help="base memory config: preset name or .toml/.ini path (default DDR4-3200)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a config field for every point")
    p.add_argument("--param", action="append", metavar="NAME=V1,V2,...",
                   help="study parameter, e.g. tRCD=10,12,14 (timing) or "
                        "configs=DDR4-3200,GDDR6 (technology, memshare)")
    p.add_argument("--variant", action="append", metavar="NAME:KEY=VALUE,...",
                   help="a named variant (architecture, policy, hotspots); replaces the "
                        "defaults")
    p.add_argument("--compute", action="append", metavar="KEY=VALUE",
                   help="accelerator model for memshare: name, peak_flops, utilisation, "
                        "power_W (default A100)")
    p.add_argument("--cycles", type=_positive_int, metavar="N", help="stop each run at cycle N")
    p.add_argument("--arrival", choices=("trace", "saturate"), default="trace",
                   help="requests arrive at the trace's cycles (default), or all at once so "
                        "that the run measures the DRAM's service time (memshare always "
                        "saturates)")
    p.add_argument("--intake", choices=("dramsim3", "per-channel"),
                   help="front end: one request a cycle for the whole memory (DRAMsim3) or one "
                        "per channel (default: per-channel for saturated arrival, memshare and "
                        "recommendations; dramsim3 otherwise)")
    p.add_argument("--workers", type=_non_negative_int, metavar="N",
                   help="local worker processes (default: one per core; 0 = in this process)")
    p.add_argument("--cluster", metavar="tcp://HOST:PORT",
                   help="run on this Dask scheduler (workers need this repository and the "
                        "trace files); tls://HOST:PORT for TLS")
    p.add_argument("--tls-ca-file", metavar="PEM", help="tls:// cluster: CA certificate")
    p.add_argument("--tls-cert", metavar="PEM", help="tls:// cluster: client certificate")
    p.add_argument("--tls-key", metavar="PEM", help="tls:// cluster: client key (if not in "
                                                     "the certificate file)")
    p.add_argument("--out", metavar="DIR",
                   help="folder for study.json, results.jsonl, report.html, report.pdf")
    p.add_argument("--project", metavar="FILE",
                   help="store the study in this project file (made when it does not exist)")
    p.add_argument("--study-name", metavar="NAME",
                   help="name of the study in the project (default: the study's name)")
    p.add_argument("--report", action="store_true",
                   help="only rebuild the report from stored results (--out DIR, or --project "
                        "FILE with NAME)")
    p.set_defaults(func=cmd_study)

    p = sub.add_parser("optimize", help="find the lowest-EDP schedule (tiling + fusion) of a "
                                        "network on a Gemmini configuration",
                       description="Search the schedule of a network (per-layer tiling, loop "
                                   "orders, fused layers) minimising energy-delay product on a "
                                   "Gemmini configuration; write it as JSON.")
    p.add_argument("--network", required=True, metavar="NET",
                   help="vgg16, vgg19, resnet18, mobilenet_v1, gpt3_6.7b_mha, gpt3_6.7b_ffn "
                        "or a network .json file")
    p.add_argument("--hw", required=True, metavar="HW", help="large, small or a .toml file")
    p.add_argument("--method", default="fadiff", choices=METHOD_CHOICES,
                   help="search method (default fadiff)")
    p.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    _add_budget_args(p, "", 60.0)
    _add_search_args(p)
    _add_memory_arg(p)
    p.add_argument("--out", required=True, metavar="SCHEDULE.json", help="schedule output")
    p.set_defaults(func=cmd_optimize)

    p = sub.add_parser("evaluate", help="re-score a saved schedule, or score the mappings of "
                                        "a Timeloop reference file",
                       description="Score a schedule file on a hardware configuration (exit 1 "
                                   "if it is invalid there), or every explicit mapping of a "
                                   "file in the format of reference.json with its own "
                                   "architectures and energies.")
    p.add_argument("--schedule", metavar="SCHEDULE.json", help="schedule written by optimize")
    p.add_argument("--hw", metavar="HW", help="large, small or a .toml file")
    p.add_argument("--network", metavar="NET",
                   help="network of the schedule (default: the one it names, or the network "
                        "file it was optimised from)")
    p.add_argument("--batch", type=_positive_int, metavar="B",
                   help="batch size (default: the schedule's, else 1)")
    p.add_argument("--fused-halo", choices=FUSED_HALO_RULES, default=None,
                   help="fused-input rule (default: the schedule's, else refetch)")
    p.add_argument("--reference", metavar="FILE.json",
                   help="score the explicit-mapping entries of this reference file")
    p.add_argument("--arch-file", metavar="FILE.json",
                   help="take architectures from this file when --reference only names them")
    _add_memory_arg(p)
    p.add_argument("--out", metavar="FILE.json", help="write the scores / evaluation here")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("compare", help="compare the search methods on networks (EDP table)",
                       description="Run every method on every network with the same budget "
                                   "(CPU-seconds or evaluations; no wall-clock budget) and "
                                   "print the EDP table: per network and method the raw, "
                                   "post-processed and refined EDP, means over the networks, "
                                   "fused edges, evaluations and CPU time per method.")
    p.add_argument("--hw", required=True, metavar="HW", help="large, small or a .toml file")
    p.add_argument("--networks", nargs="+", metavar="NET",
                   default=["vgg16", "vgg19", "resnet18", "mobilenet_v1", "gpt3_6.7b_mha",
                            "gpt3_6.7b_ffn"], help="networks (default: all six)")
    p.add_argument("--methods", nargs="+", metavar="METHOD",
                   choices=METHOD_CHOICES + REFERENCE_METHOD_CHOICES, default=None,
                   help="methods (default: every registered one, and refine-only: the "
                        "refinement stage alone from the trivial schedule with the whole "
                        "budget, the reference row)")
    p.add_argument("--seeds", nargs="+", type=_seed, default=[0, 1, 2], metavar="S",
                   help="seeds per method and network (default 0 1 2)")
    _add_budget_args(p, " per run", None)
    _add_search_args(p)
    _add_memory_arg(p)
    p.add_argument("--out", metavar="TABLE.json", help="write the table as JSON")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("cosim", help="simulate a schedule's DRAM traffic on a memory and "
                                     "re-optimise with the measured DRAM",
                       description="Optimise a network's schedule, generate the DRAM requests "
                                   "of executing it on Gemmini, simulate them on a memory "
                                   "configuration, compare with the analytical model, and "
                                   "re-optimise under the DRAM term refit on the engine's "
                                   "measurements, keeping the best engine-measured EDP.")
    p.add_argument("--network", required=True, metavar="NET", help="network name or .json")
    p.add_argument("--hw", required=True, metavar="HW", help="large, small or a .toml file")
    p.add_argument("--memory", required=True, metavar="MEM",
                   help="memory preset, optionally with channels, e.g. DDR4-3200-8ch, HBM2; "
                        "or a .toml/.ini config")
    p.add_argument("--layout", default="nhwc", choices=("nhwc", "nchw", "tiled"),
                   help="tensor layout in DRAM (default nhwc)")
    p.add_argument("--placement", default="packed", choices=("packed", "staggered"),
                   help="tensor placement: back to back, or staggered across banks")
    p.add_argument("--iterate", type=_non_negative_int, default=3, metavar="N",
                   help="DRAM-aware re-optimisations at most (default 3; 0: just measure)")
    p.add_argument("--method", default="fadiff", choices=METHOD_CHOICES,
                   help="search method (default fadiff)")
    p.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")
    _add_budget_args(p, " per iteration", 60.0)
    p.add_argument("--threads", type=_positive_int, metavar="N",
                   help="torch threads (default 1, so CPU seconds mean one core's work, as "
                        "in optimize and compare)")
    p.add_argument("--acc-ghz", type=_positive_float, default=1.0, metavar="F",
                   help="accelerator clock in GHz (default 1.0)")
    p.add_argument("--validate", type=_positive_int, metavar="K",
                   help="score K diverse schedules with the model and the engine: Kendall "
                        "tau of EDP, DRAM time and energy ratios")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="DRAM calibration cache (default $DIFFMEM_CACHE_DIR or ~/.cache/diffmem)")
    p.add_argument("--out", required=True, metavar="COSIM.json", help="results output")
    p.set_defaults(func=cmd_cosim)

    p = sub.add_parser("project", help="check a project file (structure, traces it refers to)",
                       description="Open a project read-only, check its structure and read "
                                   "every trace it holds or refers to. A reference leading "
                                   "out of the project's folder is refused unless "
                                   "--allow-external.")
    p.add_argument("file", metavar="PROJECT", help="the .dmproj file")
    p.add_argument("--allow-external", action="store_true",
                   help="allow trace references outside the project's folder")
    p.set_defaults(func=cmd_project)

    p = sub.add_parser("build-kernel", help="compile the engine's kernel ahead of time (a "
                                            "shared library: simulations then start without "
                                            "numba)",
                       description="Compile the simulator's kernel into a shared library in "
                                   "the user cache (needs numba and a C compiler); it is "
                                   "checked against numba's kernel before use and keyed on "
                                   "the kernel's sources, numba's version and the CPU, so an "
                                   "edited kernel is never run stale. DIFFMEM_KERNEL=jit "
                                   "ignores it.")
    p.add_argument("--force", action="store_true", help="rebuild even if it exists")
    p.set_defaults(func=cmd_build_kernel)

    p = sub.add_parser("selfcheck", description="Check this installation: resources, numba "
                                                "kernels, torch autograd, optimiser imports.")
    p.set_defaults(func=cmd_selfcheck)     # no help=: not listed in --help
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=(logging.DEBUG if args.verbose else
                               logging.WARNING if args.quiet else logging.INFO),
                        format="%(levelname)s %(name)s: %(message)s")
    if args.command is None:
        return open_gui()
    from engine.errors import DiffMemError

    try:
        return int(args.func(args))
    except DiffMemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader of our output went away (`... | head`): not an error of the command;
        # stdout pointed at /dev/null so that the interpreter's own flush at exit is quiet
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141                  # 128 + SIGPIPE, as a shell reports a piped command
    except OSError as exc:          # unreadable input, unwritable output: the user's to fix
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if not _raised_by_interrupt(exc):
            raise
        print("interrupted", file=sys.stderr)   # a library's cleanup failed on the Ctrl-C
        return 130


def _raised_by_interrupt(exc: BaseException) -> bool:
    """Whether *exc* was raised while a KeyboardInterrupt unwound (its cause or context
    chain holds one): e.g. matplotlib's PdfPages closing a half-written file."""
    seen: set[int] = set()
    e = exc.__cause__ or exc.__context__
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


if __name__ == "__main__":
    import multiprocessing

    multiprocessing.freeze_support()   # the packaged app's spawned workers (studies) start here
    status = main()
    if len(sys.argv) > 1:
        # a headless command has done and saved its work: keep the interpreter's final
        # garbage collection off the ~10^5 objects numba made (about 0.2 CPU-s at exit,
        # benchmarks/bench_engine_startup.py)
        import gc
        gc.freeze()
    sys.exit(status)
