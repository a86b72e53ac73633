"""The paper's tables, filled from result files: ``python -m experiments paper --from DIR``.

``paper/paper.template.md`` holds the prose and ``{{name}}`` placeholders; this module fills
each placeholder with a table or list computed from the records under ``DIR`` (the largest,
then the most recent run of each experiment on each build) and writes ``paper/paper.md``.
No measured number is typed into the template. The published Go figures beside our tables
are the anchors of ``methodology.md`` (the articles' own numbers, not ours).
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import sharing_report
from .records import Record, build_order, cells, contention_growth, latest_run, load
from .registry import ALGORITHMS, LABELS
from .summary import TARGETS, compute, to_markdown

__all__ = ["LOOKUP_WORKLOADS", "PUBLISHED_LATENCY", "PUBLISHED_THROUGHPUT", "render",
           "run_paper"]

# The articles' figures (Go, 2016, 2.6 GHz Core i7), as methodology.md gives them.
# ns per operation: (subscribe cold, hot, unsubscribe cold, hot, lookup cold, hot).
PUBLISHED_LATENCY: dict[str, tuple[float, ...]] = {
    "naive": (172, 221, 51.2, 55, 787, 815_787),
    "inverted_bitmap": (3_795, 3_863, 198, 198, 380, 395),
    "optimized_bitmap": (1_053, 1_076, 330, 371, 2_724, 3_337),
    "locked_trie": (406, 443, 221, 257, 2_145, 2_278),
    "cstrie": (412, 471, 245, 280, 1_615, 1_637),
}
# Messages per second on the 3-digit workload.
PUBLISHED_THROUGHPUT: dict[str, float] = {
    "naive": 4_053, "inverted_bitmap": 1_052_315, "optimized_bitmap": 130_706,
    "locked_trie": 248_762, "cstrie": 340_911,
}
# The articles' names, for the published rows (their trie had no result cache).
PUBLISHED_LABELS = {"naive": "naive hashmap", "inverted_bitmap": "inverted bitmap",
                    "optimized_bitmap": "optimized inverted bitmap",
                    "locked_trie": "trie (global lock)", "cstrie": "cs-trie (lock-free)"}
LATENCY_COLUMNS = [(op, state) for op in ("subscribe", "unsubscribe", "lookup")
                   for state in ("cold", "hot")]
REFERENCE = "cstrie"


def _label(algorithm: str, dialect: str | None = None) -> str:
    name = LABELS.get(algorithm, algorithm)
    return f"{name} [{dialect}]" if dialect and algorithm == "paho" else name


def _num(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def _ratio(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:.2g}x"


def _cell(value: float | None, ref: float | None) -> str:
    if value is None:
        return "–"
    if ref:
        return f"{_num(value)} ({_ratio(value / ref)})"
    return _num(value)


def _run_cells(records: list[Record], experiment: str, build: str, **match: Any
               ) -> list[Record]:
    """Measured cells of ``experiment`` on ``build`` from the run the paper draws it from
    (:func:`latest_run`), narrowed by ``match`` as in :func:`cells`."""
    rid = latest_run(records, experiment, build)
    return (cells(records, experiment=experiment, build=build, run_id=rid, **match)
            if rid else [])


def latency_table(records: list[Record], build: str) -> str:
    """Faithful cold/hot latency per operation, ns, with each cell's ratio to the CS-trie's
    in the same column (NATS form; paho on the MQTT form)."""
    recs = _run_cells(records, "latency", build)
    if not recs:
        return f"_No latency results for {build}._"
    by = {(r["algorithm"], r["dialect"], r["workload"]): r["median"] for r in recs}
    rows = sorted({(r["algorithm"], r["dialect"]) for r in recs
                   if r["dialect"] == "nats" or r["algorithm"] == "paho"},
                  key=lambda ad: (ad[0] != REFERENCE, ad))
    head = "| algorithm | " + " | ".join(f"{op} {st}" for op, st in LATENCY_COLUMNS) + " |"
    lines = [head, "|---" * (len(LATENCY_COLUMNS) + 1) + "|"]
    for algorithm, dialect in rows:
        vals = []
        for op, st in LATENCY_COLUMNS:
            w = f"{op}/{st}/faithful"
            ref = by.get((REFERENCE, dialect, w))
            vals.append(_cell(by.get((algorithm, dialect, w)), ref))
        lines.append(f"| {_label(algorithm, dialect)} | " + " | ".join(vals) + " |")
    run = recs[0]["run_id"]
    lines.append("")
    lines.append(f"ns per operation, median (ratio to the CS-trie in the same column and "
                 f"dialect); run `{run}`, size {recs[0].get('size')}.")
    return "\n".join(lines)


#: The lookup workloads whose CS-trie ratios the summary gives: (name, the cell that
#: describes the workload, its target against LockedTrie(cache=False), its target against paho).
LOOKUP_WORKLOADS = (
    ("sparse (hot population)", "lookup/hot/faithful", "hot_lookup_vs_lockedtrie",
     "hot_lookup_vs_paho"),
    ("dense wildcard", "lookup/dense/distinct", "dense_lookup_vs_lockedtrie",
     "dense_lookup_vs_paho"),
)


def _lookup_population(records: list[Record], workload: str, run_id: str | None) -> str:
    """What a lookup workload's CS-trie cell of ``run_id`` looked up, from its params."""
    c = cells(records, experiment="latency", algorithm=REFERENCE, workload=workload,
              run_id=run_id) if run_id else []
    if not c:
        return "–"
    p = c[-1]["params"]
    if "filters" in p:
        per = p.get("matches_per_topic")
        return (f"{p['filters']:,} filters; {p['topics']:,} topics in turn, "
                + (f"{per:.1f} matches each" if per is not None else "matches not recorded"))
    return f"{p.get('hot_population', 0) + 1:,} patterns; one topic, 1 match"


