"""Routing one partition of messages: the pure-Python core and its three Spark adapters.

:class:`Router` looks every message's topic up in one matcher. Every adapter turns its
results into one *stream* of rows ``(kind, message_id, subscribers)`` (:data:`STREAM_DDL`,
``subscribers`` an array of strings) that the job explodes and writes once, partitioned by
``kind``; the deliveries partition becomes the ``deliveries`` output as it is, and the three
small kinds are decoded into their outputs afterwards (:mod:`experiments.pipeline.job`).
The kinds, and how the columns carry them:

=====  =================  ===================  ===========================================
kind   what               ``message_id``       ``subscribers``
=====  =================  ===================  ===========================================
``0``  deliveries         the message's id     its subscribers (a message without any
                                               sends no row)
``1``  a rejected message the message's id     ``[JSON [topic, reason]]`` (topic may be
                                               null)
``2``  fanout histogram   a fanout ``f``       ``[decimal count]`` of the partition's
                                               routed messages with ``f`` deliveries
``3``  top topics         messages of the      ``["<fanout>:<topic>"]``, for the
                          topic (in this       partition's ``top`` topics by deliveries
                          partition)           (ties by topic) and its split topics
=====  =================  ===================  ===========================================

Why this shape (measured on 1,000,000 messages, mean fanout 9.3, 2 cores): one stream
written in one pass is about twice as fast as persisting a wide tagged stream and splitting
it; one row per message with an array of subscribers, exploded by the JVM, costs the Python
workers about 1.5 CPU-seconds less than one row per delivery (10.1 against 11.7, warm JVM).

The job hash-partitions messages by topic, so all messages of a topic are routed in one
partition: a partition's per-topic figures are the topic's global figures, and the global
top topics are among the partitions' own top lists (exact, ties included), so a partition
sends only ``top`` rows instead of one row per distinct topic. With ``route --salt``, the
messages of a few hot topics (:attr:`RouteSetup.split_topics`) are spread over many
partitions instead: a partition sends its top ``top`` among the other topics, as before, plus
one row for each split topic it routed, and the driver sums the rows per topic (a topic's
fanout is the same in every partition). The figures stay exact: a topic that is not split and
is among the global top ``top`` is among its partition's top ``top`` of the topics not split.

A routed message is counted once in its partition's histogram and a rejected one is one
kind-1 row, so the job reconciles ``messages_in == messages_routed + messages_rejected``
without a second pass over the messages. ``reason`` is the ``InvalidTopicError`` /
``TypeError`` message (a null topic is a TypeError, a null message_id gives ``message_id is
null``). A bad row never raises out of :meth:`Router.route`: anything else the matcher raises
becomes a rejection with reason ``matcher error: <type>: <message>`` (a matcher bug, counted
apart in the summary).

The adapters (:func:`arrow_partition` for ``mapInArrow``, :func:`pandas_partition` for
``mapInPandas``, :func:`rdd_partition` for ``RDD.mapPartitions``; ``--impl``, :data:`IMPLS`)
each get their task's matcher from :func:`task_router` and feed the core, and
:func:`route_frame` applies one of them to a DataFrame; none imports pyspark at module level,
so the core is tested without Spark.

**One build per Python worker.** Spark reuses a Python worker process for task after task
(``spark.python.worker.reuse``, true by default), so :func:`task_router` takes the matcher
this worker built for an earlier task of the same job, if it kept one
(:mod:`experiments.pipeline.workercache`, keyed by :attr:`RouteSetup.cache_key` with the
matcher's name, dialect and ``max_words``), and builds (with the cyclic garbage collector
paused) only otherwise. ``inverted_bitmap`` is built over each partition's own topics and is
never kept. Each task reports whether it built or reused, the build's seconds, the worker's
resident memory and its own messages and seconds through :attr:`RouteSetup.stats` (a Spark
accumulator; ``summary.json`` shows them as ``matcher_builds`` and ``tasks``).
"""

