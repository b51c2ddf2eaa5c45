"""The DRAM term of the cost model: time and energy of a schedule's DRAM traffic on one memory
configuration, differentiable in the tile factors, calibrated on the engine.

Energy (pJ), per layer, from the memory config's own numbers (``engine.power``):

* **background** — active-standby power (``VDD * IDD3N * devices`` per rank) over the layer's
  duration: the memory is powered for as long as the schedule runs, busy or not;
* **refresh** — one REF per rank per ``tREFI`` (per bank per ``tREFIb`` for bank-level
  refresh) at the config's ``ref_energy_inc``, also over the duration;
* **data** — per 64-byte line actually transferred (partial lines count whole): the core
  read/write increment per column command and the IO energy per bit
  (:func:`engine.power.io_energy_per_bit`) of the burst; a line is one request, served with
  at least one whole burst (``max(1, 64 / request_size_bytes)`` commands);
* **activations** — ACTs per line from the calibration (rows touched by the pattern) x the
  config's ``act_energy_inc``.

Time: DRAM service cycles = lines x cycles per line, where cycles per line is measured by the
engine on synthetic patterns (runs of ``r`` consecutive lines, one run every ``r / density``
lines; reads and writes separately) and interpolated in (log2 run, log2 density).  A tensor's
pattern follows from its tile in the chosen layout: the contiguous run is the product of the
tile's innermost extents while they span the whole tensor (times the first one that does
not), the pitch between runs the product of the tensor's extents over the same dims.  The bus
(Gemmini's DMA width, ``hw.dram_bw``) stays a separate ceiling in :func:`roofline`.

Partial sums spilled by the accumulator and read back later: a read-back served from the
controller's write buffer (and the rewrite that merges with the still-pending write) never
reaches the DRAM.  Whether it is still pending depends on how many lines were written between
the write and its read-back (the *span*) and on how the buffer drains, which differs under
back-to-back traffic (it fills to its high watermark) and paced traffic (it drains above the
low watermark whenever the command queues are empty): both are measured by the engine on a
synthetic write / read-back pattern per span (``READBACK_SPANS``) and per spacing of the
tile's lines (``READBACK_DENSITIES``: lines spread over the tensor, as an output tile of a
channel slice is, drain slower than consecutive ones, so more are still pending: on DDR4-3200
at a span of 60 lines none hit with consecutive lines, 25 % with lines 8 apart; the term reads
the table at the output pattern's density).  Back-to-back hits set
the service time, paced hits the lines moved (energy); the read-backs and rewrites that reach
the DRAM are timed as read and write streams of the output's pattern, and no layer is served
faster than one request per cycle of the controller (the pattern at a span of one line, all
hits).  The pattern's other cycles per request are recorded in the
calibration but not used: they include the controller's read-before-write stalls, which
depend on how soon a tile is rewritten after its read-back (one tile later in the pattern,
far later in most schedules; charging them put one ResNet18 layer's time at 10x the
engine's).  Output tiles shorter than a line that neighbour along the layout's innermost dim
share lines: a tile's write merges, and its read-back hits, with the same probability at the
span since its neighbour wrote the line (one step of the loop along that dim).  A span is
the mean number of lines written from a line's write, itself included, to its read-back:
``(revisit - 1/2) x tile + 1/2`` lines for a tile revisited after ``revisit`` tiles, the same
measure as the calibration pattern's (:func:`readback_span`).

Calibration runs once per memory config (136 short engine runs, ~5 CPU-s) and is cached as JSON
under ``cache_dir`` (default ``$DIFFMEM_CACHE_DIR`` or ``~/.cache/diffmem``), keyed by a hash
of every field of the config except its name, so an edited config recalibrates.

:func:`refit` scales the five parts (service time, background, refresh, data, activations) to
the engine's measurements of the schedules seen so far (ratio of sums per cause): the closed
loop's re-fit.
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from optimizer.hardware import GemminiHardware

log = logging.getLogger(__name__)

LINE = 64
# 4: measured after the kernel's write-drain fix (2026-12-03): read-back hit tables changed
CALIBRATION_VERSION = 4
RUN_LINES = (1, 2, 4, 8, 32, 128)               # calibration grid: run length in lines
DENSITIES = (1.0, 0.5, 0.125, 1.0 / 64)         # lines of a run / lines between run starts
PATTERN_LINES = 4096                            # lines per synthetic pattern
READBACK_SPANS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)   # lines written in between
READBACK_TILE = 8                               # lines per tile of the read-back pattern
READBACK_DENSITIES = (1.0, 0.5, 0.125, 1.0 / 64)   # 1 / line pitch of the read-back tiles
PACED_GAP = 32                                  # memory cycles between paced requests
LAYOUT_CODES = ("nhwc", "nchw", "tiled")


# ---- the memory's numbers -------------------------------------------------------------------
def config_hash(cfg: Any) -> str:
    """A hash of every field of a memory config but its name (and the calibration grid)."""
    data = {k: v for k, v in cfg.to_dict().items() if k != "name"}
    data["_calibration"] = [CALIBRATION_VERSION, RUN_LINES, DENSITIES, PATTERN_LINES,
                            READBACK_SPANS, READBACK_TILE, READBACK_DENSITIES, PACED_GAP]
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def default_cache_dir() -> Path:
    env = os.environ.get("DIFFMEM_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "diffmem"


@dataclass
class Calibration:
    """Engine measurements on the synthetic patterns, in memory cycles per line and ACTs per
    line, [run, density] each, reads and writes; and per read-back span and line density
    ([span, density], or [span] for one density), the share of read-backs served by the
    write buffer (back to back and paced); per span at density 1, the memory cycles per
    request of the read-back traffic, buffer hits included (back to back).  A span is the
    mean number of lines written from a line's write (itself included) to its read-back."""

    memory: str
    config_hash: str
    run_lines: list[int]
    densities: list[float]
    read_cycles_per_line: list[list[float]]
    write_cycles_per_line: list[list[float]]
    read_acts_per_line: list[list[float]]
    write_acts_per_line: list[list[float]]
    readback_spans: list[int]
    readback_hit_burst: list[Any]
    readback_hit_paced: list[Any]
    readback_cycles_per_line: list[float]
    engine_runs: int = 0
    from_cache: bool = False
    readback_densities: list[float] = field(default_factory=lambda: [1.0])


