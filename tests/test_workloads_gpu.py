"""GPU-like traces: thread-block request order, page placement, address hash, no folding."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("h5py")

from engine.config import load_config  # noqa: E402
from engine.errors import DiffMemError  # noqa: E402
from engine.workloads.allocator import place  # noqa: E402
from engine.workloads.capture import PATTERN_ID, PHASE_ID, Access, OpRecord  # noqa: E402
from engine.workloads.expand import expand_op  # noqa: E402
from engine.workloads.gpu_order import GpuModel  # noqa: E402
from engine.workloads.placement import (GpuAddressHash, PlacementError,  # noqa: E402
                                        page_table)


def _dense(storage: int, shape: tuple[int, ...], is_write: bool) -> Access:
    n = int(np.prod(shape)) * 4
    stride = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
    return Access(storage, 0, n, (), (), shape, "float32", is_write, stride)


def test_gemm_request_order_of_two_concurrent_blocks() -> None:
    # C[4,16] = A[4,16] @ B[16,16], fp32; tiles BM=2 x BN=16 x BK=8: two blocks (rows 0-1 and
    # 2-3 of C), both resident (one SM, two blocks per SM).  A row = one 64 B line, B row =
    # one line, C row = one line.  A at line 0, B at line 64, C at line 128.
    op = OpRecord(0, "aten.mm.default", PHASE_ID["forward"], PATTERN_ID["tiled"], 0.0,
                  [_dense(0, (4, 16), False), _dense(1, (16, 16), False),
                   _dense(2, (4, 16), True)])
    base = np.array([0, 64 * 64, 128 * 64], np.int64)
    gpu = GpuModel(sms=1, gemm_blocks_per_sm=2, gemm_bm=2, gemm_bn=16, gemm_bk_fp32=8)
    parts = list(expand_op(op, base, np.zeros(3, np.uint8), gpu=gpu))
    lines = np.concatenate([p.lines for p in parts]).tolist()
    writes = np.concatenate([p.is_write for p in parts]).tolist()
    expected = (
        # k-step 0, load 0: block 0 reads A row 0 and B row 0; block 1 reads A row 2
        [0, 64, 2]
        # load 1: block 0 reads A row 1 and B row 1; block 1 reads A row 3
        + [1, 65, 3]
        # loads 2-7 of k-step 0: the rest of B's first 8 rows (A rows are whole lines)
        + list(range(66, 72))
        # k-step 1: B rows 8-15 (first read by block 0; block 1 re-reads them on chip)
        + list(range(72, 80))
        # after the k-loop: each block writes its C tile, row by row, interleaved
        + [128, 130, 129, 131])
    assert lines == expected
    assert writes == [False] * 20 + [True] * 4


def test_elementwise_blocks_interleave() -> None:
    # y = x + 1 over 4 blocks of 2 lines each (32 fp32 elements per block), all resident:
    # every block loads its first line, then every block its second, then the stores
    n = 128
    op = OpRecord(0, "aten.add.Tensor", PHASE_ID["forward"], PATTERN_ID["stream"], 0.0,
                  [_dense(0, (n,), False), _dense(1, (n,), True)])
    base = np.array([0, 64 * 64], np.int64)
    gpu = GpuModel(sms=1, elementwise_blocks_per_sm=4, elementwise_block=32)
    lines = np.concatenate([p.lines for p in expand_op(op, base, np.zeros(2, np.uint8),
                                                        gpu=gpu)]).tolist()
    assert lines == [0, 2, 4, 6, 1, 3, 5, 7, 64, 66, 68, 70, 65, 67, 69, 71]


def test_foreach_kernel_follows_multi_tensor_apply() -> None:
    # _foreach_mul_(list of two tensors): 64 and 32 fp32 elements; chunks of 32 elements,
    # loop steps of 16, two blocks per launch: tensor 0 is blocks 0-1 (launch 0), tensor 1
    # block 2 (launch 1); every block loads a step of its chunk, then stores it
    op = OpRecord(0, "aten._foreach_mul_.Scalar", PHASE_ID["optimizer"],
                  PATTERN_ID["optimizer"], 0.0,
                  [_dense(0, (64,), False), _dense(1, (32,), False),
                   _dense(0, (64,), True), _dense(1, (32,), True)])
    base = np.array([0, 64 * 64], np.int64)
    gpu = GpuModel(foreach_chunk=32, foreach_step=16, foreach_blocks_per_launch=2)
    parts = list(expand_op(op, base, np.zeros(2, np.uint8), gpu=gpu))
    lines = np.concatenate([p.lines for p in parts]).tolist()
    writes = np.concatenate([p.is_write for p in parts]).tolist()
    assert lines == [0, 2, 0, 2, 1, 3, 1, 3, 64, 64, 65, 65]
    assert writes == [False, False, True, True] * 2 + [False, True] * 2


def test_gpu_order_is_a_permutation_of_the_sequential_lines() -> None:
    from engine.workloads.capture import capture_step
    from engine.workloads.registry import build
    _, _, model, inputs = build("resnet50", batch=2, size="tiny")
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], foreach=False)
    cap = capture_step(model, lambda m: m(*inputs), opt, torch.device("meta"))
    placement = place(cap)
    roles = np.array([s.role for s in cap.storages], np.uint8)
    names = set()
    for op in cap.ops[::7]:
        seq = [p for p in expand_op(op, placement.base, roles)]
        gpu = [p for p in expand_op(op, placement.base, roles, gpu=GpuModel())]
        if not seq:
            assert not gpu
            continue
        a = np.concatenate([p.lines for p in seq])
        b = np.concatenate([p.lines for p in gpu])
        wa = np.concatenate([p.is_write for p in seq])
        wb = np.concatenate([p.is_write for p in gpu])
        assert sorted(a[wa].tolist()) == sorted(b[wb].tolist()), op.name
        assert sorted(a[~wa].tolist()) == sorted(b[~wb].tolist()), op.name
        names.add(op.name.split(".")[1])
    assert {"convolution", "convolution_backward"} <= names


def test_placement_never_maps_two_live_tensors_to_one_frame() -> None:
    from engine.workloads.capture import capture_step
    from engine.workloads.registry import build
    _, _, model, inputs = build("ddpm", batch=2, size="tiny")
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], foreach=False)
    cap = capture_step(model, lambda m: m(*inputs), opt, torch.device("meta"))
    placement = place(cap)
    # a memory barely larger than the footprint, so a careless draw would collide
    cap_bytes = (placement.peak_bytes // (2 << 20) + 3) * (2 << 20)
    pt = page_table(placement.peak_bytes, cap_bytes, seed=5)
    assert np.unique(pt.frames).shape[0] == pt.frames.shape[0]        # distinct frames
    assert pt.frames.max() < cap_bytes // (2 << 20) and not pt.folded
    assert not np.array_equal(pt.frames, np.arange(pt.frames.shape[0]))
    lines = {}
    for s in cap.storages:
        if s.first_op >= 0 and s.nbytes > 0:
            first = int(placement.base[s.index]) // 64
            v = np.arange(first, first + -(-s.nbytes // 64), dtype=np.int64)
            lines[s.index] = pt.translate(v, 64)
    checked = 0
    for i in range(0, len(cap.ops), max(1, len(cap.ops) // 60)):
        live = [k for k, s in enumerate(cap.storages) if k in lines
                and (s.persistent or s.first_op <= i <= s.last_op)]
        cat = np.concatenate([lines[k] for k in live])
        assert np.unique(cat).shape[0] == cat.shape[0], i            # no physical overlap
        checked += 1
    assert checked > 30


def test_no_folding_without_the_flag(tmp_path: Path) -> None:
    from engine.workloads.generate import TraceSpec, generate_trace
    with pytest.raises(PlacementError) as e:
        page_table(20 * 10**9, 8 * 2**30, seed=0, memory_name="HBM2")
    msg = str(e.value)
    assert "20 GB" in msg and "8.59 GB" in msg and "--fold-addresses" in msg
    pt = page_table(20 * 10**9, 8 * 2**30, seed=0, fold=True)
    assert pt.folded and pt.frames.max() < 4096
    # the whole pipeline: a tiny model at a large batch (about 0.18 GB) does not fit in a 128 MiB memory
    small = tmp_path / "small.toml"
    text = (Path("resources/presets/dram/DDR4-3200.toml")).read_text()
    text = text.replace('name = "DDR4-3200"', 'name = "tiny-ddr4"').replace(
        "rows = 65536 ", "rows = 1024  ").replace("channel_size = 16384", "channel_size = 128  ")
    small.write_text(text)
    cfg = load_config(small)
    assert cfg.capacity_bytes == 128 * 2**20
    spec = dict(workload="ddpm", batch=160, size="tiny", memory=str(small), cache_bytes=0,
                sample=0.01)
    with pytest.raises(DiffMemError, match=f"{cfg.capacity_bytes / 1e9:.3g} GB"):
        generate_trace(TraceSpec(**spec), tmp_path / "x.h5")
    assert not (tmp_path / "x.h5").exists()
    s = generate_trace(TraceSpec(**spec, fold_addresses=True), tmp_path / "y.h5")
    assert s["addresses_folded"] and s["placement"]["fold_addresses"]


@pytest.mark.parametrize("preset", ["DDR4-3200", "DDR4-3200-8ch", "HBM2"])
def test_gpu_hash_is_a_bijection_that_spreads_channels_and_banks(preset: str) -> None:
    cfg = load_config(preset)
    h = GpuAddressHash(cfg)
    rng = np.random.default_rng(0)
    a = np.unique(rng.integers(0, cfg.capacity_bytes // 64, 200_000)).astype(np.uint64) * 64
    b = h.apply(a)
    assert np.unique(b).shape[0] == a.shape[0] and int(b.max()) < cfg.capacity_bytes
    seq = h.apply(np.arange(4096, dtype=np.uint64) * np.uint64(64)).astype(np.int64) >> 6
    pos, w = cfg.field_positions, cfg.field_widths
    bank = ((seq >> pos["bg"]) & ((1 << w["bg"]) - 1)) * 4 + ((seq >> pos["ba"]) & 3)
    chan = (seq >> pos["ch"]) & ((1 << w["ch"]) - 1)
    # 256 KiB of consecutive lines touch every channel and every bank (group) it has
    assert np.unique(chan).shape[0] == cfg.channels
    assert np.unique(bank).shape[0] == 16


def test_sectored_cache_fetches_only_missing_sectors_and_flushes_lru_first() -> None:
    from engine.workloads.cache import CacheFilter
    c = CacheFilter(size_bytes=128 * 2, ways=2)            # one set of two 128 B lines
    lines = np.array([0, 1, 2, 0, 4, 0], np.int64)
    w = np.array([0, 0, 1, 0, 0, 0], bool)
    f = c.filter(lines, w, np.zeros(6, np.uint8), 0, 0)
    # 0: miss (fetch half 0 only); 1: same line, sector miss (fetch half 1); 2: write,
    # allocated without a fetch; 0: hit; 4: evicts the LRU line (holding dirty 2);
    # 0: hit
    assert f.lines.tolist() == [0, 1, 2, 4]
    assert f.is_write.tolist() == [False, False, True, False]
    assert c.last_counts.tolist() == [2, 1]
    assert c.last_outcome.tolist() == [0, 2, 0, 1, 0, 1]
    c = CacheFilter(size_bytes=128 * 4, ways=4)
    c.filter(np.array([9, 2, 5, 2], np.int64), np.ones(4, bool), np.zeros(4, np.uint8), 0, 0)
    # dirty lines 9 (tag 4), 2 (tag 1), 5 (tag 2): LRU first: tag 4, tag 2, tag 1
    assert c.flush(3, 0).lines.tolist() == [9, 5, 2]


def test_stratified_estimator_is_unbiased_on_a_synthetic_step() -> None:
    from engine.workloads.sampling import kept_windows, stratum_estimate, systematic
    rng = np.random.default_rng(3)
    # a synthetic step: three strata of 30, 12 and 7 windows of 100 issued lines each, with
    # very uneven DRAM traffic per window (a cache that sometimes hits, sometimes not)
    n_windows = [30, 12, 7]
    ys = [rng.integers(0, 100, n).astype(float) * rng.integers(0, 2, n) for n in n_windows]
    picks = [10, 4, 3]
    # the random start, integrated exactly: the kept set only changes at multiples of 1/21
    grid = (np.arange(2100) + 0.5) / 2100
    for y, n, pick in zip(ys, n_windows, picks):
        x = np.full(n, 100.0)
        est = [stratum_estimate(y[systematic(n, pick, u)], x[systematic(n, pick, u)],
                                100.0 * n, n)[0] for u in grid]
        assert np.mean(est) == pytest.approx(y.sum(), rel=1e-9)
        # and the estimate is not trivially exact: it varies with the start
        assert np.std(est) > 0.01 * y.sum()
    # every window of a stratum is kept with probability pick / n
    hits = np.zeros(30)
    for u in grid:
        hits[systematic(30, 10, u)] += 1
    assert np.allclose(hits / grid.shape[0], 10 / 30)
    # kept_windows: every stratum keeps >= 10 windows (or all it has) at a 1 % sample
    lines = np.array([50_000, 400, 80_000, 3_000, 900], np.int64)
    strata = np.array([0, 1, 0, 2, 3])
    # (the allocation alone: windows of any length; MIN_WINDOW_LINES would make these
    # short strata one window each)
    w = kept_windows(lines, strata, windows=4000, sample=0.01, seed=0, min_lines=1)
    assert all(k >= 10 for k in w.n_kept) and np.all(w.lo[1:] >= w.hi[:-1])
    frac = (w.hi - w.lo).sum() / lines.sum()
    assert 0.01 <= frac < 0.05


def test_cli_trace_flags_reach_the_summary(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    import json

    import main
    out, js = tmp_path / "t.h5", tmp_path / "s.json"
    rc = main.main(["trace", "--workload", "resnet50", "--batch", "2", "--size", "tiny",
                    "--order", "sequential", "--address-hash", "none", "--pages", "identity",
                    "--optimizer", "single", "--placement-seed", "4", "--memory", "DDR4-3200",
                    "--out", str(out), "--summary", str(js)])
    assert rc == 0
    printed = capsys.readouterr().out
    s = json.loads(js.read_text())
    assert (s["order"], s["optimizer"]) == ("sequential", "single")
    pl = s["placement"]
    assert (pl["pages"], pl["address_hash"], pl["placement_seed"]) == ("identity", "none", 4)
    assert not pl["fold_addresses"] and not s["addresses_folded"]
    assert "request order sequential" in printed and "L2 hit rate" in printed
    assert set(s["compute_time_ns_by_utilisation"]) == {"0.3", "0.4", "0.5", "0.6", "0.7"}


def _trace_cli(tmp_path: Path, workload: str, *flags: str) -> dict:
    """``main.py trace`` on a tiny ``workload`` at batch 2 (DDR4-3200) with ``flags``: the
    summary JSON; the trace is ``tmp_path / "t.h5"``."""
    import json

    import main
    js = tmp_path / "s.json"
    assert main.main(["trace", "--workload", workload, "--batch", "2", "--size", "tiny",
                      *flags, "--memory", "DDR4-3200", "--out", str(tmp_path / "t.h5"),
                      "--summary", str(js)]) == 0
    return json.loads(js.read_text())


def test_cli_trace_fused_adamw(tmp_path: Path) -> None:
    assert _trace_cli(tmp_path, "resnet50", "--optimizer", "fused")["optimizer"] == "fused"


def test_cli_trace_flash_attention(tmp_path: Path) -> None:
    import h5py
    assert _trace_cli(tmp_path, "ddpm", "--attention", "flash")["attention"] == "flash"
    with h5py.File(tmp_path / "t.h5", "r") as h5:
        names = {n.decode() for n in h5["ops"]["name"][:]}
    assert "aten._scaled_dot_product_efficient_attention.default" in names, sorted(names)
    assert "aten._scaled_dot_product_efficient_attention_backward.default" in names


def _lines_of(op: OpRecord, base: np.ndarray, gpu: GpuModel) -> tuple[list[int], list[bool]]:
    parts = list(expand_op(op, base, np.zeros(len(base), np.uint8), gpu=gpu))
    return (np.concatenate([p.lines for p in parts]).tolist(),
            np.concatenate([p.is_write for p in parts]).tolist())


def test_fused_attention_forward_order_of_two_concurrent_query_blocks() -> None:
    # _scaled_dot_product_efficient_attention on Q, K, V [1, 1, 128, 16] fp32: head dim 16 ->
    # the 64x64 kernel (64 queries x 64 keys per block), grid 2 query blocks x 1 head x 1
    # batch, both resident (one SM, 3 blocks per SM from the launch bounds).  A token row of
    # 16 fp32 is one 64 B line.  Q at line 0, K at 256, V at 512, O at 768, logsumexp at 1024.
    op = OpRecord(0, "aten._scaled_dot_product_efficient_attention.default",
                  PHASE_ID["attention"], PATTERN_ID["tiled"], 0.0,
                  [_dense(0, (1, 1, 128, 16), False), _dense(1, (1, 1, 128, 16), False),
                   _dense(2, (1, 1, 128, 16), False), _dense(3, (1, 1, 128, 16), True),
                   _dense(4, (1, 1, 128), True)])
    base = np.array([0, 256, 512, 768, 1024], np.int64) * 64
    lines, writes = _lines_of(op, base, GpuModel(sms=1))
    expected = []
    # key step 0, Q.K^T: at row r block 0 reads Q row r and K row r, block 1 Q row 64 + r
    # (K is the same for both blocks: block 0, first in launch order, issues it)
    for r in range(64):
        expected += [r, 256 + r, 64 + r]
    expected += [512 + r for r in range(64)]          # then P.V: V rows of key block 0
    expected += [256 + 64 + r for r in range(64)]     # key step 1: K rows 64-127
    expected += [512 + 64 + r for r in range(64)]     # and V rows 64-127
    for r in range(64):                               # after the loop: O rows, interleaved
        expected += [768 + r, 768 + 64 + r]
    # logsumexp: 16 queries a line, block 0 owns lines 0-3, block 1 lines 4-7
    expected += [1024, 1028, 1025, 1029, 1026, 1030, 1027, 1031]
    assert lines == expected
    assert writes == [False] * (3 * 64 + 3 * 64) + [True] * (128 + 8)


def test_fused_attention_backward_order_of_two_key_splits() -> None:
    # ..._backward on dO, Q, K, V, O [1, 1, 128, 16], logsumexp [1, 1, 128] -> dQ, dK, dV, fp32:
    # the 64x64 k32 kernel, keys split into one block per 64 keys (2 < 256 blocks of
    # parallelism), grid 2 key splits x 1 x 1, both resident (one SM, 2 per SM).  Split s
    # starts at query block s (getQueryStartShift), so at step 0 block 0 works on (keys 0-63,
    # queries 0-63) and block 1 on (keys 64-127, queries 64-127); at step 1 they swap query
    # blocks and everything is already on chip except dQ, which the last adder writes.
    # Storage k at line 256 k: dO 0, Q 256, K 512, V 768, O 1024, lse 1280, dQ 1536,
    # dK 1792, dV 2048.
    shapes = [(1, 1, 128, 16)] * 5 + [(1, 1, 128)] + [(1, 1, 128, 16)] * 3
    op = OpRecord(0, "aten._scaled_dot_product_efficient_attention_backward.default",
                  PHASE_ID["backward"], PATTERN_ID["tiled"], 0.0,
                  [_dense(k, sh, k >= 6) for k, sh in enumerate(shapes)])
    base = np.arange(9, dtype=np.int64) * 256 * 64
    lines, writes = _lines_of(op, base, GpuModel(sms=1))
    expected = []
    for r in range(64):          # O rows (the fp32 kernel's per-query delta read stands here)
        expected += [1024 + r, 1024 + 64 + r]
    for r in range(64):          # K_j.Q_i^T: Q row then K row, block 0 then block 1
        expected += [256 + r, 512 + r, 256 + 64 + r, 512 + 64 + r]
    expected += [1280, 1284, 1281, 1285, 1282, 1286, 1283, 1287]   # logsumexp rows
    for r in range(64):          # dV += P^T dO: dO rows read, dV rows written (first query)
        expected += [r, 2048 + r, 64 + r, 2048 + 64 + r]
    for r in range(64):          # dO V^T: V rows
        expected += [768 + r, 768 + 64 + r]
    for r in range(64):          # dK += dS^T Q: dK rows written (fp32: accumulated in place)
        expected += [1792 + r, 1792 + 64 + r]
    for r in range(64):          # step 1: dQ of query block 1 by block 0, of block 0 by block 1
        expected += [1536 + 64 + r, 1536 + r]
    assert lines == expected
    w = set(range(1536, 2048 + 128))
    assert writes == [line in w for line in expected]


def test_fused_attention_order_keeps_the_lines_of_every_operand() -> None:
    # the order is a permutation: same lines, same read/write split, as the sequential model,
    # for a multi-head call with lq != lk, a head dim over two MMA k-steps, and 16-bit
    def acc(k, shape, w, dtype="float32"):
        a = _dense(k, shape, w)
        return Access(a.storage, 0, a.run_bytes * (2 if dtype == "float32" else 1) // 2,
                      (), (), shape, dtype, w, a.stride)
    for dtype in ("float32", "bfloat16"):
        fwd = OpRecord(0, "aten._scaled_dot_product_efficient_attention.default",
                       PHASE_ID["attention"], PATTERN_ID["tiled"], 0.0,
                       [acc(0, (2, 3, 200, 80), False, dtype), acc(1, (2, 3, 72, 80), False, dtype),
                        acc(2, (2, 3, 72, 80), False, dtype), acc(3, (2, 3, 200, 80), True, dtype),
                        _dense(4, (2, 3, 224), True)])
        shapes = [(2, 3, 200, 80), (2, 3, 200, 80), (2, 3, 72, 80), (2, 3, 72, 80),
                  (2, 3, 200, 80)]
        bwd = OpRecord(1, "aten._scaled_dot_product_efficient_attention_backward.default",
                       PHASE_ID["backward"], PATTERN_ID["tiled"], 0.0,
                       [acc(k, sh, False, dtype) for k, sh in enumerate(shapes)]
                       + [_dense(5, (2, 3, 224), False)]
                       + [acc(6 + k, sh, True, dtype) for k, sh in
                          enumerate([(2, 3, 200, 80), (2, 3, 72, 80), (2, 3, 72, 80)])])
        for op in (fwd, bwd):
            base = np.arange(len(op.accesses), dtype=np.int64) * (1 << 20)
            roles = np.zeros(len(op.accesses), np.uint8)
            seq = list(expand_op(op, base, roles))
            gpu = list(expand_op(op, base, roles, gpu=GpuModel(sms=2)))
            a, b = (np.concatenate([p.lines for p in x]) for x in (seq, gpu))
            wa, wb = (np.concatenate([p.is_write for p in x]) for x in (seq, gpu))
            assert sorted(a[wa].tolist()) == sorted(b[wb].tolist())
            assert sorted(a[~wa].tolist()) == sorted(b[~wb].tolist())
            assert not np.array_equal(a, b)
