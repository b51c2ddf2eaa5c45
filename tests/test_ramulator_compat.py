"""Ramulator 2 compatibility: YAML run files and LoadStoreTrace files (engine.ramulator)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from engine.config import ConfigError, load_config
from engine.errors import TraceError
from engine.ramulator import load_yaml, read_loadstore
from engine.ramulator.presets import jedec_rounding, jedec_rounding_ddr5

RUN = """\
Frontend:
  impl: LoadStoreTrace
  path: x.lst
  clock_ratio: 1
MemorySystem:
  impl: GenericDRAM
  clock_ratio: 2
  DRAM:
    impl: {impl}
    org:
      preset: {org}
      channel: 1
      rank: {rank}
    timing:
      preset: {timing}
{extra}
  Controller:
    impl: Generic
    Scheduler:
      impl: FRFCFS
    RefreshManager:
      impl: AllBank
    RowPolicy:
      impl: {rowpol}
    plugins: null
  AddrMapper:
    impl: {mapper}
"""


def _yaml(tmp_path: Path, name: str = "run", *, impl: str = "DDR4", org: str = "DDR4_8Gb_x8",
          timing: str = "DDR4_3200AA", rank: int = 1, extra: str = "",
          rowpol: str = "OpenRowPolicy", mapper: str = "RoBaRaCoCh") -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_text(RUN.format(impl=impl, org=org, timing=timing, rank=rank, extra=extra,
                            rowpol=rowpol, mapper=mapper))
    return p


def test_ramulator_rounding() -> None:
    # values Ramulator 2 prints for these (NOTES.md): DDR4 tREFI, DDR5 tRFC1 / tREFI, LPDDR5
    assert jedec_rounding(7800, 625) == 12480
    assert jedec_rounding_ddr5(295, 625) == 471 and jedec_rounding_ddr5(3900, 625) == 6222
    assert jedec_rounding(210, 312) == 674 and jedec_rounding(120, 312) == 385


def test_ddr4_run_file(tmp_path: Path) -> None:
    ram = load_yaml(_yaml(tmp_path, rank=2, extra="      nRFC: 560"))
    cfg = ram.memory
    assert ram.exact and ram.offer_interval == 2 and ram.scheduler == "FRFCFS"
    assert (cfg.protocol, cfg.ranks, cfg.bankgroups, cfg.banks_per_group) == ("DDR4", 2, 4, 4)
    assert (cfg.CL, cfg.CWL, cfg.tRCD, cfg.tRP, cfg.tRAS, cfg.tRC) == (22, 16, 22, 22, 52, 74)
    assert (cfg.tRRD_S, cfg.tRRD_L, cfg.tFAW, cfg.tRFC, cfg.tREFI) == (4, 8, 34, 560, 12480)
    assert cfg.tCK == 0.625 and cfg.request_size_bytes == 64
    assert cfg.address_mapping == "robabgracoch"        # RoBaRaCoCh, MSB first
    assert cfg.refresh_policy == "RANK_LEVEL_SIMULTANEOUS" and cfg.scheduler == "frfcfs"
    # load_config dispatches by suffix
    assert load_config(_yaml(tmp_path, "again", rank=2)).ranks == 2


def test_ddr5_run_file(tmp_path: Path) -> None:
    cfg = load_yaml(_yaml(tmp_path, impl="DDR5", org="DDR5_16Gb_x8", timing="DDR5_3200AN",
                          extra="    RFM:\n      BRC: 2")).memory
    assert (cfg.protocol, cfg.bus_width, cfg.BL, cfg.bankgroups) == ("DDR5", 32, 16, 8)
    assert (cfg.tRFC, cfg.tREFI, cfg.tCCD_L_WR) == (471, 6222, 16)
    assert cfg.tRRD_L == 8            # Ramulator's nRRDL 5 < nRRDS 8: rank-level 8 dominates
    assert cfg.field_widths["co"] == 6 and cfg.shift_bits == 6


def test_mapper_chrabaroco_and_ns_timing(tmp_path: Path) -> None:
    cfg = load_yaml(_yaml(tmp_path, mapper="ChRaBaRoCo", extra="      tRCD: 15.0")).memory
    assert cfg.address_mapping == "chrabgbaroco"
    assert cfg.tRCD == jedec_rounding(15.0, 625) == 24


@pytest.mark.parametrize("change,key", [
    ({"org": "DDR4_9Gb_x8"}, "MemorySystem.DRAM.org.preset"),
    ({"timing": "DDR4_9999"}, "MemorySystem.DRAM.timing.preset"),
    ({"mapper": "MOP4CLXOR"}, "MemorySystem.AddrMapper.impl"),
    ({"rowpol": "SomePolicy"}, "MemorySystem.Controller.RowPolicy.impl"),
    ({"extra": "      nRCD: fast"}, "MemorySystem.DRAM.timing.nRCD"),
])
def test_run_file_errors_name_the_key(tmp_path: Path, change: dict, key: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_yaml(_yaml(tmp_path, **change))
    assert exc.value.key == key and "run.yaml" in str(exc.value)


@pytest.mark.parametrize("old,new,key,says", [
    ("  clock_ratio: 2", "  clock_ratio: 0", "MemorySystem.clock_ratio", "positive integer"),
    ("  clock_ratio: 2", "  clock_ratio: -1", "MemorySystem.clock_ratio", "positive integer"),
    ("  clock_ratio: 1", "  clock_ratio: 0", "Frontend.clock_ratio", "positive integer"),
    ("  impl: GenericDRAM", "  impl: GenericDRM", "MemorySystem.impl", "expected GenericDRAM"),
    ("    impl: Generic\n", "    impl: BHDRAMController\n", "MemorySystem.Controller.impl",
     "expected Generic"),
    ("    impl: DDR4", "    impl: DDR6", "MemorySystem.DRAM.impl",
     "expected one of DDR4, DDR5, HBM2, HBM3, LPDDR5"),
])
def test_run_file_names_and_ratios_are_checked(tmp_path: Path, old: str, new: str, key: str,
                                               says: str) -> None:
    """A misspelt implementation, an unknown standard or a clock ratio of 0 or below is a
    clear error naming the key (a ratio of 0 was a ZeroDivisionError in the Ramulator mode;
    a misspelt name ran as if it were right)."""
    p = _yaml(tmp_path)
    text = p.read_text()
    assert text.count(old) == 1
    p.write_text(text.replace(old, new))
    with pytest.raises(ConfigError, match=says) as exc:
        load_yaml(p)
    assert exc.value.key == key and "run.yaml" in str(exc.value)


def test_not_yaml(tmp_path: Path) -> None:
    p = tmp_path / "bad.yaml"
    p.write_text("Frontend: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_yaml(p)
    p.write_text("- a list\n")
    with pytest.raises(ConfigError, match="expected a YAML mapping"):
        load_yaml(p)


def test_loadstore_trace(tmp_path: Path) -> None:
    p = tmp_path / "t.lst"
    p.write_text("LD 0x40\nST 0x80\n\nLD 0x200000040\n")
    tr = read_loadstore(p, interval=2, capacity_bytes=1 << 33)
    assert tr.addr.tolist() == [0x40, 0x80, 0x40] and tr.wrapped == 1
    assert tr.is_write.tolist() == [False, True, False] and tr.cycle.tolist() == [0, 2, 4]
    p.write_text("LD 0x40\nLOAD 0x80\n")
    with pytest.raises(TraceError, match=r"t.lst:2: .*expected 'LD 0xADDR'"):
        read_loadstore(p)
    p.write_text("ST 0xZZ\n")
    with pytest.raises(TraceError, match=r"t.lst:1: .*expected an address"):
        read_loadstore(p)


def test_run_ramulator_file_end_to_end(tmp_path: Path) -> None:
    from engine.simulator import SimOptions, Simulator
    ram = load_yaml(_yaml(tmp_path))
    lines = [f"LD {i * 64:#x}" for i in range(2000)]          # one row after another
    (tmp_path / "s.lst").write_text("\n".join(lines) + "\n")
    tr = read_loadstore(tmp_path / "s.lst", interval=ram.offer_interval,
                        capacity_bytes=ram.memory.capacity_bytes)
    sim = Simulator(ram.memory, SimOptions(epoch=0))
    try:
        sim.feed(tr.addr, tr.is_write, tr.cycle, None)
        s = sim.finish().to_dict()
    finally:
        sim.close()
    s = s.get("summary", s)
    assert s["num_reads_done"] == 2000
    # RoBaRaCoCh: 128 consecutive lines share a row, so 2000 lines open 16 rows (one ACT each;
    # Ramulator's own 2k-request stream run also shows 16 ACT)
    assert s["num_act_cmds"] == 16


def test_cli_ramulator_command(tmp_path: Path) -> None:
    import json

    import main
    yaml_path = _yaml(tmp_path)
    (tmp_path / "s.lst").write_text("".join(f"LD {i * 64:#x}\n" for i in range(300)))
    out = tmp_path / "st.json"
    assert main.main(["ramulator", "--config", str(yaml_path), "--trace",
                      str(tmp_path / "s.lst"), "--out", str(out)]) == 0
    st = json.loads(out.read_text())
    assert st["num_reads_accepted"] == 300 and st["num_act_cmds"] == 3   # 128 lines a row
    # HBM3 is reproduced (pseudo-channels; AllBank has no rank level: no refresh)
    hbm3 = _yaml(tmp_path, "hbm3", impl="HBM3", org="HBM3_8Gb", timing="HBM3_2Gbps")
    out3 = tmp_path / "st3.json"
    assert main.main(["ramulator", "--config", str(hbm3), "--trace", str(tmp_path / "s.lst"),
                      "--out", str(out3)]) == 0
    st3 = json.loads(out3.read_text())
    assert st3["num_reads_accepted"] == 300 and st3["commands"].get("REFab", 0) == 0
    bad = _yaml(tmp_path, "hbm", impl="HBM2", org="HBM2_8Gb", timing="HBM2_2Gbps")
    assert main.main(["ramulator", "--config", str(bad), "--trace",
                      str(tmp_path / "s.lst")]) == 2


def test_a_ddr5_file_without_rfm_stops_as_ramulator_does(tmp_path: Path, capsys) -> None:
    """Ramulator 2.0's DDR5 reads its RFM group at setup and stops without one (NOTES.md);
    the compatible mode ran such a file. Our own engine (simulate) still runs it."""
    import main
    ddr5 = dict(impl="DDR5", org="DDR5_16Gb_x8", timing="DDR5_3200AN")
    (tmp_path / "s.lst").write_text("".join(f"LD {i * 64:#x}\n" for i in range(50)))
    args = ["ramulator", "--trace", str(tmp_path / "s.lst"), "--config"]
    assert main.main(args + [str(_yaml(tmp_path, "rfm", extra="    RFM:\n      BRC: 2",
                                       **ddr5))]) == 0
    capsys.readouterr()
    assert main.main(args + [str(_yaml(tmp_path, "norfm", **ddr5))]) == 2
    assert 'ParamGroup "RFM" is not specified' in capsys.readouterr().err
    assert load_config(tmp_path / "norfm.yaml").protocol == "DDR5"


def test_an_import_faster_than_its_data_rate_is_warned(tmp_path: Path) -> None:
    """`simulate --config lpddr5.yaml` moved 48.6 GB/s on one 32-bit LPDDR5-6400 channel
    (25.6 GB/s): Ramulator's 312 ps clock runs the preset's 800 MHz cycles. An imported
    memory whose peak exceeds the file's data rate is now a config warning (in the
    statistics' config_warnings); DDR4 and DDR5 imports peak at their rate and say nothing."""
    lp5 = load_config(_yaml(tmp_path, "lp5", impl="LPDDR5", org="LPDDR5_8Gb_x16",
                            timing="LPDDR5_6400"))
    assert lp5.peak_bandwidth_GBps == pytest.approx(64 / (4 * 0.312))
    (w,) = [w for w in lp5.warnings if "peaks at" in w]
    assert "2x what 6400 MT/s on 1 x 32 bits moves (25.6 GB/s)" in w
    hbm3 = load_config(_yaml(tmp_path, "hbm3", impl="HBM3", org="HBM3_8Gb",
                             timing="HBM3_2Gbps"))
    assert any("peaks at" in w and "HBM2's" in w for w in hbm3.warnings)
    ddr4 = load_config(_yaml(tmp_path))
    ddr5 = load_config(_yaml(tmp_path, "d5", impl="DDR5", org="DDR5_16Gb_x8",
                             timing="DDR5_3200AN", extra="    RFM:\n      BRC: 2"))
    for cfg, peak in ((ddr4, 25.6), (ddr5, 12.8)):
        assert cfg.peak_bandwidth_GBps == pytest.approx(peak)
        assert not any("peaks at" in w for w in cfg.warnings)


def test_an_interrupted_run_keeps_the_earlier_command_trace(tmp_path: Path,
                                                            monkeypatch) -> None:
    """A Ctrl-C of `ramulator --cmd-trace P` left P.ch0 cut short with no mark (over a
    complete earlier one): the trace is now written beside it and moved on at the end."""
    from engine.ramulator import compat
    yaml_path = _yaml(tmp_path)
    (tmp_path / "s.lst").write_text("".join(f"LD {i * 64:#x}\n" for i in range(3000)))
    out = tmp_path / "cmd"
    compat.run(yaml_path, tmp_path / "s.lst", cmd_trace=out)
    whole = (tmp_path / "cmd.ch0").read_text()
    assert whole.count("\n") > 20
    ticks = [0]
    real_tick = compat._Controller.tick

    def tick_then_interrupt(self):
        ticks[0] += 1
        if ticks[0] == 500:
            raise KeyboardInterrupt
        return real_tick(self)
    monkeypatch.setattr(compat._Controller, "tick", tick_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        compat.run(yaml_path, tmp_path / "s.lst", cmd_trace=out)
    assert (tmp_path / "cmd.ch0").read_text() == whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cmd.ch0", "run.yaml", "s.lst"]
