"""Charts of the published tables, drawn with matplotlib as SVG text to inline in the pages (no files to fetch, so
the pages work from file://). The same data gives the same bytes (fixed hash salt, no date in the metadata).

Three charts, each from a table's `chart` data:
- bandwidth: measured tokens/s against memory bandwidth, with the computed ceiling line (bandwidth ÷ bytes read per
  token) drawn dashed and labelled as a calculation;
- speedup: per machine, the speed-up of each format over the baseline format (calc. from measured figures);
- concurrency: aggregate and per-user tokens/s against the number of concurrent users.
"""

from __future__ import annotations

import io
import re
from typing import Any

_RC = {
    "svg.fonttype": "none",  # text stays text: smaller, selectable, searchable
    "svg.hashsalt": "tpsdb",  # stable ids: the same chart gives the same bytes
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def _plain(text: Any) -> str:
    """Label text shown as given: a `$` must not switch matplotlib to math mode."""
    return str(text).replace("$", r"\$")


def _svg(fig) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]


def _figure(width: float = 7.5, height: float = 4.2):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height))


_BANDWIDTH_KINDS = (("vendor", "o", "#1f6f43"), ("relayed", "s", "none"), ("stated", "^", "none"))
_KIND_LEGEND = {"vendor": "from the maker's page", "relayed": "relayed by a publication",
                "stated": "stated by the figure's source"}


def bandwidth_chart(chart: dict) -> str | None:
    points = chart["points"]
    if not points:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    xs = [p["bandwidth_gbs"] for p in points]
    ys = [p["tokens_per_second"] for p in points]
    # one marker per kind of bandwidth, so the x position says how far it can be trusted
    for kind, marker, fill in _BANDWIDTH_KINDS:
        mine = [p for p in points if p.get("bandwidth_kind", "vendor") == kind]
        if mine:
            ax.scatter([p["bandwidth_gbs"] for p in mine], [p["tokens_per_second"] for p in mine], s=22, zorder=3,
                       marker=marker, color="#1f6f43", facecolors=fill,
                       label=f"measured; bandwidth {_KIND_LEGEND[kind]}")
    if chart.get("read_gb"):
        top = max(xs) * 1.08
        read = chart["read_gb"]
        ax.plot([0, top], [0, top / read], linestyle="--", color="#c27c0e",
                label=f"max. (calc.) = bandwidth ÷ {read:g} GB read per token")
        ax.set_ylim(0, max(max(ys), min(top / read, max(ys) * 1.6)) * 1.08)
    ax.set_xlim(left=0)
    _number_points(ax, fig, [(p["bandwidth_gbs"], p["tokens_per_second"]) for p in points],
                   [short_name(p["label"]) for p in points])
    ax.set_xlabel("memory bandwidth (GB/s)")
    ax.set_ylabel("tokens/s")
    ax.set_title(_plain(chart["title"]))
    ax.legend(loc="upper left", frameon=False)
    ax.grid(alpha=0.25)
    return _svg(fig)


def label_offsets(pixels: list[tuple[float, float]], width: float = 11, height: float = 9) -> list[tuple[float, float]]:
    """Where each point's label goes (an offset in pixels from its point) so that no two labels overlap: each label
    starts up and to the right of its point and moves up past any label already placed there."""
    placed: list[tuple[float, float]] = []
    offsets: list[tuple[float, float]] = [(0.0, 0.0)] * len(pixels)
    for i in sorted(range(len(pixels)), key=lambda i: (pixels[i][1], pixels[i][0])):
        x, y = pixels[i][0] + 3, pixels[i][1] + 2
        while any(abs(x - px) < width and abs(y - py) < height for px, py in placed):
            y += height
        placed.append((x, y))
        offsets[i] = (x - pixels[i][0], y - pixels[i][1])
    return offsets


def short_name(label: str) -> str:
    """A machine's name short enough to print beside its point: `Apple M2 Ultra (76-core GPU)` -> `M2 Ultra 76c`,
    `NVIDIA DGX Spark` -> `DGX Spark` (the caption's key gives the full names)."""
    text = re.sub(r"^(Apple|NVIDIA|AMD|Intel)\s+", "", str(label))
    text = re.sub(r"\s*\((\d+)-core GPU\)", r" \1c", text)
    return text if len(text) <= 22 else text[:21] + "…"


def _number_points(ax, fig, xy: list[tuple[float, float]], names: list[str] | None = None) -> None:
    """Each point labelled with its number and short name (the key below the chart gives the full names): labels
    never on top of each other, joined to their point by a thin line when moved away from it."""
    if not xy:
        return
    ax.figure.canvas  # noqa: B018 (the transforms below need the figure's canvas)
    pixels = [tuple(ax.transData.transform(p)) for p in xy]
    to_points = 72 / fig.dpi
    texts = [f"{n} {_plain(name)}" if names else str(n) for n, name in enumerate(names or [""] * len(xy), 1)]
    width = max(11.0, 4.0 * max(len(t) for t in texts))  # about 4 px a character at this size
    for text, (x, y), (dx, dy) in zip(texts, xy, label_offsets(pixels, width=width)):
        moved = dy > 12
        ax.annotate(text, (x, y), xytext=(dx * to_points, dy * to_points), textcoords="offset points",
                    fontsize=6.5, color="#333",
                    arrowprops={"arrowstyle": "-", "color": "#999", "linewidth": 0.5} if moved else None)


