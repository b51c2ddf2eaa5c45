"""Exception types raised by the engine, with messages a hardware engineer can act on."""
from __future__ import annotations

from pathlib import Path


class DiffMemError(Exception):
    """Base class of every error DiffMem Studio raises on bad input or bad state."""


class ConfigError(DiffMemError):
    """A memory configuration is malformed: names the file, line and key where known."""

    def __init__(self, message: str, *, path: str | Path | None = None,
                 line: int | None = None, key: str | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.line = line
        self.key = key
        self.detail = message           # what is wrong, without where
        where = []
        if self.path is not None:
            where.append(str(self.path) + (f":{line}" if line is not None else ""))
        if key is not None:
            where.append(f"key '{key}'")
        super().__init__((", ".join(where) + ": " if where else "") + message)


class TraceError(DiffMemError):
    """A request trace is malformed: names the file and line."""

    def __init__(self, message: str, *, path: str | Path | None = None,
                 line: int | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.line = line
        where = ""
        if self.path is not None:
            where = str(self.path) + (f":{line}" if line is not None else "") + ": "
        super().__init__(where + message)


class OutputPathError(DiffMemError):
    """An output file's path cannot be written (a folder, a file where a folder is expected,
    no permission), found before the run."""


class SimulationCancelled(DiffMemError):
    """Raised inside a run when the caller's cancel flag was set."""


class SimulationError(DiffMemError):
    """The simulated controller reached a state it cannot leave (e.g. a policy deadlock)."""