from __future__ import annotations

import heapq
import json
import time
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from ctrie import InvalidTopicError, UnsupportedPatternError, validate_pattern, validate_topic

from . import matchers, workercache

__all__ = [
    "DEFAULT_IMPL",
    "DELIVERIES",
    "DELIVERY",
    "FANOUT",
    "IDS_STREAM_DDL",
    "IMPLS",
    "MATCHER_ERROR",
    "PHASES",
    "REJECTED",
    "STREAM_DDL",
    "TOPIC",
    "RouteSetup",
    "Router",
    "arrow_partition",
    "check_subscriptions",
    "pandas_partition",
    "rdd_partition",
    "route_frame",
    "figure_groups",
    "names_array",
    "stream_groups",
    "subscriber_ids",
    "task_router",
]

DELIVERY, REJECTED, FANOUT, TOPIC = 0, 1, 2, 3

#: Prefix of the reason of a message the matcher failed on with an unexpected exception.
MATCHER_ERROR = "matcher error: "

#: The phases of a ``mapInArrow`` task's time (after its matcher): ``input`` waiting for and
#: converting the input batches (``to_pylist``), ``lookup`` routing them (:meth:`Router.route`),
#: ``arrow`` building the output batches, ``output`` handing them to Spark (serialising, and
#: waiting while the JVM takes them: exploding and writing Parquet).
PHASES = ("input", "lookup", "arrow", "output")

#: The stream every adapter produces, as a Spark DDL string.
STREAM_DDL = "kind tinyint, message_id bigint, subscribers array<string>"

#: The stream of ``route --deliveries ids`` (mapInArrow only): a delivery row's array holds its
#: subscribers' indices into :attr:`RouteSetup.names`; a row of the other kinds holds the
#: UTF-8 bytes of the one value it would carry as a string.
IDS_STREAM_DDL = "kind tinyint, message_id bigint, subscriber_ids array<int>"

#: ``route --deliveries`` forms (see :attr:`RouteSetup.deliveries`).
DELIVERIES = ("rows", "ids")


def check_subscriptions(rows: Iterable[tuple[Any, Any]], matcher: str, dialect: str,
                        max_words: int | None = None, build: bool = True
                        ) -> tuple[list[tuple[str, str]], list[tuple[Any, Any, str]], Any]:
    """Split subscription rows into accepted pairs and rejected ``(pattern, subscriber,
    reason)``; also return a matcher ``matcher`` holding the accepted pairs, or None if not
    ``build`` (then a matcher is built only if it may refuse a valid pattern, see
    :data:`matchers.MAY_REFUSE`: at 1,000,000 subscriptions a build is most of the check).

    A row is rejected if its pattern is null or invalid in ``dialect``, its subscriber is
    null, or the matcher's algorithm cannot represent the pattern
    (``UnsupportedPatternError``). Accepted pairs are deduplicated, first occurrence first.
    """
    m = None
    if build or matcher in matchers.MAY_REFUSE:
        m = matchers.make(matcher, dialect, topic_space=(), max_words=max_words)
    subscribe = m.subscribe if m is not None else None
    accepted: dict[tuple[str, str], None] = {}
    rejected: list[tuple[Any, Any, str]] = []

    def check() -> None:
        for pattern, subscriber in rows:
            try:
                validate_pattern(pattern, dialect)
                if subscriber is None:
                    raise TypeError("subscriber is null")
                if subscribe is not None:
                    subscribe(pattern, subscriber)
            except (InvalidTopicError, UnsupportedPatternError, TypeError) as exc:
                rejected.append((pattern, subscriber, str(exc)))
                continue
            accepted[(pattern, subscriber)] = None

    workercache.build_paused(check, freeze=False)
    return list(accepted), rejected, m


