"""DRAM bytes of one real training step on a CUDA GPU (profiler counters) vs the trace.

    python benchmarks/gpu_dram_bytes.py [--workloads ddpm resnet50] [--batch 8] [--size tiny]

Needs a CUDA GPU, PyTorch with CUDA, and Nsight Compute (``ncu``) on the PATH.  For each
workload: a child process builds the model on the GPU, runs one untimed step (so AdamW's
moments exist), then one step between ``cudaProfilerStart``/``Stop``; ``ncu`` collects
``dram__bytes_read.sum`` and ``dram__bytes_write.sum`` of every kernel in that step (the
GPU's own DRAM counters, after its L2).  The trace of the same step is then generated with
the GPU's L2 size as the cache (``--cache-mib``) and its DRAM bytes compared, per direction.
Prints one JSON line per workload.

Not run in this repository's CI (no GPU); written so the comparison can be rerun where one
is.  The model runs with ``foreach=False`` AdamW and the models' math-path attention, as the
trace captures them.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _child(workload: str, batch: int, size: str) -> None:
    import torch

    from engine.workloads.registry import build

    dev = torch.device("cuda")
    _, _, model, inputs = build(workload, batch=batch, size=size)
    model = model.to(dev)
    inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in inputs]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4,
                            weight_decay=0.01, foreach=False)

    def step() -> None:
        model(*inputs).backward()
        opt.step()

    step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    step()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print(json.dumps({"l2_bytes": torch.cuda.get_device_properties(dev).L2_cache_size,
                      "gpu": torch.cuda.get_device_name(dev)}))


def _measure(workload: str, batch: int, size: str) -> dict:
    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu (Nsight Compute) not found on the PATH")
    cmd = [ncu, "--profile-from-start", "off", "--metrics",
           "dram__bytes_read.sum,dram__bytes_write.sum", "--csv", "--page", "raw",
           sys.executable, __file__, "--child", workload, "--batch", str(batch),
           "--size", size]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    info = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    rows = [r for r in csv.DictReader(io.StringIO(
        "\n".join(line for line in out.splitlines() if line.startswith('"'))))]
    scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}
    units = rows[0] if rows else {}
    read = write = 0.0
    for r in rows[1:]:
        for key, acc in (("dram__bytes_read.sum", "r"), ("dram__bytes_write.sum", "w")):
            v = float(str(r[key]).replace(",", "")) * scale.get(units.get(key, "byte"), 1)
            if acc == "r":
                read += v
            else:
                write += v
    return {"gpu": info["gpu"], "l2_bytes": info["l2_bytes"], "kernels": len(rows) - 1,
            "read": read, "write": write}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", metavar="WORKLOAD")
    ap.add_argument("--workloads", nargs="+", default=["ddpm", "resnet50"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", default="tiny")
    ap.add_argument("--memory", default="DDR4-3200-8ch")
    args = ap.parse_args()
    if args.child:
        _child(args.child, args.batch, args.size)
        return
    from engine.workloads.generate import TraceSpec, generate_trace
    for wl in args.workloads:
        gpu = _measure(wl, args.batch, args.size)
        with tempfile.TemporaryDirectory() as tmp:
            s = generate_trace(TraceSpec(wl, batch=args.batch, size=args.size,
                                         cache_bytes=int(gpu["l2_bytes"]),
                                         memory=args.memory), Path(tmp) / "t.h5")
        d = s["dram_bytes"]
        print(json.dumps({"workload": wl, "batch": args.batch, "size": args.size, **gpu,
                          "trace_read": d["read"], "trace_write": d["write"],
                          "trace_over_gpu_read": d["read"] / gpu["read"] if gpu["read"] else None,
                          "trace_over_gpu_write": (d["write"] / gpu["write"]
                                                   if gpu["write"] else None)}), flush=True)


if __name__ == "__main__":
    main()
