"""How ``route`` spreads the messages over partitions: by topic, every message of a topic in
one partition (so that a partition's per-topic figures are the topic's own, see
:mod:`experiments.pipeline.routing`), except the hot topics that ``--salt`` finds in a sample
and spreads evenly over all partitions."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["HOT_SAMPLE", "hot_topics", "partition_messages"]

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
