"""Request traces: formats, streaming chunked readers, writers and merging.

A trace is a sequence of memory requests, each an address, a direction (read or write) and
the memory-clock cycle at which it arrives at the controller.  Cycles never decrease along a
trace.  Every reader here *streams*: it yields :class:`TraceChunk` objects of at most
``chunk_size`` requests and holds a fixed amount of memory however long the trace is, so a
multi-gigabyte trace can be simulated, converted or summarised on a laptop.

Formats
-------
``"text"`` -- DRAMsim3's text format
    One request a line, whitespace-separated ``ADDR OP CYCLE``::

        0x1a879140 WRITE 0
        a0000000   READ  4       # hex without prefix, any case, is accepted too

    * ``ADDR``: hexadecimal, with or without a ``0x``/``0X`` prefix, digits in either case,
      at most 64 bits.
    * ``OP``: ``WRITE``, ``write``, ``P_MEM_WR`` and ``BOFF`` are writes; ``READ``, ``read``,
      ``P_MEM_RD`` and ``P_FETCH`` are reads.  DRAMsim3 itself reads *any* other token as a
      read; we reject other tokens by default (``strict=True``) because they are nearly always
      a sign of a wrong file, and accept them as reads with ``strict=False`` (which also
      ignores extra tokens after the cycle).
    * ``CYCLE``: decimal, non-negative, memory clock cycles, non-decreasing along the file.
    * Blank lines and lines whose first non-blank character is ``#`` are skipped; ``\\r\\n``
      line ends, a missing final newline and a UTF-8 byte-order mark are accepted.

    Parsing is done by a numba kernel (:func:`_parse_text`) over a ``uint8`` buffer filled
    from the file a few MiB at a time; a line split across two reads is carried over.  Parse
    rate is 1-2 x 10^7 lines (300-500 MB) a second on one core after JIT warm-up.

``"binary"`` -- DiffMem compact binary, extension ``.dmt``
    A 32-byte little-endian header followed by fixed 24-byte records::

        offset size  header field
        0      8     magic  b"DMTRACE1"
        8      4     uint32 version (1)
        12     4     uint32 flags (0; reserved, ignored by readers of version 1)
        16     8     uint64 record count
        24     8     reserved (zero)

        offset size  record field (numpy dtype :data:`BINARY_RECORD`)
        0      8     addr      <u8  byte address
        8      8     cycle     <i8  memory clock cycle, >= 0, non-decreasing
        16     2     stream    <u2  source stream / core index
        18     1     is_write  u1   0 = read, 1 = write (any non-zero value reads as write)
        19     5     pad            zero

    The record count is written last (the writer streams, then patches the header), and a
    reader rejects a file whose size does not match it, so a truncated file is caught.

``"hdf5"`` -- a group (default ``"trace"``) in an HDF5 file
    One-dimensional, chunked (``HDF5_CHUNK`` rows), compressed, resizable datasets ``addr``
    (``<u8``), ``cycle`` (``<u8``), ``is_write`` (``u1``) and ``stream`` (``<u2``, optional on
    read), with group attributes ``format="diffmem-trace"``, ``version=1``,
    ``clock="memory"`` and ``count``.  Several traces can live in one file under different
    groups (a project file, for instance).

All writers take one :class:`TraceChunk` or any iterable of them (such as a reader), write
to a temporary file in the destination folder, fsync it and ``os.replace`` it onto the final
name, so an interrupted write never leaves a half-written file behind.

Errors in the data raise :class:`engine.errors.TraceError`, whose message names the file,
the line (text) or record (binary/HDF5) and what was expected.
"""
from __future__ import annotations

import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterable, Iterator, Sequence

import numpy as np

from engine import kernel_aot
from engine.bits import trailing_zeros
from engine.errors import TraceError
from engine.fileio import atomic_path
from engine.lazy_jit import njit   # numba.njit, numba imported at first use

__all__ = [
    "TraceChunk",
    "FORMATS",
    "BINARY_MAGIC",
    "BINARY_VERSION",
    "BINARY_HEADER",
    "BINARY_RECORD",
    "HDF5_FORMAT_NAME",
    "HDF5_CHUNK",
    "LINE_BYTES",
    "detect_format",
    "iter_trace",
    "iter_merged",
    "read_trace",
    "write_text",
    "write_binary",
    "write_hdf5",
    "write_trace",
    "convert",
    "trace_summary",
]

log = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]

#: The trace formats, as returned by :func:`detect_format` and taken by ``fmt=`` arguments.
FORMATS = ("text", "binary", "hdf5")

#: Default number of requests per chunk.
DEFAULT_CHUNK = 1 << 18
#: Default number of bytes the text reader reads from the file at a time.
DEFAULT_READ_BYTES = 4 << 20
#: Longest text line accepted (a longer one is an error: the file is probably not a trace).
MAX_LINE_BYTES = 1 << 16

#: Cache-line size used for footprints in :func:`trace_summary`.
LINE_BYTES = 64

BINARY_MAGIC = b"DMTRACE1"
BINARY_VERSION = 1
#: Header of a ``.dmt`` file (32 bytes).
BINARY_HEADER = np.dtype([("magic", "S8"), ("version", "<u4"), ("flags", "<u4"),
                          ("count", "<u8"), ("reserved", "V8")])
#: One request of a ``.dmt`` file (24 bytes).
BINARY_RECORD = np.dtype([("addr", "<u8"), ("cycle", "<i8"), ("stream", "<u2"),
                          ("is_write", "u1"), ("pad", "V5")])
assert BINARY_HEADER.itemsize == 32 and BINARY_RECORD.itemsize == 24

HDF5_FORMAT_NAME = "diffmem-trace"
HDF5_VERSION = 1
#: Rows per HDF5 storage chunk.
HDF5_CHUNK = 1 << 16
_HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

_TEXT_EXPECTED = "expected '0xADDR READ|WRITE CYCLE'"
_LOOKS_HEX = re.compile(rb"0[xX][0-9a-fA-F]{1,16}")     # a first field shaped like an address
#: Latest cycle a request may arrive at (the kernel's horizon INF is 2^62).
MAX_CYCLE = 2**62 - 1


# --------------------------------------------------------------------------------------------
# The chunk type
# --------------------------------------------------------------------------------------------

@dataclass
class TraceChunk:
    """A run of consecutive requests, as parallel arrays of equal length.

    Attributes:
        addr: ``uint64`` byte addresses.
        is_write: ``bool``, True for writes.
        cycle: ``int64`` arrival cycles in memory clock cycles, non-decreasing.
        stream: ``uint16`` index of the source file / stream (core) of each request.
    """

    addr: np.ndarray
    is_write: np.ndarray
    cycle: np.ndarray
    stream: np.ndarray

    def __len__(self) -> int:
        return int(self.addr.shape[0])

    def __getitem__(self, index: slice | np.ndarray) -> TraceChunk:
        """Rows selected by a slice, an index array or a boolean mask."""
        return TraceChunk(self.addr[index], self.is_write[index], self.cycle[index],
                          self.stream[index])

    @classmethod
    def empty(cls) -> TraceChunk:
        """A chunk holding no request."""
        return cls(np.empty(0, np.uint64), np.empty(0, np.bool_), np.empty(0, np.int64),
                   np.empty(0, np.uint16))

    @classmethod
    def from_arrays(cls, addr: Any, is_write: Any, cycle: Any, stream: Any = 0) -> TraceChunk:
        """Build a chunk from array-likes, converting to the canonical dtypes.

        ``stream`` may be a scalar, given to every request.
        """
        a = np.ascontiguousarray(addr, dtype=np.uint64).reshape(-1)
        n = a.shape[0]
        w = np.ascontiguousarray(is_write, dtype=np.bool_).reshape(-1)
        c = np.ascontiguousarray(cycle, dtype=np.int64).reshape(-1)
        if np.ndim(stream) == 0:
            s = np.full(n, int(stream), np.uint16)
        else:
            s = np.ascontiguousarray(stream, dtype=np.uint16).reshape(-1)
        if not (w.shape[0] == c.shape[0] == s.shape[0] == n):
            raise ValueError(f"TraceChunk arrays differ in length: addr {n}, is_write "
                             f"{w.shape[0]}, cycle {c.shape[0]}, stream {s.shape[0]}")
        return cls(a, w, c, s)

    @classmethod
    def concat(cls, chunks: Sequence[TraceChunk]) -> TraceChunk:
        """The chunks one after the other, in one chunk."""
        if not chunks:
            return cls.empty()
        if len(chunks) == 1:
            return chunks[0]
        return cls(np.concatenate([c.addr for c in chunks]),
                   np.concatenate([c.is_write for c in chunks]),
                   np.concatenate([c.cycle for c in chunks]),
                   np.concatenate([c.stream for c in chunks]))

    @property
    def reads(self) -> int:
        """Number of reads in the chunk."""
        return len(self) - int(np.count_nonzero(self.is_write))

    @property
    def writes(self) -> int:
        """Number of writes in the chunk."""
        return int(np.count_nonzero(self.is_write))


