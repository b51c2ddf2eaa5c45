"""Input checks of the online simulator API (:class:`engine.simulator.Simulator`): lengths,
dtypes, ranges, monotonic cycles, and the bound on idle time one call may ask for (issue 15).

Idle time is skipped event by event: every refresh interval and every statistics epoch in a
gap costs work (about 1.5 us per refresh interval, 50 us per epoch on the development
machine, see benchmarks/RESULTS.md, issue 15), except where the simulator skips long idle
stretches in closed form (`Simulator._fast_forward`: whole refresh periods at once, not
when a command trace is written).  A gap that would take more than
:data:`MAX_GAP_REFRESHES` refresh intervals event by event or create more than
:data:`MAX_GAP_EPOCHS` epochs is refused with an error naming the request, instead of
running for minutes or hours.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from engine.errors import DiffMemError

#: Latest cycle a request may arrive at or the clock may be advanced to.
MAX_CYCLE = 2**62 - 1
#: Refresh intervals one idle gap may span (about 15 s of simulation).
MAX_GAP_REFRESHES = 10_000_000
#: Statistics epochs one idle gap may create (each becomes a record in the statistics).
MAX_GAP_EPOCHS = 200_000


class SimulatorInputError(DiffMemError, ValueError):
    """Bad arguments to the online API: names the argument, the request and the rule."""


def _int_array(name: str, value: Any, *, allow_bool: bool = False) -> np.ndarray:
    arr = np.asarray(value)
    if arr.ndim > 1:
        raise SimulatorInputError(f"{name}: expected a 1-D array, got shape {arr.shape}")
    arr = arr.reshape(-1)
    kind = arr.dtype.kind
    if kind == "b" and not allow_bool:
        raise SimulatorInputError(f"{name}: expected integers, got booleans")
    if kind == "f":
        if arr.size and (not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr))):
            raise SimulatorInputError(f"{name}: expected whole numbers, got non-integral or "
                                      f"non-finite floats")
        if arr.size and (arr.max() >= 2.0**63 or arr.min() < -2.0**63):
            raise SimulatorInputError(f"{name}: values beyond 64 bits")
        arr = arr.astype(np.int64)
    elif kind not in ("i", "u", "b"):
        raise SimulatorInputError(f"{name}: expected integers, got dtype {arr.dtype}")
    return arr


def check_feed(addr: Any, is_write: Any, cycle: Any, stream: Any, *, last_cycle: int,
               first_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Validated (addr uint64, is_write int64 0/1, cycle int64, stream int64 or None)."""
    a = _int_array("addr", addr)
    w_raw = np.asarray(is_write)
    if w_raw.dtype.kind not in ("b", "i", "u"):
        raise SimulatorInputError(f"is_write: expected booleans (or 0/1), got dtype "
                                  f"{w_raw.dtype}")
    w = _int_array("is_write", w_raw, allow_bool=True)
    c = _int_array("cycle", cycle)
    s = None if stream is None else _int_array("stream", stream)
    n = a.shape[0]
    lengths = {"addr": n, "is_write": w.shape[0], "cycle": c.shape[0]}
    if s is not None:
        lengths["stream"] = s.shape[0]
    if len(set(lengths.values())) > 1:
        raise SimulatorInputError("arrays differ in length: " + ", ".join(
            f"{k} {v}" for k, v in lengths.items()))
    if n == 0:
        return (a.astype(np.uint64, copy=False), w.astype(np.int64, copy=False),
                c.astype(np.int64, copy=False),
                None if s is None else s.astype(np.int64, copy=False))

    def first(mask: np.ndarray) -> int:
        return int(np.argmax(mask))

    if a.dtype.kind == "i" and a.min() < 0:
        k = first(a < 0)
        raise SimulatorInputError(f"request {first_id + k}: address {int(a[k])} is negative")
    if w.dtype.kind != "b" and (w.min() < 0 or w.max() > 1):
        k = first((w < 0) | (w > 1))
        raise SimulatorInputError(f"request {first_id + k}: is_write is {int(w[k])}: expected "
                                  f"0/1 or a boolean")
    if c.dtype.kind == "u" and c.max() > MAX_CYCLE:
        k = first(c > MAX_CYCLE)
        raise SimulatorInputError(f"request {first_id + k}: cycle {int(c[k])} is beyond 2^62")
    c = c.astype(np.int64, copy=False)
    if c.min() < 0:
        k = first(c < 0)
        raise SimulatorInputError(f"request {first_id + k}: cycle {int(c[k])} is negative")
    if c.max() > MAX_CYCLE:
        k = first(c > MAX_CYCLE)
        raise SimulatorInputError(f"request {first_id + k}: cycle {int(c[k])} is beyond 2^62")
    if c[0] < last_cycle:
        raise SimulatorInputError(f"request {first_id}: cycle {int(c[0])} is before the "
                                  f"previous request's cycle {last_cycle}: expected "
                                  f"non-decreasing cycles")
    if n > 1 and np.any(c[1:] < c[:-1]):
        down = np.flatnonzero(c[1:] < c[:-1])
        if down.size:
            k = int(down[0]) + 1
            raise SimulatorInputError(f"request {first_id + k}: cycle {int(c[k])} is before "
                                      f"the previous request's cycle {int(c[k - 1])}: expected "
                                      f"non-decreasing cycles")
    if s is not None and (s.min() < 0 or s.max() > 65535):
        k = first((s < 0) | (s > 65535))
        raise SimulatorInputError(f"request {first_id + k}: stream {int(s[k])} is out of range "
                                  f"0..65535")
    return (a.astype(np.uint64, copy=False), w.astype(np.int64, copy=False), c,
            None if s is None else s.astype(np.int64, copy=False))


