"""The timed round of the threaded experiments (experiments.measure.rounds): what is inside
the clock and what is not."""

from __future__ import annotations

import threading
from time import perf_counter

import pytest

from experiments.measure import rounds


class _Matcher:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.built_by = threading.get_ident()

    def subscribe(self, pattern: str, subscriber: object) -> None:
        self.calls.append(("sub", pattern))

    def lookup(self, topic: str) -> frozenset[object]:
        self.calls.append(("look", topic))
        return frozenset()


def test_owner_built_matchers_are_built_warmed_and_collected_before_the_clock(monkeypatch):
    """build=: each worker builds its own matcher and warms it, all untimed; the garbage of
    the builds is collected after the last build and before the first worker's clock."""
    built: list[tuple[float, _Matcher]] = []
    collects: list[float] = []
    real_collect = rounds.gc.collect

    def collect(*a: object) -> int:
        collects.append(perf_counter())
        return real_collect(*a)

    def build() -> _Matcher:
        m = _Matcher()
        built.append((perf_counter(), m))
        return m

    monkeypatch.setattr(rounds.gc, "collect", collect)
    plans = [([(False, "a.b"), (True, "a.c")], "s1"), ([(False, "x.y")], "s2")]
    workers: list[rounds._Worker] = []
    real_worker = rounds._Worker

    def worker(*a: object, **k: object) -> rounds._Worker:
        w = real_worker(*a, **k)  # type: ignore[arg-type]
        workers.append(w)
        return w

    monkeypatch.setattr(rounds, "_Worker", worker)
    rounds.timed_round(None, plans, build=build, warm=True)
    assert len(built) == 2
    start = min(w.start_t for w in workers)
    assert any(max(t for t, _ in built) < c < start for c in collects), (built, collects, start)
    # Each matcher was built by the thread that used it, and warmed with its first topic.
    for w, (ops, _) in zip(workers, plans):
        m = w.matcher
        assert m.built_by == w.ident
        assert m.calls[0] == ("look", ops[0][1]) and len(m.calls) == len(ops) + 1


def test_a_build_that_fails_fails_the_round_without_hanging():
    def build() -> _Matcher:
        raise RuntimeError("no memory for this matcher")

    with pytest.raises(RuntimeError, match="no memory"):
        rounds.timed_round(None, [([(False, "a")], "s")] * 2, build=build)


def test_a_build_past_the_round_timeout_is_a_timeout_not_a_broken_barrier(monkeypatch):
    """The round's deadline covers the builds: a build that outlasts it fails the cell with
    a TimeoutError that says so (it was an empty BrokenBarrierError)."""
    import time

    monkeypatch.setattr(rounds, "ROUND_TIMEOUT", 0.3)

    def build() -> _Matcher:
        time.sleep(0.6)
        return _Matcher()

    with pytest.raises(TimeoutError, match="within 0.3 s"):
        rounds.timed_round(None, [([(False, "a")], "s")] * 2, build=build)
