"""Hot paths call no C method measured slow on free-threaded CPython 3.13 (``ctrie._ftdict``).

``dict.get`` of a present key that is equal to, but not the same object as, the stored key
costs 100x from a thread that did not create the dict on 3.13t (``tools/ft_dict_get.py``).
Timing it in a unit test would be flaky and would say nothing on the GIL build, so this test
counts instead: it traces every matcher's subscribe, lookup (hits, misses, wildcard forks,
cache hits), match and unsubscribe with ``sys.setprofile`` and fails on any call of a method
in :data:`ctrie._ftdict.AVOIDED`. It runs on both builds (the calls are the same code).

The traced operations run in a worker thread on a matcher the main thread built, as the
harness does, with topic and pattern strings made fresh (``str.split`` copies), so that a
future idiom that only fails for non-owners would be exercised too.

The second pathology of ``ctrie._ftdict``, ``dict.copy()`` of a small sparse dict, is a
matter of size, not of the method alone (wide levels keep ``copy()``): the last tests count
the CS-trie's copies by size.
"""

from __future__ import annotations

import sys
import threading

import pytest
from matchers import IDS, REGISTRY
from strategies import DIALECTS

from ctrie import CSTrie, Dialect, nodes
from ctrie._ftdict import AVOIDED
from ctrie.nodes import SMALL_COPY_MAX

PATTERNS = {
    Dialect.NATS: ["a.b.c", "a.*.c", "a.>", "x.y", "a.b", "*.b.*", "a.b.c.d.e"],
    Dialect.MQTT: ["a/b/c", "a/+/c", "a/#", "x/y", "a/b", "+/b/+", "#", "a/b/c/d/e"],
    Dialect.AMQP: ["a.b.c", "a.*.c", "a.#", "x.y", "a.b", "#.c", "*.b.#", "a.b.c.d.e"],
}
TOPICS = {
    Dialect.NATS: ["a.b.c", "a.z.c", "a.b", "x.y", "q.r.s", "a.b.c.d.e", "a.b.c"],
    Dialect.MQTT: ["a/b/c", "a/z/c", "a/b", "x/y", "q/r/s", "a/b/c/d/e", "a/b/c", "$sys/b/c"],
    Dialect.AMQP: ["a.b.c", "a.z.c", "a.b", "x.y", "q.r.s", "a.b.c.d.e", "a.b.c"],
}
NEW = {Dialect.NATS: ["a.b.c.d", "n.*.m", "a.new"], Dialect.MQTT: ["a/b/c/d", "n/+/m", "a/new"],
       Dialect.AMQP: ["a.b.c.d", "n.*.#", "a.new"]}


def fresh(s: str) -> str:
    """An equal str that is a different object, as a topic split into words gives."""
    return "".join(list(s))


def traced(fn) -> list[str]:
    """Run ``fn`` in a worker thread under a profiler; the avoided C calls it made."""
    bad: list[str] = []
    errors: list[BaseException] = []

    def profile(frame, event, arg):
        if event == "c_call":
            name = getattr(arg, "__qualname__", "")
            if name in AVOIDED:
                bad.append(f"{name} from {frame.f_code.co_qualname} "
                           f"({frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno})")

    def run() -> None:
        sys.setprofile(profile)
        try:
            fn()
        except BaseException as e:  # re-raised in the main thread
            errors.append(e)
        finally:
            sys.setprofile(None)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if errors:
        raise errors[0]
    return sorted(set(bad))


