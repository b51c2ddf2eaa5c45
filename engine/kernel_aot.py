"""The simulator's kernel compiled ahead of time into a shared library, run without numba.

A process that simulates a short trace spends most of its CPU time before the first cycle:
importing numba (~0.26 CPU-s) and numba's first dispatch of the cached kernel (~0.2). Every
kernel function is compiled with ``_nrt=False`` (it never allocates), so the machine code
numba makes of :func:`engine.kernel.run_kernel` needs nothing of numba's runtime. This module

* **builds** (:func:`build`, ``python main.py build-kernel``; needs numba and a C compiler)
  a C entry for each variant of the kernel (``engine.kernel.KERNELS``,
  ``diffmem_run_kernel_<i>``): a ``numba.cfunc`` taking the arrays' data pointers and shapes,
  wrapping them with ``numba.carray`` (the same array types the JIT path sees, so numba's
  cached compilation of the variant is reused) and calling it; its optimised
  LLVM module is emitted as position-independent object code for this CPU and linked with a
  small C file (the exported entries, the array ranks, the key, and stubs for the symbols that
  only numba's error path references: a call to one of them marks the run failed) into
  ``<user cache>/kernel/run_kernel-<key>.so``. The library is checked against the JIT
  kernel on short runs before it is put in place.
* **loads** it with ``ctypes`` (:func:`runner`), without importing numba, when the file for
  the current key exists. The key hashes the kernel's source files, the numba and llvmlite
  versions installed, the CPU (model and feature flags) and this module's ABI number, so an
  edited kernel, another numba or another machine never runs a stale library. Otherwise (or
  with ``DIFFMEM_KERNEL=jit``) the simulator calls numba's dispatcher as before.

``DIFFMEM_KERNEL``: ``auto`` (default: the library when there is one, numba's kernel once the
process has run the library for JIT_AFTER_CPU_S), ``jit`` (always numba), ``aot`` (only the
library, or an error saying why not). ``DIFFMEM_KERNEL_DIR`` overrides the folder.
"""
from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from engine.app_dirs import is_frozen, user_cache_dir
from engine.errors import DiffMemError, SimulationError

log = logging.getLogger(__name__)

ABI = 2                       # bump when the entries, their arguments or the C file change
MODE_ENV = "DIFFMEM_KERNEL"
DIR_ENV = "DIFFMEM_KERNEL_DIR"
MODES = ("auto", "jit", "aot")
N_CHUNK = 5                   # arrays of a kernel.Chunk (each 1-d), after Consts and State
ENGINE = Path(__file__).resolve().parent
#: the files whose text the compiled kernels depend on (the kernel, the constants it imports,
#: the trace parser's module, the decorator and this module's entries)
SOURCES = ("kernel.py", "timing.py", "policies.py", "standards/base.py", "trace.py",
           "lazy_jit.py", "kernel_aot.py", "numba_nowrap.py", "bits.py")
#: symbol prefixes that only numba's error and reference-counting paths reference; the C
#: file defines them as stubs that flag the call (never reached by a run that succeeds)
STUB_PREFIXES = ("Py", "_Py", "NRT_", "numba_")

RunFn = Callable[..., int]


def run_entry(variant: int) -> str:
    """The library's exported name of kernel variant ``variant`` (engine.kernel.KERNELS)."""
    return f"diffmem_run_kernel_{variant}"


class KernelBuildError(DiffMemError):
    """The ahead-of-time kernel could not be built (the numba kernel still works)."""


# ---- the key ----------------------------------------------------------------------------------
def _dist_version(name: str) -> str:
    """The installed version of a distribution, from its ``.dist-info`` folder's name (not
    importlib.metadata: that costs ~0.05 CPU-s, a tenth of what this module saves)."""
    import importlib.util
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return "absent"
    if spec is None or not spec.submodule_search_locations:
        return "absent"
    site = Path(next(iter(spec.submodule_search_locations))).parent
    try:
        found = sorted(e for e in os.listdir(site)
                       if e.startswith(name + "-") and e.endswith((".dist-info", ".egg-info")))
    except OSError:
        found = []
    return found[-1] if found else f"unknown:{site}"


