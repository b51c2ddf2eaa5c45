"""Design-review reports of a study: one HTML file with embedded PNG plots, and a PDF.

Both are built from the stored study document (setup and points) and the result records
alone, through the study's own ``analyse``: setup, findings with their errors, tables, plots,
notes, and a list of every point. Matplotlib runs on the Agg backend with its bundled fonts
(nothing is fetched); Qt is never imported.
"""
from __future__ import annotations

import base64
import contextlib
import html
import io
import logging
import signal
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from engine.fileio import atomic_path, atomic_write_text
from engine.studies.catalog import Analysis, FigureSpec, get_study, join

log = logging.getLogger(__name__)

PDF_LINES_PER_PAGE = 58
PDF_WRAP = 100
DPI = 110


@dataclass
class ReportFiles:
    html: Path
    pdf: Path
    pdf_pages: int
    figures: int


@contextlib.contextmanager
def _sigint_held() -> Any:
    """Hold a Ctrl-C (SIGINT) back until the block ends, then deliver it to the handler that
    was there (KeyboardInterrupt for the CLI). Only the main thread gets Python's signal
    handlers: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    try:
        old = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    except (TypeError, ValueError):    # a handler not set from Python: leave it alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        if caught:
            signal.raise_signal(signal.SIGINT)


def _matplotlib() -> Any:
    # Imported with Ctrl-C held back: matplotlib's compiled modules create Python objects
    # while they initialise (ft2font its enums), keeping them in C++ statics; a
    # KeyboardInterrupt in the middle leaves objects only such a static owns, and the
    # process then aborts at exit (SIGABRT, "Fatal Python error: PyThreadState_Get" from
    # the static's destructor running after Python's finalisation).
    with _sigint_held():
        import matplotlib
        matplotlib.use("Agg", force=True)
        from matplotlib.figure import Figure
        from matplotlib.backends import backend_agg, backend_pdf  # noqa: F401
    return Figure


def _render(spec: FigureSpec) -> Any:
    Figure = _matplotlib()
    fig = Figure(figsize=spec.size, dpi=DPI)
    spec.draw(fig)
    fig.suptitle(spec.title, fontsize=10)
    return fig


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return base64.b64encode(buf.getvalue()).decode("ascii")


def setup_lines(document: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(name, value) rows describing the study's setup."""
    setup = document["setup"]
    rows = [("study", document["study"]), ("created", document.get("created", "")),
            ("app version", document.get("app_version", "")),
            ("memory config", str(setup.get("config"))),
            ("overrides", ", ".join(f"{k}={v}" for k, v in setup.get("overrides", {}).items())
             or "none"),
            ("parameters", "; ".join(f"{k}={v}" for k, v in setup.get("params", {}).items())
             or "defaults"),
            ("points", str(len(document["points"])))]
    if setup.get("cycles"):
        rows.append(("cycle limit", str(setup["cycles"])))
    if setup.get("compute"):
        rows.append(("compute model", ", ".join(f"{k}={v}" for k, v in
                                                setup["compute"].items())))
    for t in setup.get("traces", []):
        extra = ", ".join(f"{k}={t[k]}" for k in ("kind", "batch", "flops") if t.get(k))
        rows.append((f"trace {t['label']}", f"{t['path']} ({extra}; sha256 "
                                             f"{t.get('digest', '')[:12]})"))
    return rows


def _point_rows(document: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
                ) -> list[list[str]]:
    rows, _ = join(document, records)
    out = []
    for r in rows:
        tags = ", ".join(f"{k}={v}" for k, v in r.tags.items() if k != "order")
        # (DRAMsim3's 0 for an average over no read, or a rate over no column command: n/a)
        lat = (f"{r.m['avg_read_latency_ns']:.1f}" if r.m.get("reads", 1) else "n/a")
        hits = (f"{100 * r.m['row_hit_rate']:.1f}"
                if r.m.get("reads", 1) or r.m.get("writes", 1) else "n/a")
        out.append([r.point_id[:10], r.label, tags, r.m["config"], str(r.m["cycles"]),
                    lat, f"{r.m['bandwidth_GBps']:.2f}", hits, f"{r.m['energy_total_pJ']:.6g}"])
    return out


