"""The paper's tables of the single-thread experiments (latency, lookup ratios, throughput,
primitives, memory, level width, the comparison of shapes with the published figures), and
the formatting every table shares. Each function takes records and returns Markdown; the
published Go figures beside ours are the anchors of ``methodology.md`` (the articles' own
numbers, not ours).
"""

from __future__ import annotations

from typing import Any

from ..records import Record, cells, latest_run
from ..registry import LABELS
from .summary import TARGETS, compute

__all__ = ["LATENCY_COLUMNS", "LOOKUP_WORKLOADS", "PUBLISHED_AS", "PUBLISHED_LABELS",
           "PUBLISHED_LATENCY", "PUBLISHED_THROUGHPUT", "REFERENCE", "build_label", "build_tag",
           "latency_table", "level_width_table", "lookup_ratio_table", "memory_table",
           "pair_agreement",
           "primitives_table", "published_latency_table", "ratio_cell", "row_label", "run_cells",
           "shape_table", "throughput_table", "width_writes"]


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


def row_label(algorithm: str, dialect: str | None = None) -> str:
    name = LABELS.get(algorithm, algorithm)
    return f"{name} [{dialect}]" if dialect and algorithm == "paho" else name


def _num(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.3g}"


def _ratio(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:.2g}x"


def ratio_cell(value: float | None, ref: float | None) -> str:
    if value is None:
        return "–"
    if ref:
        return f"{_num(value)} ({_ratio(value / ref)})"
    return _num(value)


def run_cells(records: list[Record], experiment: str, build: str, **match: Any
               ) -> list[Record]:
    """Measured cells of ``experiment`` on ``build`` from the run the paper draws it from
    (:func:`latest_run`), narrowed by ``match`` as in :func:`cells`."""
    rid = latest_run(records, experiment, build)
    return (cells(records, experiment=experiment, build=build, run_id=rid, **match)
            if rid else [])


def latency_table(records: list[Record], build: str) -> str:
    """Faithful cold/hot latency per operation, ns, with each cell's ratio to the CS-trie's
    in the same column (NATS form; paho on the MQTT form)."""
    recs = run_cells(records, "latency", build)
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
            vals.append(ratio_cell(by.get((algorithm, dialect, w)), ref))
        lines.append(f"| {row_label(algorithm, dialect)} | " + " | ".join(vals) + " |")
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
    and the dense workload: the summary's rows (:func:`experiments.report.summary.compute`)."""
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
            lines.append(f"| {name} | {build_label(records, b)} | {ratio(locked)} | "
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
                     + " | ".join(ratio_cell(v, r) for v, r in zip(vals, ref)) + " |")
    return "\n".join(lines)


def throughput_table(records: list[Record], builds: list[str]) -> str:
    """Messages per second on the 3-digit workload per build, beside the published Go
    figures, each with its ratio to the CS-trie, and a result cache's hit rate beside it."""
    per_build = {}
    hit_rates: dict = {}
    for b in builds:
        recs = run_cells(records, "throughput", b)
        per_build[b] = {(r["algorithm"], r["dialect"]): r["median"] for r in recs}
        for r in recs:
            if "cache_hit_rate" in r["params"]:
                hit_rates[(b, r["algorithm"], r["dialect"])] = r["params"]["cache_hit_rate"]
    algos = sorted({(a, d) for t in per_build.values() for a, d in t
                    if d == "nats" or a == "paho"}, key=lambda ad: (ad[0] != REFERENCE, ad))
    lines = ["| algorithm | " + " | ".join(f"{b} msg/s" for b in builds) + " | Go (published) |",
             "|---" * (len(builds) + 2) + "|"]
    for a, d in algos:
        row = [ratio_cell(per_build[b].get((a, d)), per_build[b].get((REFERENCE, d)))
               + (f", {hit_rates[(b, a, d)]:.0%} hits" if (b, a, d) in hit_rates else "")
               for b in builds]
        # The published trie had no cache: it sits beside LockedTrie without its cache.
        go = PUBLISHED_THROUGHPUT.get("locked_trie" if a == "locked_trie_nocache" else a)
        if a == "locked_trie":
            go = None
        row.append(ratio_cell(go, PUBLISHED_THROUGHPUT[REFERENCE]) if go else "–")
        lines.append(f"| {row_label(a, d)} | " + " | ".join(row) + " |")
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


def build_label(records: list[Record], build: str) -> str:
    r = next(x for x in records if x["build"] == build)
    kind = ("free-threaded, GIL off" if r.get("free_threaded_build") and not r.get("gil_enabled")
            else "GIL")
    return f"Python {r.get('python')} ({kind})"


