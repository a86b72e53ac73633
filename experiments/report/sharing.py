"""Tables of the ``sharing`` experiment (markdown), from its records only.

- :func:`sharing_table`: per algorithm and write share, the shared matcher at 1 and 2
  threads (ops/s, median [quartiles]), the limit of the same code with nothing shared (one
  matcher per thread built by its reader), shared / limit, the GIL build's shared rate on
  the same threads, CPU per operation, and the CS-trie's re-walks and GCAS failures;
- :func:`ablation_table`: what each single change does to the 2-thread rate;
- :func:`roundlen_table`: how the median and its spread move with the round length.

Every figure comes from one run per build (:func:`experiments.records.latest_run`), and a
ratio is only ever taken between cells of one run.
"""

from __future__ import annotations

import statistics
from typing import Any

from ..records import Record, build_order, cells, latest_run
from ..registry import ALGORITHMS, LABELS, lock_note

__all__ = ["ablation_table", "model_table", "roundlen_table", "sharing_facts", "sharing_table"]


def _runs(records: list[Record]) -> list[tuple[str, list[Record]]]:
    out = []
    for b in build_order(records):
        rid = latest_run(records, "sharing", b)
        if rid:
            out.append((b, cells(records, experiment="sharing", build=b, run_id=rid)))
    return out


def _ft(rs: list[Record]) -> bool:
    r = rs[0]
    return bool(r.get("free_threaded_build")) and not r.get("gil_enabled", True)


def _build_label(rs: list[Record]) -> str:
    r = rs[0]
    return f"Python {r.get('python')} ({'free-threaded' if _ft(rs) else 'GIL'})"


def _cell(rs: list[Record], algorithm: str, workload: str, threads: int) -> Record | None:
    found = [r for r in rs if r["algorithm"] == algorithm and r["workload"] == workload
             and r["threads"] == threads]
    return found[-1] if found else None


def _k(x: float) -> str:
    return f"{x / 1e3:,.0f}k" if x >= 1e4 else f"{x / 1e3:,.1f}k"


def _rate(r: Record | None) -> str:
    if r is None:
        return "–"
    s = r["params"]["ops_per_s"]
    hits = r["params"].get("cache_hit_rate")
    return f"{_k(s['median'])} [{_k(s['q1'])}–{_k(s['q3'])}]" + (
        f", {hits:.0%} cache hits" if hits is not None else "")


def _ratio(a: Record | None, b: Record | None) -> str:
    if a is None or b is None:
        return "–"
    return f"{a['median'] / b['median']:.2f}"


def _over_limit(a: Record | None, limit: Record | None) -> str:
    """``a`` over the limit: the median of the per-round ratios when the two ran their
    rounds interleaved (``params.over_limit_by_round``), else the ratio of medians."""
    if a is None or limit is None:
        return "–"
    paired = a["params"].get("over_limit_by_round")
    if paired:
        return f"{statistics.median(paired):.2f}"
    return _ratio(a, limit)


def _shares(rs: list[Record]) -> list[float]:
    return sorted({r["params"]["write_share"] for r in rs if r["params"].get("mode") == "shared"
                   and r["workload"].endswith("gc-on")})


def sharing_table(records: list[Record]) -> str:
    """Shared vs the owner-built limit, both thread counts, per write share and build."""
    runs = _runs(records)
    if not runs:
        return "_No sharing results._"
    gil = next((rs for b, rs in runs if not _ft(rs)), None)
    lines = ["| build | algorithm | writes | shared, 1 thread | shared, 2 threads | "
             "own, 2 threads | shared / own (2 thr) | 2 thr / 1 thr | GIL build, shared 2 thr "
             "| CPU µs/op shared / own (2 thr) | re-walks, GCAS failures per 1k ops |",
             "|---" * 11 + "|"]
    for _, rs in runs:
        for a in [x for x in ALGORITHMS if any(r["algorithm"] == x for r in rs)]:
            for p in _shares(rs):
                w = f"w{round(p * 100)}"
                s1 = _cell(rs, a, f"shared/{w}/gc-on", 1)
                s2 = _cell(rs, a, f"shared/{w}/gc-on", 2)
                o2 = _cell(rs, a, f"per-thread-own/{w}/gc-on", 2)
                if s1 is None and s2 is None:
                    continue
                g2 = _cell(gil, a, f"shared/{w}/gc-on", 2) if gil is not None and gil is not rs else None
                cpu = "–"
                if s2 is not None and o2 is not None:
                    cpu = (f"{s2['params']['cpu_per_op_us']['median']:.2f} / "
                           f"{o2['params']['cpu_per_op_us']['median']:.2f}")
                ev = "–"
                if s2 is not None and "events_per_op" in s2["params"]:
                    e = s2["params"]["events_per_op"]
                    ev = f"{e['rewalk'] * 1e3:.2f}, {e['gcas_fail'] * 1e3:.2f}"
                lines.append(
                    f"| {_build_label(rs)} | {LABELS.get(a, a)} | {p:.0%} | {_rate(s1)} | "
                    f"{_rate(s2)} | {_rate(o2)} | {_over_limit(s2, o2)} | {_ratio(s2, s1)} | "
                    f"{_rate(g2) if g2 is not None else '–'} | {cpu} | {ev} |")
    lines.append("")
    lines.append("Operations per second, all threads together: median [quartiles] over rounds. "
                 "*own*: one matcher per thread, built by the thread that reads it (nothing "
                 "shared: the limit of the same code here). shared / own: the median of the "
                 "round-by-round ratios (the two ran their rounds interleaved); other ratios "
                 "are of medians within one run."
                 + lock_note(r["algorithm"] for _, rs in runs for r in rs))
    return "\n".join(lines)


