"""The ``compare`` command's terminal table and chart, from its records only.

One row per (cell, algorithm): the median, the quartiles, and the ratio to the baseline
taken so that above 1 is better than the baseline whatever the unit (for a time: the
baseline's median over this one; for a rate: this one over the baseline's). Ratios are
between cells of one run.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..measure.compare import LATENCY, THROUGHPUT
from ..records import Record, ok
from ..text import count
from ..writing import writing
from .plotting import COLORS, MARKERS, build_name, pyplot, series_label

__all__ = ["chart", "present", "ratio", "table"]

_UNIT = {"ns": "ns per lookup, lower is better",
         "lookups/s": "lookups per second, higher is better",
         "ops/s": "operations per second of all threads, higher is better"}


def _key(rec: Record) -> tuple[int, int, float]:
    kind = {LATENCY: 0, THROUGHPUT: 1}.get(rec["workload"], 2)
    return kind, rec["threads"], rec["params"].get("write_share_asked", 0.0)


def _title(rec: Record) -> str:
    if rec["workload"] == LATENCY:
        return "lookup latency, 1 thread"
    if rec["workload"] == THROUGHPUT:
        return "lookup throughput, 1 thread"
    n, p = rec["threads"], rec["params"]
    real = f" (real {p['write_share']:.1%})" if "write_share" in p else ""
    return (f"threaded, {n} thread{'s' if n > 1 else ''}, "
            f"{p['write_share_asked']:.0%} writes{real}")


def _num(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def ratio(rec: Record, base: Record | None) -> float | None:
    """``rec`` against ``base``, above 1 = better than ``base`` (None if either is missing)."""
    if base is None or not ok(rec) or not ok(base) or not rec["median"] or not base["median"]:
        return None
    if rec["unit"] == "ns":
        return base["median"] / rec["median"]
    return rec["median"] / base["median"]


def _cells(records: list[Record]) -> list[tuple[str, list[Record]]]:
    """(title, records of the cell in measuring order), in the order of the table."""
    groups: dict[tuple, list[Record]] = {}
    for r in records:
        groups.setdefault(_key(r), []).append(r)
    return [(_title(rs[0]), rs) for _, rs in sorted(groups.items())]


def table(records: list[Record], baseline: str) -> str:
    """The terminal table of one run's ``compare`` records."""
    first = records[0]
    p = first["params"]
    col = f"x {baseline}"
    lines = [
        f"compare {p['workload']!r} ({first['dialect']}): "
        f"{count(p['subscriptions'], 'subscription')} of "
        f"{count(p['distinct_patterns'], 'pattern')}, {count(p['topics'], 'topic')}; "
        f"{build_name(records, first['build'])}, {count(first['cpu_count'], 'CPU')}; "
        f"{count(first['rounds'], 'round')}; run {first['run_id']}",
        f"{col}: ratio to {baseline}, above 1 = better (a time: {baseline}'s median / this "
        f"one; a rate: this one / {baseline}'s)",
    ]
    width = max(len(series_label(r["algorithm"])) for r in records)
    head = f"  {'algorithm':<{width}}  {'median':>12}  {'q1 - q3':>25}  {col:>16}"
    for title, rs in _cells(records):
        lines += ["", f"{title} ({_UNIT.get(rs[0]['unit'], rs[0]['unit'])})", head]
        base = next((r for r in rs if r["algorithm"] == baseline), None)
        for r in rs:
            name = series_label(r["algorithm"])
            if not ok(r):
                lines.append(f"  {name:<{width}}  {r['status']}: {r.get('note') or ''}")
                continue
            q = f"{_num(r['params']['q1'])} - {_num(r['params']['q3'])}"
            x = ratio(r, base)
            xs = "n/a" if x is None else f"{x:.2f}"
            if r is base:
                xs += " (baseline)"
            note = f"  [{r['note']}]" if r.get("note") else ""
            lines.append(f"  {name:<{width}}  {_num(r['median']):>12}  {q:>25}  {xs:>16}{note}")
    return "\n".join(lines)


