"""The ``route`` command: every message of a Parquet data set through one matcher per
partition, with the regex cross join as an optional baseline.

Outputs under ``--out`` (all Parquet folders written by Spark, except ``summary.json``):

=========================  ===============================================================
``deliveries/``            ``message_id`` bigint, ``subscriber`` string: one row per
                           (message, subscriber) the matcher delivers to
``rejected/``              ``message_id``, ``topic``, ``reason``: every message whose topic
                           is invalid in the dialect (or null), reason = the error message
``rejected_subscriptions/`` ``pattern``, ``subscriber``, ``reason``: subscription rows not
                           loaded (invalid or null pattern, null subscriber, a pattern the
                           matcher cannot represent)
``fanout/histogram/``      ``fanout`` bigint, ``messages`` bigint: how many routed messages
                           had each number of deliveries (0 included)
``fanout/top_topics/``     ``rank``, ``topic``, ``fanout``, ``messages``, ``deliveries``: the
                           ``--top`` topics by deliveries (ties by topic)
``baseline/``              with ``--baseline regex``: ``matcher_deliveries/`` and
                           ``regex_deliveries/`` of the compared message set
``summary.json``           counts, timings, versions, fanout figures, baseline and
                           in-process comparison (see :func:`run_route`)
=========================  ===============================================================

How the work is done: the subscriptions are collected on the driver, checked, and the
accepted pairs broadcast; the messages are repartitioned to at least
``spark.default.parallelism`` partitions; each partition builds one matcher and routes its
messages (:mod:`experiments.pipeline.routing`) into one narrow stream ``(kind, message_id,
subscriber)`` that is written once, partitioned by kind, into ``_routing/`` (one open file per
kind and task, no sort). Messages are hash-partitioned by topic, so a partition holds every
message of its topics and sends only its own top topics (see :mod:`routing`): measured on
1,000,000 messages this shuffle costs less than aggregating one row per distinct topic
(10.3-11.4 s against 12.4-22.4 s for route and top topics together). The price is skew: a
topic carrying a large share of the messages is routed by one task, unless ``--salt``
spreads the hot topics (found from a sample) evenly over all partitions
(:func:`partition_messages`); their per-topic figures are then summed on the driver. The
deliveries partition is then renamed to ``deliveries/``; the
rejections, histogram and per-topic figures (small) are decoded into their outputs and
``_routing/`` is deleted. The figures are reconciled before the summary is written:
``messages_in`` (the input files' rows by their Parquet footers, not a count of the
DataFrame that was routed) must equal ``messages_routed + messages_rejected``, the
subscriptions read the subscription files' rows, and the deliveries written the sum of the
fanout histogram. All of it is written into a staging folder beside ``--out`` and swapped
in only once reconciled (see :func:`run_route`). Which files make up an input, and how they
are checked before Spark starts: :func:`inputs.check_input`.

``seconds`` in the summary is the wall time from reading the inputs to the last output
written (Spark start-up, the in-process timing and the baseline excluded);
``stage_seconds`` breaks it down.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

from . import matchers, regex, routing, workercache
from .inputs import Column, InputFiles, check_input, input_dialect, read_input
from .sparkutil import (PipelineError, Store, check_local_out, is_local, java_problem,
                        local_path, out_problem, read_parquet, remove_tree, session, swap_in,
                        under_spark_submit)

__all__ = ["DEFAULT_IMPL", "HOT_SAMPLE", "IMPLS", "OUTPUTS", "RouteOptions", "hot_topics",
           "partition_messages", "route_frame", "run_route"]

#: Ways of running the per-partition routing, by ``--impl`` name.
IMPLS = ("arrow", "pandas", "rdd")

#: The default ``--impl``, chosen by measurement. On the project's 2-core machine (local[*],
#: CPython 3.11.7, Spark 4.3.0, pyarrow 26, pandas 3.1), routing 1,000,000 generated NATS
#: messages (``generate --subscriptions 10000 --messages 1000000``, mean fanout 9.3, so
#: 9,325,249 deliveries) with CSTrie; three runs of each, interleaved; ``seconds`` is the
#: whole job (read, route, write every output, Spark start-up excluded):
#:
#: ==========  =====================  ==================  ======================
#: impl        seconds                messages/s median   route stage seconds
#: ==========  =====================  ==================  ======================
#: ``arrow``   24.4, 26.5, 25.1       39,780              14.3, 16.1, 15.0
#: ``pandas``  28.2, 28.3, 28.3       35,395              18.0, 18.0, 17.8
#: ``rdd``     34.5, 32.6, 31.6       30,691              24.6, 23.5, 23.0
#: ==========  =====================  ==================  ======================
#:
#: ``mapInArrow`` hands the function Arrow batches and takes Arrow batches back (one
#: ``to_pylist`` per column, one ``pa.array`` per output column); ``mapInPandas`` adds the
#: pandas conversions both ways; the RDD path pickles every row.
DEFAULT_IMPL = "arrow"

#: Entries of ``--out`` that a run writes: an ``--out`` holding anything else is not
#: replaced (``_routing`` stands here for the runs that wrote it into ``--out``).
OUTPUTS = ("deliveries", "rejected", "rejected_subscriptions", "fanout", "baseline",
           "summary.json", "_SUCCESS", "_routing")

#: The stream is written here, partitioned by kind, then turned into the outputs.
STAGING = "_routing"

_SUBSCRIPTION_COLUMNS = (Column("pattern", ("string",), "string"),
                         Column("subscriber", ("string",), "string"))
_MESSAGE_COLUMNS = (Column("message_id", ("bigint", "int", "smallint", "tinyint"), "bigint"),
                    Column("topic", ("string",), "string"))


@dataclass
class RouteOptions:
    """The ``route`` command's options (see ``python -m experiments.pipeline route -h``)."""

    subscriptions: str
    messages: str
    out: str
    matcher: str = "cstrie"
    #: None: the dialect recorded in a ``workload.json`` beside the inputs, else ``nats``.
    dialect: str | None = None
    #: Route with ``dialect`` although a ``workload.json`` beside the inputs says otherwise.
    dialect_mismatch_ok: bool = False
    master: str | None = "local[*]"  # None: spark-submit's master, else local[*]
    executor_python: str | None = None  # the executors' interpreter (see sparkutil.session)
    conf: list[tuple[str, str]] = field(default_factory=list)
    impl: str = DEFAULT_IMPL
    partitions: int | None = None
    baseline: str | None = None
    baseline_limit: int | None = None
    top: int = 20
    inprocess: int = 0
    max_words: int | None = None
    overwrite: bool = False
    salt: bool = False  # spread hot topics over all partitions (else: one partition a topic)
    argv: list[str] = field(default_factory=list)