def cpu_fingerprint() -> str:
    """This CPU's model and instruction-set flags (the library is compiled for them)."""
    parts = [platform.machine()]
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            text = f.read(65536)
    except OSError:
        text = ""
    first = text.split("\n\n", 1)[0]
    for line in first.splitlines():
        k, _, v = line.partition(":")
        if k.strip() in ("vendor_id", "model name", "flags", "Features", "CPU implementer",
                         "CPU part"):
            parts.append(f"{k.strip()}={v.strip()}")
    if len(parts) == 1:
        parts.append(platform.processor())
    return "|".join(parts)


def kernel_key() -> str | None:
    """The hash naming the library for the current kernel sources, numba, llvmlite and CPU;
    None when the sources cannot be read (nothing could tell a stale library apart)."""
    h = hashlib.sha256(f"abi={ABI};py={sys.implementation.cache_tag}".encode())
    if is_frozen():
        # a bundle holds no sources: the executable stands for them (as numba_cache does)
        st = os.stat(sys.executable)
        h.update(f"exe={os.path.abspath(sys.executable)}:{st.st_mtime_ns}:{st.st_size}".encode())
    else:
        for rel in SOURCES:
            try:
                h.update(rel.encode() + b"\0" + (ENGINE / rel).read_bytes() + b"\0")
            except OSError:
                return None
    for dist in ("numba", "llvmlite"):
        h.update(f"{dist}={_dist_version(dist)};".encode())
    h.update(cpu_fingerprint().encode("utf-8", "replace"))
    return h.hexdigest()[:24]


def library_dir() -> Path:
    """Where the compiled kernels are kept (``DIFFMEM_KERNEL_DIR`` or the user cache)."""
    override = os.environ.get(DIR_ENV)
    return Path(override) if override else user_cache_dir() / "kernel"


def library_path(key: str) -> Path:
    suffix = ".dll" if sys.platform == "win32" else ".so"
    return library_dir() / f"run_kernel-{key}{suffix}"


_forced_mode: str | None = None     # build() checks against numba's kernel, whatever the env


def mode() -> str:
    """``DIFFMEM_KERNEL``: auto, jit or aot."""
    if _forced_mode is not None:
        return _forced_mode
    m = os.environ.get(MODE_ENV, "auto").strip().lower() or "auto"
    if m not in MODES:
        raise SimulationError(f"{MODE_ENV}={m!r}: expected one of {', '.join(MODES)}")
    return m


# ---- loading ----------------------------------------------------------------------------------
def _failed(path: Path) -> SimulationError:
    return SimulationError(f"the compiled kernel {path.name} stopped on an error (numba's "
                           f"kernel would raise it; run with {MODE_ENV}=jit to see it)")


