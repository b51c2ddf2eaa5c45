"""Re-place a generated trace for another memory: the same training step on another device.

A generated trace's addresses are *physical* addresses of the memory it was generated for
(:mod:`engine.workloads.placement`): 2 MiB pages on frames drawn over that memory's capacity,
then that memory's GPU address hash.  So a trace made for a 64 GiB DDR4-3200-8ch carries
addresses above HBM2's 8 GiB, and its hash is tuned to DDR4's fields, not HBM2's.  Replaying
it on another device is a different system, not a what-if.

Design: the trace file records its placement (group attribute ``placement``: the generating
memory's geometry, the footprint, page size, page seed and hash), and every step of the
placement is a bijection, so the allocator's *virtual* address of every request can be
recovered: undo the hash, then map the frame back to its page.  :func:`retarget_trace` does
that and places the same virtual stream on the other memory exactly as the generator would
have (frames drawn over that memory's capacity with the same seed, that memory's hash), with
the arrival cycles converted to its clock.  Generating the step for the other memory gives
the same requests at the same addresses, with one difference: the L2 filter ran on the
generating memory's frames, so its set conflicts are those of that placement (the L2 holds
the same lines; which lines conflict in a set moves with the frames -- a second-order
effect on a 16-way, 40 MiB cache).

Studies call :func:`placed_for` for every point: a trace whose recorded geometry (request
size, field widths, capacity) differs from the point's memory is re-placed once into the
derived-trace folder; a trace on its own device -- including the controller's address-mapping
what-ifs, which change only the field positions -- is used as it is.  A trace placed with
``--fold-addresses`` (pages alias) cannot be re-placed: that is an error.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import DiffMemError

log = logging.getLogger(__name__)

#: Version of the re-placement (in the derived file's name: a change makes new files).
RETARGET_VERSION = 1
_CHUNK = 1 << 20
_DATASETS = ("addr", "cycle", "is_write", "stream", "phase", "op", "role")


class RetargetError(DiffMemError):
    """A trace cannot be placed on the asked memory."""


def placement_record(mem: Any, spec: Any, footprint_bytes: int, folded: bool,
                     page_bytes: int) -> dict[str, Any]:
    """The ``placement`` attribute the generator stores with a trace."""
    from engine.workloads.placement import geometry
    return {"version": 1, "memory": mem.name, "geometry": geometry(mem),
            "tck_ns": float(mem.tCK), "footprint_bytes": int(footprint_bytes),
            "page_bytes": int(page_bytes), "pages": spec.pages,
            "placement_seed": int(spec.placement_seed), "folded": bool(folded),
            "address_hash": spec.address_hash}


def read_placement(path: str | os.PathLike[str], group: str = "trace") -> dict[str, Any] | None:
    """The trace's placement record, or None (not an HDF5 trace, or not a generated one).
    Traces generated before the record existed fall back to their summary and the memory
    preset it names."""
    p = Path(path)
    return _placement_of(p, group, _trace_attributes(p, group))


def _placement_of(p: Path, group: str, attrs: dict[str, Any] | None
                  ) -> dict[str, Any] | None:
    """read_placement's record from a trace's raw attributes (:func:`_trace_attributes`)."""
    if attrs is None:
        return None
    raw, summary = attrs.get("placement"), attrs.get("summary")
    if raw is not None:
        return _json_attribute(p, group, "placement", raw)
    if summary is None:
        return None
    s = _json_attribute(p, group, "summary", summary)
    pl = s.get("placement")
    if not isinstance(pl, dict) or "footprint_bytes" not in s:
        return None
    from engine.config import load_config
    from engine.workloads.placement import geometry
    try:
        mem = load_config(s["memory"])
    except DiffMemError:
        return None
    return {"version": 0, "memory": mem.name, "geometry": geometry(mem),
            "tck_ns": float(s.get("tck_ns", mem.tCK)),
            "footprint_bytes": int(s["footprint_bytes"]), "page_bytes": int(pl["page_bytes"]),
            "pages": pl["pages"], "placement_seed": int(pl["placement_seed"]),
            "folded": bool(s.get("addresses_folded")), "address_hash": pl["address_hash"]}


def _json_attribute(path: Path, group: str, name: str, raw: Any) -> dict[str, Any]:
    """A generated trace's JSON attribute as a dict, or a DiffMemError naming the file and
    the attribute (a damaged or hand-edited file)."""
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
    try:
        value = json.loads(text)
    except ValueError as e:
        raise DiffMemError(f"{path}: attribute '{name}' of group '{group}' is not valid JSON "
                           f"({e}); expected the record `python main.py trace` writes") from None
    if not isinstance(value, dict):
        raise DiffMemError(f"{path}: attribute '{name}' of group '{group}' is a JSON "
                           f"{type(value).__name__}; expected an object (the record "
                           "`python main.py trace` writes)")
    return value


def read_summary(path: str | os.PathLike[str], group: str = "trace") -> dict[str, Any] | None:
    """A generated trace's summary (what `python main.py trace` printed), or None (not an
    HDF5 trace, or not a generated one)."""
    p = Path(path)
    raw = (_trace_attributes(p, group) or {}).get("summary")
    return None if raw is None else _json_attribute(p, group, "summary", raw)


def _trace_attributes(path: Path, group: str) -> dict[str, Any] | None:
    """The raw ``placement`` and ``summary`` attributes of an HDF5 trace's group (absent
    ones left out), or None: not an HDF5 trace, no such group, or unreadable."""
    from engine.trace import suffix_format
    if suffix_format(path) != "hdf5":
        return None
    import h5py
    try:
        with h5py.File(path, "r") as f:
            g = f.get(group)
            if g is None:
                return None
            return {k: g.attrs[k] for k in ("placement", "summary") if k in g.attrs}
    except OSError:
        return None


def sample_note(summary: dict[str, Any] | None) -> str | None:
    """What a sampled trace's statistics stand for, or None for a whole step."""
    if not summary or summary.get("sample") is None or float(summary["sample"]) >= 1.0:
        return None
    e = summary.get("extrapolated") or {}
    step = float(e.get("requests") or 0.0)
    share = (f"{100 * summary.get('requests', 0) / step:.3g} % of the step's estimated "
             f"{step:.4g} DRAM requests; " if step > 0 else "")
    b = e.get("dram_bytes") or {}
    est = (f"the step's DRAM bytes, extrapolated: read {float(b['read']) / 1e9:.4g} GB, "
           f"written {float(b['write']) / 1e9:.4g} GB (the trace summary's `extrapolated`)"
           if "read" in b and "write" in b else "the step's totals are in the trace summary")
    return (f"a {summary['sample']:g} sample of the training step ({summary.get('windows')} "
            f"windows): the statistics are the sample's ({share}its time includes the gaps "
            f"between the kept windows); {est}")