#: About this many messages are sampled to find the hot topics (``--salt``).
HOT_SAMPLE = 100_000


def hot_topics(messages: Any, count: int, partitions: int) -> dict[str, float]:
    """Topics estimated to carry at least ``1 / (2 * partitions)`` of ``messages`` (a seeded
    sample of about :data:`HOT_SAMPLE` rows), with their estimated shares. Alone in a
    partition, such a topic makes its task at least 1.5 times a fair share."""
    from pyspark.sql import functions as F

    if not count:
        return {}
    fraction = min(1.0, HOT_SAMPLE / count)
    sample = messages.sample(fraction=fraction, seed=22) if fraction < 1 else messages
    expected = fraction * count
    floor = expected / (2 * partitions)
    rows = (sample.where(F.col("topic").isNotNull()).groupBy("topic").count()
            .where(F.col("count") >= floor).collect())
    return {r["topic"]: round(r["count"] / expected, 4)
            for r in sorted(rows, key=lambda r: (-r["count"], r["topic"]))}


def partition_messages(messages: Any, partitions: int, hot: Iterable[str] = ()) -> Any:
    """``messages`` hash-partitioned by topic into ``partitions``: every message of a topic in
    one partition (per-topic figures complete there, see routing, and LockedTrie's cache sees
    each topic in one place), except the ``hot`` topics, each spread evenly over all the
    partitions: message ``m`` of a hot topic goes to partition ``m.message_id mod
    partitions``.

    How: the rows are partitioned by ``(topic, piece)``, where ``piece`` is null for a topic
    that is not hot; for a hot topic, the driver picks for each partition ``p`` a piece
    value that Spark's hash partitioning (``pmod(hash(topic, piece), partitions)``, the
    ``hash`` function) sends to ``p``, and the message takes the value of partition
    ``message_id mod partitions``. Hashing pieces instead (``message_id mod N``) leaves
    some partitions with twice the pieces of others."""
    from pyspark.sql import functions as F

    hot = sorted(hot)
    if not hot:
        return messages.repartition(partitions, "topic")
    spark = messages.sparkSession
    tries = 64 * partitions  # the chance that a partition gets none: about e**-64 each
    cands = spark.createDataFrame([(t, i) for t in hot for i in range(tries)],
                                  "topic string, piece bigint")
    lands = cands.select("topic", "piece", F.pmod(F.hash("topic", "piece"),
                                                  F.lit(partitions)).alias("p")).collect()
    first: dict[tuple[str, int], int] = {}
    for r in lands:
        key = (r["topic"], r["p"])
        first[key] = min(first.get(key, r["piece"]), r["piece"])
    pieces = F.create_map(*[x for t in hot for x in (
        F.lit(t), F.array(*[F.lit(first.get((t, p), p)).cast("bigint")
                            for p in range(partitions)]))])
    piece = F.element_at(F.element_at(pieces, F.col("topic")),
                         (F.pmod(F.col("message_id"), F.lit(partitions)) + 1).cast("int"))
    piece = F.when(F.col("topic").isin(hot), piece)
    return (messages.withColumn("_piece", piece).repartition(partitions, "topic", "_piece")
            .drop("_piece"))