def _canonical(chunk: TraceChunk) -> TraceChunk:
    """The chunk with every array in its canonical dtype, contiguous."""
    return TraceChunk.from_arrays(chunk.addr, chunk.is_write, chunk.cycle,
                                  chunk.stream if np.ndim(chunk.stream) else int(chunk.stream))


# --------------------------------------------------------------------------------------------
# Format detection
# --------------------------------------------------------------------------------------------

def suffix_format(path: PathLike) -> str | None:
    """The trace format a file name's extension says (``"text"``, ``"binary"``,
    ``"hdf5"``), None for another: the one list of the extensions (detect_format reads the
    file's magic bytes first)."""
    suffix = Path(path).suffix.lower()
    if suffix == ".dmt":
        return "binary"
    if suffix in (".h5", ".hdf5", ".hdf", ".he5"):
        return "hdf5"
    if suffix in (".trace", ".txt", ".trc"):
        return "text"
    return None


def detect_format(path: PathLike) -> str:
    """The format of an existing trace file: ``"text"``, ``"binary"`` or ``"hdf5"``.

    Decided by the file's magic bytes (``DMTRACE1``, the HDF5 signature); a file with
    neither is text unless its extension says ``.dmt`` or ``.h5``/``.hdf5`` (the matching
    reader then reports what is wrong with it).
    """
    p = Path(path)
    try:
        with p.open("rb") as f:
            head = f.read(8)
    except FileNotFoundError:
        raise TraceError("no such trace file", path=p) from None
    except IsADirectoryError:
        raise TraceError("is a folder, expected a trace file", path=p) from None
    if head == BINARY_MAGIC:
        return "binary"
    if head == _HDF5_SIGNATURE:
        return "hdf5"
    by_suffix = suffix_format(p)
    if by_suffix == "hdf5" or by_suffix is None:
        # an HDF5 file with a user block has its signature at 512, 1024, ... bytes
        import h5py
        if h5py.is_hdf5(str(p)):
            return "hdf5"
    return by_suffix or "text"


def _dest_format(path: Path, fmt: str | None) -> str:
    """The format to write ``path`` in: ``fmt`` if given, else from the extension."""
    if fmt is not None:
        return _check_fmt(fmt)
    return suffix_format(path) or "text"


