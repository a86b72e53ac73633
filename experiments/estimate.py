"""The time a run should take, said before it starts, from earlier runs that did the same work.

Each run file notes how long each of its experiments took (``seconds``, see
:meth:`experiments.env.Run.step_done`), for all of the run's algorithms together: the files
hold no time per algorithm, so an earlier time does not scale to another selection. An
experiment is estimated from the most recent earlier run of the same build and size (in the
same results folder) whose options that change that experiment's work (:data:`WORK`) were
the same. Where only runs of another selection are there, the line says so, and what
differed ("the last quick run of memory here measured 7 algorithms; this run selects 1
algorithm (cstrie): not comparable"), instead of passing their time off as an estimate.
"""

from __future__ import annotations

import json
from typing import Any

from .env import Run
from .text import count

__all__ = ["WORK", "estimate_line"]

#: What changes each experiment's work besides the run size: keys of the run file
#: (``size.<field>``: a field of its size, set by --threads, --round-ops, --write-shares).
WORK: dict[str, tuple[str, ...]] = {
    "latency": ("algorithms", "dialects", "method"),
    "throughput": ("algorithms", "dialects"),
    "memory": ("algorithms", "dialects"),
    "scaling": ("algorithms", "size.scaling_threads", "size.scaling_ops", "scaling_layout"),
    "lockfree": ("algorithms",),
    "contention": ("algorithms", "size.contention_ops"),
    "sharing": ("algorithms", "size.sharing_threads", "size.sharing_ops",
                "size.sharing_write_shares"),
    "ownership": ("algorithms",),
    "starvation": ("algorithms",),
    "level_width": ("algorithms", "size.width_levels"),
    "primitives": ("method",),
    "compare": ("algorithms", "dialect", "workload", "threads", "write_shares", "rounds", "ops"),
}

#: How a key of :data:`WORK` is named in the line (the option that sets it).
_LABELS = {"size.scaling_threads": "--threads", "size.sharing_threads": "--threads",
           "size.scaling_ops": "--round-ops", "size.contention_ops": "--round-ops",
           "size.sharing_ops": "--round-ops", "size.sharing_write_shares": "--write-shares",
           "threads": "--threads", "write_shares": "--write-shares", "rounds": "--rounds",
           "ops": "--ops", "method": "--method", "dialect": "--dialect",
           "scaling_layout": "cells", "size.width_levels": "widths"}


def _value(run: dict[str, Any], key: str, compared: bool = True) -> Any:
    """The value of ``key`` in a run file; ``compared``: lists of names in sorted order (the
    order in which they were given does not change the work)."""
    if key.startswith("size."):
        value = (run.get("size") or {}).get(key[len("size."):])
    else:
        value = run.get(key)
    if compared and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return sorted(value)
    return value


def _show(key: str, value: Any) -> str:
    if value is None:
        return f"{_LABELS.get(key, key)} unknown"
    if key == "algorithms":
        return count(len(value), "algorithm") + (f" ({', '.join(value)})"
                                                 if len(value) <= 3 else "")
    if key == "workload":
        return "files " + ", ".join(f"{k} {v[:12]}" for k, v in sorted(value.items()))
    if isinstance(value, list):
        value = ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return f"{_LABELS.get(key, key)} {value}"


def _took(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _timed(earlier: Any) -> dict[str, float]:
    """The seconds per experiment of a run file's contents; none where it is not shaped
    like a run file (edited by hand, another tool's), whose times are not to be trusted."""
    if not isinstance(earlier, dict) or not isinstance(earlier.get("size"), dict):
        return {}
    seconds = earlier.get("seconds")
    if not isinstance(seconds, dict):
        return {}
    return {exp: float(s) for exp, s in seconds.items()
            if isinstance(s, (int, float)) and not isinstance(s, bool)
            and 0 <= s < float("inf")}


def estimate_line(run: Run, todo: list[str], hint: str = "") -> str:
    """The line to print before ``run`` measures ``todo``: an estimate from the earlier
    runs of the same selection in its folder, which experiments were never run at its size,
    and which were run only with another selection (not comparable, and why)."""
    size = run.size.name
    kind = "" if size == "custom" else f"{size} "
    current = json.loads(run.manifest.read_text())
    same: dict[str, tuple[str, float]] = {}
    other: dict[str, tuple[str, str]] = {}
    for path in run.dir.glob("run-*.json"):
        try:
            earlier = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        timed = _timed(earlier)
        rid = str(earlier.get("run_id", "")) if timed else ""
        if not timed or rid == run.run_id or earlier["size"].get("name") != size:
            continue
        for exp, secs in timed.items():
            if exp not in todo:
                continue
            keys = [k for k in WORK.get(exp, ()) if _value(earlier, k) != _value(current, k)]
            if not keys and rid > same.get(exp, ("", 0.0))[0]:
                same[exp] = (rid, secs)
            elif keys and rid > other.get(exp, ("", ""))[0]:
                then = "; ".join(_show(k, _value(earlier, k, False)) for k in keys)
                now = "; ".join(_show(k, _value(current, k, False)) for k in keys)
                other[exp] = (rid, f"measured {then}; this run selects {now}")
    never = [e for e in todo if e not in same and e not in other]
    differ: dict[str, list[str]] = {}
    for exp in todo:
        if exp in other and exp not in same:
            differ.setdefault(other[exp][1], []).append(exp)
    unlike = "; ".join(f"the last {kind}run of {', '.join(exps)} here {why}: not comparable"
                       for why, exps in differ.items())
    if not same and not differ:
        return (f"no earlier {kind}run of {', '.join(todo)} under {run.dir.parent} to "
                f"estimate from{hint}")
    if not same:
        rest = f"; never run at this size here: {', '.join(never)}" if never else ""
        return f"no estimate: {unlike}{rest}"
    rest = f", plus {', '.join(never)} (never run at this size here)" if never else ""
    more = f"; {unlike}" if unlike else ""
    seconds = sum(s for _, s in same.values())
    return f"estimate: about {_took(seconds)}, as the last {kind}runs here took{rest}{more}"
