"""Networks as layer graphs: the layers the systolic array runs and the tensors between them.

Each layer is a 7-D loop nest in the Timeloop/DOSA convention

    out[N][K][P][Q] += W[K][C][R][S] * I[N][C][P*stride + R][Q*stride + S]

with three kinds besides dense ``conv``/``gemm``: ``depthwise`` (groups = channels, C = 1, the
input channel is the output channel K), and ``matmul`` (activation x activation, e.g.
attention's Q.K^T: N = heads and the "W" operand is an activation with one matrix per head).

Edges: ``producer`` lists the layers whose output this layer reads (``input`` = the network
input); ``via`` the non-MAC operations in between (pooling, softmax, layernorm, reshapes);
``residual_from`` the tensors added to this layer's output.  A producer->consumer edge is a
*fusion candidate* when nothing in its ``via`` needs the whole tensor (pooling, softmax and
layernorm break fusion in our model; reshapes and transposes are address remaps and do not).

Sources: built-in networks (:data:`BUILTIN`, written from the architectures' papers), a JSON
file in the same schema as ``../shared/workloads.json`` (a list of layers, or an object with a
``layers`` list), or a ``torch.nn.Module`` traced with ``torch.fx`` (:mod:`optimizer.fx_import`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from optimizer.errors import WorkloadError, read_json

DIMS = ("N", "K", "C", "P", "Q", "R", "S")
KINDS = ("conv", "gemm", "depthwise", "matmul")
FUSION_BREAKERS = ("maxpool", "avgpool", "softmax", "layernorm", "pool")


@dataclass(frozen=True)
class Layer:
    """One MAC layer: its loop bounds and its graph connections."""

    name: str
    kind: str
    dims: dict[str, int]
    stride: int = 1
    producers: tuple[str, ...] = ("input",)
    via: tuple[str, ...] = ()
    residual_from: tuple[str, ...] = ()

    @property
    def macs(self) -> int:
        return math.prod(self.dims[d] for d in DIMS)

    def size(self, tensor: str) -> int:
        """Elements of tensor W, I (unpadded input incl. the halo the window reads) or O."""
        d = self.dims
        if tensor == "W":
            return d["K"] * d["C"] * d["R"] * d["S"] * (d["N"] if self.kind == "matmul" else 1)
        if tensor == "O":
            return d["N"] * d["K"] * d["P"] * d["Q"]
        if tensor == "I":
            ch = d["K"] if self.kind == "depthwise" else d["C"]
            return (d["N"] * ch * ((d["P"] - 1) * self.stride + d["R"])
                    * ((d["Q"] - 1) * self.stride + d["S"]))
        raise ValueError(tensor)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.kind, "dims": dict(self.dims),
                               "stride": self.stride, "producer": list(self.producers)}
        if self.via:
            out["via"] = list(self.via)
        if self.residual_from:
            out["residual_from"] = list(self.residual_from)
        return out


@dataclass(frozen=True)
class Edge:
    """A producer -> consumer tensor between two layers of the network."""

    producer: int        # layer index
    consumer: int        # layer index
    fusable: bool        # nothing in between needs the whole tensor


@dataclass
class Network:
    """A layer graph.  ``edges`` are the direct producer->consumer edges between layers (not
    from the network input); ``residuals`` are (source layer, consuming layer) pairs."""

    name: str
    layers: list[Layer]
    edges: list[Edge] = field(default_factory=list)
    residuals: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.layers:
            raise WorkloadError(f"network '{self.name}' has no layers")
        index = {}
        for i, layer in enumerate(self.layers):
            if layer.name in index:
                raise WorkloadError(f"network '{self.name}': layer name '{layer.name}' is used "
                                    "twice", field=f"layers[{i}].name")
            index[layer.name] = i
        self.index = index
        if not self.edges:
            self.edges = []
            for j, layer in enumerate(self.layers):
                for p in layer.producers:
                    if p == "input":
                        continue
                    if p not in index:
                        raise WorkloadError(f"layer '{layer.name}': producer '{p}' is not a "
                                            "layer of this network (or 'input')",
                                            field=f"{layer.name}.producer")
                    if index[p] >= j:
                        raise WorkloadError(f"layer '{layer.name}': producer '{p}' comes "
                                            "after it; list layers in execution order",
                                            field=f"{layer.name}.producer")
                    fusable = not any(v.lower().startswith(FUSION_BREAKERS) for v in layer.via)
                    self.edges.append(Edge(index[p], j, fusable))
            for j, layer in enumerate(self.layers):
                for r in layer.residual_from:
                    if r == "input":
                        continue
                    if r not in index or index[r] >= j:
                        raise WorkloadError(f"layer '{layer.name}': residual source '{r}' is "
                                            "not an earlier layer", field=f"{layer.name}."
                                            "residual_from")
                    self.residuals.append((index[r], j))

    @property
    def macs(self) -> int:
        return sum(layer.macs for layer in self.layers)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "layers": [layer.to_dict() for layer in self.layers]}


# ---- parsing ---------------------------------------------------------------------------------
#: Largest layer dimension accepted (the mapping search enumerates each dimension's divisors).
MAX_DIM = 2**20


def _shown(v: Any) -> str:
    """A value for an error message, shortened (a 10^4000 integer is not printed whole)."""
    text = repr(v) if not isinstance(v, int) or abs(v) < 10**30 else f"an integer of " \
        f"{len(str(abs(v)))} digits"
    return text if len(text) <= 60 else text[:57] + "..."


def layer_from_dict(entry: Any, where: str, path: Path | None = None) -> Layer:
    """A Layer from one JSON layer object (the workloads.json schema)."""
    if not isinstance(entry, dict):
        raise WorkloadError(f"expected a layer object, got {type(entry).__name__}",
                            path=path, field=where)
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise WorkloadError("expected a non-empty string 'name'", path=path, field=where)
    where = f"{where} ('{name}')"
    kind = entry.get("type", "conv")
    if kind == "fc":
        kind = "gemm"
    if kind not in KINDS:
        raise WorkloadError(f"unknown layer type {kind!r}: expected one of {', '.join(KINDS)}",
                            path=path, field=f"{where}.type")
    dims_in = entry.get("dims")
    if not isinstance(dims_in, dict):
        raise WorkloadError("expected an object 'dims' with N, K, C, P, Q, R, S", path=path,
                            field=f"{where}.dims")
    dims = {}
    for d in DIMS:
        v = dims_in.get(d, 1)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise WorkloadError(f"dimension {d} must be a positive integer, got "
                                f"{_shown(v)}", path=path, field=f"{where}.dims.{d}")
        if v > MAX_DIM:
            raise WorkloadError(f"dimension {d} = {_shown(v)} is beyond {MAX_DIM} (2^20), the "
                                f"largest layer dimension the optimiser takes", path=path,
                                field=f"{where}.dims.{d}")
        dims[d] = v
    unknown = set(dims_in) - set(DIMS)
    if unknown:
        raise WorkloadError(f"unknown dimension(s) {sorted(unknown)}: expected N, K, C, P, Q, "
                            "R, S", path=path, field=f"{where}.dims")
    if kind == "depthwise" and dims["C"] != 1:
        raise WorkloadError("a depthwise layer has C = 1 (channels are K)", path=path,
                            field=f"{where}.dims.C")
    stride = entry.get("stride", 1)
    if isinstance(stride, bool) or not isinstance(stride, int) or not 1 <= stride <= 1024:
        raise WorkloadError(f"stride must be a positive integer, got {stride!r}", path=path,
                            field=f"{where}.stride")

    def names(key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        v = entry.get(key, list(default))
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise WorkloadError("expected a list of layer names", path=path,
                                field=f"{where}.{key}")
        return tuple(v)

    return Layer(name=name, kind=kind, dims=dims, stride=stride,
                 producers=names("producer", ("input",)), via=names("via", ()),
                 residual_from=names("residual_from", ()))


def network_from_json(data: Any, name: str, path: Path | None = None) -> Network:
    """A Network from parsed JSON: a list of layers or ``{"name": ..., "layers": [...]}``."""
    if isinstance(data, dict):
        name = data.get("name", name)
        if not isinstance(name, str) or not name:
            raise WorkloadError("expected a non-empty string 'name'", path=path, field="name")
        data = data.get("layers")
    if not isinstance(data, list):
        raise WorkloadError("expected a list of layers (or an object with 'layers')",
                            path=path, field="layers")
    layers = [layer_from_dict(e, f"layers[{i}]", path) for i, e in enumerate(data)]
    try:
        return Network(name=name, layers=layers)
    except WorkloadError as exc:
        raise WorkloadError(str(exc), path=path) from None


def load_network(name_or_path: str | Path) -> Network:
    """A built-in network by name (see :data:`BUILTIN`) or a JSON network file."""
    text = str(name_or_path)
    key = text.lower().replace("-", "_")
    if key in BUILTIN:
        return BUILTIN[key]()
    path = Path(text)
    if path.suffix.lower() != ".json" and not path.exists():
        from engine.names import did_you_mean
        hint = did_you_mean(key, BUILTIN)
        raise WorkloadError(f"unknown network '{text}'{hint}: expected one of "
                            f"{', '.join(sorted(BUILTIN))} or a .json file")
    return network_from_json(read_json(path, WorkloadError), path.stem, path)


# ---- built-in networks (ImageNet 224x224, batch 1; GPT-3 6.7B prefill at L = 2048) --------
def _conv(name: str, cin: int, cout: int, hw_in: int, k: int, stride: int, pad: int,
          producers: tuple[str, ...], **extra: Any) -> tuple[Layer, int]:
    out = (hw_in + 2 * pad - k) // stride + 1
    layer = Layer(name, "conv", {"N": 1, "K": cout, "C": cin, "P": out, "Q": out, "R": k,
                                 "S": k}, stride, producers, **extra)
    return layer, out


def _vgg(cfg: list[list[int]], name: str) -> Network:
    layers: list[Layer] = []
    hw, cin, prev, pooled = 224, 3, "input", False
    for b, block in enumerate(cfg, 1):
        for i, cout in enumerate(block, 1):
            layer, hw = _conv(f"conv{b}_{i}", cin, cout, hw, 3, 1, 1, (prev,),
                              via=("maxpool2x2s2",) if pooled else ())
            layers.append(layer)
            prev, cin, pooled = layer.name, cout, False
        hw //= 2
        pooled = True
    fc_in = cin * hw * hw
    for i, (cin_fc, cout) in enumerate(((fc_in, 4096), (4096, 4096), (4096, 1000)), 6):
        via = ("maxpool2x2s2", "flatten") if i == 6 else ()
        layers.append(Layer(f"fc{i}", "gemm", {"N": 1, "K": cout, "C": cin_fc, "P": 1, "Q": 1,
                                               "R": 1, "S": 1}, 1, (prev,), via))
        prev = f"fc{i}"
    return Network(name, layers)


def vgg16() -> Network:
    return _vgg([[64, 64], [128, 128], [256] * 3, [512] * 3, [512] * 3], "vgg16")


def vgg19() -> Network:
    return _vgg([[64, 64], [128, 128], [256] * 4, [512] * 4, [512] * 4], "vgg19")


def resnet18() -> Network:
    layers: list[Layer] = []
    stem, hw = _conv("conv1", 3, 64, 224, 7, 2, 3, ("input",))
    layers.append(stem)
    hw = (hw + 2 - 3) // 2 + 1          # maxpool 3x3 s2 p1: 112 -> 56
    prev, cin, first_via = "conv1", 64, ("maxpool3x3s2",)
    for stage, cout in enumerate((64, 128, 256, 512), 1):
        for blk in range(2):
            stride = 2 if (stage > 1 and blk == 0) else 1
            base = f"layer{stage}.{blk}"
            c1, hw_out = _conv(f"{base}.conv1", cin, cout, hw, 3, stride, 1, (prev,),
                               via=first_via)
            layers.append(c1)
            shortcut = prev
            if stride != 1 or cin != cout:
                ds, _ = _conv(f"{base}.downsample", cin, cout, hw, 1, stride, 0, (prev,))
                layers.append(ds)
                shortcut = ds.name
            c2, _ = _conv(f"{base}.conv2", cout, cout, hw_out, 3, 1, 1, (c1.name,),
                          residual_from=(shortcut,))
            layers.append(c2)
            prev, cin, hw, first_via = c2.name, cout, hw_out, ()
    layers.append(Layer("fc", "gemm", {"N": 1, "K": 1000, "C": 512, "P": 1, "Q": 1, "R": 1,
                                       "S": 1}, 1, (prev,), ("avgpool7x7", "flatten")))
    return Network("resnet18", layers)


def mobilenet_v1() -> Network:
    layers: list[Layer] = []
    stem, hw = _conv("conv1", 3, 32, 224, 3, 2, 1, ("input",))
    layers.append(stem)
    prev, cin = "conv1", 32
    # (output channels of the pointwise layer, stride of the depthwise layer); dw13 uses
    # stride 1 (the paper's table lists s2 there, a known typo: 7x7 in and out)
    plan = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + \
        [(1024, 2), (1024, 1)]
    for i, (cout, stride) in enumerate(plan, 1):
        out = (hw + 2 - 3) // stride + 1
        dw = Layer(f"dw{i}", "depthwise", {"N": 1, "K": cin, "C": 1, "P": out, "Q": out,
                                           "R": 3, "S": 3}, stride, (prev,))
        pw = Layer(f"pw{i}", "conv", {"N": 1, "K": cout, "C": cin, "P": out, "Q": out,
                                      "R": 1, "S": 1}, 1, (dw.name,))
        layers += [dw, pw]
        prev, cin, hw = pw.name, cout, out
    layers.append(Layer("fc", "gemm", {"N": 1, "K": 1000, "C": 1024, "P": 1, "Q": 1, "R": 1,
                                       "S": 1}, 1, (prev,), ("avgpool7x7", "flatten")))
    return Network("mobilenet_v1", layers)


GPT3_D_MODEL, GPT3_HEADS, GPT3_D_FF, GPT3_SEQ = 4096, 32, 16384, 2048


def _gemm(name: str, tokens: int, cin: int, cout: int, producers: tuple[str, ...],
          **extra: Any) -> Layer:
    return Layer(name, "gemm", {"N": 1, "K": cout, "C": cin, "P": tokens, "Q": 1, "R": 1,
                                "S": 1}, 1, producers, **extra)


def gpt3_mha(seq: int = GPT3_SEQ) -> Network:
    d, h = GPT3_D_MODEL, GPT3_HEADS
    hd = d // h
    ln = ("layernorm",)
    layers = [
        _gemm("q_proj", seq, d, d, ("input",), via=ln),
        _gemm("k_proj", seq, d, d, ("input",), via=ln),
        _gemm("v_proj", seq, d, d, ("input",), via=ln),
        Layer("qk_matmul", "matmul", {"N": h, "K": seq, "C": hd, "P": seq, "Q": 1, "R": 1,
                                      "S": 1}, 1, ("q_proj", "k_proj"),
              ("split_heads", "transpose(K)")),
        Layer("av_matmul", "matmul", {"N": h, "K": hd, "C": seq, "P": seq, "Q": 1, "R": 1,
                                      "S": 1}, 1, ("qk_matmul", "v_proj"), ("softmax",)),
        _gemm("out_proj", seq, d, d, ("av_matmul",), via=("merge_heads",),
              residual_from=("input",)),
    ]
    return Network("gpt3_6.7b_mha", layers)


def gpt3_ffn(seq: int = GPT3_SEQ) -> Network:
    d, ff = GPT3_D_MODEL, GPT3_D_FF
    return Network("gpt3_6.7b_ffn", [
        _gemm("fc1", seq, d, ff, ("input",), via=("layernorm",)),
        _gemm("fc2", seq, ff, d, ("fc1",), residual_from=("input",)),
    ])


BUILTIN: dict[str, Callable[[], Network]] = {
    "vgg16": vgg16, "vgg19": vgg19, "resnet18": resnet18, "mobilenet_v1": mobilenet_v1,
    "gpt3_6.7b_mha": gpt3_mha, "gpt3_6.7b_ffn": gpt3_ffn,
}
ALIASES = {"mobilenetv1": "mobilenet_v1", "mobilenet": "mobilenet_v1",
           "gpt3_mha": "gpt3_6.7b_mha", "gpt3_ffn": "gpt3_6.7b_ffn"}
for _alias, _target in ALIASES.items():
    BUILTIN[_alias] = BUILTIN[_target]
NETWORKS = ("vgg16", "vgg19", "resnet18", "mobilenet_v1", "gpt3_6.7b_mha", "gpt3_6.7b_ffn")