ABLATION_LABELS = {
    "shared/{w}/gc-on": "shared (built by the main thread)",
    "shared-exited/{w}/gc-on": "shared, built by a thread that has exited",
    "shared-topics/{w}/gc-on": "shared, and the same topic strings in every thread",
    "shared-handle/{w}/gc-on": "shared, called through a ThreadHandle per thread",
    "shared/{w}/gc-off": "shared, gc off during rounds",
    "per-thread/{w}/gc-on": "one per thread, all built by the main thread",
    "per-thread-own/{w}/gc-off": "one per thread built by its reader, gc off",
    "per-thread-own/{w}/gc-on": "one per thread built by its reader (the limit)",
}


def ablation_table(records: list[Record]) -> str:
    """Each ablation's 2-thread rate and its fraction of the owner-built limit."""
    runs = _runs(records)
    lines = ["| build | algorithm | writes | configuration | 2 threads, ops/s | / limit | "
             "CPU µs/op | 2 thr / 1 thr |", "|---" * 8 + "|"]
    rows = 0
    for _, rs in runs:
        for a in [x for x in ALGORITHMS if any(r["algorithm"] == x for r in rs)]:
            for p in sorted({r["params"]["write_share"] for r in rs
                             if r["params"].get("mode") == "shared-exited"}):
                w = f"w{round(p * 100)}"
                limit = _cell(rs, a, f"per-thread-own/{w}/gc-on", 2)
                for pattern, label in ABLATION_LABELS.items():
                    wl = pattern.format(w=w)
                    c2, c1 = _cell(rs, a, wl, 2), _cell(rs, a, wl, 1)
                    if c2 is None:
                        continue
                    rows += 1
                    lines.append(
                        f"| {_build_label(rs)} | {LABELS.get(a, a)} | {p:.0%} | {label} | "
                        f"{_rate(c2)} | {_over_limit(c2, limit)} | "
                        f"{c2['params']['cpu_per_op_us']['median']:.2f} | {_ratio(c2, c1)} |")
    if not rows:
        return "_No sharing ablations._"
    lines.append("")
    lines.append("One change at a time against the shared matcher; *limit*: one matcher per "
                 "thread built by its reader, gc on, same run.")
    return "\n".join(lines)


def roundlen_table(records: list[Record]) -> str:
    """Median and quartiles of the 2-thread rate at each round length."""
    runs = _runs(records)
    lines = ["| build | algorithm | configuration | operations per thread per round | "
             "2 threads, ops/s | spread (q3 − q1) / median |", "|---" * 6 + "|"]
    rows = 0
    for _, rs in runs:
        rl = [r for r in rs if r["workload"].startswith("roundlen/") and r["threads"] == 2]
        for r in sorted(rl, key=lambda r: (ALGORITHMS.index(r["algorithm"])
                                           if r["algorithm"] in ALGORITHMS else 99,
                                           r["params"]["mode"], r["params"]["ops_per_worker"])):
            s = r["params"]["ops_per_s"]
            rows += 1
            lines.append(f"| {_build_label(rs)} | {LABELS.get(r['algorithm'], r['algorithm'])} | "
                         f"{r['params']['mode']}, {r['params']['write_share']:.0%} writes | "
                         f"{r['params']['ops_per_worker']:,} | {_rate(r)} | "
                         f"{(s['q3'] - s['q1']) / s['median']:.2f} |")
    if not rows:
        return "_No round-length sweep._"
    return "\n".join(lines)


