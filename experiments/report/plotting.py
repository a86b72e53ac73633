"""What every figure shares: colours and markers per matcher, labels, the runs a figure
draws (per build, the latest run of its experiment), error bars, and the note that names
the cells a figure could not draw."""

from __future__ import annotations

import math
from typing import Any

from ..records import Record, build_order, latest_run
from ..registry import LABELS

__all__ = ["COLORS", "MARKERS", "TRIES", "build_name", "build_title", "dot_rows", "error_bars",
           "latest_runs", "missing_note", "plain_log", "pyplot", "series_label", "series_legend",
           "thousands"]

COLORS = {
    "cstrie": "#d62728",
    "cstrie_cache": "#8c564b",
    "cstrie_replicated": "#ff7f0e",
    "locked_trie": "#1f77b4",
    "locked_trie_nocache": "#17becf",
    "naive": "#7f7f7f",
    "inverted_bitmap": "#2ca02c",
    "optimized_bitmap": "#bcbd22",
    "paho": "#9467bd",
}
MARKERS = {"cstrie": "o", "cstrie_cache": "h", "cstrie_replicated": "*", "locked_trie": "s",
            "locked_trie_nocache": "D", "naive": "x", "inverted_bitmap": "^",
            "optimized_bitmap": "v", "paho": "P"}
TRIES = ("cstrie", "locked_trie", "locked_trie_nocache")


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def series_label(alg: str, dialect: str | None = None) -> str:
    lab = LABELS.get(alg, alg)
    return f"{lab} [MQTT]" if alg == "paho" else lab


def thousands(value: Any) -> str:
    """An int with thousands separators; anything else as is."""
    return f"{value:,}" if isinstance(value, int) else str(value)


def build_name(recs: list[Record], build: str) -> str:
    """``Python <version> (GIL)`` or ``Python <version> (free-threaded, GIL disabled)``."""
    r = next(x for x in recs if x["build"] == build)
    kind = ("free-threaded, GIL disabled" if r.get("free_threaded_build")
            and not r.get("gil_enabled") else "GIL")
    return f"Python {r['python']} ({kind})"


def build_title(recs: list[Record], build: str) -> str:
    r = next(x for x in recs if x["build"] == build)
    return f"{build_name(recs, build)}, {r['cpu_count']} CPUs, size {r['size']}"


def latest_runs(recs: list[Record], experiment: str) -> list[tuple[str, list[Record]]]:
    """(build, records of its latest run of ``experiment``) for each build that has one."""
    out = []
    for build in build_order(recs):
        run_id = latest_run(recs, experiment, build)
        if run_id:
            out.append((build, [r for r in recs if r["run_id"] == run_id
                                and r["experiment"] == experiment]))
    return out


def error_bars(rs: list[Record], scale: float = 1.0) -> tuple[list[float], list[list[float]]]:
    med = [r["median"] * scale for r in rs]
    lo = [(r["median"] - r["min"]) * scale for r in rs]
    hi = [(r["max"] - r["median"]) * scale for r in rs]
    return med, [lo, hi]


def missing_note(ax: Any, recs: list[Record]) -> None:
    """List the cells of this panel that were not measured, inside the axes."""
    def where(r: Record) -> str:
        key = {"memory": "subscriptions", "level_width": "width"}.get(r["experiment"])
        n = r.get("params", {}).get(key) if key else None
        return f" at {n:,}" if n else ""

    bad = sorted({f"{series_label(r['algorithm'])}: {r['status']}{where(r)}" for r in recs
                  if r.get("status") != "ok"})
    if bad:
        ax.text(0.99, 0.01, "not measured: " + "; ".join(bad), transform=ax.transAxes,
                ha="right", va="bottom", fontsize=6, color="#555555", wrap=True)


def plain_log(axis: Any) -> None:
    """Log-scale tick labels as plain numbers (0.5, 2, 1,000) rather than 2 x 10^0."""
    from matplotlib.ticker import FuncFormatter, LogFormatter

    class Plain(LogFormatter):
        # LogFormatter decides which ticks get a label (minor ones too when the axis spans
        # under two decades); the label itself is a plain number.
        def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
            return f"{x:,.0f}" if x >= 1 else f"{x:g}"

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def dot_rows(ax: Any, rows: list[tuple[str, list[tuple[str, Record | None]]]],
          scale: float, styles: dict[str, tuple[str, float]]) -> None:
    """Horizontal dot plot: one row per algorithm, one marker per series, min-max bars.

    ``rows`` is ``[(algorithm, [(series, record or None), ...]), ...]``; ``styles`` maps a
    series to (fill style, vertical offset). On a log axis, a dot plot keeps lengths from
    meaning anything they do not (a bar's length on a log axis is arbitrary).
    """
    lo, hi = float("inf"), 0.0
    for i, (alg, series) in enumerate(rows):
        for name, rec in series:
            if rec is None:
                continue
            lo, hi = min(lo, rec["min"] * scale), max(hi, rec["max"] * scale)
            fill, off = styles[name]
            med = rec["median"] * scale
            err = [[(rec["median"] - rec["min"]) * scale], [(rec["max"] - rec["median"]) * scale]]
            ax.errorbar([med], [i + off], xerr=err, fmt=MARKERS[alg], color=COLORS[alg],
                        markerfacecolor=COLORS[alg] if fill == "full" else "white",
                        markersize=7, capsize=2, linewidth=1)
    ax.set_yticks(range(len(rows)), [series_label(a) for a, _ in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xscale("log")
    if hi > 0:
        # Whole decades, so that every panel shows labelled ticks.
        ax.set_xlim(10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi)))
    plain_log(ax.xaxis)
    ax.grid(axis="x", which="both", alpha=0.3)


def series_legend(ax: Any, styles: dict[str, tuple[str, float]], labels: dict[str, str]
                   ) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", linestyle="", color="black",
                      markerfacecolor="black" if fill == "full" else "white",
                      label=labels.get(name, name))
               for name, (fill, _) in styles.items()]
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2),
              ncol=1, frameon=False)