POINT_COLUMNS = ["point", "workload", "tags", "config", "cycles", "read lat. (ns)",
                 "GB/s", "row hits (%)", "energy (pJ, core + IO)"]


def _html_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


CSS = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:0.85em}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}th{background:#eee}
img{max-width:100%;border:1px solid #ddd}figure{margin:1em 0}
figcaption{font-size:0.85em;color:#555}.note{color:#8a5a00}"""


def build_html(document: Mapping[str, Any], records: Sequence[Mapping[str, Any]],
               analysis: Analysis) -> str:
    """The report as one self-contained HTML page (plots as base64 PNG <img>)."""
    study = get_study(document["study"])
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
             f"{html.escape(analysis.title)} study</title><style>{CSS}</style></head><body>",
             f"<h1>{html.escape(analysis.title)} study</h1>",
             f"<p>{html.escape(study.description)}</p>", "<h2>Setup</h2>",
             _html_table(["", ""], setup_lines(document)), "<h2>Findings</h2><ul>"]
    parts += [f"<li>{html.escape(f.text)}</li>" for f in analysis.findings]
    parts.append("</ul>")
    if analysis.notes:
        parts.append("<h2>Notes</h2><ul>")
        parts += [f"<li class='note'>{html.escape(n)}</li>" for n in analysis.notes]
        parts.append("</ul>")
    for t in analysis.tables:
        parts += [f"<h3>{html.escape(t.title)}</h3>", _html_table(t.columns, t.rows)]
    parts.append("<h2>Plots</h2>")
    for spec in analysis.figures:
        fig = _render(spec)
        parts.append(f"<figure><img alt='{html.escape(spec.title)}' "
                     f"src='data:image/png;base64,{_png(fig)}'><figcaption>"
                     f"{html.escape(spec.caption)}</figcaption></figure>")
    parts += ["<h2>Points</h2>", _html_table(POINT_COLUMNS, _point_rows(document, records)),
              "<p><small>Rebuild this report from the stored results with <code>python "
              "main.py study --report --out DIR</code> (a results folder) or <code>python "
              f"main.py study {html.escape(str(document.get('study', 'NAME')))} --report "
              "--project FILE</code> (a project).</small></p></body></html>"]
    return "\n".join(parts)


def text_lines(document: Mapping[str, Any], records: Sequence[Mapping[str, Any]],
               analysis: Analysis) -> list[str]:
    """The report's text (setup, findings, notes, tables, points), wrapped for the PDF."""
    out = [f"{analysis.title} study", "", "Setup"]
    for k, v in setup_lines(document):
        out += textwrap.wrap(f"  {k}: {v}", PDF_WRAP, subsequent_indent="      ")
    out += ["", "Findings"]
    for f in analysis.findings:
        out += textwrap.wrap(f"- {f.text}", PDF_WRAP, subsequent_indent="  ")
    if analysis.notes:
        out += ["", "Notes"]
        for n in analysis.notes:
            out += textwrap.wrap(f"- {n}", PDF_WRAP, subsequent_indent="  ")
    for t in analysis.tables + [_points_table(document, records)]:
        out += ["", *textwrap.wrap(t.title, PDF_WRAP)]
        out += table_lines(t.columns, t.rows, PDF_WRAP + 40)
    return out


def table_lines(columns: Sequence[Any], rows: Sequence[Sequence[Any]], width: int
                ) -> list[str]:
    """A text table no wider than ``width``: columns that do not fit go to further blocks
    (each repeating the first column), cells longer than a third of the width wrap."""
    cell_max = max(8, width // 3)
    cols = [str(c) for c in columns]
    body = [[str(v) for v in r] for r in rows]
    widths = [min(cell_max, max([len(c)] + [len(r[i]) for r in body]))
              for i, c in enumerate(cols)]
    blocks: list[list[int]] = []
    cur: list[int] = []
    used = widths[0] if widths else 0
    for i in range(1, len(cols)):
        if cur and used + 2 + widths[i] > width:
            blocks.append(cur)
            cur, used = [], widths[0]
        cur.append(i)
        used += 2 + widths[i]
    blocks.append(cur)
    out: list[str] = []
    for k, block in enumerate(blocks):
        idx = [0] + block if cols else []
        if k:
            out.append(f"  (continued: columns {block[0] + 1}-{block[-1] + 1})")
        for row in [cols] + body:
            cells = [textwrap.wrap(row[i], widths[i]) or [""] for i in idx]
            for j in range(max(len(c) for c in cells)):
                out.append("  ".join(f"{(c[j] if j < len(c) else ''):<{widths[i]}}"
                                     for c, i in zip(cells, idx)).rstrip())
    return out


def _points_table(document: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> Any:
    from engine.studies.catalog import Table
    return Table("Points", POINT_COLUMNS, _point_rows(document, records))


#: What stands in the PDF for a run of characters its monospace font cannot draw.
MISSING_GLYPHS = "[…]"


def _drawable(lines: Sequence[str]) -> list[str]:
    """``lines`` with each run of characters the PDF's monospace font has no glyph for (the
    Chinese quotations of the seed document where no CJK font is installed) replaced by
    :data:`MISSING_GLYPHS` and, if any was, a first line saying so: matplotlib would draw
    them as empty boxes."""
    from matplotlib import font_manager, ft2font
    font = ft2font.FT2Font(font_manager.findfont(font_manager.FontProperties(
        family="monospace")))
    have = set(font.get_charmap())
    out, replaced = [], False
    for line in lines:
        parts, run = [], False
        for ch in line:
            if ord(ch) < 128 or ord(ch) in have:
                parts.append(ch)
                run = False
            elif not run:
                parts.append(MISSING_GLYPHS)
                run = replaced = True
        out.append("".join(parts))
    if replaced:
        out.insert(0, f"({MISSING_GLYPHS} marks text in a script this PDF's font lacks; the "
                      "HTML report shows it.)")
    return out


def write_pdf(path: Path, lines: Sequence[str], figures: Sequence[FigureSpec]) -> int:
    """Text pages then one page per figure; returns the page count. Written atomically."""
    Figure = _matplotlib()
    from matplotlib.backends.backend_pdf import PdfPages
    lines = _drawable(lines)
    pages = 0
    # (a unique temporary name, removed on failure: two processes rendering into one folder
    # wrote the same report.pdf.part, and a failed render left it behind)
    with atomic_path(path) as tmp, PdfPages(
            tmp, metadata={"Creator": "DiffMem Studio", "CreationDate": None}) as pdf:
        for start in range(0, max(1, len(lines)), PDF_LINES_PER_PAGE):
            fig = Figure(figsize=(8.27, 11.69))
            fig.text(0.05, 0.97, "\n".join(lines[start:start + PDF_LINES_PER_PAGE]),
                     va="top", ha="left", family="monospace", fontsize=6.5)
            pdf.savefig(fig)
            pages += 1
        for spec in figures:
            fig = _render(spec)
            fig.text(0.01, 0.005, textwrap.fill(spec.caption, 150), fontsize=7, va="bottom")
            pdf.savefig(fig)
            pages += 1
    return pages


def render_report(document: Mapping[str, Any], records: Sequence[Mapping[str, Any]],
                  out_dir: str | Path, *, stem: str = "report") -> ReportFiles:
    """Write ``report.html`` and ``report.pdf`` for a study into *out_dir*."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    analysis = get_study(document["study"]).analyse(document, records)
    html_path = out / f"{stem}.html"
    atomic_write_text(html_path, build_html(document, records, analysis))
    pdf_path = out / f"{stem}.pdf"
    pages = write_pdf(pdf_path, text_lines(document, records, analysis), analysis.figures)
    log.info("report written: %s, %s (%d pages)", html_path, pdf_path, pages)
    return ReportFiles(html_path, pdf_path, pages, len(analysis.figures))
