"""The NATS sublist design: a subscription trie behind one lock, with a result cache.

The trie follows nats-server's ``sublist.go``. A :class:`Level` holds the children of one
word position: literal words in a dict, plus at most one one-level-wildcard child (``pwc``:
NATS/AMQP ``*``, MQTT ``+``) and one many-level-wildcard child (``fwc``: NATS ``>``, AMQP and
MQTT ``#``). A :class:`Node` is the end of one pattern word: it holds the :class:`Level` of
the following word, the plain subscribers of the pattern that ends here and its queue groups
(queue name -> members). Nodes and levels left empty by a removal are pruned, so the trie
holds no node that leads to no subscription.

Matching walks the trie along the topic's words, branching into the ``pwc`` child beside the
literal child and collecting the ``fwc`` child wherever the many-level wildcard may stand:

- NATS and MQTT: the many-level wildcard only ends a pattern, so an ``fwc`` node never has a
  ``next`` level and each trie level is visited at most once per lookup, with no memo.
  NATS ``>`` needs at least one word; MQTT ``#`` also matches zero (``a/#`` matches
  ``a``), and an MQTT ``+`` or ``#`` standing first in a filter does not match a topic whose
  first level starts with ``$``. The walk recurses only into ``pwc`` children; a trie deeper
  in them than the recursion limit is walked with an explicit stack instead.
- AMQP: ``#`` stands anywhere and matches zero or more words, so an ``fwc`` node may have a
  ``next`` level. The walk explores states (level, words consumed); an ``fwc`` node records
  the smallest word index it has absorbed from, so every state is explored at most once and
  ``#.a.#.b.#`` against a long topic costs O(levels x words), not an exponential number of
  splits. The empty key ``""`` (zero words) is a pattern too: its node is the root's child
  of the word ``""``, which no other pattern can reach (an empty word is invalid).

:class:`LockedTrie` implements the package's Matcher protocol and adds queue groups
(:meth:`LockedTrie.match`) and NATS-style statistics (:meth:`LockedTrie.stats`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator, Mapping
from functools import partial
from types import MappingProxyType
from typing import Any, Generic, NamedTuple, TypedDict

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


class Level:
    """The children of one word position: literal words, ``pwc`` and ``fwc``."""

    __slots__ = ("nodes", "pwc", "fwc")

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.pwc: Node | None = None
        self.fwc: Node | None = None

    def is_empty(self) -> bool:
        """Whether the level has no child at all."""
        return not self.nodes and self.pwc is None and self.fwc is None


class Node:
    """The end of one pattern word: the next level and the subscriptions ending here.

    ``psubs`` (plain subscribers) and ``qsubs`` (queue name -> members) are ``None`` rather
    than empty, and ``next`` is ``None`` rather than an empty level, so a node is empty, and
    pruned, exactly when all three are ``None``.
    """

    __slots__ = ("next", "psubs", "qsubs")

    def __init__(self) -> None:
        self.next: Level | None = None
        # (Members are Any: the trie's S is checked where subscribers come in.)
        self.psubs: set[Any] | None = None
        self.qsubs: dict[str, set[Any]] | None = None


class MatchResult(NamedTuple):
    """What :meth:`LockedTrie.match` returns for a topic.

    ``plain`` holds every plain subscriber of every matching pattern, once. ``queues`` maps
    each queue group with a member on a matching pattern to its members on matching
    patterns; a publisher delivers to every plain subscriber and to one member of each
    group. ``queues`` is a read-only mapping: results are shared through the cache.
    """

    plain: frozenset[Any]
    queues: Mapping[str, frozenset[Any]]

    @property
    def fanout(self) -> int:
        """Deliveries of one message: each plain subscriber, plus one per queue group."""
        return len(self.plain) + len(self.queues)


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


_EMPTY_QUEUES: Mapping[str, frozenset[Any]] = MappingProxyType({})
_EMPTY_RESULT = MatchResult(frozenset(), _EMPTY_QUEUES)
_new_result = tuple.__new__  # MatchResult(...) without the Python-level __new__


class LockedTrie(Generic[S]):
    """A subscription trie behind one ``threading.Lock`` (the NATS sublist design), generic
    in the subscriber type, as every matcher (:class:`ctrie.Matcher`).

    ``LockedTrie(dialect="nats", cache=True)`` implements the Matcher protocol of ``api.md``
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
            self._walk = _walk_anywhere
        else:
            # NATS '>' needs one word at least; MQTT '#' also matches zero and obeys '$'.
            mqtt = d is Dialect.MQTT
            self._walk = partial(_walk_terminal, mqtt, mqtt)

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
                if not _add_to_node(parent, subscriber, queue):  # type: ignore[arg-type]
                    return  # already stored: nothing changes, no generation bump
            else:
                # Build the missing words[i:] detached, leaf first, then link the branch in
                # with one store: an exception on the way leaves the trie untouched.
                branch = Node()
                _add_to_node(branch, subscriber, queue)
                for j in range(n - 1, i, -1):
                    below = Level()
                    _set_child(below, words[j], branch, single, multi)
                    branch = Node()
                    branch.next = below
                if level is None:
                    below = Level()
                    _set_child(below, words[i], branch, single, multi)
                    parent.next = below  # type: ignore[union-attr]
                else:
                    _set_child(level, words[i], branch, single, multi)
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
            single, multi = self._single, self._multi
            anywhere = self.dialect is Dialect.AMQP
            total = 0
            stack: list[tuple[Level, bool]] = [(self._root, True)]
            while stack:
                level, is_root = stack.pop()
                _require(is_root or not level.is_empty(), "empty non-root level")
                _require(single not in level.nodes and multi not in level.nodes, "wildcard key")
                if level.fwc is not None and not anywhere:
                    _require(level.fwc.next is None, "fwc node with a next level")
                children = list(level.nodes.values())
                children += [c for c in (level.pwc, level.fwc) if c is not None]
                for node in children:
                    _require(
                        node.psubs is not None or node.qsubs is not None or node.next is not None,
                        "empty node",
                    )
                    if node.psubs is not None:
                        _require(isinstance(node.psubs, set) and bool(node.psubs), "empty psubs")
                        total += len(node.psubs)
                    if node.qsubs is not None:
                        _require(bool(node.qsubs), "empty qsubs")
                        for name, members in node.qsubs.items():
                            _require(isinstance(name, str) and bool(name), "bad queue name")
                            _require(bool(members), "empty queue group")
                            total += len(members)
                    if node.next is not None:
                        stack.append((node.next, False))
            _require(total == self._count, f"count {self._count} != stored {total}")
            cache = self._cache
            if cache is not None:
                _require(len(cache) <= CACHE_MAX_ENTRIES, "cache over its bound")
                for topic, (gen, plain, result) in cache.items():
                    _require(gen <= self._gen, "cache entry from a future generation")
                    _require(plain is result.plain, "cache entry halves disagree")
                    if gen == self._gen:
                        fresh = _build(self._walk(self._root, self._topic_words(topic)))
                        _require(fresh == result, f"stale cache entry for {topic!r}")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dialect={self.dialect.value!r}, "
            f"cache={self._cache is not None}) with {self._count} subscriptions"
        )

    # --- internals (the lock is held) ---------------------------------------------------

    def _compute(self, topic: str, words: list[str]) -> MatchResult:
        """Walk, build, count and cache the result for a valid topic. Lock held."""
        gen = self._gen  # under the lock: no mutation can slip in before the store below
        result = _build(self._walk(self._root, words))
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