def _check_fmt(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown trace format {fmt!r}: expected one of {', '.join(FORMATS)}")
    return fmt


# --------------------------------------------------------------------------------------------
# Text: the numba parser
# --------------------------------------------------------------------------------------------

# error codes returned by _parse_text
_OK = 0
_E_MALFORMED = 1
_E_OP = 2
_E_ORDER = 3
_E_CAPACITY = 4
_E_ADDR_RANGE = 5
_E_CYCLE_RANGE = 6

# slots of the state array shared with _parse_text
_S_POS = 0         # in: where to start; out: start of the first line not consumed
_S_N = 1           # in/out: requests already in the output arrays
_S_LINES = 2       # out: complete lines consumed by this call (data, blank and comment)
_S_ERR = 3         # out: error code, _OK if none
_S_LAST = 4        # in/out: cycle of the previous request (-1 before the first)
_S_SLOTS = 5



@njit(cache=True, nogil=True, inline="always")
def _is_blank(c: int) -> bool:
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


def _hex_table() -> np.ndarray:
    t = np.full(256, -1, np.int64)
    for i, ch in enumerate(b"0123456789abcdef"):
        t[ch] = i
    for i, ch in enumerate(b"ABCDEF"):
        t[ch] = 10 + i
    return t


#: value of each byte as a hexadecimal digit, -1 if it is none (a constant in the parser)
_HEX = _hex_table()


@njit(cache=True, nogil=True)
def _classify_op(buf: np.ndarray, s: int, n: int) -> int:
    """1 if buf[s:s+n] is a write token, 0 a known read token, -1 any other token."""
    if n == 4:
        c0, c1, c2, c3 = buf[s], buf[s + 1], buf[s + 2], buf[s + 3]
        if c0 == 82 and c1 == 69 and c2 == 65 and c3 == 68:        # READ
            return 0
        if c0 == 114 and c1 == 101 and c2 == 97 and c3 == 100:     # read
            return 0
        if c0 == 66 and c1 == 79 and c2 == 70 and c3 == 70:        # BOFF
            return 1
    elif n == 5:
        c0, c1, c2, c3, c4 = buf[s], buf[s + 1], buf[s + 2], buf[s + 3], buf[s + 4]
        if c0 == 87 and c1 == 82 and c2 == 73 and c3 == 84 and c4 == 69:      # WRITE
            return 1
        if c0 == 119 and c1 == 114 and c2 == 105 and c3 == 116 and c4 == 101:  # write
            return 1
    elif n == 7:
        # P_FETCH
        if (buf[s] == 80 and buf[s + 1] == 95 and buf[s + 2] == 70 and buf[s + 3] == 69
                and buf[s + 4] == 84 and buf[s + 5] == 67 and buf[s + 6] == 72):
            return 0
    elif n == 8:
        # P_MEM_RD / P_MEM_WR
        if (buf[s] == 80 and buf[s + 1] == 95 and buf[s + 2] == 77 and buf[s + 3] == 69
                and buf[s + 4] == 77 and buf[s + 5] == 95):
            if buf[s + 6] == 82 and buf[s + 7] == 68:
                return 0
            if buf[s + 6] == 87 and buf[s + 7] == 82:
                return 1
    return -1


@njit(cache=True, nogil=True, inline="always")
def _hex_run(buf: np.ndarray, i: int, end: int) -> tuple[int, int]:
    """(value, index after them) of the hexadecimal digits from buf[i] on (a value of more
    than 16 digits keeps its low 64 bits: the caller counts the digits)."""
    a = 0
    while i < end:
        d = _HEX[buf[i]]
        if d < 0:
            break
        a = (a << 4) | d
        i += 1
    return a, i

# ---- eight bytes at a time (SWAR) for the common line's digit runs --------------------------
_ONES = np.uint64(0x0101010101010101)
_HIGH = np.uint64(0x8080808080808080)
_LOW_NIBBLES = np.uint64(0x0F0F0F0F0F0F0F0F)
_LOWER_CASE = np.uint64(0x2020202020202020)
#: byte b of a word (b < 0x80) is >= lo where (b + (0x80 - lo)) has its high bit, and > hi
#: where (b + (0x7f - hi)) has it: no byte carries into the next (a byte at 0x80 or above, or
#: one a lower byte carried into, is never a digit here, and only the run up to the first
#: byte that is not a digit counts)
_GE_0 = np.uint64(0x5050505050505050)         # >= '0' (0x30)
_GT_9 = np.uint64(0x4646464646464646)         # > '9' (0x39)
_GE_A = np.uint64(0x1F1F1F1F1F1F1F1F)         # >= 'a' (0x61), after | 0x20 per byte
_GT_F = np.uint64(0x1919191919191919)         # > 'f' (0x66)
#: multipliers that combine a run's digits (most significant first) into its value: pairs,
#: then quads, then eights (each adds a byte / pair / quad times the base to its neighbour)
_HEX_M1, _HEX_M2, _HEX_M3 = (np.uint64(1 + (16 << 8)), np.uint64(1 + (256 << 16)),
                             np.uint64(1 + (65536 << 32)))
_DEC_M1, _DEC_M2, _DEC_M3 = (np.uint64(1 + (10 << 8)), np.uint64(1 + (100 << 16)),
                             np.uint64(1 + (10000 << 32)))
_MASK_PAIRS = np.uint64(0x00FF00FF00FF00FF)
_MASK_QUADS = np.uint64(0x0000FFFF0000FFFF)
_POW10 = np.array([10 ** k for k in range(9)], np.uint64)


@njit(cache=True, nogil=True, inline="always")
def _word(buf: np.ndarray, k: int) -> np.uint64:
    """buf[k:k+8] as a little-endian 64-bit word (buf[k] its lowest byte)."""
    u = np.uint64(k)          # (an unsigned index: numba adds no negative-index wrap-around,
    #                           so LLVM can merge the eight loads into one)
    return (np.uint64(buf[u]) | (np.uint64(buf[u + np.uint64(1)]) << np.uint64(8))
            | (np.uint64(buf[u + np.uint64(2)]) << np.uint64(16))
            | (np.uint64(buf[u + np.uint64(3)]) << np.uint64(24))
            | (np.uint64(buf[u + np.uint64(4)]) << np.uint64(32))
            | (np.uint64(buf[u + np.uint64(5)]) << np.uint64(40))
            | (np.uint64(buf[u + np.uint64(6)]) << np.uint64(48))
            | (np.uint64(buf[u + np.uint64(7)]) << np.uint64(56)))


@njit(cache=True, nogil=True, inline="always")
def _run_length(valid: np.uint64) -> int:
    """Bytes before the first whose high bit is clear in ``valid`` (8 if none is)."""
    bad = ~valid & _HIGH
    if bad == np.uint64(0):
        return 8
    return np.int64(trailing_zeros(bad) >> np.uint64(3))


@njit(cache=True, nogil=True, inline="always")
def _run_value(v: np.uint64, n: int, m1: np.uint64, m2: np.uint64, m3: np.uint64) -> np.uint64:
    """The value of the first n bytes of v (each a digit's value, the first the most
    significant): moved to the top bytes (zeros before them), then combined by the base's
    multipliers (_HEX_M1-3 or _DEC_M1-3)."""
    v <<= np.uint64(8 * (8 - n))
    v = ((v * m1) >> np.uint64(8)) & _MASK_PAIRS
    v = ((v * m2) >> np.uint64(16)) & _MASK_QUADS
    return (v * m3) >> np.uint64(32)


@njit(cache=True, nogil=True, inline="always")
def _hex8(w: np.uint64) -> tuple[int, np.uint64]:
    """(n, value) of the hexadecimal digits at the start of word w (n = 0-8)."""
    lc = w | _LOWER_CASE
    valid = (((w + _GE_0) & ~(w + _GT_9)) | ((lc + _GE_A) & ~(lc + _GT_F))) & _HIGH
    n = _run_length(valid)
    if n == 0:
        return 0, np.uint64(0)
    # each byte's nibble ('a'-'f' and 'A'-'F' have bit 6 set: + 9)
    v = (w & _LOW_NIBBLES) + np.uint64(9) * ((w >> np.uint64(6)) & _ONES)
    return n, _run_value(v, n, _HEX_M1, _HEX_M2, _HEX_M3)


@njit(cache=True, nogil=True, inline="always")
def _dec8(w: np.uint64) -> tuple[int, np.uint64]:
    """(n, value) of the decimal digits at the start of word w (n = 0-8)."""
    n = _run_length((w + _GE_0) & ~(w + _GT_9) & _HIGH)
    if n == 0:
        return 0, np.uint64(0)
    return n, _run_value(w & _LOW_NIBBLES, n, _DEC_M1, _DEC_M2, _DEC_M3)


@njit(cache=True, nogil=True, inline="always")
def _swar_line(buf: np.ndarray, i: int) -> tuple[int, int, int, int]:
    """The common line ("0x<hex> READ|WRITE <decimal>\n", single spaces, up to 15 digits
    each) at buf[i], read eight bytes at a time: (end of the cycle's digits, address, 1 if
    a write else 0, cycle), or end -1 where the line is not of that form (the caller then
    reads it through the general path). buf must hold 40 bytes from i on; the caller checks
    that the line's newline, at the end returned, lies before the valid data's end (every
    byte the line is read from precedes it)."""
    k = i + 2
    n, a = _hex8(_word(buf, k))
    if n == 0:
        return -1, 0, 0, 0
    if n == 8:
        n2, a2 = _hex8(_word(buf, k + 8))
        if n2 == 8:
            return -1, 0, 0, 0              # 16 digits or more: the general path
        a = (a << np.uint64(4 * n2)) | a2   # (n2 = 0: a as it was)
        n += n2
    j = k + n
    if buf[j] != 32:
        return -1, 0, 0, 0
    op = _word(buf, j + 1)
    if op & np.uint64(0xFFFFFFFFFF) == np.uint64(0x2044414552):            # "READ "
        w = 0
        j += 6
    elif op & np.uint64(0xFFFFFFFFFFFF) == np.uint64(0x204554495257):      # "WRITE "
        w = 1
        j += 7
    else:
        return -1, 0, 0, 0
    # (the decimal run as the hexadecimal one above; one helper for both, the base a flag,
    # made the parse ~15 % slower)
    n, c = _dec8(_word(buf, j))
    if n == 0:
        return -1, 0, 0, 0
    if n == 8:
        n2, c2 = _dec8(_word(buf, j + 8))
        if n2 == 8:
            return -1, 0, 0, 0
        c = c * _POW10[n2] + c2             # (n2 = 0: c as it was)
        n += n2
    return j + n, np.int64(a), w, np.int64(c)


@njit(cache=True, nogil=True)
def _parse_text(buf: np.ndarray, end: int, out_addr: np.ndarray, out_write: np.ndarray,
                out_cycle: np.ndarray, strict: bool, has_capacity: bool, capacity: int,
                state: np.ndarray) -> None:
    """Parse the complete lines of ``buf[state[_S_POS]:end]`` into the output arrays.

    Stops at the first line without its ``\\n`` in the buffer (the caller reads more and
    calls again), when the output arrays are full, or at the first bad line (``state[_S_ERR]``
    set, ``state[_S_POS]`` at the start of that line, which is always complete).
    ``out_addr`` is ``int64`` holding the address bits (the caller views it as ``uint64``).
    """
    pos = state[_S_POS]
    n = state[_S_N]
    last = state[_S_LAST]
    cap_out = out_addr.shape[0]
    swar_end = buf.shape[0] - 40        # (_swar_line reads up to 40 bytes from a line's start)
    lines = 0
    err = 0
    while n < cap_out:
        start = pos
        i = pos
        # ---- the common line, "0x<hex> READ|WRITE <decimal>\n" with single spaces and up to
        # 15 digits each (what our writer and DRAMsim3's generators emit), eight bytes at a
        # time; any other line, or an error, goes through the general path below
        if i < swar_end and buf[i] == 48 and buf[i + 1] == 120:
            j, a, w, cyc = _swar_line(buf, i)
            if (j >= 0 and j < end and buf[j] == 10 and cyc >= last
                    and not (has_capacity and (a < 0 or a >= capacity))):
                out_addr[n] = a
                out_write[n] = w == 1
                out_cycle[n] = cyc
                n += 1
                last = cyc
                pos = j + 1
                lines += 1
                continue
        while i < end and _is_blank(buf[i]):
            i += 1
        if i >= end:
            break                                   # incomplete line
        c = buf[i]
        if c == 10:                                 # blank line
            pos = i + 1
            lines += 1
            continue
        if c == 35:                                 # '#' comment
            while i < end and buf[i] != 10:
                i += 1
            if i >= end:
                break
            pos = i + 1
            lines += 1
            continue
        # ---- address
        if c == 48 and i + 1 < end and (buf[i + 1] == 120 or buf[i + 1] == 88):
            i += 2
        digits_start = i
        while i < end and buf[i] == 48:         # leading zeros
            i += 1
        nd = i - digits_start
        a, j = _hex_run(buf, i, end)
        sig = j - i
        i = j
        nd += sig
        if sig > 16:
            err = _E_ADDR_RANGE
        elif i >= end:
            break
        elif nd == 0 or not _is_blank(buf[i]):
            err = _E_MALFORMED
        # ---- operation
        is_write = False
        if err == 0:
            while i < end and _is_blank(buf[i]):
                i += 1
            op_start = i
            while i < end and buf[i] != 10 and not _is_blank(buf[i]):
                i += 1
            if i >= end:
                break
            op_len = i - op_start
            if op_len == 0:
                err = _E_MALFORMED
            else:
                kind = _classify_op(buf, op_start, op_len)
                is_write = kind == 1
                if kind < 0 and strict:
                    err = _E_OP
        # ---- cycle
        cyc = 0
        if err == 0:
            while i < end and _is_blank(buf[i]):
                i += 1
            digits_start = i
            while i < end and buf[i] == 48:     # leading zeros
                i += 1
            sig_start = i
            while i < end:
                ch = buf[i]
                if ch < 48 or ch > 57:
                    break
                cyc = cyc * 10 + (ch - 48)
                i += 1
            nd = i - digits_start
            if i - sig_start > 18:
                err = _E_CYCLE_RANGE
            elif i >= end:
                break
            elif nd == 0 or (buf[i] != 10 and not _is_blank(buf[i])):
                err = _E_MALFORMED
        # ---- end of line
        if err == 0:
            while i < end and _is_blank(buf[i]):
                i += 1
            if i >= end:
                break
            if buf[i] != 10:
                if strict:
                    err = _E_MALFORMED
                else:
                    while i < end and buf[i] != 10:
                        i += 1
                    if i >= end:
                        break
        if err == 0:
            if cyc < last:
                err = _E_ORDER
            elif has_capacity and (a < 0 or a >= capacity):
                err = _E_CAPACITY
        if err != 0:
            # report only complete lines: the caller prints the whole line
            while i < end and buf[i] != 10:
                i += 1
            if i >= end:
                err = 0
                break
            pos = start
            break
        out_addr[n] = a
        out_write[n] = is_write
        out_cycle[n] = cyc
        n += 1
        last = cyc
        pos = i + 1
        lines += 1
    state[_S_POS] = pos
    state[_S_N] = n
    state[_S_LINES] = lines
    state[_S_ERR] = err
    state[_S_LAST] = last


def _text_error(path: Path, line_no: int, text: bytes, code: int, last_cycle: int,
                capacity: int | None, seen: int = 1) -> TraceError:
    """The TraceError for a bad text line (``text`` without its newline).

    ``seen``: requests read before this line. With none, a line that is not even shaped like
    a request (three fields, the first a 0x number) means the file has not shown itself to be
    a trace at all (it may be any file a hostile project pointed at), so its content is never
    quoted; a Ramulator 2 LoadStoreTrace line is named as such."""
    fields = text.split()
    shaped = len(fields) == 3 and _LOOKS_HEX.fullmatch(fields[0]) is not None
    if seen <= 0 and not shaped and code not in (_E_CAPACITY, _E_ADDR_RANGE, _E_CYCLE_RANGE):
        if len(fields) == 2 and fields[0] in (b"LD", b"ST"):
            return TraceError(f"line {line_no} is a Ramulator 2 LoadStoreTrace line "
                              f"('LD|ST ADDR', no cycle): this reader takes DRAMsim3's "
                              f"format ({_TEXT_EXPECTED}); the Ramulator-compatible mode "
                              f"reads LoadStoreTrace files (main.py ramulator)",
                              path=path, line=line_no)
        return TraceError(f"not a request trace: line {line_no} is not a request "
                          f"({_TEXT_EXPECTED}; the line is not shown because nothing before "
                          f"it was a valid request)", path=path, line=line_no)
    shown = text.decode("utf-8", "replace").strip()
    if len(shown) > 120:
        shown = shown[:117] + "..."
    tokens = shown.split()
    if code == _E_OP:
        msg = (f"unknown request type {tokens[1]!r}: expected READ, WRITE, P_MEM_RD, "
               f"P_MEM_WR, BOFF or P_FETCH (DRAMsim3 reads any other type as a read: the "
               f"Python API's strict=False does too)")
    elif code == _E_ORDER:
        msg = (f"cycle {tokens[2]} is before the previous request's cycle {last_cycle}: "
               f"expected non-decreasing cycles")
    elif code == _E_CAPACITY:
        msg = (f"address {tokens[0]} is beyond the memory capacity of {capacity} bytes "
               f"(expected an address below {capacity:#x}; --wrap-addresses drops the bits "
               f"above the capacity, as DRAMsim3 does)")
    elif code == _E_ADDR_RANGE:
        msg = f"address does not fit in 64 bits: {_TEXT_EXPECTED}, got {shown!r}"
    elif code == _E_CYCLE_RANGE:
        msg = f"cycle has more than 18 digits: {_TEXT_EXPECTED}, got {shown!r}"
    else:
        msg = f"{_TEXT_EXPECTED}, got {shown!r}"
    return TraceError(msg, path=path, line=line_no)


def _capacity_arg(capacity_bytes: int | None) -> tuple[bool, int]:
    if capacity_bytes is None:
        return False, 0
    cap = int(capacity_bytes)
    if cap <= 0:
        raise ValueError(f"capacity_bytes must be positive, got {capacity_bytes}")
    if cap >= 2**63:                     # every 64-bit address below 2**63 fits; the parser
        return False, 0                  # treats larger ones as negative int64
    return True, cap


def _iter_text(path: Path, *, chunk_size: int, strict: bool, capacity_bytes: int | None,
               stream_id: int, read_bytes: int = DEFAULT_READ_BYTES) -> Iterator[TraceChunk]:
    """Stream a DRAMsim3 text trace (see the module docstring) in chunks."""
    if read_bytes < 1:
        raise ValueError(f"read_bytes must be at least 1, got {read_bytes}")
    has_cap, cap = _capacity_arg(capacity_bytes)
    parse = kernel_aot.text_parser(_parse_text)     # compiled ahead of time, or numba's
    # buffer: a carried-over partial line (< MAX_LINE_BYTES) + one read + a final newline
    buf = np.empty(MAX_LINE_BYTES + read_bytes + 1, np.uint8)
    view = memoryview(buf)  # type: ignore[arg-type]
    state = np.zeros(_S_SLOTS, np.int64)
    state[_S_LAST] = -1

    def new_out() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (np.empty(chunk_size, np.int64), np.empty(chunk_size, np.bool_),
                np.empty(chunk_size, np.int64))

    def make_chunk(out: tuple[np.ndarray, np.ndarray, np.ndarray], n: int) -> TraceChunk:
        a, w, c = out
        if n < chunk_size:
            a, w, c = a[:n].copy(), w[:n].copy(), c[:n].copy()
        return TraceChunk(a.view(np.uint64), w, c, np.full(n, stream_id, np.uint16))

    out = new_out()
    line_base = 0            # complete lines before buf[0:]
    fill = 0                 # valid bytes in buf
    eof = False
    first = True
    t0 = time.perf_counter()
    total = 0
    try:
        f = path.open("rb", buffering=0)
    except FileNotFoundError:
        raise TraceError("no such trace file", path=path) from None
    with f:
        while True:
            # ---- refill: keep the unconsumed tail, read after it
            pos = int(state[_S_POS])
            rem = fill - pos
            if rem > MAX_LINE_BYTES:
                raise TraceError(f"line longer than {MAX_LINE_BYTES} bytes: "
                                 f"{_TEXT_EXPECTED} (is this a text trace?)",
                                 path=path, line=line_base + 1)
            if rem and pos:
                buf[:rem] = buf[pos:fill]
            state[_S_POS] = 0
            fill = rem
            got = f.readinto(view[fill:fill + read_bytes])
            if not got:
                eof = True
                if fill and buf[fill - 1] != 10:
                    buf[fill] = 10             # last line without its newline
                    fill += 1
            else:
                if first and got >= 3 and bytes(buf[:3]) == b"\xef\xbb\xbf":
                    state[_S_POS] = 3          # UTF-8 byte-order mark
                first = False
                fill += got
            # ---- parse what is there, emitting full chunks
            while True:
                parse(buf, fill, out[0], out[1], out[2], strict, has_cap, cap, state)
                lines = int(state[_S_LINES])
                if state[_S_ERR] != _OK:
                    s = int(state[_S_POS])
                    e = s + int(np.argmax(buf[s:fill] == 10))
                    raise _text_error(path, line_base + lines + 1, bytes(buf[s:e]),
                                      int(state[_S_ERR]), int(state[_S_LAST]), capacity_bytes,
                                      seen=total + int(state[_S_N]))
                line_base += lines
                n = int(state[_S_N])
                if n < chunk_size:
                    break
                yield make_chunk(out, n)
                total += n
                out = new_out()
                state[_S_N] = 0
            if eof:
                break
    n = int(state[_S_N])
    if n:
        yield make_chunk(out, n)
        total += n
    log.debug("read %d requests from %s in %.3f s", total, path, time.perf_counter() - t0)


@njit(cache=True, nogil=True)
def _format_text(addr: np.ndarray, is_write: np.ndarray, cycle: np.ndarray,
                 out: np.ndarray) -> int:
    """Write ``0x%x READ|WRITE %d\\n`` lines into ``out``; returns the bytes written.

    ``addr`` is ``int64`` holding the address bits; ``out`` must hold 45 bytes a request.
    """
    p = 0
    digits = np.empty(20, np.uint8)
    for k in range(addr.shape[0]):
        a = addr[k]
        out[p] = 48
        out[p + 1] = 120
        p += 2
        nd = 16
        while nd > 1 and ((a >> (4 * (nd - 1))) & 15) == 0:
            nd -= 1
        for s in range(nd - 1, -1, -1):
            d = (a >> (4 * s)) & 15
            out[p] = d + 48 if d < 10 else d + 87
            p += 1
        if is_write[k]:
            out[p] = 32
            out[p + 1] = 87
            out[p + 2] = 82
            out[p + 3] = 73
            out[p + 4] = 84
            out[p + 5] = 69
            out[p + 6] = 32
            p += 7
        else:
            out[p] = 32
            out[p + 1] = 82
            out[p + 2] = 69
            out[p + 3] = 65
            out[p + 4] = 68
            out[p + 5] = 32
            p += 6
        c = cycle[k]
        m = 0
        while True:
            digits[m] = 48 + c % 10
            c //= 10
            m += 1
            if c == 0:
                break
        for j in range(m - 1, -1, -1):
            out[p] = digits[j]
            p += 1
        out[p] = 10
        p += 1
    return p


# --------------------------------------------------------------------------------------------
# Checks shared by the binary and HDF5 readers and by the writers
# --------------------------------------------------------------------------------------------

def _check_records(path: Path, addr: np.ndarray, cycle: np.ndarray, prev_cycle: int,
                   first_record: int, capacity_bytes: int | None, what: str = "record") -> None:
    """Raise TraceError naming the first record breaking the trace rules, if any.

    ``first_record`` is the 1-based number of ``addr[0]`` in the file.
    """
    if cycle.shape[0] == 0:
        return
    bad = np.flatnonzero(cycle < 0)
    if bad.size:
        k = int(bad[0])
        raise TraceError(f"{what} {first_record + k}: cycle {int(cycle[k])} is negative: "
                         f"expected a non-negative cycle", path=path)
    bad = np.flatnonzero(cycle > MAX_CYCLE)
    if bad.size:
        k = int(bad[0])
        raise TraceError(f"{what} {first_record + k}: cycle {int(cycle[k])} is beyond 2^62 "
                         f"(the simulator's horizon): expected a cycle below {MAX_CYCLE + 1}",
                         path=path)
    if cycle[0] < prev_cycle:
        raise TraceError(f"{what} {first_record}: cycle {int(cycle[0])} is before the previous "
                         f"request's cycle {prev_cycle}: expected non-decreasing cycles",
                         path=path)
    bad = np.flatnonzero(cycle[1:] < cycle[:-1])
    if bad.size:
        k = int(bad[0]) + 1
        raise TraceError(f"{what} {first_record + k}: cycle {int(cycle[k])} is before the "
                         f"previous request's cycle {int(cycle[k - 1])}: expected "
                         f"non-decreasing cycles", path=path)
    if capacity_bytes is not None and int(capacity_bytes) < 2**64:
        bad = np.flatnonzero(addr >= np.uint64(int(capacity_bytes)))
        if bad.size:
            k = int(bad[0])
            raise TraceError(f"{what} {first_record + k}: address {int(addr[k]):#x} is beyond "
                             f"the memory capacity of {capacity_bytes} bytes (expected an "
                             f"address below {int(capacity_bytes):#x}; --wrap-addresses "
                             f"drops the bits above the capacity, as DRAMsim3 does)",
                             path=path)


def _stream_values(stored: np.ndarray | None, n: int, stream_id: int | None) -> np.ndarray:
    if stream_id is not None:
        return np.full(n, stream_id, np.uint16)
    if stored is None:
        return np.zeros(n, np.uint16)
    return np.ascontiguousarray(stored, dtype=np.uint16)


# --------------------------------------------------------------------------------------------
# Binary (.dmt)
# --------------------------------------------------------------------------------------------

def _read_binary_header(path: Path, f: IO[bytes]) -> int:
    """Validate the header of an open ``.dmt`` file; returns the record count."""
    raw = f.read(BINARY_HEADER.itemsize)
    if len(raw) < BINARY_HEADER.itemsize:
        raise TraceError(f"file of {len(raw)} bytes is too short for the 32-byte DMTRACE1 "
                         f"header", path=path)
    head = np.frombuffer(raw, BINARY_HEADER)[0]
    if bytes(head["magic"]) != BINARY_MAGIC:
        raise TraceError(f"not a binary trace: expected magic bytes {BINARY_MAGIC!r} at the "
                         f"start (the file's own bytes are not shown)", path=path)
    if int(head["version"]) != BINARY_VERSION:
        raise TraceError(f"binary trace version {int(head['version'])} is not supported: "
                         f"expected version {BINARY_VERSION}", path=path)
    count = int(head["count"])
    size = os.fstat(f.fileno()).st_size
    expected = BINARY_HEADER.itemsize + count * BINARY_RECORD.itemsize
    if size != expected:
        held = (size - BINARY_HEADER.itemsize) / BINARY_RECORD.itemsize
        raise TraceError(f"header says {count} records ({expected} bytes) but the file has "
                         f"{size} bytes ({held:g} records): truncated or damaged", path=path)
    return count


def _iter_binary(path: Path, *, chunk_size: int, capacity_bytes: int | None,
                 stream_id: int | None) -> Iterator[TraceChunk]:
    """Stream a ``.dmt`` binary trace in chunks."""
    try:
        f = path.open("rb")
    except FileNotFoundError:
        raise TraceError("no such trace file", path=path) from None
    with f:
        count = _read_binary_header(path, f)
        done = 0
        prev = -1
        while done < count:
            k = min(chunk_size, count - done)
            rec = np.fromfile(f, dtype=BINARY_RECORD, count=k)
            if rec.shape[0] != k:
                raise TraceError(f"record {done + rec.shape[0] + 1}: file ends early: "
                                 f"expected {count} records", path=path)
            addr = np.ascontiguousarray(rec["addr"], dtype=np.uint64)
            cycle = np.ascontiguousarray(rec["cycle"], dtype=np.int64)
            _check_records(path, addr, cycle, prev, done + 1, capacity_bytes)
            yield TraceChunk(addr, rec["is_write"] != 0, cycle,
                             _stream_values(rec["stream"], k, stream_id))
            prev = int(cycle[-1])
            done += k


# --------------------------------------------------------------------------------------------
# HDF5
# --------------------------------------------------------------------------------------------

def _h5_group(path: Path, h5file: Any, group: str) -> Any:
    import h5py
    if group in ("", "/"):
        g = h5file
    else:
        g = h5file.get(group)
    if g is None or not isinstance(g, h5py.Group):
        # only groups that hold a trace are named: the names of an arbitrary HDF5 file (one
        # a hostile project pointed at) are its content and are not shown
        have = [k for k, v in h5file.items() if isinstance(v, h5py.Group)
                and "addr" in v and "cycle" in v][:8]
        raise TraceError(f"no trace group {group!r} in the file: expected one of "
                         f"{have or 'a group holding addr, cycle, is_write datasets'}",
                         path=path)
    fmt = g.attrs.get("format")
    if isinstance(fmt, bytes):
        fmt = fmt.decode("utf-8", "replace")
    if fmt is not None and fmt != HDF5_FORMAT_NAME:
        raise TraceError(f"group {group!r} has format={fmt!r}: expected "
                         f"{HDF5_FORMAT_NAME!r}", path=path)
    version = g.attrs.get("version")
    if version is not None:
        try:
            v = np.asarray(version)
            if v.shape != () or v.dtype.kind not in "iu":
                raise TypeError
            version = int(v)
        except (TypeError, ValueError, OverflowError):
            raise TraceError(f"group {group!r}: attribute version is not an integer: "
                             f"expected version {HDF5_VERSION}", path=path) from None
        if version > HDF5_VERSION:
            raise TraceError(f"group {group!r} holds trace version {version}: expected "
                             f"version {HDF5_VERSION} or older", path=path)
    missing = [name for name in ("addr", "cycle", "is_write") if name not in g]
    if missing:
        raise TraceError(f"group {group!r} lacks dataset(s) {', '.join(missing)}: expected "
                         f"addr, cycle, is_write (and optionally stream)", path=path)
    for name in ("addr", "cycle", "is_write", "stream"):
        if name not in g:
            continue
        ds = g.get(name)
        if not isinstance(ds, h5py.Dataset):
            raise TraceError(f"group {group!r}: {name} is not a dataset: expected a 1-D "
                             f"integer dataset", path=path)
        kind = ds.dtype.kind
        if ds.dtype.fields is not None or kind not in ("i", "u", "b"):
            raise TraceError(f"group {group!r}: dataset {name} has dtype {ds.dtype}: "
                             f"expected {_H5_EXPECTED[name]}", path=path)
        if name in ("addr", "cycle") and kind == "b":
            raise TraceError(f"group {group!r}: dataset {name} has dtype bool: expected "
                             f"{_H5_EXPECTED[name]}", path=path)
        if ds.ndim != 1:
            raise TraceError(f"group {group!r}: dataset {name} has shape {ds.shape}: "
                             f"expected a 1-D dataset of {_H5_EXPECTED[name]}", path=path)
    return g


_H5_EXPECTED = {"addr": "unsigned 64-bit byte addresses", "cycle": "non-negative integer "
                "cycles", "is_write": "0/1 (bool or integer)", "stream": "integers in 0..65535"}


def _iter_hdf5(path: Path, *, chunk_size: int, capacity_bytes: int | None,
               stream_id: int | None, group: str) -> Iterator[TraceChunk]:
    """Stream a trace group of an HDF5 file in chunks."""
    import h5py
    try:
        h5 = h5py.File(path, "r")
    except FileNotFoundError:
        raise TraceError("no such trace file", path=path) from None
    except OSError as e:
        raise TraceError(f"cannot open as HDF5: {e}", path=path) from None
    with h5:
        try:
            yield from _h5_chunks(path, h5, chunk_size=chunk_size,
                                  capacity_bytes=capacity_bytes, stream_id=stream_id,
                                  group=group)
        except (OSError, RuntimeError, ValueError, TypeError, KeyError) as e:
            raise TraceError(f"group {group!r}: cannot read the trace ({type(e).__name__}: "
                             f"{str(e).splitlines()[0][:160] if str(e) else ''})",
                             path=path) from None


def _h5_chunks(path: Path, h5: Any, *, chunk_size: int, capacity_bytes: int | None,
               stream_id: int | None, group: str) -> Iterator[TraceChunk]:
    g = _h5_group(path, h5, group)
    ds_a, ds_c, ds_w = g["addr"], g["cycle"], g["is_write"]
    # (dtypes and shapes were checked by _h5_group)
    ds_s = g["stream"] if "stream" in g else None
    n = ds_a.shape[0]
    for name, ds in (("cycle", ds_c), ("is_write", ds_w), ("stream", ds_s)):
        if ds is not None and ds.shape != (n,):
            raise TraceError(f"group {group!r}: dataset {name} has shape {ds.shape}: "
                             f"expected ({n},) like addr", path=path)
    prev = -1
    for lo in range(0, n, chunk_size):
        hi = min(n, lo + chunk_size)
        raw_a = ds_a[lo:hi]
        if raw_a.dtype.kind == "i" and raw_a.size and raw_a.min() < 0:
            k = int(np.argmax(raw_a < 0))
            raise TraceError(f"record {lo + k + 1}: address {int(raw_a[k])} is negative: "
                             f"expected a byte address", path=path)
        addr = np.ascontiguousarray(raw_a, dtype=np.uint64)
        raw_c = ds_c[lo:hi]
        if raw_c.dtype.kind == "u" and raw_c.size and raw_c.max() >= 2**63:
            k = int(np.argmax(raw_c >= 2**63))
            raise TraceError(f"record {lo + k + 1}: cycle {int(raw_c[k])} does not fit in "
                             f"63 bits: expected a smaller cycle", path=path)
        cycle = np.ascontiguousarray(raw_c, dtype=np.int64)
        _check_records(path, addr, cycle, prev, lo + 1, capacity_bytes)
        raw_w = ds_w[lo:hi]
        if raw_w.dtype.kind != "b" and raw_w.size and (raw_w.min() < 0 or raw_w.max() > 1):
            k = int(np.argmax((raw_w < 0) | (raw_w > 1)))
            raise TraceError(f"record {lo + k + 1}: is_write is {int(raw_w[k])}: expected "
                             f"0 (read) or 1 (write)", path=path)
        is_write = np.ascontiguousarray(raw_w).astype(np.bool_, copy=False)
        stored = ds_s[lo:hi] if ds_s is not None and stream_id is None else None
        if stored is not None and stored.size and (stored.min() < 0
                                                    or stored.max() > 65535):
            k = int(np.argmax((stored < 0) | (stored > 65535)))
            raise TraceError(f"record {lo + k + 1}: stream {int(stored[k])} is out of "
                             f"range: expected 0..65535", path=path)
        yield TraceChunk(addr, is_write, cycle, _stream_values(stored, hi - lo, stream_id))
        prev = int(cycle[-1])


# --------------------------------------------------------------------------------------------
# Public readers
# --------------------------------------------------------------------------------------------

def iter_trace(path: PathLike, *, chunk_size: int = DEFAULT_CHUNK, fmt: str | None = None,
               strict: bool = True, capacity_bytes: int | None = None,
               stream_id: int | None = None, group: str = "trace",
               read_bytes: int = DEFAULT_READ_BYTES) -> Iterator[TraceChunk]:
    """Stream a trace file as chunks of at most ``chunk_size`` requests.

    Memory use is bounded by ``chunk_size`` (and ``read_bytes`` for text), not by the
    length of the trace.  Every chunk but the last holds exactly ``chunk_size`` requests;
    an empty trace yields nothing.

    Args:
        path: the trace file.
        chunk_size: most requests per chunk.
        fmt: ``"text"``, ``"binary"`` or ``"hdf5"``; detected with :func:`detect_format`
            when None.
        strict: text only: reject request types other than READ/read/WRITE/write/P_MEM_RD/
            P_MEM_WR/BOFF/P_FETCH and extra tokens after the cycle.  With False any other
            type is a read, as in DRAMsim3.
        capacity_bytes: if given, an address at or beyond it is an error.
        stream_id: the ``stream`` value of every request; None keeps the streams stored in a
            binary or HDF5 trace (0 for text).
        group: HDF5 only: the group holding the trace.
        read_bytes: text only: bytes read from the file at a time.

    Raises:
        TraceError: the file is missing or malformed; the message names the file and the
            line (text) or record (binary, HDF5) and what was expected.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    if stream_id is not None and not 0 <= int(stream_id) < 2**16:
        raise ValueError(f"stream_id must be in 0..65535, got {stream_id}")
    p = Path(path)
    kind = _check_fmt(fmt) if fmt is not None else detect_format(p)
    if kind == "text":
        return _iter_text(p, chunk_size=chunk_size, strict=strict,
                          capacity_bytes=capacity_bytes,
                          stream_id=0 if stream_id is None else int(stream_id),
                          read_bytes=read_bytes)
    if kind == "binary":
        return _iter_binary(p, chunk_size=chunk_size, capacity_bytes=capacity_bytes,
                            stream_id=stream_id)
    return _iter_hdf5(p, chunk_size=chunk_size, capacity_bytes=capacity_bytes,
                      stream_id=stream_id, group=group)


class _Rechunker:
    """Collects chunks of any size and hands them out as chunks of exactly ``size``."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.parts: list[TraceChunk] = []
        self.held = 0

    def push(self, chunk: TraceChunk) -> Iterator[TraceChunk]:
        if len(chunk) == 0:
            return
        self.parts.append(chunk)
        self.held += len(chunk)
        if self.held < self.size:
            return
        whole = TraceChunk.concat(self.parts)
        lo = 0
        while len(whole) - lo >= self.size:
            yield whole[lo:lo + self.size]
            lo += self.size
        rest = whole[lo:]
        self.parts = [rest] if len(rest) else []
        self.held = len(rest)

    def flush(self) -> Iterator[TraceChunk]:
        if self.held:
            yield TraceChunk.concat(self.parts)
        self.parts, self.held = [], 0


#: to_request_size: a line merges into a request of its block and direction issued at most
#: this many lines earlier (a GPU's L2 and memory controller combine the sectors of one
#: DRAM access that are pending together; the engine's queues hold 32-64 requests a channel)
COALESCE_WINDOW = 64
#: ... and arrived at most this many cycles after that request's first line (a request is
#: pending in the controller's queue for a few hundred cycles at most; merges do not reach
#: across the gaps between a sampled trace's windows)
COALESCE_CYCLES = 256
#: ... and the entries of the direct-mapped table that finds them
COALESCE_TABLE = 1 << 12


def to_request_size(chunks: Iterable[TraceChunk], line_bytes: int,
                    request_bytes: int, window: int = COALESCE_WINDOW
                    ) -> Iterator[TraceChunk]:
    """A trace of ``line_bytes`` requests (a generated trace's 64-byte lines) as requests of
    the memory's ``request_bytes`` (a power of two): on larger ones a line merges into the
    request of its ``request_bytes`` block, direction and stream when a line of it came at
    most ``window`` lines earlier and that request's first line at most
    ``COALESCE_CYCLES`` cycles earlier (a 256-byte GDDR6 request carries four lines:
    replayed one per line, each moved 256 bytes, 4x the step's traffic; merged only when
    consecutive, the lines of one block that thread-block interleaving or the L2's eviction
    order set apart fetched the block again: 1.56x the step's bytes on a tiny ResNet-50);
    ``window`` 1 merges only consecutive lines. Smaller ones split each line into ``line_bytes // request_bytes``
    requests at the same cycle (HBM3's 32 bytes: two a line). Merges reach across chunk
    boundaries. Equal sizes: the chunks as they are."""
    if request_bytes == line_bytes:
        yield from chunks
        return
    if request_bytes & (request_bytes - 1) or line_bytes & (line_bytes - 1):
        raise ValueError(f"request sizes must be powers of two: {line_bytes}, {request_bytes}")
    if request_bytes < line_bytes:
        k = line_bytes // request_bytes
        step = (np.arange(k, dtype=np.uint64) * np.uint64(request_bytes))
        for ch in chunks:
            base = ch.addr & ~np.uint64(line_bytes - 1)
            yield TraceChunk((base[:, None] + step[None, :]).reshape(-1),
                             np.repeat(ch.is_write, k), np.repeat(ch.cycle, k),
                             np.repeat(ch.stream, k))
        return
    shift = np.uint64(request_bytes.bit_length() - 1)
    table_key = np.full(COALESCE_TABLE, -1, np.int64)     # the coalescer's state across chunks
    table_pos = np.zeros(COALESCE_TABLE, np.int64)
    table_cycle = np.zeros(COALESCE_TABLE, np.int64)
    pos = 0
    for ch in chunks:
        n = len(ch)
        if n == 0:
            continue
        keep = np.ones(n, np.bool_)
        _coalesce((ch.addr >> shift).astype(np.int64), ch.is_write.astype(np.bool_),
                  ch.stream.astype(np.int64), ch.cycle.astype(np.int64), keep,
                  table_key, table_pos, table_cycle, pos, window, COALESCE_CYCLES)
        pos += n
        if keep.all():
            yield ch
        elif keep.any():
            yield ch[keep]


@njit(cache=True, nogil=True)
def _coalesce(block: np.ndarray, is_write: np.ndarray, stream: np.ndarray,
              cycle: np.ndarray, keep: np.ndarray, table_key: np.ndarray,
              table_pos: np.ndarray, table_cycle: np.ndarray, pos0: int, window: int,
              cycles: int) -> None:
    """keep[i] = False where request i's block, direction and stream came at most
    ``window`` positions earlier (positions from ``pos0``; a merged line extends the reach,
    so ``window`` 1 merges runs of consecutive lines) and the request it joins arrived at
    most ``cycles`` cycles before it (a request is pending that long at most). The table,
    direct-mapped by a hash of the key, carries them across calls: a colliding key
    replaces the one there, which then merges no more."""
    mask = table_key.shape[0] - 1
    for i in range(block.shape[0]):
        key = (block[i] * 2 + (1 if is_write[i] else 0)) * 65536 + stream[i]
        h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
        slot = np.int64(h >> np.uint64(40)) & mask
        p = pos0 + i
        if (table_key[slot] == key and p - table_pos[slot] <= window
                and cycle[i] - table_cycle[slot] <= cycles):
            keep[i] = False
        else:
            table_cycle[slot] = cycle[i]          # the request's first line
        table_key[slot] = key
        table_pos[slot] = p


def iter_merged(paths: Iterable[PathLike], *, chunk_size: int = DEFAULT_CHUNK,
                fmt: str | None = None, strict: bool = True,
                capacity_bytes: int | None = None, group: str = "trace",
                read_bytes: int = DEFAULT_READ_BYTES) -> Iterator[TraceChunk]:
    """Stream several traces (one per core / stream) merged into one, ordered by cycle.

    Requests at the same cycle keep file order (file 0 first), then line order.  Each
    request's ``stream`` is the index of its file in ``paths``.  The merge buffers at most
    one chunk per file, so memory is constant in the traces' length.  Chunks hold exactly
    ``chunk_size`` requests except the last.  Other arguments as in :func:`iter_trace`.
    """
    paths = [Path(p) for p in paths]
    if len(paths) > 2**16:
        raise ValueError(f"at most 65536 traces can be merged, got {len(paths)}")
    sources = [iter_trace(p, chunk_size=chunk_size, fmt=fmt, strict=strict,
                          capacity_bytes=capacity_bytes, stream_id=i, group=group,
                          read_bytes=read_bytes)
               for i, p in enumerate(paths)]
    k = len(sources)
    held: list[TraceChunk | None] = [None] * k
    done = [False] * k
    out = _Rechunker(chunk_size)
    while True:
        for i in range(k):
            if not done[i] and (held[i] is None or len(held[i]) == 0):  # type: ignore[arg-type]
                nxt = next(sources[i], None)
                while nxt is not None and len(nxt) == 0:
                    nxt = next(sources[i], None)
                held[i] = nxt
                done[i] = nxt is None
        live = [i for i in range(k) if not done[i]]
        if not live:
            break
        # Every future request of file j sorts after (last cycle held of j, j).  The least of
        # these bounds is a point before which everything held is final.
        bound_cycle, bound_file = min((int(held[i].cycle[-1]), i) for i in live)  # type: ignore[union-attr]
        parts = []
        for i in live:
            h = held[i]
            assert h is not None
            side = "right" if i <= bound_file else "left"
            m = int(np.searchsorted(h.cycle, bound_cycle, side=side))
            if m:
                parts.append(h[:m])
                held[i] = h[m:]
        batch = TraceChunk.concat(parts)
        if len(parts) > 1:
            order = np.argsort(batch.cycle, kind="stable")   # parts are in file order
            batch = batch[order]
        yield from out.push(batch)
    yield from out.flush()


def read_trace(path: PathLike, **kw: Any) -> TraceChunk:
    """The whole trace in one chunk: a convenience for traces that fit in memory.

    Keyword arguments are those of :func:`iter_trace`.
    """
    return TraceChunk.concat(list(iter_trace(path, **kw)))


# --------------------------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------------------------

def _as_chunks(chunks_or_chunk: TraceChunk | Iterable[TraceChunk]) -> Iterator[TraceChunk]:
    if isinstance(chunks_or_chunk, TraceChunk):
        if len(chunks_or_chunk):
            yield _canonical(chunks_or_chunk)
        return
    for c in chunks_or_chunk:
        if not isinstance(c, TraceChunk):
            raise TypeError(f"expected TraceChunk objects, got {type(c).__name__}")
        if len(c):
            yield _canonical(c)


class _Validated:
    """Wraps the chunks a writer consumes, checking the trace rules as they pass."""

    def __init__(self, path: Path, chunks: TraceChunk | Iterable[TraceChunk]) -> None:
        self.path = path
        self.chunks = _as_chunks(chunks)
        self.count = 0
        self.prev = -1

    def __iter__(self) -> Iterator[TraceChunk]:
        for c in self.chunks:
            _check_records(self.path, c.addr, c.cycle, self.prev, self.count + 1, None,
                           what="request")
            self.count += len(c)
            self.prev = int(c.cycle[-1])
            yield c




def write_text(path: PathLike, chunks_or_chunk: TraceChunk | Iterable[TraceChunk]) -> int:
    """Write a DRAMsim3 text trace (``0x%x READ|WRITE %d`` lines); returns the request count.

    Streams: takes one chunk or any iterable of chunks (a reader, for instance).
    """
    p = Path(path)
    src = _Validated(p, chunks_or_chunk)
    step = 1 << 16
    buf = np.empty(step * 45, np.uint8)
    with atomic_path(p) as tmp:
        with tmp.open("wb") as f:
            for c in src:
                a = c.addr.view(np.int64)
                for lo in range(0, len(c), step):
                    hi = min(len(c), lo + step)
                    nb = _format_text(a[lo:hi], c.is_write[lo:hi], c.cycle[lo:hi], buf)
                    f.write(memoryview(buf)[:nb])  # type: ignore[arg-type]
    log.debug("wrote %d requests to %s (text)", src.count, p)
    return src.count


def write_binary(path: PathLike, chunks_or_chunk: TraceChunk | Iterable[TraceChunk]) -> int:
    """Write a ``.dmt`` binary trace (see the module docstring); returns the request count."""
    p = Path(path)
    src = _Validated(p, chunks_or_chunk)
    with atomic_path(p) as tmp:
        with tmp.open("wb") as f:
            head = np.zeros(1, BINARY_HEADER)
            head["magic"] = BINARY_MAGIC
            head["version"] = BINARY_VERSION
            f.write(head.tobytes())
            for c in src:
                rec = np.zeros(len(c), BINARY_RECORD)
                rec["addr"] = c.addr
                rec["cycle"] = c.cycle
                rec["stream"] = c.stream
                rec["is_write"] = c.is_write
                f.write(rec.tobytes())
            head["count"] = src.count
            f.seek(0)
            f.write(head.tobytes())
    log.debug("wrote %d requests to %s (binary)", src.count, p)
    return src.count


def write_hdf5_group(g: Any, chunks: Iterable[TraceChunk],
                     compression: str | None = "gzip") -> int:
    """Stream ``chunks`` into the (empty) HDF5 group ``g`` in the trace layout (attributes
    ``format``/``version``/``clock``/``count``; resizable, chunked datasets ``addr``,
    ``cycle``, ``is_write``, ``stream``); returns the request count.  The one home of the
    layout: :func:`write_hdf5` and the project store both write through it."""
    g.attrs["format"] = HDF5_FORMAT_NAME
    g.attrs["version"] = HDF5_VERSION
    g.attrs["clock"] = "memory"
    opts: dict[str, Any] = dict(shape=(0,), maxshape=(None,), chunks=(HDF5_CHUNK,),
                                compression=compression)
    if compression == "gzip":
        opts["compression_opts"] = 4
    if compression is not None:
        opts["shuffle"] = True
    ds = {"addr": g.create_dataset("addr", dtype="<u8", **opts),
          "cycle": g.create_dataset("cycle", dtype="<u8", **opts),
          "is_write": g.create_dataset("is_write", dtype="u1", **opts),
          "stream": g.create_dataset("stream", dtype="<u2", **opts)}
    n = 0
    for c in chunks:
        m = n + len(c)
        for d in ds.values():
            d.resize((m,))
        ds["addr"][n:m] = c.addr
        ds["cycle"][n:m] = np.asarray(c.cycle).astype(np.uint64)
        ds["is_write"][n:m] = np.asarray(c.is_write).view(np.uint8)
        ds["stream"][n:m] = c.stream
        n = m
    g.attrs["count"] = n
    return n


def write_hdf5(path: PathLike, chunks_or_chunk: TraceChunk | Iterable[TraceChunk], *,
               group: str = "trace", compression: str | None = "gzip") -> int:
    """Write a trace into group ``group`` of an HDF5 file; returns the request count.

    Streams chunk by chunk into resizable, chunked, compressed datasets.  If the file
    already is an HDF5 file its other groups are kept (the file is copied to the temporary
    file first) and ``group`` is replaced; any other existing file is overwritten.

    Args:
        compression: ``"gzip"``, ``"lzf"`` or None.
    """
    import h5py
    if compression not in ("gzip", "lzf", None):
        raise ValueError(f"compression must be 'gzip', 'lzf' or None, got {compression!r}")
    if group in ("", "/"):
        raise ValueError("group must name a group, not the file's root")
    p = Path(path)
    src = _Validated(p, chunks_or_chunk)
    keep = p.exists() and h5py.is_hdf5(str(p))
    with atomic_path(p, keep_existing=keep) as tmp:
        with h5py.File(tmp, "a" if keep else "w") as h5:
            if group in h5:
                del h5[group]
            write_hdf5_group(h5.require_group(group), src, compression)
    log.debug("wrote %d requests to %s:%s (hdf5)", src.count, p, group)
    return src.count


def write_trace(path: PathLike, chunks_or_chunk: TraceChunk | Iterable[TraceChunk], *,
                fmt: str | None = None, group: str = "trace",
                compression: str | None = "gzip") -> int:
    """Write in ``fmt`` (default: from the extension: ``.dmt`` binary, ``.h5``/``.hdf5``
    HDF5, anything else text); returns the request count."""
    p = Path(path)
    kind = _dest_format(p, fmt)
    if kind == "text":
        return write_text(p, chunks_or_chunk)
    if kind == "binary":
        return write_binary(p, chunks_or_chunk)
    return write_hdf5(p, chunks_or_chunk, group=group, compression=compression)


def convert(src: PathLike, dst: PathLike, fmt: str | None = None, *,
            chunk_size: int = DEFAULT_CHUNK, strict: bool = True, src_group: str = "trace",
            dst_group: str = "trace", compression: str | None = "gzip",
            fit: tuple[int, int] | None = None) -> int:
    """Convert a trace from any format to any format, streaming; returns the request count.

    ``fmt`` is the destination format (default: from ``dst``'s extension, see
    :func:`write_trace`); the source format is detected.  ``src`` and ``dst`` may be the
    same file (it is replaced atomically once the conversion is complete).  ``fit`` =
    (line bytes, request bytes) writes the requests as :func:`to_request_size` fits them (a
    generated trace's lines as its memory's requests: the output has no line size of its
    own, and is replayed one line, one request).
    """
    chunks = iter_trace(src, chunk_size=chunk_size, strict=strict, group=src_group)
    if fit is not None:
        chunks = to_request_size(chunks, int(fit[0]), int(fit[1]))
    return write_trace(dst, chunks, fmt=fmt, group=dst_group, compression=compression)


# --------------------------------------------------------------------------------------------
# Summary
# --------------------------------------------------------------------------------------------

#: Distinct lines counted exactly; beyond this the footprint is a HyperLogLog estimate.
FOOTPRINT_EXACT_LIMIT = 1 << 22
_HLL_P = 14


@njit(cache=True, nogil=True)
def _hll_update(lines: np.ndarray, registers: np.ndarray, p: int) -> None:
    """HyperLogLog: fold ``lines`` (int64 line numbers) into ``registers`` (2**p uint8)."""
    for k in range(lines.shape[0]):
        # splitmix64 finaliser, in uint64 arithmetic
        z = np.uint64(lines[k]) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
        idx = np.int64(z >> np.uint64(64 - p))
        w = z << np.uint64(p)
        rank = 1
        while rank <= 64 - p and (w & np.uint64(0x8000000000000000)) == np.uint64(0):
            w = w << np.uint64(1)
            rank += 1
        if rank > registers[idx]:
            registers[idx] = rank


def _hll_estimate(registers: np.ndarray) -> float:
    m = registers.shape[0]
    alpha = 0.7213 / (1 + 1.079 / m)
    est = alpha * m * m / float(np.sum(np.ldexp(1.0, -registers.astype(np.int64))))
    zeros = int(np.count_nonzero(registers == 0))
    if est <= 2.5 * m and zeros:
        est = m * np.log(m / zeros)
    return float(est)


def _sorted_unique(values: np.ndarray, kind: str = "quicksort") -> np.ndarray:
    """Distinct values, ascending (a sort is much faster than numpy's hashing unique here)."""
    if values.shape[0] < 2:
        return values.copy()
    s = np.sort(values, kind=kind)
    keep = np.empty(s.shape[0], np.bool_)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]


