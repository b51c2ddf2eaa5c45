"""One number formatter and one unit per quantity for every view, table, CSV header and report.

No Qt here (engine, studies and reports may import it).  ``fmt(value, unit)`` writes a value
with an SI prefix and a fixed number of significant digits::

    fmt(1.319e8, "pJ")        -> "131.9 µJ"      (energy is kept in J with a prefix)
    fmt(70.7e-6, "s")         -> "70.70 µs"
    fmt(0.873, "%")           -> "87.3 %"        (fractions 0..1 become percent)
    fmt(12.3, "GB/s")         -> "12.30 GB/s"    (bandwidth stays in GB/s: peaks are quoted so)
    fmt_cycles(113120, 1.25)  -> "113 120 cyc @ 800 MHz"

Times are what two memories can be compared in: a cycle count is only meaningful with its
clock, so every figure that is compared across runs goes through :func:`cycles_to_seconds`
first, and a cycle count is shown with its clock (:func:`fmt_cycles`).

:data:`QUANTITIES` is the one table of (label, unit) per quantity; CSV headers use
:func:`csv_header` (``"read_latency_ns"``) so a spreadsheet and the screen agree.
"""
from __future__ import annotations

import math
from typing import Any

SIG_DIGITS = 4
_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""),
             (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p"), (1e-15, "f"))

#: quantity -> (label, display unit).  The display unit is the SI base the formatter prefixes
#: ("s", "J", "J·s") or a fixed unit written as is ("GB/s", "%").
QUANTITIES: dict[str, tuple[str, str]] = {
    "time": ("Time", "s"),
    "read_latency": ("Read latency", "s"),
    "bandwidth": ("Bandwidth", "GB/s"),
    "row_hit_rate": ("Row hits", "%"),
    "energy": ("Energy (core + IO)", "J"),
    "io_energy": ("IO energy", "J"),
    "core_energy": ("Core energy", "J"),
    "power": ("Power", "W"),
    "edp": ("EDP", "J·s"),
    "utilisation": ("Utilisation", "%"),
}

#: CSV columns: one unit per quantity (the unit in the column name).
CSV_UNITS = {"time": "ns", "read_latency": "ns", "bandwidth": "GBps", "row_hit_rate": "pct",
             "energy": "pJ", "io_energy": "pJ", "core_energy": "pJ", "power": "mW",
             "edp": "pJ_s", "utilisation": "pct"}


def _nan(value: Any) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return True


def si(value: float, unit: str = "", digits: int = SIG_DIGITS) -> str:
    """``value`` (in the base unit) with an SI prefix and ``digits`` significant digits."""
    if _nan(value):
        return "n/a"
    v = float(value)
    if math.isinf(v):
        return ("−∞" if v < 0 else "∞") + (f" {unit}" if unit else "")
    if v == 0:
        return f"0 {unit}".strip()
    a = float(f"{abs(v):.{digits - 1}e}")          # rounded first: 999.96 -> 1.000e3
    i = next((k for k, (s, _p) in enumerate(_PREFIXES) if a >= s), len(_PREFIXES) - 1)
    scale, prefix = _PREFIXES[i]
    m = float(f"{v:.{digits - 1}e}") / scale
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(m)))))
    text = f"{m:.{decimals}f}".replace("-", "\u2212")
    return f"{text} {prefix}{unit}".rstrip()


def group(n: float) -> str:
    """An integer with thin-space thousands groups: ``113 120``."""
    if _nan(n):
        return "n/a"
    return f"{int(round(float(n))):,}".replace(",", "\u202f").replace("-", "−")


def percent(fraction: float, digits: int = 1) -> str:
    """A 0..1 fraction as percent: ``87.3 %``."""
    if _nan(fraction):
        return "n/a"
    return f"{100.0 * float(fraction):.{digits}f} %"


def fmt(value: float, unit: str, digits: int = SIG_DIGITS) -> str:
    """A value in the engine's units, written in the display unit of its kind.

    ``unit`` is the unit ``value`` is in: ``pJ`` (shown as J with a prefix), ``ns``/``s``
    (shown as s with a prefix), ``pJ·s`` (EDP, J·s), ``pJ·cyc`` (the optimiser's EDP in
    accelerator cycles, J·cyc), ``mW``, ``GB/s``, ``%`` (a 0..1
    fraction), ``cyc`` (grouped integer).
    """
    if _nan(value):
        return "n/a"
    v = float(value)
    if unit == "pJ":
        return si(v * 1e-12, "J", digits)
    if unit == "ns":
        return si(v * 1e-9, "s", digits)
    if unit == "s":
        return si(v, "s", digits)
    if unit in ("pJ·s", "pJ*s"):
        return si(v * 1e-12, "J·s", digits)
    if unit in ("pJ·cyc", "pJ*cycles", "pJ·cycles"):        # the optimiser's EDP
        return si(v * 1e-12, "J·cyc", digits)
    if unit == "mW":
        return si(v * 1e-3, "W", digits)
    if unit == "GB/s":
        decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(v))))) if v else 0
        return f"{v:.{decimals}f} GB/s"
    if unit == "%":
        return percent(v)
    if unit == "cyc":
        return f"{group(v)} cyc"
    return si(v, unit, digits)


def clock_mhz(tck_ns: float) -> float:
    """The clock of a cycle time in ns, in MHz."""
    return 1e3 / float(tck_ns) if tck_ns and not _nan(tck_ns) else math.nan


def cycles_to_seconds(cycles: float, tck_ns: float) -> float:
    """A cycle count of a clock with period ``tck_ns`` as seconds."""
    return float(cycles) * float(tck_ns) * 1e-9


def fmt_cycles(cycles: float, tck_ns: float | None = None) -> str:
    """A cycle count with its clock: ``113 120 cyc @ 800 MHz`` (no clock: ``113 120 cyc``)."""
    text = f"{group(cycles)} cyc"
    if tck_ns and not _nan(tck_ns):
        text += f" @ {clock_mhz(tck_ns):.0f} MHz"
    return text


def fmt_time_and_cycles(cycles: float, tck_ns: float) -> str:
    """``70.70 µs (113 120 cyc @ 1600 MHz)``: the time first, the cycles with their clock."""
    return f"{fmt(float(cycles) * float(tck_ns), 'ns')} ({fmt_cycles(cycles, tck_ns)})"


def csv_header(quantity: str) -> str:
    """The CSV column name of a quantity, with its one unit: ``read_latency_ns``."""
    return f"{quantity}_{CSV_UNITS[quantity]}"


def energy_total_pj(summary: dict[str, Any]) -> float:
    """The one energy total of a run: DRAM core + IO, in pJ.

    The engine's ``total_energy`` is the core energy alone (DRAMsim3's definition, kept for
    the statistic-for-statistic comparison); every view and export of the app shows the total
    with IO (``total_energy_with_io``), and IO as its own component.
    """
    for key in ("total_energy_with_io",):
        if key in summary:
            try:
                return float(summary[key])
            except (TypeError, ValueError):
                pass
    try:
        core = float(summary.get("core_energy", summary["total_energy"]))
    except (KeyError, TypeError, ValueError):
        return math.nan
    try:
        return core + float(summary.get("io_energy", 0.0))
    except (TypeError, ValueError):
        return core


__all__ = ["QUANTITIES", "CSV_UNITS", "si", "group", "percent", "fmt", "clock_mhz",
           "cycles_to_seconds", "fmt_cycles", "fmt_time_and_cycles", "csv_header",
           "energy_total_pj"]
