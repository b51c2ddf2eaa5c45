"""The Gemmini hardware model: array size, the four memory levels, bandwidths and energies.

Levels, outer to inner (Timeloop's Gemmini description, as DOSA uses it):

    DRAM -> Scratchpad (Weights, Inputs) -> Accumulator (Outputs, one slice per PE column)
         -> Registers (one stationary weight per PE) -> MAC

Hardware files are TOML (``resources/gemmini/*.toml``: ``large``, ``small``), readable and
editable; every number in them states its source.  :func:`from_reference_arch` builds the
same object from an ``architectures`` entry of a Timeloop/Accelergy reference file
(``../shared/reference/costmodel/reference.json``), so the reference's own energies can be
loaded for validation.
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from optimizer.errors import HardwareError

HARDWARE_DIR = Path(__file__).resolve().parent.parent / "resources" / "gemmini"


@dataclass(frozen=True)
class GemminiHardware:
    """One Gemmini configuration.  Capacities in words of each level's width; energies in pJ
    per word access; bandwidths in words per cycle."""

    name: str
    rows: int                    # PE rows (C unrolled)
    cols: int                    # PE columns (K unrolled)
    dram_bw: float               # words (bytes) per cycle, reads and writes together
    sp_capacity: int             # scratchpad capacity, 8-bit words
    sp_bw: float                 # scratchpad words per cycle
    acc_capacity: int            # accumulator capacity, 32-bit words, all slices together
    acc_bw: float                # accumulator words per cycle, per column slice
    e_dram_read: float
    e_dram_write: float
    e_sp_read: float
    e_sp_write: float
    e_acc_read: float
    e_acc_write: float
    e_reg_read: float
    e_reg_write: float
    e_mac: float
    description: str = ""

    @property
    def pes(self) -> int:
        return self.rows * self.cols

    @property
    def acc_slice_capacity(self) -> int:
        """Accumulator words per column slice (the accumulator is modelled as ``cols``
        independent slices, as Timeloop models Gemmini's banked accumulator)."""
        return self.acc_capacity // self.cols

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_toml(self) -> str:
        """The hardware as a TOML hardware file (the format :func:`load_hardware` reads)."""
        return "\n".join([
            f'name = "{self.name}"', f'description = "{self.description}"', "",
            "[array]", f"rows = {self.rows}", f"cols = {self.cols}", "",
            "[dram]", f"bandwidth_words_per_cycle = {self.dram_bw!r}", "word_bits = 8",
            f"read_pj = {self.e_dram_read!r}", f"write_pj = {self.e_dram_write!r}", "",
            "[scratchpad]", f"capacity_bytes = {self.sp_capacity}", "word_bits = 8",
            f"bandwidth_words_per_cycle = {self.sp_bw!r}", f"read_pj = {self.e_sp_read!r}",
            f"write_pj = {self.e_sp_write!r}", "",
            "[accumulator]", f"capacity_bytes = {self.acc_capacity * 4}", "word_bits = 32",
            f"bandwidth_words_per_cycle_per_slice = {self.acc_bw!r}",
            f"read_pj = {self.e_acc_read!r}", f"write_pj = {self.e_acc_write!r}", "",
            "[registers]", f"read_pj = {self.e_reg_read!r}", f"write_pj = {self.e_reg_write!r}",
            "", "[mac]", f"energy_pj = {self.e_mac!r}", ""])


def list_hardware() -> list[str]:
    """Names of the shipped hardware files (``large``, ``small``)."""
    return sorted(p.stem for p in HARDWARE_DIR.glob("*.toml"))


#: Physical range of each hardware number (zero allowed for energies: a free access).
_BOUNDS = {"rows": (1, 4096), "cols": (1, 4096), "capacity_bytes": (1, 2**40),
           "bandwidth_words_per_cycle": (1e-6, 1e6),
           "bandwidth_words_per_cycle_per_slice": (1e-6, 1e6),
           "read_pj": (1e-6, 1e6), "write_pj": (1e-6, 1e6), "energy_pj": (1e-6, 1e6),
           "*": (1e-9, 1e12)}
_UNITS = {"capacity_bytes": "bytes", "read_pj": "pJ", "write_pj": "pJ", "energy_pj": "pJ",
          "bandwidth_words_per_cycle": "words per cycle",
          "bandwidth_words_per_cycle_per_slice": "words per cycle"}
#: The sections and keys of a hardware file.
_LAYOUT = {"array": {"rows", "cols"},
           "dram": {"bandwidth_words_per_cycle", "word_bits", "read_pj", "write_pj"},
           "scratchpad": {"capacity_bytes", "word_bits", "bandwidth_words_per_cycle",
                          "read_pj", "write_pj"},
           "accumulator": {"capacity_bytes", "word_bits",
                           "bandwidth_words_per_cycle_per_slice", "read_pj", "write_pj"},
           "registers": {"read_pj", "write_pj"}, "mac": {"energy_pj"}}


def _check_layout(data: dict[str, Any], path: Path) -> None:
    """Unknown sections (memory levels) or keys are errors: a typo must not silently keep
    a default."""
    for key, value in data.items():
        if key in ("name", "description"):
            continue
        if key not in _LAYOUT:
            raise HardwareError(f"unknown section or memory level [{key[:40]}]: expected "
                                f"{', '.join(_LAYOUT)}", path=path, field=key[:40])
        if not isinstance(value, dict):
            raise HardwareError("expected a table", path=path, field=key)
        for sub in value:
            if sub not in _LAYOUT[key]:
                raise HardwareError(f"unknown key: expected one of "
                                    f"{', '.join(sorted(_LAYOUT[key]))}", path=path,
                                    field=f"{key}.{sub[:40]}")


def _get(table: dict[str, Any], section: str, key: str, path: Path, *, kind: type = float,
         positive: bool = True, default: Any = None) -> Any:
    sect = table.get(section)
    if not isinstance(sect, dict):
        raise HardwareError(f"missing section [{section}]", path=path, field=section)
    if key not in sect:
        if default is not None:
            return default
        raise HardwareError(f"missing key '{key}' in [{section}]", path=path,
                            field=f"{section}.{key}")
    value = sect[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise HardwareError(f"expected a number, got {str(value)[:40]!r}", path=path,
                            field=f"{section}.{key}")
    lo, hi = _BOUNDS.get(key, _BOUNDS["*"])
    if math.isfinite(value) and value != 0 and not lo <= abs(value) <= hi:
        raise HardwareError(f"{value!r} is outside the physical range {lo:g} to {hi:g} "
                            f"{_UNITS.get(key, '')}".rstrip(), path=path,
                            field=f"{section}.{key}")
    if kind is int and (not float(value).is_integer()):
        raise HardwareError(f"expected an integer, got {value!r}", path=path,
                            field=f"{section}.{key}")
    if not math.isfinite(value) or (value <= 0 if positive else value < 0):
        raise HardwareError(f"expected a {'positive' if positive else 'non-negative'} number, "
                            f"got {value!r}", path=path, field=f"{section}.{key}")
    return kind(value)


def _bits(table: dict[str, Any], section: str, expected: int, path: Path) -> None:
    bits = table.get(section, {}).get("word_bits", expected)
    if bits != expected:
        raise HardwareError(f"word_bits must be {expected} (the model counts {expected}-bit "
                            f"words at this level), got {bits!r}", path=path,
                            field=f"{section}.word_bits")


def load_hardware(name_or_path: str | Path) -> GemminiHardware:
    """A shipped hardware file by name (``large``, ``small``) or a TOML file by path."""
    text = str(name_or_path)
    path = Path(text)
    if not path.suffix and not path.exists():
        from engine.names import did_you_mean
        known = list_hardware()
        # (names as the list gives them, case ignored: 'Large' is 'large', as networks are)
        same = [k for k in known if k.lower() == text.lower()]
        candidate = HARDWARE_DIR / f"{same[0] if same else text}.toml"
        if not candidate.exists():
            raise HardwareError(f"unknown hardware '{text}'{did_you_mean(text, known)}: "
                                f"expected one of {', '.join(known)} or a .toml file")
        path = candidate
    try:
        data = tomllib.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise HardwareError("file not found", path=path) from None
    except UnicodeDecodeError as exc:
        raise HardwareError(f"not UTF-8 text (byte {exc.start}): expected a TOML file",
                            path=path) from None
    except tomllib.TOMLDecodeError as exc:
        raise HardwareError(f"not valid TOML: {exc}", path=path) from None
    except RecursionError:
        raise HardwareError("TOML nested too deeply", path=path) from None
    except OSError as exc:
        raise HardwareError(f"cannot read: {exc.strerror or exc}", path=path) from None
    _check_layout(data, path)
    for section, bits in (("dram", 8), ("scratchpad", 8), ("accumulator", 32)):
        _bits(data, section, bits, path)
    rows = _get(data, "array", "rows", path, kind=int)
    cols = _get(data, "array", "cols", path, kind=int)
    acc_bytes = _get(data, "accumulator", "capacity_bytes", path, kind=int)
    if acc_bytes % (4 * cols):
        raise HardwareError(f"accumulator capacity {acc_bytes} B does not split into {cols} "
                            "column slices of whole 32-bit words", path=path,
                            field="accumulator.capacity_bytes")
    name = data.get("name", path.stem)
    if not isinstance(name, str):
        raise HardwareError("expected a string", path=path, field="name")
    return GemminiHardware(
        name=name, rows=rows, cols=cols,
        dram_bw=_get(data, "dram", "bandwidth_words_per_cycle", path),
        sp_capacity=_get(data, "scratchpad", "capacity_bytes", path, kind=int),
        sp_bw=_get(data, "scratchpad", "bandwidth_words_per_cycle", path),
        acc_capacity=acc_bytes // 4,
        acc_bw=_get(data, "accumulator", "bandwidth_words_per_cycle_per_slice", path),
        e_dram_read=_get(data, "dram", "read_pj", path, positive=False),
        e_dram_write=_get(data, "dram", "write_pj", path, positive=False),
        e_sp_read=_get(data, "scratchpad", "read_pj", path, positive=False),
        e_sp_write=_get(data, "scratchpad", "write_pj", path, positive=False),
        e_acc_read=_get(data, "accumulator", "read_pj", path, positive=False),
        e_acc_write=_get(data, "accumulator", "write_pj", path, positive=False),
        e_reg_read=_get(data, "registers", "read_pj", path, positive=False),
        e_reg_write=_get(data, "registers", "write_pj", path, positive=False),
        e_mac=_get(data, "mac", "energy_pj", path, positive=False),
        description=str(data.get("description", "")))


def from_reference_arch(name: str, arch: dict[str, Any], *,
                        source: str = "reference") -> GemminiHardware:
    """The hardware of an ``architectures[name]`` entry of a Timeloop/Accelergy reference file
    (levels DRAM, Scratchpad, Accumulator, Registers with capacities, bandwidths and per-word
    energies)."""
    where = f"{source}: architectures.{name}"
    try:
        levels = {lv["name"]: lv for lv in arch["levels_outer_to_inner"]}
        energy = arch["energy_pJ_per_word_access"]
        rows, cols = int(arch["pe_array"]["rows"]), int(arch["pe_array"]["cols"])
        acc = levels["Accumulator"]
        return GemminiHardware(
            name=name, rows=rows, cols=cols,
            dram_bw=float(levels["DRAM"]["bandwidth_words_per_cycle"]),
            sp_capacity=int(levels["Scratchpad"]["capacity_words"]),
            sp_bw=float(levels["Scratchpad"]["bandwidth_words_per_cycle"]),
            acc_capacity=int(acc["capacity_words"]) * int(acc["instances"]),
            acc_bw=float(acc["bandwidth_words_per_cycle"]),
            e_dram_read=float(energy["DRAM"]["read"]),
            e_dram_write=float(energy["DRAM"]["write"]),
            e_sp_read=float(energy["Scratchpad"]["read"]),
            e_sp_write=float(energy["Scratchpad"]["write"]),
            e_acc_read=float(energy["Accumulator"]["read"]),
            e_acc_write=float(energy["Accumulator"]["write"]),
            e_reg_read=float(energy["Registers"]["read"]),
            e_reg_write=float(energy["Registers"]["write"]),
            e_mac=float(energy["MACC"]["mac"]),
            description=f"from {source}")
    except (KeyError, TypeError, ValueError) as exc:
        raise HardwareError(f"malformed architecture entry ({exc!r}); expected pe_array, "
                            "levels_outer_to_inner and energy_pJ_per_word_access as in "
                            "reference.json", path=where) from None