def check_gaps(cycles: np.ndarray, start: int, *, first_id: int, ref_interval: int,
               epoch_len: int, refresh_limit: bool = True, why_refresh: str = "") -> None:
    """Refuse an idle gap (from ``start``, then between consecutive requests) that would
    take more than MAX_GAP_REFRESHES refresh intervals (unless ``refresh_limit`` is False:
    the simulator skips idle refresh in closed form) or MAX_GAP_EPOCHS epochs."""
    if cycles.shape[0] == 0:
        return
    # the span of the whole chunk bounds every gap in it: look closer only when it is long
    limit = min(MAX_GAP_REFRESHES * max(ref_interval, 1) if refresh_limit else 2**63,
                MAX_GAP_EPOCHS * epoch_len if epoch_len > 0 else 2**63)
    if int(cycles[-1]) - start <= limit:
        return
    prev = np.concatenate(([start], cycles[:-1]))
    gaps = cycles - prev
    k = int(np.argmax(gaps))
    check_span(int(prev[k]), int(cycles[k]), ref_interval=ref_interval, epoch_len=epoch_len,
               what=f"request {first_id + k} (counting from 0) at cycle {int(cycles[k])}",
               refresh_limit=refresh_limit, why_refresh=why_refresh)


def check_span(start: int, end: int, *, ref_interval: int, epoch_len: int, what: str,
               refresh_limit: bool = True, why_refresh: str = "") -> None:
    """Refuse an idle span too long to simulate (see check_gaps); ``why_refresh`` says why
    its refreshes are simulated one by one rather than skipped in closed form."""
    gap = end - start
    if gap <= 0:
        return
    refreshes = gap // max(ref_interval, 1)
    if refresh_limit and refreshes > MAX_GAP_REFRESHES:
        raise SimulatorInputError(
            f"{what}: an idle gap of {gap} cycles spans {refreshes} refresh intervals; at most "
            f"{MAX_GAP_REFRESHES} can be simulated in one gap (about 15 s)"
            + (f" when {why_refresh}" if why_refresh else "") + ": shorten the idle time in "
            "the trace")
    if epoch_len > 0 and gap // epoch_len > MAX_GAP_EPOCHS:
        raise SimulatorInputError(
            f"{what}: an idle gap of {gap} cycles would make {gap // epoch_len} statistics "
            f"epochs of {epoch_len} cycles; at most {MAX_GAP_EPOCHS}: use a longer epoch "
            f"(--epoch) or shorten the idle time in the trace")
