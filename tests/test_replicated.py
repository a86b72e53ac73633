"""ReplicatedTrie: the schedules its linearizability argument names, driven deterministically
(a writer parked between its append and its marks; a write landing between a lookup's clear
of its flag and its read of the log's hint), each shown failing on a variant that breaks the
step the argument relies on; and the log's memory: checkpoints let it be collected, a late
thread starts from one, a finished thread's replica goes away."""

from __future__ import annotations

import gc
import threading

import pytest

import replicated_variants as variants
from ctrie import ReplicatedTrie
from ctrie import replicated as replicated_module
from threads import run_threads

pytestmark = pytest.mark.concurrency


def _in_thread(fn):
    """Run ``fn`` in a new thread, wait for it, return its result (or raise its error)."""
    return run_threads([lambda k: fn()], timeout=30)[0]


class _Reader:
    """A thread that owns a replica and runs lookups on request, one at a time."""

    def __init__(self, t: ReplicatedTrie, name: str | None = None) -> None:
        self.t = t
        self.requests: list = []
        self.cv = threading.Condition()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            with self.cv:
                while not self.requests:
                    self.cv.wait()
                fn, box, done = self.requests.pop(0)
            try:
                box.append(fn())
            except BaseException as exc:  # handed to the caller
                box.append(exc)
            done.set()
            if fn is None:
                return

    def start(self, fn) -> tuple[list, threading.Event]:
        """Hand ``fn`` to the thread; return (its result box, its done event)."""
        box: list = []
        done = threading.Event()
        with self.cv:
            self.requests.append((fn, box, done))
            self.cv.notify()
        return box, done

    def call(self, fn):
        box, done = self.start(fn)
        assert done.wait(30), "the reader thread did not answer"
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    def lookup(self, topic: str) -> frozenset:
        return self.call(lambda: self.t.lookup(topic))


@pytest.mark.parametrize("variant", ["as is", "lookups do not mark"])
def test_what_one_lookup_saw_a_later_lookup_sees(variant, monkeypatch):
    """W appends 'a' -> w and moves the hint, then parks before marking anyone. Reader A,
    marked dirty by an earlier write, catches up past W's entry and answers {w}. Reader B
    then looks up: A's answer came first, so B must answer {w} too, although W has not
    marked B yet. That holds because A marked every replica before it answered."""
    if variant != "as is":
        monkeypatch.setattr(ReplicatedTrie, "_refresh", variants.refresh_without_marks)
    t = ReplicatedTrie()
    a, b, w = _Reader(t), _Reader(t), _Reader(t, name="W")
    for x in (a, b, w):  # each joins (a join marks every other replica)
        assert x.lookup("a") == frozenset()
    t.subscribe("x", 0)  # marks A, B and W dirty
    assert b.lookup("a") == frozenset()  # B catches up (and is clean again)

    parked, go = threading.Event(), threading.Event()
    original = ReplicatedTrie._mark_others

    def mark(self, me):
        if threading.current_thread().name == "W":
            parked.set()
            assert go.wait(30)
        return original(self, me)

    monkeypatch.setattr(ReplicatedTrie, "_mark_others", mark)
    _, written = w.start(lambda: t.subscribe("a", "w"))
    assert parked.wait(30)
    assert t._tail.get().pattern == "a", "W parked before its entry was in the log"
    seen_by_a = a.lookup("a")
    seen_by_b = b.lookup("a")
    go.set()
    assert written.wait(30)
    assert seen_by_a == {"w"}
    if variant == "as is":
        assert seen_by_b == {"w"}
    else:
        # The variant breaks point 2: B answers the state before the one A returned.
        assert seen_by_b == frozenset(), "the schedule no longer exposes the variant"


class _TripOnHint:
    """Stands in for the log's hint (an AtomicRef): the first ``get()`` made by ``thread``
    reads the hint, runs ``action``, then returns what it read."""

    def __init__(self, ref, thread: threading.Thread, action) -> None:
        self.ref, self.thread, self.action = ref, thread, action

    def get(self):
        value = self.ref.get()
        if self.action is not None and threading.current_thread() is self.thread:
            action, self.action = self.action, None
            action()
        return value

    def __getattr__(self, name):
        return getattr(self.ref, name)


