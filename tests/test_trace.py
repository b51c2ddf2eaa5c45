"""Tests of engine.trace: formats, streaming readers, writers, merging, summaries."""
from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np
import pytest

from engine.errors import TraceError
from engine.trace import (BINARY_RECORD, TraceChunk, convert, detect_format, iter_merged,
                          iter_trace, read_trace, trace_summary, write_binary, write_hdf5,
                          write_text)


def random_chunk(n: int, seed: int = 0, stream: int = 0, max_cycle_step: int = 5) -> TraceChunk:
    rng = np.random.default_rng(seed)
    addr = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    addr[: min(n, 3)] = [0, 2**64 - 1, 0x40][: min(n, 3)]
    cycle = np.cumsum(rng.integers(0, max_cycle_step, n)).astype(np.int64)
    return TraceChunk.from_arrays(addr, rng.random(n) < 0.3, cycle, stream)


def assert_same(a: TraceChunk, b: TraceChunk, *, streams: bool = True) -> None:
    assert len(a) == len(b)
    assert a.addr.dtype == np.uint64 and a.cycle.dtype == np.int64
    assert a.is_write.dtype == np.bool_ and a.stream.dtype == np.uint16
    np.testing.assert_array_equal(a.addr, b.addr)
    np.testing.assert_array_equal(a.cycle, b.cycle)
    np.testing.assert_array_equal(a.is_write, b.is_write)
    if streams:
        np.testing.assert_array_equal(a.stream, b.stream)


def write_lines(path: Path, text: str) -> Path:
    path.write_bytes(text.encode())
    return path


# ---------------------------------------------------------------- round trips

@pytest.mark.parametrize("n", [0, 1, 1000, 70_001])
def test_text_round_trip(tmp_path: Path, n: int) -> None:
    data = random_chunk(n, seed=n)
    p = tmp_path / "t.trace"
    assert write_text(p, data) == n
    raw = p.read_bytes()
    if n:
        assert raw.endswith(b"\n")
        assert raw.split(b"\n", 1)[0] == b"0x0 %s %d" % (
            b"WRITE" if data.is_write[0] else b"READ", data.cycle[0])
    assert detect_format(p) == "text"
    assert_same(read_trace(p, chunk_size=4096), data)


@pytest.mark.parametrize("n", [0, 1, 70_001])
def test_binary_round_trip(tmp_path: Path, n: int) -> None:
    data = random_chunk(n, seed=n, stream=7)
    data.stream[::3] = 2
    p = tmp_path / "t.dmt"
    write_binary(p, data)
    assert p.stat().st_size == 32 + 24 * n
    assert detect_format(p) == "binary"
    assert_same(read_trace(p, chunk_size=1000), data)
    # stream_id overrides the stored streams
    assert set(read_trace(p, stream_id=5).stream.tolist()) <= {5}


@pytest.mark.parametrize("compression", ["gzip", "lzf", None])
def test_hdf5_round_trip(tmp_path: Path, compression: str | None) -> None:
    data = random_chunk(100_003, seed=3, stream=1)
    p = tmp_path / "t.h5"
    write_hdf5(p, data, compression=compression)
    assert detect_format(p) == "hdf5"
    assert_same(read_trace(p, chunk_size=30_000), data)
    with h5py.File(p, "r") as f:
        g = f["trace"]
        assert g.attrs["format"] == "diffmem-trace"
        assert int(g.attrs["version"]) == 1
        assert g.attrs["clock"] == "memory"
        assert g["addr"].maxshape == (None,)
        assert g["addr"].compression == compression


def test_hdf5_groups_share_a_file(tmp_path: Path) -> None:
    p = tmp_path / "project.h5"
    a, b = random_chunk(500, seed=1), random_chunk(800, seed=2)
    write_hdf5(p, a, group="traces/a")
    write_hdf5(p, b, group="traces/b")
    write_hdf5(p, b, group="traces/a")          # replaces a, keeps b
    assert_same(read_trace(p, group="traces/b"), b)
    assert_same(read_trace(p, group="traces/a"), b)
    with pytest.raises(TraceError, match="no trace group 'missing'"):
        read_trace(p, group="missing")


