"""The regex baseline (``route --baseline regex``): the routing done the way a Spark user
would without this package (a regular expression per pattern, a cross join and ``RLIKE``),
run beside the matcher on the same message set, timed alike, and compared."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from . import adapters, regex, routing
from .sparkutil import Store, read_parquet
from .summary import Stages

if TYPE_CHECKING:
    from .route import RouteOptions

__all__ = ["regex_deliveries", "run_baseline"]


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


def run_baseline(spark: Any, store: Store, msgs: Any, setup: routing.RouteSetup,
                  pairs: list[tuple[str, str]], opts: RouteOptions, dialect: str,
                  out: str, partitions: int, stages: Stages) -> dict[str, Any]:
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
    setup = replace(setup, cache_key=None, stats=None, deliveries="rows")  # names, compared
    n = base.count()  # materialised before either timing starts
    folder = f"{out}/baseline"

    t0 = time.perf_counter()
    (adapters.route_frame(spark, base, setup, opts.impl)
     .where(F.col("kind") == routing.DELIVERY)
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

