"""The ``recommendations`` study: the seven memory recommendations of the product's origin
document (``../shared/seeds/000_*.txt``, sections 5.1 and 5.2), each run as a what-if on the
user's traces, with a 95 % interval and a verdict in plain words.

What each recommendation becomes (the document's words beside it):

1. 将write queue优先级降低15% -- ``write_priority_pct = 15`` (a drain moves 15 % fewer of the
   waiting writes).
2. 启用动态bank分组（Dynamic Bank Grouping） -- ``dynamic_bank_grouping`` (the scheduler
   prefers a column command to another bank group, tCCD_S instead of tCCD_L, within
   ``bank_group_window``; write drains alternate bank groups). A controller policy: the device
   is unchanged.
3. 改进的预充电策略: ``if (row_conflict_count > THRESHOLD) early_precharge()`` --
   ``page_policy = early_precharge`` with ``early_precharge_conflicts`` (the document gives
   no THRESHOLD; default 4).
4. 对自动驾驶轨迹预测模型: 采用3D堆叠DRAM降低25%访问延迟 -- the platform's memory replaced by
   the HBM2 preset (only on a platform that is not already 3D-stacked); the read-latency
   change is reported beside the claimed -25 %.
5. 为attention模块配置专用SRAM缓存 -- :mod:`engine.workloads.attention_sram` on the trace
   (requests tagged ``attention`` served on chip; size and policy: ``sram_kib``,
   ``sram_policy``); the SRAM's access energy is added to the memory energy.
6. 图像生成类模型: 增大row buffer至2KB -- the page made 2 KB at equal capacity (columns x k,
   rows / k), as the architecture study does.
7. 使用bank-interleaving数据布局 -- ``xor_bank_interleave`` (bank and bank-group bits XOR-ed
   with low row bits).

The intervals: the engine is deterministic, so the uncertainty is that of the trace -- which
part of the training step it holds. Every trace is cut into ``segments`` contiguous blocks
(default 5; with ``segment_requests`` each block is that many requests, evenly spaced through
the trace), each simulated on its own under every variant. The change of a metric is the
ratio of its sums over the blocks (variant / baseline - 1), and its 95 % interval comes from
the paired per-block differences (ratio estimator, Student t with blocks - 1 degrees of
freedom). A verdict is "helps" when the whole interval is below zero, "hurts" when it is above,
and "no measurable effect" when it spans zero or lies within +-``min_effect_pct`` (0.5 %).
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from engine.errors import DiffMemError
from engine.studies import fits
from engine.studies.catalog import (Analysis, Finding, FigureSpec, Row, Study, Table, join,
                                    labels_of)
from engine.studies.placed import derived_dir
from engine.studies.spec import Point, StudyError, StudySetup, TraceInput, with_overrides

log = logging.getLogger(__name__)

#: (key, the document's words, what the claim says, workloads it targets)
RECOMMENDATIONS: tuple[tuple[str, str, str, str], ...] = (
    ("write priority -15 %", "将write queue优先级降低15%",
     "lower the write queue's priority by 15 % (for diffusion models)", "diffusion"),
    ("dynamic bank grouping", "启用动态bank分组（Dynamic Bank Grouping）",
     "enable dynamic bank grouping (for diffusion models)", "diffusion"),
    ("early precharge", "if (row_conflict_count > THRESHOLD) early_precharge()",
     "precharge early after repeated row conflicts", "diffusion"),
    ("3D-stacked DRAM", "采用3D堆叠DRAM降低25%访问延迟",
     "3D-stacked DRAM: -25 % access latency (trajectory-prediction models)", "dit"),
    ("attention SRAM", "为attention模块配置专用SRAM缓存",
     "a dedicated SRAM for the attention module (trajectory-prediction models)", "dit"),
    ("2 KB row buffer", "增大row buffer至2KB",
     "a 2 KB row buffer (image-generation models)", "image"),
    ("bank-interleaved layout", "使用bank-interleaving数据布局",
     "a bank-interleaved data layout (image-generation models)", "image"),
)
BASELINE = "baseline"
DEFAULT_PLATFORMS = ("DDR4-3200@8ch", "HBM2")
#: parameters given as text on the command line (the others are memory-config fields)
TEXT_PARAMS = ("configs", "segments", "segment_requests", "sram_kib", "sram_policy",
               "min_effect_pct", "commands")
# ---- verdicts ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Change:
    """Relative change (%) of a metric, summed over paired blocks, with its 95 % interval."""

    pct: float
    lo: float
    hi: float
    n: int


def paired_change(variant: Sequence[float], base: Sequence[float]) -> Change:
    """100 * (sum v / sum b - 1) with a 95 % interval from the paired block differences
    (ratio estimator: residuals d_i - R * b_i, Student t with n - 1 degrees of freedom)."""
    v = np.asarray(variant, np.float64)
    b = np.asarray(base, np.float64)
    if v.shape != b.shape or v.size == 0:
        raise StudyError(f"paired_change: need equal, non-empty samples, got {v.size} and "
                         f"{b.size}")
    sb = float(b.sum())
    if sb == 0:
        return Change(float("nan"), float("nan"), float("nan"), int(v.size))
    r = float(v.sum()) / sb - 1.0
    n = int(v.size)
    if n < 2:
        return Change(100 * r, float("nan"), float("nan"), n)
    resid = (v - b) - r * b
    se = math.sqrt(n / (n - 1) * float(np.sum(resid ** 2))) / sb
    h = fits.t975(n - 1) * se
    return Change(100 * r, 100 * (r - h), 100 * (r + h), n)


def verdict(c: Change, min_effect_pct: float = 0.5) -> str:
    """'helps' (interval below zero: less time or energy), 'hurts' (above), else 'no
    measurable effect' (the interval spans zero, or lies within +-min_effect_pct)."""
    if not (math.isfinite(c.lo) and math.isfinite(c.hi)):
        return "no interval (one block)"
    if c.lo <= 0.0 <= c.hi or (abs(c.lo) < min_effect_pct and abs(c.hi) < min_effect_pct):
        return "no measurable effect"
    return "helps" if c.hi < 0.0 else "hurts"