def chart_key(chart: dict) -> str:
    """The names of a bandwidth chart's numbered points, for its caption."""
    if chart.get("type") != "bandwidth":
        return ""
    return " Points: " + "; ".join(f"{n} {p['label']}" for n, p in enumerate(chart["points"], 1)) + "."


def speedup_chart(chart: dict) -> str | None:
    rows, formats = chart["rows"], chart["formats"]
    if not rows or not formats:
        return None
    fig = _figure(7.5, max(1.8, 0.28 * len(rows) * len(formats) + 1.0))
    ax = fig.add_subplot()
    height = 0.8 / len(formats)
    colors = ["#3b6ea8", "#1f6f43", "#c27c0e", "#8e44ad"]
    for i, fmt in enumerate(formats):
        ys = [n + i * height for n in range(len(rows))]
        values = [r["speedups"].get(fmt) or 0 for r in rows]
        ax.barh(ys, values, height=height * 0.92, color=colors[i % len(colors)],
                label=f"{fmt} speed ÷ {chart['baseline']} speed (calc.)")
    # What the reader compares against: the ideal gain, the ratio of the file sizes (a format that reads a file N
    # times smaller could be at most about N times faster when memory bandwidth is the limit).
    for i, fmt in enumerate(formats):
        ideal = (chart.get("ideal") or {}).get(fmt)
        if ideal:
            ax.axvline(ideal, color=colors[i % len(colors)], linestyle=":", linewidth=1.2,
                       label=f"ideal {fmt}: ×{ideal:.2f}, {chart['baseline']} size ÷ {fmt} size (calc.)")
    ax.set_yticks([n + 0.4 - height / 2 for n in range(len(rows))], [_plain(r["label"]) for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.axvline(1, color="#888", linewidth=0.8)
    ax.set_xlabel(f"speed-up over {chart['baseline']} (×)")
    ax.set_title(_plain(chart["title"]), pad=8 + 12 * ((len(formats) * 2 + 1) // 2))
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncol=2, frameon=False, fontsize=7)  # above the bars
    ax.grid(axis="x", alpha=0.25)
    return _svg(fig)


def concurrency_chart(chart: dict) -> str | None:
    series = chart["series"]
    if not any(s["aggregate"] or s["per_user"] for s in series):
        return None
    fig = _figure()
    ax = fig.add_subplot()

    def line(key: str, **style):
        pts = [(s["users"], s[key]) for s in series if s[key] is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], **{"marker": "o", "markersize": 3.5, **style})

    line("aggregate", color="#1f6f43", label="aggregate (measured)")
    line("per_user_calc", color="#c27c0e", linestyle="--", label="per user = aggregate ÷ users (calc.)")
    # drawn last and larger: a measured per-user figure often sits on the computed one (at 1 user they are equal)
    line("per_user", color="#3b6ea8", label="per user (measured)", marker="D", markersize=5, zorder=4)
    users = sorted({s["users"] for s in series})
    ax.set_xscale("log", base=2)
    ax.set_xticks(users, [str(u) for u in users])
    ax.set_xlabel("concurrent users")
    ax.set_ylabel("tokens/s")
    ax.set_ylim(bottom=0)
    ax.set_title(_plain(chart["title"]))
    ax.legend(loc="upper left", frameon=False)
    ax.grid(alpha=0.25)
    return _svg(fig)


CHARTS = {"bandwidth": bandwidth_chart, "speedup": speedup_chart, "concurrency": concurrency_chart}

CAPTIONS = {
    "bandwidth": "Each dot is a measured figure from the table. The dashed line is the computed maximum "
                 "(memory bandwidth ÷ bytes read per token): a calculation, not a measurement.",
    "speedup": "Speed-ups are computed from the measured figures of the table (calc.).",
    "concurrency": "Solid lines join measured figures; the dashed line is computed (aggregate ÷ users).",
}


def chart_svg(chart: dict | None) -> tuple[str | None, str]:
    """The chart as inline SVG markup and its caption; (None, reason) when the table has nothing to draw."""
    if not chart:
        return None, ""
    import matplotlib

    with matplotlib.rc_context(_RC):
        svg = CHARTS[chart["type"]](chart)
    if svg is None:
        return None, "No chart: no measured figure to draw yet."
    return svg, CAPTIONS[chart["type"]] + chart_key(chart)