class _Footprint:
    """Counts distinct cache lines: exactly up to FOOTPRINT_EXACT_LIMIT, then estimated.

    The exact set is a sorted array; new lines are folded into it once as many are pending
    as it holds (amortised O(n log n)).  Past the limit the set is folded into HyperLogLog
    registers and dropped, so memory stays bounded.
    """

    def __init__(self) -> None:
        self.exact: np.ndarray | None = np.empty(0, np.uint64)
        self.pending: list[np.ndarray] = []
        self.pending_n = 0
        self.registers = np.zeros(1 << _HLL_P, np.uint8)

    def add(self, addr: np.ndarray) -> None:
        lines = _sorted_unique(addr // np.uint64(LINE_BYTES))
        if self.exact is None:
            _hll_update(lines.view(np.int64), self.registers, _HLL_P)
            return
        self.pending.append(lines)
        self.pending_n += lines.shape[0]
        if self.pending_n >= max(self.exact.shape[0], 1 << 20):
            self._fold()

    def _fold(self) -> None:
        if self.exact is None or not self.pending:
            return
        # sorted runs: the stable sort (timsort) merges them in about linear time
        self.exact = _sorted_unique(np.concatenate([self.exact, *self.pending]), "stable")
        self.pending, self.pending_n = [], 0
        if self.exact.shape[0] > FOOTPRINT_EXACT_LIMIT:
            self.to_estimate()

    def to_estimate(self) -> None:
        """Switch to the HyperLogLog estimate (done by itself past the limit)."""
        self._fold()
        if self.exact is not None:
            _hll_update(self.exact.view(np.int64), self.registers, _HLL_P)
            self.exact = None

    def result(self) -> tuple[int, bool]:
        self._fold()
        if self.exact is not None:
            return int(self.exact.shape[0]), True
        return int(round(_hll_estimate(self.registers))), False


def trace_summary(path_or_paths: PathLike | Sequence[PathLike], **kw: Any) -> dict[str, Any]:
    """Counts describing one trace, or several taken together (as if merged).

    Keyword arguments are passed to :func:`iter_trace` (``strict``, ``group``, ...).

    Returns a dict with:
        ``paths`` (list of str), ``format`` (one format, or a list for several files),
        ``requests``, ``reads``, ``writes``, ``first_cycle``, ``last_cycle`` (None for an
        empty trace), ``footprint_lines`` (distinct 64-byte lines touched),
        ``footprint_bytes`` (``footprint_lines * 64``), ``footprint_exact`` (False when more
        than ``FOOTPRINT_EXACT_LIMIT`` distinct lines were seen: the count is then a
        HyperLogLog estimate, within about 2 %), ``bytes`` (data moved:
        ``requests * 64``), ``file_bytes`` (size of the file(s) on disk).
    """
    if isinstance(path_or_paths, (str, os.PathLike)):
        paths = [Path(path_or_paths)]
    else:
        paths = [Path(p) for p in path_or_paths]
    requests = writes = 0
    first: int | None = None
    last: int | None = None
    foot = _Footprint()
    formats = []
    file_bytes = 0
    for p in paths:
        fmt = kw.get("fmt") or detect_format(p)
        formats.append(fmt)
        file_bytes += p.stat().st_size
        for c in iter_trace(p, **kw):
            if not len(c):
                continue
            requests += len(c)
            writes += c.writes
            c0, c1 = int(c.cycle[0]), int(c.cycle[-1])
            first = c0 if first is None else min(first, c0)
            last = c1 if last is None else max(last, c1)
            foot.add(c.addr)
    lines, exact = foot.result()
    return {
        "paths": [str(p) for p in paths],
        "format": formats[0] if len(formats) == 1 else formats,
        "requests": requests,
        "reads": requests - writes,
        "writes": writes,
        "first_cycle": first,
        "last_cycle": last,
        "footprint_lines": lines,
        "footprint_bytes": lines * LINE_BYTES,
        "footprint_exact": exact,
        "bytes": requests * LINE_BYTES,
        "file_bytes": file_bytes,
    }
