"""The kernel's derived configuration slots (engine.kernel.fill_derived): a bank's rank and
bank group come from shifts when banks and banks-per-group are powers of two, from divisions
otherwise. Both paths must give the same simulation: the same trace with the shift path
turned off (P_POW2 = 0) gives identical statistics, on one-channel DDR4 and 8-channel HBM2."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine import kernel as K
from engine.config import load_config
from engine.kernel_aot import comparable
from engine.simulator import SimOptions, simulate_trace

DEMO = Path(__file__).resolve().parents[1] / "resources" / "traces" / "demo.trace"


def test_fill_derived_values() -> None:
    P = np.zeros(K.NP, np.int64)
    P[K.P_RANKS], P[K.P_BANKS], P[K.P_BPG] = 2, 16, 4
    K.fill_derived(P)
    assert (P[K.P_NB], P[K.P_TBASE], P[K.P_POW2], P[K.P_BANK_SH], P[K.P_BPG_SH]) == \
        (32, 32 + 8, 1, 4, 2)
    P[K.P_BANKS], P[K.P_BPG] = 12, 3            # not powers of two: divisions
    K.fill_derived(P)
    assert (P[K.P_NB], P[K.P_TBASE], P[K.P_POW2]) == (24, 24 + 8, 0)


@pytest.mark.parametrize("preset", ["DDR4-3200", "HBM2"])
def test_shift_and_division_paths_agree(preset: str, monkeypatch) -> None:
    cfg = load_config(preset)
    shifted = comparable(simulate_trace(cfg, DEMO, SimOptions()))
    real = K.fill_derived

    def divisions_only(P: np.ndarray) -> None:
        real(P)
        P[K.P_POW2] = 0

    monkeypatch.setattr(K, "fill_derived", divisions_only)
    divided = comparable(simulate_trace(cfg, DEMO, SimOptions()))
    assert shifted == divided
