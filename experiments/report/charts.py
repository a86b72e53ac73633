"""Figures from result files only: ``python -m experiments charts --from DIR``.

One function per figure; each takes the loaded records and returns a matplotlib figure (or
None when there is nothing to draw). Each figure uses, per build, the latest run of its
experiment, and puts builds side by side (GIL first, then free-threaded) when several are
present, or, where one panel compares them (``level_width``), one line per build. Points are medians; error bars span min to max over the rounds or values.
Figures are written as PNG and SVG (Agg backend; no display needed).

A figure draws what its run measured (the algorithms and dialects in the run file's plan,
or failing that in its records) and lists under itself every cell of that plan it has no
data for, with why (a skipped or failed record's note, or no record at all); ``run_charts``
prints one warning line for each such figure.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..extras import from_error
from ..progress import bar
from ..records import Record, cells, load
from ..registry import ALGORITHMS, DIALECTS, dialects_for
from ..text import count
from ..writing import WriteError, write_problem, writing
from .plotting import (COLORS, MARKERS, Gaps, build_name, build_title, dialect_of,
                       dialects_said, dot_rows, error_bars, finish, latest_runs, plain_log,
                       plan, pyplot, series_label, series_legend, thousands)
from .charts_threads import fig_contention, fig_lockfree, fig_scaling, fig_sharing

__all__ = ["FIGURES", "fig_latency", "fig_level_width", "fig_memory", "fig_primitives",
           "fig_throughput", "run_charts"]


# --- latency ----------------------------------------------------------------------------------

_OPS = ("subscribe", "unsubscribe", "lookup")
_SECOND_VARIANT = {"subscribe": "real", "unsubscribe": "real", "lookup": "distinct"}
_VARIANT_LABEL = {
    "faithful": "faithful (repeated op, as the original)",
    "real": "real work (fresh patterns)",
    "distinct": "distinct topics (no cache hits)",
}


def fig_latency(recs: list[Record], state: str) -> Any:
    """Latency per operation (``state`` cold or hot): faithful vs real-work, log scale; each
    matcher in the one dialect :func:`dialect_of` picks from those its run measured."""
    runs = latest_runs(recs, "latency")
    if not runs:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(len(runs), 3, figsize=(16, 4.2 * len(runs) + 0.9),
                             squeeze=False)
    gaps, drawn_all = Gaps(), []
    for row, (build, rs) in enumerate(runs):
        p = plan(rs)
        drawn = [(a, d) for a in ALGORITHMS if a in p.algorithms
                 for d in [dialect_of(a, p.dialects)] if d]
        drawn_all += drawn
        for col, op in enumerate(_OPS):
            ax = axes[row][col]
            second = _SECOND_VARIANT[op]
            styles = {"faithful": ("full", -0.15), second: ("none", 0.15)}
            rows: list[tuple[str, list[tuple[str, Record | None]]]] = []
            for a, d in drawn:
                series: list[tuple[str, Record | None]] = []
                for variant in styles:
                    wl = f"{op}/{state}/{variant}"
                    c = gaps.check(cells(rs, algorithm=a, dialect=d, workload=wl), rs,
                                   f"{build_name(recs, build)}, {op}",
                                   series_label(a), variant,
                                   algorithm=a, dialect=d, workload=wl)
                    if c:
                        series.append((variant, c[-1]))
                if series:  # no empty rows: the cells of one are listed under the figure
                    rows.append((a, series))
            dot_rows(ax, rows, 1e-3, styles)  # ns -> us
            ax.set_xlabel("microseconds per operation (log; lower is better)", fontsize=8)
            ax.set_title(f"{op}, {state}", fontsize=10)
            if col == 0:
                ax.set_ylabel(build_title(recs, build), fontsize=8)
            series_legend(ax, styles, _VARIANT_LABEL)
    pop = next((r["params"].get("hot_population") for _, rs in runs for r in rs
                if r["workload"].endswith("/hot/faithful")), 1000)
    what = "empty matcher" if state == "cold" else f"{thousands(pop)} random 5-word subscriptions"
    fig.suptitle(f"Latency, {state} ({what}); {dialects_said(drawn_all)}\n"
                 "median; whiskers = min-max over pyperf values", fontsize=11)
    return finish(fig, gaps)


# --- throughput -------------------------------------------------------------------------------


def fig_throughput(recs: list[Record]) -> Any:
    """Messages per second on the 3-digit workload, one series per dialect measured (log
    scale)."""
    runs = latest_runs(recs, "throughput")
    if not runs:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(runs), figsize=(7.5 * len(runs), 4.8), squeeze=False,
                             sharex=True)
    plans = [plan(rs) for _, rs in runs]
    measured = [d for d in DIALECTS if any(d in p.dialects for p in plans)]
    offsets = [(k - (len(measured) - 1) / 2) * 0.3 / max(len(measured) - 1, 1)
               for k in range(len(measured))]
    styles = {d: (("full", "none", "left")[k], off)
              for k, (d, off) in enumerate(zip(measured, offsets))}
    gaps = Gaps()
    for col, ((build, rs), p) in enumerate(zip(runs, plans)):
        ax = axes[0][col]
        rows: list[tuple[str, list[tuple[str, Record | None]]]] = []
        for a in [a for a in ALGORITHMS if a in p.algorithms]:
            series: list[tuple[str, Record | None]] = []
            for d in dialects_for(a, p.dialects):
                c = gaps.check(cells(rs, algorithm=a, dialect=d), rs, build_name(recs, build),
                               series_label(a), f"{d}", algorithm=a, dialect=d)
                if c:
                    series.append((d, c[-1]))
            if series:
                rows.append((a, series))
        dot_rows(ax, rows, 1.0, styles)
        ax.set_xlabel("messages per second (log; higher is better)")
        msgs = next((r["params"]["messages"] for r in rs
                     if r.get("params", {}).get("messages")), None)
        sub = f"\n{msgs:,} messages, 1,000 subscriptions" if msgs else ""
        ax.set_title(f"{build_title(recs, build)}{sub}", fontsize=9)
        series_legend(ax, styles, {d: f"{d.upper()} form" for d in styles})
    fig.suptitle("Throughput, 3-digit workload; median, whiskers = min-max over rounds",
                 fontsize=11)
    return finish(fig, gaps)


# --- memory -----------------------------------------------------------------------------------


def fig_memory(recs: list[Record]) -> Any:
    """Bytes per subscription against subscriptions, per workload variant (log-log)."""
    runs = latest_runs(recs, "memory")
    if not runs:
        return None
    plt = pyplot()
    variants = ("digits", "distinct")
    fig, axes = plt.subplots(len(runs), 2, figsize=(13, 4.4 * len(runs)), squeeze=False)
    gaps, drawn = Gaps(), []
    for row, (build, rs) in enumerate(runs):
        p = plan(rs)
        sizes = p.axis("memory_sizes", rs, lambda r: r["params"].get("subscriptions"))
        for col, variant in enumerate(variants):
            ax = axes[row][col]
            sub = [r for r in rs if r["workload"] == f"3-digit/{variant}"]
            for a in [a for a in ALGORITHMS if a in p.algorithms]:
                d = dialect_of(a, p.dialects)
                if d is None:
                    continue
                drawn.append((a, d))
                c = [x for n in sizes for x in gaps.check(
                    cells(sub, algorithm=a, dialect=d, params__subscriptions=n)[-1:], sub,
                    f"{build_name(recs, build)}, {variant}", series_label(a), f"{n:,}",
                    algorithm=a, dialect=d, params__subscriptions=n)]
                if not c:
                    continue
                xs = [r["params"]["subscriptions"] for r in c]
                ys = [r["median"] / r["params"]["subscriptions"] for r in c]
                ax.plot(xs, ys, marker=MARKERS[a], color=COLORS[a], label=series_label(a),
                        linewidth=2.2 if a == "cstrie" else 1.2)
            ax.set_xscale("log")
            ax.set_yscale("log")
            plain_log(ax.xaxis)
            plain_log(ax.yaxis)
            ax.set_xlabel("subscriptions (log)")
            ax.set_ylabel("bytes per subscription (log; lower is better)")
            title = ("3-digit workload (digits 0-9: patterns repeat)" if variant == "digits"
                     else "wider alphabet (mostly distinct patterns)")
            ax.set_title(f"{title}\n{build_title(recs, build)}", fontsize=9)
            ax.grid(which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.suptitle("Memory held (tracemalloc) per subscription; "
                 f"{dialects_said(dict.fromkeys(drawn))}", fontsize=11)
    return finish(fig, gaps)


# --- scaling ----------------------------------------------------------------------------------

_BUILD_LINES = ("-", "--", ":", "-.")


def fig_level_width(recs: list[Record]) -> Any:
    """Cost of a write (and of a lookup) against the width of the level, and of a write
    against the number of subscribers of its pattern, log-log: one panel per workload, one
    line per (trie, build), every build in the same panel (GIL solid, free-threaded
    dashed)."""
    from ..measure.level_width import ALGORITHMS as WIDTH_ALGORITHMS, CROWD_PATTERN, OPS, WORKLOADS

    runs = latest_runs(recs, "level_width")
    if not runs:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(WORKLOADS), figsize=(6.5 * len(WORKLOADS), 5.2),
                             squeeze=False)
    axis = {"write": "width of the level: sibling inboxes _INBOX.<i>.reply (log)",
            "lookup": "width of the level: sibling inboxes _INBOX.<i>.reply (log)",
            "crowd": f"subscribers of the pattern {CROWD_PATTERN} (log)"}
    gaps = Gaps()
    for col, workload in enumerate(WORKLOADS):
        ax = axes[0][col]
        for k, (build, rs) in enumerate(runs):
            p = plan(rs)
            widths = p.axis("width_levels", rs, lambda r: r["params"].get("width"))
            for a in [a for a in WIDTH_ALGORITHMS if a in p.algorithms]:
                c = [x for n in widths for x in gaps.check(
                    cells(rs, algorithm=a, workload=workload, params__width=n)[-1:], rs,
                    f"{workload}", f"{series_label(a)}, {build_name(recs, build)}",
                    f"{n:,}", algorithm=a, workload=workload, params__width=n)]
                if not c:
                    continue
                med, err = error_bars(c, 1e-3)  # ns -> us
                ax.errorbar([r["params"]["width"] for r in c], med, yerr=err,
                            marker=MARKERS[a], color=COLORS[a],
                            linestyle=_BUILD_LINES[k % len(_BUILD_LINES)],
                            markerfacecolor=COLORS[a] if k == 0 else "white",
                            label=f"{series_label(a)}, {build_name(recs, build)}", capsize=2,
                            linewidth=2.2 if a == "cstrie" else 1.2)
        ax.set_xscale("log")
        ax.set_yscale("log")
        plain_log(ax.xaxis)
        plain_log(ax.yaxis)
        ax.set_xlabel(axis[workload])
        ax.set_ylabel("microseconds per operation (log; lower is better)")
        ax.set_title(OPS[workload], fontsize=10)
        ax.grid(which="both", alpha=0.3)
        ax.legend(fontsize=7)
    runs_said = "; ".join(f"{build_title(recs, b)}" for b, _ in runs)
    fig.suptitle(f"Level width, one thread: NATS inboxes under one level, and the subscribers "
                 f"of one pattern ({runs_said})\n"
                 "median, whiskers = min-max over interleaved rounds", fontsize=10)
    return finish(fig, gaps)


# --- primitives -------------------------------------------------------------------------------


def fig_primitives(recs: list[Record]) -> Any:
    """Nanoseconds per primitive operation, builds side by side."""
    runs = latest_runs(recs, "primitives")
    if not runs:
        return None
    plt = pyplot()
    from ..measure.primitives import PRIMITIVES

    present = {r["algorithm"] for _, rs in runs for r in rs}
    names = [*PRIMITIVES, *sorted(present - set(PRIMITIVES))]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(names) * max(1, len(runs)) + 1.5))
    h = 0.8 / len(runs)
    gaps = Gaps()
    for k, (build, rs) in enumerate(runs):
        pos: list[float] = []
        meds: list[float] = []
        errs: list[list[float]] = [[], []]
        for i, n in enumerate(names):
            c = gaps.check(cells(rs, algorithm=n), rs, build_name(recs, build), n, "",
                           algorithm=n)
            if c:
                m, e = error_bars(c[-1:])
                pos.append(i - 0.4 + h * (k + 0.5))
                meds += m
                errs[0] += e[0]
                errs[1] += e[1]
        ax.barh(pos, meds, height=h, xerr=errs, capsize=2, label=build_title(recs, build))
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlabel("nanoseconds per operation (lower is better; loop overhead included, "
                  "see loop_overhead)", fontsize=8)
    ax.legend(fontsize=7)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("Primitive costs, uncontended", fontsize=11)
    return finish(fig, gaps)


# --- sharing -----------------------------------------------------------------------------------


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
        pyplot()
    except ImportError as exc:
        raise SystemExit(f"error: {from_error('charts', exc)}")
    records = load(root)
    if not records:
        raise SystemExit(f"error: --from {root}: no result records (*.jsonl) found there")
    plt = pyplot()
    # Every file it may write, checked before the first is drawn: a refusal changes nothing.
    for path in (out / f"{name}.{fmt}" for name in FIGURES for fmt in formats):
        why = write_problem(path)
        if why:
            raise WriteError(f"{path} {why}")
    with writing(out, "create the folder"):
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
            lines = getattr(fig, "missing_cells", [])
            if lines:
                said = "; ".join(lines)
                n = fig.missing_count
                progress.write(f"warning: {name}: no data for {n} cell{'s' if n > 1 else ''} "
                               "the run set out to measure (listed under the figure): "
                               f"{said if len(said) <= 300 else said[:297] + '...'}")
            for fmt in formats:
                path = out / f"{name}.{fmt}"
                replaced += path.exists()
                with writing(path):
                    fig.savefig(path, dpi=130 if fmt == "png" else None)
                written.append(path)
            plt.close(fig)
            progress.update(1)
    if replaced:
        print(f"note: {count(replaced, 'figure file')} in {out} "
              f"{'was' if replaced == 1 else 'were'} replaced (figures are generated "
              "from the records; regenerate them any time)", file=sys.stderr)
    return written
