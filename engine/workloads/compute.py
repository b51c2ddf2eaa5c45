"""The accelerator's compute model, shared by the trace generator and the studies.

One operator takes ``launch_ns`` plus the longer of its arithmetic time -- FLOPs over the
dtype's peak of the unit it runs on (tensor cores for matrix multiplies and convolutions,
vector units otherwise) times the achieved ``utilisation`` -- and its on-chip data time
(bytes it touches over the L2 bandwidth).  DRAM time is not in the model: serving the
requests is the simulator's job.  ``compute_power_W`` is the power of the chip while it
computes, *without* its DRAM: the studies add the DRAM energy the simulator measures.

Defaults: NVIDIA A100 SXM4 (datasheet peaks; fp32 matrix work without TF32 runs on the
vector units at 19.5 TFLOP/s), 50 % achieved utilisation (assumption; the studies report a
0.3-0.7 band), 2 us per kernel launch in eager PyTorch (assumption), 340 W of compute power
(the 400 W board power less about 60 W for five HBM2 stacks at full bandwidth:
1.555 TB/s x ~4.8 pJ/bit; an estimate).

No torch here: the studies import this module.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

#: Utilisations the summary and the memory-share study report a band over.
UTILISATION_BAND = (0.3, 0.4, 0.5, 0.6, 0.7)


@dataclass(frozen=True)
class Accelerator:
    """Peak rates, achieved utilisation, launch overhead and compute power."""

    name: str = "A100"
    #: tensor-core peak by dtype, FLOP/s (fp32 without TF32 runs on the vector units)
    matrix_flops: dict[str, float] = field(default_factory=lambda: {
        "float32": 19.5e12, "bfloat16": 312e12, "float16": 312e12})
    #: vector-unit peak by dtype, FLOP/s
    vector_flops: dict[str, float] = field(default_factory=lambda: {
        "float32": 19.5e12, "bfloat16": 39e12, "float16": 78e12})
    utilisation: float = 0.5              # achieved fraction of peak
    l2_bandwidth: float = 5.0e12          # bytes/s, on-chip (measured A100 L2: ~4-7 TB/s)
    launch_ns: float = 2000.0             # per-kernel overhead in eager mode
    compute_power_W: float = 340.0        # chip power while computing, DRAM excluded

    def peak(self, dtype: str, matrix: bool) -> float:
        table = self.matrix_flops if matrix else self.vector_flops
        return table.get(dtype, table["float32"])

    def op_time_ns(self, flops: float, touched_bytes: float, dtype: str, matrix: bool,
                   utilisation: float | None = None) -> float:
        """Run time of one operator in ns."""
        u = self.utilisation if utilisation is None else utilisation
        return self.launch_ns + 1e9 * max(flops / (self.peak(dtype, matrix) * u),
                                          touched_bytes / self.l2_bandwidth)

    def describe(self) -> str:
        return (f"{self.name}: peak FLOP/s by dtype (matrix {self.matrix_flops}, vector "
                f"{self.vector_flops}), {100 * self.utilisation:.0f} % achieved utilisation, "
                f"{self.launch_ns / 1e3:g} us per kernel launch, L2 "
                f"{self.l2_bandwidth / 1e12:g} TB/s, {self.compute_power_W:g} W compute power "
                "(DRAM excluded)")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Accelerator":
        known = set(cls.__dataclass_fields__)
        extra = set(data) - known
        if extra:
            raise ValueError(f"compute model: unknown key(s) {', '.join(sorted(extra))} "
                             f"(expected {', '.join(sorted(known))})")
        acc = cls(**dict(data))
        for key in ("utilisation", "l2_bandwidth", "compute_power_W"):
            v = getattr(acc, key)
            if not isinstance(v, (int, float)) or v <= 0:
                raise ValueError(f"compute model: {key} = {v!r}: expected a positive number")
        if acc.utilisation > 1:
            raise ValueError(f"compute model: utilisation = {acc.utilisation}: expected at "
                             "most 1")
        if not isinstance(acc.launch_ns, (int, float)) or acc.launch_ns < 0:
            raise ValueError(f"compute model: launch_ns = {acc.launch_ns!r}: expected >= 0")
        return acc