@dataclass
class AotKernel:
    """The loaded library: its entries and the array ranks ``run_kernel`` was compiled for."""

    path: Path
    run_kernels: tuple[Any, ...]   # ctypes functions (ptrs, ints, failed) -> int64, a variant
    parse_text: Any                # each (engine.kernel.KERNELS' order)
    ranks: tuple[int, ...]

    def bind(self, consts: Sequence[np.ndarray], state: Sequence[np.ndarray]) -> RunFn | None:
        """A ``run_kernel``-like callable on these bundles, or None when they do not match
        what the library was compiled for (rank, dtype, layout). The kernel variant is the
        one engine.kernel.kernel_variant picks for the bundles' configuration vector."""
        from engine import kernel as K
        arrays = tuple(consts) + tuple(state)
        if len(arrays) + N_CHUNK != len(self.ranks):
            return None
        for a, r in zip(arrays, self.ranks):
            if a.dtype != np.int64 or a.ndim != r or not a.flags.c_contiguous:
                return None
        n_fixed = len(arrays)
        ptrs = np.zeros(n_fixed + N_CHUNK, np.uint64)
        ints = np.zeros(sum(self.ranks) + 3, np.int64)    # shapes, then final, stop, horizon
        o = 0
        for i, a in enumerate(arrays):
            ptrs[i] = a.ctypes.data
            ints[o:o + a.ndim] = a.shape
            o += a.ndim
        err = np.zeros(1, np.int64)
        P = consts[0]
        variant = K.kernel_variant(P)
        fn = self.run_kernels[variant]
        pp, ip, ep = ptrs.ctypes.data, ints.ctypes.data, err.ctypes.data
        path = self.path

        def run(addr: np.ndarray, isw: np.ndarray, cyc: np.ndarray, src: np.ndarray,
                rid: np.ndarray, final: int, stop: int, horizon: int) -> int:
            if variant:
                _check_variant(P, variant)
            chunk = [np.ascontiguousarray(x, np.int64) for x in (addr, isw, cyc, src, rid)]
            for j, x in enumerate(chunk):
                ptrs[n_fixed + j] = x.ctypes.data
                ints[o + j] = x.shape[0]
            ints[o + N_CHUNK:] = final, stop, horizon
            rc = fn(pp, ip, ep)
            if err[0]:
                err[0] = 0
                raise _failed(path)
            return int(rc)

        run.keep = (arrays, ptrs, ints, err)          # type: ignore[attr-defined]
        return run

    def text_parser(self) -> Callable[..., None]:
        """``engine.trace._parse_text`` (same arguments) on the compiled entry."""
        ptrs = np.zeros(5, np.uint64)
        ints = np.zeros(9, np.int64)
        err = np.zeros(1, np.int64)
        fn, path = self.parse_text, self.path
        pp, ip, ep = ptrs.ctypes.data, ints.ctypes.data, err.ctypes.data
        kinds = ((0, np.uint8), (2, np.int64), (3, np.bool_), (4, np.int64), (8, np.int64))

        def parse(buf: np.ndarray, end: int, out_addr: np.ndarray, out_write: np.ndarray,
                  out_cycle: np.ndarray, strict: bool, has_capacity: bool, capacity: int,
                  state: np.ndarray) -> None:
            arrs = (buf, out_addr, out_write, out_cycle, state)
            for j, (a, (slot, dtype)) in enumerate(zip(arrs, kinds)):
                if a.dtype != dtype or a.ndim != 1 or not a.flags.c_contiguous:
                    raise TypeError(f"parse_text argument {slot}: expected a contiguous 1-d "
                                    f"{np.dtype(dtype)} array, got {a.dtype} {a.shape}")
                ptrs[j] = a.ctypes.data
                ints[slot] = a.shape[0]
            ints[1], ints[5], ints[6], ints[7] = end, strict, has_capacity, capacity
            fn(pp, ip, ep)
            if err[0]:
                err[0] = 0
                raise _failed(path)

        parse.keep = (ptrs, ints, err)                 # type: ignore[attr-defined]
        return parse


_loaded: dict[str, AotKernel | None] = {}


def _open(path: Path, key: str) -> AotKernel:
    import ctypes
    lib = ctypes.CDLL(str(path))
    got = ctypes.c_char_p.in_dll(lib, "diffmem_kernel_key_str").value
    if got != key.encode():
        raise OSError(f"{path}: built for key {got!r}, not {key}")
    n = ctypes.c_int64.in_dll(lib, "diffmem_kernel_nranks").value
    ranks = tuple((ctypes.c_int64 * n).in_dll(lib, "diffmem_kernel_ranks"))
    from engine import kernel as K
    fns = []
    for name in (*map(run_entry, range(len(K.KERNELS))), "diffmem_parse_text"):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_int64
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        fns.append(fn)
    return AotKernel(path, tuple(fns[:-1]), fns[-1], ranks)


def load() -> AotKernel | None:
    """The compiled kernel for the current key, or None (numba's kernel is used then)."""
    m = mode()
    if m == "jit":
        return None
    cached = _loaded.get(m, False)
    if cached is not False:
        return cached                                       # type: ignore[return-value]
    key = kernel_key()
    why = ""
    kern: AotKernel | None = None
    if key is None:
        why = "the kernel's sources are not readable"
    else:
        path = library_path(key)
        if not path.is_file():
            why = f"no compiled kernel {path} (`python main.py build-kernel` builds it)"
        else:
            try:
                kern = _open(path, key)
            except (OSError, AttributeError, ValueError) as exc:
                why = f"cannot load {path}: {exc}"
    if kern is None:
        if m == "aot":
            raise SimulationError(f"{MODE_ENV}=aot: {why}")
        log.debug("engine kernel: numba JIT (%s)", why)
    else:
        log.debug("engine kernel: ahead-of-time library %s", kern.path)
    _loaded[m] = kern
    return kern


