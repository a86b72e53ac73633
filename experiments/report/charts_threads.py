"""The figures of the threaded experiments: ``scaling``, ``lockfree``, ``contention`` and
``sharing`` (drawn by :func:`experiments.report.charts.run_charts`)."""

from __future__ import annotations

from typing import Any

from ..records import Record, cells, contention_growth
from ..registry import ALGORITHMS, LABELS, thread_safe
from ..text import count
from .plotting import (COLORS, MARKERS, TRIES, Gaps, build_name, build_title, error_bars,
                       finish, latest_runs, plain_log, plan, pyplot, quartile_bars,
                       series_label, thousands)
from .tables import build_tag

__all__ = ["fig_contention", "fig_lockfree", "fig_scaling", "fig_sharing"]


def fig_scaling(recs: list[Record], workload: str) -> Any:
    """Throughput against threads for one scaling workload: all matchers, and tries only."""
    runs = latest_runs(recs, "scaling")
    # The owner-built limit of each matcher (workload ``<workload>/own``, same run), drawn
    # dotted beside its shared curve in the tries panel.
    owns = {b: [r for r in rs if r["workload"] == f"{workload}/own"] for b, rs in runs}
    runs = [(b, [r for r in rs if r["workload"] == workload]) for b, rs in runs]
    runs = [(b, rs) for b, rs in runs if rs]
    if not runs:
        return None
    # Beside a free-threaded panel's shared curves, the GIL build's (dashed), as the tables do.
    gil = next((rs for b, rs in runs if build_tag(recs, b) == "gil"), [])

    def measured(rs: list[Record], a: str) -> list[Record]:
        """``a``'s measured cells among ``rs``, by thread count."""
        return sorted((r for r in rs if r["algorithm"] == a and r.get("status") == "ok"),
                      key=lambda r: r["threads"])
    plt = pyplot()
    fig, axes = plt.subplots(2, len(runs), figsize=(max(9.5, 7.5 * len(runs)), 9.5),
                             squeeze=False)
    gaps = Gaps()
    for col, (build, rs) in enumerate(runs):
        p = plan(rs)
        threads = p.axis("scaling_threads", rs, lambda r: r["threads"])
        found = {a: [x for n in threads if n == 1 or thread_safe(a) for x in gaps.check(
                     cells(rs, algorithm=a, threads=n)[-1:], rs, build_name(recs, build),
                     series_label(a), count(n, "thread"), algorithm=a, threads=n)]
                 for a in ALGORITHMS if a in p.algorithms}
        for row, (algs, log) in enumerate(((ALGORITHMS, True), (TRIES, False))):
            ax = axes[row][col]
            for a in algs:
                c = found.get(a)
                if not c:
                    continue
                xs = [r["threads"] for r in c]
                med, err = quartile_bars(c)
                ax.errorbar(xs, med, yerr=err, marker=MARKERS[a], color=COLORS[a],
                            label=series_label(a), capsize=2,
                            linewidth=2.2 if a == "cstrie" else 1.2)
                own = measured(owns.get(build, []), a)
                if not log and own:
                    ax.plot([r["threads"] for r in own], [r["median"] for r in own],
                            linestyle=":", marker=MARKERS[a], color=COLORS[a], alpha=0.6,
                            label=f"{series_label(a)}, own per thread")
                g = measured(gil, a)
                if not log and g and build_tag(recs, build) == "ft":
                    ax.plot([r["threads"] for r in g], [r["median"] for r in g],
                            linestyle="--", marker=MARKERS[a], fillstyle="none",
                            color=COLORS[a], alpha=0.45, label=f"{series_label(a)}, GIL build")
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
            shares: dict[int, Any] = {}
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
    fig.suptitle(f"Concurrency scaling, workload {workload}: every thread runs the same "
                 "operations on a populated matcher\nmedian, whiskers = quartiles over rounds; "
                 "dotted: one matcher per thread built by its reader (the limit); dashed, "
                 "beside a free-threaded result: the GIL build's",
                 fontsize=11)
    return finish(fig, gaps)


# --- lock-free vs locked ----------------------------------------------------------------------


