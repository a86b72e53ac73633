"""What ``route``'s ``summary.json`` records beside its counts: the stages' seconds (and the
``[route k/n]`` lines), the build (versions, commit), the load average, the fanout figures,
the routing tasks' figures and matcher builds, and the single-thread lookup rate."""

from __future__ import annotations

import gc
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["Stages", "build_info", "fanout_figures", "inprocess_rate", "jvm_cpu_seconds",
           "load_average", "now", "task_figures"]


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def build_info() -> dict[str, Any]:
    import pyarrow
    import pyspark

    try:
        from importlib.metadata import version

        package_version = version("cstrie")
    except Exception:  # noqa: BLE001 - not installed
        package_version = "unknown"
    try:
        commit = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "rev-parse",
                                 "HEAD"], capture_output=True, text=True, timeout=10,
                                check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    try:
        import pandas

        pandas_version = pandas.__version__
    except ImportError:
        pandas_version = None
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "gil_enabled": bool(getattr(sys, "_is_gil_enabled", lambda: True)()),
        "pyspark_version": pyspark.__version__,
        "pyarrow_version": pyarrow.__version__,
        "pandas_version": pandas_version,
        "package_version": package_version,
        "git_commit": commit,
    }


def load_average() -> float | None:
    """The machine's 1-minute load average (other work competing for the cores)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def jvm_cpu_seconds(spark: Any) -> float | None:
    """CPU seconds the driver's JVM has used so far (Linux ``/proc``; None elsewhere). In
    local mode that JVM is also the executor: it reads, shuffles, explodes and writes."""
    try:
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except Exception:  # noqa: BLE001 - not Linux, a JVM elsewhere: not measured
        return None


def _percentile(hist: dict[int, int], q: float) -> int:
    total = sum(hist.values())
    if not total:
        return 0
    rank = q * (total - 1)
    seen = 0
    for fan in sorted(hist):
        seen += hist[fan]
        if seen > rank:
            return fan
    return max(hist)


def fanout_figures(hist: dict[int, int]) -> dict[str, Any]:
    total = sum(hist.values())
    deliveries = sum(f * c for f, c in hist.items())
    return {
        "messages": total,
        "mean": deliveries / total if total else 0.0,
        "max": max(hist) if hist else 0,
        "p50": _percentile(hist, 0.50),
        "p90": _percentile(hist, 0.90),
        "p99": _percentile(hist, 0.99),
        "zero_fraction": hist.get(0, 0) / total if total else 0.0,
    }


def _spread(values: list[float], digits: int = 3) -> dict[str, Any]:
    """min, median, max (and the max over the median) of ``values``."""
    if not values:
        return {"min": None, "median": None, "max": None, "max_over_median": None}
    v = sorted(values)
    mid = len(v) // 2
    median = v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2
    return {"min": round(v[0], digits), "median": round(median, digits),
            "max": round(v[-1], digits),
            "max_over_median": round(v[-1] / median, 3) if median else None}


def task_figures(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary's ``matcher_builds`` and ``tasks`` sections from the routing tasks'
    reports (workercache.report_task): one per task attempt that finished."""
    builds = [s for s in stats if s["built"]]
    timed = [s for s in stats if "phases" in s]
    return {
        "matcher_builds": {
            "tasks": len(stats),
            "builds": len(builds),
            "reused": len(stats) - len(builds),
            "worker_processes": len({(s.get("python"), s["pid"]) for s in stats}),
            "build_seconds": _spread([s["build_seconds"] for s in builds]),
            "rss_build_mb": _spread([s["rss_build_mb"] for s in builds], 1),
            "rss_mb": _spread([s["rss_mb"] for s in stats], 1),
            "how": "each Python worker keeps the matcher it built for its next tasks "
                   "(spark.python.worker.reuse); build_seconds and rss_build_mb (resident "
                   "memory the build added, the broadcast subscriptions included) of the "
                   "tasks that built; rss_mb: the worker's resident memory after getting "
                   "its matcher, per task",
        },
        "tasks": {
            "count": len(stats),
            "messages": _spread([s["messages"] for s in stats], 0),
            "seconds": _spread([s["seconds"] for s in stats]),
            "phase_seconds": {k: round(sum(s["phases"][k] for s in timed), 3)
                              for k in (timed[0]["phases"] if timed else ())},
            "python_cpu_seconds": round(sum(s["cpu_seconds"] for s in timed), 3)
                                  if timed else None,
            "executors": sorted({s["python"] for s in stats}),
            "packages": sorted({s["package"] for s in stats}),
            "how": "per routing task, from its Python worker: messages routed or rejected, "
                   "seconds from its start (a build included) to its last row; "
                   "phase_seconds (--impl arrow): the tasks' wall seconds, summed, waiting for "
                   "and converting input batches (input), routing (lookup), building output "
                   "batches (arrow), handing them to the JVM, which explodes and writes them "
                   "(output); python_cpu_seconds: the Python workers' CPU seconds in these "
                   "tasks, builds included",
        },
    }


def inprocess_rate(matcher: Any, topics: list) -> float:
    """Single-thread lookups per second of ``matcher`` over ``topics`` (errors caught)."""
    from ctrie import InvalidTopicError

    lookup = matcher.lookup
    gc.collect()
    t0 = time.perf_counter()
    for t in topics:
        try:
            lookup(t)
        except (InvalidTopicError, TypeError):
            pass
    return len(topics) / (time.perf_counter() - t0)


class Stages:
    """Prints ``[route k/n] stage...`` lines and times each stage."""

    def __init__(self, total: int, log: Callable[[str], None]) -> None:
        self.total = total
        self.k = 0
        self.log = log
        self.seconds: dict[str, float] = {}
        self._name: str | None = None
        self._t0 = 0.0

    def start(self, name: str, what: str) -> None:
        self.stop()
        self.k += 1
        self._name, self._t0 = name, time.perf_counter()
        self.log(f"[route {self.k}/{self.total}] {what}")

    def stop(self) -> None:
        if self._name is not None:
            self.seconds[self._name] = round(time.perf_counter() - self._t0, 3)
            self.log(f"    {self._name}: {self.seconds[self._name]:.1f} s")
            self._name = None