# --- helpers --------------------------------------------------------------------------------


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _check_queue(queue: object) -> None:
    if not isinstance(queue, str):
        raise TypeError(f"queue must be None or a str, not {type(queue).__name__}: "
                        f"{abbreviate(queue)}")
    if not queue:
        raise ValueError("queue must be None or a non-empty str, not ''")


def _add_to_node(node: Node, subscriber: Hashable, queue: str | None) -> bool:
    """Add a plain subscriber or a queue membership; False if it was already there."""
    if queue is None:
        members = node.psubs
        if members is None:
            node.psubs = {subscriber}
            return True
    else:
        groups = node.qsubs
        if groups is None:
            node.qsubs = {queue: {subscriber}}
            return True
        members = groups[queue] if queue in groups else None  # not dict.get: see ctrie/_ftdict.py
        if members is None:
            groups[queue] = {subscriber}
            return True
    if subscriber in members:
        return False
    members.add(subscriber)
    return True


def _set_child(level: Level, word: str, child: Node, single: str, multi: str) -> None:
    if word == single:
        level.pwc = child
    elif word == multi:
        level.fwc = child
    else:
        level.nodes[word] = child


def _walk_terminal(zero_ok: bool, dollar_rule: bool, root: Level, words: list[str]) -> list[Node]:
    """The nodes whose patterns match ``words``: NATS and MQTT (``fwc`` ends a pattern).

    ``zero_ok``: the many-level wildcard may match zero words (MQTT ``a/#`` matches ``a``).
    ``dollar_rule``: a first-level wildcard does not match a first word starting with
    ``$`` (MQTT). Each level is reached through one path of one length, so none is visited
    twice and no node is returned twice. The recursive :func:`_descend` is the fast walk;
    a trie deeper in one-level wildcards than the recursion limit falls back to the
    iterative :func:`_walk_terminal_iterative`.
    """
    n = len(words)
    hits: list[Node] = []
    try:
        if dollar_rule and words[0][:1] == "$":
            # Only a literal first level can match: step over it, then descend.
            w, nodes = words[0], root.nodes
            node = nodes[w] if w in nodes else None  # not dict.get: see ctrie/_ftdict.py
            if node is not None:
                below = node.next
                if n == 1:
                    hits.append(node)
                    if below is not None and below.fwc is not None:
                        hits.append(below.fwc)  # zero_ok holds in MQTT
                elif below is not None:
                    _descend(below, words, 1, n, hits, zero_ok)
        else:
            _descend(root, words, 0, n, hits, zero_ok)
    except RecursionError:
        return _walk_terminal_iterative(zero_ok, dollar_rule, root, words)
    return hits


