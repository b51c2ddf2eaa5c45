"""What a study is made of: labelled trace inputs, a setup, and the grid of points it runs.

A *point* is one independent simulation: a full memory configuration (a ``MemoryConfig``
dictionary, overrides already applied), one trace file, the engine options and the tags that
place it in the study (``{"workload": "ddpm", "param": "tRCD", "value": 12}``).  Its id is the
SHA-256 of its canonical JSON with the trace identified by the SHA-256 of its *content*, so an
interrupted study resumes by skipping the ids it already holds, wherever the trace file moved,
and a changed trace or config gets new ids.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from engine.errors import DiffMemError

log = logging.getLogger(__name__)

#: Workload labels recognised as CNN baselines when a trace's kind is not given.
CNN_LABELS = ("resnet", "vgg", "mobilenet", "cnn", "alexnet", "efficientnet")
KINDS = ("diffusion", "cnn", "other")
_DIGEST_CHUNK = 1 << 20


class StudyError(DiffMemError):
    """A study is malformed (unknown study or parameter, bad trace option, bad value)."""


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's content (hex), read in 1 MiB blocks."""
    h = hashlib.sha256()
    try:
        with Path(path).open("rb") as f:
            while block := f.read(_DIGEST_CHUNK):
                h.update(block)
    except OSError as exc:
        raise StudyError(f"{path}: cannot read the trace: {exc}") from exc
    return h.hexdigest()


def canonical_json(value: Any) -> str:
    """Sorted-key, compact JSON: the same value always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class TraceInput:
    """A trace file labelled with the workload it records.

    ``batch`` (samples per step) and ``flops`` (FLOPs of the training step the trace covers)
    are needed by the batch-size and memory-share studies; ``kind`` tells diffusion workloads
    from the CNN baseline (guessed from the label when empty).
    """

    label: str
    path: str
    kind: str = ""
    batch: int | None = None
    flops: float | None = None
    group: str = "trace"           # HDF5 group of an .h5 trace
    digest: str = ""               # SHA-256 of the file; filled by :meth:`resolved`
    scale: float | None = None     # full step / this trace (a sampled trace: > 1)
    dtype: str = ""                # dtype of the traced step (from the trace's summary)
    #: compute time of the part of the step the trace holds, ns, by achieved utilisation
    #: ("0.3" ... "0.7"), from the generator's compute model (engine.workloads.compute)
    compute_ns: dict[str, float] | None = None
    #: how the step was traced (TRACE_SETTINGS of the trace's summary: the on-chip cache,
    #: model configuration, dtype, kernels ...): traces compared with each other must agree
    made_with: dict[str, Any] | None = None

    def file(self) -> Path:
        """The trace file's absolute path; a StudyError when it is missing or a folder."""
        p = Path(self.path).expanduser().absolute()
        if not p.is_file():
            raise StudyError(f"trace '{self.label}': {p}: "
                             + ("a folder, expected a trace file" if p.is_dir()
                                else "no such file"))
        return p

    def resolved(self) -> TraceInput:
        """This input with an absolute path, a kind and the file's digest; checks the file."""
        p = self.file()
        meta = trace_metadata(p, self.group)
        if meta.get("requests") == 0:
            # (a study of a memory needs its traffic: every ratio of the step's figures
            # would divide by nothing)
            raise StudyError(
                f"trace '{self.label}': {p} holds no DRAM requests (a generated step whose "
                f"footprint stays in its {(meta.get('cache_bytes') or 0) / 2**20:g} MiB "
                "on-chip cache from step to step): generate it with `trace --l2-start cold` "
                "or a smaller --cache-mib")
        batch = self.batch if self.batch is not None else meta.get("batch")
        flops = self.flops if self.flops is not None else meta.get("flops")
        name = f"{self.label} {meta.get('workload', '')}".lower()
        kind = self.kind or ("cnn" if any(c in name for c in CNN_LABELS) else "diffusion")
        if kind not in KINDS:
            raise StudyError(f"trace '{self.label}': kind = {kind!r}: expected one of "
                             f"{', '.join(KINDS)}")
        digest = self.digest or file_digest(p)
        scale = self.scale if self.scale is not None else meta.get("scale")
        dtype = self.dtype or meta.get("dtype", "")
        compute_ns = self.compute_ns if self.compute_ns is not None else meta.get("compute_ns")
        made_with = self.made_with if self.made_with is not None else meta.get("made_with")
        return TraceInput(self.label, str(p), kind, batch, flops, self.group, digest, scale,
                          dtype, compute_ns, made_with)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceInput:
        known = {f for f in cls.__dataclass_fields__}
        extra = set(data) - known
        if extra:
            raise StudyError(f"trace input: unknown field(s) {', '.join(sorted(extra))}")
        return cls(**dict(data))

    @classmethod
    def parse(cls, text: str) -> TraceInput:
        """``LABEL=PATH[,batch=N][,flops=X][,kind=cnn|diffusion|other][,group=G]`` (CLI form)."""
        label, sep, rest = text.partition("=")
        if not sep or not label.strip() or not rest.strip():
            raise StudyError(f"--trace {text!r}: expected LABEL=PATH[,batch=N,flops=X,"
                             "kind=cnn|diffusion]")
        path, *opts = rest.split(",")
        values: dict[str, Any] = {}
        for opt in opts:
            key, sep, value = opt.partition("=")
            key = key.strip()
            try:
                if key == "batch":
                    values["batch"] = int(value)
                elif key == "flops":
                    values["flops"] = float(value)
                elif key in ("kind", "group"):
                    values[key] = value.strip()
                else:
                    raise StudyError(f"--trace {text!r}: unknown option {key!r} (expected "
                                     "batch, flops, kind or group)")
            except ValueError:
                raise StudyError(f"--trace {text!r}: {key} = {value!r} is not a number") \
                    from None
        if values.get("batch") is not None and values["batch"] <= 0:
            raise StudyError(f"--trace {text!r}: batch must be positive")
        if values.get("flops") is not None and not (math.isfinite(values["flops"])
                                                    and values["flops"] > 0):
            raise StudyError(f"--trace {text!r}: flops must be a positive number (the "
                             "step's floating-point operations)")
        return cls(label=label.strip(), path=path.strip(), **values)


