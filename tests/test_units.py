"""The one number formatter (gui/units.py, no Qt): SI prefixes, fixed significant digits,
one unit per quantity, cycles with their clock, one energy total (core + IO)."""
from __future__ import annotations

import math

import pytest

from gui import units as U


@pytest.mark.parametrize("value, unit, text", [
    (1.319e8, "pJ", "131.9 µJ"),             # not "1.319e8 pJ" nor "0.1319 GpJ"
    (1.73e8, "pJ", "173.0 µJ"),
    (70.7e3, "ns", "70.70 µs"),
    (999.96, "ns", "1.000 µs"),              # rounding carries into the next prefix
    (0.873, "%", "87.3 %"),
    (18.1, "GB/s", "18.10 GB/s"),
    (6.246e11, "pJ·cyc", "624.6 mJ·cyc"),
    (-5e-3, "s", "−5.000 ms"),
    (0.0, "pJ", "0 J"),
    (math.nan, "pJ", "n/a"),
    (113120, "cyc", "113\u202f120 cyc"),
])
def test_fmt(value, unit, text) -> None:
    assert U.fmt(value, unit) == text


def test_cycles_carry_their_clock() -> None:
    assert U.fmt_cycles(113120, 1.25) == "113\u202f120 cyc @ 800 MHz"
    assert U.fmt_time_and_cycles(113120, 0.625) == "70.70 µs (113\u202f120 cyc @ 1600 MHz)"
    assert U.cycles_to_seconds(1600, 0.625) == pytest.approx(1e-6)


def test_energy_total_is_core_plus_io() -> None:
    assert U.energy_total_pj({"total_energy_with_io": 5.0, "total_energy": 3.0}) == 5.0
    assert U.energy_total_pj({"total_energy": 3.0, "io_energy": 2.0}) == 5.0
    assert math.isnan(U.energy_total_pj({}))


def test_csv_headers_name_their_unit() -> None:
    assert U.csv_header("read_latency") == "read_latency_ns"
    assert U.csv_header("energy") == "energy_pJ"


def test_project_tree_summary_in_time() -> None:
    from gui.views.project_tree import run_summary_text
    s = {"num_cycles": 113120, "tCK_ns": 0.625, "row_hit_rate": 0.943,
         "average_read_latency": 416.0}
    assert run_summary_text(s) == "70.70 µs · row-hit rate 94.3 % · avg read latency 260.0 ns"
