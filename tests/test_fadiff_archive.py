"""FADiff's archive of the layer mappings its steps scored (issue 13): a Pareto front per
shape group, and the re-assembly of the best schedule from it, which keeps identical layers
identical, the fused set unchanged and never makes the EDP worse."""
from __future__ import annotations

import numpy as np
import pytest

from optimizer import fadiff
from optimizer.hardware import load_hardware
from optimizer.search import Budget, score
from optimizer.space import SearchSpace
from optimizer.workload import network_from_json

CONV = {"K": 16, "C": 16, "P": 8, "Q": 8, "R": 3, "S": 3, "N": 1}
NET = {"name": "chain", "layers": [
    {"name": "a", "type": "conv", "dims": {**CONV, "C": 8}, "producer": ["input"]},
    {"name": "b", "type": "conv", "dims": CONV, "producer": ["a"]},
    {"name": "c", "type": "conv", "dims": CONV, "producer": ["b"]},
    {"name": "d", "type": "conv", "dims": CONV, "producer": ["c"]}]}


@pytest.fixture(scope="module")
def space() -> SearchSpace:
    import torch
    torch.set_num_threads(1)
    return SearchSpace.build(network_from_json(NET, "chain"), load_hardware("small"))


def test_front_keeps_only_non_dominated_points(space: SearchSpace) -> None:
    arch = fadiff._Archive(space, space.shape_groups(), cap=8)
    rows = np.arange(5 * 8).reshape(5, 8)
    # (cycles, energy): (1, 5) (2, 2) (5, 1) are the front; (3, 3) and (2, 6) are dominated
    cost = np.array([[1.0, 5.0], [2.0, 2.0], [3.0, 3.0], [5.0, 1.0], [2.0, 6.0]])
    arch._merge(0, rows, cost)
    assert sorted(map(tuple, arch.cost[0])) == [(1, 5), (2, 2), (5, 1)]
    # a later point that dominates one of them replaces it; a covered one is dropped
    arch._merge(0, rows[:2], np.array([[1.5, 1.5], [6.0, 6.0]]))
    assert sorted(map(tuple, arch.cost[0])) == [(1, 5), (1.5, 1.5), (5, 1)]
    assert {tuple(r) for r in arch.rows[0]} == {tuple(rows[0]), tuple(rows[3])}


def test_assembly_from_the_scored_samples(space: SearchSpace) -> None:
    """Runs with and without the archive: each result valid, identical layers identical, the
    fused set sigma's decision; the assembled schedule (when it moved) scores below the best
    candidate the steps had found."""
    for archive in (0, 24):
        res = fadiff.run(space, Budget(evaluations=6000), 1,
                         settings=fadiff.FADiffSettings(archive=archive))
        assert res.result.valid
        m = res.schedule.to_json()["layers"]
        assert m["b"] == m["c"] == m["d"]
        assert [space.edge_names(k) for k in res.schedule.meta["sigma_hard_edges"]] == \
            list(res.result.fused)
        gain = res.schedule.meta["candidates"].get("archive_gain")
        if archive == 0:
            assert gain is None
        elif gain is not None:
            assert gain > 0


def test_assemble_never_raises_the_edp(space: SearchSpace) -> None:
    rng = np.random.default_rng(0)
    arch = fadiff._Archive(space, space.shape_groups(), cap=16)
    from optimizer.space import repair
    base = space.random_choices(rng)
    for g in space.shape_groups():          # one mapping per group, as FADiff's are
        base[g] = base[g[0]]
    base = repair(space, base)
    if any(len({tuple(base[i]) for i in g}) > 1 for g in space.shape_groups()):
        pytest.skip("the repair split a shape group")
    # the front of each group: a few repaired random mappings, scored exactly
    for gi, g in enumerate(space.shape_groups()):
        for _ in range(6):
            cand = base.copy()
            cand[g] = repair(space, space.random_choices(rng))[g[0]]
            cand = repair(space, cand)
            cand[g] = cand[g[0]]
            if score(space, cand, [])[1] > 0:
                continue
            import torch
            from optimizer.costmodel import combine, layer_costs
            with torch.no_grad():
                nc = combine(layer_costs(space.batch, space.tensors(cand)), space.batch,
                             space.hw, space.graph, None)
            arch._merge(gi, cand[g[0]][None], np.array([[float(nc.cycles[g].sum()),
                                                         float(nc.energy[g].sum())]]))
    out = arch.assemble(base, [])
    before = score(space, base, [])[0]
    if out is not None:
        edp, viol = score(space, out, [])
        assert viol == 0 and edp < before
        groups = space.shape_groups()
        assert all(len({tuple(out[i]) for i in g}) == 1 for g in groups)