class Router:
    """Routes lists of (message_id, topic) through one matcher; keeps partition figures.

    The figures are gathered per call in flat lists and folded into counters by C code
    (``Counter.update``, ``dict.update``): no container is created per message.
    """

    __slots__ = ("_lookup", "histogram", "topic_messages", "topic_fanout", "matcher",
                 "messages")

    def __init__(self, matcher: Any) -> None:
        self.matcher = matcher
        self._lookup = matcher.lookup
        self.messages = 0  # rows routed or rejected
        self.histogram: Counter[int] = Counter()  # fanout -> routed messages
        self.topic_messages: Counter[str] = Counter()  # topic with deliveries -> messages
        self.topic_fanout: dict[str, int] = {}  # topic with deliveries -> its fanout

    def route(self, ids: list, topics: list) -> tuple[list, list, list, list, list, list]:
        """Route one chunk. Returns the messages with deliveries ``(ids, offsets,
        subscribers)`` -- message ``ids[i]`` goes to ``subscribers[offsets[i]:offsets[i +
        1]]`` -- and the rejections ``(ids, topics, reasons)``."""
        lookup = self._lookup
        self.messages += len(ids)
        d_ids: list[int] = []
        offsets: list[int] = [0]
        d_subs: list[str] = []
        r_ids: list[Any] = []
        r_topics: list[Any] = []
        r_reasons: list[str] = []
        zeros = 0
        end = 0
        hit_topics: list[str] = []
        hit_fanouts: list[int] = []
        for mid, topic in zip(ids, topics):
            try:
                if mid is None:
                    raise TypeError("message_id is null")
                subs = lookup(topic)
            except (InvalidTopicError, TypeError) as exc:
                r_ids.append(mid)
                r_topics.append(topic)
                r_reasons.append(str(exc))
                continue
            except Exception as exc:  # a matcher bug: keep the row, say what happened
                r_ids.append(mid)
                r_topics.append(topic)
                r_reasons.append(f"{MATCHER_ERROR}{type(exc).__name__}: {exc}")
                continue
            n = len(subs)
            if n:
                d_ids.append(mid)
                d_subs.extend(subs)
                end += n
                offsets.append(end)
                hit_topics.append(topic)
                hit_fanouts.append(n)
            else:
                zeros += 1
        if zeros:
            self.histogram[0] += zeros
        self.histogram.update(hit_fanouts)
        self.topic_messages.update(hit_topics)
        self.topic_fanout.update(zip(hit_topics, hit_fanouts))
        return d_ids, offsets, d_subs, r_ids, r_topics, r_reasons

    def top_topics(self, k: int, leave_out: frozenset[str] = frozenset()
                   ) -> list[tuple[str, int, int]]:
        """The ``k`` topics with most deliveries, as ``(topic, fanout, messages)``, by
        deliveries descending then topic ascending; topics in ``leave_out`` are not ranked."""
        fan = self.topic_fanout
        items: Iterable[tuple[str, int]] = self.topic_messages.items()
        if leave_out:
            items = [tc for tc in items if tc[0] not in leave_out]
        return [(t, fan[t], c) for t, c in heapq.nsmallest(
            k, items, key=lambda tc: (-tc[1] * fan[tc[0]], tc[0]))]


#: A group of stream rows of one kind: ``(kind, message_ids, offsets, values)``; row ``i``
#: is ``(kind, message_ids[i], values[offsets[i]:offsets[i + 1]])``.
Group = tuple[int, list, list, list]


def _single(kind: int, ids: list, values: list) -> Group:
    return kind, ids, list(range(len(values) + 1)), values


def stream_groups(router: Router, ids: list, topics: list) -> Iterator[Group]:
    """Route one chunk; yield its deliveries and rejections as stream groups."""
    d_ids, offsets, d_subs, r_ids, r_topics, r_reasons = router.route(ids, topics)
    if d_ids:
        yield DELIVERY, d_ids, offsets, d_subs
    if r_ids:
        yield _single(REJECTED, r_ids,
                      [json.dumps([t, r]) for t, r in zip(r_topics, r_reasons)])


