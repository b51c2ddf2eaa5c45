"""One co-simulation job, as ``python main.py cosim`` runs it: optimise, close the loop through
the engine, optionally validate the DRAM term on K schedules, and return the result document
(what ``cosim --out`` writes).  The command line only parses its flags and prints this."""
from __future__ import annotations

import time
from typing import Any, Callable

from optimizer import cosim
from optimizer.search import Budget


def run_cosim_job(net: Any, hw: Any, memory: Any, *, method: str, seed: int, budget: Budget,
                  iterations: int, layout: str, placement: str, acc_ghz: float,
                  cache_dir: Any = None, validate: int = 0,
                  progress: Callable[[str], None] | None = None,
                  on_partial: Callable[[dict[str, Any]], None] | None = None
                  ) -> tuple[dict[str, Any], list]:
    """Run the closed loop (``iterations`` re-optimisations with ``method`` on ``budget``) and,
    with ``validate`` K > 0, score K diverse schedules both ways.  Returns the JSON document
    (network, hardware, memory, settings, ``summary``, ``iterations``) and the loop's
    iterations (for printing). ``on_partial(document so far)`` after each iteration
    (``"complete": false``: what a Ctrl-C or a failure later would keep)."""
    from optimizer.methods import optimize as run_method

    def optimize(network: Any, hardware: Any) -> Any:
        cpu = time.process_time()
        result, _ = run_method(network, hardware, method, budget, seed)
        result.schedule.meta.update(evaluations=result.evaluations,
                                    cpu_s=round(time.process_time() - cpu, 2))
        return result.schedule, result.result

    def on_layer(layer: str) -> None:
        if progress is not None:
            progress(f"simulating {layer}")

    def document(iters: list, summary: dict[str, Any], complete: bool) -> dict[str, Any]:
        return {"complete": complete,
                "network": net.name, "hardware": hw.name, "memory": memory.name,
                "layout": layout, "placement": placement, "method": method,
                "seed": seed, "acc_ghz": acc_ghz, "summary": summary,
                "iterations": [{"iteration": it.iteration, "hardware": it.hardware,
                                "model_edp": it.model_edp,
                                "fused": [list(e) for e in it.fused],
                                "kept": it.kept, "cosim": it.cosim.to_json(),
                                "schedule": it.schedule}
                               for it in iters]}

    def partial(iters: list) -> None:
        if on_partial is not None:
            on_partial(document(iters, cosim.summary(iters), complete=False))

    iters = cosim.closed_loop(net, hw, memory, optimize=optimize, iterations=iterations,
                              layout=layout, placement=placement, acc_ghz=acc_ghz,
                              cache_dir=cache_dir, progress=on_layer, on_iteration=partial)
    summary = cosim.summary(iters)
    if validate:
        from optimizer import validation
        from optimizer.space import SearchSpace
        loop = [cosim.kept(iters).sched] + [it.sched for it in iters if not it.kept]
        picks = validation.candidates(SearchSpace.build(net, hw), loop, validate, seed=seed)
        summary["validation"] = validation.validate(
            net, hw, memory, iters[-1].refit_hw, picks, layout=layout, placement=placement,
            acc_ghz=acc_ghz, measured=[(it.sched, it.cosim) for it in iters],
            progress=progress or (lambda m: None))
    return document(iters, summary, complete=True), iters
