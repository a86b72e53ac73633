"""The ``aggregate`` command: the harness's result records of many runs as summary tables.

Input: every ``*.jsonl`` file below each ``--from`` folder, one JSON record per line as the
harness writes them (fields ``experiment``, ``algorithm``, ``dialect``, ``workload``,
``params``, ``threads``, ``seed``, ``rounds``, ``median``, ``min``, ``max``, ``unit``,
``python``, ``gil_enabled``, ``cpu_count``, ``package_version``, ``git_commit``,
``timestamp``; others are carried along where useful). Lines that are not JSON objects
with an ``experiment`` field, and records without a ``median`` (skipped or failed cells),
are counted and left out.

A *cell* is one (experiment, workload, dialect, params, threads, unit, algorithm, build).
The *build* is the Python version plus ``gil_enabled`` (``3.13.1-gil``, ``3.13.1-nogil``).
``params`` is the canonical JSON of the record's configuration parameters only
(:data:`CONFIG_PARAMS`, or ``--params``): the harness also stores outcomes there (wall
times, bytes per subscription, refused patterns, oracle checks) and algorithm-specific
settings (``topic_space``, ``max_words``), which would otherwise split every cell by run and
keep the bitmap matchers from ever meeting their reference. Per cell, over its records (one
per run):

- ``median``: the median of the records' medians (the mean of the middle two if even);
- ``q1``, ``q3``, ``iqr``: quartiles of the records' medians (linear interpolation, numpy's
  default) and their difference; ``min`` / ``max``: the smallest ``min`` and largest ``max``
  of the records (the spread of every round of every run);
- ``ratio``: ``median`` divided by the median of the reference algorithm's cell with the same
  key and build (``--reference``, default ``CSTrie``; names match ignoring case and
  punctuation, so ``CSTrie`` finds ``cstrie``). Whether higher is better depends on ``unit``
  (msg/s: higher; seconds: lower). Empty where the reference has no such cell.

Output (``--out``): ``summary.parquet`` / ``summary.csv`` (one row per cell) and
``records.parquet`` / ``records.csv`` (the records used, flattened, with their file and
all their params as ``params_all``).
Needs pandas and pyarrow, not Spark.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..records import load

__all__ = ["CONFIG_PARAMS", "KEY", "OUTPUT_FILES", "aggregate", "load_records", "norm_name", "run_aggregate"]

#: The ``params`` keys that configure a measurement (the rest are outcomes or settings of
#: one algorithm); only these identify a cell.
CONFIG_PARAMS = ("subscriptions", "messages", "alphabet", "words", "variant", "op", "state",
                 "hot_population", "population", "ops_per_worker", "write_share")

#: The columns that identify a cell, besides the algorithm and the build.
KEY = ("experiment", "workload", "dialect", "params", "threads", "unit")

OUTPUT_FILES = ("summary.parquet", "summary.csv", "records.parquet", "records.csv")

_RECORD_COLUMNS = ("experiment", "algorithm", "dialect", "workload", "params", "threads",
                   "seed", "rounds", "median", "min", "max", "unit", "python", "gil_enabled",
                   "cpu_count", "package_version", "git_commit", "timestamp", "run_id", "size")


def norm_name(name: Any) -> str:
    """``"Locked Trie"``, ``"locked_trie"``, ``"LockedTrie"`` -> ``"lockedtrie"``."""
    return re.sub(r"[^0-9a-z]", "", str(name).lower())


def load_records(roots: Iterable[Path]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Records with a median from every ``*.jsonl`` below ``roots``, and what was skipped."""
    records: list[dict[str, Any]] = []
    skipped = {"unreadable_lines": 0, "not_records": 0, "without_median": 0, "files": 0}
    for root in roots:
        for rec in load(Path(root), tally=skipped):
            if rec.get("median") is None or (rec.get("status") not in (None, "ok")):
                skipped["without_median"] += 1
                continue
            row = {k: rec.get(k) for k in _RECORD_COLUMNS}
            row["file"] = rec["_file"]
            records.append(row)
    return records, skipped