def route_frame(spark: Any, messages: Any, setup: routing.RouteSetup, impl: str) -> Any:
    """Rows ``(kind, message_id, subscriber)`` of routing ``messages`` with ``impl``: the
    stream of :data:`routing.STREAM_DDL` with its subscriber arrays exploded."""
    from pyspark.sql import functions as F

    if impl == "arrow":
        stream = messages.mapInArrow(partial(routing.arrow_partition, setup),
                                     routing.STREAM_DDL)
    elif impl == "pandas":
        stream = messages.mapInPandas(partial(routing.pandas_partition, setup),
                                      routing.STREAM_DDL)
    elif impl == "rdd":
        rdd = messages.rdd.mapPartitions(partial(routing.rdd_partition, setup))
        stream = spark.createDataFrame(rdd, routing.STREAM_DDL)
    else:
        raise ValueError(f"unknown impl {impl!r}; choose from {', '.join(IMPLS)}")
    return stream.select("kind", "message_id", F.explode("subscribers").alias("subscriber"))


def regex_deliveries(spark: Any, messages: Any, pairs: list[tuple[str, str]],
                     dialect: str) -> Any:
    """(message_id, subscriber) the way a Spark user would without this package: each
    distinct pattern becomes a regex (:func:`regex.pattern_regex`), messages are cross
    joined with the patterns and filtered with ``RLIKE``, then joined to subscribers."""
    from pyspark.sql import functions as F

    patterns = sorted({p for p, _ in pairs})
    pat_df = spark.createDataFrame([(p, regex.pattern_regex(p, dialect)) for p in patterns],
                                   "pattern string, regex string")
    sub_df = spark.createDataFrame(pairs, "pattern string, subscriber string")
    sep = regex.subject("", dialect)
    subjects = (messages.where(F.col("topic").isNotNull() & F.col("message_id").isNotNull())
                .select("message_id", F.concat(F.lit(sep), F.col("topic")).alias("subject")))
    hits = (subjects.crossJoin(F.broadcast(pat_df))
            .where(F.expr("subject RLIKE regex")).select("message_id", "pattern"))
    return (hits.join(F.broadcast(sub_df), "pattern")
            .select("message_id", "subscriber").distinct())


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _build_info() -> dict[str, Any]:
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