def test_writers_stream_iterables_and_convert(tmp_path: Path) -> None:
    data = random_chunk(25_000, seed=9)
    src = tmp_path / "a.trace"
    write_text(src, (data[i:i + 4000] for i in range(0, len(data), 4000)))
    assert convert(src, tmp_path / "b.dmt") == len(data)
    assert convert(tmp_path / "b.dmt", tmp_path / "c.h5") == len(data)
    assert convert(tmp_path / "c.h5", tmp_path / "d.txt") == len(data)
    assert (tmp_path / "d.txt").read_bytes() == src.read_bytes()
    convert(tmp_path / "d.txt", tmp_path / "d.txt", fmt="binary")   # in place
    assert detect_format(tmp_path / "d.txt") == "binary"
    assert_same(read_trace(tmp_path / "d.txt"), data)


def test_writer_is_atomic(tmp_path: Path) -> None:
    p = tmp_path / "t.trace"
    write_text(p, random_chunk(10))
    before = p.read_bytes()

    def broken():
        yield random_chunk(1000)
        raise RuntimeError("interrupted")

    for writer in (write_text, write_binary, write_hdf5):
        with pytest.raises(RuntimeError):
            writer(p, broken())
        assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["t.trace"]   # no temporary file left


def test_writer_rejects_decreasing_cycles(tmp_path: Path) -> None:
    bad = TraceChunk.from_arrays([0, 64, 128], [0, 0, 1], [5, 7, 6])
    with pytest.raises(TraceError, match="request 3: cycle 6 is before"):
        write_binary(tmp_path / "x.dmt", bad)
    assert not (tmp_path / "x.dmt").exists()


# ---------------------------------------------------------------- text parsing

def test_hex_forms_and_ops(tmp_path: Path) -> None:
    p = write_lines(tmp_path / "t.trace", (
        "# a comment\n"
        "\n"
        "0x1f READ 0\n"
        "0X1F write 1\n"
        "1F read 2\n"
        "abcDEF P_MEM_WR 3\n"
        "  0xFFFFFFFFFFFFFFFF\tP_MEM_RD   4  \r\n"
        "   # indented comment\n"
        "0 BOFF 4\n"
        "00000000000000000000000000040 P_FETCH 0000000000000000000000005\n"
        "0x40 WRITE 6"))            # no trailing newline
    t = read_trace(p)
    assert t.addr.tolist() == [0x1F, 0x1F, 0x1F, 0xABCDEF, 2**64 - 1, 0, 0x40, 0x40]
    assert t.is_write.tolist() == [False, True, False, True, False, True, False, True]
    assert t.cycle.tolist() == [0, 1, 2, 3, 4, 4, 5, 6]
    assert t.stream.tolist() == [0] * 8


@pytest.mark.parametrize("read_bytes", [1, 2, 3, 5, 7, 13, 64])
def test_lines_split_across_reads(tmp_path: Path, read_bytes: int) -> None:
    data = random_chunk(300, seed=read_bytes)
    p = tmp_path / "t.trace"
    write_text(p, data)
    got = list(iter_trace(p, chunk_size=64, read_bytes=read_bytes))
    assert [len(c) for c in got] == [64, 64, 64, 64, 44]
    assert_same(TraceChunk.concat(got), data)
    # and without a trailing newline, and with CRLF line ends
    p.write_bytes(p.read_bytes().rstrip(b"\n"))
    assert_same(read_trace(p, read_bytes=read_bytes), data)
    p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
    assert_same(read_trace(p, read_bytes=read_bytes), data)


def test_no_trailing_newline(tmp_path: Path) -> None:
    p = write_lines(tmp_path / "t.trace", "0x40 READ 1\n0x80 WRITE 2")
    t = read_trace(p)
    assert t.addr.tolist() == [0x40, 0x80] and t.is_write.tolist() == [False, True]
    p = write_lines(tmp_path / "u.trace", "0x40 READ 1\n# last")
    assert len(read_trace(p)) == 1
    assert len(read_trace(write_lines(tmp_path / "e.trace", ""))) == 0


def error_of(path: Path, **kw) -> str:
    with pytest.raises(TraceError) as info:
        read_trace(path, **kw)
    return str(info.value)


@pytest.mark.parametrize("bad", ["foo", "0x40 READ", "0x40", "0xZZ READ 3", "0x READ 3",
                                 "0x40 READ -3", "0x40 READ 3x", "0x40 READ 3 extra",
                                 "0x40READ 3"])
