"""Figures from result files only: ``python -m experiments charts --from DIR``.

One function per figure; each takes the loaded records and returns a matplotlib figure (or
None when there is nothing to draw). Each figure uses, per build, the latest run of its
experiment, and puts builds side by side (GIL first, then free-threaded) when several are
present, or, where one panel compares them (``level_width``), one line per build. Points are medians; error bars span min to max over the rounds or values.
Figures are written as PNG and SVG (Agg backend; no display needed).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .progress import bar
from .records import Record, build_order, cells, contention_growth, latest_run, load
from .registry import ALGORITHMS, LABELS

__all__ = ["FIGURES", "run_charts"]

_COLORS = {
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
_MARKERS = {"cstrie": "o", "cstrie_cache": "h", "cstrie_replicated": "*", "locked_trie": "s",
            "locked_trie_nocache": "D", "naive": "x", "inverted_bitmap": "^",
            "optimized_bitmap": "v", "paho": "P"}
TRIES = ("cstrie", "locked_trie", "locked_trie_nocache")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _label(alg: str, dialect: str | None = None) -> str:
    lab = LABELS.get(alg, alg)
    return f"{lab} [MQTT]" if alg == "paho" else lab


def _n(value: Any) -> str:
    """An int with thousands separators; anything else as is."""
    return f"{value:,}" if isinstance(value, int) else str(value)


def _build_name(recs: list[Record], build: str) -> str:
    """``Python <version> (GIL)`` or ``Python <version> (free-threaded, GIL disabled)``."""
    r = next(x for x in recs if x["build"] == build)
    kind = ("free-threaded, GIL disabled" if r.get("free_threaded_build")
            and not r.get("gil_enabled") else "GIL")
    return f"Python {r['python']} ({kind})"


def _build_title(recs: list[Record], build: str) -> str:
    r = next(x for x in recs if x["build"] == build)
    return f"{_build_name(recs, build)}, {r['cpu_count']} CPUs, size {r['size']}"


def _runs(recs: list[Record], experiment: str) -> list[tuple[str, list[Record]]]:
    """(build, records of its latest run of ``experiment``) for each build that has one."""
    out = []
    for build in build_order(recs):
        run_id = latest_run(recs, experiment, build)
        if run_id:
            out.append((build, [r for r in recs if r["run_id"] == run_id
                                and r["experiment"] == experiment]))
    return out


def _err(rs: list[Record], scale: float = 1.0) -> tuple[list[float], list[list[float]]]:
    med = [r["median"] * scale for r in rs]
    lo = [(r["median"] - r["min"]) * scale for r in rs]
    hi = [(r["max"] - r["median"]) * scale for r in rs]
    return med, [lo, hi]


def _skipped_note(ax: Any, recs: list[Record]) -> None:
    """List the cells of this panel that were not measured, inside the axes."""
    def where(r: Record) -> str:
        key = {"memory": "subscriptions", "level_width": "width"}.get(r["experiment"])
        n = r.get("params", {}).get(key) if key else None
        return f" at {n:,}" if n else ""

    bad = sorted({f"{_label(r['algorithm'])}: {r['status']}{where(r)}" for r in recs
                  if r.get("status") != "ok"})
    if bad:
        ax.text(0.99, 0.01, "not measured: " + "; ".join(bad), transform=ax.transAxes,
                ha="right", va="bottom", fontsize=6, color="#555555", wrap=True)


# --- latency ----------------------------------------------------------------------------------

_OPS = ("subscribe", "unsubscribe", "lookup")
_SECOND_VARIANT = {"subscribe": "real", "unsubscribe": "real", "lookup": "distinct"}
_VARIANT_LABEL = {
    "faithful": "faithful (repeated op, as the original)",
    "real": "real work (fresh patterns)",
    "distinct": "distinct topics (no cache hits)",
}


def _plain_log(axis: Any) -> None:
    """Log-scale tick labels as plain numbers (0.5, 2, 1,000) rather than 2 x 10^0."""
    from matplotlib.ticker import FuncFormatter, LogFormatter

    class Plain(LogFormatter):
        # LogFormatter decides which ticks get a label (minor ones too when the axis spans
        # under two decades); the label itself is a plain number.
        def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
            return f"{x:,.0f}" if x >= 1 else f"{x:g}"

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(Plain(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def _dots(ax: Any, rows: list[tuple[str, list[tuple[str, Record | None]]]],
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
            ax.errorbar([med], [i + off], xerr=err, fmt=_MARKERS[alg], color=_COLORS[alg],
                        markerfacecolor=_COLORS[alg] if fill == "full" else "white",
                        markersize=7, capsize=2, linewidth=1)
    ax.set_yticks(range(len(rows)), [_label(a) for a, _ in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xscale("log")
    if hi > 0:
        # Whole decades, so that every panel shows labelled ticks.
        ax.set_xlim(10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi)))
    _plain_log(ax.xaxis)
    ax.grid(axis="x", which="both", alpha=0.3)


def _series_legend(ax: Any, styles: dict[str, tuple[str, float]], labels: dict[str, str]
                   ) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", linestyle="", color="black",
                      markerfacecolor="black" if fill == "full" else "white",
                      label=labels.get(name, name))
               for name, (fill, _) in styles.items()]
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2),
              ncol=1, frameon=False)


def fig_latency(recs: list[Record], state: str) -> Any:
    """Latency per operation (``state`` cold or hot): faithful vs real-work, log scale."""
    runs = _runs(recs, "latency")
    if not runs:
        return None
    plt = _plt()
    fig, axes = plt.subplots(len(runs), 3, figsize=(16, 4.2 * len(runs) + 0.9),
                             squeeze=False)
    for row, (build, rs) in enumerate(runs):
        for col, op in enumerate(_OPS):
            ax = axes[row][col]
            second = _SECOND_VARIANT[op]
            styles = {"faithful": ("full", -0.15), second: ("none", 0.15)}
            algs = [a for a in ALGORITHMS if any(r["algorithm"] == a for r in rs)]
            rows = []
            for a in algs:
                d = "mqtt" if a == "paho" else "nats"
                series = []
                for variant in styles:
                    c = cells(rs, algorithm=a, dialect=d, workload=f"{op}/{state}/{variant}")
                    series.append((variant, c[-1] if c else None))
                rows.append((a, series))
            _dots(ax, rows, 1e-3, styles)  # ns -> us
            ax.set_xlabel("microseconds per operation (log; lower is better)", fontsize=8)
            ax.set_title(f"{op}, {state}", fontsize=10)
            if col == 0:
                ax.set_ylabel(_build_title(recs, build), fontsize=8)
            _series_legend(ax, styles, _VARIANT_LABEL)
            _skipped_note(ax, [r for r in rs if r["workload"].startswith(f"{op}/{state}/")])
    pop = next((r["params"].get("hot_population") for _, rs in runs for r in rs
                if r["workload"].endswith("/hot/faithful")), 1000)
    what = "empty matcher" if state == "cold" else f"{_n(pop)} random 5-word subscriptions"
    fig.suptitle(f"Latency, {state} ({what}); NATS dialect, paho on the MQTT form\n"
                 "median; whiskers = min-max over pyperf values", fontsize=11)
    fig.tight_layout()
    return fig


# --- throughput -------------------------------------------------------------------------------


def fig_throughput(recs: list[Record]) -> Any:
    """Messages per second on the 3-digit workload, NATS and MQTT forms (log scale)."""
    runs = _runs(recs, "throughput")
    if not runs:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(runs), figsize=(7.5 * len(runs), 4.8), squeeze=False,
                             sharex=True)
    styles = {"nats": ("full", -0.15), "mqtt": ("none", 0.15)}
    for col, (build, rs) in enumerate(runs):
        ax = axes[0][col]
        algs = [a for a in ALGORITHMS if any(r["algorithm"] == a for r in rs)]
        rows = []
        for a in algs:
            series = []
            for d in styles:
                c = cells(rs, algorithm=a, dialect=d)
                series.append((d, c[-1] if c else None))
            rows.append((a, series))
        _dots(ax, rows, 1.0, styles)
        ax.set_xlabel("messages per second (log; higher is better)")
        msgs = next((r["params"]["messages"] for r in rs
                     if r.get("params", {}).get("messages")), None)
        sub = f"\n{msgs:,} messages, 1,000 subscriptions" if msgs else ""
        ax.set_title(f"{_build_title(recs, build)}{sub}", fontsize=9)
        _series_legend(ax, styles, {"nats": "NATS form", "mqtt": "MQTT form"})
        _skipped_note(ax, rs)
    fig.suptitle("Throughput, 3-digit workload; median, whiskers = min-max over rounds",
                 fontsize=11)
    fig.tight_layout()
    return fig


# --- memory -----------------------------------------------------------------------------------


def fig_memory(recs: list[Record]) -> Any:
    """Bytes per subscription against subscriptions, per workload variant (log-log)."""
    runs = _runs(recs, "memory")
    if not runs:
        return None
    plt = _plt()
    variants = ("digits", "distinct")
    fig, axes = plt.subplots(len(runs), 2, figsize=(13, 4.4 * len(runs)), squeeze=False)
    for row, (build, rs) in enumerate(runs):
        for col, variant in enumerate(variants):
            ax = axes[row][col]
            sub = [r for r in rs if r["workload"] == f"3-digit/{variant}"]
            for a in ALGORITHMS:
                d = "mqtt" if a == "paho" else "nats"
                c = sorted(cells(sub, algorithm=a, dialect=d),
                           key=lambda r: r["params"]["subscriptions"])
                if not c:
                    continue
                xs = [r["params"]["subscriptions"] for r in c]
                ys = [r["median"] / r["params"]["subscriptions"] for r in c]
                ax.plot(xs, ys, marker=_MARKERS[a], color=_COLORS[a], label=_label(a),
                        linewidth=2.2 if a == "cstrie" else 1.2)
            ax.set_xscale("log")
            ax.set_yscale("log")
            _plain_log(ax.xaxis)
            _plain_log(ax.yaxis)
            ax.set_xlabel("subscriptions (log)")
            ax.set_ylabel("bytes per subscription (log; lower is better)")
            title = ("3-digit workload (digits 0-9: patterns repeat)" if variant == "digits"
                     else "wider alphabet (mostly distinct patterns)")
            ax.set_title(f"{title}\n{_build_title(recs, build)}", fontsize=9)
            ax.grid(which="both", alpha=0.3)
            ax.legend(fontsize=7)
            _skipped_note(ax, [r for r in sub if r.get("status") != "ok"])
    fig.suptitle("Memory held (tracemalloc) per subscription; NATS dialect, paho on MQTT",
                 fontsize=11)
    fig.tight_layout()
    return fig


# --- scaling ----------------------------------------------------------------------------------


def fig_scaling(recs: list[Record], workload: str) -> Any:
    """Throughput against threads for one scaling workload: all matchers, and tries only."""
    runs = _runs(recs, "scaling")
    runs = [(b, [r for r in rs if r["workload"] == workload]) for b, rs in runs]
    runs = [(b, rs) for b, rs in runs if rs]
    if not runs:
        return None
    plt = _plt()
    fig, axes = plt.subplots(2, len(runs), figsize=(max(9.5, 7.5 * len(runs)), 9.5),
                             squeeze=False)
    for col, (build, rs) in enumerate(runs):
        for row, (algs, log) in enumerate(((ALGORITHMS, True), (TRIES, False))):
            ax = axes[row][col]
            for a in algs:
                c = sorted(cells(rs, algorithm=a), key=lambda r: r["threads"])
                if not c:
                    continue
                xs = [r["threads"] for r in c]
                med, err = _err(c)
                ax.errorbar(xs, med, yerr=err, marker=_MARKERS[a], color=_COLORS[a],
                            label=_label(a), capsize=2,
                            linewidth=2.2 if a == "cstrie" else 1.2)
            threads = sorted({r["threads"] for r in rs})
            ax.set_xticks(threads)
            if log:
                ax.set_yscale("log")
                _plain_log(ax.yaxis)
            else:
                from matplotlib.ticker import FuncFormatter

                ax.set_ylim(bottom=0)
                ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
            ax.set_xlabel("threads")
            ax.set_ylabel("operations per second" + (" (log)" if log else "")
                          + "; higher is better")
            shares = {}
            for r in rs:
                shares.setdefault(r["threads"], r["params"].get("write_share"))
            share = ", ".join(f"{n}: {shares[n] * 100:.0f}%" for n in threads
                              if shares.get(n) is not None)
            panel = "all matchers" if row == 0 else "tries only"
            ops = rs[0]["params"].get("ops_per_worker")
            pop = rs[0]["params"].get("population")
            ax.set_title(f"{panel}; {_build_title(recs, build)}\n{_n(ops)} ops per thread, "
                         f"{_n(pop)} subscriptions first; real write share by threads - "
                         f"{share}", fontsize=8)
            ax.grid(which="both", alpha=0.3)
            ax.legend(fontsize=7)
            if row == 0:
                _skipped_note(ax, [r for r in rs if r.get("status") == "failed"])
    fig.suptitle(f"Concurrency scaling, workload {workload}: every thread runs the same "
                 "operations on a populated matcher\nmedian, whiskers = min-max over rounds",
                 fontsize=11)
    fig.tight_layout()
    return fig


# --- lock-free vs locked ----------------------------------------------------------------------


def fig_lockfree(recs: list[Record]) -> Any:
    """Wall time of insert:lookup rounds (1:1, 1:3) against worker count."""
    runs = _runs(recs, "lockfree")
    if not runs:
        return None
    plt = _plt()
    fig, axes = plt.subplots(len(runs), 2, figsize=(13, 4.6 * len(runs)), squeeze=False)
    for row, (build, rs) in enumerate(runs):
        for col, ratio in enumerate(("1:1", "1:3")):
            ax = axes[row][col]
            sub = [r for r in rs if r["workload"] == ratio]
            for a in ALGORITHMS:
                c = sorted(cells(sub, algorithm=a), key=lambda r: r["threads"])
                if not c:
                    continue
                med, err = _err(c, 1e3)  # s -> ms
                main = a in TRIES
                ax.errorbar([r["threads"] for r in c], med, yerr=err, marker=_MARKERS[a],
                            color=_COLORS[a], label=_label(a), capsize=2,
                            linewidth=2.2 if main else 0.9, linestyle="-" if main else "--",
                            alpha=1.0 if main else 0.6)
            ax.set_xticks(sorted({r["threads"] for r in sub}))
            ax.set_yscale("log")
            _plain_log(ax.yaxis)
            ax.set_xlabel("workers (inserters + lookers)")
            ax.set_ylabel("milliseconds per round (log; lower is better)")
            ops = sub[0]["params"].get("ops_per_worker") if sub else None
            ax.set_title(f"insert:lookup {ratio}, {_n(ops)} ops per worker\n"
                         f"{_build_title(recs, build)}", fontsize=9)
            ax.grid(which="both", alpha=0.3)
            ax.legend(fontsize=7)
            _skipped_note(ax, [r for r in sub if r.get("status") != "ok"])
    fig.suptitle("Lock-free vs locked: each inserter subscribes every item, each looker "
                 "looks every item up, no pre-population\n"
                 "median, whiskers = min-max over rounds", fontsize=11)
    fig.tight_layout()
    return fig


# --- contention -------------------------------------------------------------------------------


def fig_contention(recs: list[Record]) -> Any:
    """CPU per operation at 2 threads / 1 thread, shared matcher vs one per thread."""
    runs = _runs(recs, "contention")
    if not runs:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(runs), figsize=(6.5 * len(runs), 4.8), squeeze=False)
    names = [*ALGORITHMS, "attribute-read"]
    for col, (build, rs) in enumerate(runs):
        ax = axes[0][col]
        present = [n for n in names if any(r["algorithm"] == n for r in rs)]
        for k, (sharing, hatch) in enumerate((("shared", ""), ("per-thread", "//"))):
            xs, ys, colors = [], [], []
            for i, n in enumerate(present):
                g = contention_growth(rs, n, sharing)
                if g is not None:
                    xs.append(i - 0.2 + 0.4 * k)
                    ys.append(g)
                    colors.append(_COLORS.get(n, "#444444"))
            ax.bar(xs, ys, width=0.38, color=colors, hatch=hatch, edgecolor="black",
                   linewidth=0.5)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(present)),
                      [_label(n) if n in LABELS else "attribute read\n(probe)"
                       for n in present], rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("CPU time per operation, 2 threads / 1 thread\n(1 = no contention)")
        ax.set_title(_build_title(recs, build), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor="white", edgecolor="black",
                                 label="one matcher shared by both threads"),
                           Patch(facecolor="white", edgecolor="black", hatch="//",
                                 label="one matcher per thread")], fontsize=7)
        _skipped_note(ax, [r for r in rs if r.get("status") == "failed"])
    fig.suptitle("Contention: true 90/10, the same operations per thread; only sharing the "
                 "matcher differs\nmedian CPU time per operation over rounds", fontsize=11)
    fig.tight_layout()
    return fig


# --- level width ------------------------------------------------------------------------------


#: Line style of each build in a figure that draws the builds in one panel (GIL first).
_BUILD_LINES = ("-", "--", ":", "-.")


def fig_level_width(recs: list[Record]) -> Any:
    """Cost of a write (and of a lookup) against the width of the level, log-log: one line
    per (trie, build), every build in the same panel (GIL solid, free-threaded dashed)."""
    from .level_width import ALGORITHMS as WIDTH_ALGORITHMS, WORKLOADS

    runs = _runs(recs, "level_width")
    if not runs:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(WORKLOADS), figsize=(13, 5.2), squeeze=False)
    what = {"write": "subscribe + unsubscribe of a fresh inbox",
            "lookup": "lookup of an existing inbox"}
    for col, workload in enumerate(WORKLOADS):
        ax = axes[0][col]
        for k, (build, rs) in enumerate(runs):
            for a in WIDTH_ALGORITHMS:
                c = sorted(cells(rs, algorithm=a, workload=workload),
                           key=lambda r: r["params"]["width"])
                if not c:
                    continue
                med, err = _err(c, 1e-3)  # ns -> us
                ax.errorbar([r["params"]["width"] for r in c], med, yerr=err,
                            marker=_MARKERS[a], color=_COLORS[a],
                            linestyle=_BUILD_LINES[k % len(_BUILD_LINES)],
                            markerfacecolor=_COLORS[a] if k == 0 else "white",
                            label=f"{_label(a)}, {_build_name(recs, build)}", capsize=2,
                            linewidth=2.2 if a == "cstrie" else 1.2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log(ax.xaxis)
        _plain_log(ax.yaxis)
        ax.set_xlabel("width of the level: sibling inboxes _INBOX.<i>.reply (log)")
        ax.set_ylabel("microseconds per operation (log; lower is better)")
        ax.set_title(what[workload], fontsize=10)
        ax.grid(which="both", alpha=0.3)
        ax.legend(fontsize=7)
        _skipped_note(ax, [r for _, rs in runs for r in rs if r["workload"] == workload])
    runs_said = "; ".join(f"{_build_title(recs, b)}" for b, _ in runs)
    fig.suptitle(f"Level width, one thread: NATS inboxes under one level ({runs_said})\n"
                 "median, whiskers = min-max over interleaved rounds", fontsize=10)
    fig.tight_layout()
    return fig


# --- primitives -------------------------------------------------------------------------------


def fig_primitives(recs: list[Record]) -> Any:
    """Nanoseconds per primitive operation, builds side by side."""
    runs = _runs(recs, "primitives")
    if not runs:
        return None
    plt = _plt()
    from .benchfuncs import PRIMITIVES

    present = {r["algorithm"] for _, rs in runs for r in rs}
    names = [n for n in PRIMITIVES if n in present] + sorted(present - set(PRIMITIVES))
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(names) * max(1, len(runs)) + 1.5))
    h = 0.8 / len(runs)
    for k, (build, rs) in enumerate(runs):
        pos, meds, errs = [], [], [[], []]
        for i, n in enumerate(names):
            c = cells(rs, algorithm=n)
            if c:
                m, e = _err(c[-1:])
                pos.append(i - 0.4 + h * (k + 0.5))
                meds += m
                errs[0] += e[0]
                errs[1] += e[1]
        ax.barh(pos, meds, height=h, xerr=errs, capsize=2, label=_build_title(recs, build))
        for p, n in zip(range(len(names)), names):
            miss = [r for r in rs if r["algorithm"] == n and r.get("status") != "ok"]
            if miss and k == 0:
                ax.text(0.01, p, f"{miss[0]['note']}"[:90], va="center", fontsize=7,
                        transform=ax.get_yaxis_transform(), color="#555555")
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlabel("nanoseconds per operation (lower is better; loop overhead included, "
                  "see loop_overhead)", fontsize=8)
    ax.legend(fontsize=7)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("Primitive costs, uncontended", fontsize=11)
    fig.tight_layout()
    return fig


# --- sharing -----------------------------------------------------------------------------------


def fig_sharing(recs: list[Record]) -> Any:
    """Two threads on one shared matcher as a fraction of two threads each with a matcher it
    built (1 = sharing costs nothing), per write share; one panel per build."""
    runs = _runs(recs, "sharing")
    if not runs:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, len(runs), figsize=(6.5 * len(runs), 4.8), squeeze=False)
    for col, (build, all_rs) in enumerate(runs):
        ax = axes[0][col]
        rs = [r for r in all_rs if r.get("status") == "ok"]
        shares = sorted({r["params"]["write_share"] for r in rs
                         if r["params"].get("mode") == "shared"})
        present = [a for a in ALGORITHMS if any(r["algorithm"] == a for r in rs)]
        width = 0.8 / max(len(present), 1)
        for i, a in enumerate(present):
            xs, ys = [], []
            for j, p in enumerate(shares):
                wl = f"w{round(p * 100)}/gc-on"
                s2 = [r for r in rs if r["algorithm"] == a and r["threads"] == 2
                      and r["workload"] == f"shared/{wl}"]
                o2 = [r for r in rs if r["algorithm"] == a and r["threads"] == 2
                      and r["workload"] == f"per-thread-own/{wl}"]
                if s2 and o2:
                    xs.append(j - 0.4 + width * (i + 0.5))
                    ys.append(s2[-1]["median"] / o2[-1]["median"])
            if xs:
                ax.bar(xs, ys, width=width, color=_COLORS.get(a, "#444444"), label=_label(a),
                       edgecolor="black", linewidth=0.5)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(shares)), [f"{p:.0%} writes" for p in shares])
        ax.set_ylabel("ops/s, 2 threads on one shared matcher\n/ 2 threads each with its own")
        ax.set_title(_build_title(recs, build), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


#: figure name -> function(records) -> figure
FIGURES: dict[str, Callable[[list[Record]], Any]] = {
    "latency_cold": lambda r: fig_latency(r, "cold"),
    "latency_hot": lambda r: fig_latency(r, "hot"),
    "throughput": fig_throughput,
    "memory": fig_memory,
    "scaling_50-50": lambda r: fig_scaling(r, "50/50"),
    "scaling_90-10-faithful": lambda r: fig_scaling(r, "90/10-faithful"),
    "scaling_90-10-true": lambda r: fig_scaling(r, "90/10-true"),
    "lockfree": fig_lockfree,
    "contention": fig_contention,
    "sharing": fig_sharing,
    "level_width": fig_level_width,
    "primitives": fig_primitives,
}


def run_charts(root: Path, out: Path, formats: tuple[str, ...] = ("png", "svg")) -> list[Path]:
    """Draw every figure from the records below ``root`` into ``out``; return the files."""
    try:
        _plt()
    except ImportError as exc:
        raise SystemExit(f"error: charts need matplotlib (the 'experiments' extra): {exc}")
    records = load(root)
    if not records:
        raise SystemExit(f"error: --from {root}: no result records (*.jsonl) found there")
    plt = _plt()
    out.mkdir(parents=True, exist_ok=True)
    written = []
    replaced = 0
    with bar(len(FIGURES), "charts") as progress:
        for name, func in FIGURES.items():
            progress.set_postfix_str(name)
            fig = func(records)
            if fig is None:
                progress.write(f"{name}: no data, skipped")
                progress.update(1)
                continue
            for fmt in formats:
                path = out / f"{name}.{fmt}"
                replaced += path.exists()
                fig.savefig(path, dpi=130 if fmt == "png" else None)
                written.append(path)
            plt.close(fig)
            progress.update(1)
    if replaced:
        print(f"note: {replaced} figure files in {out} were replaced (figures are generated "
              "from the records; regenerate them any time)", file=sys.stderr)
    return written