def figure_groups(router: Router, top: int, split: frozenset[str] = frozenset()
                  ) -> Iterator[Group]:
    """The partition's histogram, its ``top`` topics but the ``split`` ones, and every
    ``split`` topic it routed with deliveries, as stream groups."""
    hist = router.histogram
    if hist:
        yield _single(FANOUT, list(hist), [str(c) for c in hist.values()])
    best = router.top_topics(top, split)
    counts, fan = router.topic_messages, router.topic_fanout
    best += [(t, fan[t], counts[t]) for t in sorted(split) if t in counts]
    if best:
        yield _single(TOPIC, [c for _, _, c in best], [f"{f}:{t}" for t, f, _ in best])


def _rows(group: Group) -> Iterator[tuple[int, Any, list]]:
    kind, ids, offsets, values = group
    for i, mid in enumerate(ids):
        yield kind, mid, values[offsets[i]:offsets[i + 1]]


@dataclass(frozen=True)
class RouteSetup:
    """What a partition needs to build its matcher (pickled into every task)."""

    subscriptions: Any  # a Spark Broadcast of list[(pattern, subscriber)], or the list itself
    matcher: str = "cstrie"
    dialect: str = "nats"
    max_words: int | None = None
    top: int = 20  # top topics a partition sends
    #: Names this job's subscriptions in the Python workers' matcher cache (a fresh id the
    #: driver draws per job); None: build in every task.
    cache_key: str | None = None
    #: A Spark accumulator (:class:`workercache.StatsParam`) that takes one dict per task,
    #: or None.
    stats: Any = None
    #: Hot topics whose messages the job spread over several partitions (``--salt``).
    split_topics: frozenset[str] = frozenset()
    #: The subscriber names (a Spark Broadcast of a list, or the list), when
    #: ``subscriptions`` holds ``(pattern, index into names)`` (:func:`subscriber_ids`): the
    #: matcher then returns indices, and :func:`arrow_partition` turns them into the names
    #: in Arrow (``take``), with no Python string per delivery. None: ``subscriptions``
    #: holds the names.
    names: Any = None
    #: The output form (``route --deliveries``): ``rows``, the stream of :data:`STREAM_DDL`;
    #: ``ids`` (mapInArrow with ``names`` only), that of :data:`IDS_STREAM_DDL`.
    deliveries: str = "rows"

    def pairs(self) -> list[tuple[str, str]]:
        subs = self.subscriptions
        return subs.value if hasattr(subs, "value") else subs

    def router(self, topics_seen: Iterable[Any] = ()) -> Router:
        """One new matcher holding the subscriptions, in a Router."""
        space: list[str] = []
        if self.matcher in matchers.NEEDS_TOPIC_SPACE:
            seen = set()
            for t in topics_seen:
                if t not in seen:
                    seen.add(t)
                    try:
                        validate_topic(t, self.dialect)
                    except (InvalidTopicError, TypeError):
                        continue
                    space.append(t)
        # Loaded first: PySpark's Broadcast.value re-enables the collector when it returns.
        pairs = self.pairs()
        return Router(workercache.build_paused(lambda: matchers.build(
            self.matcher, self.dialect, pairs, topic_space=space, max_words=self.max_words)))


def subscriber_ids(pairs: list[tuple[str, str]]) -> tuple[list[tuple[str, int]], list[str]]:
    """``pairs`` with each subscriber replaced by its index in the sorted distinct
    subscriber names, and those names (see :attr:`RouteSetup.names`)."""
    names = sorted({s for _, s in pairs})
    index = {s: i for i, s in enumerate(names)}
    return [(p, index[s]) for p, s in pairs], names


#: Subscriber names as Arrow arrays, by job (:attr:`RouteSetup.cache_key`), newest last: at
#: most two, as :data:`workercache.BUILT` keeps.
_NAMES: OrderedDict[str, Any] = OrderedDict()