def _check_variant(P: np.ndarray, variant: int) -> None:
    """Raise unless kernel variant ``variant`` still runs configuration vector P: a variant
    has its policies compiled in, so a P changed after the kernel was chosen (a programming
    error) would be simulated with the policies of another."""
    from engine import kernel as K
    if K.kernel_variant(P) != variant:
        raise SimulationError(f"engine kernel: its {K.VARIANTS[variant]} variant was chosen, "
                              f"but the configuration vector now asks for the "
                              f"{K.VARIANTS[K.kernel_variant(P)]} variant (scheduler "
                              f"{int(P[K.P_SCHED])}, page policy {int(P[K.P_PAGE])}, "
                              f"{int(P[K.P_CHANNELS])} channels)")


def _jit_runner(consts: tuple, state: tuple) -> RunFn:
    from engine import kernel as K
    P = consts[0]
    variant = K.kernel_variant(P)
    kernel = K.KERNELS[variant]

    def run(addr, isw, cyc, src, rid, final: int, stop: int, horizon: int) -> int:
        if variant:
            _check_variant(P, variant)
        return kernel(consts, state, (addr, isw, cyc, src, rid), final, stop, horizon)
    return run


#: CPU seconds the library's kernel runs in a process (``auto``) before the simulators move to
#: numba's kernel. Moving costs numba's start-up (~0.45-0.65 CPU-s: import and first dispatch)
#: and buys numba's own machine code, measured within noise of the library's (0.94-1.03 best-of
#: either way, benchmarks/RESULTS.md, issue 17v); at the best case seen for numba (~6 % faster)
#: that start-up is repaid only after ~10 CPU-s, so runs shorter than that (the 1M-request
#: benchmark traces take about 1) stay in the library and never import numba. Both kernels work
#: on the same state arrays, so a run may change kernel between two calls with identical
#: results (tests/test_kernel_aot.py).
JIT_AFTER_CPU_S = 10.0
_aot_cpu = [0.0]              # CPU seconds spent in the library's kernel by this process


def _switching(bound: RunFn, consts: tuple, state: tuple) -> RunFn:
    """``bound`` until the process has spent JIT_AFTER_CPU_S in the library, then numba's."""
    jit: RunFn | None = None

    def run(addr, isw, cyc, src, rid, final: int, stop: int, horizon: int) -> int:
        nonlocal jit
        if jit is None:
            if _aot_cpu[0] < JIT_AFTER_CPU_S:
                t0 = time.process_time()
                try:
                    return bound(addr, isw, cyc, src, rid, final, stop, horizon)
                finally:
                    _aot_cpu[0] += time.process_time() - t0
            log.debug("engine kernel: %.2f CPU-s in the compiled library; numba's from now",
                      _aot_cpu[0])
            jit = _jit_runner(consts, state)
        return jit(addr, isw, cyc, src, rid, final, stop, horizon)

    run.keep = bound.keep                                   # type: ignore[attr-defined]
    return run


def runner(consts: tuple, state: tuple) -> RunFn:
    """The kernel to call on these bundles: ``(addr, isw, cyc, src, rid, final, stop,
    horizon) -> return code``, from the compiled library when there is one for the current
    key and it fits the bundles (``auto``: until JIT_AFTER_CPU_S, then numba's), else
    numba's ``run_kernel``."""
    kern = load()
    if kern is not None:
        bound = kern.bind(consts, state)
        if bound is not None:
            return bound if mode() == "aot" else _switching(bound, consts, state)
        if mode() == "aot":
            raise SimulationError(f"{MODE_ENV}=aot: {kern.path} was built for other array "
                                  f"ranks or types than the simulator's state")
        log.info("engine kernel: %s does not fit the simulator's arrays; using numba",
                 kern.path.name)
    return _jit_runner(consts, state)


def text_parser(default: Callable[..., None]) -> Callable[..., None]:
    """``engine.trace._parse_text`` from the compiled library when there is one, else
    ``default`` (numba's)."""
    kern = load()
    return kern.text_parser() if kern is not None else default


# ---- building ---------------------------------------------------------------------------------
# An entry's arguments, as a spec: ("a", dtype, rank) an array (its data pointer in ``ptrs``,
# its shape in ``ints``), "i" an int64 and "b" a bool (in ``ints``), a tuple of specs a tuple.
# Every entry is ``int64 diffmem_<name>(void **ptrs, int64_t *ints, int64_t *failed)``.
Spec = Any