@pytest.mark.concurrency
@pytest.mark.parametrize("spec", REGISTRY, ids=IDS)
@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_hot_paths_avoid_slow_dict_methods(spec, dialect):
    space = sorted(set(TOPICS[dialect]))
    matcher = spec.factory(dialect, space, 8)
    sep = "/" if dialect is Dialect.MQTT else "."
    # Only the patterns this matcher documents it can store (the optimized bitmap's limits).
    patterns = [p for p in PATTERNS[dialect] if not spec.may_reject(p.split(sep), dialect, 8)]
    new = [p for p in NEW[dialect] if not spec.may_reject(p.split(sep), dialect, 8)]
    for i, p in enumerate(patterns):
        matcher.subscribe(p, i)
        matcher.subscribe(p, "shared")

    def hot() -> None:
        for t in TOPICS[dialect] * 2:  # twice: the second round hits any result cache
            matcher.lookup(fresh(t))
            if hasattr(matcher, "match"):
                matcher.match(fresh(t))
        for p in new + patterns:
            matcher.subscribe(fresh(p), "new")
        for t in TOPICS[dialect]:
            matcher.lookup(fresh(t))
        for p in new + patterns:
            assert matcher.unsubscribe(fresh(p), "new")
        assert not matcher.unsubscribe(fresh(new[0]), "nobody")
        for i, p in enumerate(patterns):
            assert matcher.unsubscribe(fresh(p), i)

    bad = traced(hot)
    assert not bad, f"{spec.name} ({dialect.value}) calls {sorted(AVOIDED)} on its hot paths:\n" + "\n".join(bad)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_cstrie_copies_small_levels_without_dict_copy_on_a_free_threaded_build(dialect,
                                                                              monkeypatch):
    """On 3.13t, ``dict.copy()`` of a small dict that deletions left sparse takes about
    16 us (``tools/ft_dict_get.py --copy``), and every unsubscribe leaves one: so a
    free-threaded build's CS-trie copies a level of at most ``SMALL_COPY_MAX`` words with
    ``{**d}`` (``ctrie.nodes``). Counted, not timed, on both builds: the free-threaded
    build's copy is forced in. Both builders (a subscribe's ``updated``, an unsubscribe's ``removed``)
    write small levels here, and levels of exactly ``SMALL_COPY_MAX`` words (``{**d}``)
    and one word more (``copy()``, which must be seen, so that the count is known to see
    copies at all)."""
    monkeypatch.setattr(nodes, "_copy_branches", nodes._small_copy)
    sep = "/" if dialect is Dialect.MQTT else "."
    single = "+" if dialect is Dialect.MQTT else "*"
    trie = CSTrie(dialect)
    model: dict[str, set[object]] = {}
    edge = [f"edge{sep}w{i}" for i in range(SMALL_COPY_MAX)]
    wide = [f"wide{sep}w{i}" for i in range(SMALL_COPY_MAX + 1)]
    small = [f"a{sep}b", f"a{sep}c", f"a{sep}{single}", f"x{sep}y", f"a{sep}b{sep}c"]
    for i, p in enumerate(edge + wide + small):
        trie.subscribe(p, i)
        model.setdefault(p, set()).add(i)
    copied: list[int] = []  # the size of every dict copied with dict.copy()

    def profile(frame, event, arg):
        if event == "c_call" and getattr(arg, "__qualname__", "") == "dict.copy":
            copied.append(len(arg.__self__))

    sys.setprofile(profile)
    try:
        for r in range(3):
            # Another subscriber of an existing word (updated), and a word that comes and
            # goes (updated, then removed), at every level.
            for p in small + [edge[0], wide[0], f"a{sep}new{r}", f"edge{sep}new{r}",
                              f"wide{sep}new{r}"]:
                trie.subscribe(fresh(p), ("churn", r))
                assert trie.unsubscribe(fresh(p), ("churn", r))
            trie.subscribe(fresh(f"x{sep}kept{r}"), "kept")
            model[f"x{sep}kept{r}"] = {"kept"}
    finally:
        sys.setprofile(None)
    assert not [n for n in copied if n <= SMALL_COPY_MAX], copied
    assert SMALL_COPY_MAX + 1 in copied, f"no copy() seen at the wider level: {copied}"
    trie.check()
    assert {p: set(s) for p, s in trie.subscriptions().items()} == model


def test_the_free_threaded_copy_is_chosen_by_the_build():
    """The small-level copy is chosen by the build, not by whether the GIL runs: 3.13t with
    ``PYTHON_GIL=1`` still has the slow ``dict.copy()`` (measured), so ``_FT_BUILD`` is
    ``Py_GIL_DISABLED``. A GIL build never has it; a free-threaded one, run free-threaded
    (as the suite's free-threaded layer is), always does."""
    if not hasattr(sys, "_is_gil_enabled"):  # before 3.13: no free-threaded build
        assert not nodes._FT_BUILD
    elif not sys._is_gil_enabled():
        assert nodes._FT_BUILD
    # ... and the builders' copy follows the flag.
    assert (nodes._copy_branches is nodes._small_copy) == nodes._FT_BUILD
