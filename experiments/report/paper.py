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
from collections.abc import Callable
from pathlib import Path

from ctrie.nodes import LEAF_MAX

from . import sharing as sharing_report
from ..config import LEAF_PEAKS
from ..records import (Record, build_order, cells, contention_growth, latest_run, load,
                       run_file)
from .summary import TARGETS, compute, to_markdown
from .tables import (LATENCY_COLUMNS, PUBLISHED_AS, PUBLISHED_LATENCY, build_tag,
                     latency_table, level_width_table, lookup_ratio_table, memory_table, pair_agreement,
                     primitives_table, published_latency_table, run_cells, shape_table,
                     throughput_table, width_writes)
from .tables_threads import contention_table, lockfree_table, scaling_table
from ..writing import write_all

__all__ = ["facts", "render", "run_paper"]


def _command(rec: Record) -> str | None:
    """The command line of a record's run, from the run file beside its records."""
    argv = run_file(rec).get("argv")
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


def facts(records: list[Record], builds: list[str]) -> dict[str, str]:
    """Single numbers the prose quotes, by name (``{{fact:name}}`` in the template)."""
    out: dict[str, str] = {}
    measured: set[int] = set()  # the level-width experiment's widths, in any build
    for b in builds:
        tag = build_tag(records, b)
        rs = run_cells(records, "contention", b)
        for a in ("cstrie", "locked_trie", "locked_trie_nocache", "inverted_bitmap",
                  "optimized_bitmap", "attribute-read"):
            for sharing in ("shared", "per-thread"):
                g = contention_growth(rs, a, sharing)
                key = f"{tag}_{a.replace('-', '_')}_{sharing.replace('-', '_')}_growth"
                out[key] = f"{g:.2f}" if g is not None else "n/a"
        c = cells(rs, algorithm="cstrie", workload="shared", threads=2)
        out[f"{tag}_cstrie_shared_parallelism"] = (
            f"{c[-1]['params']['parallelism']['median']:.2f}" if c else "n/a")
        sc = run_cells(records, "scaling", b)
        pars = [r["params"]["parallelism"]["median"] for r in sc  # shared cells, not /own
                if "parallelism" in r.get("params", {}) and r["threads"] > 1
                and not r["workload"].endswith("/own")]
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
        prim = {r["algorithm"]: r["median"] for r in run_cells(records, "primitives", b)}
        for name in ("atomicref_get", "atomicref_cas_success", "lock_acquire_release",
                     "rwlock_read", "rwlock_write", "atomics_load", "atomics_cas"):
            out[f"{tag}_ns_{name}"] = f"{prim[name]:,.0f}" if name in prim else "n/a"
        # lock-free vs locked at the largest 1:3 round: LockedTrie time / CS-trie time
        lf = run_cells(records, "lockfree", b, workload="1:3")
        top = max((r["threads"] for r in lf), default=None)
        t = {r["algorithm"]: r["median"] for r in lf if r["threads"] == top}
        out[f"{tag}_lockfree_13_workers"] = str(top) if top else "n/a"
        for a in ("locked_trie", "locked_trie_nocache"):
            out[f"{tag}_lockfree_13_{a}_over_cstrie"] = (
                f"{t[a] / t['cstrie']:.2f}" if a in t and "cstrie" in t else "n/a")
        # memory: plain inverted bitmap / optimized bitmap per subscription, 1,000 subs
        mem = {r["algorithm"]: r["median"] for r in run_cells(
            records, "memory", b, workload="3-digit/digits", dialect="nats",
            params__subscriptions=1000)}
        out[f"{tag}_inverted_over_optimized_memory"] = (
            f"{mem['inverted_bitmap'] / mem['optimized_bitmap']:.2f}"
            if "inverted_bitmap" in mem and "optimized_bitmap" in mem else "n/a")
        # level width: CS-trie / LockedTrie write cost at the narrowest, widest and worst
        # levels
        lw = width_writes(records, b)
        measured.update(w for _, w in lw)
        both = sorted(w for a, w in lw if a == "cstrie" and ("locked_trie_nocache", w) in lw
                      and lw[("locked_trie_nocache", w)]["median"])
        ratio = {w: lw[("cstrie", w)]["median"] / lw[("locked_trie_nocache", w)]["median"]
                 for w in both}
        # (The worst width need not be the widest: the CS-trie's cost is a sawtooth over
        # the width, see experiments.config.LEAF_PEAKS.)
        for end, w in (("narrowest", both[0] if both else None),
                       ("widest", both[-1] if both else None),
                       ("worst", max(both, key=ratio.__getitem__) if both else None)):
            out[f"{tag}_width_{end}"] = f"{w:,}" if w is not None else "n/a"
            out[f"{tag}_width_write_ratio_{end}"] = f"{ratio[w]:.2f}" if w is not None else "n/a"
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
        tag = build_tag(records, b)
        lat = run_cells(records, "latency", b)
        for op, st in LATENCY_COLUMNS:
            k = LATENCY_COLUMNS.index((op, st))
            ours = {r["algorithm"]: r["median"] for r in lat
                    if r["dialect"] == "nats" and r["algorithm"] in PUBLISHED_AS
                    and r["workload"] == f"{op}/{st}/faithful"}
            theirs = {a: PUBLISHED_LATENCY[g][k] for a, g in PUBLISHED_AS.items()}
            agree, total, _ = pair_agreement(ours, theirs, True)
            out[f"{tag}_shape_{op}_{st}"] = f"{agree} of {total}" if total else "n/a"
    for row in compute(records):
        if row.get("value") is not None:
            tag = build_tag(records, row["build"])
            out[f"{tag}_target_{row['target']}"] = f"{row['value']:.2f}"
    # The level-width experiment's peak widths (experiments.config.LEAF_PEAKS) that the
    # records hold (``measured``, gathered above): a run from before they were chosen, or
    # of a size that does not reach them, has fewer or none.
    peaks = [f"{w:,}" for w in LEAF_PEAKS if w in measured]
    out["leaf_max"] = f"{LEAF_MAX:,}"
    out["leaf_peaks"] = " and ".join(peaks) if peaks else "none"
    # A build without results still answers every fact the other build has, with "n/a",
    # so that a paper drawn from one build renders (and says what is missing).
    for target in TARGETS:
        for tag in ("gil", "ft"):
            out.setdefault(f"{tag}_target_{target.key}", "n/a")
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
        "crowd_table": lambda: level_width_table(records, builds, "crowd"),
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
                             f"experiments.report.paper does not know (known: {', '.join(fills)})")
        return fills[name]()

    return re.sub(r"\{\{\s*((?:fact:)?[a-z0-9_]+)\s*\}\}", sub, template)


def run_paper(source: Path, template: Path, out: Path) -> Path:
    records = load(source)
    if not records:
        raise SystemExit(f"error: --from {source}: no result records (*.jsonl) found there")
    write_all({out: render(template.read_text(), records, source)})
    return out
