"""Attention kernel of the traces: "math" (bmm-softmax-bmm) against "flash" (the fused
memory-efficient SDPA kernel), issue 12f.

    # tensor bytes of one step from the capture alone (no trace generation; seconds)
    python benchmarks/bench_attention_kernels.py capture --workload ddpm --batch 8
    # full traces, DRAM bytes and row-buffer hit rate by phase, per placement seed
    python benchmarks/bench_attention_kernels.py trace --workload ddpm --batch 16 \
        --resolution 32 --small --memory DDR4-3200-8ch --seeds 0 1 2
    python benchmarks/bench_attention_kernels.py ops --batch 16 --resolution 32 --small \
        --seeds 0 1 2 --orders gpu
    # the operators' own request order, every issued line reaching DRAM (no L2)
    python benchmarks/bench_attention_kernels.py ops --batch 16 --resolution 32 --small \
        --seeds 0 1 2 --orders gpu sequential --cache-mib 0 --max-requests 2000000

``capture`` prints, per kernel, every phase's tensor bytes (each operator's distinct bytes
read and written, what the trace issues before its L2 filter, at 64 B granularity less),
the fused calls' closed form (:func:`engine.workloads.flash.flash_bytes`) against the
captured fused and delta-prelude operators, the math path's score-matrix bytes (accesses
the capture tags as score matrices) and the layout copies the fused path adds.  ``trace``
generates the whole trace for each kernel and placement seed, then simulates it on the
engine with every request due at cycle 0 (as ``bench_trace_locality.py``): whole trace and
each phase's requests as their own trace.  ``ops`` simulates the attention operators' requests
on their own (the fused forward, the fused backward, its delta prelude; the math path's
bmm/softmax/score operands) and the rest of the backward, per request order and seed.  Budgets
are CPU-seconds of this process.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
from pathlib import Path

import numpy as np


REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
FWD = "aten._scaled_dot_product_efficient_attention.default"
BWD = "aten._scaled_dot_product_efficient_attention_backward.default"


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _capture(args: argparse.Namespace, kind: str):
    import torch

    from bench_trace_locality import SMALL_DDPM
    from engine.workloads.capture import capture_step
    from engine.workloads.models.common import attention_kernel
    from engine.workloads.registry import build

    _, _, model, inputs = build(args.workload, batch=args.batch, resolution=args.resolution,
                                size=args.size, overrides=SMALL_DDPM if args.small else {})
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                            lr=1e-4, weight_decay=0.01, foreach=True)
    with attention_kernel(kind):
        return capture_step(model, lambda m: m(*inputs), opt, torch.device("meta"))


def cmd_capture(args: argparse.Namespace) -> None:
    from engine.workloads.capture import PHASES
    from engine.workloads.flash import flash_bytes, math_score_bytes, working_set_bytes

    rows = {}
    for kind in ("math", "flash"):
        c0 = _cpu()
        cap = _capture(args, kind)
        by_phase = {p: 0 for p in PHASES}
        for op in cap.ops:
            by_phase[PHASES[op.phase]] += op.bytes_read + op.bytes_written
        row = {"kernel": kind, "capture_cpu_s": round(_cpu() - c0, 1),
               "tensor_bytes_by_phase": by_phase, "tensor_bytes_step": sum(by_phase.values())}
        if kind == "math":
            score = {}
            for op in cap.ops:
                for a in op.accesses:
                    if a.score:
                        score[PHASES[op.phase]] = score.get(PHASES[op.phase], 0) + a.nbytes
            row["score_matrix_access_bytes_by_phase"] = score
            row["score_matrix_access_bytes"] = sum(score.values())
        else:
            fused, closed, prelude_cap, calls, ws, scores = 0, 0, 0, [], [], 0
            clones = sum(op.bytes_read + op.bytes_written for op in cap.ops
                         if op.phase == PHASES.index("attention") and "clone" in op.name)
            for i, op in enumerate(cap.ops):
                if op.name not in (FWD, BWD):
                    continue
                qa = op.accesses[0] if op.name == FWD else op.accesses[1]
                b, h, lq, d = qa.shape
                ka, va = (op.accesses[1], op.accesses[2]) if op.name == FWD else (
                    op.accesses[2], op.accesses[3])
                lk, dv = ka.shape[2], va.shape[3]
                item = {"float32": 4}.get(qa.dtype, 2)
                fb = flash_bytes(b * h, lq, lk, d, dv, item, heads=h)
                fused += op.bytes_read + op.bytes_written
                if op.name == FWD:      # calls without a backward (frozen modules) count once
                    closed += fb.forward_read + fb.forward_write
                    calls.append([b * h, lq, lk, d, dv, item])
                    ws.append(working_set_bytes(b * h, lq, lk, d, dv, item))
                    scores += math_score_bytes(b * h, lq, lk, item)
                else:                   # the delta prelude: mul, sum (+ copy with heads > 1)
                    closed += (fb.backward_read + fb.backward_write + fb.delta_read
                               + fb.delta_write)
                    n_pre = (2 + (h > 1)) if item > 2 else 0
                    prelude_cap += sum(p.bytes_read + p.bytes_written
                                       for p in cap.ops[i - n_pre:i])
            row.update({"calls": len(calls), "call_shapes_bh_lq_lk_d_dv_item": sorted(
                            {tuple(c) for c in calls}),
                        "closed_form_bytes": closed,
                        "captured_fused_plus_prelude_bytes": fused + prelude_cap,
                        "layout_copy_bytes_attention_phase": clones,
                        "one_score_matrix_per_call_bytes": scores,
                        "working_set_bytes_fwd_bwd_max": [max(w[0] for w in ws),
                                                          max(w[1] for w in ws)] if ws else None})
        rows[kind] = row
        print(json.dumps(row), flush=True)
    m, f = rows["math"]["tensor_bytes_by_phase"], rows["flash"]["tensor_bytes_by_phase"]
    print(json.dumps({"flash_minus_math_by_phase": {p: f[p] - m[p] for p in m},
                      "flash_minus_math_step": rows["flash"]["tensor_bytes_step"]
                      - rows["math"]["tensor_bytes_step"]}), flush=True)


def cmd_trace(args: argparse.Namespace) -> None:
    import h5py

    from bench_trace_locality import SMALL_DDPM, _simulate
    from engine.config import load_config
    from engine.workloads.generate import TraceSpec, generate_trace

    cfg = load_config(args.memory)
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            for kind in ("math", "flash"):
                c0 = _cpu()
                spec = TraceSpec(args.workload, batch=args.batch, resolution=args.resolution,
                                 size=args.size, memory=args.memory, attention=kind,
                                 placement_seed=seed,
                                 overrides=SMALL_DDPM if args.small else {})
                out = Path(tmp) / f"{kind}{seed}.h5"
                s = generate_trace(spec, out)
                c_gen = _cpu() - c0
                with h5py.File(out, "r") as fh:
                    g = fh["trace"]
                    addr, isw = g["addr"][...], g["is_write"][...].astype(bool)
                    phase = g["phase"][...]
                    phases = json.loads(g.attrs["phase_names"])
                c0 = _cpu()
                row = {"kernel": kind, "placement_seed": seed, "memory": args.memory,
                       "workload": args.workload, "batch": args.batch,
                       "resolution": args.resolution, "small": args.small,
                       "generate_cpu_s": round(c_gen, 1),
                       "issued_bytes_by_phase": {p: v["read"] + v["write"] for p, v in
                                                 s["issued_bytes_all_ops"].items()},
                       "dram_bytes_by_phase": {p: v["read"] + v["write"] for p, v in
                                               s["dram_bytes"]["by_phase"].items()},
                       "dram_bytes_step": s["dram_bytes"]["read"] + s["dram_bytes"]["write"],
                       "l2_hit_rate": s["l2_hit_rate"],
                       "all": _simulate(cfg, addr, isw, args.max_requests), "by_phase": {}}
                for i, p in enumerate(phases):
                    m = phase == i
                    if m.any():
                        row["by_phase"][p] = _simulate(cfg, addr[m], isw[m], args.max_requests)
                row["simulate_cpu_s"] = round(_cpu() - c0, 1)
                print(json.dumps(row), flush=True)
                out.unlink()


def _open_page(cfg, addr: np.ndarray) -> float:
    """In-order open-page row-hit rate of ``addr`` under ``cfg``'s mapping: every bank keeps
    its last row open, requests served in trace order (the generator's ``_Stats``)."""
    from engine.workloads.generate import _Stats

    st = _Stats(int(cfg.columns_eff * cfg.bus_width // 8), cfg)
    z = np.zeros(addr.shape[0], np.int64)
    st.add_open_page(addr, z, z)
    return float(st.open_hits.sum() / max(1, st.open_reqs.sum()))


def cmd_ops(args: argparse.Namespace) -> None:
    """Row-buffer hit rate of the attention operators on their own, against the rest of
    their phase, under each request order and placement seed.  Groups: ``backward_attention_ops``
    (math: ``bmm``, ``_softmax_backward_data`` and score-matrix operands of the backward;
    flash: the fused backward and its delta prelude) and ``backward_rest``; for flash also
    ``fused_forward``, ``fused_backward`` and ``delta_prelude`` alone; for math
    ``forward_attention_ops`` (the attention phase's ``bmm``, softmax and score operands)."""
    import h5py

    from bench_trace_locality import SMALL_DDPM, _simulate
    from engine.config import load_config
    from engine.workloads.capture import PHASE_ID
    from engine.workloads.generate import TraceSpec, generate_trace

    cfg = load_config(args.memory)
    cache = int(args.cache_mib * 2 ** 20)
    if args.fused_order == "elementwise":      # the order before issue 12g, for comparison
        import engine.workloads.gpu_order as gpu_order
        gpu_order.attention_order = lambda *a, **k: None
    with tempfile.TemporaryDirectory() as tmp:
        for order in args.orders:
            for seed in args.seeds:
                for kind in args.kernels:
                    c0 = _cpu()
                    cap = _capture(args, kind)
                    groups: dict[str, set[int]] = {"backward_attention_ops": set()}
                    if kind == "flash":
                        groups.update(fused_forward=set(), fused_backward=set(),
                                      delta_prelude=set())
                    else:
                        groups["forward_attention_ops"] = set()
                    for i, op in enumerate(cap.ops):
                        short = op.name.split(".")[1]
                        core = (short in ("bmm", "_softmax", "_softmax_backward_data")
                                or any(a.score for a in op.accesses))
                        if op.name == FWD:
                            groups["fused_forward"].add(i)
                        if kind == "math" and op.phase == PHASE_ID["attention"] and core:
                            groups["forward_attention_ops"].add(i)
                        if op.phase != PHASE_ID["backward"]:
                            continue
                        if core or op.name == BWD:
                            groups["backward_attention_ops"].add(i)
                        if op.name == BWD:
                            h = op.accesses[1].shape[1]
                            pre = set(range(i - (3 if h > 1 else 2), i))   # mul, sum (+ copy)
                            groups["backward_attention_ops"] |= pre
                            groups["fused_backward"].add(i)
                            groups["delta_prelude"] |= pre
                    out = Path(tmp) / f"{order}{kind}{seed}.h5"
                    generate_trace(TraceSpec(args.workload, batch=args.batch,
                                             resolution=args.resolution, size=args.size,
                                             memory=args.memory, attention=kind, order=order,
                                             placement_seed=seed, cache_bytes=cache,
                                             address_hash=args.address_hash,
                                             overrides=SMALL_DDPM if args.small else {}), out)
                    with h5py.File(out, "r") as fh:
                        names = [n.decode() for n in fh["ops/name"][...]]
                        g = fh["trace"]
                        addr, isw = g["addr"][...], g["is_write"][...].astype(bool)
                        phase, op_id = g["phase"][...], g["op"][...]
                    if names != [o.name for o in cap.ops]:
                        raise SystemExit("capture and trace operator lists differ")
                    bw = phase == PHASE_ID["backward"]
                    a = bw & np.isin(op_id, sorted(groups["backward_attention_ops"]))
                    row = {"order": order, "kernel": kind, "placement_seed": seed,
                           "memory": args.memory, "cache_mib": args.cache_mib,
                           "fused_order": args.fused_order, "address_hash": args.address_hash,
                           "backward": _simulate(cfg, addr[bw], isw[bw], args.max_requests),
                           "backward_rest": _simulate(cfg, addr[bw & ~a], isw[bw & ~a],
                                                      args.max_requests)}
                    for name, ids in groups.items():
                        m = np.isin(op_id, sorted(ids))
                        row[name] = _simulate(cfg, addr[m], isw[m], args.max_requests)
                        row[name]["open_page_in_order_hit_rate"] = _open_page(cfg, addr[m])
                    row["cpu_s"] = round(_cpu() - c0, 1)
                    print(json.dumps(row), flush=True)
                    out.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=("capture", "trace", "ops"))
    ap.add_argument("--workload", default="ddpm")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--resolution", type=int)
    ap.add_argument("--size", default="paper")
    ap.add_argument("--small", action="store_true", help="the small DDPM of bench_workloads")
    ap.add_argument("--memory", default="DDR4-3200-8ch")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2],
                    help="placement seeds (trace and ops modes)")
    ap.add_argument("--cache-mib", type=float, default=40.0,
                    help="L2 in front of DRAM (ops mode; 0: none, every issued line reaches DRAM)")
    ap.add_argument("--fused-order", default="kernel", choices=("kernel", "elementwise"),
                    help="ops mode, order='gpu': the fused kernels' own grid order, or the "
                         "elementwise block-slice order they took before issue 12g")
    ap.add_argument("--address-hash", default="gpu", choices=("gpu", "none"),
                    help="ops mode: the trace's address hash (TraceSpec.address_hash)")
    ap.add_argument("--kernels", nargs="+", default=["math", "flash"],
                    choices=("math", "flash"), help="attention kernels (ops mode)")
    ap.add_argument("--orders", nargs="+", default=["gpu", "sequential"],
                    choices=("gpu", "sequential"), help="request orders (ops mode)")
    ap.add_argument("--max-requests", type=int, default=0,
                    help="simulate at most this many requests per (sub-)trace (0: all)")
    args = ap.parse_args()
    {"capture": cmd_capture, "trace": cmd_trace, "ops": cmd_ops}[args.mode](args)


if __name__ == "__main__":
    main()
