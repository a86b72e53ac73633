"""The paper's tables, filled from result files: ``python -m experiments paper --from DIR``.

``paper/paper.template.md`` holds the prose and ``{{name}}`` placeholders; this module fills
each placeholder with a table or list computed from the records under ``DIR`` (the largest,
then the most recent run of each experiment on each build) and writes ``paper/paper.md``.
No measured number is typed into the template. The published Go figures beside our tables
are the anchors of ``methodology.md`` (the articles' own numbers, not ours).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from .records import Record, build_order, cells, latest_run, load
from .registry import LABELS
from .summary import compute, to_markdown

__all__ = ["PUBLISHED_LATENCY", "PUBLISHED_THROUGHPUT", "render", "run_paper"]

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


def _run_cells(records: list[Record], experiment: str, build: str) -> list[Record]:
    rid = latest_run(records, experiment, build)
    return cells(records, experiment=experiment, build=build, run_id=rid) if rid else []


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
    figures, each with its ratio to the CS-trie."""
    per_build = {}
    for b in builds:
        recs = _run_cells(records, "throughput", b)
        per_build[b] = {(r["algorithm"], r["dialect"]): r["median"] for r in recs}
    algos = sorted({(a, d) for t in per_build.values() for a, d in t
                    if d == "nats" or a == "paho"}, key=lambda ad: (ad[0] != REFERENCE, ad))
    lines = ["| algorithm | " + " | ".join(f"{b} msg/s" for b in builds) + " | Go (published) |",
             "|---" * (len(builds) + 2) + "|"]
    for a, d in algos:
        row = [_cell(per_build[b].get((a, d)), per_build[b].get((REFERENCE, d)))
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


def runs_list(records: list[Record]) -> str:
    runs: dict[str, Record] = {}
    for r in records:
        runs.setdefault(r.get("run_id", "?"), r)
    out = []
    for rid, r in sorted(runs.items()):
        out.append(f"- `{rid}`: {r.get('size')} size, Python {r.get('python')} "
                   f"({'GIL on' if r.get('gil_enabled', True) else 'GIL off'}), "
                   f"{r.get('cpu_count')} CPUs, commit {str(r.get('git_commit'))[:10]}"
                   f"{' (dirty)' if r.get('git_dirty') else ''}, seed {r.get('seed')}")
    return "\n".join(out)


def render(template: str, records: list[Record]) -> str:
    """Fill every ``{{name}}`` of ``template``; an unknown name is an error."""
    builds = build_order(records)
    fills: dict[str, Callable[[], str]] = {
        "runs": lambda: runs_list(records),
        "latency_tables": lambda: "\n\n".join(
            f"**{b}**\n\n{latency_table(records, b)}" for b in builds),
        "published_latency": published_latency_table,
        "throughput_table": lambda: throughput_table(records, builds),
        "primitives_table": lambda: primitives_table(records, builds),
        "targets_table": lambda: to_markdown(compute(records)).rstrip(),
    }

    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in fills:
            raise SystemExit(f"error: the paper template asks for {{{{{name}}}}}, which "
                             f"experiments.paper does not know (known: {', '.join(fills)})")
        return fills[name]()

    return re.sub(r"\{\{\s*([a-z_]+)\s*\}\}", sub, template)


def run_paper(source: Path, template: Path, out: Path) -> Path:
    records = load(source)
    if not records:
        raise SystemExit(f"error: --from {source}: no result records (*.jsonl) found there")
    out.write_text(render(template.read_text(), records))
    return out