def _load() -> float | None:
    """The machine's 1-minute load average (other work competing for the cores)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
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


def _fanout_figures(hist: dict[int, int]) -> dict[str, Any]:
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


def _task_figures(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary's ``matcher_builds`` and ``tasks`` sections from the routing tasks'
    reports (workercache.report_task): one per task attempt that finished."""
    builds = [s for s in stats if s["built"]]
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
            "executors": sorted({s["python"] for s in stats}),
            "packages": sorted({s["package"] for s in stats}),
            "how": "per routing task, from its Python worker: messages routed or rejected, "
                   "seconds from its start (a build included) to its last row",
        },
    }


def _inprocess_rate(matcher: Any, topics: list) -> float:
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


class _Stages:
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


def _check_out(store: Store, out: str, overwrite: bool) -> None:
    """The checks of :func:`check_local_out` that Hadoop can make, for a non-local --out."""
    if store.exists(out) and not store.is_dir(out):
        raise PipelineError(f"--out {out}: exists and is not a directory")
    problem = out_problem(out, store.children(out), overwrite, OUTPUTS)
    if problem:
        raise problem


def run_route(opts: RouteOptions, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the ``route`` command; return the summary (also written to ``summary.json``).

    Nothing in ``--out`` is touched before every input has been checked, and then only to
    replace it as a whole: the run is written into a staging folder beside ``--out``
    (``<out>.incomplete-<time>-<pid>``), reconciled there, given its ``summary.json``, and
    only then swapped in (:func:`sparkutil.swap_in`); ``<out>/_SUCCESS`` is written after
    that, last. A run that fails or is interrupted deletes its staging folder and leaves
    ``--out`` as it was.

    Raises :class:`PipelineError` for bad arguments or inputs, and ``RuntimeError`` if the
    figures do not reconcile (nothing is published then).
    """
    if log is None:
        def log(msg: str) -> None:
            print(msg, file=sys.stderr, flush=True)
    problem = java_problem()
    if problem:  # before importing pyspark: the first thing to fix
        raise PipelineError(problem)
    if opts.matcher not in matchers.MATCHERS:
        raise PipelineError(f"--matcher {opts.matcher!r}: choose from "
                            f"{', '.join(matchers.MATCHERS)}")
    if opts.impl not in IMPLS:
        raise PipelineError(f"--impl {opts.impl!r}: choose from {', '.join(IMPLS)}")
    # Whatever is local is checked now, not after Spark's start-up (seconds).
    inputs = ((opts.subscriptions, "--subscriptions", _SUBSCRIPTION_COLUMNS),
              (opts.messages, "--messages", _MESSAGE_COLUMNS))
    checked: dict[str, InputFiles] = {}
    for path, option, columns in inputs:
        if is_local(path):
            checked[option] = check_input(path, option, columns)
    paths = [opts.messages, opts.subscriptions]
    dialect, source, said = (
        input_dialect(opts.dialect, opts.dialect_mismatch_ok, paths, None)
        if all(is_local(p) for p in paths) else (None, None, []))
    out = opts.out.rstrip("/") or opts.out
    if is_local(out):
        check_local_out(out, opts.overwrite, OUTPUTS)
    for line in said:  # after the checks: an error is one line
        log(line)

    started = _now()
    stages = _Stages(7 + bool(opts.inprocess) + bool(opts.baseline) + bool(opts.salt), log)
    master = opts.master or (None if under_spark_submit() else "local[*]")
    stages.start("session", f"starting Spark ({master or 'the master spark-submit was given'})")
    spark = session(master, opts.conf, executor_python=opts.executor_python)
    store = Store(spark)
    for path, option, columns in inputs:
        if option not in checked:
            checked[option] = check_input(path, option, columns, spark, store)
    if dialect is None:
        dialect, source, said = input_dialect(opts.dialect, opts.dialect_mismatch_ok, paths,
                                              store)
        for line in said:
            log(line)
    if is_local(out):  # an --out that is a symbolic link stays one, to the new results
        local_out = os.path.realpath(local_path(out))
        os.makedirs(os.path.dirname(local_out), exist_ok=True)
        final, fs = f"file:{local_out}", None
    else:
        _check_out(store, out, opts.overwrite)
        final, fs = out, store
    tag = f"{datetime.now().strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    stage = f"{final}.incomplete-{tag}"  # beside --out: the same file system, a cheap rename
    published = False
    try:
        summary = _route_into(spark, store, opts, dialect, checked, stage, out, stages)
        summary["dialect_source"] = source
        summary["started"] = started
        summary["finished"] = _now()
        store.write_text(f"{stage}/summary.json", json.dumps(summary, indent=2) + "\n")
        stages.start("publish", f"replacing {out} with the new run" if opts.overwrite
                     else f"moving the new run to {out}")
        previous = f"{final}.previous-{tag}"
        replaced = swap_in(stage, final, previous, fs)
        published = True
        if replaced:
            try:
                remove_tree(previous, fs)
            except Exception as exc:  # noqa: BLE001 - the new results are in place
                log(f"note: could not delete the previous results, moved to {previous} "
                    f"({exc}): delete them")
        store.write_text(f"{final}/_SUCCESS", "")  # last: the run's own marker
        stages.stop()
    finally:
        if not published:
            try:
                remove_tree(stage, fs)
            except Exception as exc:  # noqa: BLE001 - say it; the first error matters more
                log(f"note: could not delete the staging folder {stage} ({exc}): delete it")
    return summary


def _route_into(spark: Any, store: Store, opts: RouteOptions, dialect: str,
                checked: dict[str, InputFiles], stage: str, out: str,
                stages: _Stages) -> dict[str, Any]:
    """The run, written into ``stage`` and reconciled; return its summary (``out`` is the
    final place, named in the summary)."""
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    sub_files, msg_files = checked["--subscriptions"], checked["--messages"]
    load_start = _load()
    t_job = time.perf_counter()

    stages.start("inputs", f"reading {opts.subscriptions} ({sub_files.describe()}) and "
                           f"{opts.messages} ({msg_files.describe()})")
    subs_df = read_input(spark, sub_files, _SUBSCRIPTION_COLUMNS)
    msgs = read_input(spark, msg_files, _MESSAGE_COLUMNS)
    sub_rows = [(r[0], r[1]) for r in subs_df.collect()]
    messages_in = msg_files.rows  # by the footers: independent of what Spark reads
    max_words = opts.max_words
    if opts.matcher == "optimized_bitmap" and max_words is None:
        import re

        sep = regex.subject("", dialect)
        longest = msgs.select(F.max(F.size(F.split("topic", re.escape(sep), -1)))).first()[0]
        max_words = max([longest or 1] + [len(p.split(sep)) for p, _ in sub_rows
                                          if isinstance(p, str)])

    stages.start("subscriptions", f"checking {len(sub_rows)} subscriptions and "
                                  "broadcasting them")
    pairs, rejected_subs, driver_matcher = routing.check_subscriptions(
        sub_rows, opts.matcher, dialect, max_words, build=bool(opts.inprocess))
    # Each Python worker builds the matcher once and keeps it for its next tasks (routing's
    # task_router), under a key naming this job's subscriptions; the accumulator brings
    # back one dict per task (built or reused, build seconds, memory, messages, seconds).
    task_stats = sc.accumulator([], workercache.StatsParam())
    partitions = opts.partitions or max(msgs.rdd.getNumPartitions(), sc.defaultParallelism)
    hot: dict[str, float] = {}
    if opts.salt:
        stages.start("salt", "finding the hot topics (a sample of the messages)")
        hot = hot_topics(msgs, messages_in, partitions)
        stages.log(f"    hot topics: {', '.join(f'{t} ({s:.1%})' for t, s in hot.items()) or 'none'}")
    setup = routing.RouteSetup(sc.broadcast(pairs), opts.matcher, dialect, max_words,
                               opts.top, cache_key=uuid.uuid4().hex, stats=task_stats,
                               split_topics=frozenset(hot))
    msgs_in, msgs = msgs, partition_messages(msgs, partitions, hot)

    stages.start("route", f"routing {messages_in} messages in {partitions} partitions "
                          f"with {opts.matcher} ({opts.impl})")
    staging = f"{stage}/{STAGING}"
    if "spark.sql.maxConcurrentOutputFileWriters" not in dict(opts.conf):
        # One open file per kind and task instead of sorting the stream by kind.
        spark.conf.set("spark.sql.maxConcurrentOutputFileWriters", "4")
    route_frame(spark, msgs, setup, opts.impl).write.partitionBy("kind").parquet(staging)

    stages.start("figures", "moving deliveries, decoding rejections, fanout and top topics")
    parts = {name: f"{staging}/{name}" for name in store.children(staging)}

    def kind_df(kind: int) -> Any | None:
        path = parts.get(f"kind={kind}")
        return read_parquet(spark, path) if path else None

    if f"kind={routing.DELIVERY}" in parts:
        store.rename(parts[f"kind={routing.DELIVERY}"], f"{stage}/deliveries")
        store.write_text(f"{stage}/deliveries/_SUCCESS", "")
    else:
        spark.createDataFrame([], "message_id bigint, subscriber string") \
            .write.parquet(f"{stage}/deliveries")
    rej = kind_df(routing.REJECTED)
    if rej is None:
        rej = spark.createDataFrame([], "message_id bigint, subscriber string")
    pair = F.from_json("subscriber", "array<string>")
    (rej.select("message_id", pair[0].alias("topic"), pair[1].alias("reason"))
     .write.parquet(f"{stage}/rejected"))
    r = read_parquet(spark, f"{stage}/rejected").agg(
        F.count(F.lit(1)).alias("rows"),
        F.sum(F.col("reason").startswith(routing.MATCHER_ERROR).cast("int")).alias("errors"),
    ).first()
    messages_rejected, matcher_errors = r["rows"], r["errors"] or 0
    h = kind_df(routing.FANOUT)
    hist = {} if h is None else {
        row["fanout"]: row["messages"] for row in h.groupBy(F.col("message_id").alias("fanout"))
        .agg(F.sum(F.col("subscriber").cast("bigint")).alias("messages")).collect()}
    t = kind_df(routing.TOPIC)
    per_topic: dict[str, list[int]] = {}  # every partition's own top, and the split topics
    for row in ([] if t is None else t.collect()):
        fanout, _, topic = row["subscriber"].partition(":")
        # a split topic's rows are summed (its fanout is the same in every partition)
        per_topic.setdefault(topic, [int(fanout), 0])[1] += row["message_id"]
    top = sorted(((topic, f, n, f * n) for topic, (f, n) in per_topic.items()),
                 key=lambda r: (-r[3], r[0]))[:opts.top]
    deliveries = read_parquet(spark, f"{stage}/deliveries").count()
    messages_routed = sum(hist.values())
    store.delete(staging)

    stages.start("outputs", "writing fanout and rejected subscriptions")
    spark.createDataFrame(sorted(hist.items()), "fanout bigint, messages bigint") \
        .coalesce(1).write.parquet(f"{stage}/fanout/histogram")
    top_rows = [(i + 1, *r) for i, r in enumerate(top)]
    spark.createDataFrame(top_rows, "rank int, topic string, fanout bigint, messages bigint, "
                                    "deliveries bigint").coalesce(1) \
        .write.parquet(f"{stage}/fanout/top_topics")
    spark.createDataFrame(rejected_subs, "pattern string, subscriber string, reason string") \
        .coalesce(1).write.parquet(f"{stage}/rejected_subscriptions")
    stages.stop()
    seconds = time.perf_counter() - t_job

    # Reconcile before anything claims success: the input rows counted from the files'
    # footers (not from the DataFrame that was routed) against what the routing accounted for.
    _reconcile(msg_files, sub_files, messages_routed, messages_rejected, len(sub_rows),
               deliveries, hist)

    cores = sc.defaultParallelism
    summary: dict[str, Any] = {
        "command": "route",
        "argv": opts.argv,
        "messages_in": messages_in,
        "messages_routed": messages_routed,
        "messages_rejected": messages_rejected,
        "matcher_errors": matcher_errors,
        "deliveries": deliveries,
        "seconds": round(seconds, 3),
        "messages_per_second": round(messages_in / seconds, 1) if seconds else None,
        "deliveries_per_second": round(deliveries / seconds, 1) if seconds else None,
        "subscriptions_in": len(sub_rows),
        "subscriptions_rejected": len(rejected_subs),
        "subscription_pairs": len(pairs),
        "patterns": len({p for p, _ in pairs}),
        "matcher": opts.matcher,
        "dialect": dialect,
        "master": sc.master,
        "executor_python": sc.pythonExec,  # what PySpark gives its Python workers
        "conf": dict(opts.conf),
        "impl": opts.impl,
        "partitions": partitions,
        "salt": {"hot_topics": hot,
                 "how": f"topics estimated (from a sample of about {HOT_SAMPLE:,} messages) "
                        "to carry at least 1/(2 x partitions) of the messages, each spread "
                        "evenly over all partitions (message_id mod partitions)"}
                if opts.salt else None,
        "cores": cores,
        "max_words": max_words,
        "spark_version": spark.version,
        **_build_info(),
        "stage_seconds": dict(stages.seconds),
        "load_average_1min": {"start": load_start, "end": _load()},
        **_task_figures(task_stats.value),
        "fanout": _fanout_figures(hist),
        "top_topics": [dict(zip(("rank", "topic", "fanout", "messages", "deliveries"), r))
                       for r in top_rows[:10]],
        "inputs": {"subscriptions": opts.subscriptions, "messages": opts.messages},
        "input_files": {inp.option.lstrip("-"): {
            "files": len(inp.files), "rows": inp.rows, "subfolders": list(inp.folders),
            "hidden_not_read": list(inp.hidden), "rows_counted_by": inp.counted_by}
            for inp in (sub_files, msg_files)},
        "outputs": {name: f"{out}/{name}" for name in
                    ("deliveries", "rejected", "rejected_subscriptions", "fanout/histogram",
                     "fanout/top_topics")},
    }
    if matcher_errors:
        stages.log(f"WARNING: {matcher_errors} messages failed inside the matcher (reason "
                   f"starting {routing.MATCHER_ERROR!r} in {out}/rejected): a matcher bug")

    if opts.inprocess:
        stages.start("inprocess", f"timing single-thread lookups of {opts.inprocess} "
                                  "messages on the driver")
        topics = [r[0] for r in msgs_in.select("topic").limit(opts.inprocess).collect()]
        m = driver_matcher
        if m is None or opts.matcher in matchers.NEEDS_TOPIC_SPACE:
            m = setup.router(topics).matcher
        rate = _inprocess_rate(m, topics)
        per_core = summary["messages_per_second"] / cores
        route_per_core = messages_in / stages.seconds["route"] / cores
        summary["inprocess"] = {
            "messages": len(topics),
            "lookups_per_second": round(rate, 1),
            "pipeline_messages_per_second_per_core": round(per_core, 1),
            "per_core_ratio": round(per_core / rate, 3),
            "route_stage_messages_per_second_per_core": round(route_per_core, 1),
            "route_stage_per_core_ratio": round(route_per_core / rate, 3),
            "how": "one thread on the driver, matcher built with the accepted subscriptions, "
                   "lookup() of each topic (errors caught), perf_counter around the loop",
        }
        stages.stop()

    if opts.baseline == "regex":
        summary["baseline"] = _run_baseline(spark, store, msgs_in, setup, pairs, opts, dialect,
                                            stage, partitions, stages)
        stages.stop()

    summary["stage_seconds"] = dict(stages.seconds)
    return summary


def _reconcile(msgs: InputFiles, subs: InputFiles, routed: int, rejected: int,
               subscriptions: int, deliveries: int, hist: dict[int, int]) -> None:
    """Raise ``RuntimeError`` naming every figure that does not add up."""
    wrong = []
    if msgs.rows != routed + rejected:
        wrong.append(f"the {len(msgs.files)} --messages files hold {msgs.rows} rows by their "
                     f"footers, but {routed} were routed and {rejected} rejected")
    if subs.rows != subscriptions:
        wrong.append(f"the {len(subs.files)} --subscriptions files hold {subs.rows} rows by "
                     f"their footers, but {subscriptions} were read")
    hist_deliveries = sum(f * c for f, c in hist.items())
    if deliveries != hist_deliveries:
        wrong.append(f"{deliveries} deliveries written, the fanout histogram accounts for "
                     f"{hist_deliveries}")
    if wrong:
        raise RuntimeError(f"figures do not reconcile: {'; '.join(wrong)}; nothing published")


def _run_baseline(spark: Any, store: Store, msgs: Any, setup: routing.RouteSetup,
                  pairs: list[tuple[str, str]], opts: RouteOptions, dialect: str,
                  out: str, partitions: int, stages: _Stages) -> dict[str, Any]:
    """Route one message set both ways, timed alike, and compare the deliveries (written
    below ``out``, the run's staging folder)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    limit = opts.baseline_limit
    what = f"the first {limit} messages" if limit else "all messages"
    stages.start("baseline", f"regex baseline (cross join + RLIKE) and the matcher on {what}")
    base = msgs.limit(limit) if limit else msgs
    base = base.repartition(partitions, "topic").persist(StorageLevel.MEMORY_AND_DISK)
    # The timed twin builds its matcher in every task, as before the workers kept theirs:
    # its time stays comparable with the regex side and with earlier runs.
    setup = replace(setup, cache_key=None, stats=None)
    n = base.count()  # materialised before either timing starts
    folder = f"{out}/baseline"

    t0 = time.perf_counter()
    (route_frame(spark, base, setup, opts.impl).where(F.col("kind") == routing.DELIVERY)
     .select("message_id", "subscriber").write.parquet(f"{folder}/matcher_deliveries"))
    matcher_seconds = time.perf_counter() - t0

    t0 = time.perf_counter()
    regex_deliveries(spark, base, pairs, dialect).write.parquet(
        f"{folder}/regex_deliveries")
    regex_seconds = time.perf_counter() - t0
    base.unpersist()

    got = read_parquet(spark, f"{folder}/matcher_deliveries")
    rejected_ids = read_parquet(spark, f"{out}/rejected").select("message_id")
    want = read_parquet(spark, f"{folder}/regex_deliveries").join(
        rejected_ids, "message_id", "left_anti")
    only_regex = want.subtract(got).count()
    only_matcher = got.subtract(want).count()
    return {
        "kind": "regex",
        "messages": n,
        "subset": bool(limit),
        "subset_how": f"DataFrame.limit({limit}) of the input (file order), "
                      f"repartitioned by topic to {partitions}" if limit else None,
        "patterns": len({p for p, _ in pairs}),
        "regex_seconds": round(regex_seconds, 3),
        "matcher_seconds": round(matcher_seconds, 3),
        "speedup": round(regex_seconds / matcher_seconds, 2) if matcher_seconds else None,
        "regex_deliveries": want.count(),
        "matcher_deliveries": got.count(),
        "equal": only_regex == 0 and only_matcher == 0,
        "only_regex": only_regex,
        "only_matcher": only_matcher,
        "compared": "set of (message_id, subscriber); the regex side without the messages the "
                    "matcher rejected (regexes do not validate topics)",
        "how": "both sides read the same persisted message set and write their deliveries "
               "as Parquet; wall time of each write; the matcher side builds its matcher in "
               "every task",
    }