def sharing_facts(records: list[Record]) -> dict[str, Any]:
    """Single numbers for the prose: ``<ft|gil>_sharing_<algorithm>_w<p>_shared_over_own``
    and ``..._2v1`` (2 threads / 1 thread, shared)."""
    out: dict[str, Any] = {}
    for _, rs in _runs(records):
        tag = "ft" if _ft(rs) else "gil"
        for a in ("cstrie", "locked_trie", "locked_trie_nocache"):
            for p in _shares(rs):
                w = f"w{round(p * 100)}"
                s1 = _cell(rs, a, f"shared/{w}/gc-on", 1)
                s2 = _cell(rs, a, f"shared/{w}/gc-on", 2)
                o2 = _cell(rs, a, f"per-thread-own/{w}/gc-on", 2)
                out[f"{tag}_sharing_{a}_{w}_shared_over_own"] = _over_limit(s2, o2)
                out[f"{tag}_sharing_{a}_{w}_2v1"] = _ratio(s2, s1)
    return out


#: Thread counts the model extrapolates to.
MODEL_THREADS = (2, 4, 8, 16)


def _model(c1: float, c2: float, kind: str, t: int) -> float:
    """Modelled ops/s at ``t`` threads from CPU µs per operation at 1 (``c1``) and 2
    (``c2``) threads of a shared matcher (see :func:`model_table`)."""
    grow = max(c2 - c1, 0.0)
    if kind == "replicated":
        return t / (c1 + grow * (t - 1)) * 1e6
    cpu = c1 + grow * 2 * (1 - 1 / t)
    rate = t / cpu * 1e6
    if kind == "locked":
        rate = min(rate, 1e6 / c1)
    return rate


def model_table(records: list[Record]) -> str:
    """A model, not a measurement: throughput at 4, 8 and 16 cores extrapolated from the
    CPU cost per operation measured at 1 and 2 threads on one shared matcher.

    - lock-free, shared (CS-trie): each operation touches shared cache lines; with ``T``
      cores another core holds a line with probability ``1 - 1/T``, so the 2-thread extra
      CPU per operation (``c2 - c1``, held at probability 1/2) grows to
      ``2 (c2 - c1)(1 - 1/T)``; rate = ``T / cpu``;
    - locked: the same, capped at ``1 / c1`` (the lock admits one operation at a time and
      covers nearly all of one);
    - replicated: every write is applied by every replica, so the extra CPU per operation
      grows linearly: ``c1 + (c2 - c1)(T - 1)``.

    Free-threaded builds only: with the GIL, threads take turns. It ignores the machine's
    own limits (memory bandwidth, a single hot line's transfer
    rate, SMT) and so is an upper bound for the lock-free and replicated rows."""
    runs = _runs(records)
    lines = ["| build | algorithm | writes | measured 1 / 2 threads | "
             + " | ".join(f"model, {t} threads" for t in MODEL_THREADS) + " |",
             "|---" * (4 + len(MODEL_THREADS)) + "|"]
    kinds = {"cstrie": "lock-free", "cstrie_replicated": "replicated",
             "locked_trie": "locked", "locked_trie_nocache": "locked"}
    rows = 0
    for _, rs in runs:
        if not _ft(rs):
            continue  # with the GIL, threads take turns: nothing to extrapolate
        for a in [x for x in ALGORITHMS if x in kinds]:
            for p in _shares(rs):
                w = f"w{round(p * 100)}"
                s1 = _cell(rs, a, f"shared/{w}/gc-on", 1)
                s2 = _cell(rs, a, f"shared/{w}/gc-on", 2)
                if s1 is None or s2 is None:
                    continue
                c1 = s1["params"]["cpu_per_op_us"]["median"]
                c2 = s2["params"]["cpu_per_op_us"]["median"]
                rows += 1
                lines.append(f"| {_build_label(rs)} | {LABELS.get(a, a)} | {p:.0%} | "
                             f"{_k(s1['median'])} / {_k(s2['median'])} | "
                             + " | ".join(_k(_model(c1, c2, kinds[a], t)) for t in MODEL_THREADS)
                             + " |")
    if not rows:
        return "_No sharing results to model._"
    lines.append("")
    lines.append("**A model, not a measurement** (`experiments/report/sharing.py`, "
                 "`model_table`): ops/s extrapolated from the CPU µs per operation measured at "
                 "1 and 2 threads; the 2-thread column is the model's own fit, beside the "
                 "measured rate.")
    return "\n".join(lines)
