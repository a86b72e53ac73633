"""The ``latency`` experiment's timed loops (:class:`~experiments.measure.bench.Bench`
objects, run by :mod:`experiments.measure.microbench`).

Latency benchmarks of one ``(algorithm, dialect)`` group, named ``<op>/<state>/<variant>``:

- ``subscribe/*/faithful``: repeats ``subscribe(P, s)``, a no-op after the first call, as
  in the original; ``subscribe/*/real``: subscribes fresh patterns shaped like ``P``, in
  batches of ``batch`` timed calls, each batch unsubscribed again untimed;
- ``unsubscribe/*/faithful``: subscribes ``P`` once, then repeats ``unsubscribe(P, s)``
  (removes nothing after the first call); ``unsubscribe/*/real``: batches of fresh
  patterns subscribed untimed, then unsubscribed timed;
- ``lookup/*/faithful``: subscribes ``P``, repeats ``lookup(T)``; ``lookup/*/distinct``:
  cycles through ``pool`` distinct topics that ``P`` matches (defeats result caches);
- state ``cold`` starts from an empty matcher, ``hot`` from ``hot_population`` random
  5-word subscriptions (sparse: a topic matches at most one of them);
- ``lookup/dense/distinct`` (CS-trie, LockedTrie without its cache and paho, MQTT form
  only): the dense wildcard workload of :func:`experiments.workloads.dense_workload`,
  ``dense_filters`` filters (subscriber ``i`` for filter ``i``, about 9 matches per topic),
  cycling through ``dense_topics`` topics; the first answers are checked against
  :func:`ctrie.matches`, and ``params.matches_per_topic`` is set by the preflight run.

The inverted bitmap's topic space holds the hot population, ``T`` and the lookup pool (in
the original it held 8-9 fixed topics, so its "hot" run was really cold). The optimized
bitmap is sized for 5 words.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from itertools import repeat
from time import perf_counter
from typing import Any

from .. import registry, workloads
from .bench import Bench, TimeFunc

__all__ = ["DENSE_ALGORITHMS", "dense_lookup_bench", "latency_benches"]

#: Subscriber of the timed latency operations.
SUBSCRIBER = "s"
#: Words of the latency pattern and topic (the optimized bitmap's size).
LATENCY_WORDS = 5
#: The matchers of the dense lookup workload, and the one dialect it is measured in.
DENSE_ALGORITHMS = ("cstrie", "locked_trie_nocache", "paho")
DENSE_DIALECT = "mqtt"
#: Dense topics whose answers are checked against ``ctrie.matches`` before timing.
DENSE_ORACLE_TOPICS = 20


def _forms(dialect: str) -> Callable[[str], str]:
    return workloads.to_mqtt if dialect == "mqtt" else (lambda s: s)


def _chunks(items: list[str], most: int, loops: int) -> Iterator[list[str]]:
    """``loops`` items in chunks of at most ``most``, each from the start of ``items``."""
    done = 0
    while done < loops:
        chunk = items[: min(most, loops - done)]
        yield chunk
        done += len(chunk)


def _cycle(look: Callable[[str], Any], topics: list[str]) -> TimeFunc:
    """Time ``look`` over ``topics`` in turn, from the first again every ``len(topics)``."""
    def f(loops: int) -> float:
        total = 0.0
        for chunk in _chunks(topics, len(topics), loops):
            t0 = perf_counter()
            for t in chunk:
                look(t)
            total += perf_counter() - t0
        return total
    return f


def latency_benches(algorithm: str, dialect: str, seed: int, hot_population: int,
                    batch: int, pool: int, dense_filters: int, dense_topics: int
                    ) -> list[Bench]:
    """The 12 latency benchmarks of one ``(algorithm, dialect)`` group, and the dense lookup
    where the group is one of :data:`DENSE_ALGORITHMS` on :data:`DENSE_DIALECT`."""
    form = _forms(dialect)
    pattern = form(workloads.LATENCY_PATTERN)
    topic = form(workloads.LATENCY_TOPIC)
    hot = [form(p) for p in workloads.hot_population(seed, hot_population, LATENCY_WORDS)]
    hot_subs = [f"h{i}" for i in range(len(hot))]
    fresh = [form(p) for p in workloads.fresh_patterns(batch)]
    topics = [form(t) for t in workloads.lookup_pool(pool)]
    space = [*hot, topic, *topics]
    common = {
        "pattern": pattern, "topic": topic, "subscriber": SUBSCRIBER,
        "hot_population": hot_population, "batch": batch, "lookup_pool": pool,
    }
    if algorithm == "inverted_bitmap":
        common["topic_space"] = len(space)
    if algorithm == "optimized_bitmap":
        common["max_words"] = LATENCY_WORDS
    if algorithm == "paho":
        common["adapter"] = "MQTTMatcher value = set of subscribers; lookup unions them"

    def build(state: str) -> Any:
        m = registry.make(algorithm, dialect, topic_space=space, max_words=LATENCY_WORDS)
        if state == "hot":
            refused = registry.populate(m, hot, hot_subs)
            if refused:
                raise RuntimeError(f"{algorithm} refused {refused} hot-population patterns")
        return m

    def check_lookup(m: Any) -> None:
        got = m.lookup(topic)
        if SUBSCRIBER not in got:
            raise AssertionError(
                f"{algorithm} ({dialect}): lookup({topic!r}) = {sorted(map(str, got))[:5]} "
                f"misses subscriber {SUBSCRIBER!r} of {pattern!r}")

    def subscribe_faithful(state: str) -> TimeFunc:
        m = build(state)
        sub = m.subscribe

        def f(loops: int) -> float:
            t0 = perf_counter()
            for _ in repeat(None, loops):
                sub(pattern, SUBSCRIBER)
            return perf_counter() - t0
        return f

    def subscribe_real(state: str) -> TimeFunc:
        m = build(state)
        sub, unsub = m.subscribe, m.unsubscribe

        def f(loops: int) -> float:
            total = 0.0
            for chunk in _chunks(fresh, batch, loops):
                t0 = perf_counter()
                for p in chunk:
                    sub(p, SUBSCRIBER)
                total += perf_counter() - t0
                for p in chunk:
                    if not unsub(p, SUBSCRIBER):
                        raise AssertionError(f"{algorithm}: unsubscribe({p!r}) found nothing")
            return total
        return f

    def unsubscribe_faithful(state: str) -> TimeFunc:
        m = build(state)
        m.subscribe(pattern, SUBSCRIBER)
        unsub = m.unsubscribe

        def f(loops: int) -> float:
            t0 = perf_counter()
            for _ in repeat(None, loops):
                unsub(pattern, SUBSCRIBER)
            return perf_counter() - t0
        return f

    def unsubscribe_real(state: str) -> TimeFunc:
        m = build(state)
        sub, unsub = m.subscribe, m.unsubscribe

        def f(loops: int) -> float:
            total = 0.0
            for chunk in _chunks(fresh, batch, loops):
                for p in chunk:
                    sub(p, SUBSCRIBER)
                t0 = perf_counter()
                for p in chunk:
                    unsub(p, SUBSCRIBER)
                total += perf_counter() - t0
            return total
        return f

    def lookup_faithful(state: str) -> TimeFunc:
        m = build(state)
        m.subscribe(pattern, SUBSCRIBER)
        check_lookup(m)
        look = m.lookup

        def f(loops: int) -> float:
            t0 = perf_counter()
            for _ in repeat(None, loops):
                look(topic)
            return perf_counter() - t0
        return f

    def lookup_distinct(state: str) -> TimeFunc:
        m = build(state)
        m.subscribe(pattern, SUBSCRIBER)
        check_lookup(m)
        for t in topics[:3]:
            if SUBSCRIBER not in m.lookup(t):
                raise AssertionError(f"{algorithm} ({dialect}): lookup({t!r}) misses {pattern!r}")
        return _cycle(m.lookup, topics)

    makers: dict[tuple[str, str], Callable[[str], TimeFunc]] = {
        ("subscribe", "faithful"): subscribe_faithful,
        ("subscribe", "real"): subscribe_real,
        ("unsubscribe", "faithful"): unsubscribe_faithful,
        ("unsubscribe", "real"): unsubscribe_real,
        ("lookup", "faithful"): lookup_faithful,
        ("lookup", "distinct"): lookup_distinct,
    }
    out = []
    for state in ("cold", "hot"):
        for (op, variant), maker in makers.items():
            params = {**common, "op": op, "state": state, "variant": variant}
            if state == "cold":
                params["hot_population"] = 0
            bench = Bench(f"{op}/{state}/{variant}",
                          partial(maker, state), params=params)
            if algorithm == "inverted_bitmap" and (op, variant) == ("unsubscribe", "real"):
                # Each timed unsubscribe needs an untimed subscribe of a fresh wildcard
                # pattern, which scans the whole topic space (~1000x the timed part).
                bench.loops = 2 * batch
                params["fixed_loops"] = bench.loops
            out.append(bench)
    if algorithm in DENSE_ALGORITHMS and dialect == DENSE_DIALECT:
        out.append(dense_lookup_bench(algorithm, dialect, seed, dense_filters, dense_topics))
    return out


def dense_lookup_bench(algorithm: str, dialect: str, seed: int, filters: int, topics: int
                       ) -> Bench:
    """``lookup/dense/distinct``: lookups cycling through the dense workload's topics."""
    from ctrie import Dialect, matches

    d = Dialect.coerce(dialect)
    form = _forms(dialect)
    wl = workloads.dense_workload(seed, filters, topics)
    pats = [form(p) for p in wl.filters]
    tops = [form(t) for t in wl.topics]
    params: dict[str, Any] = {
        "op": "lookup", "state": "dense", "variant": "distinct", "filters": len(pats),
        "topics": len(tops), "levels": workloads.DENSE_LEVELS,
        "words_per_level": len(workloads.DENSE_WORDS), "subscriber": "i for filter i",
    }
    if algorithm == "paho":
        params["adapter"] = "MQTTMatcher value = set of subscribers; lookup unions them"

    def setup() -> TimeFunc:
        m = registry.make(algorithm, dialect)
        refused = registry.populate(m, pats, range(len(pats)))
        if refused:
            raise RuntimeError(f"{algorithm} refused {refused} dense filters")
        look = m.lookup
        for t in tops[:DENSE_ORACLE_TOPICS]:
            want = frozenset(i for i, p in enumerate(pats) if matches(p, t, d))
            got = look(t)
            if got != want:
                raise AssertionError(f"{algorithm} ({dialect}): lookup({t!r}) = "
                                     f"{sorted(got)[:10]}, ctrie.matches: {sorted(want)[:10]}")
        params["oracle_checked"] = min(len(tops), DENSE_ORACLE_TOPICS)
        params["matches_per_topic"] = sum(len(look(t)) for t in tops) / len(tops)
        return _cycle(look, tops)
    return Bench("lookup/dense/distinct", setup, params=params)
