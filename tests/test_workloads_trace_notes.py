"""What a generated trace says when it is replayed or converted: a sample says it is one, a
damaged record is an error naming the file and attribute, and a conversion to a plain trace
writes the memory's requests and says so."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
h5py = pytest.importorskip("h5py")

import main  # noqa: E402
from engine.config import load_config  # noqa: E402
from engine.errors import DiffMemError  # noqa: E402
from engine.workloads.generate import TraceSpec, generate_trace  # noqa: E402
from engine.workloads.retarget import placement_notes, read_placement  # noqa: E402


@pytest.fixture(scope="module")
def sampled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("notes") / "s.h5"
    s = generate_trace(TraceSpec("ddpm", batch=2, size="tiny", cache_bytes=1 << 20,
                                 sample=0.1), out)
    return out, s


def test_a_sampled_trace_says_it_is_a_sample(sampled: tuple[Path, dict],
                                             capsys: pytest.CaptureFixture) -> None:
    path, s = sampled
    # the summary counts the windows the strata were cut into (it gave the count asked for)
    assert s["windows"] != s["windows_requested"]
    notes = placement_notes(path, load_config("HBM2"))
    assert len(notes) == 1 and "a 0.1 sample of the training step" in notes[0]
    share = 100 * s["requests"] / s["extrapolated"]["requests"]
    assert f"{share:.3g} % of the step's" in notes[0]
    b = s["extrapolated"]["dram_bytes"]
    assert (f"extrapolated: read {b['read'] / 1e9:.4g} GB, written {b['write'] / 1e9:.4g} GB"
            in notes[0])


@pytest.mark.parametrize("name,value,why", [
    ("placement", "{not json", "is not valid JSON"),
    ("placement", "[1]", "is a JSON list; expected an object"),
    ("summary", "{bad", "is not valid JSON")])
def test_a_damaged_record_is_an_error_naming_file_and_attribute(
        sampled: tuple[Path, dict], tmp_path: Path, name: str, value: str, why: str) -> None:
    bad = tmp_path / "bad.h5"
    bad.write_bytes(sampled[0].read_bytes())
    with h5py.File(bad, "a") as f:
        f["trace"].attrs[name] = value
        if name == "summary":
            del f["trace"].attrs["placement"]
    with pytest.raises(DiffMemError, match=f"{bad}: attribute '{name}' of group 'trace' "
                                           f"{why}"):
        placement_notes(bad, load_config("HBM2")) if name == "summary" else read_placement(bad)
    # the command line: exit 2 and the message, no traceback
    code = main.main(["simulate", "--config", "HBM2", "--trace", str(bad), "--out",
                      str(tmp_path / "s.json")])
    assert code == 2


def test_converting_a_generated_trace_writes_its_memorys_requests(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    src = tmp_path / "g.h5"
    generate_trace(TraceSpec("resnet50", batch=2, size="tiny", memory="GDDR6",
                             cache_bytes=64 * 1024), src)
    dst = tmp_path / "g.trace"
    assert main.main(["convert-trace", str(src), str(dst)]) == 0
    out = capsys.readouterr().out
    assert "64-byte lines written merged into GDDR6's 256-byte requests" in out
    assert "replay it on GDDR6" in out
    n = sum(1 for _ in dst.open())
    assert f"converted {n} requests" in out


def test_windows_are_at_least_min_window_lines_long() -> None:
    """Every stratum's windows are MIN_WINDOW_LINES issued lines or more (a stratum shorter
    than that is one window): the allocation's ten kept windows a stratum cut 5,000-line
    strata into 134-line windows after auto_windows had asked for 2,048."""
    import numpy as np

    from engine.workloads.sampling import MIN_WINDOW_LINES, kept_windows
    lines = np.array([300_000, 5_000, 120_000, 1_000, 40_000], np.int64)
    strata = np.array([0, 1, 0, 2, 3])
    w = kept_windows(lines, strata, 100_000, 0.1, seed=0)
    for k, s in enumerate(np.unique(strata)):
        x = int(lines[strata == s].sum())
        n = int(w.n_windows[k])
        assert n == 1 or x // n >= MIN_WINDOW_LINES, (s, x, n)
        assert 0 < int(w.n_kept[k]) <= n
    # each kept window, made of its intervals, is as long
    length = np.bincount(w.window, weights=(w.hi - w.lo).astype(float))
    assert length.min() >= min(MIN_WINDOW_LINES, 1_000)
