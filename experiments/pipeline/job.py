"""The Spark job of ``route``: read the inputs, route every message, write and decode the
outputs, reconcile the figures, and assemble the summary (written into a staging folder that
:mod:`experiments.pipeline.publish` swaps in).

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
(:mod:`partitioning`); their per-topic figures are then summed on the driver. The
deliveries partition is then renamed to ``deliveries/``; the
rejections, histogram and per-topic figures (small) are decoded into their outputs and
``_routing/`` is deleted. The figures are reconciled before the summary is written:
``messages_in`` (the input files' rows by their Parquet footers, not a count of the
DataFrame that was routed) must equal ``messages_routed + messages_rejected``, the
subscriptions read the subscription files' rows, and the deliveries written the sum of the
fanout histogram. All of it is written into a staging folder beside ``--out`` and swapped
in only once reconciled (:mod:`experiments.pipeline.publish`). Which files make up an input,
and how they are checked before Spark starts: :func:`inputs.check_input`.

``seconds`` in the summary is the wall time from reading the inputs to the last output
written (Spark start-up, the in-process timing and the baseline excluded);
``stage_seconds`` breaks it down.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from . import adapters, matchers, regex, routing, workercache
from .baseline import run_baseline
from .inputs import MESSAGE_COLUMNS, SUBSCRIPTION_COLUMNS, InputFiles, read_input
from .partitioning import HOT_SAMPLE, hot_topics, partition_messages
from .sparkutil import Store, read_parquet
from .summary import (Stages, build_info, fanout_figures, inprocess_rate, jvm_cpu_seconds,
                      load_average, task_figures)

if TYPE_CHECKING:
    from .route import RouteOptions

__all__ = ["STAGING", "reconcile", "route_into"]

#: The stream is written here, partitioned by kind, then turned into the outputs.
STAGING = "_routing"


def route_into(spark: Any, store: Store, opts: RouteOptions, dialect: str,
               checked: dict[str, InputFiles], stage: str, out: str,
               stages: Stages) -> dict[str, Any]:
    """The run, written into ``stage`` and reconciled; return its summary (``out`` is the
    final place, named in the summary)."""
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    sub_files, msg_files = checked["--subscriptions"], checked["--messages"]
    load_start = load_average()
    t_job = time.perf_counter()

    stages.start("inputs", f"reading {opts.subscriptions} ({sub_files.describe()}) and "
                           f"{opts.messages} ({msg_files.describe()})")
    subs_df = read_input(spark, sub_files, SUBSCRIPTION_COLUMNS)
    msgs = read_input(spark, msg_files, MESSAGE_COLUMNS)
    # Collected as Arrow, not as Rows: 1.0-1.4 s instead of 5.2-8.4 s at 1,000,000 rows.
    sub_table = subs_df.toArrow()
    sub_rows = list(zip(sub_table.column("pattern").to_pylist(),
                        sub_table.column("subscriber").to_pylist()))
    del sub_table
    messages_in = msg_files.rows  # by the footers: independent of what Spark reads
    # Rows are not deduplicated: a message_id that occurs again is routed again. Counted (one
    # aggregation over the message_id column) so that it is said, not silent.
    ids = msgs.agg(F.count("message_id").alias("ids"),
                   F.countDistinct("message_id").alias("distinct")).first()
    duplicate_ids = ids["ids"] - ids["distinct"]
    if duplicate_ids:
        stages.log(f"    {duplicate_ids} messages repeat the message_id of an earlier one (a "
                   "message_id more than once): each is routed, none dropped")
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
    names: Any = None  # a Broadcast of the subscriber names, with --impl arrow
    broadcast: Any = pairs
    if opts.impl == "arrow":  # the workers' matchers hold indices; Arrow turns them into names
        broadcast, names = routing.subscriber_ids(pairs)
        names = sc.broadcast(names)
    setup = routing.RouteSetup(sc.broadcast(broadcast), opts.matcher, dialect, max_words,
                               opts.top, cache_key=uuid.uuid4().hex, stats=task_stats,
                               split_topics=frozenset(hot), names=names,
                               deliveries=opts.deliveries)
    msgs_in, msgs = msgs, partition_messages(msgs, partitions, hot)

    stages.start("route", f"routing {messages_in} messages in {partitions} partitions "
                          f"with {opts.matcher} ({opts.impl}, deliveries as {opts.deliveries})")
    staging = f"{stage}/{STAGING}"
    jvm0 = jvm_cpu_seconds(spark)
    if "spark.sql.maxConcurrentOutputFileWriters" not in dict(opts.conf):
        # One open file per kind and task instead of sorting the stream by kind.
        spark.conf.set("spark.sql.maxConcurrentOutputFileWriters", "4")
    adapters.route_frame(spark, msgs, setup, opts.impl).write.partitionBy("kind").parquet(staging)

    jvm1 = jvm_cpu_seconds(spark)
    jvm_cpu = round(jvm1 - jvm0, 3) if jvm0 is not None and jvm1 is not None else None
    stages.start("figures", "moving deliveries, decoding rejections, fanout and top topics")
    parts = {name: f"{staging}/{name}" for name in store.children(staging)}

    ids_form = opts.deliveries == "ids"

    def kind_df(kind: int) -> Any | None:
        path = parts.get(f"kind={kind}")
        if not path:
            return None
        df = read_parquet(spark, path)
        if ids_form:  # (message_id, subscriber) as in rows: the value from its UTF-8 bytes
            df = df.select("message_id", F.expr(
                "decode(unhex(concat_ws('', transform(subscriber_ids, "
                "b -> lpad(hex(b), 2, '0')))), 'UTF-8')").alias("subscriber"))
        return df

    if f"kind={routing.DELIVERY}" in parts:
        store.rename(parts[f"kind={routing.DELIVERY}"], f"{stage}/deliveries")
        store.write_text(f"{stage}/deliveries/_SUCCESS", "")
    else:
        spark.createDataFrame([], "message_id bigint, subscriber_ids array<int>" if ids_form
                              else "message_id bigint, subscriber string") \
            .write.parquet(f"{stage}/deliveries")
    if ids_form:  # what subscriber_ids mean
        import pyarrow as pa

        spark.createDataFrame(pa.table({
            "subscriber_id": pa.array(range(len(names.value)), pa.int32()),
            "subscriber": pa.array(names.value, pa.string())})).coalesce(1) \
            .write.parquet(f"{stage}/subscribers")
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
    deliveries = (store.parquet_elements(f"{stage}/deliveries", "subscriber_ids") if ids_form
                  else None)  # by the footers: reading the arrays took as long as routing
    if deliveries is None:
        delivered = read_parquet(spark, f"{stage}/deliveries")
        deliveries = (delivered.agg(F.sum(F.size("subscriber_ids"))).first()[0] or 0
                      if ids_form else delivered.count())
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
    reconcile(msg_files, sub_files, messages_routed, messages_rejected, len(sub_rows),
               deliveries, hist)

    cores = sc.defaultParallelism
    summary: dict[str, Any] = {
        "command": "route",
        "argv": opts.argv,
        "messages_in": messages_in,
        "messages_routed": messages_routed,
        "messages_rejected": messages_rejected,
        "matcher_errors": matcher_errors,
        "duplicate_message_ids": duplicate_ids,
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
        "deliveries_form": opts.deliveries,
        "partitions": partitions,
        "salt": {"hot_topics": hot,
                 "how": f"topics estimated (from a sample of about {HOT_SAMPLE:,} messages) "
                        "to carry at least 1/(2 x partitions) of the messages, each spread "
                        "evenly over all partitions (message_id mod partitions)"}
                if opts.salt else None,
        "cores": cores,
        "max_words": max_words,
        "spark_version": spark.version,
        **build_info(),
        "stage_seconds": dict(stages.seconds),
        "load_average_1min": {"start": load_start, "end": load_average()},
        **task_figures(task_stats.value),
        "route_stage_jvm_cpu_seconds": jvm_cpu if sc.master.startswith("local") else None,
        "fanout": fanout_figures(hist),
        "top_topics": [dict(zip(("rank", "topic", "fanout", "messages", "deliveries"), r))
                       for r in top_rows[:10]],
        "inputs": {"subscriptions": opts.subscriptions, "messages": opts.messages},
        "input_files": {inp.option.lstrip("-"): {
            "files": len(inp.files), "rows": inp.rows, "subfolders": list(inp.folders),
            "hidden_not_read": list(inp.hidden), "rows_counted_by": inp.counted_by}
            for inp in (sub_files, msg_files)},
        "outputs": {name: f"{out}/{name}" for name in
                    ("deliveries", "rejected", "rejected_subscriptions", "fanout/histogram",
                     "fanout/top_topics") + ("subscribers",) * ids_form},
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
        rate = inprocess_rate(m, topics)
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
        summary["baseline"] = run_baseline(spark, store, msgs_in, setup, pairs, opts, dialect,
                                            stage, partitions, stages)
        stages.stop()

    summary["stage_seconds"] = dict(stages.seconds)
    return summary


def reconcile(msgs: InputFiles, subs: InputFiles, routed: int, rejected: int,
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