def placement_notes(trace: str | Path, cfg: Any) -> list[str]:
    """What a generated trace (an HDF5 trace with a placement record: `python main.py
    trace`) says against the memory it is replayed on: placed for another memory (its
    arrival cycles are in that memory's clock and its addresses hashed for that memory's
    channels and banks), and a sampled trace (its statistics are the sample's). Empty for
    other traces, and for a whole step's trace on its own memory. `simulate` logs these as
    warnings and the window shows them beside the run; studies re-place a trace instead
    (:func:`placed_for`)."""
    notes = []
    p = Path(trace)
    attrs = _trace_attributes(p, "trace")             # (the file read once for both)
    raw = (attrs or {}).get("summary")
    sample = sample_note(None if raw is None else _json_attribute(p, "trace", "summary", raw))
    if sample:
        notes.append(sample)
    rec = _placement_of(p, "trace", attrs)
    if not rec:
        return notes
    mem, tck = rec.get("memory"), rec.get("tck_ns")
    if mem and mem != cfg.name and (tck is None or abs(float(tck) - cfg.tCK) > 1e-9
                                    or rec.get("geometry", {}).get("capacity_bytes")
                                    != cfg.capacity_bytes):
        notes.append(f"placed for {mem} (tCK {tck} ns), replayed on {cfg.name} (tCK "
                     f"{cfg.tCK:g} ns): its arrival cycles are read in {cfg.name}'s clock and "
                     f"its addresses decoded with {cfg.name}'s mapping; regenerate it with "
                     f"`trace --memory {cfg.name}`, or compare memories with `study`, which "
                     "re-places a trace for each")
    return notes