@pytest.mark.parametrize("variant", ["as is", "clear after reading the hint"])
def test_a_mark_landing_during_a_catch_up_is_not_lost(variant, monkeypatch):
    """Reader R is dirty and starts to catch up. Right after its read of the log's hint,
    writer W subscribes 'a' -> w completely (append, hint, marks); R's catch-up stops at the
    hint it read. R's next lookup begins after W returned, so it must answer {w}: W's mark
    must survive R's clear, which is why R clears its flag before it reads the hint."""
    if variant != "as is":
        monkeypatch.setattr(ReplicatedTrie, "_refresh", variants.refresh_clearing_late)
    t = ReplicatedTrie()
    r = _Reader(t)
    assert r.lookup("a") == frozenset()
    t.subscribe("x", 0)  # R is dirty now

    def write() -> None:
        _in_thread(lambda: t.subscribe("a", "w"))

    r.call(lambda: setattr(t, "_tail", _TripOnHint(t._tail, threading.current_thread(), write)))
    r.lookup("x")  # the catch-up: W's whole write lands inside it
    again = r.lookup("a")
    if variant == "as is":
        assert again == {"w"}
    else:
        # The variant loses W's mark: R answers the state before a completed write.
        assert again == frozenset(), "the schedule no longer exposes the variant"


@pytest.mark.parametrize("variant", ["as is", "writes do not mark"])
def test_a_completed_write_reaches_a_clean_replica(variant, monkeypatch):
    """Reader R is clean; W subscribes 'a' -> w and returns; R's next lookup must answer
    {w}, although R had nothing to catch up on when its lookup began but W's mark."""
    if variant != "as is":
        monkeypatch.setattr(ReplicatedTrie, "_write", variants.write_without_marks)
    t = ReplicatedTrie()
    r, w = _Reader(t), _Reader(t)
    assert w.lookup("a") == frozenset()  # W joins first (a join marks every replica)
    assert r.lookup("a") == frozenset()
    w.call(lambda: t.subscribe("a", "w"))
    if variant == "as is":
        assert r.lookup("a") == {"w"}
    else:
        assert r.lookup("a") == frozenset(), "the schedule no longer exposes the variant"


def test_a_write_answers_from_its_place_in_the_log():
    """unsubscribe's result is that of its entry applied after every entry before it, even
    when the writer's replica was behind."""
    t = ReplicatedTrie()
    r = _Reader(t)
    r.lookup("a")
    t.subscribe("a", 1)  # by the main thread; R is now behind
    assert r.call(lambda: t.unsubscribe("a", 1)) is True
    assert r.call(lambda: t.unsubscribe("a", 1)) is False
    assert t.lookup("a") == frozenset()


def _log_length(t: ReplicatedTrie) -> int:
    """Entries reachable from the oldest place anything still holds: the checkpoint."""
    e, n = t._base.get().entry, 0
    while (e := e.next.get()) is not None:
        n += 1
    return n


def test_checkpoints_bound_the_log_and_a_late_thread_starts_from_one():
    t = ReplicatedTrie(checkpoint_every=16)
    for i in range(200):
        t.subscribe(f"p.{i % 50}", i % 7)
        if i % 3 == 0:
            t.unsubscribe(f"p.{(i * 7) % 50}", i % 7)
    assert _log_length(t) < 16, "no checkpoint moved the log's base forward"
    expect = t.subscriptions()
    late = _in_thread(lambda: (t.subscriptions(), len(t), t.lookup("p.3")))
    assert late[0] == expect and late[1] == sum(map(len, expect.values()))
    assert late[2] == expect.get("p.3", frozenset())


def test_a_finished_thread_leaves_no_replica_behind():
    t = ReplicatedTrie()
    t.subscribe("a", 1)
    assert _in_thread(lambda: t.lookup("a")) == {1}
    gc.collect()
    live = [w for w in t._replicas.get() if w() is not None]
    assert len(live) == 1, "the finished thread's replica is still alive"
    t.subscribe("a", 2)  # marks only live replicas, and does not fail on the dead one
    assert t.lookup("a") == {1, 2}


def test_bad_input_logs_nothing():
    t = ReplicatedTrie()
    with pytest.raises(ValueError):
        t.subscribe("a..b", 1)
    with pytest.raises(TypeError):
        t.subscribe("a", [1])
    assert t._tail.get().seq == 0 and len(t) == 0
    with pytest.raises(ValueError, match="checkpoint_every"):
        ReplicatedTrie(checkpoint_every=0)


def test_lookups_share_no_trie_between_threads():
    """The point of the design: each thread answers from a trie of its own."""
    t = ReplicatedTrie()
    t.subscribe("a.*", 1)
    # The tries are returned (kept alive), so that no two of them can share an address.
    tries = run_threads([lambda k: (t.lookup("a.b"), t._local.r.trie)] * 2, timeout=30)
    assert [x[0] for x in tries] == [{1}, {1}]
    mine = t._local.r.trie
    assert tries[0][1] is not tries[1][1] and mine not in (tries[0][1], tries[1][1])
    assert replicated_module.CHECKPOINT_EVERY >= 1
