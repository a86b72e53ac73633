"""What every figure shares: colours and markers per matcher, labels, the runs a figure
draws (per build, the latest run of its experiment), what that run set out to measure,
error bars, and the note under a figure that names the cells it has no data for."""

from __future__ import annotations

import math
import statistics
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..records import Record, build_order, latest_run, matching, run_file
from ..registry import DIALECTS, LABELS, dialects_for

__all__ = ["COLORS", "MARKERS", "TRIES", "Gaps", "Plan", "build_name", "build_title",
           "dialect_of", "dialects_said", "dot_rows", "error_bars", "finish", "latest_runs",
           "plain_log", "plan", "pyplot", "quartile_bars", "series_label", "series_legend",
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


def quartile_bars(rs: list[Record]) -> tuple[list[float], list[list[float]]]:
    """Medians and the distances to the first and third quartiles of each record's round
    values (none where a record has fewer than two), as ``errorbar`` takes them."""
    med, lo, hi = [], [], []
    for r in rs:
        m = r["median"]
        vs = r.get("values") or []
        q1, q3 = (statistics.quantiles(vs, n=4, method="inclusive")[::2] if len(vs) > 1
                  else (m, m))
        med.append(m)
        lo.append(max(m - q1, 0.0))
        hi.append(max(q3 - m, 0.0))
    return med, [lo, hi]


def error_bars(rs: list[Record], scale: float = 1.0) -> tuple[list[float], list[list[float]]]:
    med = [r["median"] * scale for r in rs]
    lo = [(r["median"] - r["min"]) * scale for r in rs]
    hi = [(r["max"] - r["median"]) * scale for r in rs]
    return med, [lo, hi]


@dataclass(frozen=True)
class Plan:
    """What one run set out to measure: its algorithms and dialects, and its size's counts
    (``Size.as_params()``; empty when unknown)."""

    algorithms: tuple[str, ...]
    dialects: tuple[str, ...]
    size: dict[str, Any]

    def axis(self, key: str, rs: list[Record], of: Any) -> list[Any]:
        """The values of the size's ``key`` (e.g. ``scaling_threads``), or where the run
        file does not say, those ``of(record)`` takes in the run's records."""
        if self.size.get(key):
            return list(self.size[key])
        return sorted({of(r) for r in rs} - {None})


def plan(rs: list[Record]) -> Plan:
    """What the run of ``rs`` (records of one run) set out to measure, from its run file;
    where that does not say (older runs, records without a file), what its records show:
    every cell is recorded, skipped ones too, so only cells an interrupted run never reached
    go unnoticed then."""
    m = run_file(rs[0]) if rs else {}
    algorithms = m.get("algorithms") or list(dict.fromkeys(r["algorithm"] for r in rs))
    dialects = m.get("dialects") or [d for d in DIALECTS if any(r["dialect"] == d for r in rs)]
    return Plan(tuple(algorithms), tuple(dialects), dict(m.get("size") or {}))


def dialect_of(alg: str, dialects: Iterable[str]) -> str | None:
    """The one dialect a figure draws ``alg`` in: NATS if measured, else the first of
    MQTT, AMQP measured (paho: MQTT only); None if none of ``dialects`` applies."""
    ds = dialects_for(alg, dialects)
    return next((d for d in DIALECTS if d in ds), None)


def dialects_said(drawn: Iterable[tuple[str, str]]) -> str:
    """``NATS dialect, paho on the MQTT form`` for the (algorithm, dialect) pairs drawn."""
    drawn = list(drawn)
    main = [d for d in DIALECTS if any(a != "paho" and x == d for a, x in drawn)]
    said = " and ".join(d.upper() for d in main) + (" dialect" if len(main) == 1 else " dialects")
    if any(a == "paho" for a, _ in drawn) and main != ["mqtt"]:
        said = f"{said}, paho on the MQTT form" if main else "paho on the MQTT form"
    return said


class Gaps:
    """The cells a figure set out to draw (its run's plan) that have no measurement, and
    why; :func:`finish` writes them under the figure and ``run_charts`` prints them."""

    def __init__(self) -> None:
        self._where: dict[tuple[str, str, str], list[str]] = {}
        self.cells = 0

    def check(self, found: list[Record], rs: list[Record], panel: str, series: str,
              where: str, **match: Any) -> list[Record]:
        """``found`` (the measured records of one expected cell) as it is; when it is empty,
        note the cell (``series`` at ``where`` in ``panel``) with why: the status and note
        of the run's record of it (``matching(rs, **match)``), or that there is none."""
        if not found:
            rec = next((r for r in reversed(matching(rs, **match))), None)
            why = "no record" if rec is None else (
                f"{rec.get('status')}: {str(rec.get('note') or 'no value')[:80]}")
            self.add(panel, series, where, why)
        return found

    def add(self, panel: str, series: str, where: str, why: str) -> None:
        self._where.setdefault((panel, series, why), []).append(where)
        self.cells += 1

    def lines(self) -> list[str]:
        """One line per panel, series and reason: ``panel: series at a, b (why)``."""
        out = []
        for (panel, series, why), wheres in self._where.items():
            at = ", ".join(w for w in wheres if w)
            out.append(f"{panel}: {series}{' at ' + at if at else ''} ({why})")
        return out


#: Lines of missing cells written under a figure at most (the terminal gets them all).
MAX_NOTE_LINES = 24


def finish(fig: Any, gaps: Gaps) -> Any:
    """Lay ``fig`` out with the cells it has no data for listed under it (a text of
    ``gid="missing-cells"``; the figure grows to make room); keep them as
    ``fig.missing_cells`` (lines) and ``fig.missing_count`` (cells) for the terminal."""
    lines = gaps.lines()
    fig.missing_cells, fig.missing_count = lines, gaps.cells
    if not lines:
        fig.tight_layout()
        return fig
    shown = lines[:MAX_NOTE_LINES] + ([f"... and {len(lines) - MAX_NOTE_LINES} more (see the "
                                       "terminal)"] if len(lines) > MAX_NOTE_LINES else [])
    width = max(60, int(fig.get_figwidth() * 17))  # characters of 7-point text per line
    n = gaps.cells
    text = "\n".join([f"No data for {n} cell{'s' if n > 1 else ''} the run set out to measure:"]
                     + [textwrap.fill(s, width, subsequent_indent="    ") for s in shown])
    extra = (text.count("\n") + 1) * 7 * 1.35 / 72 + 0.2  # inches of 7-point lines
    height = fig.get_figheight()
    fig.set_figheight(height + extra)
    fig.text(0.01, 0.005, text, ha="left", va="bottom", fontsize=7, color="#8b0000",
             gid="missing-cells")
    fig.tight_layout(rect=(0, extra / (height + extra), 1, 1))
    return fig


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
                        markersize=7, capsize=2, linewidth=1, **_face(fill, COLORS[alg]))
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
                      label=labels.get(name, name), **_face(fill, "black"))
               for name, (fill, _) in styles.items()]
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2),
              ncol=1, frameon=False)


def _face(fill: str, color: str) -> dict[str, Any]:
    """Marker face of a series: ``full``, ``none`` (white) or ``left`` (half filled)."""
    if fill == "left":
        return {"markerfacecolor": color, "fillstyle": "left", "markerfacecoloralt": "white"}
    return {"markerfacecolor": color if fill == "full" else "white"}