def test_malformed_line(tmp_path: Path, bad: str) -> None:
    p = write_lines(tmp_path / "trace.txt", "0x0 READ 0\n# comment\n\n" + bad + "\n0x0 READ 9\n")
    msg = error_of(p, read_bytes=3)
    assert msg == f"{p}:4: expected '0xADDR READ|WRITE CYCLE', got '{bad}'"
    with pytest.raises(TraceError) as info:
        read_trace(p)
    assert info.value.line == 4 and info.value.path == p


def test_unknown_op_strict_and_lenient(tmp_path: Path) -> None:
    p = write_lines(tmp_path / "t.trace", "0x0 READ 0\n0x40 P_LOCK_RD 1\n0x80 WRITE 2 tail\n")
    msg = error_of(p)
    assert msg.startswith(f"{p}:2: unknown request type 'P_LOCK_RD': expected READ, WRITE")
    t = read_trace(p, strict=False)
    assert t.is_write.tolist() == [False, False, True]


def test_decreasing_cycle(tmp_path: Path) -> None:
    p = write_lines(tmp_path / "t.trace", "0x0 READ 5\n0x40 READ 5\n\n0x80 WRITE 4\n")
    assert error_of(p) == (f"{p}:4: cycle 4 is before the previous request's cycle 5: "
                           f"expected non-decreasing cycles")


def test_decreasing_cycle_across_chunks(tmp_path: Path) -> None:
    lines = [f"0x{64 * i:x} READ {i}" for i in range(100)] + ["0x0 READ 50"]
    p = write_lines(tmp_path / "t.trace", "\n".join(lines))
    assert f"{p}:101: cycle 50 is before the previous request's cycle 99" in error_of(
        p, chunk_size=7, read_bytes=11)


def test_address_beyond_capacity(tmp_path: Path) -> None:
    p = write_lines(tmp_path / "t.trace", "0x0 READ 0\n0x3fffffff READ 1\n0x40000000 WRITE 2\n")
    assert error_of(p, capacity_bytes=1 << 30) == (
        f"{p}:3: address 0x40000000 is beyond the memory capacity of 1073741824 bytes "
        f"(expected an address below 0x40000000; --wrap-addresses drops the bits above the "
        f"capacity, as DRAMsim3 does)")
    assert len(read_trace(p, capacity_bytes=(1 << 30) + 1)) == 3
    p = write_lines(tmp_path / "u.trace", "0xffffffffffffffff READ 0\n")
    assert ":1: address 0xffffffffffffffff is beyond" in error_of(p, capacity_bytes=1 << 40)


def test_out_of_range_numbers(tmp_path: Path) -> None:
    p = write_lines(tmp_path / "t.trace", "0x0 READ 0\n0x1ffffffffffffffff READ 1\n")
    assert f"{p}:2: address does not fit in 64 bits" in error_of(p)
    p = write_lines(tmp_path / "u.trace", "0x0 READ 1234567890123456789\n")
    assert f"{p}:1: cycle has more than 18 digits" in error_of(p)


def test_first_line_errors_quote_only_request_shaped_lines(tmp_path: Path) -> None:
    """On line 1 (nothing read yet) a line shaped like a request (three fields, the first a
    0x number) is quoted with what is wrong; any other line is not quoted (the file may be
    anything), and a Ramulator 2 LoadStoreTrace line is named as one."""
    for line, says in (("0x0 READ 0x10", "got '0x0 READ 0x10'"),
                       ("0x0 READ 1.5", "got '0x0 READ 1.5'"),
                       ("0x40 LOAD 0", "unknown request type 'LOAD'")):
        p = write_lines(tmp_path / "t.trace", line + "\n0x80 READ 20\n")
        msg = error_of(p)
        assert msg.startswith(f"{p}:1: ") and says in msg and "not shown" not in msg, msg
    for line in ("0x0,READ,0", "-0x40 READ 0", "root:x:0:0:root:/root:/bin/bash"):
        p = write_lines(tmp_path / "u.trace", line + "\n")
        msg = error_of(p)
        assert "not a request trace" in msg and "not shown" in msg and line not in msg, msg
    p = write_lines(tmp_path / "r.lst", "LD 0x1f40\nST 0x2000\n")
    msg = error_of(p, fmt="text")
    assert f"{p}:1: " in msg and "Ramulator 2 LoadStoreTrace" in msg and "ramulator" in msg


