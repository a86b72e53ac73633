"""Routing one partition of messages: the pure-Python core that the Spark adapters feed.

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

The Spark adapters (:mod:`experiments.pipeline.adapters`: ``mapInArrow``, ``mapInPandas``,
``RDD.mapPartitions``, ``--impl``) each get their task's matcher from :func:`task_router` and
feed the core; this module imports neither pyspark nor pyarrow, so the core is tested
without Spark.

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
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ctrie import (Dialect, InvalidTopicError, UnsupportedPatternError, validate_pattern,
                   validate_topic)

from . import matchers, workercache

__all__ = [
    "DELIVERIES",
    "DELIVERY",
    "FANOUT",
    "IDS_STREAM_DDL",
    "MATCHER_ERROR",
    "REJECTED",
    "STREAM_DDL",
    "TOPIC",
    "RouteSetup",
    "Router",
    "check_subscriptions",
    "figure_groups",
    "rows_of",
    "stream_groups",
    "subscriber_ids",
    "task_router",
]

DELIVERY, REJECTED, FANOUT, TOPIC = 0, 1, 2, 3

#: Prefix of the reason of a message the matcher failed on with an unexpected exception.
MATCHER_ERROR = "matcher error: "

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

    d = Dialect.coerce(dialect)

    def check() -> None:
        for pattern, subscriber in rows:
            try:
                validate_pattern(pattern, d)
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


def rows_of(group: Group) -> Iterator[tuple[int, Any, list]]:
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
    #: matcher then returns indices, and :func:`adapters.arrow_partition` turns them into
    #: the names in Arrow (``take``), with no Python string per delivery. None:
    #: ``subscriptions`` holds the names.
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
            d = Dialect.coerce(self.dialect)
            for t in topics_seen:
                if t not in seen:
                    seen.add(t)
                    try:
                        validate_topic(t, d)
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