def _entry_source(name: str, call: str, spec: Sequence[Spec], returns: bool) -> str:
    """The cfunc's Python source: carrays from pointers and shapes, then the kernel call."""
    lines = [f"def {name}(ptrs, ints):"]
    counters = [0, 0]                               # next pointer, next int

    def arg(sp: Spec) -> str:
        if isinstance(sp, tuple) and sp and sp[0] == "a":
            _, dtype, rank = sp
            dims = "".join(f"ints[{counters[1] + j}], " for j in range(rank))
            counters[1] += rank
            var = f"a{counters[0]}"
            lines.append(f"    {var} = carray(ptrs[{counters[0]}], ({dims}), dtype=np.{dtype})")
            counters[0] += 1
            return var
        if sp in ("i", "b"):
            counters[1] += 1
            return f"ints[{counters[1] - 1}]" + (" != 0" if sp == "b" else "")
        return "(" + "".join(arg(x) + ", " for x in sp) + ")"

    args = ", ".join(arg(x) for x in spec)
    lines.append(f"    r = {call}({args})" if returns else f"    {call}({args})")
    lines.append("    return r" if returns else "    return 0")
    return "\n".join(lines) + "\n"


def _run_kernel_spec(ranks: Sequence[int], n_consts: int, n_state: int) -> list[Spec]:
    arrs = [("a", "int64", r) for r in ranks]
    return [tuple(arrs[:n_consts]), tuple(arrs[n_consts:n_consts + n_state]),
            tuple(arrs[n_consts + n_state:]), "i", "i", "i"]


#: engine.trace._parse_text(buf, end, out_addr, out_write, out_cycle, strict, has_capacity,
#: capacity, state)
PARSE_TEXT_SPEC: list[Spec] = [("a", "uint8", 1), "i", ("a", "int64", 1), ("a", "bool_", 1),
                               ("a", "int64", 1), "b", "b", "i", ("a", "int64", 1)]


def _c_source(entries: Sequence[tuple[str, str]], ranks: Sequence[int], key: str,
              undefined: Sequence[str], data_symbols: Sequence[str]) -> str:
    """The C file linked with the kernels' object code; ``entries``: (exported name, cfunc
    symbol)."""
    stubs = "\n".join(f"HIDDEN void *{s}(void) {{ diffmem_failed = 1; return 0; }}"
                      for s in undefined)
    data = "\n".join(f"HIDDEN void *{s} = 0;" for s in data_symbols)
    wrappers = "\n".join(f"""extern int64_t {name}_cf(void **ptrs, int64_t *ints) __asm__("{native}");
EXPORT int64_t {name}(void **ptrs, int64_t *ints, int64_t *failed) {{
    diffmem_failed = 0;
    int64_t rc = {name}_cf(ptrs, ints);
    *failed = diffmem_failed;
    return rc;
}}""" for name, native in entries)
    return f"""/* generated by engine/kernel_aot.py: the C entries of the ahead-of-time kernels */
#include <stdint.h>
#define HIDDEN __attribute__((visibility("hidden")))
#define EXPORT __attribute__((visibility("default")))
static __thread int64_t diffmem_failed;
/* symbols only numba's error path calls: reaching one means the kernel raised */
{stubs}
{data}
EXPORT const int64_t diffmem_kernel_nranks = {len(ranks)};
EXPORT const int64_t diffmem_kernel_ranks[{len(ranks)}] = {{{", ".join(map(str, ranks))}}};
EXPORT const char *diffmem_kernel_key_str = "{key}";
{wrappers}
"""


def _state_ranks() -> tuple[tuple[int, ...], int, int]:
    """The ranks of the kernel's arrays as the simulator builds them (Consts, State, Chunk)."""
    from engine.config import load_config
    from engine.simulator import Simulator
    sim = Simulator(load_config("DDR4-3200"))
    try:
        consts, state = sim._consts_t, sim._state_t
        return tuple(a.ndim for a in consts + state) + (1,) * N_CHUNK, len(consts), len(state)
    finally:
        sim.close()


def find_compiler() -> str | None:
    """The C compiler to link with: ``$CC``, else ``gcc`` or ``cc`` on the PATH."""
    cc = os.environ.get("CC")
    if cc:
        return shutil.which(cc) or (cc if Path(cc).is_file() else None)
    return shutil.which("gcc") or shutil.which("cc")