#: generation settings of a traced step (`python main.py trace`'s summary) that change its
#: DRAM traffic beside the batch: traces of one model compared across batch sizes must share
#: them (the memory is not here: a study re-places each trace for its memory)
TRACE_SETTINGS = ("workload", "model_config", "dtype", "cache_bytes", "cache_ways",
                  "cache_line_bytes", "optimizer", "attention", "order", "l2_start")


def differing_settings(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[str]:
    """The generation settings two traces were made with that differ ("cache_bytes 41943040
    vs 0"); empty when they agree or either is unknown (not a generated trace)."""
    if not a or not b:
        return []
    a, b = _effective_settings(a), _effective_settings(b)
    return [f"{k} {a.get(k)!r} vs {b.get(k)!r}" for k in TRACE_SETTINGS
            if k in a and k in b and a[k] != b[k]]


def _effective_settings(made_with: Mapping[str, Any]) -> dict[str, Any]:
    """The settings as they act: a trace made before ``l2_start`` existed had a cold L2
    (written back at the step's end), and without an L2 its start changes nothing."""
    out = dict(made_with)
    if "cache_bytes" in out:
        out.setdefault("l2_start", "cold")
        if not out["cache_bytes"]:
            out["l2_start"] = None
    return out


def trace_metadata(path: Path, group: str = "trace") -> dict[str, Any]:
    """Workload name, batch and FLOPs from the summary that ``python main.py trace`` stores in
    an HDF5 trace (empty for other files). A sampled trace holds only part of the step: its
    FLOPs are scaled by the share of the step's requests it holds."""
    from engine.trace import suffix_format
    if suffix_format(path) != "hdf5":
        return {}
    from engine.workloads.retarget import read_summary
    try:
        summary = read_summary(path, group)
        if summary is None:
            return {}
        out: dict[str, Any] = {}
        if isinstance(summary.get("workload"), str):
            out["workload"] = summary["workload"]
        if isinstance(summary.get("batch"), int):
            out["batch"] = summary["batch"]
        flops = summary.get("flops")
        if isinstance(flops, dict):
            total = float(sum(v for v in flops.values() if isinstance(v, (int, float))))
            full = (summary.get("extrapolated") or {}).get("requests")
            if summary.get("sample") and full and summary.get("requests"):
                out["scale"] = float(full) / float(summary["requests"])
                total /= out["scale"]
            out["flops"] = total
        if isinstance(summary.get("dtype"), str):
            out["dtype"] = summary["dtype"]
        if isinstance(summary.get("requests"), int):
            out["requests"] = summary["requests"]
            out["cache_bytes"] = summary.get("cache_bytes")
        out["made_with"] = {k: summary[k] for k in TRACE_SETTINGS if k in summary}
        cns = summary.get("compute_time_ns_by_utilisation")
        if isinstance(cns, dict):
            div = out.get("scale") or 1.0
            out["compute_ns"] = {str(k): float(v) / div for k, v in cns.items()
                                 if isinstance(v, (int, float))}
        return out
    except (OSError, ValueError, TypeError, KeyError) as exc:
        log.debug("%s: no workload summary (%s)", path, exc)
        return {}


#: How requests arrive: at the cycles the trace gives, or as fast as the controller takes them.
ARRIVALS = ("trace", "saturate")
#: How the front end takes them in (engine.simulator.INTAKES); "" = the study's default
#: (Study.default_intake: per-channel for saturated arrival and the recommendations study)
INTAKES = ("dramsim3", "per-channel")


@dataclass
class StudySetup:
    """Everything a study needs besides its name; stored with the results.

    ``config`` is a preset name or a .toml/.ini path; ``overrides`` change fields of it for every
    point; ``params`` are the study's own knobs (``{"tRCD": [10, 12, 14]}`` for the timing
    study, ``{"configs": [...]}`` for the technology study; see each study's ``params`` help);
    ``compute`` describes the accelerator for the memory-share study.
    """

    traces: list[TraceInput]
    config: str = "DDR4-3200"
    overrides: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    cycles: int | None = None
    compute: dict[str, Any] = field(default_factory=dict)
    arrival: str = "trace"
    intake: str = ""

    def __post_init__(self) -> None:
        if self.arrival not in ARRIVALS:
            raise StudyError(f"arrival = {self.arrival!r}: expected one of "
                             f"{', '.join(ARRIVALS)}")
        if self.intake and self.intake not in INTAKES:
            raise StudyError(f"intake = {self.intake!r}: expected one of "
                             f"{', '.join(INTAKES)} (or empty: the study's default)")

    def to_dict(self) -> dict[str, Any]:
        return {"traces": [t.to_dict() for t in self.traces], "config": self.config,
                "overrides": dict(self.overrides), "params": dict(self.params),
                "cycles": self.cycles, "compute": dict(self.compute), "arrival": self.arrival,
                "intake": self.intake}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StudySetup:
        d = dict(data)
        traces = [TraceInput.from_dict(t) for t in d.pop("traces", [])]
        known = {"config", "overrides", "params", "cycles", "compute", "arrival", "intake"}
        extra = set(d) - known
        if extra:
            raise StudyError(f"study setup: unknown field(s) {', '.join(sorted(extra))}")
        return cls(traces=traces, **d)


@dataclass(frozen=True)
class Point:
    """One simulation of a study (see the module docstring)."""

    study: str
    config: dict[str, Any]         # MemoryConfig.to_dict()
    trace: dict[str, Any]          # TraceInput.to_dict() (resolved: absolute path, digest)
    tags: dict[str, Any]
    cycles: int | None = None
    arrival: str = "trace"
    intake: str = "dramsim3"

    @property
    def point_id(self) -> str:
        ident = {"study": self.study, "config": self.config, "tags": self.tags,
                 "cycles": self.cycles, "arrival": self.arrival,
                 "trace": {k: self.trace[k] for k in ("label", "digest", "group")}}
        if self.intake != "dramsim3":      # (earlier points keep their ids)
            ident["intake"] = self.intake
        if self.trace.get("made_with"):
            # a generated trace is replayed as the memory's requests by a rule (its lines
            # coalesced within a window): a point simulated under another rule is another
            # point (a resumed study does not keep it)
            from engine.trace import COALESCE_CYCLES, COALESCE_WINDOW
            ident["replay"] = f"lines coalesced within {COALESCE_WINDOW} / {COALESCE_CYCLES}"
        return hashlib.sha256(canonical_json(ident).encode()).hexdigest()[:20]

    def to_dict(self) -> dict[str, Any]:
        return {"point_id": self.point_id, "study": self.study, "config": self.config,
                "trace": self.trace, "tags": self.tags, "cycles": self.cycles,
                "arrival": self.arrival, "intake": self.intake}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Point:
        return cls(study=data["study"], config=dict(data["config"]), trace=dict(data["trace"]),
                   tags=dict(data["tags"]), cycles=data.get("cycles"),
                   arrival=data.get("arrival", "trace"),
                   intake=data.get("intake", "dramsim3"))


def parse_value(name: str, text: str) -> Any:
    """A config field's value from command-line text, typed by its declaration."""
    from engine.config import PARAM_BY_NAME, _suggest
    spec = PARAM_BY_NAME.get(name)
    if spec is None:
        raise StudyError(f"unknown memory parameter '{name}'{_suggest(name, PARAM_BY_NAME)}")
    try:
        if spec.kind == "int":
            return int(text, 0)
        if spec.kind == "float":
            return float(text)
        if spec.kind == "bool":
            low = text.strip().lower()
            if low not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ValueError(text)
            return low in ("true", "1", "yes", "on")
    except ValueError:
        raise StudyError(f"{name} = {text!r}: expected {'an' if spec.kind == 'int' else 'a'} "
                         f"{spec.kind}") from None
    return text


def with_overrides(cfg: Any, overrides: Mapping[str, Any]) -> Any:
    """cfg with *overrides* applied and validated; ``row_buf_policy`` follows ``page_policy``
    (the config requires CLOSE_PAGE exactly when page_policy is 'close')."""
    from engine.config import PARAM_BY_NAME, _suggest
    changes = dict(overrides)
    for key in changes:
        if key not in PARAM_BY_NAME:
            raise StudyError(f"unknown memory parameter '{key}'{_suggest(key, PARAM_BY_NAME)}")
    if "page_policy" in changes and "row_buf_policy" not in changes:
        changes["row_buf_policy"] = ("CLOSE_PAGE" if changes["page_policy"] == "close"
                                     else "OPEN_PAGE")
    return cfg.replace(**changes) if changes else cfg