def lookup_ratio_table(records: list[Record], builds: list[str]) -> str:
    """The CS-trie's lookup time over LockedTrie(cache=False)'s and paho's, on the sparse
    and the dense workload: the summary's rows (:func:`experiments.summary.compute`)."""
    rows = {(r["target"], r["build"]): r for r in compute(records)}
    form = {t.key: str(t.num.get("dialect", "")).upper() for t in TARGETS}

    def ratio(row: dict[str, Any] | None) -> str:
        if row is None or row.get("value") is None:
            return "–"
        return (f"{row['value']:.2f} ({row['margin']}; target {row['bound']}; "
                f"{form[row['target']]} form)")

    lines = ["| lookup workload | build | CS-trie / LockedTrie (no cache) | CS-trie / paho "
             "MQTTMatcher | looked up | run |", "|---" * 6 + "|"]
    for name, workload, vs_locked, vs_paho in LOOKUP_WORKLOADS:
        for b in builds:
            locked, paho = rows.get((vs_locked, b)), rows.get((vs_paho, b))
            run_id = next((r["run_id"] for r in (locked, paho) if r and r.get("run_id")), None)
            lines.append(f"| {name} | {_build_label(records, b)} | {ratio(locked)} | "
                         f"{ratio(paho)} | {_lookup_population(records, workload, run_id)} | "
                         + (f"`{run_id}`" if run_id else "–") + " |")
    lines.append("")
    lines.append("Lookup time, median, CS-trie over the other matcher in one run (below 1 the "
                 "CS-trie is faster).")
    return "\n".join(lines)


def published_latency_table() -> str:
    head = "| algorithm (Go, published) | " + " | ".join(
        f"{op} {st}" for op, st in LATENCY_COLUMNS) + " |"
    lines = [head, "|---" * (len(LATENCY_COLUMNS) + 1) + "|"]
    ref = PUBLISHED_LATENCY[REFERENCE]
    for algorithm, vals in sorted(PUBLISHED_LATENCY.items(), key=lambda kv: kv[0] != REFERENCE):
        lines.append(f"| {PUBLISHED_LABELS[algorithm]} | "
                     + " | ".join(_cell(v, r) for v, r in zip(vals, ref)) + " |")
    return "\n".join(lines)