def build(force: bool = False) -> Path:
    """Compile the kernel into its library for the current key (see the module's docstring)
    and return its path; an existing library is kept unless ``force``."""
    if not sys.platform.startswith("linux"):
        raise KernelBuildError(f"the ahead-of-time kernel is built on Linux only (this is "
                               f"{sys.platform}); the engine keeps using numba's kernel")
    key = kernel_key()
    if key is None:
        raise KernelBuildError(f"cannot read the kernel's sources under {ENGINE}")
    out = library_path(key)
    if out.is_file() and not force:
        return out
    folder = out.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)         # before minutes of compiling
    except OSError as exc:
        where = f"{DIR_ENV} = {os.environ[DIR_ENV]}" if os.environ.get(DIR_ENV) else "the cache"
        blocked = any(q.exists() and not q.is_dir() for q in (folder, *folder.parents))
        raise KernelBuildError(f"cannot use {folder} ({where}) as the kernel's folder: "
                               f"{exc.strerror or exc}"
                               + (" (a file is in the way)" if blocked else "")) from None
    cc = find_compiler()
    if cc is None:
        raise KernelBuildError("no C compiler found (gcc or cc on the PATH, or $CC): the "
                               "engine keeps using numba's kernel")
    global _forced_mode
    t0 = time.process_time()
    _forced_mode = "jit"                # the simulators built here run numba's kernel
    try:
        _build(out, cc, key)
    finally:
        _forced_mode = None
    log.info("compiled kernel %s built in %.1f CPU-s", out, time.process_time() - t0)
    return out


