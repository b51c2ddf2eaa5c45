"""The Ramulator-2-compatible mode (engine.ramulator.compat) reproduces Ramulator 2.0's command
traces on its recorded reference runs (DDR4 and DDR5, first 2,000 requests of the shared
stream and mixed traces): every command, cycle and address identical, and the statistics."""
from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.ramulator.compat import run

RUNS = [("ddr4_8Gb_x8_3200AA_1r", "stream"), ("ddr4_8Gb_x8_3200AA_1r", "mixed"),
        ("ddr5_16Gb_x8_3200AN_1r", "stream"), ("ddr5_16Gb_x8_3200AN_1r", "mixed")]


def _ref(shared_dir: Path, rel: str) -> Path:
    base = shared_dir / "reference" / "ramulator2-ddr5" / rel
    for p in (base, base.with_name(base.name + ".gz")):
        if p.is_file():
            return p
    pytest.skip(f"reference data missing: {base}")


def _lines(p: Path) -> list[str]:
    opener = gzip.open if p.suffix == ".gz" else open
    with opener(p, "rt") as fh:
        return [ln.replace(" ", "").strip() for ln in fh if ln.strip()]


@pytest.fixture(scope="module")
def traces_2k(shared_dir: Path, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("r2traces")
    # the reference runs used the first 2,000 lines of the 100k-request traces
    subprocess.run([sys.executable, str(shared_dir / "tools" / "gen_traces.py"), "--n", "100000",
                    "--seed", "7", "--interval", "2", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    lst = {}
    for name in ("stream", "mixed"):
        dst = out / f"{name}.lst"
        with (out / f"{name}.trace").open() as fi, dst.open("w") as fo:
            for k, line in enumerate(fi):
                if k == 2000:
                    break
                addr, kind, _ = line.split()
                fo.write(f"{'ST' if kind == 'WRITE' else 'LD'} {addr}\n")
        lst[name] = dst
    return lst


@pytest.mark.parametrize("config,trace", RUNS)
def test_command_trace_identical_to_ramulator2(shared_dir, traces_2k, tmp_path, config,
                                               trace) -> None:
    yaml_path = _ref(shared_dir, f"configs/{config}.yaml")
    ref_cmds = _lines(_ref(shared_dir, f"cmdtrace/{config}__{trace}_2k.cmd.ch0"))
    ref = json.loads(_ref(shared_dir, f"cmdtrace/{config}__{trace}_2k.json").read_text())
    assert hashlib.md5(traces_2k[trace].read_bytes()).hexdigest() == ref["lst_md5"]  # same input
    out = tmp_path / "ours.cmd"
    st = run(yaml_path, traces_2k[trace], cmd_trace=out)
    ours = _lines(Path(f"{out}.ch0"))
    first = next((i for i, (a, b) in enumerate(zip(ref_cmds, ours)) if a != b), None)
    assert first is None and len(ours) == len(ref_cmds), (
        f"first difference at command {first}: Ramulator {ref_cmds[first] if first is not None else '-'}"
        f" ours {ours[first] if first is not None else '-'}")
    assert st.num_cycles == ref["memory_cycles"]
    assert st.read_latency_sum == ref["sum_read_latency_cycles"]
    assert (st.row_hits, st.row_misses, st.row_conflicts) == (
        ref["row_hits"], ref["row_misses"], ref["row_conflicts"])
    assert st.num_reads_accepted == ref["reads_accepted"]


def test_unsupported_standard_is_a_clear_error(shared_dir, traces_2k) -> None:
    from engine.config import ConfigError
    with pytest.raises(ConfigError, match="reproduces DDR4, DDR5 only"):
        run(_ref(shared_dir, "configs/hbm3_8Gb_2Gbps_8ch.yaml"), traces_2k["stream"])