def _descend(
    level: Level, words: list[str], i: int, n: int, hits: list[Node], zero_ok: bool
) -> None:
    """Collect into ``hits`` the nodes below ``level`` matching ``words[i:]`` (``i < n``).

    The literal child is followed in the loop; the ``pwc`` child by recursion, so the
    depth is the number of one-level wildcards on the path.
    """
    while True:
        fwc = level.fwc
        if fwc is not None:
            hits.append(fwc)  # at least one word is left for it
        pwc = level.pwc
        w, nodes = words[i], level.nodes
        node = nodes[w] if w in nodes else None  # not dict.get: see ctrie/_ftdict.py
        i += 1
        if i == n:
            if pwc is not None:
                hits.append(pwc)
                if zero_ok:
                    below = pwc.next
                    if below is not None and below.fwc is not None:
                        hits.append(below.fwc)
            if node is not None:
                hits.append(node)
                if zero_ok:
                    below = node.next
                    if below is not None and below.fwc is not None:
                        hits.append(below.fwc)
            return
        if pwc is not None:
            below = pwc.next
            if below is not None:
                _descend(below, words, i, n, hits, zero_ok)
        if node is None:
            return
        below = node.next
        if below is None:
            return
        level = below


def _walk_terminal_iterative(
    zero_ok: bool, dollar_rule: bool, root: Level, words: list[str]
) -> list[Node]:
    """:func:`_walk_terminal` with an explicit stack of (level, words consumed) states.

    Slower than the recursive walk in CPython, but bounded by memory only.
    """
    n = len(words)
    hits: list[Node] = []
    if dollar_rule and words[0][:1] == "$":
        w, nodes = words[0], root.nodes
        node = nodes[w] if w in nodes else None  # not dict.get: see ctrie/_ftdict.py
        if node is None:
            return hits
        if n == 1:
            hits.append(node)
        if node.next is None:
            return hits
        stack = [(node.next, 1)]
    else:
        stack = [(root, 0)]
    pop, push, hit = stack.pop, stack.append, hits.append
    while stack:
        level, i = pop()
        while True:
            fwc = level.fwc
            if i == n:
                if zero_ok and fwc is not None:
                    hit(fwc)
                break
            if fwc is not None:
                hit(fwc)
            w = words[i]
            i += 1
            pwc = level.pwc
            if pwc is not None:
                if i == n:
                    hit(pwc)
                if pwc.next is not None:
                    push((pwc.next, i))
            nodes = level.nodes
            node = nodes[w] if w in nodes else None  # not dict.get: see ctrie/_ftdict.py
            if node is None:
                break
            if i == n:
                hit(node)
            below = node.next
            if below is None:
                break
            level = below
    return hits


