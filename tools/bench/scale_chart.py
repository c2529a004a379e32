"""The table and chart of BENCHMARKS.md, "At scale", from `scale_run.sh`'s results.

Reads the JSON lines `benches/scale_harness.rs` appends (the latest run of each size wins),
prints a Markdown table, and draws every measurement against the number of documents on
log-log axes as one SVG (no plotting library: the picture is a few lines and text). A size
asked for with `--project` but not measured is projected from the two largest measured
sizes as a power law and drawn dashed.

    python3 -m tools.bench.scale_chart target/scale/results.jsonl --svg benchmarks/scale.svg
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Callable

Run = dict[str, object]

# (panel title, [(series label, how to read it from a run)])
PANELS: list[tuple[str, list[tuple[str, Callable[[Run], float]]]]] = []


def field(*path: str) -> Callable[[Run], float]:
    def read(run: Run) -> float:
        value: object = run
        for name in path:
            if not isinstance(value, dict) or name not in value:
                return math.nan
            value = value[name]
        return float(value) if isinstance(value, (int, float)) else math.nan

    return read


PANELS = [
    ("bulk insert, docs/s", [("rate", field("insert_docs_per_s"))]),
    (
        "warm query, µs",
        [
            ("planted p50", field("warm", "planted_p50_us")),
            ("planted p99", field("warm", "planted_p99_us")),
            ("no match p50", field("warm", "no_match_p50_us")),
            ("no match p99", field("warm", "no_match_p99_us")),
        ],
    ),
    (
        "cold query, µs",
        [
            ("planted p50", field("cold", "planted_p50_us")),
            ("planted p99", field("cold", "planted_p99_us")),
            ("no match p50", field("cold", "no_match_p50_us")),
            ("no match p99", field("cold", "no_match_p99_us")),
        ],
    ),
    (
        "cold query, KiB read",
        [("per query", lambda r: field("cold", "read_bytes_per_query")(r) / 1024)],
    ),
    (
        "dedup of everything, s",
        [("page cache dropped", field("dedup_s")), ("second run", field("dedup_warm_s"))],
    ),
    (
        "memory, MiB",
        [
            ("after open", field("rss_after_open_mib")),
            ("dedup peak", field("dedup_peak_rss_mib")),
            ("load peak", field("load_peak_rss_mib")),
        ],
    ),
    ("open, ms", [("fresh process", field("open_ms"))]),
    ("bytes per document", [("on disk", field("bytes_per_doc"))]),
]

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def docs(run: Run) -> int:
    n = run["docs"]
    if not isinstance(n, int):
        raise SystemExit(f"a run without a document count: {run}")
    return n


def latest_runs(path: Path) -> list[Run]:
    by_size: dict[int, Run] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            run = json.loads(line)
            by_size[docs(run)] = run
    return [by_size[n] for n in sorted(by_size)]


def project(runs: list[Run], read: Callable[[Run], float], n: int) -> float:
    """A power law through the two largest measured sizes, evaluated at `n`."""
    (n0, y0), (n1, y1) = [(float(docs(r)), read(r)) for r in runs[-2:]]
    if min(y0, y1) <= 0 or math.isnan(y0 + y1):
        return math.nan
    slope = math.log(y1 / y0) / math.log(n1 / n0)
    return float(y1 * (n / n1) ** slope)


def ticks(lo: float, hi: float) -> list[float]:
    """Ticks spanning [lo, hi] on a log axis: 1-2-5 per decade, decades alone when the axis
    spans more than three, every digit when it spans less than one."""
    decades = math.log10(hi / lo)
    mantissas = (1,) if decades > 3 else (1, 2, 5) if decades > 1 else tuple(range(1, 10))
    out = []
    for exp in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for m in mantissas:
            v = m * 10.0**exp
            if lo <= v <= hi:
                out.append(v)
    return out


def label(v: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= scale:
            return f"{v / scale:g}{unit}"
    return f"{v:g}"


def panel(
    x0: float, y0: float, title: str, series: list[tuple[str, list[tuple[float, float, bool]]]]
) -> list[str]:
    w, h, left, bottom = 250.0, 190.0, 46.0, 28.0
    xs = [x for _, pts in series for x, _, _ in pts]
    ys = [y for _, pts in series for _, y, _ in pts if y > 0 and not math.isnan(y)]
    if not xs or not ys:
        return []
    xlo, xhi = min(xs) / 1.5, max(xs) * 1.5
    ylo, yhi = min(ys) / 1.6, max(ys) * 1.6

    def px(x: float) -> float:
        return x0 + left + (math.log(x / xlo) / math.log(xhi / xlo)) * (w - left - 8)

    def py(y: float) -> float:
        return y0 + h - bottom - (math.log(y / ylo) / math.log(yhi / ylo)) * (h - bottom - 22)

    out = [
        f'<text x="{x0 + w / 2}" y="{y0 + 14}" text-anchor="middle" font-weight="bold">{title}</text>'
    ]
    out.append(
        f'<rect x="{x0 + left}" y="{y0 + 22}" width="{w - left - 8}" height="{h - bottom - 22}" fill="none" stroke="#888"/>'
    )
    for t in ticks(ylo, yhi):
        out.append(
            f'<line x1="{x0 + left}" x2="{x0 + w - 8}" y1="{py(t):.1f}" y2="{py(t):.1f}" stroke="#eee"/>'
        )
        out.append(
            f'<text x="{x0 + left - 3}" y="{py(t) + 4:.1f}" text-anchor="end">{label(t)}</text>'
        )
    for x in sorted(set(xs)):
        out.append(
            f'<text x="{px(x):.1f}" y="{y0 + h - bottom + 14}" text-anchor="middle">{label(x)}</text>'
        )
    for i, (name, pts) in enumerate(series):
        color = COLORS[i % len(COLORS)]
        good = [(x, y, p) for x, y, p in pts if y > 0 and not math.isnan(y)]
        for (xa, ya, _), (xb, yb, pb) in zip(good, good[1:]):
            dash = ' stroke-dasharray="4 3"' if pb else ""
            out.append(
                f'<line x1="{px(xa):.1f}" y1="{py(ya):.1f}" x2="{px(xb):.1f}" y2="{py(yb):.1f}" stroke="{color}" stroke-width="1.6"{dash}/>'
            )
        for x, y, projected in good:
            fill = "white" if projected else color
            out.append(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{fill}" stroke="{color}"/>'
            )
        out.append(
            f'<text x="{x0 + left + 4}" y="{y0 + 34 + 11 * i}" fill="{color}">{name}</text>'
            if len(series) > 1
            else ""
        )
    return out


def svg(runs: list[Run], projected: list[int]) -> str:
    cols, w, h = 4, 250, 200
    rows = math.ceil(len(PANELS) / cols)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols * w}" height="{rows * h + 30}" '
        'font-family="sans-serif" font-size="10">',
        '<rect width="100%" height="100%" fill="white"/>',
    ]
    for i, (title, series) in enumerate(PANELS):
        drawn = []
        for name, read in series:
            pts = [(float(docs(r)), read(r), False) for r in runs]
            if len(runs) >= 2:
                pts += [(float(n), project(runs, read, n), True) for n in projected]
            drawn.append((name, pts))
        parts += panel((i % cols) * w, (i // cols) * h, title, drawn)
    shape = runs[-1].get("shape", "")
    note = f"documents (x), log-log; {shape}" + (
        "; hollow dashed points projected" if projected else ""
    )
    parts.append(f'<text x="8" y="{rows * h + 20}">{note}</text>')
    parts.append("</svg>")
    return "\n".join(p for p in parts if p) + "\n"


def table(runs: list[Run]) -> str:
    head = "| measurement | " + " | ".join(f"{docs(r):,} docs" for r in runs) + " |"
    lines = [head, "| --- |" + " ---: |" * len(runs)]
    lines.append("| segments | " + " | ".join(str(r.get("segments")) for r in runs) + " |")
    for title, series in PANELS:
        for name, read in series:
            cells = []
            for r in runs:
                v = read(r)
                cells.append(
                    "–"
                    if math.isnan(v)
                    else f"{v:.2f}"
                    if v < 10
                    else f"{v:,.1f}"
                    if v < 100
                    else f"{v:,.0f}"
                )
            lines.append(f"| {title}: {name} | " + " | ".join(cells) + " |")
    lines.append(
        "| warm recall of planted queries | "
        + " | ".join(f"{field('warm', 'recall')(r):.4f}" for r in runs)
        + " |"
    )
    lines.append(
        "| load average at start / end | "
        + " | ".join(f"{r.get('load_at_start', '–')} / {r.get('load_at_end', '–')}" for r in runs)
        + " |"
    )
    lines.append(
        "| bulk insert, user+sys CPU s | "
        + " | ".join(f"{field('insert_cpu_s')(r):,.1f}" for r in runs)
        + " |"
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("results", type=Path)
    ap.add_argument("--svg", type=Path, required=True)
    ap.add_argument(
        "--project", type=int, default=100_000_000, help="a size to project if it was not measured"
    )
    args = ap.parse_args()
    runs = latest_runs(args.results)
    if not runs:
        raise SystemExit(f"{args.results}: no runs")
    projected = [args.project] if args.project > docs(runs[-1]) else []
    args.svg.parent.mkdir(parents=True, exist_ok=True)
    args.svg.write_text(svg(runs, projected))
    print(table(runs))
    print(f"\nchart: {args.svg}" + (f" (projected to {projected[0]:,})" if projected else ""))


if __name__ == "__main__":
    main()
