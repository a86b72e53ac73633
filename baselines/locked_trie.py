"""The NATS sublist design: a subscription trie behind one lock, with a result cache.

The trie's levels and nodes, and the walks that match a topic against them, are in
:mod:`baselines.sublist`; this module holds the lock, the result cache and the Matcher
protocol around them.

:class:`LockedTrie` implements the package's Matcher protocol and adds queue groups
(:meth:`LockedTrie.match`) and NATS-style statistics (:meth:`LockedTrie.stats`).
"""

# size: about 400 lines of code under a class docstring of about 110 that states the NATS
# sublist's behaviour, the result cache's protocol and each deviation from sublist.go; the
# trie itself (levels, nodes, walks) is baselines/sublist.py.

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any, Generic, TypedDict

from ctrie.errors import abbreviate
from ctrie.protocol import S
from ctrie.topics import (
    EMPTY_KEY_WORD,
    Dialect,
    DialectLike,
    join_paths,
    pattern_validator,
    require_hashable,
    topic_validator,
)

from .sublist import (Level, MatchResult, Node, add_to_node, build_result, check_levels,
                      require, set_child, walk_anywhere, walk_terminal)

__all__ = [
    "CACHE_MAX_ENTRIES",
    "CACHE_SWEEP_TARGET",
    "LockedTrie",
    "LockedTrieStats",
    "MatchResult",
]


#: The result cache may hold this many topics; one more triggers a sweep.
CACHE_MAX_ENTRIES = 1024


#: A sweep leaves at most this many entries (the newest still-valid ones).
CACHE_SWEEP_TARGET = 256


class LockedTrieStats(TypedDict):
    """The figures :meth:`LockedTrie.stats` reports (after nats-server's ``SublistStats``)."""

    subscriptions: int  # len(trie): plain pairs plus queue memberships
    cache_entries: int  # cached results valid for the current generation
    inserts: int  # subscribe calls that stored a new pair or membership
    removes: int  # unsubscribe calls that removed one
    matches: int  # successful lookup and match calls, cached or not
    cache_hit_rate: float  # share of those answered from the cache
    max_fanout: int  # largest fanout of a computed (not cached) result
    mean_fanout: float  # mean fanout of the computed results