def test_binary_file_named_trace_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "t.trace"
    p.write_bytes(bytes(range(256)) * 600)
    with pytest.raises(TraceError, match=r"t\.trace:1: "):
        read_trace(p, fmt="text")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such trace file"):
        read_trace(tmp_path / "nope.trace")


def test_damaged_binary(tmp_path: Path) -> None:
    p = tmp_path / "t.dmt"
    write_binary(p, random_chunk(100))
    raw = p.read_bytes()
    p.write_bytes(raw[:-10])
    assert "header says 100 records" in error_of(p)
    p.write_bytes(b"NOTATRACE" + raw[9:])
    assert "expected magic bytes b'DMTRACE1'" in error_of(p, fmt="binary")
    rec = np.frombuffer(raw[32:], BINARY_RECORD).copy()
    rec["cycle"][40] = rec["cycle"][39] - 1
    p.write_bytes(raw[:32] + rec.tobytes())
    assert "record 41: cycle" in error_of(p, chunk_size=16)


def test_hdf5_checks(tmp_path: Path) -> None:
    p = tmp_path / "t.h5"
    i = np.arange(10)
    write_hdf5(p, TraceChunk.from_arrays(i * 64, i % 2, i + 100))
    assert "record 4: address 0xc0 is beyond" in error_of(p, capacity_bytes=0xC0)
    with h5py.File(p, "a") as f:
        f["trace/cycle"][7] = 0
    assert "record 8: cycle 0 is before the previous request's cycle 106" in error_of(
        p, chunk_size=3)


# ---------------------------------------------------------------- streaming, merging

