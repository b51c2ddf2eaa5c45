"""The event loop's compiled variants (engine.kernel.VARIANTS): a memory runs on the variant
for its scheduler and page policy, which gives exactly what the general kernel gives (every
state array and statistic), and a configuration vector changed after the kernel was chosen
is refused, not simulated with another variant's policies."""
from __future__ import annotations

import numpy as np
import pytest

from engine import kernel as K
from engine import kernel_aot
from engine.config import load_config
from engine.errors import SimulationError
from engine.simulator import SimOptions, Simulator

DRAMSIM3 = K.VARIANTS.index("dramsim3")
ONE_CH = K.VARIANTS.index("dramsim3_1ch")
CLOSE = {"row_buf_policy": "CLOSE_PAGE", "page_policy": "close"}


def _requests(cfg, n: int = 4000, seed: int = 3):
    rng = np.random.default_rng(seed)
    addr = (rng.integers(0, cfg.capacity_bytes // 64, n) * 64).astype(np.uint64)
    addr[: n // 3] = np.arange(n // 3, dtype=np.uint64) * 64      # a stream, then random
    isw = rng.random(n) < 0.3
    cyc = np.sort(rng.integers(0, 3 * n, n)).astype(np.int64)
    return addr, isw, cyc


def _run(cfg, opts: SimOptions, general: bool) -> tuple[dict, dict]:
    sim = Simulator(cfg, opts)
    if general:
        consts, state = sim._consts_t, sim._state_t

        def run(addr, isw, cyc, src, rid, final, stop, horizon):
            return K.run_kernel(consts, state, (addr, isw, cyc, src, rid), final, stop,
                                horizon)
        sim._runner = run
    sim.feed(*_requests(cfg), final=True)
    arrays = {k: np.array(v) for k, v in sim.s.items()}
    summary = dict(sim.stats().summary)
    summary.pop("wall_seconds", None)
    sim.close()
    return arrays, summary


@pytest.mark.parametrize("preset,changes,variant", [
    ("DDR4-3200", {}, ONE_CH),
    ("HBM2", {}, DRAMSIM3),
    ("DDR4-3200", CLOSE, ONE_CH),
    ("HBM2", CLOSE, DRAMSIM3),
    ("DDR4-3200", {"channels": 2}, DRAMSIM3),
    ("HBM2", {"channels": 1}, ONE_CH),
    ("DDR4-3200", {"scheduler": "frfcfs"}, 0),
    ("HBM2", {"scheduler": "parbs", "page_policy": "open_adaptive"}, 0),
    ("DDR4-3200", {"page_policy": "early_precharge", "early_precharge_conflicts": 2}, 0),
])
def test_each_memory_runs_on_its_variant_as_on_the_general_kernel(preset, changes, variant,
                                                                  monkeypatch):
    monkeypatch.setenv(kernel_aot.MODE_ENV, "jit")
    cfg = load_config(preset).replace(**changes)
    sim = Simulator(cfg)
    assert K.kernel_variant(sim.P) == variant
    sim.close()
    for opts in (SimOptions(epoch=1500), SimOptions(intake="per-channel",
                                                    track_completions=True)):
        (a_var, s_var), (a_gen, s_gen) = _run(cfg, opts, False), _run(cfg, opts, True)
        assert s_var["num_reads_done"] + s_var["num_writes_done"] == 4000
        assert s_var == s_gen
        assert [k for k in a_var if not np.array_equal(a_var[k], a_gen[k])] == []


def test_dynamic_bank_grouping_uses_the_general_kernel():
    """DRAMsim3's scheduler reordered by bank group (SCHED_DRAMSIM3_RR) is not the
    DRAMsim3/open-page variant's scheduler."""
    sim = Simulator(load_config("DDR4-3200").replace(dynamic_bank_grouping=True))
    assert int(sim.P[K.P_SCHED]) == K.SCHED_DRAMSIM3_RR
    assert K.kernel_variant(sim.P) == 0
    sim.close()


@pytest.mark.parametrize("mode", ["jit", "auto"])
def test_a_configuration_changed_after_the_kernel_was_chosen_is_refused(mode, monkeypatch):
    monkeypatch.setenv(kernel_aot.MODE_ENV, mode)
    kernel_aot._loaded.clear()
    try:
        cfg = load_config("DDR4-3200")
        sim = Simulator(cfg)
        sim.P[K.P_SCHED] = K.SCHED_FRFCFS        # behind the chosen kernel's back
        with pytest.raises(SimulationError, match="variant"):
            sim.feed(*_requests(cfg, 100), final=True)
        sim.close()
    finally:
        kernel_aot._loaded.clear()


def test_each_variant_has_a_name_of_its_own():
    """numba names a kernel's machine-code symbol and cache file after its __qualname__; two
    closures of one function compiled by two processes (each the first function compiled
    there) got one symbol name, and the library build, which links both, failed with
    "multiple definition"."""
    names = [k.py_func.__qualname__ for k in K.KERNELS]
    assert len(set(names)) == len(K.KERNELS)
    assert all(n.startswith("run_kernel") for n in names)