def _frame(records: list[dict[str, Any]], params: Iterable[str] = CONFIG_PARAMS) -> Any:
    import pandas as pd

    keep = set(params)
    df = pd.DataFrame(records, columns=[*_RECORD_COLUMNS, "file"])
    raw = [p if isinstance(p, dict) else {} for p in df["params"]]
    df["params_all"] = [json.dumps(p, sort_keys=True, default=str) for p in raw]
    df["params"] = [json.dumps({k: v for k, v in p.items() if k in keep}, sort_keys=True,
                               default=str) for p in raw]
    for col in ("median", "min", "max"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    df["gil_enabled"] = df["gil_enabled"].map(lambda v: True if v is None else bool(v))
    df["python"] = df["python"].fillna("unknown").astype(str)
    df["build"] = df["python"] + "-" + df["gil_enabled"].map({True: "gil", False: "nogil"})
    for col in ("dialect", "workload", "unit", "algorithm", "experiment"):
        df[col] = df[col].fillna("").astype(str)
    df["threads"] = pd.to_numeric(df["threads"], errors="coerce").fillna(1).astype("int64")
    return df


def aggregate(records: list[dict[str, Any]], reference: str = "CSTrie",
              params: Iterable[str] = CONFIG_PARAMS) -> tuple[Any, Any]:
    """The summary table (one row per cell, see the module) and the records' table."""
    import numpy as np
    import pandas as pd

    df = _frame(records, params)
    group = [*KEY, "algorithm", "python", "gil_enabled", "build"]
    rows = []
    for key, g in df.groupby(group, sort=True, dropna=False):
        meds = g["median"].to_numpy(dtype=float)
        q1, q3 = np.percentile(meds, [25, 75])
        rows.append({
            **dict(zip(group, key)),
            "runs": int(len(g)),
            "median": float(np.median(meds)),
            "q1": float(q1),
            "q3": float(q3),
            "iqr": float(q3 - q1),
            "min": float(g["min"].min()) if g["min"].notna().any() else float("nan"),
            "max": float(g["max"].max()) if g["max"].notna().any() else float("nan"),
            "first": str(g["timestamp"].dropna().min()) if g["timestamp"].notna().any() else None,
            "last": str(g["timestamp"].dropna().max()) if g["timestamp"].notna().any() else None,
        })
    summary = pd.DataFrame(rows, columns=[*group, "runs", "median", "q1", "q3", "iqr", "min",
                                          "max", "first", "last"])
    ref = norm_name(reference)
    summary["reference"] = reference
    is_ref = summary["algorithm"].map(norm_name) == ref
    cell = [*KEY, "build"]
    ref_median = summary[is_ref].set_index(cell)["median"]
    ref_median = ref_median[~ref_median.index.duplicated()]
    keys = pd.MultiIndex.from_frame(summary[cell])
    summary["reference_median"] = ref_median.reindex(keys).to_numpy()
    summary["ratio"] = summary["median"] / summary["reference_median"]
    return summary, df


def _write(df: Any, out: Path, stem: str) -> list[Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), out / f"{stem}.parquet")
    df.to_csv(out / f"{stem}.csv", index=False)
    return [out / f"{stem}.parquet", out / f"{stem}.csv"]


def run_aggregate(sources: list[Path], out: Path, reference: str = "CSTrie",
                  overwrite: bool = False,
                  params: Iterable[str] = CONFIG_PARAMS) -> dict[str, Any]:
    """Run the ``aggregate`` command; return what was read and written."""
    from .sparkutil import PipelineError

    for src in sources:
        if not Path(src).is_dir():
            raise PipelineError(f"--from {src}: not a directory")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise PipelineError(f"--out {out}: exists and is not a directory")
    present = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if present and not overwrite:
        raise PipelineError(f"--out {out}: not empty (holds {', '.join(present[:6])}); pass "
                            "--overwrite to replace the aggregate's files in it")
    records, skipped = load_records(sources)
    if not records:
        raise PipelineError(f"--from {' '.join(map(str, sources))}: no result records with a "
                            f"median in *.jsonl files ({skipped['files']} files read)")
    summary, df = aggregate(records, reference, params)
    out.mkdir(parents=True, exist_ok=True)
    written = _write(summary, out, "summary") + _write(df, out, "records")
    has_ref = summary["reference_median"].notna().any()
    return {"records": len(df), "cells": len(summary), "skipped": skipped,
            "reference_found": bool(has_ref), "written": [str(p) for p in written]}
