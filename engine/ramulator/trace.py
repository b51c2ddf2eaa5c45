"""Ramulator 2 LoadStoreTrace files: one request a line, ``LD 0xADDR`` or ``ST 0xADDR``.

The trace has no timestamps: Ramulator's front end offers one line every ``interval``
memory cycles (``MemorySystem.clock_ratio / Frontend.clock_ratio``) and re-offers a rejected
line until it is accepted. :func:`read_loadstore` returns the arrays our engine is fed with:
line i arrives at cycle ``i * interval`` and the engine's front end holds it, in order, until
the controller takes it. Addresses are taken modulo ``capacity_bytes`` when given, as
Ramulator's address mapper drops the bits above its last field (counted in the result).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.errors import TraceError


@dataclass
class LoadStoreTrace:
    addr: np.ndarray        # int64
    is_write: np.ndarray    # bool
    cycle: np.ndarray       # int64, arrival cycle of each line
    wrapped: int            # addresses whose bits above the capacity were dropped


def read_loadstore(path: str | os.PathLike[str], *, interval: int = 1,
                   capacity_bytes: int | None = None) -> LoadStoreTrace:
    """Read a LoadStoreTrace; errors name the file, the line and what was expected."""
    file = Path(path)
    if interval < 1:
        raise ValueError(f"interval = {interval}: expected at least 1 memory cycle")
    addrs: list[int] = []
    writes: list[bool] = []
    try:
        fh = file.open("r", encoding="ascii", errors="strict")
    except OSError as exc:
        raise TraceError(f"cannot read the file: {exc}", path=file) from exc
    with fh:
        try:
            for lineno, raw in enumerate(fh, 1):
                text = raw.strip()
                if not text:
                    continue
                parts = text.split()
                if len(parts) != 2 or parts[0] not in ("LD", "ST"):
                    raise TraceError(f"{text[:60]!r}: expected 'LD 0xADDR' or 'ST 0xADDR'",
                                     path=file, line=lineno)
                try:
                    a = int(parts[1], 0)
                except ValueError:
                    raise TraceError(f"{parts[1][:40]!r}: expected an address (0x... or "
                                     "decimal)", path=file, line=lineno) from None
                if a < 0 or a >= 1 << 63:
                    raise TraceError(f"address {parts[1]}: expected 0 <= address < 2^63",
                                     path=file, line=lineno)
                addrs.append(a)
                writes.append(parts[0] == "ST")
        except UnicodeDecodeError as exc:
            raise TraceError(f"not a text trace ({exc.reason})", path=file) from None
    if not addrs:
        raise TraceError("no requests (expected lines 'LD 0xADDR' / 'ST 0xADDR')", path=file)
    addr = np.array(addrs, dtype=np.int64)
    wrapped = 0
    if capacity_bytes:
        over = addr >= capacity_bytes
        wrapped = int(over.sum())
        addr %= capacity_bytes
    return LoadStoreTrace(addr=addr, is_write=np.array(writes, dtype=bool),
                          cycle=np.arange(len(addrs), dtype=np.int64) * interval,
                          wrapped=wrapped)