def _walk_anywhere(root: Level, words: list[str]) -> list[Node]:
    """The nodes whose patterns match ``words``: AMQP (``#`` anywhere, zero or more words).

    States are (level, words consumed). An ``fwc`` node entered at index ``i`` absorbs
    ``words[i:j]`` for every ``j`` in ``i..n``: it matches (it can absorb the rest) and
    continues at (``fwc.next``, ``j``). ``absorbed_from`` keeps the smallest ``i`` each
    ``fwc`` node was entered at, and a later entry only adds the indices below it, so the
    ranges are disjoint. Every level has one parent node, so every state is then pushed at
    most once: O(levels x (n + 1)) in all, whatever the number of ``#``.

    The empty key (``words == []``) is also matched by the pattern ``""``, whose node is the
    root's child of the reserved word :data:`ctrie.topics.EMPTY_KEY_WORD`.
    """
    n = len(words)
    hits: list[Node] = []
    absorbed_from: dict[Node, int] = {}
    stack = [(root, 0)]
    pop, push, hit = stack.pop, stack.append, hits.append
    while stack:
        level, i = pop()
        fwc = level.fwc
        if fwc is not None:
            start = absorbed_from[fwc] if fwc in absorbed_from else None  # not dict.get: see ctrie/_ftdict.py
            if start is None or i < start:
                absorbed_from[fwc] = i
                if start is None:
                    hit(fwc)
                    start = n + 1
                below = fwc.next
                if below is not None:
                    for j in range(i, start):
                        push((below, j))
        if i < n:
            w = words[i]
            i += 1
            pwc = level.pwc
            if pwc is not None:
                if i == n:
                    hit(pwc)
                if pwc.next is not None:
                    push((pwc.next, i))
            nodes = level.nodes
            node = nodes[w] if w in nodes else None  # not dict.get: see ctrie/_ftdict.py
            if node is not None:
                if i == n:
                    hit(node)
                if node.next is not None:
                    push((node.next, i))
    if not n:
        nodes = root.nodes
        if EMPTY_KEY_WORD in nodes:
            hit(nodes[EMPTY_KEY_WORD])
    return hits


def _build(hits: list[Node]) -> MatchResult:
    """Merge the subscribers of the matched nodes into an immutable result. O(result)."""
    if not hits:
        return _EMPTY_RESULT
    if len(hits) == 1:  # the common case: no merging
        node = hits[0]
        members = node.psubs
        groups = node.qsubs
        return _new_result(
            MatchResult,
            (
                _EMPTY_RESULT[0] if members is None else frozenset(members),
                _EMPTY_QUEUES
                if groups is None
                else MappingProxyType({q: frozenset(m) for q, m in groups.items()}),
            ),
        )
    plain: set[Any] = set()
    queues: dict[str, set[Any]] | None = None
    for node in hits:
        members = node.psubs
        if members is not None:
            plain |= members
        groups = node.qsubs
        if groups is not None:
            if queues is None:
                queues = {}
            for q, m in groups.items():
                acc = queues[q] if q in queues else None  # not dict.get: see ctrie/_ftdict.py
                if acc is None:
                    queues[q] = set(m)
                else:
                    acc |= m
    return _new_result(
        MatchResult,
        (
            frozenset(plain),
            _EMPTY_QUEUES
            if queues is None
            else MappingProxyType({q: frozenset(m) for q, m in queues.items()}),
        ),
    )
