"""The figures of the threaded experiments: ``scaling``, ``lockfree``, ``contention`` and
``sharing`` (drawn by :func:`experiments.report.charts.run_charts`)."""

from __future__ import annotations

from typing import Any

from ..records import Record, cells, contention_growth
from ..registry import ALGORITHMS, LABELS
from .plotting import (COLORS, MARKERS, TRIES, build_title, error_bars, latest_runs,
                       missing_note, plain_log, pyplot, series_label, thousands)

__all__ = ["fig_contention", "fig_lockfree", "fig_scaling", "fig_sharing"]


def fig_scaling(recs: list[Record], workload: str) -> Any:
    """Throughput against threads for one scaling workload: all matchers, and tries only."""
    runs = latest_runs(recs, "scaling")
    runs = [(b, [r for r in rs if r["workload"] == workload]) for b, rs in runs]
    runs = [(b, rs) for b, rs in runs if rs]
    if not runs:
        return None
    plt = pyplot()
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
                med, err = error_bars(c)
                ax.errorbar(xs, med, yerr=err, marker=MARKERS[a], color=COLORS[a],
                            label=series_label(a), capsize=2,
                            linewidth=2.2 if a == "cstrie" else 1.2)
            threads = sorted({r["threads"] for r in rs})
            ax.set_xticks(threads)
            if log:
                ax.set_yscale("log")
                plain_log(ax.yaxis)
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
            ax.set_title(f"{panel}; {build_title(recs, build)}\n{thousands(ops)} ops per thread, "
                         f"{thousands(pop)} subscriptions first; real write share by threads - "
                         f"{share}", fontsize=8)
            ax.grid(which="both", alpha=0.3)
            ax.legend(fontsize=7)
            if row == 0:
                missing_note(ax, [r for r in rs if r.get("status") == "failed"])
    fig.suptitle(f"Concurrency scaling, workload {workload}: every thread runs the same "
                 "operations on a populated matcher\nmedian, whiskers = min-max over rounds",
                 fontsize=11)
    fig.tight_layout()
    return fig


# --- lock-free vs locked ----------------------------------------------------------------------


def fig_lockfree(recs: list[Record]) -> Any:
    """Wall time of insert:lookup rounds (1:1, 1:3) against worker count."""
    runs = latest_runs(recs, "lockfree")
    if not runs:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(len(runs), 2, figsize=(13, 4.6 * len(runs)), squeeze=False)
    for row, (build, rs) in enumerate(runs):
        for col, ratio in enumerate(("1:1", "1:3")):
            ax = axes[row][col]
            sub = [r for r in rs if r["workload"] == ratio]
            for a in ALGORITHMS:
                c = sorted(cells(sub, algorithm=a), key=lambda r: r["threads"])
                if not c:
                    continue
                med, err = error_bars(c, 1e3)  # s -> ms
                main = a in TRIES
                ax.errorbar([r["threads"] for r in c], med, yerr=err, marker=MARKERS[a],
                            color=COLORS[a], label=series_label(a), capsize=2,
                            linewidth=2.2 if main else 0.9, linestyle="-" if main else "--",
                            alpha=1.0 if main else 0.6)
            ax.set_xticks(sorted({r["threads"] for r in sub}))
            ax.set_yscale("log")
            plain_log(ax.yaxis)
            ax.set_xlabel("workers (inserters + lookers)")
            ax.set_ylabel("milliseconds per round (log; lower is better)")
            ops = sub[0]["params"].get("ops_per_worker") if sub else None
            ax.set_title(f"insert:lookup {ratio}, {thousands(ops)} ops per worker\n"
                         f"{build_title(recs, build)}", fontsize=9)
            ax.grid(which="both", alpha=0.3)
            ax.legend(fontsize=7)
            missing_note(ax, [r for r in sub if r.get("status") != "ok"])
    fig.suptitle("Lock-free vs locked: each inserter subscribes every item, each looker "
                 "looks every item up, no pre-population\n"
                 "median, whiskers = min-max over rounds", fontsize=11)
    fig.tight_layout()
    return fig


# --- contention -------------------------------------------------------------------------------


def fig_contention(recs: list[Record]) -> Any:
    """CPU per operation at 2 threads / 1 thread, shared matcher vs one per thread."""
    runs = latest_runs(recs, "contention")
    if not runs:
        return None
    plt = pyplot()
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
                    colors.append(COLORS.get(n, "#444444"))
            ax.bar(xs, ys, width=0.38, color=colors, hatch=hatch, edgecolor="black",
                   linewidth=0.5)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(present)),
                      [series_label(n) if n in LABELS else "attribute read\n(probe)"
                       for n in present], rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("CPU time per operation, 2 threads / 1 thread\n(1 = no contention)")
        ax.set_title(build_title(recs, build), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor="white", edgecolor="black",
                                 label="one matcher shared by both threads"),
                           Patch(facecolor="white", edgecolor="black", hatch="//",
                                 label="one matcher per thread")], fontsize=7)
        missing_note(ax, [r for r in rs if r.get("status") == "failed"])
    fig.suptitle("Contention: true 90/10, the same operations per thread; only sharing the "
                 "matcher differs\nmedian CPU time per operation over rounds", fontsize=11)
    fig.tight_layout()
    return fig


# --- level width ------------------------------------------------------------------------------


#: Line style of each build in a figure that draws the builds in one panel (GIL first).


def fig_sharing(recs: list[Record]) -> Any:
    """Two threads on one shared matcher as a fraction of two threads each with a matcher it
    built (1 = sharing costs nothing), per write share; one panel per build."""
    runs = latest_runs(recs, "sharing")
    if not runs:
        return None
    plt = pyplot()
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
                ax.bar(xs, ys, width=width, color=COLORS.get(a, "#444444"), label=series_label(a),
                       edgecolor="black", linewidth=0.5)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xticks(range(len(shares)), [f"{p:.0%} writes" for p in shares])
        ax.set_ylabel("ops/s, 2 threads on one shared matcher\n/ 2 threads each with its own")
        ax.set_title(build_title(recs, build), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


#: figure name -> function(records) -> figure