def memory_table(records: list[Record], build: str) -> str:
    """Bytes held per subscription at every measured size, both workload variants, with the
    ratio to the CS-trie at the same size."""
    recs = run_cells(records, "memory", build)
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
        row = [ratio_cell(per.get((a, v, n)), per.get((REFERENCE, v, n))) for v, n in cols]
        lines.append(f"| {row_label(a)} | " + " | ".join(row) + " |")
    skipped = sorted({f"{row_label(r['algorithm'])} at {r['params'].get('subscriptions', '?'):,}"
                      for r in records if r["experiment"] == "memory" and r["build"] == build
                      and r.get("run_id") == recs[0]["run_id"] and r.get("status") != "ok"})
    lines.append("")
    lines.append("Bytes per subscription (tracemalloc), median (ratio to the CS-trie at the "
                 "same size); *digits*: the 3-digit workload (patterns repeat), *distinct*: a "
                 "wider alphabet. " + (f"Not measured: {'; '.join(skipped)}." if skipped
                                      else ""))
    return "\n".join(lines)


#: The algorithms the articles measured, in our names (the published trie had no cache).
PUBLISHED_AS = {"naive": "naive", "inverted_bitmap": "inverted_bitmap",
                 "optimized_bitmap": "optimized_bitmap", "locked_trie_nocache": "locked_trie",
                 "cstrie": "cstrie"}


def pair_agreement(ours: dict[str, float], theirs: dict[str, float],
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
                flips.append(f"{row_label(better)} ahead of {row_label(worse)} (by {gap:.0%})")
    return agree, total, flips


def shape_table(records: list[Record], builds: list[str]) -> str:
    """For each published column: how many algorithm pairs our run orders as the articles."""
    lines = ["| measure | build | pairs ordered as in Go | pairs that differ here |",
             "|---|---|---|---|"]
    for b in builds:
        lat = run_cells(records, "latency", b)
        thr = run_cells(records, "throughput", b)
        for k, (op, st) in enumerate(LATENCY_COLUMNS):
            ours = {r["algorithm"]: r["median"] for r in lat
                    if r["dialect"] == "nats" and r["algorithm"] in PUBLISHED_AS
                    and r["workload"] == f"{op}/{st}/faithful"}
            theirs = {a: PUBLISHED_LATENCY[g][k] for a, g in PUBLISHED_AS.items()}
            if len(ours) > 1:
                agree, total, flips = pair_agreement(ours, theirs, True)
                lines.append(f"| {op} {st} latency | {build_label(records, b)} | "
                             f"{agree} of {total} | {'; '.join(flips) or '–'} |")
        ours = {r["algorithm"]: r["median"] for r in thr
                if r["dialect"] == "nats" and r["algorithm"] in PUBLISHED_AS}
        if len(ours) > 1:
            theirs = {a: PUBLISHED_THROUGHPUT[g] for a, g in PUBLISHED_AS.items()}
            agree, total, flips = pair_agreement(ours, theirs, False)
            lines.append(f"| throughput | {build_label(records, b)} | {agree} of {total} | "
                         f"{'; '.join(flips) or '–'} |")
    if len(lines) == 2:
        return "_No latency or throughput results._"
    lines.append("")
    lines.append("A pair is ordered as in Go when the faster of the two is the same in both "
                 "(LockedTrie without its cache stands for the published trie); a flipped "
                 "pair shows by how much the faster one leads here.")
    return "\n".join(lines)


def width_writes(records: list[Record], build: str,
                 workload: str = "write") -> dict[tuple[str, int], Record]:
    """(algorithm, width) -> the ``workload`` cell (a write under the level, by default) of
    the level-width run the paper draws from."""
    return {(r["algorithm"], r["params"]["width"]): r
            for r in run_cells(records, "level_width", build, workload=workload)}


#: The write workloads of ``level_width`` that :func:`level_width_table` draws: the first
#: column's name, and what the table says when the latest run has none.
_WRITE_TABLES = {"write": ("width", "_No level-width results._"),
                 "crowd": ("subscribers", "_No crowded-pattern results in the latest level-width "
                                          "run._")}


def level_width_table(records: list[Record], builds: list[str], workload: str = "write") -> str:
    """Microseconds per subscribe + unsubscribe at each width, CS-trie and
    LockedTrie(cache=False), and their ratio, per build: of a fresh inbox under a level of
    that many sibling inboxes (``write``), or of a fresh subscriber of a pattern with that
    many subscribers (``crowd``)."""
    first, empty = _WRITE_TABLES[workload]
    per = {b: width_writes(records, b, workload) for b in builds}
    per = {b: t for b, t in per.items() if t}
    if not per:
        return empty
    widths = sorted({w for t in per.values() for _, w in t})
    head = [first]
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


def build_tag(records: list[Record], build: str) -> str:
    """A fact's build prefix: ``ft`` for a free-threaded build with the GIL off, else ``gil``."""
    r = next(x for x in records if x["build"] == build)
    return "ft" if r.get("free_threaded_build") and not r.get("gil_enabled") else "gil"
