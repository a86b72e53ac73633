"""The timed loops of the ``latency`` and ``primitives`` experiments.

Each benchmark is a :class:`Bench`: a name and a *time function* ``f(loops) -> seconds``
in the form of pyperf's ``Runner.bench_time_func`` (the function times only the work it
should; set-up such as the hot population happens on the first call, untimed). The same
functions are run by pyperf worker processes (:mod:`experiments._pyperf_worker`) or, where
pyperf is not installed, by the stdlib fallback in :mod:`experiments.microbench`.

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
from dataclasses import dataclass, field
from itertools import repeat
from time import perf_counter
from typing import Any

from . import registry, workloads

__all__ = ["DENSE_ALGORITHMS", "PRIMITIVES", "Bench", "benches", "dense_lookup_bench",
           "latency_benches", "primitive_benches"]

TimeFunc = Callable[[int], float]

#: Subscriber of the timed latency operations.
SUBSCRIBER = "s"
#: Words of the latency pattern and topic (the optimized bitmap's size).
LATENCY_WORDS = 5
#: The matchers of the dense lookup workload, and the one dialect it is measured in.
DENSE_ALGORITHMS = ("cstrie", "locked_trie_nocache", "paho")
DENSE_DIALECT = "mqtt"
#: Dense topics whose answers are checked against ``ctrie.matches`` before timing.
DENSE_ORACLE_TOPICS = 20


@dataclass
class Bench:
    """One benchmark: ``setup()`` returns the time function; ``skip`` says why it cannot run."""

    name: str
    setup: Callable[[], TimeFunc] | None
    inner_loops: int = 1
    params: dict[str, Any] = field(default_factory=dict)
    skip: str | None = None
    #: Fixed loop count instead of calibration, for a benchmark whose untimed set-up per
    #: loop dwarfs its timed part (calibrating on the timed part would take minutes).
    loops: int | None = None

    _func: TimeFunc | None = None

    def __call__(self, loops: int) -> float:
        """Time ``loops`` iterations; the first call builds the state (untimed)."""
        if self._func is None:
            assert self.setup is not None, self.skip
            self._func = self.setup()
        return self._func(loops)


# --- latency --------------------------------------------------------------------------------


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

    makers = {
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
                          (lambda maker=maker, state=state: maker(state)), params=params)
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
    from ctrie import matches

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
            want = frozenset(i for i, p in enumerate(pats) if matches(p, t, dialect))
            got = look(t)
            if got != want:
                raise AssertionError(f"{algorithm} ({dialect}): lookup({t!r}) = "
                                     f"{sorted(got)[:10]}, ctrie.matches: {sorted(want)[:10]}")
        params["oracle_checked"] = min(len(tops), DENSE_ORACLE_TOPICS)
        params["matches_per_topic"] = sum(len(look(t)) for t in tops) / len(tops)
        return _cycle(look, tops)
    return Bench("lookup/dense/distinct", setup, params=params)


# --- primitives -----------------------------------------------------------------------------


def _loop_overhead() -> TimeFunc:
    def f(loops: int) -> float:
        t0 = perf_counter()
        for _ in repeat(None, loops):
            pass
        return perf_counter() - t0
    return f


def _atomicref_get() -> TimeFunc:
    from cereggii import AtomicRef

    get = AtomicRef(object()).get

    def f(loops: int) -> float:
        t0 = perf_counter()
        for _ in repeat(None, loops):
            get()
        return perf_counter() - t0
    return f


def _atomicref_cas_success() -> TimeFunc:
    from cereggii import AtomicRef

    a, b = object(), object()
    cas = AtomicRef(a).compare_and_set

    def f(loops: int) -> float:  # two successful CASes per loop (inner_loops=2)
        t0 = perf_counter()
        for _ in repeat(None, loops):
            cas(a, b)
            cas(b, a)
        return perf_counter() - t0
    return f


def _atomicref_cas_failure() -> TimeFunc:
    from cereggii import AtomicRef

    a, b = object(), object()
    cas = AtomicRef(a).compare_and_set

    def f(loops: int) -> float:
        t0 = perf_counter()
        for _ in repeat(None, loops):
            cas(b, b)
        return perf_counter() - t0
    return f


def _lock_acquire_release() -> TimeFunc:
    import threading

    lock = threading.Lock()
    acquire, release = lock.acquire, lock.release

    def f(loops: int) -> float:
        t0 = perf_counter()
        for _ in repeat(None, loops):
            acquire()
            release()
        return perf_counter() - t0
    return f


def _rwlock(side: str) -> Callable[[], TimeFunc]:
    def setup() -> TimeFunc:
        from baselines.rwlock import RWLock

        rw = RWLock()
        if side == "read":
            acquire, release = rw.acquire_read, rw.release_read
        else:
            acquire, release = rw.acquire_write, rw.release_write

        def f(loops: int) -> float:
            t0 = perf_counter()
            for _ in repeat(None, loops):
                acquire()
                release()
            return perf_counter() - t0
        return f
    return setup


def atomics_unavailable() -> str | None:
    """Why the ``atomics`` package cannot be used here, or None."""
    try:
        import atomics

        a = atomics.atomic(width=8, atype=atomics.INT)
        a.load()
    except Exception as exc:  # ImportError, or a build that imports but cannot run
        return f"not available: {type(exc).__name__}: {exc}"
    return None


def _atomics_load() -> TimeFunc:
    import atomics

    load = atomics.atomic(width=8, atype=atomics.INT).load

    def f(loops: int) -> float:
        t0 = perf_counter()
        for _ in repeat(None, loops):
            load()
        return perf_counter() - t0
    return f


def _atomics_cas() -> TimeFunc:
    import atomics

    cas = atomics.atomic(width=8, atype=atomics.INT).cmpxchg_strong

    def f(loops: int) -> float:  # two successful compare-exchanges per loop
        t0 = perf_counter()
        for _ in repeat(None, loops):
            cas(0, 1)
            cas(1, 0)
        return perf_counter() - t0
    return f


#: The primitive benchmarks, in the order tables and figures list them.
PRIMITIVES = ("loop_overhead", "atomicref_get", "atomicref_cas_success",
              "atomicref_cas_failure", "lock_acquire_release", "rwlock_read", "rwlock_write",
              "atomics_load", "atomics_cas")


def primitive_benches() -> list[Bench]:
    """The primitive benchmarks: each times one operation (or one acquire+release pair)."""
    atomics_skip = atomics_unavailable()
    return [
        Bench("loop_overhead", _loop_overhead, params={"op": "empty loop iteration"}),
        Bench("atomicref_get", _atomicref_get, params={"op": "cereggii.AtomicRef.get"}),
        Bench("atomicref_cas_success", _atomicref_cas_success, inner_loops=2,
              params={"op": "cereggii.AtomicRef.compare_and_set, succeeding"}),
        Bench("atomicref_cas_failure", _atomicref_cas_failure,
              params={"op": "cereggii.AtomicRef.compare_and_set, failing"}),
        Bench("lock_acquire_release", _lock_acquire_release,
              params={"op": "threading.Lock acquire+release, uncontended"}),
        Bench("rwlock_read", _rwlock("read"),
              params={"op": "baselines.rwlock.RWLock acquire_read+release_read"}),
        Bench("rwlock_write", _rwlock("write"),
              params={"op": "baselines.rwlock.RWLock acquire_write+release_write"}),
        Bench("atomics_load", _atomics_load, params={"op": "atomics int load"},
              skip=atomics_skip),
        Bench("atomics_cas", _atomics_cas, inner_loops=2,
              params={"op": "atomics int cmpxchg_strong, succeeding"}, skip=atomics_skip),
    ]


def benches(suite: str, group: str, seed: int, size_name: str) -> list[Bench]:
    """The benchmarks of one group: ``latency`` ``<algorithm>:<dialect>``, or ``primitives``."""
    from .config import SIZES

    size = SIZES[size_name]
    if suite == "latency":
        algorithm, _, dialect = group.partition(":")
        return latency_benches(algorithm, dialect, seed, size.hot_population,
                               size.latency_batch, size.lookup_pool, size.dense_filters,
                               size.dense_topics)
    if suite == "primitives":
        return primitive_benches()
    raise ValueError(f"unknown suite {suite!r}")
