"""The target ratios, from result files only: ``python -m experiments summary --from DIR``.

Each ratio is taken between two cells of *one run* (of the build's runs that have both,
the one of the largest size, then the most recent), never across runs. A build without the
cells gets "no data". The table is printed and written, as JSON and Markdown, into the
results directory (``summary-<time>.*``, plus ``summary-latest.*`` which each summary
replaces, as it says when it does).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..records import Record, build_order, cells, load, run_rank
from ..writing import write_all

__all__ = ["README_BEGIN", "README_END", "TARGETS", "Target", "compute", "run_summary",
           "update_readme"]


@dataclass(frozen=True)
class Target:
    """One ratio: numerator cell / denominator cell, compared with ``bound``."""

    key: str
    label: str
    experiment: str
    num: dict[str, Any]
    den: dict[str, Any]
    op: str  # "<=" or ">="
    bound: float
    builds: str  # "all", "gil" (GIL enabled) or "ft" (free-threaded, GIL disabled)
    value: str = "median"  # which field: "median", or "params.<name>"


def _mem_size(n: int) -> dict[str, Any]:
    return {"params__subscriptions": n}


def _lookup(key: str, label: str, other: str, dialect: str, bound: float) -> Target:
    """A lookup-time target on every build: CS-trie / ``other``, both in ``dialect``."""
    return Target(key, label, "latency", {"algorithm": "cstrie", "dialect": dialect},
                  {"algorithm": other, "dialect": dialect}, "<=", bound, "all")


TARGETS = (
    _lookup("hot_lookup_vs_paho", "hot lookup time: CS-trie / paho MQTTMatcher (MQTT form)",
            "paho", "mqtt", 0.5),
    _lookup("hot_lookup_vs_lockedtrie", "hot lookup time: CS-trie / LockedTrie(cache=False)",
            "locked_trie_nocache", "nats", 1.3),
    # The same two bounds on the dense wildcard workload (about 9 matches per topic).
    _lookup("dense_lookup_vs_paho",
            "dense wildcard lookup time: CS-trie / paho MQTTMatcher (MQTT form)",
            "paho", "mqtt", 0.5),
    _lookup("dense_lookup_vs_lockedtrie",
            "dense wildcard lookup time: CS-trie / LockedTrie(cache=False) (MQTT form)",
            "locked_trie_nocache", "mqtt", 1.3),
    Target("throughput_vs_paho", "throughput: CS-trie / paho MQTTMatcher (MQTT form)",
           "throughput", {"algorithm": "cstrie", "dialect": "mqtt"},
           {"algorithm": "paho", "dialect": "mqtt"}, ">=", 2.0, "all"),
    Target("ft_9010_2v1", "free-threaded true 90/10: CS-trie 2 threads / 1 thread (ops/s)",
           "scaling", {"algorithm": "cstrie", "threads": 2},
           {"algorithm": "cstrie", "threads": 1}, ">=", 1.6, "ft"),
    Target("gil_9010_vs_lockedtrie",
           "GIL true 90/10, 4 threads: CS-trie / LockedTrie(cache=True) (ops/s)",
           "scaling", {"algorithm": "cstrie", "threads": 4},
           {"algorithm": "locked_trie", "threads": 4}, ">=", 1.5, "gil"),
    Target("gil_9010_vs_lockedtrie_nocache",
           "GIL true 90/10, 4 threads: CS-trie / LockedTrie(cache=False) (ops/s)",
           "scaling", {"algorithm": "cstrie", "threads": 4},
           {"algorithm": "locked_trie_nocache", "threads": 4}, ">=", 1.5, "gil"),
    Target("ft_owner_cstrie",
           "free-threaded, one thread: CS-trie built by another thread / by itself (ops/s)",
           "ownership", {"algorithm": "cstrie", "params__reader": "other"},
           {"algorithm": "cstrie", "params__reader": "builder"}, ">=", 0.8, "ft"),
    Target("ft_owner_lockedtrie",
           "free-threaded, one thread: LockedTrie(cache=False) built by another thread / "
           "by itself (ops/s)",
           "ownership", {"algorithm": "locked_trie_nocache", "params__reader": "other"},
           {"algorithm": "locked_trie_nocache", "params__reader": "builder"}, ">=", 0.8, "ft"),
    Target("memory_vs_lockedtrie",
           "memory per subscription at 100k: CS-trie / LockedTrie (3-digit workload)",
           "memory", {"algorithm": "cstrie", "dialect": "nats"},
           {"algorithm": "locked_trie", "dialect": "nats"}, "<=", 2.0, "all"),
    Target("memory_vs_lockedtrie_distinct",
           "memory per subscription at 100k: CS-trie / LockedTrie (distinct patterns)",
           "memory", {"algorithm": "cstrie", "dialect": "nats"},
           {"algorithm": "locked_trie", "dialect": "nats"}, "<=", 2.0, "all"),
)

# Fixed cell selectors per experiment (which workload a target reads).
_WORKLOAD = {
    "hot_lookup_vs_paho": "lookup/hot/faithful",
    "hot_lookup_vs_lockedtrie": "lookup/hot/faithful",
    "dense_lookup_vs_paho": "lookup/dense/distinct",
    "dense_lookup_vs_lockedtrie": "lookup/dense/distinct",
    "throughput_vs_paho": "3-digit",
    "ft_9010_2v1": "90/10-true",
    "gil_9010_vs_lockedtrie": "90/10-true",
    "gil_9010_vs_lockedtrie_nocache": "90/10-true",
    "ft_owner_cstrie": "inbox",
    "ft_owner_lockedtrie": "inbox",
    "memory_vs_lockedtrie": "3-digit/digits",
    "memory_vs_lockedtrie_distinct": "3-digit/distinct",
}
_MEMORY_N = 100_000


def _kind(rec: Record) -> str:
    if rec.get("free_threaded_build") and not rec.get("gil_enabled", True):
        return "ft"
    return "gil" if not rec.get("free_threaded_build") else "ft-gil"


def _verdict(value: float, op: str, bound: float) -> tuple[bool, str]:
    if op == "<=":
        met = value <= bound
        pct = (1 - value / bound) if met else (value / bound - 1)
    else:
        met = value >= bound
        pct = (value / bound - 1) if met else (1 - value / bound)
    return met, f"{'met' if met else 'missed'} by {pct * 100:.0f}%"


def _evaluate(target: Target, recs: list[Record], build: str) -> dict[str, Any]:
    row: dict[str, Any] = {"target": target.key, "label": target.label, "build": build,
                           "bound": f"{target.op} {target.bound:g}"}
    workload = _WORKLOAD[target.key]
    base = cells(recs, experiment=target.experiment, build=build, workload=workload)
    # The largest run size first (full, quick, smoke), then the most recent run.
    runs = [rid for _, rid in sorted({run_rank(r) for r in base}, reverse=True)]
    for run_id in runs:
        in_run = [r for r in base if r["run_id"] == run_id]
        num_c = cells(in_run, **target.num)
        den_c = cells(in_run, **target.den)
        note = None
        if target.experiment == "memory":
            sizes = ({r["params"]["subscriptions"] for r in num_c}
                     & {r["params"]["subscriptions"] for r in den_c})
            if not sizes:
                continue
            n = _MEMORY_N if _MEMORY_N in sizes else max(sizes)
            if n != _MEMORY_N:
                note = f"at {n:,} subscriptions, the largest measured; the target is at 100,000"
            num_c = cells(num_c, **_mem_size(n))
            den_c = cells(den_c, **_mem_size(n))
        if not num_c or not den_c:
            continue
        num, den = num_c[-1], den_c[-1]
        value = num["median"] / den["median"]
        met, margin = _verdict(value, target.op, target.bound)
        row.update(status="met" if met else "missed", value=round(value, 3), margin=margin,
                   run_id=run_id, size=num.get("size"), note=note,
                   numerator={"algorithm": num["algorithm"], "median": num["median"],
                              "unit": num["unit"], "threads": num["threads"]},
                   denominator={"algorithm": den["algorithm"], "median": den["median"],
                                "unit": den["unit"], "threads": den["threads"]})
        return row
    row.update(status="no data", value=None, margin="", run_id=None, size=None,
               note=f"no run of {build} has both cells")
    return row


def compute(records: list[Record]) -> list[dict[str, Any]]:
    """One row per (target, build it applies to); "no data" rows where cells are absent."""
    builds = build_order(records)
    kinds = {b: _kind(next(r for r in records if r["build"] == b)) for b in builds}
    rows = []
    for target in TARGETS:
        wanted = [b for b in builds if target.builds == "all" or kinds[b] == target.builds]
        if not wanted:
            which = {"ft": "free-threaded (GIL disabled)", "gil": "GIL"}.get(target.builds,
                                                                              "any")
            rows.append({"target": target.key, "label": target.label, "build": "-",
                         "bound": f"{target.op} {target.bound:g}", "status": "no data",
                         "value": None, "margin": "", "run_id": None, "size": None,
                         "note": f"no {which} build's results"})
            continue
        for build in wanted:
            rows.append(_evaluate(target, records, build))
    return rows


def to_markdown(rows: list[dict[str, Any]]) -> str:
    """The table as Markdown."""
    lines = ["| target | build | value | bound | verdict | run (size) |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        value = "-" if r["value"] is None else f"{r['value']:.3g}"
        verdict = r["status"] if r["status"] == "no data" else r["margin"]
        if r.get("note") and r["status"] != "no data":
            verdict += f" ({r['note']})"
        elif r["status"] == "no data" and r.get("note"):
            verdict += f": {r['note']}"
        run = f"{r['run_id']} ({r['size']})" if r.get("run_id") else "-"
        lines.append(f"| {r['label']} | {r['build']} | {value} | {r['bound']} | {verdict} "
                     f"| {run} |")
    return "\n".join(lines) + "\n"


def run_summary(root: Path, printer: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Compute, print and write the table; return its rows."""
    records = load(root)
    if not records:
        raise SystemExit(f"error: --from {root}: no result records (*.jsonl) found there")
    rows = compute(records)
    md = to_markdown(rows)
    printer(md)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    payload = {"generated": stamp, "from": str(root), "rows": rows,
               "targets": [asdict(t) for t in TARGETS]}
    files: dict[Path, str] = {}
    written = []
    for stem in (f"summary-{stamp}", "summary-latest"):
        for suffix, text in ((".json", json.dumps(payload, indent=2) + "\n"), (".md", md)):
            path = Path(root) / f"{stem}{suffix}"
            replaced = path.exists()
            if replaced and stem != "summary-latest":
                continue  # never overwrite a timestamped table
            files[path] = text
            written.append(f"{path}{' (replaced)' if replaced else ''}")
    write_all(files)  # all of them or, when one cannot be written, none
    for w in written:
        printer(f"wrote {w}")
    return rows


