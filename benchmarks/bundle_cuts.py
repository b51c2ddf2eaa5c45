"""What each cut of packaging/diffmem.spec saves, measured on a build without cuts.

    DIFFMEM_PACKAGING_BASELINE=1 .venv/bin/python -m PyInstaller --noconfirm \\
        --distpath build/packaging/baseline-dist --workpath build/packaging/baseline-work \\
        packaging/diffmem.spec
    .venv/bin/python benchmarks/bundle_cuts.py build/packaging/baseline-dist/diffmem \\
        build/packaging/baseline-work/diffmem/PYZ-00.pyz [dist/diffmem]

For every excluded package: its files in the baseline bundle plus its compressed modules in
the baseline's PYZ archive (inside the executable).  For every DROP_FILES group: the files
it matches.  For STRIP_FILES: the saving of `strip --strip-unneeded` on a copy.  With a
final bundle, also the measured totals.  Prints a Markdown table.  (Transitive dependencies
of an excluded package are counted only under their own name when they are excluded too.)
"""
from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "packaging" / "diffmem.spec"


def load_spec() -> dict:
    os.environ.pop("DIFFMEM_PACKAGING_BASELINE", None)
    ns: dict = {"SPECPATH": str(SPEC.parent), "__name__": "__spec__"}
    exec(compile(SPEC.read_text(encoding="utf-8"), str(SPEC), "exec"), ns)  # noqa: S102
    return ns


def tree_size(path: Path) -> int:
    if path.is_symlink():
        return 0
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def pyz_sizes(pyz: Path) -> dict[str, int]:
    """Compressed bytes per module name in a PYZ archive."""
    from PyInstaller.archive.readers import ZlibArchiveReader

    return {name: entry[2] for name, entry in ZlibArchiveReader(str(pyz)).toc.items()}


#: DROP_FILES patterns grouped for the report (first matching prefix wins).
GROUPS = [
    ("torch/bin/", "torch: C++ test programs and protoc (torch/bin)"),
    ("torch/lib/", "torch: test libraries (torch/lib/*test*, aoti custom ops)"),
    ("torch/", "torch: headers, CMake files, stubs"),
    ("PySide6/Qt/translations/", "Qt: translations of Qt's dialogs"),
    ("PySide6/Qt/plugins/imageformats/", "Qt: unused image-format plugins"),
    ("PySide6/Qt/lib/libQt6Pdf", "Qt: unused image-format plugins"),
    ("PySide6/Qt/plugins/tls/", "Qt: network plugins (TLS, network state)"),
    ("PySide6/Qt/plugins/networkinformation/", "Qt: network plugins (TLS, network state)"),
    ("PySide6/Qt/plugins/platformthemes/", "Qt: GTK3 theme plugin + the GTK libraries it pulls"),
    ("lib", "Qt: GTK3 theme plugin + the GTK libraries it pulls"),
    ("PySide6/", "Qt: embedded platforms (EGLFS, framebuffer, VNC) and input plugins"),
]


def group_of(pattern: str) -> str:
    return next(label for prefix, label in GROUPS if pattern.startswith(prefix))


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    app, pyz = Path(argv[0]) / "_internal", Path(argv[1])
    final = Path(argv[2]) if len(argv) > 2 else None
    spec = load_spec()
    modules = pyz_sizes(pyz)
    files = [p for p in app.rglob("*") if p.is_file() and not p.is_symlink()]
    rel = {p: p.relative_to(app).as_posix() for p in files}

    rows: list[tuple[str, int]] = []
    small = 0
    for name in spec["EXCLUDES"]:
        on_disk = tree_size(app / name.replace(".", "/"))
        on_disk += tree_size(app / f"{name}.libs")          # auditwheel's bundled libraries
        in_pyz = sum(size for mod, size in modules.items()
                     if mod == name or mod.startswith(name + "."))
        if on_disk + in_pyz >= 2**20 // 2:
            rows.append((f"exclude `{name}`", on_disk + in_pyz))
        else:
            small += on_disk + in_pyz
    if small:
        rows.append(("exclude the other modules of EXCLUDES (each < 0.5 MiB)", small))
    groups: dict[str, int] = {}
    for p in files:
        pattern = next((pat for pat in spec["DROP_FILES"] if fnmatch.fnmatchcase(rel[p], pat)),
                       None)
        if pattern is not None:
            label = group_of(pattern)
            groups[label] = groups.get(label, 0) + p.stat().st_size
    rows += [(f"drop {label}", size) for label, size in groups.items()]
    with tempfile.TemporaryDirectory() as tmp:
        for lib in spec["STRIP_FILES"]:
            src = app / lib
            if not src.is_file() or shutil.which("strip") is None:
                continue
            copy = Path(tmp) / src.name
            shutil.copyfile(src, copy)
            subprocess.run(["strip", "--strip-unneeded", str(copy)], check=True)
            rows.append((f"strip `{lib}`", src.stat().st_size - copy.stat().st_size))

    print("| cut | saved |")
    print("|---|---|")
    for what, size in sorted(rows, key=lambda r: -r[1]):
        print(f"| {what} | {mib(size)} |")
    print(f"| **sum of the cuts** | **{mib(sum(s for _, s in rows))}** |")
    base_total = tree_size(app.parent)
    print(f"\nbaseline bundle: {mib(base_total)}")
    if final is not None:
        final_total = tree_size(final)
        print(f"final bundle: {mib(final_total)} (saved {mib(base_total - final_total)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