def plain_request_fit(path: str | os.PathLike[str]) -> tuple[int, int, str] | None:
    """For a generated trace (a placement record), what a conversion to a plain trace (text,
    binary, or HDF5 without the record) must do so that it replays the step's bytes: its
    64-byte lines as the requests of the memory it was placed for -- (line bytes, request
    bytes, memory name); None for any other trace."""
    rec = read_placement(path)
    if not rec:
        return None
    from engine.workloads.lines import LINE_BYTES
    return LINE_BYTES, 1 << int(rec["geometry"]["shift_bits"]), str(rec.get("memory"))


def convert_to_plain(src: str | os.PathLike[str], dst: str | os.PathLike[str]
                     ) -> tuple[int, str | None]:
    """Convert ``src`` to ``dst`` (formats by extension, :func:`engine.trace.convert`); a
    generated trace is written as its memory's requests (:func:`plain_request_fit`).  The
    request count, and for a generated trace the words that say what was done."""
    from engine.trace import convert
    fit = plain_request_fit(src)
    n = convert(src, dst, fit=fit[:2] if fit else None)
    return n, (plain_request_note(fit, n) if fit else None)


def plain_request_note(fit: tuple[int, int, str], requests: int) -> str:
    """The words for a generated trace converted to plain requests (plain_request_fit)."""
    line, req, mem = fit
    how = ("as they are" if line == req else
           f"merged into {mem}'s {req}-byte requests" if req > line else
           f"split into {mem}'s {req}-byte requests")
    return (f"a generated trace: its {line}-byte lines written {how} ({requests} requests, "
            f"one request a line when replayed: replay it on {mem}); its phase, operator and "
            "role tags, summary and placement record are not carried over")


def needs_retarget(record: dict[str, Any] | None, cfg: Any) -> bool:
    """Whether a trace with this placement record must be re-placed to run on ``cfg``."""
    from engine.workloads.placement import geometry, same_device
    return record is not None and not same_device(record["geometry"], geometry(cfg))


class _Mapper:
    """Physical addresses of the source placement -> physical addresses of the target."""

    def __init__(self, record: dict[str, Any], cfg: Any, where: str) -> None:
        from engine.workloads.placement import GpuAddressHash, hash_for, page_table
        if record["folded"]:
            raise RetargetError(
                f"{where}: the trace was generated with --fold-addresses for "
                f"{record['memory']} (pages alias), so its requests cannot be placed on "
                f"{cfg.name}: generate it for {cfg.name} (python main.py trace --memory ...)")
        identity = record["pages"] == "identity"
        fp, seed, pb = record["footprint_bytes"], record["placement_seed"], record["page_bytes"]
        src = page_table(fp, record["geometry"]["capacity_bytes"], seed, identity=identity,
                         memory_name=record["memory"], page_bytes=pb)
        try:
            self.dst = page_table(fp, int(cfg.capacity_bytes), seed, identity=identity,
                                  memory_name=cfg.name, page_bytes=pb)
        except DiffMemError as exc:
            raise RetargetError(f"{where}: cannot place the trace on {cfg.name}: {exc}") \
                from None
        order = np.argsort(src.frames)
        self.src_frames = src.frames[order]
        self.src_pages = order.astype(np.int64)
        self.identity = identity
        self.page_bytes = pb
        self.src_hash = hash_for(record["geometry"]) if record["address_hash"] == "gpu" \
            else None
        self.dst_hash = GpuAddressHash(cfg) if record["address_hash"] == "gpu" else None
        self.where = where

    def __call__(self, addr: np.ndarray) -> np.ndarray:
        a = addr.astype(np.uint64)
        if self.src_hash is not None:
            a = self.src_hash.invert(a)
        a = a.astype(np.int64)
        if not self.identity:
            frame = a // self.page_bytes
            k = np.searchsorted(self.src_frames, frame)
            kk = np.minimum(k, self.src_frames.shape[0] - 1)
            bad = self.src_frames[kk] != frame
            if bad.any():
                raise RetargetError(
                    f"{self.where}: address {int(addr[np.flatnonzero(bad)[0]]):#x} is on no "
                    "frame of the trace's recorded placement (the file was changed after "
                    "it was generated?)")
            page = self.src_pages[kk]
            virt = page * self.page_bytes + (a - frame * self.page_bytes)
            a = self.dst.frames[page] * self.page_bytes + (virt - page * self.page_bytes)
        out = a.astype(np.uint64)
        if self.dst_hash is not None:
            out = self.dst_hash.apply(out)
        return out