class LockedTrie(Generic[S]):
    """A subscription trie behind one ``threading.Lock`` (the NATS sublist design), generic
    in the subscriber type, as every matcher (:class:`ctrie.Matcher`).

    ``LockedTrie(dialect="nats", cache=True)`` implements the Matcher protocol of ``docs/api.md``
    in the three dialects, with exactly the semantics of :func:`ctrie.topics.matches`, and
    adds NATS queue groups:

    - ``subscribe(pattern, subscriber, queue=None)`` stores the pair as a plain
      subscription, or as a member of queue group ``queue`` of ``pattern``; idempotent.
    - ``unsubscribe(pattern, subscriber, queue=None)`` removes it and says whether it was
      there.
    - ``lookup(topic)`` returns the *plain* subscribers only, as the protocol says;
      ``match(topic)`` returns a :class:`MatchResult` with the plain subscribers and, per
      queue name, its members.
    - ``subscriptions()`` maps each pattern to its *plain* subscribers (no empty entries);
      ``queue_subscriptions()`` maps each ``(pattern, queue)`` to its members.
    - ``len(trie)`` counts plain (pattern, subscriber) pairs plus queue memberships
      (pattern, queue, subscriber); with no queue groups in use it is exactly the
      protocol's pair count.
    - ``queue`` must be ``None`` or a non-empty ``str`` (``TypeError`` / ``ValueError``).
    - ``stats()`` returns nats-server's figures (:class:`LockedTrieStats`); ``check()``
      verifies the invariants, as ``CSTrie.check()`` does.

    >>> t = LockedTrie("nats")
    >>> t.subscribe("orders.*", "audit")
    >>> t.subscribe("orders.>", "w1", queue="workers")
    >>> t.lookup("orders.new")
    frozenset({'audit'})
    >>> t.match("orders.new").queues["workers"]
    frozenset({'w1'})
    >>> t.subscriptions(), len(t)
    ({'orders.*': frozenset({'audit'})}, 2)
    >>> t.unsubscribe("orders.*", "audit"), t.unsubscribe("orders.*", "audit")
    (True, False)

    Errors: a pattern or topic that is not a ``str``, or an unhashable subscriber, raises
    ``TypeError``; an invalid pattern or topic raises ``ctrie.InvalidTopicError``. Every
    argument is checked before the trie is touched, and new branches are built detached
    and linked in with one store, so a failed call leaves the trie exactly as it was.

    Complexity, for a pattern or topic of ``w`` words: ``subscribe`` and ``unsubscribe``
    are O(w) dict operations (plus O(len(pattern)) validation). An uncached ``lookup``
    validates the topic in O(len(topic)) and visits each trie level whose pattern prefix
    matches a prefix of the topic at most once (NATS, MQTT), or at most once per word
    index (AMQP: O(levels x (w + 1)) even for ``#.a.#.b.#``), plus O(result) to build the
    result. A cached ``lookup`` is one dict probe keyed by the topic string, before any
    validation. ``subscriptions()`` is O(size of the trie).

    Result cache (``cache=True``): topic -> (generation, result). Every mutation bumps the
    generation, so an entry is used only if nothing changed since it was computed. The
    generation is read under the lock, in the same critical section as the walk and the
    store, so a lookup racing a subscribe can never store a stale result under the new
    generation. Only results for valid topics are stored, so a hit needs no validation.
    Past ``CACHE_MAX_ENTRIES`` entries the cache is swept down to the
    ``CACHE_SWEEP_TARGET`` newest valid ones (amortised O(1) per miss; not an LRU).
    The cache pays off when topics repeat between mutations: in the single-threaded
    benchmark below a hit costs 0.10x an uncached lookup. Under writes it does not: in the
    90/10 mix below it answers about 8% of lookups and gives 0.93x the throughput of
    ``cache=False`` (as nats-server notes, heavy interest churn is the case for
    disabling it).

    Thread-safety: every method that reads or writes the trie, the cache or the counters
    holds the one lock, and validation (pure) runs outside it. Results are immutable
    (``frozenset``, read-only mappings). Safe on CPython with and without the GIL.

    Why one ``threading.Lock`` and not :class:`~baselines.rwlock.RWLock`: measured on
    CPython 3.11 with the GIL, on two shared and noisy cores. The trie held 1,000 seeded
    random 5-word NATS subscriptions plus ``foo.*.baz.qux.quux``; the mix ran 4 threads
    doing 90% lookups (a pool of 100 topics) and 10% subscribes. The two variants ran the
    same code, the RW one with lookups on the read side (the walk too) and mutations on
    the write side, interleaved in a shuffled order, 24 processes x 4 rounds. Medians of
    the per-round RWLock / Lock ratios, interquartile range in brackets:

    - one thread, uncached lookup: RWLock takes 1.12x the time [1.03-1.24];
    - one thread, cache hit: 2.19x the time [1.89-2.55];
    - 4-thread mix: 0.92x the throughput without the cache [0.89-1.08], 0.89x with it
      [0.86-1.15].

    With the GIL, readers never run in parallel, so a reader-writer lock buys nothing and
    costs its overhead: its read side takes and releases an internal mutex on the way in
    and again on the way out, with Python bookkeeping in between, where a plain lock is
    one acquire and one release in C. (The lock is taken with ``acquire()`` /
    ``try`` / ``finally`` on the lookup path; ``with`` measured slower on 3.11.) On the
    free-threaded build, where readers could walk together, ``tools/rwlock_scaling.py``
    measures the same two variants at 1 and 2 threads, read-only and with 10 % writes: the
    RW variant was slower in every cell on 3.13t too, because its read side still takes the
    internal mutex twice per lookup, so readers meet there, and its Python bookkeeping
    costs more than the part of the walk it lets run in parallel. So the plain lock is the
    baseline on the free-threaded build. On 3.11 the same tool found the RW variant faster
    at 2 threads, unlike the 4-thread mix above: on that workload a lookup holds the lock
    for well under a microsecond, and a plain lock passed between two threads convoys
    behind the GIL. That is workload-dependent, and the plain lock stays the baseline there
    too, so that both builds measure one design.
    """

    __slots__ = (
        "dialect",
        "_lock",
        "_root",
        "_cache",
        "_gen",
        "_count",
        "_inserts",
        "_removes",
        "_hits",
        "_misses",
        "_fanout_total",
        "_fanout_max",
        "_single",
        "_multi",
        "_pattern_words",
        "_topic_words",
        "_walk",
    )

    def __init__(self, dialect: DialectLike = "nats", cache: bool = True) -> None:
        d = Dialect.coerce(dialect)
        self.dialect: Dialect = d
        self._lock = threading.Lock()
        self._root = Level()
        self._cache: dict[str, tuple[int, frozenset[Any], MatchResult]] | None = {} if cache else None
        self._gen = 0  # bumped by every mutation; read and written under the lock
        self._count = 0
        self._inserts = 0
        self._removes = 0
        self._hits = 0  # matches answered from the cache
        self._misses = 0  # matches computed by a walk
        self._fanout_total = 0
        self._fanout_max = 0
        self._single = d.single
        self._multi = d.multi
        self._pattern_words: Callable[[str], list[str]] = pattern_validator(d)
        self._topic_words: Callable[[str], list[str]] = topic_validator(d)
        self._walk: Callable[[Level, list[str]], list[Node]]
        if d is Dialect.AMQP:
            self._walk = walk_anywhere
        else:
            # NATS '>' needs one word at least; MQTT '#' also matches zero and obeys '$'.
            mqtt = d is Dialect.MQTT
            self._walk = partial(walk_terminal, mqtt, mqtt)

    # --- the Matcher protocol -----------------------------------------------------------

    def subscribe(self, pattern: str, subscriber: S, queue: str | None = None) -> None:
        """Store ``subscriber`` on ``pattern`` (in queue group ``queue`` if given).

        Idempotent: a pair (or a membership) already stored is left alone. O(w).
        """
        # The AMQP empty key (zero words): the root's node of the reserved word (ctrie.topics).
        words = self._pattern_words(pattern) or [EMPTY_KEY_WORD]
        require_hashable(subscriber)
        if queue is not None:
            _check_queue(queue)
        single, multi = self._single, self._multi
        n = len(words)
        with self._lock:
            # Follow the existing path as far as it goes: `parent` is the node of
            # words[i - 1] (None at the root) and `level` the level where words[i] belongs
            # (None if `parent` has no next level yet).
            parent: Node | None = None
            level: Level | None = self._root
            i = 0
            while i < n and level is not None:
                w = words[i]
                nodes = level.nodes
                child = (  # not dict.get: see ctrie/_ftdict.py
                    level.pwc if w == single else level.fwc if w == multi
                    else nodes[w] if w in nodes else None
                )
                if child is None:
                    break
                parent, level, i = child, child.next, i + 1
            if i == n:
                # (``parent`` is set: the loop ran, a pattern has a word at least. Below too:
                # ``level`` became None through it.)
                if not add_to_node(parent, subscriber, queue):  # type: ignore[arg-type]
                    return  # already stored: nothing changes, no generation bump
            else:
                # Build the missing words[i:] detached, leaf first, then link the branch in
                # with one store: an exception on the way leaves the trie untouched.
                branch = Node()
                add_to_node(branch, subscriber, queue)
                for j in range(n - 1, i, -1):
                    below = Level()
                    set_child(below, words[j], branch, single, multi)
                    branch = Node()
                    branch.next = below
                if level is None:
                    below = Level()
                    set_child(below, words[i], branch, single, multi)
                    parent.next = below  # type: ignore[union-attr]
                else:
                    set_child(level, words[i], branch, single, multi)
            self._count += 1
            self._inserts += 1
            self._gen += 1

    def unsubscribe(self, pattern: str, subscriber: S, queue: str | None = None) -> bool:
        """Remove ``subscriber`` from ``pattern`` (from queue group ``queue`` if given).

        Returns whether that pair (membership) was stored. Nodes and levels left empty are
        pruned. O(w).
        """
        words = self._pattern_words(pattern) or [EMPTY_KEY_WORD]  # the AMQP empty key
        require_hashable(subscriber)
        if queue is not None:
            _check_queue(queue)
        single, multi = self._single, self._multi
        with self._lock:
            path: list[tuple[Level, str, Node]] = []
            level: Level | None = self._root
            for w in words:
                if level is None:
                    return False
                nodes = level.nodes
                child = (  # not dict.get: see ctrie/_ftdict.py
                    level.pwc if w == single else level.fwc if w == multi
                    else nodes[w] if w in nodes else None
                )
                if child is None:
                    return False
                path.append((level, w, child))
                level = child.next
            node = path[-1][2]
            if queue is None:
                members = node.psubs
                if members is None or subscriber not in members:
                    return False
                if len(members) == 1:
                    node.psubs = None
                else:
                    members.remove(subscriber)
            else:
                groups = node.qsubs
                if groups is None:
                    return False
                members = groups[queue] if queue in groups else None  # not dict.get: see ctrie/_ftdict.py
                if members is None or subscriber not in members:
                    return False
                if len(members) > 1:
                    members.remove(subscriber)
                elif len(groups) > 1:
                    del groups[queue]
                else:
                    node.qsubs = None
            # Prune from the leaf up while nodes are empty.
            for k in range(len(path) - 1, -1, -1):
                level, w, node = path[k]
                if node.psubs is not None or node.qsubs is not None or node.next is not None:
                    break
                if w == single:
                    level.pwc = None
                elif w == multi:
                    level.fwc = None
                else:
                    del level.nodes[w]
                if k == 0 or not level.is_empty():
                    break
                path[k - 1][2].next = None
            self._count -= 1
            self._removes += 1
            self._gen += 1
            return True

    def lookup(self, topic: str) -> frozenset[S]:
        """The plain subscribers of every pattern matching ``topic``, each once.

        Queue groups are not included (see :meth:`match`). A cache hit is one dict probe
        under the lock, before any validation; a miss validates ``topic`` outside the lock,
        then walks and builds under it (see the class docstring).
        """
        # acquire/try/finally rather than `with`: measurably cheaper on CPython 3.11.
        lock = self._lock
        cache = self._cache
        if cache is not None:
            lock.acquire()
            try:
                entry = cache[topic] if topic in cache else None  # not dict.get: see ctrie/_ftdict.py
                if entry is not None and entry[0] == self._gen:
                    self._hits += 1
                    return entry[1]
            except TypeError:  # unhashable, hence not a str: validation says so below
                pass
            finally:
                lock.release()
        words = self._topic_words(topic)
        lock.acquire()
        try:
            return self._compute(topic, words)[0]
        finally:
            lock.release()

    def match(self, topic: str) -> MatchResult:
        """Plain subscribers and queue groups of every pattern matching ``topic``.

        Shares the cache, the statistics and the cost of :meth:`lookup`.
        """
        lock = self._lock
        cache = self._cache
        if cache is not None:
            lock.acquire()
            try:
                entry = cache[topic] if topic in cache else None  # not dict.get: see ctrie/_ftdict.py
                if entry is not None and entry[0] == self._gen:
                    self._hits += 1
                    return entry[2]
            except TypeError:
                pass
            finally:
                lock.release()
        words = self._topic_words(topic)
        lock.acquire()
        try:
            return self._compute(topic, words)
        finally:
            lock.release()

    def subscriptions(self) -> dict[str, frozenset[S]]:
        """Pattern -> its plain subscribers, for every pattern with one. O(size)."""
        with self._lock:
            return {
                pattern: frozenset(node.psubs)
                for pattern, node in self._patterns()
                if node.psubs is not None
            }

    def queue_subscriptions(self) -> dict[tuple[str, str], frozenset[S]]:
        """``(pattern, queue)`` -> the group's members on that pattern. O(size)."""
        with self._lock:
            return {
                (pattern, queue): frozenset(members)
                for pattern, node in self._patterns()
                if node.qsubs is not None
                for queue, members in node.qsubs.items()
            }

    def __len__(self) -> int:
        """Plain (pattern, subscriber) pairs plus queue memberships. O(1).

        One read of an int attribute, atomic with or without the GIL: no lock needed.
        """
        return self._count

    # --- statistics and checks ----------------------------------------------------------

    def stats(self) -> LockedTrieStats:
        """A consistent snapshot of the counters (see :class:`LockedTrieStats`).

        O(``CACHE_MAX_ENTRIES``) to count the valid cache entries.
        """
        with self._lock:
            gen = self._gen
            cache = self._cache
            entries = 0 if cache is None else sum(1 for e in cache.values() if e[0] == gen)
            hits, misses = self._hits, self._misses
            matches = hits + misses
            return LockedTrieStats(
                subscriptions=self._count,
                cache_entries=entries,
                inserts=self._inserts,
                removes=self._removes,
                matches=matches,
                cache_hit_rate=hits / matches if matches else 0.0,
                max_fanout=self._fanout_max,
                mean_fanout=self._fanout_total / misses if misses else 0.0,
            )

    def check(self) -> None:
        """Raise ``AssertionError`` if a structural invariant is broken. O(size + cache).

        Invariants: no empty node or non-root level is reachable; subscriber sets and
        queue maps are ``None`` or non-empty; no literal key is a wildcard word; an ``fwc``
        node has no ``next`` level unless the dialect is AMQP; the stored pairs and
        memberships number ``len(self)``; the cache is within its bound and every entry
        valid for the current generation equals a fresh match. Works under ``python -O``.
        """
        with self._lock:
            total = check_levels(self._root, self._single, self._multi,
                                 self.dialect is Dialect.AMQP)
            require(total == self._count, f"count {self._count} != stored {total}")
            cache = self._cache
            if cache is not None:
                require(len(cache) <= CACHE_MAX_ENTRIES, "cache over its bound")
                for topic, (gen, plain, result) in cache.items():
                    require(gen <= self._gen, "cache entry from a future generation")
                    require(plain is result.plain, "cache entry halves disagree")
                    if gen == self._gen:
                        fresh = build_result(self._walk(self._root, self._topic_words(topic)))
                        require(fresh == result, f"stale cache entry for {topic!r}")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dialect={self.dialect.value!r}, "
            f"cache={self._cache is not None}) with {self._count} subscriptions"
        )

    # --- internals (the lock is held) ---------------------------------------------------

    def _compute(self, topic: str, words: list[str]) -> MatchResult:
        """Walk, build, count and cache the result for a valid topic. Lock held."""
        gen = self._gen  # under the lock: no mutation can slip in before the store below
        result = build_result(self._walk(self._root, words))
        self._misses += 1
        fanout = len(result[0]) + len(result[1])
        self._fanout_total += fanout
        if fanout > self._fanout_max:
            self._fanout_max = fanout
        cache = self._cache
        if cache is not None:
            cache[topic] = (gen, result[0], result)
            if len(cache) > CACHE_MAX_ENTRIES:
                self._sweep(cache)
        return result

    def _sweep(self, cache: dict[str, tuple[int, frozenset[Any], MatchResult]]) -> None:
        """Drop stale entries, then the oldest, down to ``CACHE_SWEEP_TARGET``. Lock held."""
        gen = self._gen
        keep = [item for item in cache.items() if item[1][0] == gen][-CACHE_SWEEP_TARGET:]
        cache.clear()
        cache.update(keep)

    def _patterns(self) -> Iterator[tuple[str, Node]]:
        """Every (pattern, node) of a node holding subscriptions, depth first. Lock held.

        O(size of the trie + length of the patterns): each pattern is joined once
        (:func:`ctrie.topics.join_paths`). Joining every node's prefix again made one
        100,000-level pattern take 55.8 s.
        """
        single, multi = self._single, self._multi

        def edges(level: Level) -> list[tuple[str, Node | None, Level | None]]:
            children = list(level.nodes.items())
            if level.pwc is not None:
                children.append((single, level.pwc))
            if level.fwc is not None:
                children.append((multi, level.fwc))
            return [(w, node if node.psubs is not None or node.qsubs is not None else None,
                     node.next) for w, node in children]

        return join_paths(self._root, edges, self.dialect.separator)


def _check_queue(queue: object) -> None:
    if not isinstance(queue, str):
        raise TypeError(f"queue must be None or a str, not {type(queue).__name__}: "
                        f"{abbreviate(queue)}")
    if not queue:
        raise ValueError("queue must be None or a non-empty str, not ''")