def pattern_addresses(run: int, density: float, lines: int = PATTERN_LINES) -> np.ndarray:
    """Byte addresses of a synthetic pattern: runs of ``run`` consecutive 64-byte lines, one
    run every ``run / density`` lines, ``lines`` lines in all."""
    pitch = max(run, int(round(run / density)))
    n_runs = max(1, lines // run)
    starts = np.arange(n_runs, dtype=np.int64) * pitch
    return ((starts[:, None] + np.arange(run, dtype=np.int64)[None, :]).ravel() * LINE)


def readback_span(span: int) -> float:
    """The mean number of lines :func:`readback_pattern` writes from a line's write (itself
    included) to its read-back: ``slots x tile - (tile - 1) / 2``."""
    tile = min(READBACK_TILE, span)
    return max(1, span // tile) * tile - (tile - 1) / 2.0


def readback_pattern(span: int, lines: int = PATTERN_LINES, density: float = 1.0
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Byte addresses and write flags of a partial-sum pattern: ``span / READBACK_TILE``
    tiles of ``READBACK_TILE`` lines (fewer when the span is shorter), written, then
    revisited in turn: each visit reads the tile back and writes it again, so about ``span``
    lines are written between a line's write and its read-back (:func:`readback_span`).
    Consecutive lines of a tile are ``1 / density`` lines apart (an output tile whose runs
    are shorter than the tensor's pitch: one line per pixel of a channel slice): the spacing
    sets how fast the controller drains the buffer (row hits, banks), so how many writes are
    still pending at the read-back (measured on DDR4-3200 at a span of 60 lines: none at
    density 1, 25 % at 1/8)."""
    tile = min(READBACK_TILE, span)
    slots = max(1, span // tile)
    passes = max(3, lines // (slots * tile))
    one = np.arange(slots * tile, dtype=np.int64).reshape(slots, tile)
    first = np.stack([one, one], 1)                          # the first pass: writes only
    addr = np.concatenate([one.ravel()] + [first.ravel()] * (passes - 1))
    isw = np.concatenate([np.ones(one.size, bool)]
                         + [np.stack([np.zeros_like(one, bool), np.ones_like(one, bool)],
                                     1).ravel()] * (passes - 1))
    pitch = max(1, int(round(1.0 / density)))
    return addr * (LINE * pitch), isw


def _readback_run(cfg: Any, span: int, gap: int, density: float = 1.0) -> tuple[float, float]:
    """(share of read-backs served by the write buffer, memory cycles per request, hits
    included) of :func:`readback_pattern` with requests ``gap`` cycles apart."""
    from engine.simulator import SimOptions, Simulator
    addr, isw = readback_pattern(span, density=density)
    n = len(addr)
    sim = Simulator(cfg, SimOptions())
    try:
        sim.feed(addr.astype(np.uint64), isw, np.arange(n, dtype=np.int64) * gap)
        s = sim.finish().summary
    finally:
        sim.close()
    reads = int(n - isw.sum())
    return float(s["num_write_buf_hits"]) / reads, float(s["num_cycles"]) / n


def _engine_run(cfg: Any, addr: np.ndarray, write: bool) -> tuple[float, float]:
    from engine.simulator import SimOptions, Simulator
    sim = Simulator(cfg, SimOptions())
    try:
        n = len(addr)
        sim.feed(addr.astype(np.uint64), np.full(n, write), np.zeros(n, np.int64))
        s = sim.finish().summary
    finally:
        sim.close()
    return float(s["num_cycles"]) / n, float(s["num_act_cmds"]) / n


def calibrate(cfg: Any, cache_dir: str | Path | None = None,
              progress: Callable[[str], None] | None = None) -> Calibration:
    """The calibration of memory config ``cfg``: from the cache when its hash is there,
    otherwise measured with the engine (back to back, each pattern on an idle memory) and
    written to the cache."""
    key = config_hash(cfg)
    root = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    path = root / "dram_calibration" / f"{key}.json"
    if path.is_file():
        try:
            data = json.loads(path.read_text())
            if data.get("config_hash") == key:
                data["from_cache"] = True
                return Calibration(**data)
        except (ValueError, TypeError) as exc:
            log.warning("ignoring unreadable DRAM calibration %s: %s", path, exc)
    cpl = {False: [], True: []}
    apl = {False: [], True: []}
    runs = 0
    for write in (False, True):
        for r in RUN_LINES:
            row_c, row_a = [], []
            for d in DENSITIES:
                c, a = _engine_run(cfg, pattern_addresses(r, d), write)
                runs += 1
                row_c.append(c)
                row_a.append(a)
            cpl[write].append(row_c)
            apl[write].append(row_a)
        if progress is not None:
            progress(f"calibrated {'writes' if write else 'reads'} on {cfg.name}")
    hit_b, hit_p, rb_cpl = [], [], []
    for span in READBACK_SPANS:
        row_b, row_p = [], []
        for dens in READBACK_DENSITIES:
            h, c = _readback_run(cfg, span, 0, dens)
            hp, _ = _readback_run(cfg, span, PACED_GAP, dens)
            runs += 2
            row_b.append(h)
            row_p.append(hp)
            if dens == 1.0:
                rb_cpl.append(c)
        hit_b.append(row_b)
        hit_p.append(row_p)
    if progress is not None:
        progress(f"calibrated partial-sum read-backs on {cfg.name}")
    cal = Calibration(cfg.name, key, list(RUN_LINES), list(DENSITIES), cpl[False], cpl[True],
                      apl[False], apl[True], [readback_span(s) for s in READBACK_SPANS],
                      hit_b, hit_p, rb_cpl, engine_runs=runs,
                      readback_densities=list(READBACK_DENSITIES))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        from engine.fileio import atomic_write_text
        atomic_write_text(path, json.dumps({k: v for k, v in asdict(cal).items()
                                            if k != "from_cache"}, indent=1))
    except OSError as exc:
        log.warning("could not cache the DRAM calibration in %s: %s", path, exc)
    return cal


# ---- the term -------------------------------------------------------------------------------
@dataclass(frozen=True)
class DramTerm:
    """Everything the cost model needs about one memory, per accelerator cycle / per line."""

    memory: str
    config_hash: str
    layout: str
    block: int
    mem_per_acc: float                 # memory cycles per accelerator cycle
    background_pj_per_cycle: float     # per accelerator cycle, all ranks and channels
    refresh_pj_per_cycle: float
    read_pj_per_line: float            # core read increment, per 64-byte line
    write_pj_per_line: float
    io_read_pj_per_line: float
    io_write_pj_per_line: float
    act_pj: float                      # one ACT (with its PRE)
    run_lines: tuple[float, ...]
    densities: tuple[float, ...]
    read_cpl: tuple[float, ...]        # accelerator cycles per line, [run x density] flat
    write_cpl: tuple[float, ...]
    read_apl: tuple[float, ...]        # ACTs per line
    write_apl: tuple[float, ...]
    readback_spans: tuple[float, ...] = (1.0,)
    readback_densities: tuple[float, ...] = (1.0,)
    readback_hit_burst: tuple[float, ...] = (0.0,)   # share of read-backs the buffer serves,
    readback_hit_paced: tuple[float, ...] = (0.0,)   # [span x density] flat
    request_cycles: float = 0.0        # accelerator cycles the controller takes per request
    # refit scales (1: calibration only)
    k_time: float = 1.0
    k_background: float = 1.0
    k_refresh: float = 1.0
    k_data: float = 1.0
    k_act: float = 1.0

    @classmethod
    def build(cls, cfg: Any, cal: Calibration, *, layout: str = "nhwc", block: int = 16,
              acc_ghz: float = 1.0) -> "DramTerm":
        from engine.power import energy_increments, io_energy_per_bit
        if layout not in LAYOUT_CODES:
            raise ValueError(f"unknown layout '{layout}': expected one of "
                             f"{', '.join(LAYOUT_CODES)}")
        inc = energy_increments(cfg)
        tck = float(cfg.tCK)
        mem_per_acc = 1.0 / (acc_ghz * tck)
        ranks = int(cfg.channels) * int(cfg.ranks)
        bg = ranks * inc["act_stb_energy_inc"] * tck * mem_per_acc
        if str(cfg.refresh_policy) == "BANK_LEVEL_STAGGERED":
            ref = ranks * int(cfg.banks) * inc["refb_energy_inc"] * tck / int(cfg.tREFIb)
        else:
            ref = ranks * inc["ref_energy_inc"] * tck / int(cfg.tREFI)
        req = int(cfg.request_size_bytes)
        # column commands per 64-byte line: a line is one request of the schedule's trace,
        # and the engine serves a request with at least one whole burst (LPDDR4-3200: 128 B,
        # so one command and 128 B of IO per 64-byte line, not half of each)
        cmds = max(1.0, LINE / req)
        proto = str(getattr(cfg.protocol, "name", cfg.protocol)).upper()
        vddq = getattr(cfg, "VDDQ", None)
        io = io_energy_per_bit(proto, vddq_V=float(vddq) if vddq is not None else None)

        def flat(t: list[list[float]], scale: float = 1.0) -> tuple[float, ...]:
            return tuple(float(x) * scale for row in t for x in row)
        rb_dens = tuple(float(x) for x in cal.readback_densities)

        def per_density(t: list[Any]) -> tuple[float, ...]:
            # [span] (one density, or a calibration before densities) or [span][density]
            rows = [r if isinstance(r, (list, tuple)) else [r] * len(rb_dens) for r in t]
            if any(len(r) != len(rb_dens) for r in rows):
                raise ValueError(f"DRAM calibration of {cal.memory}: read-back hit table "
                                 f"rows need {len(rb_dens)} densities")
            return flat(rows)
        return cls(memory=cfg.name, config_hash=cal.config_hash, layout=layout, block=block,
                   mem_per_acc=mem_per_acc, background_pj_per_cycle=bg,
                   refresh_pj_per_cycle=ref * mem_per_acc,
                   read_pj_per_line=inc["read_energy_inc"] * tck * cmds,
                   write_pj_per_line=inc["write_energy_inc"] * tck * cmds,
                   io_read_pj_per_line=cmds * req * 8 * io.read_pJ_per_bit,
                   io_write_pj_per_line=cmds * req * 8 * io.write_pJ_per_bit,
                   act_pj=inc["act_energy_inc"] * tck,
                   run_lines=tuple(float(r) for r in cal.run_lines),
                   densities=tuple(float(d) for d in cal.densities),
                   read_cpl=flat(cal.read_cycles_per_line, 1.0 / mem_per_acc),
                   write_cpl=flat(cal.write_cycles_per_line, 1.0 / mem_per_acc),
                   read_apl=flat(cal.read_acts_per_line), write_apl=flat(cal.write_acts_per_line),
                   readback_spans=tuple(float(x) for x in cal.readback_spans),
                   readback_densities=rb_dens,
                   readback_hit_burst=per_density(cal.readback_hit_burst),
                   readback_hit_paced=per_density(cal.readback_hit_paced),
                   request_cycles=float(cal.readback_cycles_per_line[0]) / mem_per_acc)

    def scales(self) -> dict[str, float]:
        return {"k_time": self.k_time, "k_background": self.k_background,
                "k_refresh": self.k_refresh, "k_data": self.k_data, "k_act": self.k_act}


@dataclass(frozen=True)
class DramAwareHardware(GemminiHardware):
    """Gemmini hardware whose cost model includes the DRAM term of one memory (the bus
    bandwidth ``dram_bw`` stays the DMA ceiling; the per-byte ``e_dram_*`` are unused)."""

    dram: DramTerm | None = None

    @classmethod
    def of(cls, hw: GemminiHardware, term: DramTerm) -> "DramAwareHardware":
        base = {f: getattr(hw, f) for f in GemminiHardware.__dataclass_fields__}
        base["name"] = f"{hw.name}+{term.memory}"
        return cls(**base, dram=term)


# ---- access patterns of tiles ---------------------------------------------------------------
def _run_pitch(ext: Sequence[torch.Tensor], full: Sequence[torch.Tensor]
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Contiguous run and pitch (elements) of a box ``ext`` in a row-major array ``full``,
    both listed innermost first: dims are part of the run while every dim inside them spans
    its whole extent."""
    run = torch.ones_like(ext[0])
    pitch = torch.ones_like(ext[0])
    inner_full = torch.ones_like(ext[0], dtype=torch.bool)
    for e, f in zip(ext, full):
        run = torch.where(inner_full, run * e, run)
        pitch = torch.where(inner_full, pitch * f, pitch)
        inner_full = inner_full & (e.detach() >= f - 0.5)
    return run, pitch


def tensor_patterns(c: Any, layout: str, block: int) -> dict[str, tuple[torch.Tensor, ...]]:
    """Per tensor ("W", "I", "O"): (run bytes, pitch bytes, tile bytes) of its DRAM tile."""
    one = torch.ones_like(c.dim_k)
    mm = c.is_matmul > 0.5
    dw = c.is_depthwise > 0.5
    # weights (n, k, c, r, s); inputs (n, ch, h, w); outputs (n, k, p, q)
    w_n, w_N = torch.where(mm, c.tile_n, one), torch.where(mm, c.dim_n, one)
    i_ch, i_CH = torch.where(dw, c.tile_k, c.tile_c), torch.where(dw, c.dim_k, c.dim_c)
    i_h = (c.tile_p - 1) * c.dim_stride + c.tile_r
    i_w = (c.tile_q - 1) * c.dim_stride + c.tile_s
    i_H = (c.dim_p - 1) * c.dim_stride + c.dim_r
    i_W = (c.dim_q - 1) * c.dim_stride + c.dim_s

    def blocked(ch: torch.Tensor, CH: torch.Tensor):
        b = torch.gcd(CH.detach().round().long(), torch.full_like(CH, block).long()).to(CH.dtype)
        return torch.minimum(ch, b), b, torch.clamp(ch / b, min=1.0), CH / b

    out = {}
    if layout == "nchw":
        w = _run_pitch([c.tile_s, c.tile_r, c.tile_c, c.tile_k, w_n],
                       [c.dim_s, c.dim_r, c.dim_c, c.dim_k, w_N])
        i = _run_pitch([i_w, i_h, i_ch, c.tile_n], [i_W, i_H, i_CH, c.dim_n])
        o = _run_pitch([c.otile_q, c.otile_p, c.otile_k, c.otile_n],
                       [c.dim_q, c.dim_p, c.dim_k, c.dim_n])
    elif layout == "nhwc":
        w = _run_pitch([c.tile_c, c.tile_s, c.tile_r, c.tile_k, w_n],
                       [c.dim_c, c.dim_s, c.dim_r, c.dim_k, w_N])
        i = _run_pitch([i_ch, i_w, i_h, c.tile_n], [i_CH, i_W, i_H, c.dim_n])
        o = _run_pitch([c.otile_k, c.otile_q, c.otile_p, c.otile_n],
                       [c.dim_k, c.dim_q, c.dim_p, c.dim_n])
    else:
        cb, b, cn, CN = blocked(c.tile_c, c.dim_c)
        w = _run_pitch([cb, c.tile_s, c.tile_r, cn, c.tile_k, w_n],
                       [b, c.dim_s, c.dim_r, CN, c.dim_k, w_N])
        cb, b, cn, CN = blocked(i_ch, i_CH)
        i = _run_pitch([cb, i_w, i_h, cn, c.tile_n], [b, i_W, i_H, CN, c.dim_n])
        cb, b, cn, CN = blocked(c.otile_k, c.dim_k)
        o = _run_pitch([cb, c.otile_q, c.otile_p, cn, c.otile_n],
                       [b, c.dim_q, c.dim_p, CN, c.dim_n])
    tiles = {"W": w_n * c.tile_k * c.tile_c * c.tile_r * c.tile_s,
             "I": c.tile_n * i_ch * i_h * i_w,
             "O": c.otile_n * c.otile_k * c.otile_p * c.otile_q}
    for t, (run, pitch) in zip("WIO", (w, i, o)):
        out[t] = (run, pitch, tiles[t])
    return out


def _features(run: torch.Tensor, pitch: torch.Tensor, tile: torch.Tensor):
    """Lines per useful byte and the calibration coordinates (log2 run lines, log2 density).

    A run touches run/64 lines when runs are line-aligned (run and pitch multiples of 64, the
    tensors being 4 KiB aligned), one line when it is a divisor of 64 at a pitch that keeps
    it inside a line, and (run + 63) / 64 lines on average otherwise."""
    r_, p_ = run.detach().round(), pitch.detach().round()
    aligned = (torch.remainder(r_, LINE) == 0) & (torch.remainder(p_, LINE) == 0)
    inside = (torch.remainder(LINE, torch.clamp(r_, min=1.0)) == 0) & (r_ < LINE) & (
        torch.remainder(p_, LINE) == 0)
    run_l = torch.where(aligned, run / LINE,
                        torch.where(inside, torch.ones_like(run), (run + LINE - 1) / LINE))
    gap_l = pitch / LINE
    lines_per_run = torch.minimum(run_l, torch.clamp(gap_l, min=1.0 / LINE))
    lpb = lines_per_run / run
    dense = gap_l <= run_l + 0.5                       # the next run starts in the next line
    tile_l = torch.clamp(tile * lpb, min=1.0)
    r = torch.where(dense, tile_l, run_l)
    dens = torch.where(dense, torch.ones_like(run), torch.clamp(run_l / gap_l, max=1.0))
    return lpb, torch.log2(torch.clamp(r, min=1.0)), torch.log2(dens)


@functools.lru_cache(maxsize=64)
def _grid(table: tuple[float, ...], xs: tuple[float, ...], ys: tuple[float, ...]):
    gx = torch.tensor([math.log2(x) for x in xs], dtype=torch.float64)
    gy = torch.tensor([math.log2(y) for y in ys], dtype=torch.float64)
    return gx, gy, torch.tensor(table, dtype=torch.float64).reshape(len(xs), len(ys))


def _interp(table: Sequence[float], xs: Sequence[float], ys: Sequence[float],
            lx: torch.Tensor, ly: torch.Tensor) -> torch.Tensor:
    """Bilinear interpolation of ``table`` [len(xs) x len(ys)] at (log2 x, log2 y), clamped to
    the grid; differentiable in lx, ly."""
    gx, gy, tab = _grid(tuple(table), tuple(xs), tuple(ys))
    lx = torch.clamp(lx, float(gx[0]), float(gx[-1]))
    ly = torch.clamp(ly, float(gy.min()), float(gy.max()))
    ix = torch.clamp(torch.searchsorted(gx, lx.detach().contiguous(), right=True) - 1, 0,
                     len(xs) - 2)
    # densities are listed from 1 down: interpolate on the reversed axis
    gyr = torch.flip(gy, [0])
    tabr = torch.flip(tab, [1])
    iy = torch.clamp(torch.searchsorted(gyr, ly.detach().contiguous(), right=True) - 1, 0,
                     len(ys) - 2)
    tx = (lx - gx[ix]) / (gx[ix + 1] - gx[ix])
    ty = (ly - gyr[iy]) / (gyr[iy + 1] - gyr[iy])
    v00, v10 = tabr[ix, iy], tabr[ix + 1, iy]
    v01, v11 = tabr[ix, iy + 1], tabr[ix + 1, iy + 1]
    return (v00 * (1 - tx) * (1 - ty) + v10 * tx * (1 - ty) + v01 * (1 - tx) * ty
            + v11 * tx * ty)


def _interp1(table: Sequence[float], xs: Sequence[float], x: torch.Tensor) -> torch.Tensor:
    """Linear interpolation of ``table`` over log2 ``xs`` at log2 ``x``, clamped to the
    grid; differentiable in x."""
    if len(xs) == 1:
        return torch.full_like(x, float(table[0]))
    gx, _, tab = _grid(tuple(table), tuple(xs), (1.0,))
    tab = tab[:, 0]
    lx = torch.clamp(torch.log2(torch.clamp(x, min=1e-9)), float(gx[0]), float(gx[-1]))
    ix = torch.clamp(torch.searchsorted(gx, lx.detach().contiguous(), right=True) - 1, 0,
                     len(xs) - 2)
    t = (lx - gx[ix]) / (gx[ix + 1] - gx[ix])
    return tab[ix] * (1 - t) + tab[ix + 1] * t


@dataclass
class DramParts:
    """Per-layer DRAM figures of the model ([..., L] tensors); energy in pJ."""

    lines_read: torch.Tensor
    lines_write: torch.Tensor
    service_cycles: torch.Tensor     # accelerator cycles
    data_pj: torch.Tensor            # core read/write + IO
    act_pj: torch.Tensor
    acts: torch.Tensor


def dram_traffic(term: DramTerm, c: Any, dram_reads: torch.Tensor,
                 dram_writes: torch.Tensor) -> DramParts:
    """Lines, service time and per-line energy of the DRAM traffic after fusion.  Reads are
    split over W, I and the partial sums (O) in the proportions of the unfused counts; reads
    beyond them (residual shortcuts) are one sequential stream."""
    pat = tensor_patterns(c, term.layout, term.block)
    feats = {t: _features(*pat[t]) for t in "WIO"}
    unfused = {"W": c.dram_w_reads, "I": c.dram_i_reads, "O": c.dram_o_reads}
    total = unfused["W"] + unfused["I"] + unfused["O"]
    # fusion removes reads (kept < 1); reads beyond the layer's own W/I/O are the residual
    # shortcuts added to its output, read as whole tensors (sequential lines)
    kept = torch.where(total > 0, torch.minimum(dram_reads, total)
                       / torch.where(total > 0, total, 1.0), torch.zeros_like(total))
    residual_lines = torch.clamp(dram_reads - total, min=0.0) / LINE
    # partial sums: each revisit reads an output tile back and writes it again; a read-back
    # of a line still pending in the controller's write buffer is served from it and its
    # rewrite merges.  The share so served depends on the lines written in between (the
    # span), measured by the engine back to back (service time) and paced (lines moved,
    # energy).  Output tiles shorter than a line that neighbour along the layout's innermost
    # dim share lines: a tile's line is also pending when a neighbour wrote it recently, i.e.
    # one step of the loop along that dim earlier (``o_*_inner`` tiles).
    lpb_o, lx_o, ly_o = feats["O"]
    o_run = pat["O"][0]
    tile_lines = torch.clamp(pat["O"][2] * lpb_o, min=1.0)
    nchw = term.layout == "nchw"
    f_sh = c.o_q_factor if nchw else c.o_k_factor
    inner_sh = c.o_q_inner if nchw else c.o_k_inner
    could = torch.where(o_run.detach() < LINE, torch.minimum(f_sh, LINE / o_run),
                        torch.ones_like(o_run))
    could = torch.clamp(could, min=1.0)
    spans = term.readback_spans
    o_reads = c.dram_o_reads * kept * lpb_o                 # read-back requests
    first_w = torch.clamp(dram_writes - c.dram_o_reads, min=0.0) * lpb_o
    g = (term.run_lines, term.densities)
    moved = {}
    rb_dens = term.readback_densities
    # the read-back's span: from a line's write (itself included) to its read-back, the rest
    # of its tile and the tiles in between: (revisit - 1/2) tiles + 1/2 line on average

    def hit_at(table: tuple[float, ...], x: torch.Tensor) -> torch.Tensor:
        lx = torch.log2(torch.clamp(x, min=1.0))
        if len(rb_dens) == 1:
            return _interp1(table, spans, torch.clamp(x, min=1.0))
        return _interp(table, spans, rb_dens, lx, ly_o)
    for mode, table in (("burst", term.readback_hit_burst), ("paced", term.readback_hit_paced)):
        merge = hit_at(table, inner_sh * tile_lines)
        nb = (could - 1.0) / could * merge                  # a neighbour's write is pending
        span = torch.clamp((c.o_revisit_tiles * tile_lines - (tile_lines - 1.0) / 2.0)
                           / (1.0 + (could - 1.0) * merge), min=1.0)
        hit = 1.0 - (1.0 - hit_at(table, span)) * (1.0 - nb)
        # read-backs and their rewrites that reach the DRAM; first writes that do
        moved[mode] = (o_reads * (1.0 - hit), first_w * (1.0 - nb))
    # energy: the lines that reach the DRAM under paced traffic
    o_back, fin = moved["paced"]
    lines_r = torch.zeros_like(dram_reads)
    acts = torch.zeros_like(dram_reads)
    cyc = torch.zeros_like(dram_reads)
    for t in "WI":
        lpb, lx, ly = feats[t]
        lines = unfused[t] * kept * lpb
        lines_r = lines_r + lines
        cyc = cyc + lines * _interp(term.read_cpl, *g, lx, ly)
        acts = acts + lines * _interp(term.read_apl, *g, lx, ly)
    # the longest dense run of the calibration: [last run length, density 1]
    stream = (len(term.run_lines) - 1) * len(term.densities)
    lines_r = lines_r + residual_lines
    cyc = cyc + residual_lines * term.read_cpl[stream]
    acts = acts + residual_lines * term.read_apl[stream]
    lines_r = lines_r + o_back
    acts = acts + o_back * _interp(term.read_apl, *g, lx_o, ly_o)
    lines_w = o_back + fin
    acts = acts + lines_w * _interp(term.write_apl, *g, lx_o, ly_o)
    w_cpl_o = _interp(term.write_cpl, *g, lx_o, ly_o)
    # service time (back to back): the read-backs and rewrites that reach the DRAM, as a read
    # and a write stream of the output's pattern; the first writes as a write stream
    o_back_b, fin_b = moved["burst"]
    cyc = cyc + o_back_b * (_interp(term.read_cpl, *g, lx_o, ly_o) + w_cpl_o) + fin_b * w_cpl_o
    # every request takes the controller a cycle to accept, served from the write buffer or
    # not (the read-back pattern at a span of one line: all hits)
    requests = lines_r - o_back + 2.0 * o_reads + first_w
    cyc = torch.maximum(cyc, requests * term.request_cycles)
    data = (lines_r * (term.read_pj_per_line + term.io_read_pj_per_line)
            + lines_w * (term.write_pj_per_line + term.io_write_pj_per_line))
    return DramParts(lines_r, lines_w, cyc * term.k_time, data * term.k_data,
                     acts * term.act_pj * term.k_act, acts)


def time_energy_pj(term: DramTerm, cycles: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(background, refresh) energy of a layer that lasts ``cycles`` accelerator cycles."""
    return (cycles * term.background_pj_per_cycle * term.k_background,
            cycles * term.refresh_pj_per_cycle * term.k_refresh)


# ---- re-fitting on engine measurements ------------------------------------------------------
@dataclass
class Observation:
    """One layer of one measured schedule: the model's unscaled parts and the engine's."""

    model: dict[str, float]
    engine: dict[str, float]


PARTS = ("time", "background", "refresh", "data", "act")


def refit(term: DramTerm, observations: Sequence[Observation]) -> DramTerm:
    """The term with each part scaled to the engine: k = sum(engine) / sum(model unscaled),
    over every layer of every schedule measured so far (parts the model or the engine never
    saw keep their scale)."""
    ks = {}
    for part in PARTS:
        m = sum(o.model.get(part, 0.0) for o in observations)
        e = sum(o.engine.get(part, 0.0) for o in observations)
        if m > 0 and e > 0:
            ks[f"k_{part}"] = e / m
    return replace(term, **ks)


def unscaled(term: DramTerm) -> DramTerm:
    return replace(term, k_time=1.0, k_background=1.0, k_refresh=1.0, k_data=1.0, k_act=1.0)


# ---- the model's figures of a discrete schedule ---------------------------------------------
def model_parts(net: Any, sched: Any, hw: DramAwareHardware) -> list[dict[str, float]]:
    """Per layer of a schedule, the DRAM term's parts before the refit scales (``time``:
    service cycles, ``background``, ``refresh``, ``data``, ``act`` in pJ, ``lines``) and
    ``cycles``, the layer's latency under ``hw``."""
    from optimizer.costmodel import schedule_network_costs
    term = unscaled(hw.dram)
    maps = [sched.mappings[layer.name] for layer in net.layers]
    nc, _ = schedule_network_costs(net, maps, sched.fused, hw)
    with torch.no_grad():
        dp = dram_traffic(term, nc.layer, nc.dram_reads, nc.dram_writes)
        bg, ref = time_energy_pj(term, nc.cycles)
    return [{"time": float(dp.service_cycles[i]), "background": float(bg[i]),
             "refresh": float(ref[i]), "data": float(dp.data_pj[i]), "act": float(dp.act_pj[i]),
             "lines": float(dp.lines_read[i] + dp.lines_write[i]), "cycles": float(nc.cycles[i])}
            for i in range(len(net.layers))]


def scaled(parts: dict[str, float], term: DramTerm) -> dict[str, float]:
    """Unscaled parts (:func:`model_parts`) with the term's refit scales applied."""
    k = term.scales()
    return {p: parts[p] * k[f"k_{p}"] for p in PARTS}


__all__ = ["Calibration", "DramTerm", "DramAwareHardware", "DramParts", "Observation",
           "calibrate", "config_hash", "default_cache_dir", "dram_traffic", "pattern_addresses",
           "model_parts", "refit", "scaled", "tensor_patterns", "time_energy_pj", "unscaled"]