def retarget_trace(src: str | os.PathLike[str], dst: str | os.PathLike[str], cfg: Any,
                   group: str = "trace") -> dict[str, Any]:
    """Write ``dst``: the trace ``src`` placed for memory ``cfg`` (see the module
    docstring); returns the new placement record.  Per-request tags are kept; cycles are
    converted to ``cfg``'s clock (floor, so they stay non-decreasing)."""
    import h5py
    from engine.workloads.placement import geometry
    src, dst = Path(src), Path(dst)
    record = read_placement(src, group)
    if record is None:
        raise RetargetError(f"{src}: not a generated trace (no placement record in group "
                            f"'{group}'): it cannot be re-placed")
    mapper = _Mapper(record, cfg, str(src))
    ratio = float(record["tck_ns"]) / float(cfg.tCK)
    new = {**record, "version": 1, "memory": cfg.name, "geometry": geometry(cfg),
           "tck_ns": float(cfg.tCK), "retargeted_from": record["memory"],
           "retarget_version": RETARGET_VERSION}
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    try:
        with h5py.File(src, "r") as f, h5py.File(tmp, "w") as o:
            g = f[group]
            n = int(g["addr"].shape[0])
            og = o.create_group("trace")
            names = [k for k in _DATASETS if k in g]
            ds = {k: og.create_dataset(k, shape=(n,), dtype=g[k].dtype,
                                       chunks=(min(max(n, 1), 1 << 16),) if n else None,
                                       compression="lzf" if n else None) for k in names}
            for lo in range(0, n, _CHUNK):
                hi = min(n, lo + _CHUNK)
                for k in names:
                    v = g[k][lo:hi]
                    if k == "addr":
                        v = mapper(v)
                    elif k == "cycle" and ratio != 1.0:
                        v = np.floor(v.astype(np.float64) * ratio).astype(v.dtype)
                    ds[k][lo:hi] = v
            for k, v in g.attrs.items():
                og.attrs[k] = v
            og.attrs["placement"] = json.dumps(new)
            og.attrs["count"] = n
            if "ops" in f:
                f.copy(f["ops"], o, "ops")
        os.replace(tmp, dst)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    log.info("re-placed %s (%s) for %s: %s", src.name, record["memory"], cfg.name, dst)
    return new


def placed_for(path: str | os.PathLike[str], cfg: Any, workdir: str | os.PathLike[str],
               group: str = "trace") -> tuple[Path, str]:
    """(path, group) of the trace ``path`` as it must be replayed on ``cfg``: itself when it
    is on its own device (or carries no placement record), else a re-placed copy in
    ``workdir`` (made once, reused)."""
    p = Path(path)
    record = read_placement(p, group)
    if not needs_retarget(record, cfg):
        return p, group
    from engine.workloads.placement import geometry
    st = p.stat()
    key = hashlib.sha256(json.dumps(
        [str(p.resolve()), st.st_size, st.st_mtime_ns, group, geometry(cfg), float(cfg.tCK),
         cfg.name, RETARGET_VERSION], sort_keys=True).encode()).hexdigest()[:16]
    out = Path(workdir) / f"{p.stem}.placed-{key}.h5"
    if not out.is_file():
        retarget_trace(p, out, cfg, group)
    return out, "trace"