def names_array(setup: RouteSetup) -> Any:
    """:attr:`RouteSetup.names` as a pyarrow string array, made once per Python worker and
    job."""
    import pyarrow as pa

    key = setup.cache_key
    arr = _NAMES.get(key) if key is not None else None
    if arr is None:
        names = setup.names
        arr = pa.array(names.value if hasattr(names, "value") else names, pa.string())
        if key is not None:
            _NAMES[key] = arr
            while len(_NAMES) > workercache.BUILT_SIZE:
                _NAMES.popitem(last=False)
    return arr


def task_router(setup: RouteSetup, topics_seen: Iterable[Any] = ()) -> tuple[Router, dict]:
    """The Router of one task and what its matcher cost (see
    :func:`workercache.kept_matcher`): the matcher this Python worker built for the same
    subscriptions and settings, if it kept one, else a new one (``inverted_bitmap``, built
    over the partition's own topics, always)."""
    key = None
    if setup.cache_key is not None and setup.matcher not in matchers.NEEDS_TOPIC_SPACE:
        key = (setup.cache_key, setup.matcher, setup.dialect, setup.max_words,
               setup.names is not None)
    matcher, info = workercache.kept_matcher(key, lambda: setup.router(topics_seen).matcher)
    return Router(matcher), info


# --- mapInArrow -----------------------------------------------------------------------------


