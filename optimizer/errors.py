"""Exception types of the optimiser: bad hardware files, bad networks, unmappable layers."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from engine.errors import DiffMemError


def _where(path: str | Path | None, field: str | None) -> str:
    parts = []
    if path is not None:
        parts.append(str(path))
    if field is not None:
        parts.append(f"field '{field}'")
    return (", ".join(parts) + ": ") if parts else ""


class OptimizerError(DiffMemError):
    """Base class of the optimiser's errors."""


class HardwareError(OptimizerError):
    """A Gemmini hardware file is malformed: names the file and field."""

    def __init__(self, message: str, *, path: str | Path | None = None,
                 field: str | None = None) -> None:
        self.path, self.field = path, field
        super().__init__(_where(path, field) + message)


class WorkloadError(OptimizerError):
    """A network description is malformed or unknown: names the file, layer and field."""

    def __init__(self, message: str, *, path: str | Path | None = None,
                 field: str | None = None) -> None:
        self.path, self.field = path, field
        super().__init__(_where(path, field) + message)


class MappingError(OptimizerError):
    """A mapping or schedule is malformed or cannot be made valid (e.g. a layer that fits no
    mapping on this hardware)."""


class OptimizationCancelled(OptimizerError):
    """Raised inside a search when the caller's cancel flag was set."""


#: Largest user JSON file read (a network or a schedule is kilobytes).
MAX_JSON_BYTES = 64 << 20


def read_json(path: Path, error: Callable[[str], Exception]) -> Any:
    """The parsed JSON of a user file; a missing, unreadable, oversized, non-UTF-8, too
    deeply nested or malformed file raises ``error(message)`` with a message naming the file
    (and line and column)."""
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise error(f"{path}: {size} bytes is too large for a JSON description (at most "
                        f"{MAX_JSON_BYTES >> 20} MiB)")
        text = path.read_bytes().decode("utf-8-sig")
        return json.loads(text)
    except FileNotFoundError:
        raise error(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start}): expected a JSON file") \
            from None
    except json.JSONDecodeError as exc:
        raise error(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno}, column "
                    f"{exc.colno})") from None
    except RecursionError:
        raise error(f"{path}: JSON nested too deeply") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
