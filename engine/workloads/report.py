"""Human-readable text for a workload trace summary (the dict generate_trace returns)."""
from __future__ import annotations

from typing import Any


def _gb(x: float) -> str:
    return f"{x / 1e9:.4g} GB"


def _cache_words(s: dict[str, Any]) -> str:
    """How the on-chip cache in front of DRAM was modelled, in the summary's words."""
    mib = s["cache_bytes"] / 2**20
    if not s["cache_bytes"]:
        return "(no on-chip cache)"
    start = s.get("l2_start", "cold")
    if start == "cold":
        return (f"(after a {mib:.4g} MiB on-chip cache, empty at the step's start; its "
                f"{s.get('flush_requests', 0)} dirty lines written back at the step's end)")
    words = (f"(after a {mib:.4g} MiB on-chip cache in the steady state: as the previous "
             "step left it; what this step leaves dirty is the next step's to write back)")
    if not s["requests"] and not (s.get("extrapolated") or {}).get("requests"):
        words += (f"\n                 no DRAM traffic: the step's footprint "
                  f"({_gb(s['footprint_bytes'])}) stays in the cache from step to step; "
                  "--l2-start cold or a smaller --cache-mib give a first step's traffic")
    return words


def format_summary(s: dict[str, Any]) -> str:
    """A few lines: model, requests, bytes by phase and role, footprint, locality."""
    d = s["dram_bytes"]
    lines = [
        f"{s['workload']}: batch {s['batch']}, {s['parameters'] / 1e6:.2f}M trainable "
        f"parameters, {s['operators']} operators ({s['operators_expanded']} expanded), "
        f"step {s['step_time_ns'] / 1e6:.3g} ms on {s['accelerator']['name']}",
        f"  DRAM requests  {s['requests']} ({s['reads']} reads, {s['writes']} writes), "
        + (f"cycles {s['first_cycle']}..{s['last_cycle']} at tCK {s['tck_ns']} ns "
           if s["requests"] else "")
        + f"({s['memory']})",
        f"  DRAM bytes     read {_gb(d['read'])}, written {_gb(d['write'])} "
        + _cache_words(s),
    ]
    for key, title in (("by_phase", "by phase"), ("by_role", "by role")):
        parts = [f"{k} {_gb(v['read'])}/{_gb(v['write'])}" for k, v in d[key].items()
                 if v["read"] or v["write"]]
        if parts:
            lines.append(f"  {title:<14} (read/written) " + ", ".join(parts))
    lines.append(f"  footprint      {_gb(s['footprint_bytes'])} (persistent "
                 f"{_gb(s['persistent_bytes'])})"
                 + (" -- addresses folded into the memory's capacity"
                    if s["addresses_folded"] else ""))
    if s.get("l2_hit_rate_all") is not None and s.get("cache_bytes"):
        parts = [f"{k} {100 * v:.1f} %" for k, v in s["l2_hit_rate"].items() if v is not None]
        lines.append(f"  L2 hit rate    {100 * s['l2_hit_rate_all']:.1f} % "
                     f"({s.get('cache_line_bytes', 64)} B lines; by phase: "
                     + ", ".join(parts) + ")")
    if "placement" in s:
        pl = s["placement"]
        lines.append(f"  placement      {pl['pages']} {pl['page_bytes'] // 2**20} MiB pages "
                     f"(seed {pl['placement_seed']}), address hash {pl['address_hash']}, "
                     f"request order {s.get('order', 'sequential')}"
                     + (", addresses FOLDED (--fold-addresses)" if pl["fold_addresses"]
                        and s["addresses_folded"] else ""))
    op = s.get("open_page_hit_rate") or {}
    if op.get("all") is not None:
        parts = [f"{k} {100 * v:.1f} %" for k, v in op["by_phase"].items() if v is not None]
        cls = [f"{k} {100 * v:.1f} %" for k, v in op["by_class"].items() if v is not None]
        lines.append(f"  row hits       {100 * op['all']:.1f} % in trace order, open page "
                     f"(by phase: {', '.join(parts)}; by class: {', '.join(cls)})")
    lines.append(f"  access pattern mean sequential run {s['mean_sequential_run']:.2f} lines, "
                 f"{100 * s['row_locality']:.1f} % of requests in the previous one's "
                 f"{s['row_bytes']} B address block (before the memory's mapping; the "
                 "row hits above are the DRAM rows')")
    if "extrapolated" in s:
        e = s["extrapolated"]
        lines.append(f"  extrapolated   full step (sample {s['sample']}): "
                     f"{e['requests']:.4g} requests, read {_gb(e['dram_bytes']['read'])}, "
                     f"written {_gb(e['dram_bytes']['write'])}")
    return "\n".join(lines)