def arrow_partition(setup: RouteSetup, batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` body: record batches of (message_id, topic) -> stream batches."""
    import numpy as np
    import pyarrow as pa

    ids_form = setup.deliveries == "ids"
    schema = pa.schema([("kind", pa.int8()), ("message_id", pa.int64()),
                        ("subscriber_ids", pa.list_(pa.int32())) if ids_form else
                        ("subscribers", pa.list_(pa.string()))])

    names = None if setup.names is None else names_array(setup)

    def batch(group: Group) -> Any:
        kind, ids, offsets, values = group
        if kind == DELIVERY and ids_form:
            subs = pa.array(values, pa.int32())
        elif kind == DELIVERY and names is not None:  # no Python str per delivery
            subs = names.take(pa.array(values, pa.int32()))
        elif ids_form:  # one row per value, its array the value's UTF-8 bytes
            data = [v.encode("utf-8") for v in values]
            offsets = np.cumsum([0] + [len(d) for d in data])
            subs = pa.array(np.frombuffer(b"".join(data), dtype=np.uint8).astype(np.int32))
        else:
            subs = pa.array(values, pa.string())
        lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), subs)
        return pa.RecordBatch.from_arrays(
            [pa.array(np.full(len(ids), kind, dtype=np.int8)), pa.array(ids, pa.int64()),
             lists], schema=schema)

    cpu0, clock = time.process_time(), time.perf_counter
    if setup.matcher in matchers.NEEDS_TOPIC_SPACE:
        batches = list(batches)
        router, info = task_router(
            setup, (t for b in batches for t in b.column("topic").to_pylist()))
    else:
        router, info = task_router(setup)
    # Where the task's time goes (summary.json's tasks.phase_seconds): waiting for and
    # converting input batches, routing them, building output batches, handing them over.
    phases = dict.fromkeys(PHASES, 0.0)
    batches = iter(batches)
    while True:
        t0 = clock()
        b = next(batches, None)
        if b is None:
            break
        ids, topics = b.column("message_id").to_pylist(), b.column("topic").to_pylist()
        t1 = clock()
        groups = list(stream_groups(router, ids, topics))
        phases["input"] += t1 - t0
        phases["lookup"] += clock() - t1
        for group in groups:
            t2 = clock()
            out = batch(group)
            t3 = clock()
            yield out
            phases["arrow"] += t3 - t2
            phases["output"] += clock() - t3
    for group in figure_groups(router, setup.top, setup.split_topics):
        yield batch(group)
    info.update(phases=phases, cpu_seconds=time.process_time() - cpu0)
    workercache.report_task(setup.stats, info, router.messages)


# --- mapInPandas ----------------------------------------------------------------------------


def _pylist(series: Any) -> list:
    """A column as a list with None (not NaN / pd.NA) for nulls."""
    values = series.tolist()
    if series.hasnans:
        isna = series.isna().tolist()
        values = [None if na else v for v, na in zip(values, isna)]
    return values


def pandas_partition(setup: RouteSetup, frames: Iterator[Any]) -> Iterator[Any]:
    """``mapInPandas`` body: DataFrames of (message_id, topic) -> stream DataFrames."""
    import pandas as pd

    def frame(group: Group) -> Any:
        _, ids, _, _ = group
        rows = list(_rows(group))
        return pd.DataFrame({
            "kind": pd.Series([r[0] for r in rows], dtype="int8"),
            # nullable: a rejected message may have a null id
            "message_id": pd.Series(ids, dtype="Int64" if None in ids else "int64"),
            "subscribers": pd.Series([r[2] for r in rows], dtype=object)})

    if setup.matcher in matchers.NEEDS_TOPIC_SPACE:
        frames = list(frames)
        router, info = task_router(setup, (t for f in frames for t in _pylist(f["topic"])))
    else:
        router, info = task_router(setup)
    for f in frames:
        ids = [None if v is None else int(v) for v in _pylist(f["message_id"])]
        for group in stream_groups(router, ids, _pylist(f["topic"])):
            yield frame(group)
    for group in figure_groups(router, setup.top, setup.split_topics):
        yield frame(group)
    workercache.report_task(setup.stats, info, router.messages)


# --- RDD.mapPartitions ----------------------------------------------------------------------

#: Rows handed to the core at a time by the RDD adapter.
RDD_CHUNK = 10_000


def rdd_partition(setup: RouteSetup, rows: Iterator[Any]) -> Iterator[tuple]:
    """``RDD.mapPartitions`` body: Rows of (message_id, topic) -> stream tuples."""
    if setup.matcher in matchers.NEEDS_TOPIC_SPACE:
        rows = list(rows)
        router, info = task_router(setup, (r[1] for r in rows))
    else:
        router, info = task_router(setup)
    rows = iter(rows)
    while True:
        chunk = [r for _, r in zip(range(RDD_CHUNK), rows)]
        if not chunk:
            break
        for group in stream_groups(router, [r[0] for r in chunk], [r[1] for r in chunk]):
            yield from _rows(group)
    for group in figure_groups(router, setup.top, setup.split_topics):
        yield from _rows(group)
    workercache.report_task(setup.stats, info, router.messages)


# --- the Spark frame -------------------------------------------------------------------------

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


def route_frame(spark: Any, messages: Any, setup: RouteSetup, impl: str) -> Any:
    """Rows ``(kind, message_id, subscriber)`` of routing ``messages`` with ``impl``: the
    stream of :data:`STREAM_DDL` with its subscriber arrays exploded; with ``deliveries``
    ``ids``, the stream of :data:`IDS_STREAM_DDL` as it is."""
    from pyspark.sql import functions as F

    if setup.deliveries == "ids":  # one row per message: nothing to explode
        if impl != "arrow" or setup.names is None:
            raise ValueError("deliveries 'ids' needs impl 'arrow' and subscriber names")
        return messages.mapInArrow(partial(arrow_partition, setup), IDS_STREAM_DDL)
    if impl == "arrow":
        stream = messages.mapInArrow(partial(arrow_partition, setup), STREAM_DDL)
    elif impl == "pandas":
        stream = messages.mapInPandas(partial(pandas_partition, setup), STREAM_DDL)
    elif impl == "rdd":
        rdd = messages.rdd.mapPartitions(partial(rdd_partition, setup))
        stream = spark.createDataFrame(rdd, STREAM_DDL)
    else:
        raise ValueError(f"unknown impl {impl!r}; choose from {', '.join(IMPLS)}")
    return stream.select("kind", "message_id", F.explode("subscribers").alias("subscriber"))