def fig_lockfree(recs: list[Record]) -> Any:
    """Wall time of insert:lookup rounds (1:1, 1:3) against worker count."""
    runs = latest_runs(recs, "lockfree")
    if not runs:
        return None
    plt = pyplot()
    from ..measure.lockfree import lockfree_configs

    fig, axes = plt.subplots(len(runs), 2, figsize=(13, 4.6 * len(runs)), squeeze=False)
    gaps = Gaps()
    for row, (build, rs) in enumerate(runs):
        p = plan(rs)
        configs = (lockfree_configs(tuple(p.size["lockfree_groups"]))
                   if p.size.get("lockfree_groups") else None)
        for col, ratio in enumerate(("1:1", "1:3")):
            ax = axes[row][col]
            sub = [r for r in rs if r["workload"] == ratio]
            workers = ([i + k for r_, i, k in configs if r_ == ratio] if configs is not None
                       else sorted({r["threads"] for r in sub}))
            for a in [a for a in ALGORITHMS if a in p.algorithms and thread_safe(a)]:
                c = [x for n in workers for x in gaps.check(
                    cells(sub, algorithm=a, threads=n)[-1:], sub,
                    f"{build_name(recs, build)}, {ratio}", series_label(a), count(n, "worker"),
                    algorithm=a, threads=n)]
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
    fig.suptitle("Lock-free vs locked: each inserter subscribes every item, each looker "
                 "looks every item up, no pre-population\n"
                 "median, whiskers = min-max over rounds", fontsize=11)
    return finish(fig, gaps)


# --- contention -------------------------------------------------------------------------------


def fig_contention(recs: list[Record]) -> Any:
    """CPU per operation at 2 threads / 1 thread, shared matcher vs one per thread."""
    runs = latest_runs(recs, "contention")
    if not runs:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(runs), figsize=(6.5 * len(runs), 4.8), squeeze=False)
    gaps = Gaps()
    for col, (build, rs) in enumerate(runs):
        ax = axes[0][col]
        p = plan(rs)
        present = [n for n in [*ALGORITHMS, "attribute-read"]
                   if n in p.algorithms or n == "attribute-read"]
        for k, (sharing, hatch) in enumerate((("shared", ""), ("per-thread", "//"))):
            xs, ys, colors = [], [], []
            for i, n in enumerate(present):
                if sharing == "shared" and not thread_safe(n):
                    continue  # measured at one thread only: no growth to draw
                for t in (1, 2):
                    gaps.check(cells(rs, algorithm=n, workload=sharing, threads=t), rs,
                               build_name(recs, build), series_label(n),
                               f"{sharing}, {t} thread{'s' if t > 1 else ''}",
                               algorithm=n, workload=sharing, threads=t)
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
    fig.suptitle("Contention: true 90/10, the same operations per thread; only sharing the "
                 "matcher differs\nmedian CPU time per operation over rounds", fontsize=11)
    return finish(fig, gaps)


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
    gaps = Gaps()
    for col, (build, rs) in enumerate(runs):
        ax = axes[0][col]
        plan_ = plan(rs)
        shares = plan_.axis("sharing_write_shares", rs,
                            lambda r: r["params"].get("write_share")
                            if r["params"].get("mode") == "shared" else None)
        present = [a for a in ALGORITHMS if a in plan_.algorithms and thread_safe(a)
                   and 2 in plan_.axis("sharing_threads", rs, lambda r: r["threads"])]
        width = 0.8 / max(len(present), 1)
        for i, a in enumerate(present):
            xs, ys = [], []
            for j, p in enumerate(shares):
                wl = f"w{round(p * 100)}/gc-on"
                s2, o2 = (gaps.check(cells(rs, algorithm=a, threads=2, workload=f"{m}/{wl}"),
                                     rs, build_name(recs, build), series_label(a),
                                     f"{m}, {p:.0%} writes, 2 threads", algorithm=a,
                                     threads=2, workload=f"{m}/{wl}")
                          for m in ("shared", "per-thread-own"))
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
    return finish(fig, gaps)


#: figure name -> function(records) -> figure