def chart(records: list[Record], baseline: str, path: Path) -> Path:
    """Draw the run's three panels (latency, throughput, threaded rounds) into ``path``:
    medians as bars, quartiles as error bars. Raises ImportError without matplotlib."""
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    plain = FuncFormatter(lambda v, _: f"{v:,.0f}")
    cells = _cells(records)
    single = [(t, rs) for t, rs in cells if rs[0]["workload"] in (LATENCY, THROUGHPUT)]
    threaded = [(t, rs) for t, rs in cells if rs[0]["workload"] not in (LATENCY, THROUGHPUT)]
    algorithms = list(dict.fromkeys(r["algorithm"] for r in records))
    fig, axes = plt.subplots(1, len(single) + bool(threaded),
                             figsize=(5 * len(single) + 2 + 1.2 * len(threaded), 4.8),
                             squeeze=False)
    for ax, (title, rs) in zip(axes[0], single):
        measured = [r for r in rs if ok(r)]
        ys = range(len(measured))
        ax.barh(list(ys), [r["median"] for r in measured], xerr=_quartiles(measured),
                color=[COLORS.get(r["algorithm"], "grey") for r in measured], capsize=3)
        ax.set_yticks(list(ys), [series_label(r["algorithm"]) for r in measured], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(_UNIT[rs[0]["unit"]])
        ax.xaxis.set_major_formatter(plain)
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.set_title(title + _not_measured(rs), fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    if threaded:
        ax = axes[0][-1]
        width = 0.8 / len(algorithms)
        for j, alg in enumerate(algorithms):
            xs, rs = [], []
            for i, (_, cell) in enumerate(threaded):
                r = next((r for r in cell if r["algorithm"] == alg and ok(r)), None)
                if r is not None:
                    xs.append(i - 0.4 + (j + 0.5) * width)
                    rs.append(r)
            if rs:
                ax.bar(xs, [r["median"] for r in rs], width, yerr=_quartiles(rs), capsize=2,
                       color=COLORS.get(alg, "grey"), label=series_label(alg))
                ax.plot(xs, [r["median"] for r in rs], MARKERS.get(alg, "o"), color="black",
                        markersize=3, linestyle="")
        ax.set_xticks(range(len(threaded)),
                      [f"{c[0]['threads']} thr\n{c[0]['params']['write_share_asked']:.0%} w"
                       for _, c in threaded], fontsize=8)
        ax.set_ylabel(_UNIT["ops/s"])
        ax.yaxis.set_major_formatter(plain)
        ax.set_title("threaded rounds (threads, write share)"
                     + _not_measured([r for _, c in threaded for r in c]), fontsize=9)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3,
                  frameon=False)
    first = records[0]
    p = first["params"]
    fig.suptitle(f"{p['workload']} ({first['dialect']}): "
                 f"{count(p['subscriptions'], 'subscription')}, {count(p['topics'], 'topic')}"
                 f"; {build_name(records, first['build'])}"
                 f"; median and quartiles of {count(first['rounds'], 'round')}; "
                 f"baseline {baseline}",
                 fontsize=9)
    fig.tight_layout()
    with writing(path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return Path(path)


def _not_measured(rs: list[Record]) -> str:
    """A second title line naming the cells of a panel that were not measured, if any."""
    bad = sorted({f"{series_label(r['algorithm'])} {r['status']}" for r in rs if not ok(r)})
    return f"\nnot measured: {'; '.join(bad)}" if bad else ""


def _quartiles(rs: list[Record]) -> list[list[float]]:
    return [[r["median"] - r["params"]["q1"] for r in rs],
            [r["params"]["q3"] - r["median"] for r in rs]]


def present(records: list[Record], baseline: str, chart_path: Path) -> Path | None:
    """Print the table on stdout and draw the chart; return its path, or None (and say
    why on stderr) where matplotlib is not installed."""
    print(table(records, baseline), flush=True)
    try:
        return chart(records, baseline, chart_path)
    except ImportError as exc:
        print(f"no chart: matplotlib is not importable in {sys.executable} ({exc}); the "
              "records and the table above are written all the same", file=sys.stderr)
        return None