README_BEGIN = "<!-- results:begin (generated by cstrie-experiments publish) -->"
README_END = "<!-- results:end -->"


def update_readme(path: Path, rows: list[dict[str, Any]], source: Path) -> None:
    """Replace the block between the README markers with the table of ``rows`` and the runs
    it came from, so that no measured number in the README is typed by hand."""
    text = Path(path).read_text()
    if README_BEGIN not in text or README_END not in text:
        raise SystemExit(f"error: {path}: the markers {README_BEGIN!r} and "
                         f"{README_END!r} are not both in it")
    records = load(source)
    runs = {r.get("run_id"): r for r in records if r.get("run_id")}
    used = sorted({row["run_id"] for row in rows if row.get("run_id")})
    lines = [README_BEGIN, "", to_markdown(rows).rstrip(), ""]
    for rid in used:
        r = runs.get(rid, {})
        lines.append(f"- run `{rid}` ({r.get('size')}): Python {r.get('python')}, "
                     f"GIL {'on' if r.get('gil_enabled', True) else 'off'}, "
                     f"{r.get('cpu_count')} CPUs, commit {str(r.get('git_commit'))[:10]}"
                     f"{' (dirty)' if r.get('git_dirty') else ''}, seed {r.get('seed')}")
    lines += ["", README_END]
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    write_all({Path(path): head + "\n".join(lines) + tail})
