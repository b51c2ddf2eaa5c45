"""Baseline search methods on the shared search space: random search, a genetic algorithm,
Bayesian optimisation (Optuna) and DOSA-style gradient search over the mapping only.

Each module exposes ``run(space, budget, seed=0, progress=None, cancel=None) -> SearchResult``
(see :mod:`optimizer.search`); :mod:`optimizer.methods` registers them.
"""
