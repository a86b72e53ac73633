"""Reading result files back: the one format that charts, summary and tests use.

Every ``*.jsonl`` file below a results root holds one record per line (see
:meth:`experiments.env.Run.record`); latency records derived from pyperf runs are among
them, so readers need no pyperf.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .text import count

__all__ = ["build_order", "cells", "contention_growth", "latest_run", "load", "matching", "ok",
           "run_file", "run_rank"]

Record = dict[str, Any]


def load(root: Path, tally: dict[str, int] | None = None) -> list[Record]:
    """Every record of every ``*.jsonl`` file below ``root`` (bad lines are reported).

    With ``tally``, also count into it the ``files`` read, the ``unreadable_lines`` and the
    lines that are JSON but ``not_records``.
    """
    out: list[Record] = []
    counts = {"files": 0, "unreadable_lines": 0, "not_records": 0}
    for path in sorted(Path(root).rglob("*.jsonl")):
        counts["files"] += 1
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    counts["unreadable_lines"] += 1
                    continue
                if isinstance(rec, dict) and "experiment" in rec:
                    rec["_file"] = str(path)
                    out.append(rec)
                else:
                    counts["not_records"] += 1
    if counts["unreadable_lines"]:
        print(f"warning: skipped {count(counts['unreadable_lines'], 'unreadable line')} under "
              f"{root}",
              file=sys.stderr)
    if tally is not None:
        for k, v in counts.items():
            tally[k] = tally.get(k, 0) + v
    return out


def run_file(rec: Record) -> dict[str, Any]:
    """The run file (``run-<run_id>.json``) beside a loaded record's file: the command line,
    size, plan and how the run ended; ``{}`` when there is none."""
    f = rec.get("_file")
    return _read_run_file(str(Path(f).parent / f"run-{rec.get('run_id')}.json")) if f else {}


@functools.lru_cache(maxsize=256)
def _read_run_file(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def ok(rec: Record) -> bool:
    """Whether the record holds a measurement."""
    return rec.get("status") == "ok" and rec.get("median") is not None


def build_order(records: Iterable[Record]) -> list[str]:
    """The builds present, GIL builds first, then by version."""
    builds = {r["build"]: r for r in records}

    def key(b: str) -> tuple:
        r = builds[b]
        return (bool(r.get("free_threaded_build")), not r.get("gil_enabled", True), b)
    return sorted(builds, key=key)


#: Larger run sizes are preferred to smaller ones, whatever their age.
SIZE_RANK = {"full": 2, "quick": 1, "smoke": 0}


def run_rank(rec: Record) -> tuple[int, str]:
    """Sort key of a record's run: size first (full > quick > smoke), then recency."""
    return (SIZE_RANK.get(rec.get("size", ""), -1), rec["run_id"])


def latest_run(records: Iterable[Record], experiment: str, build: str) -> str | None:
    """The ``run_id`` to draw ``experiment`` on ``build`` from: the largest size measured,
    and of those the most recent run."""
    runs = {run_rank(r) for r in records
            if r["experiment"] == experiment and r["build"] == build and ok(r)}
    return max(runs)[1] if runs else None


def cells(records: Iterable[Record], **match: Any) -> list[Record]:
    """Measured records whose fields equal ``match`` (``params__x`` matches ``params['x']``)."""
    return [r for r in matching(records, **match) if ok(r)]


def matching(records: Iterable[Record], **match: Any) -> list[Record]:
    """Records, measured or not, whose fields equal ``match`` (as :func:`cells`)."""
    out = []
    for r in records:
        for key, want in match.items():
            if key.startswith("params__"):
                got = r.get("params", {}).get(key[len("params__"):])
            else:
                got = r.get(key)
            if callable(want):
                if not want(got):
                    break
            elif got != want:
                break
        else:
            out.append(r)
    return out


def one(records: Iterable[Record], pick: Callable[[list[Record]], Record] | None = None,
        **match: Any) -> Record | None:
    """The single measured record matching ``match`` (the latest if several)."""
    found = cells(records, **match)
    if not found:
        return None
    return pick(found) if pick else max(found, key=lambda r: r["timestamp"])


def contention_growth(rs: list[Record], algorithm: str, sharing: str) -> float | None:
    """CPU time per operation at 2 threads over that at 1 thread, for one sharing mode."""
    one = cells(rs, algorithm=algorithm, workload=sharing, threads=1)
    two = cells(rs, algorithm=algorithm, workload=sharing, threads=2)
    if not one or not two:
        return None
    return two[-1]["median"] / one[-1]["median"]