# ---- derived traces (segments, SRAM) ---------------------------------------------------------
def _segments_of(n: int, k: int, length: int) -> list[tuple[int, int]]:
    """k contiguous [lo, hi) blocks: the whole trace cut in k, or k blocks of `length`
    requests evenly spaced through it."""
    if k < 1:
        raise StudyError(f"recommendations study: segments = {k}: expected >= 1")
    if n < k:
        raise StudyError(f"recommendations study: the trace has {n} requests, fewer than "
                         f"segments = {k}")
    if length <= 0 or length * k >= n:
        edges = [n * i // k for i in range(k + 1)]
        return list(zip(edges[:-1], edges[1:]))
    stride = n / k
    return [(int(i * stride), int(i * stride) + length) for i in range(k)]


def write_segment(src: Path, dst: Path, lo: int, hi: int, group: str = "trace") -> None:
    """Requests [lo, hi) of a trace into an HDF5 trace, keeping its per-request tags."""
    import h5py
    from engine.trace import TraceChunk, iter_trace, suffix_format, write_hdf5
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    dst.parent.mkdir(parents=True, exist_ok=True)
    tagged = False
    if suffix_format(src) == "hdf5":
        with h5py.File(src, "r") as f:
            g = f.get(group)
            tagged = g is not None and "phase" in g
            if tagged:
                with h5py.File(tmp, "w") as o:
                    og = o.create_group("trace")
                    for name in ("addr", "cycle", "is_write", "stream", "phase", "op", "role"):
                        if name in g:
                            og.create_dataset(name, data=g[name][lo:hi], compression="lzf")
                    for k, v in g.attrs.items():
                        if k not in ("count", "summary"):
                            og.attrs[k] = v
                    og.attrs["count"] = hi - lo
    if not tagged:
        parts, pos = [], 0
        for c in iter_trace(src, group=group):
            a, b = max(lo - pos, 0), min(hi - pos, len(c))
            if a < b:
                parts.append(c[a:b])
            pos += len(c)
            if pos >= hi:
                break
        write_hdf5(tmp, TraceChunk.concat(parts) if parts else TraceChunk.empty(),
                   compression="lzf")
    os.replace(tmp, dst)


def _key(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def run_key(params: Mapping[str, Any], overrides: Mapping[str, Any]) -> str:
    """Identifies the study parameters a point was made with (tagged on every point)."""
    return _key({k: list(v) if isinstance(v, (list, tuple)) else v for k, v in params.items()},
                dict(overrides))


# ---- platforms ----------------------------------------------------------------------------------
def platform_config(name: str, overrides: Mapping[str, Any]) -> Any:
    """A preset or config file, or ``PRESET@Nch`` (the preset with N channels, built in code:
    the document's platform is 8-channel DDR4-3200)."""
    from engine.config import load_config
    base, sep, rest = name.partition("@")
    try:
        if sep:
            if not rest.endswith("ch") or not rest[:-2].isdigit() or int(rest[:-2]) < 1:
                raise StudyError(f"platform {name!r}: expected PRESET@Nch, e.g. "
                                 "DDR4-3200@8ch")
            cfg = load_config(base)
            cfg = cfg.replace(channels=int(rest[:-2]), name=f"{cfg.name}@{rest}")
        else:
            cfg = load_config(name)
    except StudyError:
        raise
    except DiffMemError as exc:
        raise StudyError(f"platform {name!r}: {exc}") from exc
    return with_overrides(cfg, overrides)


#: why a recommendation has no result on a platform (RecommendationsStudy.variants leaves
#: it out there, or it needs what the traces lack)
NOT_RUN = {
    "3D-stacked DRAM": "not applicable (the platform is 3D-stacked already).",
    "2 KB row buffer": "not applicable (the platform's page is 2 KB or more already, or 2 KB "
                       "is not a whole number of its pages).",
    "attention SRAM": "not run: no trace has requests tagged as attention, which the SRAM "
                      "model holds (traces from `python main.py trace` carry the tags).",
    "bank-interleaved layout": "not applicable (XOR bank interleave is on already).",
}


def _page_2kb(cfg: Any) -> dict[str, Any] | None:
    page = cfg.page_size_bytes
    if page >= 2048:
        return None
    k = 2048 // page
    if 2048 % page or cfg.rows % k:
        return None
    return {"columns": cfg.columns * k, "rows": cfg.rows // k}


def _family(t: Mapping[str, Any]) -> str:
    name = f"{t.get('label', '')} {t.get('workload', '')}".lower()
    if "dit" in name or "traj" in name:
        return "dit"
    if t.get("kind") == "cnn":
        return "cnn"
    return "image"


# ---- the study --------------------------------------------------------------------------------
class Recommendations(Study):
    name = "recommendations"
    intake = "per-channel"      # every channel takes a request a cycle, as a GPU's crossbar
    title = "The origin document's seven memory recommendations"
    description = ("the document's seven recommendations (write priority -15 %, dynamic bank "
                   "grouping, early precharge, 3D-stacked DRAM, attention SRAM, 2 KB row "
                   "buffer, bank interleaving) on each trace and platform: change of DRAM "
                   "time, energy and energy per sample with 95 % intervals, a verdict each")
    params_help = ("configs=PLATFORM,... (default DDR4-3200@8ch,HBM2; PRESET@Nch = preset "
                   "with N channels), segments=K (blocks per trace, default 5), "
                   "segment_requests=N (block length; default the trace / K), sram_kib=S "
                   "(default 2048), sram_policy=lru|pinned, min_effect_pct=X (default 0.5), "
                   "write_priority_pct=P (default 15), early_precharge_conflicts=N "
                   "(default 4), bank_group_window=W (default 8), commands=1|0 (count "
                   "bank-group pairs and read/write turnarounds from command traces; "
                   "default 1)")
    ALLOWED = ("configs", "segments", "segment_requests", "sram_kib", "sram_policy",
               "min_effect_pct", "write_priority_pct", "early_precharge_conflicts",
               "bank_group_window", "commands")

    @staticmethod
    def _one(setup: StudySetup, key: str, default: Any, kind: type) -> Any:
        v = setup.params.get(key)
        if v is None:
            return default
        if isinstance(v, (list, tuple)):
            if len(v) != 1:
                raise StudyError(f"recommendations study: {key} takes one value, got {v}")
            v = v[0]
        try:
            return kind(v)
        except (TypeError, ValueError):
            raise StudyError(f"recommendations study: {key} = {v!r}: expected "
                             f"{kind.__name__}") from None

    def variants(self, cfg: Any, setup: StudySetup) -> list[tuple[str, dict[str, Any] | str]]:
        """(recommendation, config overrides | 'HBM2' | 'sram') for one platform; those that
        do not apply to it (3D-stacked DRAM on HBM, 2 KB on a >= 2 KB page) are left out."""
        wp = self._one(setup, "write_priority_pct", 15.0, float)
        ep = self._one(setup, "early_precharge_conflicts", 4, int)
        bw = self._one(setup, "bank_group_window", 8, int)
        out: list[tuple[str, Any]] = [
            ("write priority -15 %", {"write_priority_pct": wp}),
            ("dynamic bank grouping", {"dynamic_bank_grouping": True, "bank_group_window": bw}),
            ("early precharge", {"page_policy": "early_precharge",
                                 "early_precharge_conflicts": ep}),
        ]
        if not cfg.is_hbm:
            out.append(("3D-stacked DRAM", "HBM2"))
        out.append(("attention SRAM", "sram"))
        page = _page_2kb(cfg)
        if page is not None:
            out.append(("2 KB row buffer", page))
        if not cfg.xor_bank_interleave:
            out.append(("bank-interleaved layout", {"xor_bank_interleave": True}))
        return out

    def points(self, setup: StudySetup) -> list[Point]:
        from engine.workloads.attention_sram import (MODEL_VERSION, SramSpec,
                                                     apply_attention_sram)
        self._check_params(setup, list(self.ALLOWED))
        platforms = list(setup.params.get("configs") or DEFAULT_PLATFORMS)
        k = self._one(setup, "segments", 5, int)
        seg_len = self._one(setup, "segment_requests", 0, int)
        sram = SramSpec(size_bytes=self._one(setup, "sram_kib", 2048, int) * 1024,
                        policy=self._one(setup, "sram_policy", "lru", str))
        self._one(setup, "min_effect_pct", 0.5, float)      # checked here, used in analyse
        commands = self._one(setup, "commands", 1, int)
        if commands not in (0, 1):
            raise StudyError(f"recommendations study: commands = {commands}: expected 1 "
                             "(count from command traces) or 0")
        if not setup.traces:
            raise StudyError("a study needs at least one trace (--trace LABEL=PATH)")
        traces = [t.resolved() for t in setup.traces]
        work = derived_dir()
        pts: list[Point] = []
        for t in traces:
            n = _count(Path(t.path), t.group)
            for s, (lo, hi) in enumerate(_segments_of(n, k, seg_len)):
                seg = work / f"{t.digest[:16]}.{lo}-{hi}.h5"
                if not seg.exists():
                    write_segment(Path(t.path), seg, lo, hi, t.group)
                seg_in = self._segment_input(t, seg, s, lo, hi, n)
                sram_file = work / f"{t.digest[:16]}.{lo}-{hi}.sram-{_key(sram.__dict__, MODEL_VERSION)}.h5"
                sram_meta = work / f"{sram_file.name}.json"
                sram_in = None
                if _has_tags(Path(t.path), t.group):
                    if not (sram_file.exists() and sram_meta.exists()):
                        res = apply_attention_sram(seg, sram_file, sram)
                        sram_meta.write_text(json.dumps(res.to_dict()))
                    meta = json.loads(sram_meta.read_text())
                    sram_in = (self._segment_input(t, sram_file, s, lo, hi, n), meta)
                for pname in platforms:
                    cfg = platform_config(pname, setup.overrides)
                    base_tags = {"platform": pname, "segment": s, "block": [lo, hi],
                                 "setup": run_key(setup.params, setup.overrides)}
                    if commands:
                        base_tags["command_counts"] = True
                    pts.append(self._point(cfg, seg_in, {**base_tags, "variant": BASELINE,
                                                         "order": 0}, setup))
                    for order, (rec, how) in enumerate(self.variants(cfg, setup), start=1):
                        tags = {**base_tags, "variant": rec, "order": order}
                        if how == "HBM2":
                            vcfg = platform_config("HBM2", setup.overrides)
                            pts.append(self._point(vcfg, seg_in, tags, setup))
                        elif how == "sram":
                            if sram_in is None:
                                continue
                            src, meta = sram_in
                            tags["sram"] = {k2: meta[k2] for k2 in (
                                "tagged", "removed_reads", "removed_writes", "fills",
                                "writebacks", "sram_accesses", "sram_energy_pJ",
                                "energy_per_access_pJ")}
                            tags["sram"]["spec"] = meta["spec"]
                            tags["sram"]["model"] = MODEL_VERSION
                            pts.append(self._point(cfg, src, tags, setup))
                        else:
                            try:
                                vcfg = with_overrides(cfg, how)
                            except DiffMemError as exc:
                                raise StudyError(f"recommendation '{rec}' on {pname}: "
                                                 f"{exc}") from exc
                            pts.append(self._point(vcfg, seg_in, tags, setup))
        return pts

    @staticmethod
    def _segment_input(t: TraceInput, path: Path, s: int, lo: int, hi: int, n: int
                       ) -> TraceInput:
        """The block as its own trace input: same label, kind and batch; its scale is the
        full step over the block (so per-sample figures refer to the whole step)."""
        from engine.studies.spec import file_digest
        scale = (t.scale or 1.0) * n / max(hi - lo, 1)
        return TraceInput(t.label, str(path), t.kind, t.batch, t.flops, "trace",
                          file_digest(path), scale)

    # ---- analysis ---------------------------------------------------------------------------
    def analyse(self, document: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
                ) -> Analysis:
        rows, notes = join(document, records)
        setup = document.get("setup", {})
        # a results folder keeps the points of earlier runs: use this setup's only
        key = run_key(setup.get("params", {}), setup.get("overrides", {}))
        from engine.workloads.attention_sram import MODEL_VERSION
        stale = [r for r in rows if r.tags.get("setup") != key or (
            r.tags.get("sram") and r.tags["sram"].get("model") != MODEL_VERSION)]
        if stale:
            notes.append(f"{len(stale)} finished point(s) of earlier runs with other "
                         "parameters are not used")
            rows = [r for r in rows if r not in stale]
        a = Analysis(self.title, notes=notes)
        min_eff = self._one(StudySetup(traces=[], params=dict(setup.get("params", {}))),
                            "min_effect_pct", 0.5, float)
        platforms = sorted({r.tags["platform"] for r in rows},
                           key=lambda p: (p != DEFAULT_PLATFORMS[0], p))
        claims = {k: (zh, en, target) for k, zh, en, target in RECOMMENDATIONS}
        summary = Table("Recommendations: change vs the platform's baseline (sums over the "
                        "blocks; 95 % intervals; verdict on step DRAM time / energy per "
                        "sample)",
                        ["#", "recommendation", "the document's claim", "platform",
                         "workload",
                         "Δ DRAM time % [95 % CI]", "Δ energy % [95 % CI]",
                         "Δ energy/sample % [95 % CI]", "Δ read latency %",
                         "verdict (time)", "verdict (energy/sample)", "mechanism"], [])
        results: dict[tuple[str, str, str], dict[str, Any]] = {}
        for p in platforms:
            prow = [r for r in rows if r.tags["platform"] == p]
            for label in labels_of(prow):
                lrows = [r for r in prow if r.label == label]
                base = {r.tags["segment"]: r for r in lrows if r.tags["variant"] == BASELINE}
                for i, (rec, zh, _en, _target) in enumerate(RECOMMENDATIONS, start=1):
                    var = {r.tags["segment"]: r for r in lrows if r.tags["variant"] == rec}
                    segs = sorted(set(base) & set(var))
                    if not segs:
                        continue
                    res = compare(rec, [var[s] for s in segs], [base[s] for s in segs])
                    results[(p, label, rec)] = res
                    summary.rows.append([
                        i, rec, f"{_en} (“{zh}”)", p, label, _ci(res["time"]),
                        _ci(res["energy"]),
                        _ci(res["energy_per_sample"]), f"{res['latency'].pct:+.1f}",
                        verdict(res["time"], min_eff), verdict(res["energy_per_sample"],
                                                                min_eff),
                        res["mechanism"]])
        a.tables.append(summary)
        bound = front_end_bound(rows)
        if bound is not None:
            a.notes.append(bound)
        # findings: one per recommendation, on the workloads the claim targets
        for i, (rec, zh, en, target) in enumerate(RECOMMENDATIONS, start=1):
            for p in platforms:
                hits = [(label, res) for (pp, label, rr), res in results.items()
                        if pp == p and rr == rec]
                if not hits:
                    a.findings.append(Finding(f"{i}. {rec} on {p}: "
                                              + NOT_RUN.get(rec, "not run (no point of it "
                                                            "finished)")))
                    continue
                aimed = [(lb, r) for lb, r in hits if _targets(target, r["family"])]
                use = aimed or hits
                # (no workload of the kind the claim is about: the verdicts are on the others,
                # and the finding says so rather than reading as a test of the claim)
                off = ("" if aimed else
                       f" [no {TARGET_WORDS[target]} workload among the traces: measured on "
                       f"{', '.join(lb for lb, _ in use)}, which the claim is not about]")
                parts = [f"{lb}: time {verdict(r['time'], min_eff)} ({_ci(r['time'])} %), "
                         f"energy/sample {verdict(r['energy_per_sample'], min_eff)} "
                         f"({_ci(r['energy_per_sample'])} %)" for lb, r in use]
                extra = ""
                if rec == "3D-stacked DRAM":
                    extra = "; read latency " + ", ".join(
                        f"{lb} {r['latency'].pct:+.1f} %" for lb, r in use) + \
                        " (claimed -25 %)"
                a.findings.append(Finding(
                    f"{i}. {rec} (document: “{zh}” -- {en}) on {p}: " + "; ".join(parts)
                    + extra + off, f"recommendation/{rec}/{p}",
                    float(np.mean([r["time"].pct for _, r in use])), None, "%"))
        a.notes.append(
            "Intervals: each trace is cut into blocks simulated separately; the change is the "
            "ratio of sums over the blocks and its 95 % interval comes from the paired block "
            "differences (Student t). It measures how much the effect varies along the trace, "
            "not a sampling error of the whole training step beyond what the blocks cover.")
        a.notes.append(
            f"Verdicts: 'helps' when the whole 95 % interval is below zero (less DRAM time or "
            f"energy per sample), 'hurts' when it is above zero, 'no measurable effect' when "
            f"it spans zero or lies within ±{min_eff:g} %.")
        a.notes.append(
            "Dynamic bank grouping is a controller policy (the scheduler prefers a ready column "
            "command to another bank group within a window; write drains alternate bank "
            "groups); it does not change the device. The attention SRAM's energy (Horowitz, "
            "ISSCC 2014, 45 nm figures) is added to the memory energy of its variant; its "
            "traces come from engine.workloads.attention_sram with a cold SRAM per block. The "
            "document's words are quoted in Chinese beside each claim (the HTML always shows them; "
            "the PDF where a CJK font is installed, else it marks them […]).")
        a.figures.append(FigureSpec(
            "Recommendations: change of step DRAM time and energy per sample",
            "Per platform and workload, with 95 % intervals; negative is better.",
            _draw(results, platforms), size=(10.0, 1.0 + 4.2 * max(1, len(platforms)))))
        return a


#: what each claim's target is, in words
TARGET_WORDS = {"diffusion": "diffusion", "dit": "trajectory-prediction (DiT)",
                "image": "image-generation"}


def _targets(target: str, family: str) -> bool:
    return {"diffusion": family in ("image", "dit"), "dit": family == "dit",
            "image": family == "image"}[target]


def _ci(c: Change) -> str:
    if not math.isfinite(c.lo):
        return f"{c.pct:+.2f}"
    return f"{c.pct:+.2f} [{c.lo:+.2f}, {c.hi:+.2f}]"


def _energy(r: Row) -> float:
    """Memory energy of a point: DRAM (core + IO) plus the attention SRAM's accesses."""
    return r.m["energy_total_pJ"] + float((r.tags.get("sram") or {}).get("sram_energy_pJ",
                                                                          0.0))


def _per_sample(r: Row) -> float:
    """Memory energy of the whole step per sample: x the block's scale, / the batch (per step
    when the trace has no batch)."""
    return _energy(r) * float(r.trace.get("scale") or 1.0) / float(r.trace.get("batch") or 1)


def compare(rec: str, var: Sequence[Row], base: Sequence[Row]) -> dict[str, Any]:
    """The changes of one recommendation on one workload and platform, paired by block."""
    def col(rows: Sequence[Row], f: Any) -> list[float]:
        return [float(f(r)) for r in rows]

    out: dict[str, Any] = {
        "time": paired_change(col(var, lambda r: r.m["step_time_ns"]),
                              col(base, lambda r: r.m["step_time_ns"])),
        "energy": paired_change(col(var, _energy), col(base, _energy)),
        "energy_per_sample": paired_change(col(var, _per_sample), col(base, _per_sample)),
        "latency": paired_change(col(var, lambda r: r.m["avg_read_latency_ns"]),
                                 col(base, lambda r: r.m["avg_read_latency_ns"])),
        "family": _family(var[0].trace),
        "mechanism": mechanism(var, base),
    }
    return out


def mechanism(var: Sequence[Row], base: Sequence[Row]) -> str:
    """Which counters moved, in words (sums over the blocks)."""
    def tot(rows: Sequence[Row], key: str) -> float:
        return float(sum(r.m[key] for r in rows))

    parts = []
    b_cols = tot(base, "reads") + tot(base, "writes")
    v_cols = tot(var, "reads") + tot(var, "writes")
    hits_b = sum(r.m["row_hit_rate"] * (r.m["reads"] + r.m["writes"]) for r in base)
    hits_v = sum(r.m["row_hit_rate"] * (r.m["reads"] + r.m["writes"]) for r in var)
    if b_cols and v_cols:
        d = 100 * (hits_v / v_cols - hits_b / b_cols)
        if abs(d) >= 0.05:
            parts.append(f"row hits {100 * hits_b / b_cols:.1f} -> {100 * hits_v / v_cols:.1f} %")
    for key, word in (("row_conflicts", "conflicts"), ("act", "ACTs"), ("ref", "refreshes")):
        b, v = tot(base, key), tot(var, key)
        if b and abs(v / b - 1) >= 0.005:
            parts.append(f"{word} {100 * (v / b - 1):+.1f} %")
        elif not b and v:
            parts.append(f"{word} 0 -> {int(v)}")
    if b_cols and abs(v_cols / b_cols - 1) >= 0.0005:
        parts.append(f"DRAM requests {100 * (v_cols / b_cols - 1):+.2f} %")
    bio, vio = tot(base, "energy_io_pJ"), tot(var, "energy_io_pJ")
    if bio and abs(vio / bio - 1) >= 0.005:
        parts.append(f"IO energy {100 * (vio / bio - 1):+.1f} %")
    bb = {k: sum(r.m["energy_by_cause_pJ"].get(k, 0.0) for r in base)
          for k in ("background", "refresh")}
    vb = {k: sum(r.m["energy_by_cause_pJ"].get(k, 0.0) for r in var) for k in bb}
    for k in bb:
        if bb[k] and abs(vb[k] / bb[k] - 1) >= 0.005:
            parts.append(f"{k} energy {100 * (vb[k] / bb[k] - 1):+.1f} %")
    parts += command_mechanism(var, base)
    sram = [r.tags.get("sram") for r in var if r.tags.get("sram")]
    if sram:
        tg = sum(s["tagged"] for s in sram)
        rh = sum(s["removed_reads"] for s in sram)
        wa = sum(s["removed_writes"] for s in sram)
        wb = sum(s["writebacks"] for s in sram)
        net = rh + wa - wb
        parts.append(f"SRAM: of {tg} attention requests {rh} read hits, {wa} writes absorbed, "
                     f"{wb} lines written back: net {net} DRAM requests removed"
                     + (f" ({100 * net / b_cols:.2f} % of the DRAM requests)" if b_cols else ""))
    return "; ".join(parts) or "no counter moved by >= 0.5 %"


#: a run of at most this many memory cycles per request is bound by the front end
FRONT_END_CYCLES_PER_REQUEST = 1.05


def front_end_bound(rows: Sequence[Row]) -> str | None:
    """A note when most points ran at about the front end's intake rate: DRAMsim3's intake
    accepts one request per memory cycle, so with every request due at once (saturate) the
    run time is the request count times the clock period, whatever the DRAM does; the
    per-channel intake (metrics "intake") accepts one per channel per cycle, so its bound is
    the request count / channels. Ratios are cycles per request x the intake's width."""
    def width(m: Mapping[str, Any]) -> int:
        return int(m.get("channels", 1)) if m.get("intake") == "per-channel" else 1

    ratios = [r.m["cycles"] * width(r.m) / (r.m["reads"] + r.m["writes"]) for r in rows
              if r.m.get("reads", 0) + r.m.get("writes", 0) > 0 and "cycles" in r.m]
    if not ratios:
        return None
    n = sum(x <= FRONT_END_CYCLES_PER_REQUEST for x in ratios)
    if n < 0.5 * len(ratios):
        return None
    if any(width(r.m) > 1 for r in rows):
        return (f"Front-end bound: {n} of {len(ratios)} points ran at <= "
                f"{FRONT_END_CYCLES_PER_REQUEST:g} memory cycles per request and channel "
                f"(median {float(np.median(ratios)):.3f}), the per-channel intake's limit of "
                "one request per channel per cycle: their DRAM time is the intake's, not the "
                "DRAM's; the energy verdicts and the counters are unaffected.")
    return (f"Front-end bound: {n} of {len(ratios)} points ran at <= "
            f"{FRONT_END_CYCLES_PER_REQUEST:g} memory cycles per request (median "
            f"{float(np.median(ratios)):.3f}). The controller accepts one request per memory "
            "cycle, so with every request due at once the DRAM time of these points is the "
            "request count x the clock period: a policy cannot shorten it, and a memory with "
            "a slower clock takes longer in proportion (HBM2 1.0 ns vs DDR4-3200 0.625 ns: "
            "+60 %) whatever its DRAM can do. Their time verdicts describe the intake, not "
            "the DRAM; the energy verdicts and the counters are unaffected.")


def command_mechanism(var: Sequence[Row], base: Sequence[Row]) -> list[str]:
    """The command-trace counters that moved (points run with ``command_counts``): share of
    back-to-back column commands in the same bank group (tCCD_L), read/write turnarounds
    (two per write drain), channels active per 10k-cycle window; [] without the counts."""
    if not var or not base or not all("commands" in r.m for r in (*var, *base)):
        return []

    def tot(rows: Sequence[Row], key: str) -> float:
        return float(sum(r.m["commands"][key] for r in rows))

    out = []
    pb = tot(base, "same_bg_pairs") + tot(base, "other_bg_pairs")
    pv = tot(var, "same_bg_pairs") + tot(var, "other_bg_pairs")
    if pb and pv:
        sb, sv = 100 * tot(base, "same_bg_pairs") / pb, 100 * tot(var, "same_bg_pairs") / pv
        if abs(sv - sb) >= 0.1:
            out.append(f"same-bank-group column pairs (tCCD_L) {sb:.1f} -> {sv:.1f} %")
    tb, tv = tot(base, "rw_turnarounds"), tot(var, "rw_turnarounds")
    if tb and abs(tv / tb - 1) >= 0.005:
        out.append(f"read/write turnarounds {100 * (tv / tb - 1):+.1f} % ({int(tb)} -> "
                   f"{int(tv)})")
    elif not tb and tv:
        out.append(f"read/write turnarounds 0 -> {int(tv)}")
    ab = float(np.mean([r.m["commands"]["active_channels"] for r in base]))
    av = float(np.mean([r.m["commands"]["active_channels"] for r in var]))
    if ab and abs(av / ab - 1) >= 0.005:
        out.append(f"channels active {ab:.2f} -> {av:.2f}")
    return out


def _count(path: Path, group: str) -> int:
    from engine.trace import suffix_format
    if suffix_format(path) == "hdf5":
        import h5py
        with h5py.File(path, "r") as f:
            g = f.get(group)
            if g is not None and "addr" in g:
                return int(g["addr"].shape[0])
    from engine.trace import iter_trace
    return sum(len(c) for c in iter_trace(path, group=group))


def _has_tags(path: Path, group: str) -> bool:
    from engine.trace import suffix_format
    if suffix_format(path) != "hdf5":
        return False
    import h5py
    with h5py.File(path, "r") as f:
        g = f.get(group)
        return g is not None and "phase" in g and "phase_names" in g.attrs


def _draw(results: Mapping[tuple[str, str, str], Mapping[str, Any]], platforms: list[str]
          ) -> Any:
    def draw(fig: Any) -> None:
        axes = fig.subplots(len(platforms) or 1, 2, squeeze=False)
        recs = [r[0] for r in RECOMMENDATIONS]
        for pi, p in enumerate(platforms):
            labels = sorted({lb for (pp, lb, _r) in results if pp == p})
            width = 0.8 / max(1, len(labels))
            x = np.arange(len(recs))
            for j, key in enumerate(("time", "energy_per_sample")):
                ax = axes[pi][j]
                for li, lb in enumerate(labels):
                    ys, lo, hi = [], [], []
                    for rec in recs:
                        c = results.get((p, lb, rec), {}).get(key)
                        ys.append(c.pct if c else np.nan)
                        lo.append(c.pct - c.lo if c and math.isfinite(c.lo) else 0.0)
                        hi.append(c.hi - c.pct if c and math.isfinite(c.hi) else 0.0)
                    ax.bar(x + (li - (len(labels) - 1) / 2) * width, ys, width,
                           yerr=[lo, hi], capsize=2, label=lb)
                ax.axhline(0, color="k", lw=0.5)
                ax.set_title(f"{p}: Δ {'DRAM time' if key == 'time' else 'energy/sample'} (%)",
                             fontsize=9)
                ax.set_xticks(x, recs, rotation=45, ha="right", fontsize=7)
                ax.grid(axis="y", alpha=0.3)
            axes[pi][0].legend(fontsize=7)
        fig.subplots_adjust(bottom=0.14, top=0.92, hspace=0.75, wspace=0.25)
    return draw