def test_hdf5_streams_in_bounded_chunks(tmp_path: Path) -> None:
    n = 2_000_000
    p = tmp_path / "big.h5"
    step = 1 << 18

    def gen():
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            i = np.arange(lo, hi, dtype=np.int64)
            yield TraceChunk.from_arrays((i * 64).astype(np.uint64), i % 3 == 0, i // 2)

    assert write_hdf5(p, gen(), compression="lzf") == n
    chunk_size = 100_000
    total = 0
    expect_next = 0
    for c in iter_trace(p, chunk_size=chunk_size):
        assert 0 < len(c) <= chunk_size
        assert int(c.addr[0]) == expect_next * 64
        total += len(c)
        expect_next += len(c)
    assert total == n


def test_text_streams_in_bounded_chunks(tmp_path: Path) -> None:
    p = tmp_path / "t.trace"
    write_text(p, random_chunk(10_000))
    sizes = [len(c) for c in iter_trace(p, chunk_size=999, read_bytes=4096)]
    assert max(sizes) <= 999 and sum(sizes) == 10_000


def test_merge_three_files_with_ties(tmp_path: Path) -> None:
    files = [
        [(0x100, "READ", 0), (0x101, "READ", 5), (0x102, "WRITE", 5), (0x103, "READ", 9)],
        [(0x200, "READ", 5), (0x201, "READ", 5), (0x202, "READ", 6)],
        [(0x300, "WRITE", 0), (0x301, "READ", 5), (0x302, "READ", 9), (0x303, "READ", 9)],
    ]
    paths = []
    for k, rows in enumerate(files):
        paths.append(write_lines(tmp_path / f"core{k}.trace",
                                 "".join(f"0x{a:x} {op} {c}\n" for a, op, c in rows)))
    expected = sorted(((c, k, j, a, op == "WRITE") for k, rows in enumerate(files)
                       for j, (a, op, c) in enumerate(rows)))
    for chunk_size in (1, 2, 3, 100):
        chunks = list(iter_merged(paths, chunk_size=chunk_size))
        assert all(len(c) <= chunk_size for c in chunks)
        m = TraceChunk.concat(chunks)
        assert m.addr.tolist() == [e[3] for e in expected]
        assert m.cycle.tolist() == [e[0] for e in expected]
        assert m.stream.tolist() == [e[1] for e in expected]
        assert m.is_write.tolist() == [e[4] for e in expected]
    assert [hex(a) for a in m.addr.tolist()[:7]] == [
        "0x100", "0x300", "0x101", "0x102", "0x200", "0x201", "0x301"]


def test_merge_random_matches_stable_sort(tmp_path: Path) -> None:
    parts, paths = [], []
    for k, (n, step) in enumerate([(5000, 3), (3000, 5), (1, 1), (0, 1), (7000, 2)]):
        c = random_chunk(n, seed=k, stream=k, max_cycle_step=step)
        parts.append(c)
        paths.append(tmp_path / f"s{k}.{'dmt' if k % 2 else 'trace'}")
        (write_binary if k % 2 else write_text)(paths[-1], c)
    whole = TraceChunk.concat(parts)
    order = np.lexsort((np.arange(len(whole)), whole.stream, whole.cycle))
    for chunk_size in (1000, 1 << 18):
        got = TraceChunk.concat(list(iter_merged(paths, chunk_size=chunk_size)))
        assert_same(got, whole[order])


def test_summary(tmp_path: Path) -> None:
    p = write_lines(tmp_path / "t.trace",
                    "0x0 READ 3\n0x3f WRITE 4\n0x40 READ 4\n0x1000 WRITE 10\n")
    s = trace_summary(p)
    assert s["requests"] == 4 and s["reads"] == 2 and s["writes"] == 2
    assert s["first_cycle"] == 3 and s["last_cycle"] == 10
    assert s["footprint_lines"] == 3 and s["footprint_exact"]
    assert s["footprint_bytes"] == 192 and s["bytes"] == 256
    assert s["file_bytes"] == p.stat().st_size and s["format"] == "text"
    q = tmp_path / "u.dmt"
    write_binary(q, TraceChunk.from_arrays([0x40, 0x80], [1, 1], [1, 20]))
    s = trace_summary([p, q])
    assert s["requests"] == 6 and s["writes"] == 4
    assert s["first_cycle"] == 1 and s["last_cycle"] == 20 and s["footprint_lines"] == 4
    assert s["format"] == ["text", "binary"]
    empty = trace_summary(write_lines(tmp_path / "e.trace", ""))
    assert empty["requests"] == 0 and empty["first_cycle"] is None


def test_summary_estimate_of_a_large_footprint() -> None:
    from engine.trace import _Footprint
    f = _Footprint()
    f.add(np.arange(1000, dtype=np.uint64) * 64)
    f.add(np.arange(500, 1500, dtype=np.uint64) * 64)
    assert f.result() == (1500, True)
    f.to_estimate()             # as after passing FOOTPRINT_EXACT_LIMIT
    f.add(np.arange(1000, 20_000, dtype=np.uint64) * 64 + 5)
    n, exact = f.result()
    assert not exact and abs(n - 20_000) < 0.03 * 20_000


def _read_single_and_double_spaced(tmp_path: Path, lines: list[str]) -> TraceChunk:
    """Read ``lines`` ("0x<hex> OP <cycle>") as written and with doubled spaces (which only
    the general path reads); assert both read alike and return the first."""
    a = read_trace(write_lines(tmp_path / "fast.trace", "\n".join(lines) + "\n"))
    doubled = [line.replace(" ", "  ") for line in lines]
    b = read_trace(write_lines(tmp_path / "slow.trace", "\n".join(doubled) + "\n"))
    assert len(a) == len(b) == len(lines)
    for x, y in zip((a.addr, a.is_write, a.cycle), (b.addr, b.is_write, b.cycle)):
        assert np.array_equal(x, y)
    return a


def test_common_lines_read_as_through_the_general_path(tmp_path: Path) -> None:
    """The text reader takes "0x<hex> READ|WRITE <decimal>" lines (single spaces, what our
    writer and DRAMsim3's generators emit) in a pass of their own; every other form goes
    through the general path. The same requests written both ways (the second with doubled
    spaces, which only the general path takes) read alike, at every digit count the fast
    pass accepts or hands over (1-17 hex digits, 1-19 cycle digits, the top address bit)."""
    rng = np.random.default_rng(11)
    fast = []
    cycle = 0
    for k in range(3000):
        nhex = int(rng.integers(1, 17))
        addr = int(rng.integers(0, 1 << 62)) % (16 ** nhex)
        if k % 97 == 0:
            addr |= 1 << 63                          # 16 digits, the top bit set
        digits = f"{addr:x}"
        if k % 89 == 0:
            digits = "0" + digits                    # a leading zero: up to 17 digits
        op = "WRITE" if rng.random() < 0.4 else "READ"
        cycle += int(rng.integers(0, 5))
        cyc = str(cycle) if k % 83 else f"{cycle:019d}"     # 19 digits, 18 significant
        fast.append(f"0x{digits} {op} {cyc}")
    a = _read_single_and_double_spaced(tmp_path, fast)
    assert int(a.addr[0]) == int(fast[0].split()[0], 16)
    assert a.is_write.tolist() == [line.split()[1] == "WRITE" for line in fast]


def test_common_lines_at_every_digit_count_read_as_through_the_general_path(
        tmp_path: Path) -> None:
    """The common line's pass reads its digit runs eight bytes at a time (engine/trace.py:
    _hex8, _dec8) and hands a line over from 16 digits on: hexadecimal in lower, upper and
    mixed case at every digit count 1-17 and decimal cycles at every count 1-19 (leading
    zeros make the count), each against the same requests with doubled spaces, which only
    the general path reads."""
    rng = np.random.default_rng(5)
    fast = []
    cycle = 0
    for k in range(4000):
        nhex = 1 + k % 17
        addr = int(rng.integers(0, 1 << 60)) % (16 ** min(nhex, 15))
        digits = f"{addr:0{nhex}x}"
        if k % 3 == 1:
            digits = digits.upper()
        elif k % 3 == 2:
            digits = "".join(c.upper() if i % 2 else c for i, c in enumerate(digits))
        op = "WRITE" if k % 5 == 0 else "READ"
        cycle += int(rng.integers(0, 3)) * 10 ** int(rng.integers(0, 4))
        cyc = f"{cycle:0{1 + (k // 17) % 19}d}"
        fast.append(f"0x{digits} {op} {cyc}")
    a = _read_single_and_double_spaced(tmp_path, fast)
    assert len(a) == 4000
    assert [int(x) for x in a.addr[:40]] == [int(line.split()[0], 16) for line in fast[:40]]
    assert a.cycle[-1] == cycle


@pytest.mark.parametrize("pos", range(17))
def test_a_bad_character_in_any_digit_refuses_the_line(tmp_path: Path, pos: int) -> None:
    """A character that is no digit, at any place of a line's address or cycle digits the
    eight-bytes-at-a-time pass reads (before, at and after its word boundaries), refuses the
    line with its number, as the byte-by-byte path does."""
    hexd = list("0123456789abcdef0"[:max(pos + 1, 9)])
    hexd[pos] = "g" if pos % 2 else ":"
    dec = list("1234567890123456"[:max(pos + 1, 9)])
    dec[min(pos, len(dec) - 1)] = "/" if pos % 2 else "a"
    for line in (f"0x{''.join(hexd)} READ 5", f"0x10 WRITE {''.join(dec)}"):
        path = write_lines(tmp_path / "bad.trace", f"0x40 READ 1\n{line}\n0x80 READ 9\n")
        with pytest.raises(TraceError) as info:
            read_trace(path)
        assert info.value.line == 2, line


def test_suffix_format_is_the_one_list_the_readers_and_studies_use(tmp_path):
    """engine.trace.suffix_format names the format an extension says, any case; the
    studies' HDF5 checks (the trace's workload summary, its placement record) follow it, so a .hdf trace is
    read as HDF5 everywhere, and another extension is not HDF5 anywhere."""
    from engine.studies.spec import trace_metadata
    from engine.trace import suffix_format
    for name, fmt in (("a.h5", "hdf5"), ("a.HDF5", "hdf5"), ("a.hdf", "hdf5"),
                      ("a.he5", "hdf5"), ("a.dmt", "binary"), ("a.trace", "text"),
                      ("a.TXT", "text"), ("a.trc", "text"), ("a.csv", None), ("a", None)):
        assert suffix_format(name) == fmt, name
    ch = TraceChunk.from_arrays(np.arange(4, dtype=np.uint64) * 64, np.zeros(4, bool),
                                np.arange(4, dtype=np.int64), 0)
    import h5py
    summary = '{"workload": "ddpm", "batch": 4, "flops": {"fwd": 2.0e9}}'
    for name, read in (("t.hdf", True), ("t.h5", True), ("t.bin", False)):
        f = tmp_path / name
        write_hdf5(f, [ch])
        with h5py.File(f, "a") as h:
            h["trace"].attrs["summary"] = summary
        want = {"workload": "ddpm", "batch": 4, "flops": 2.0e9,
                "made_with": {"workload": "ddpm"}} if read else {}
        assert trace_metadata(f) == want, name