def _build(out: Path, cc: str, key: str) -> None:
    objects, entries, undefined, data_syms, ranks = _compile_objects()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="diffmem-kernel-") as tmp:
        t = Path(tmp)
        paths = []
        for i, obj in enumerate(objects):
            paths.append(str(t / f"kernel{i}.o"))
            Path(paths[-1]).write_bytes(obj)
        (t / "entry.c").write_text(_c_source(entries, ranks, key, undefined, data_syms),
                                   encoding="ascii")
        (t / "exports.map").write_text("{ global: diffmem_*; local: *; };\n", encoding="ascii")
        so = t / out.name
        cmd = [cc, "-shared", "-fPIC", "-O2", "-o", str(so), str(t / "entry.c"), *paths,
               "-Wl,-z,defs", "-Wl,-Bsymbolic", f"-Wl,--version-script={t / 'exports.map'}",
               "-lm"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise KernelBuildError(f"linking the kernel failed ({' '.join(cmd)}):\n"
                                   f"{res.stderr.strip()}")
        verify(_open(so, key))
        tmp_out = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        shutil.copyfile(so, tmp_out)
        os.replace(tmp_out, out)
    _prune(out.parent)


CODE_MODEL = "large" if platform.machine() in ("x86_64", "AMD64") else "default"
KEEP_LIBRARIES = 8            # libraries kept per folder (other checkouts, other numbas)


def _prune(folder: Path) -> None:
    """Remove all but the KEEP_LIBRARIES newest libraries of the folder."""
    libs = sorted(folder.glob("run_kernel-*.so"), key=lambda p: p.stat().st_mtime,
                  reverse=True)
    for old in libs[KEEP_LIBRARIES:]:
        try:
            old.unlink()
        except OSError as exc:
            log.debug("cannot remove the old kernel %s: %s", old, exc)


def _hide(module: Any) -> None:
    """Give the module's definitions hidden visibility: in position-independent code a
    default-visibility symbol may be preempted, so every call and data access would go
    through the PLT / GOT; hidden ones are direct (the C file exports the entries)."""
    import llvmlite.binding as ll
    local = (ll.Linkage.internal, ll.Linkage.private)
    for value in list(module.functions) + list(module.global_variables):
        if not value.is_declaration and value.linkage not in local:
            value.visibility = "hidden"


def _numba_type(sp: Spec) -> Any:
    """The numba type of an argument spec (see _entry_source)."""
    from numba import types
    if isinstance(sp, tuple) and sp and sp[0] == "a":
        return types.Array(getattr(types, "bool_" if sp[1] == "bool_" else sp[1]), sp[2], "C")
    if sp == "i":
        return types.int64
    if sp == "b":
        return types.boolean
    return types.BaseTuple.from_types([_numba_type(x) for x in sp])


def _compile_objects() -> tuple[list[bytes], list[tuple[str, str]], list[str], list[str],
                                 tuple[int, ...]]:
    """The entries' object code (PIC, this CPU), (exported name, cfunc symbol) pairs, the
    symbols to stub (functions, data) and the kernel's array ranks."""
    import llvmlite.binding as ll
    from numba import carray, cfunc, types

    from engine import kernel as K
    from engine import trace as T
    ranks, n_consts, n_state = _state_ranks()
    spec = _run_kernel_spec(ranks, n_consts, n_state)
    todo = (*((run_entry(i), fn, spec, True) for i, fn in enumerate(K.KERNELS)),
            ("diffmem_parse_text", T._parse_text, PARSE_TEXT_SPEC, False))
    sig = types.int64(types.CPointer(types.voidptr), types.CPointer(types.int64))
    objects, entries = [], []
    undefined: set[str] = set()
    data_syms: set[str] = set()
    other: set[str] = set()
    tm = None

    def note_symbols(module: Any) -> None:
        for f in module.functions:
            if f.is_declaration and not f.name.startswith("llvm."):
                (undefined if f.name.startswith(STUB_PREFIXES) else other).add(f.name)
        for gv in module.global_variables:
            if gv.is_declaration:
                (data_syms if gv.name.startswith(STUB_PREFIXES) else other).add(gv.name)

    for name, fn, spec, returns in todo:
        # the kernel as numba's JIT has it (compiled or loaded from numba's cache): its
        # optimised module is emitted as it is, so the machine code comes from the same IR
        # as the JIT's; the entry calls it (not inlined: inlining it and optimising the
        # whole again made the event loop ~50 % slower, measured)
        argtypes = tuple(_numba_type(sp) for sp in spec)
        fn.compile(argtypes)
        cres = fn.overloads[argtypes]
        kernel_module = cres.library._get_module_for_linking()
        kernel_module.get_function(cres.fndesc.llvm_func_name).add_function_attribute(
            "noinline")
        ns: dict[str, Any] = {"carray": carray, "np": np, "kernel": fn}
        src = _entry_source(name, "kernel", spec, returns)
        exec(compile(src, f"<engine.kernel_aot {name}>", "exec"), ns)  # noqa: S102
        entry = cfunc(sig, nopython=True)(ns[name])
        lib = entry._library
        if tm is None:
            codegen = lib._codegen
            target = ll.Target.from_triple(ll.get_process_triple())
            # numba's JIT settings (CPU, features, -O3, on x86-64 the large code model of
            # its MCJIT), position-independent: with the default (small) code model the
            # event loop ran ~1.2x slower than numba's (measured, 1M DDR4 traces)
            tm = target.create_target_machine(cpu=codegen._get_host_cpu_name(),
                                              features=codegen._tm_features, opt=3,
                                              reloc="pic", codemodel=CODE_MODEL)
        strong = kernel_module.clone()
        strong.get_function(cres.fndesc.llvm_func_name).linkage = ll.Linkage.external
        for module in (strong, lib._final_module):
            note_symbols(module)
            _hide(module)
            objects.append(tm.emit_object(module))     # the kernel's first: the linker
        entries.append((name, entry.native_name))       # keeps its copies of shared code
    if other:
        log.debug("kernel objects: symbols left to the linker: %s", ", ".join(sorted(other)))
    return objects, entries, sorted(undefined), sorted(data_syms), ranks


def comparable(stats: Any) -> str:
    """A run's statistics as JSON text without what measures the host (wall time): equal for
    two runs exactly when the simulations agree."""
    import json

    from engine.fileio import json_default
    d = stats.to_dict()
    d.pop("wall_seconds", None)
    return json.dumps(d, sort_keys=True, default=json_default)


#: texts the parser check reads: good lines of every kind, then each kind of bad line
_PARSE_CHECK = (
    b"\xef\xbb\xbf0x1F40 READ 10\n  0x0 WRITE 20\n# comment\n\n0XABC read 30\n"
    b"0x40 P_MEM_WR 30\r\n0x80 BOFF 40\n0x0000000000000000000000c0 P_FETCH 41\n"
    + b"".join(b"0x%x %s %d\n" % (i * 4160, b"WRITE" if i % 3 else b"READ", 50 + i)
               for i in range(300)) + b"0x40 READ 999",
    b"0x40 READ 10\n0x40 FOO 11\n",
    b"0x40 READ 10\n0x80 READ 5\n",
    b"0x40 READ 10\n0x7fffffffffff READ 12\n",
    b"0x40 READ 10\nzz READ 12\n",
    b"0x40 READ 99999999999999999999999\n",
)


def _parse_all(parse: Callable[..., None], text: bytes, strict: bool) -> list[np.ndarray]:
    """Every call's state and outputs while ``parse`` reads ``text`` into 64-row chunks."""
    from engine import trace as T
    buf = np.frombuffer(text + b"\n", np.uint8).copy()
    state = np.zeros(T._S_SLOTS, np.int64)
    state[T._S_LAST] = -1
    out = (np.zeros(64, np.int64), np.zeros(64, np.bool_), np.zeros(64, np.int64))
    seen = []
    for _ in range(100):
        pos = int(state[T._S_POS])
        parse(buf, len(text), *out, strict, True, 1 << 30, state)
        seen += [state.copy()] + [a[:int(state[T._S_N])].copy() for a in out]
        if state[T._S_ERR] != T._OK or state[T._S_POS] == pos:
            break
        state[T._S_N] = 0
    return seen


def verify(kern: AotKernel) -> None:
    """Run short simulations and parses with the library and with numba's kernels; raise
    :class:`KernelBuildError` unless every state array, statistic and parse is the same."""
    from engine import trace as T
    parse = kern.text_parser()
    for i, text in enumerate(_PARSE_CHECK):
        for strict in (True, False):
            a, b = _parse_all(T._parse_text, text, strict), _parse_all(parse, text, strict)
            if len(a) != len(b) or not all(np.array_equal(x, y) for x, y in zip(a, b)):
                raise KernelBuildError(f"{kern.path}: its text parser differs from numba's "
                                       f"on check text {i}; not installed")
    from engine.config import load_config
    from engine.simulator import SimOptions, Simulator
    rng = np.random.default_rng(17)
    # (both kernel variants: DRAMsim3's scheduler with open or closed rows, then others)
    cases = (("DDR4-3200", {}, SimOptions(epoch=2000)),
             ("HBM2", {}, SimOptions(intake="per-channel", track_completions=True)),
             ("DDR4-3200", {}, SimOptions(cycles=30_000, cmd_trace=None)),
             ("DDR4-3200", {"scheduler": "frfcfs"}, SimOptions(epoch=2000)),
             ("HBM2", {"row_buf_policy": "CLOSE_PAGE", "page_policy": "close"}, SimOptions()),
             ("HBM2", {"scheduler": "parbs", "page_policy": "open_adaptive"}, SimOptions()))
    for preset, changes, opts in cases:
        cfg = load_config(preset).replace(**changes)
        n = 3000
        addr = (rng.integers(0, cfg.capacity_bytes // 64, n) * 64).astype(np.uint64)
        addr[: n // 2] = (np.arange(n // 2, dtype=np.uint64) * 64)   # a stream, then random
        isw = rng.random(n) < 0.3
        cyc = np.sort(rng.integers(0, 4 * n, n)).astype(np.int64)
        results = []
        for use_aot in (False, True):
            sim = Simulator(cfg, opts)
            if use_aot:
                bound = kern.bind(sim._consts_t, sim._state_t)
                if bound is None:
                    raise KernelBuildError(f"{kern.path}: does not fit the simulator's arrays")
                sim._runner = bound
            else:
                sim._runner = _jit_runner(sim._consts_t, sim._state_t)
            sim.feed(addr, isw, cyc, final=True)
            results.append(({k: np.array(v) for k, v in sim.s.items()},
                            comparable(sim.stats())))
            sim.close()
        (s_jit, sum_jit), (s_aot, sum_aot) = results
        bad = [k for k in s_jit if not np.array_equal(s_jit[k], s_aot[k])]
        if bad or sum_jit != sum_aot:
            raise KernelBuildError(f"{kern.path}: differs from numba's kernel on {preset} "
                                   f"({', '.join(bad) or 'statistics'}); not installed")