def throughput_table(records: list[Record], builds: list[str]) -> str:
    """Messages per second on the 3-digit workload per build, beside the published Go
    figures, each with its ratio to the CS-trie, and a result cache's hit rate beside it."""
    per_build = {}
    hit_rates: dict = {}
    for b in builds:
        recs = _run_cells(records, "throughput", b)
        per_build[b] = {(r["algorithm"], r["dialect"]): r["median"] for r in recs}
        for r in recs:
            if "cache_hit_rate" in r["params"]:
                hit_rates[(b, r["algorithm"], r["dialect"])] = r["params"]["cache_hit_rate"]
    algos = sorted({(a, d) for t in per_build.values() for a, d in t
                    if d == "nats" or a == "paho"}, key=lambda ad: (ad[0] != REFERENCE, ad))
    lines = ["| algorithm | " + " | ".join(f"{b} msg/s" for b in builds) + " | Go (published) |",
             "|---" * (len(builds) + 2) + "|"]
    for a, d in algos:
        row = [_cell(per_build[b].get((a, d)), per_build[b].get((REFERENCE, d)))
               + (f", {hit_rates[(b, a, d)]:.0%} hits" if (b, a, d) in hit_rates else "")
               for b in builds]
        # The published trie had no cache: it sits beside LockedTrie without its cache.
        go = PUBLISHED_THROUGHPUT.get("locked_trie" if a == "locked_trie_nocache" else a)
        if a == "locked_trie":
            go = None
        row.append(_cell(go, PUBLISHED_THROUGHPUT[REFERENCE]) if go else "–")
        lines.append(f"| {_label(a, d)} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def primitives_table(records: list[Record], builds: list[str]) -> str:
    per_build: dict[str, dict[str, Record]] = {}
    for b in builds:
        rid = latest_run(records, "primitives", b)
        per_build[b] = {r["algorithm"]: r for r in records
                        if r["experiment"] == "primitives" and r["build"] == b
                        and r.get("run_id") == rid}
    names = sorted({n for t in per_build.values() for n in t})
    lines = ["| operation | " + " | ".join(f"{b} ns" for b in builds) + " |",
             "|---" * (len(builds) + 1) + "|"]
    for n in names:
        row = []
        for b in builds:
            r = per_build[b].get(n)
            if r is None:
                row.append("–")
            elif r.get("median") is None:
                row.append(f"n/a: {r.get('note', '')}")
            else:
                row.append(f"{r['median']:.3g} [{r['min']:.3g}, {r['max']:.3g}]")
        lines.append(f"| {n} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def _command(rec: Record) -> str | None:
    """The command line of a record's run, from the run manifest beside its records."""
    f = rec.get("_file")
    if not f:
        return None
    manifest = Path(f).parent / f"run-{rec.get('run_id')}.json"
    try:
        argv = json.loads(manifest.read_text()).get("argv")
    except (OSError, json.JSONDecodeError):
        return None
    return "python -m experiments " + " ".join(argv) if isinstance(argv, list) else None


def runs_list(records: list[Record]) -> str:
    """The runs the paper's tables were drawn from (the latest of each experiment and build)."""
    used = {latest_run(records, e, b) for b in build_order(records)
            for e in {r["experiment"] for r in records}}
    runs: dict[str, Record] = {}
    for r in records:
        if r.get("run_id") in used:
            runs.setdefault(r["run_id"], r)
    out = []
    for rid, r in sorted(runs.items()):
        cmd = _command(r)
        out.append(f"- `{rid}`: {r.get('size')} size, Python {r.get('python')} "
                   f"({'GIL on' if r.get('gil_enabled', True) else 'GIL off'}), "
                   f"{r.get('cpu_count')} CPUs, commit {str(r.get('git_commit'))[:10]}"
                   f"{' (dirty)' if r.get('git_dirty') else ''}, seed {r.get('seed')}"
                   + (f"; `{cmd}`" if cmd else ""))
    return "\n".join(out)


def _build_label(records: list[Record], build: str) -> str:
    r = next(x for x in records if x["build"] == build)
    kind = ("free-threaded, GIL off" if r.get("free_threaded_build") and not r.get("gil_enabled")
            else "GIL")
    return f"Python {r.get('python')} ({kind})"


def memory_table(records: list[Record], build: str) -> str:
    """Bytes held per subscription at every measured size, both workload variants, with the
    ratio to the CS-trie at the same size."""
    recs = _run_cells(records, "memory", build)
    if not recs:
        return f"_No memory results for {build}._"
    sizes = sorted({r["params"]["subscriptions"] for r in recs})
    variants = ("digits", "distinct")
    per = {(r["algorithm"], r["workload"].split("/")[-1], r["params"]["subscriptions"]):
           r["median"] / r["params"]["subscriptions"] for r in recs
           if r["dialect"] == "nats" or r["algorithm"] == "paho"}
    cols = [(v, n) for v in variants for n in sizes]
    lines = ["| algorithm | " + " | ".join(f"{v} {n:,}" for v, n in cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    for a in sorted({k[0] for k in per}, key=lambda x: (x != REFERENCE, x)):
        row = [_cell(per.get((a, v, n)), per.get((REFERENCE, v, n))) for v, n in cols]
        lines.append(f"| {_label(a)} | " + " | ".join(row) + " |")
    skipped = sorted({f"{_label(r['algorithm'])} at {r['params'].get('subscriptions', '?'):,}"
                      for r in records if r["experiment"] == "memory" and r["build"] == build
                      and r.get("run_id") == recs[0]["run_id"] and r.get("status") != "ok"})
    lines.append("")
    lines.append("Bytes per subscription (tracemalloc), median (ratio to the CS-trie at the "
                 "same size); *digits*: the 3-digit workload (patterns repeat), *distinct*: a "
                 "wider alphabet. " + (f"Not measured: {'; '.join(skipped)}." if skipped
                                      else ""))
    return "\n".join(lines)


def scaling_table(records: list[Record], build: str, workload: str) -> str:
    """Operations per second per thread count, with the speed-up over one thread, and the
    CPU time per operation with the parallelism obtained (CPU time / wall time)."""
    recs = _run_cells(records, "scaling", build, workload=workload)
    if not recs:
        return f"_No scaling results for {build}._"
    threads = sorted({r["threads"] for r in recs})
    by = {(r["algorithm"], r["threads"]): r for r in recs}
    algos = [a for a in ALGORITHMS if any(k[0] == a for k in by)]
    # Beside a free-threaded result, the GIL build's rate on the same threads (its own run).
    gil_by: dict = {}
    if _tag(records, build) == "ft":
        for b in build_order(records):
            if b != build and _tag(records, b) == "gil":
                gil_by = {(r["algorithm"], r["threads"]): r
                          for r in _run_cells(records, "scaling", b, workload=workload)}
                break
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
            g = gil_by.get((a, n))
            if g is not None:
                cell += f"<br>GIL build: {g['median']:,.0f}"
            p = r["params"]
            if "cpu_per_op_us" in p:
                cell += (f"<br>{p['cpu_per_op_us']['median']:.3g} µs CPU/op, "
                         f"par {p['parallelism']['median']:.2f}")
            row.append(cell)
        lines.append(f"| {_label(a)} | " + " | ".join(row) + " |")
    lines.append("")
    lines.append(f"Operations per second, median [quartiles] over rounds (speed-up over 1 "
                 f"thread); below it the median CPU time per operation and the parallelism (CPU "
                 f"time / wall time), and on a free-threaded build the GIL build's median on the "
                 f"same threads; run `{recs[0]['run_id']}`. One matcher per thread built by its "
                 f"reader, the limit beside a shared result, is in the sharing tables.")
    return "\n".join(lines)


def lockfree_table(records: list[Record], build: str) -> str:
    """Milliseconds per insert:lookup round, with the ratio to the CS-trie's."""
    recs = _run_cells(records, "lockfree", build)
    if not recs:
        return f"_No lock-free results for {build}._"
    cols = sorted({(r["workload"], r["threads"]) for r in recs})
    by = {(r["algorithm"], r["workload"], r["threads"]): r["median"] * 1e3 for r in recs}
    algos = [a for a in ALGORITHMS if any(k[0] == a for k in by)]
    lines = ["| algorithm | " + " | ".join(f"{w} x{n}" for w, n in cols) + " |",
             "|---" * (len(cols) + 1) + "|"]
    for a in algos:
        lines.append(f"| {_label(a)} | " + " | ".join(
            _cell(by.get((a, w, n)), by.get((REFERENCE, w, n))) for w, n in cols) + " |")
    lines.append("")
    lines.append(f"Milliseconds per round (lower is better; ratio to the CS-trie); columns "
                 f"are insert:lookup ratio x workers; run `{recs[0]['run_id']}`.")
    return "\n".join(lines)


def contention_table(records: list[Record], builds: list[str]) -> str:
    """CPU time per operation at 1 and 2 threads, shared matcher and one per thread."""
    lines = [("| algorithm | build | shared 1 thr | shared 2 thr | growth | "
              "per-thread 1 thr | per-thread 2 thr | growth |"), "|---" * 8 + "|"]
    any_rows = False
    for b in builds:
        rs = _run_cells(records, "contention", b)
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
            name = _label(a) if a in LABELS else "attribute read (probe)"
            lines.append(f"| {name} | {_build_label(records, b)} | " + " | ".join(row) + " |")
    if not any_rows:
        return "_No contention results._"
    lines.append("")
    lines.append("CPU µs per operation (the probe: per attribute read), median over rounds; "
                 "growth = 2 threads / 1 thread. True 90/10, the same operations in every "
                 "thread; only whether the threads share one matcher differs.")
    return "\n".join(lines)


#: The algorithms the articles measured, in our names (the published trie had no cache).
_PUBLISHED_AS = {"naive": "naive", "inverted_bitmap": "inverted_bitmap",
                 "optimized_bitmap": "optimized_bitmap", "locked_trie_nocache": "locked_trie",
                 "cstrie": "cstrie"}


def _pair_agreement(ours: dict[str, float], theirs: dict[str, float],
                    lower_is_better: bool) -> tuple[int, int, list[str]]:
    """How many algorithm pairs are ordered as in the articles; the pairs that are not."""
    names = sorted(a for a in ours if a in theirs)
    agree, total, flips = 0, 0, []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            total += 1
            if (ours[a] < ours[b]) == (theirs[a] < theirs[b]):
                agree += 1
            else:
                better = a if (ours[a] < ours[b]) == lower_is_better else b
                worse = b if better == a else a
                gap = max(ours[a], ours[b]) / min(ours[a], ours[b]) - 1
                flips.append(f"{_label(better)} ahead of {_label(worse)} (by {gap:.0%})")
    return agree, total, flips


def shape_table(records: list[Record], builds: list[str]) -> str:
    """For each published column: how many algorithm pairs our run orders as the articles."""
    lines = ["| measure | build | pairs ordered as in Go | pairs that differ here |",
             "|---|---|---|---|"]
    for b in builds:
        lat = _run_cells(records, "latency", b)
        thr = _run_cells(records, "throughput", b)
        for k, (op, st) in enumerate(LATENCY_COLUMNS):
            ours = {r["algorithm"]: r["median"] for r in lat
                    if r["dialect"] == "nats" and r["algorithm"] in _PUBLISHED_AS
                    and r["workload"] == f"{op}/{st}/faithful"}
            theirs = {a: PUBLISHED_LATENCY[g][k] for a, g in _PUBLISHED_AS.items()}
            if len(ours) > 1:
                agree, total, flips = _pair_agreement(ours, theirs, True)
                lines.append(f"| {op} {st} latency | {_build_label(records, b)} | "
                             f"{agree} of {total} | {'; '.join(flips) or '–'} |")
        ours = {r["algorithm"]: r["median"] for r in thr
                if r["dialect"] == "nats" and r["algorithm"] in _PUBLISHED_AS}
        if len(ours) > 1:
            theirs = {a: PUBLISHED_THROUGHPUT[g] for a, g in _PUBLISHED_AS.items()}
            agree, total, flips = _pair_agreement(ours, theirs, False)
            lines.append(f"| throughput | {_build_label(records, b)} | {agree} of {total} | "
                         f"{'; '.join(flips) or '–'} |")
    if len(lines) == 2:
        return "_No latency or throughput results._"
    lines.append("")
    lines.append("A pair is ordered as in Go when the faster of the two is the same in both "
                 "(LockedTrie without its cache stands for the published trie); a flipped "
                 "pair shows by how much the faster one leads here.")
    return "\n".join(lines)


def _width_writes(records: list[Record], build: str) -> dict[tuple[str, int], Record]:
    """(algorithm, width) -> the write cell of the level-width run the paper draws from."""
    return {(r["algorithm"], r["params"]["width"]): r
            for r in _run_cells(records, "level_width", build, workload="write")}


def level_width_table(records: list[Record], builds: list[str]) -> str:
    """Microseconds per subscribe + unsubscribe of a fresh inbox at each width, CS-trie and
    LockedTrie(cache=False), and their ratio, per build."""
    per = {b: _width_writes(records, b) for b in builds}
    per = {b: t for b, t in per.items() if t}
    if not per:
        return "_No level-width results._"
    widths = sorted({w for t in per.values() for _, w in t})
    head = ["width"]
    for b in per:
        head += [f"{b} CS-trie µs", f"{b} LockedTrie (no cache) µs", f"{b} CS-trie / LockedTrie"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for w in widths:
        row = [f"{w:,}"]
        for t in per.values():
            c, lt = t.get(("cstrie", w)), t.get(("locked_trie_nocache", w))
            row += [f"{c['median'] / 1e3:.3g}" if c else "–",
                    f"{lt['median'] / 1e3:.3g}" if lt else "–",
                    f"**{c['median'] / lt['median']:.2f}x**" if c and lt else "–"]
        lines.append("| " + " | ".join(row) + " |")
    runs = "; ".join(f"`{next(iter(t.values()))['run_id']}` ({b}, "
                     f"{next(iter(t.values()))['rounds']} rounds)" for b, t in per.items())
    lines.append("")
    lines.append(f"Median over interleaved rounds (the figure shows the min-max spread); one "
                 f"write is a subscribe and an unsubscribe; runs {runs}.")
    return "\n".join(lines)


def _json_files(root: Path, pattern: str) -> list[tuple[Path, dict]]:
    out = []
    for path in sorted(Path(root).rglob(pattern)):
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(data, dict):
            out.append((path, data))
    return out


def spark_table(root: Path) -> str:
    """The Spark routing runs found below ``root`` (``summary.json`` of ``pipeline route``)."""
    runs = [d for _, d in _json_files(root, "summary.json") if d.get("command") == "route"]
    if not runs:
        return ("_No Spark routing results under the results root: run `make "
                "pipeline-bench`._")
    lines = [("| messages | subscriptions | matcher | impl | cores | messages/s | deliveries "
              "| rejected | per core / in-process lookup | regex baseline: messages, speed-up, "
              "equal |"), "|---" * 10 + "|"]
    for d in sorted(runs, key=lambda d: (d.get("messages_in", 0), d.get("started", ""))):
        inproc = d.get("inprocess") or {}
        base = d.get("baseline") or {}
        ratio = f"{inproc['per_core_ratio']:.2f}" if inproc else "–"
        if "route_stage_per_core_ratio" in inproc:
            ratio += f" (route stage {inproc['route_stage_per_core_ratio']:.2f})"
        regex = (f"{base['messages']:,}, {base['speedup']:.0f}x, "
                 f"{'yes' if base.get('equal') else 'NO'}" if base else "–")
        lines.append(
            f"| {d['messages_in']:,} | {d.get('subscriptions_in', 0):,} | {d.get('matcher')} | "
            f"{d.get('impl')} | {d.get('cores')} | {d['messages_per_second']:,.0f} | "
            f"{d['deliveries']:,} | {d['messages_rejected']:,} | {ratio} | {regex} |")
    first = runs[0]
    commits = sorted({str(d.get("git_commit"))[:10] for d in runs})
    lines.append("")
    lines.append(f"Spark {first.get('spark_version')} ({first.get('master')}), "
                 f"Python {first.get('python')}, commit {', '.join(commits)}; messages/s is "
                 f"the whole job after the session start (read, route, write, reconcile); "
                 f"*per core / in-process* divides it by the cores and by one thread's "
                 f"`lookup` rate on the driver.")
    return "\n".join(lines)


#: Words that mark a test figure as concurrency evidence (the paper's correctness table).
_CONCURRENCY_FIGURES = ("lineariz", "mutant", "parked", "fault", "stress", "state machine",
                        "threaded smoke")


def correctness_table(root: Path) -> str:
    """The test suite's figures (``make test`` writes ``test-figures/*.json``)."""
    # GIL build first, as everywhere else in the paper.
    reports = sorted(_json_files(root, "test-figures/*.json"),
                     key=lambda pd: (not pd[1].get("gil_enabled", True), pd[0].name))
    if not reports:
        return ("_No test-suite figures under the results root: run `make test` (it writes "
                "`results/test-figures/`)._")
    every = sorted({k for _, d in reports for k in d.get("figures", {})})
    names = [k for k in every if any(w in k for w in _CONCURRENCY_FIGURES)]
    heads = [f"Python {d.get('python')} (GIL {'on' if d.get('gil_enabled') else 'off'})"
             for _, d in reports]
    lines = ["| figure | " + " | ".join(heads) + " |", "|---" * (len(reports) + 1) + "|"]
    for n in names:
        lines.append(f"| {n} | " + " | ".join(
            f"{d['figures'][n]:,}" if n in d.get("figures", {}) else "–" for _, d in reports)
            + " |")
    lines.append("| tests collected / failed | " + " | ".join(
        f"{d.get('tests_collected')} / {d.get('tests_failed')}" for _, d in reports) + " |")
    lines.append("")
    lines.append(f"The concurrency figures of the suite; {len(every) - len(names)} more (the "
                 f"conformance suite's per-matcher counts) are in the files. From " + "; ".join(
        f"`{p.name}`: commit {str(d.get('git_commit'))[:10]}, {d.get('finished')}, "
        f"settings {d.get('environment') or 'default'}" for p, d in reports) + ".")
    return "\n".join(lines)


def spark_facts(root: Path | None) -> dict[str, str]:
    """The largest Spark routing run's figures: rate, per-core ratio, regex speed-up."""
    runs = ([d for _, d in _json_files(root, "summary.json") if d.get("command") == "route"
             and d.get("inprocess") and d.get("baseline")] if root else [])
    if not runs:
        return {k: "n/a" for k in ("spark_messages", "spark_messages_per_second",
                                   "spark_per_core_ratio", "spark_regex_speedup",
                                   "spark_regex_messages", "spark_regex_equal")}
    d = max(runs, key=lambda d: (d["messages_in"], d.get("started", "")))
    return {
        "spark_messages": f"{d['messages_in']:,}",
        "spark_messages_per_second": f"{d['messages_per_second']:,.0f}",
        "spark_per_core_ratio": f"{d['inprocess']['per_core_ratio']:.2f}",
        "spark_regex_speedup": f"{d['baseline']['speedup']:.0f}",
        "spark_regex_messages": f"{d['baseline']['messages']:,}",
        "spark_regex_equal": "equal" if d["baseline"].get("equal") else "NOT equal",
    }


def _tag(records: list[Record], build: str) -> str:
    """A fact's build prefix: ``ft`` for a free-threaded build with the GIL off, else ``gil``."""
    r = next(x for x in records if x["build"] == build)
    return "ft" if r.get("free_threaded_build") and not r.get("gil_enabled") else "gil"


def facts(records: list[Record], builds: list[str]) -> dict[str, str]:
    """Single numbers the prose quotes, by name (``{{fact:name}}`` in the template)."""
    out: dict[str, str] = {}
    for b in builds:
        tag = _tag(records, b)
        rs = _run_cells(records, "contention", b)
        for a in ("cstrie", "locked_trie", "locked_trie_nocache", "inverted_bitmap",
                  "optimized_bitmap", "attribute-read"):
            for sharing in ("shared", "per-thread"):
                g = contention_growth(rs, a, sharing)
                key = f"{tag}_{a.replace('-', '_')}_{sharing.replace('-', '_')}_growth"
                out[key] = f"{g:.2f}" if g is not None else "n/a"
        c = cells(rs, algorithm="cstrie", workload="shared", threads=2)
        out[f"{tag}_cstrie_shared_parallelism"] = (
            f"{c[-1]['params']['parallelism']['median']:.2f}" if c else "n/a")
        sc = _run_cells(records, "scaling", b)
        pars = [r["params"]["parallelism"]["median"] for r in sc
                if "parallelism" in r.get("params", {}) and r["threads"] > 1]
        out[f"{tag}_scaling_max_parallelism"] = f"{max(pars):.2f}" if pars else "n/a"
        for a in ("cstrie", "locked_trie"):
            r1 = next((r for r in sc if r["algorithm"] == a and r["workload"] == "90/10-true"
                       and r["threads"] == 1), None)
            r2 = next((r for r in sc if r["algorithm"] == a and r["workload"] == "90/10-true"
                       and r["threads"] == 2), None)
            out[f"{tag}_{a}_9010_2v1"] = (f"{r2['median'] / r1['median']:.2f}"
                                          if r1 and r2 else "n/a")
        # how long one round of the scaling workload lasts (CS-trie, true 90/10, 1 thread)
        r1 = next((r for r in sc if r["algorithm"] == "cstrie" and r["threads"] == 1
                   and r["workload"] == "90/10-true"), None)
        out[f"{tag}_scaling_round_ms"] = (f"{r1['params']['wall_s']['median'] * 1e3:.1f}"
                                          if r1 else "n/a")
        ops = {r["params"].get("ops_per_worker") for r in rs if "ops_per_worker" in r["params"]}
        out[f"{tag}_contention_ops"] = f"{ops.pop():,}" if len(ops) == 1 else "n/a"
        for a in ("cstrie", "locked_trie", "locked_trie_nocache", "optimized_bitmap"):
            c2 = cells(rs, algorithm=a, workload="shared", threads=2)
            out[f"{tag}_{a}_shared_cpu_us"] = f"{c2[-1]['median']:.3g}" if c2 else "n/a"
        # 50/50: CPU per operation of the CS-trie at 1 thread and at the most threads
        fifty = sorted((r for r in sc if r["algorithm"] == "cstrie"
                        and r["workload"] == "50/50" and "cpu_per_op_us" in r["params"]),
                       key=lambda r: r["threads"])
        out[f"{tag}_cstrie_5050_cpu_first"] = (
            f"{fifty[0]['params']['cpu_per_op_us']['median']:.3g}" if fifty else "n/a")
        out[f"{tag}_cstrie_5050_cpu_last"] = (
            f"{fifty[-1]['params']['cpu_per_op_us']['median']:.3g}" if fifty else "n/a")
        out[f"{tag}_cstrie_5050_threads_last"] = str(fifty[-1]["threads"]) if fifty else "n/a"
        # primitive costs (ns per operation, loop overhead included)
        prim = {r["algorithm"]: r["median"] for r in _run_cells(records, "primitives", b)}
        for name in ("atomicref_get", "atomicref_cas_success", "lock_acquire_release",
                     "rwlock_read", "rwlock_write", "atomics_load", "atomics_cas"):
            out[f"{tag}_ns_{name}"] = f"{prim[name]:,.0f}" if name in prim else "n/a"
        # lock-free vs locked at the largest 1:3 round: LockedTrie time / CS-trie time
        lf = _run_cells(records, "lockfree", b, workload="1:3")
        top = max((r["threads"] for r in lf), default=None)
        t = {r["algorithm"]: r["median"] for r in lf if r["threads"] == top}
        out[f"{tag}_lockfree_13_workers"] = str(top) if top else "n/a"
        for a in ("locked_trie", "locked_trie_nocache"):
            out[f"{tag}_lockfree_13_{a}_over_cstrie"] = (
                f"{t[a] / t['cstrie']:.2f}" if a in t and "cstrie" in t else "n/a")
        # memory: plain inverted bitmap / optimized bitmap per subscription, 1,000 subs
        mem = {r["algorithm"]: r["median"] for r in _run_cells(
            records, "memory", b, workload="3-digit/digits", dialect="nats",
            params__subscriptions=1000)}
        out[f"{tag}_inverted_over_optimized_memory"] = (
            f"{mem['inverted_bitmap'] / mem['optimized_bitmap']:.2f}"
            if "inverted_bitmap" in mem and "optimized_bitmap" in mem else "n/a")
        # level width: CS-trie / LockedTrie write cost at the narrowest and widest levels
        lw = _width_writes(records, b)
        both = sorted(w for a, w in lw if a == "cstrie" and ("locked_trie_nocache", w) in lw)
        for end, w in (("narrowest", both[0] if both else None),
                       ("widest", both[-1] if both else None)):
            out[f"{tag}_width_{end}"] = f"{w:,}" if w is not None else "n/a"
            out[f"{tag}_width_write_ratio_{end}"] = (
                f"{lw[('cstrie', w)]['median'] / lw[('locked_trie_nocache', w)]['median']:.2f}"
                if w is not None else "n/a")
        # Background load while the single-thread experiments ran (1-minute load average,
        # 2 cores); the concurrent experiments' own threads count in theirs, so they are
        # left out here.
        single = ("latency", "throughput", "memory", "primitives")
        used = {(e, latest_run(records, e, b)) for e in single}
        loads = [r["loadavg_1m"] for r in records
                 if (r["experiment"], r.get("run_id")) in used
                 and r.get("loadavg_1m") is not None]
        out[f"{tag}_max_loadavg"] = f"{max(loads):.1f}" if loads else "n/a"
        out[f"{tag}_median_loadavg"] = (f"{sorted(loads)[len(loads) // 2]:.1f}" if loads
                                        else "n/a")
    # the published (Go) hot lookup: CS-trie / trie
    hot = LATENCY_COLUMNS.index(("lookup", "hot"))
    out["go_hot_lookup_cstrie_over_trie"] = (
        f"{PUBLISHED_LATENCY['cstrie'][hot] / PUBLISHED_LATENCY['locked_trie'][hot]:.2f}")
    # how many algorithm pairs the hot lookup column orders as Go did
    for b in builds:
        tag = _tag(records, b)
        lat = _run_cells(records, "latency", b)
        for op, st in LATENCY_COLUMNS:
            k = LATENCY_COLUMNS.index((op, st))
            ours = {r["algorithm"]: r["median"] for r in lat
                    if r["dialect"] == "nats" and r["algorithm"] in _PUBLISHED_AS
                    and r["workload"] == f"{op}/{st}/faithful"}
            theirs = {a: PUBLISHED_LATENCY[g][k] for a, g in _PUBLISHED_AS.items()}
            agree, total, _ = _pair_agreement(ours, theirs, True)
            out[f"{tag}_shape_{op}_{st}"] = f"{agree} of {total}" if total else "n/a"
    for row in compute(records):
        if row.get("value") is not None:
            tag = _tag(records, row["build"])
            out[f"{tag}_target_{row['target']}"] = f"{row['value']:.2f}"
    # A build without results still answers every fact the other build has, with "n/a",
    # so that a paper drawn from one build renders (and says what is missing).
    for t in TARGETS:
        for tag in ("gil", "ft"):
            out.setdefault(f"{tag}_target_{t.key}", "n/a")
    for key in list(out):
        for mine, other in (("gil_", "ft_"), ("ft_", "gil_")):
            if key.startswith(mine):
                out.setdefault(other + key[len(mine):], "n/a")
    return out


def render(template: str, records: list[Record], root: Path | None = None) -> str:
    """Fill every ``{{name}}`` and ``{{fact:name}}`` of ``template``; an unknown name is an
    error. ``root`` is where the Spark summaries and the test figures are looked for."""
    builds = build_order(records)
    known_facts = {**facts(records, builds), **spark_facts(root),
                   **sharing_report.sharing_facts(records)}
    fills: dict[str, Callable[[], str]] = {
        "runs": lambda: runs_list(records),
        "latency_tables": lambda: "\n\n".join(
            f"**{b}**\n\n{latency_table(records, b)}" for b in builds),
        "published_latency": published_latency_table,
        "throughput_table": lambda: throughput_table(records, builds),
        "primitives_table": lambda: primitives_table(records, builds),
        "targets_table": lambda: to_markdown(compute(records)).rstrip(),
        "memory_tables": lambda: "\n\n".join(
            f"**{b}**\n\n{memory_table(records, b)}" for b in builds),
        "scaling_tables": lambda: "\n\n".join(
            f"**{b}, true 90/10**\n\n{scaling_table(records, b, '90/10-true')}\n\n"
            f"**{b}, 50/50**\n\n{scaling_table(records, b, '50/50')}" for b in builds),
        "lockfree_tables": lambda: "\n\n".join(
            f"**{b}**\n\n{lockfree_table(records, b)}" for b in builds),
        "contention_table": lambda: contention_table(records, builds),
        "sharing_table": lambda: sharing_report.sharing_table(records),
        "sharing_ablation_table": lambda: sharing_report.ablation_table(records),
        "sharing_roundlen_table": lambda: sharing_report.roundlen_table(records),
        "sharing_model_table": lambda: sharing_report.model_table(records),
        "lookup_ratio_table": lambda: lookup_ratio_table(records, builds),
        "level_width_table": lambda: level_width_table(records, builds),
        "shape_table": lambda: shape_table(records, builds),
        "spark_table": lambda: spark_table(root) if root else "_(no results root given)_",
        "correctness_table": lambda: (correctness_table(root) if root
                                      else "_(no results root given)_"),
    }

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name.startswith("fact:"):
            key = name[len("fact:"):]
            if key not in known_facts:
                raise SystemExit(f"error: the paper template asks for {{{{{name}}}}}; known "
                                 f"facts: {', '.join(sorted(known_facts))}")
            return known_facts[key]
        if name not in fills:
            raise SystemExit(f"error: the paper template asks for {{{{{name}}}}}, which "
                             f"experiments.paper does not know (known: {', '.join(fills)})")
        return fills[name]()

    return re.sub(r"\{\{\s*((?:fact:)?[a-z0-9_]+)\s*\}\}", sub, template)


def run_paper(source: Path, template: Path, out: Path) -> Path:
    records = load(source)
    if not records:
        raise SystemExit(f"error: --from {source}: no result records (*.jsonl) found there")
    out.write_text(render(template.read_text(), records, source))
    return out

