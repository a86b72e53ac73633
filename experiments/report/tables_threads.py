"""The paper's tables of the threaded experiments: ``scaling``, ``lockfree``, ``contention``
(the ``sharing`` experiment's are in :mod:`experiments.report.sharing`)."""

from __future__ import annotations

import statistics

from ..records import Record, build_order, cells, contention_growth
from ..registry import ALGORITHMS, LABELS, lock_note
from .tables import REFERENCE, build_label, build_tag, ratio_cell, row_label, run_cells

__all__ = ["contention_table", "lockfree_table", "scaling_table"]


def scaling_table(records: list[Record], build: str, workload: str) -> str:
    """Operations per second per thread count, with the speed-up over one thread, and the
    CPU time per operation with the parallelism obtained (CPU time / wall time)."""
    recs = run_cells(records, "scaling", build, workload=workload)
    if not recs:
        return f"_No scaling results for {build}._"
    threads = sorted({r["threads"] for r in recs})
    by = {(r["algorithm"], r["threads"]): r for r in recs}
    algos = [a for a in ALGORITHMS if any(k[0] == a for k in by)]
    # Beside a free-threaded result, the GIL build's rate on the same threads (its own run).
    gil_by: dict = {}
    if build_tag(records, build) == "ft":
        for b in build_order(records):
            if b != build and build_tag(records, b) == "gil":
                gil_by = {(r["algorithm"], r["threads"]): r
                          for r in run_cells(records, "scaling", b, workload=workload)}
                break
    # And the limit of the same code: one matcher per thread, built by its reader (same run).
    run_id = recs[0]["run_id"]
    own_by = {(r["algorithm"], r["threads"]): r
              for r in run_cells(records, "scaling", build, workload=f"{workload}/own")
              if r["run_id"] == run_id}
    lines = ["| algorithm | " + " | ".join(f"{n} thr" for n in threads) + " |",
             "|---" * (len(threads) + 1) + "|"]
    for a in algos:
        base = by.get((a, 1))
        row = []
        for n in threads:
            r = by.get((a, n))
            if r is None:
                row.append("–")
                continue
            cell = f"{r['median']:,.0f}"
            if len(r.get("values") or []) > 1:
                q1, _, q3 = statistics.quantiles(r["values"], n=4, method="inclusive")
                cell += f" [{q1:,.0f}–{q3:,.0f}]"
            if base is not None and n > 1:
                cell += f" ({r['median'] / base['median']:.2f}x)"
            if "cache_hit_rate" in r["params"]:
                cell += f", {r['params']['cache_hit_rate']:.0%} cache hits"
            o = own_by.get((a, n))
            if o is not None:
                cell += (f"<br>own: {o['median']:,.0f} "
                         f"(shared / own {r['median'] / o['median']:.2f})")
            g = gil_by.get((a, n))
            if g is not None:
                cell += f"<br>GIL build: {g['median']:,.0f}"
            p = r["params"]
            if "cpu_per_op_us" in p:
                cell += (f"<br>{p['cpu_per_op_us']['median']:.3g} µs CPU/op, "
                         f"par {p['parallelism']['median']:.2f}")
            row.append(cell)
        lines.append(f"| {row_label(a)} | " + " | ".join(row) + " |")
    lines.append("")
    lines.append(f"Operations per second, median [quartiles] over rounds (speed-up over 1 "
                 f"thread); below it the median CPU time per operation and the parallelism (CPU "
                 f"time / wall time), and on a free-threaded build the GIL build's median on the "
                 f"same threads; run `{recs[0]['run_id']}`. *own*: the same rounds with one "
                 f"matcher per thread, built by the thread that reads it (nothing shared: the "
                 f"limit of the same code here), and the shared rate as a fraction of it; the "
                 f"sharing tables break the difference down."
                 + lock_note(r["algorithm"] for r in recs))
    return "\n".join(lines)


def lockfree_table(records: list[Record], build: str) -> str:
    """Milliseconds per insert:lookup round, with the ratio to the CS-trie's."""
    recs = run_cells(records, "lockfree", build)
    if not recs:
        return f"_No lock-free results for {build}._"
    cols = sorted({(r["workload"], r["threads"]) for r in recs})
    by = {(r["algorithm"], r["workload"], r["threads"]): r["median"] * 1e3 for r in recs}
    algos = [a for a in ALGORITHMS if any(k[0] == a for k in by)]
    lines = ["| algorithm | " + " | ".join(f"{w} x{n}" for w, n in cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    for a in algos:
        lines.append(f"| {row_label(a)} | " + " | ".join(
            ratio_cell(by.get((a, w, n)), by.get((REFERENCE, w, n))) for w, n in cols) + " |")
    lines.append("")
    lines.append(f"Milliseconds per round (lower is better; ratio to the CS-trie); columns "
                 f"are insert:lookup ratio x workers; run `{recs[0]['run_id']}`." + lock_note(algos))
    return "\n".join(lines)


def contention_table(records: list[Record], builds: list[str]) -> str:
    """CPU time per operation at 1 and 2 threads, shared matcher and one per thread."""
    lines = [("| algorithm | build | shared 1 thr | shared 2 thr | growth | "
              "per-thread 1 thr | per-thread 2 thr | growth |"), "|---" * 8 + "|"]
    any_rows = False
    for b in builds:
        rs = run_cells(records, "contention", b)
        for a in [*ALGORITHMS, "attribute-read"]:
            row = []
            for sharing in ("shared", "per-thread"):
                for n in (1, 2):
                    c = cells(rs, algorithm=a, workload=sharing, threads=n)
                    row.append(f"{c[-1]['median']:.3g}" if c else "–")
                g = contention_growth(rs, a, sharing)
                row.append(f"**{g:.2f}x**" if g is not None else "–")
            if all(x == "–" for x in row):
                continue
            any_rows = True
            name = row_label(a) if a in LABELS else "attribute read (probe)"
            lines.append(f"| {name} | {build_label(records, b)} | " + " | ".join(row) + " |")
    if not any_rows:
        return "_No contention results._"
    lines.append("")
    lines.append("CPU µs per operation (the probe: per attribute read), median over rounds; "
                 "growth = 2 threads / 1 thread. True 90/10, the same operations in every "
                 "thread; only whether the threads share one matcher differs."
                 + lock_note(r["algorithm"] for b in builds for r in run_cells(records, "contention", b)))
    return "\n".join(lines)
