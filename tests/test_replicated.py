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

# Stand-ins act on the first get() of a read: one get per read (conftest.one_get_per_read).
# (No test here races real threads against each other.)
pytestmark = [pytest.mark.concurrency, pytest.mark.usefixtures("one_get_per_read")]


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


def _park_at_marks(name: str, monkeypatch) -> tuple[threading.Event, threading.Event]:
    """Make the thread called ``name`` park where it would mark the other replicas: it sets
    the first event and waits for the second before marking."""
    parked, go = threading.Event(), threading.Event()
    original = ReplicatedTrie._mark_others

    def mark(self, me):
        if threading.current_thread().name == name:
            parked.set()
            assert go.wait(30)
        return original(self, me)

    monkeypatch.setattr(ReplicatedTrie, "_mark_others", mark)
    return parked, go


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

    parked, go = _park_at_marks("W", monkeypatch)
    _, written = w.start(lambda: t.subscribe("a", "w"))
    assert parked.wait(30)
    assert t._tail.get().words == ["a"], "W parked before its entry was in the log"
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


# --- found by an adversarial review: exceptions, re-entrant calls, failing writes, idle threads


class _RaiseOnce:
    """Stands in for an AtomicRef: the first ``get()`` made by ``thread`` raises ``exc`` (as
    a signal handler's exception arriving at that point would)."""

    def __init__(self, ref, thread: threading.Thread, exc: BaseException) -> None:
        self.ref, self.thread, self.exc = ref, thread, exc

    def get(self):
        if self.exc is not None and threading.current_thread() is self.thread:
            exc, self.exc = self.exc, None
            del self  # the exception's traceback keeps this frame: not the log through it
            raise exc
        return self.ref.get()

    def __getattr__(self, name):
        return getattr(self.ref, name)


def test_an_exception_inside_a_catch_up_loses_no_write():
    """W's subscribe completes (marking the main thread's replica); the main thread's next
    lookup is interrupted inside its catch-up. Every later lookup began after W returned,
    so each must answer {w}."""
    t = ReplicatedTrie()
    assert t.lookup("a") == frozenset()
    last = t._tail.get()  # the main thread's replica is at this entry
    _in_thread(lambda: t.subscribe("a", "w"))
    last.next = _RaiseOnce(last.next, threading.current_thread(), KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        t.lookup("a")
    assert [t.lookup("a"), len(t), t.subscriptions()] == [{"w"}, 1, {"a": {"w"}}]


def test_an_exception_before_the_marks_lets_no_one_see_less_later(monkeypatch):
    """W appends 'a' -> w and parks before its marks. The main thread's dirty lookup is
    interrupted where it marks the other replicas; its retry answers {w}; B's lookup, which
    begins after that, must answer {w} too."""
    t = ReplicatedTrie()
    b, w = _Reader(t), _Reader(t, name="W")
    for x in (b, w):
        assert x.lookup("a") == frozenset()
    assert t.lookup("a") == frozenset()
    t.subscribe("x", 0)  # the main thread writes: B and W are dirty ...
    assert b.lookup("a") == frozenset()  # ... and B is clean again
    parked, go = _park_at_marks("W", monkeypatch)
    _, written = w.start(lambda: t.subscribe("a", "w"))
    assert parked.wait(30)
    t._local.r.dirty.set(True)  # as an earlier write by another thread would leave it
    monkeypatch.setattr(t, "_replicas", _RaiseOnce(t._replicas, threading.current_thread(),
                                                   KeyboardInterrupt()), raising=False)
    with pytest.raises(KeyboardInterrupt):
        t.lookup("a")
    assert t.lookup("a") == {"w"}
    assert b.lookup("a") == {"w"}
    go.set()
    assert written.wait(30)


def test_a_call_from_inside_a_catch_up_is_refused_and_leaves_the_replica_right():
    """A finalizer run by a garbage collection inside the main thread's catch-up of W's
    subscribe('b', 1) unsubscribes ('b', 1): applied there, it would apply the log out of
    order. It is refused; the main thread's answers stay those of the log."""
    t = ReplicatedTrie()
    assert t.lookup("b") == frozenset()
    last = t._tail.get()
    _in_thread(lambda: t.subscribe("b", 1))
    nested: list = []

    class _Finalizer:
        def __init__(self, ref) -> None:
            self.ref, self.armed = ref, True

        def get(self):
            if self.armed:
                self.armed = False
                try:
                    nested.append(t.unsubscribe("b", 1))
                except RuntimeError as exc:
                    nested.append(exc)
            return self.ref.get()

        def __getattr__(self, name):
            return getattr(self.ref, name)

    last.next = _Finalizer(last.next)
    assert t.lookup("b") == {1}
    assert isinstance(nested[0], RuntimeError) and "finalizer" in str(nested[0])
    assert t.unsubscribe("b", 1) is True
    assert [t.lookup("b"), len(t), _in_thread(lambda: t.lookup("b"))] == [frozenset(), 0,
                                                                           frozenset()]


class _Touchy:
    """A subscriber equal only to itself, whose comparison with anything else raises, and
    whose hash collides with 1's: a set holding 1 must compare them."""

    def __hash__(self) -> int:
        return hash(1)

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        raise TypeError("cannot compare a _Touchy")


def test_a_subscriber_whose_comparison_raises_is_never_skipped():
    """Documented: subscribers must compare without raising. One that does is met by every
    thread that catches up past its entry, which raises the error (and tries again at its
    next operation); no thread answers as if the entry had been skipped, so no two
    replicas disagree."""
    t = ReplicatedTrie(checkpoint_every=2)
    t.subscribe("a", 1)
    other = _Reader(t)
    assert other.lookup("a") == {1}
    with pytest.raises(TypeError, match="_Touchy"):
        t.subscribe("a", _Touchy())
    for _ in range(2):
        with pytest.raises(TypeError, match="_Touchy"):
            other.lookup("a")
        with pytest.raises(TypeError, match="_Touchy"):
            t.lookup("a")


def test_an_exception_inside_a_replica_write_is_not_taken_for_a_failed_write():
    """A signal handler's exception (or a RecursionError) raised inside the trie write that
    applies W's entry to the main thread's replica: the entry is applied at the next
    operation, not skipped."""
    t = ReplicatedTrie()
    assert t.lookup("a") == frozenset()
    _in_thread(lambda: t.subscribe("a", "w"))
    replica = t._local.r.trie
    calls = []

    class _Interrupting:
        def __getattr__(self, name):
            if name == "_insert" and not calls:  # what a catch-up applies a subscribe with
                calls.append(name)

                def interrupted(*args):
                    raise TimeoutError("a deadline's handler")
                return interrupted
            return getattr(replica, name)

    t._local.r.trie = _Interrupting()
    with pytest.raises(TimeoutError):
        t.lookup("a")
    t._local.r.trie = replica  # the stand-in changed nothing in it
    assert t.lookup("a") == {"w"} and len(t) == 1


def test_an_idle_thread_does_not_pin_the_log():
    """A thread that used the trie once and stays alive holds no entry: after many writes
    the live entries are about one checkpoint interval, and its next lookup (from the
    checkpoint) is right."""
    from ctrie.replicated import _Entry

    t = ReplicatedTrie(checkpoint_every=16)
    idle = _Reader(t)
    assert idle.lookup("p.1") == frozenset()
    for i in range(2000):
        t.subscribe(f"p.{i % 40}", i)
        t.unsubscribe(f"p.{(i * 7) % 40}", i - 1)
    gc.collect()
    live = sum(type(o) is _Entry for o in gc.get_objects())
    assert live <= 3 * 16, f"{live} log entries alive"
    assert idle.call(t.subscriptions) == t.subscriptions()
    assert idle.lookup("p.1") == t.lookup("p.1")


def test_checkpoint_every_is_checked():
    with pytest.raises(TypeError, match="checkpoint_every"):
        ReplicatedTrie(checkpoint_every="3")
    with pytest.raises(ValueError, match="checkpoint_every"):
        ReplicatedTrie(checkpoint_every=0)


class _RunOnce:
    """Stands in for an AtomicRef: the first ``get()`` runs ``action`` first."""

    def __init__(self, ref, action) -> None:
        self.ref, self.action = ref, action

    def get(self):
        action, self.action = self.action, None
        if action is not None:
            action()
        return self.ref.get()

    def __getattr__(self, name):
        return getattr(self.ref, name)


def test_a_call_made_between_a_writes_append_and_its_catch_up_is_refused(monkeypatch):
    """A finalizer runs where the write reads the replica list to mark the others (after
    its append, before its catch-up) and writes too: refused, or the outer write would
    re-apply the log from before the nested entry."""
    t = ReplicatedTrie()
    t.subscribe("p", 1)
    assert _in_thread(lambda: t.lookup("p")) == {1}
    nested: list = []

    def finalizer() -> None:
        try:
            nested.append(t.subscribe("other", 2))
        except RuntimeError as exc:
            nested.append(exc)

    monkeypatch.setattr(t, "_replicas", _RunOnce(t._replicas, finalizer), raising=False)
    assert t.unsubscribe("p", 1) is True
    assert isinstance(nested[0], RuntimeError)
    assert [t.lookup("p"), t.lookup("other"), len(t)] == [frozenset(), frozenset(), 0]


def test_a_rebuilt_replica_interrupted_at_its_marks_lets_no_one_see_less_later(monkeypatch):
    """Checkpoints at every entry. The main thread falls behind the checkpoint (its place is
    freed). W subscribes 'a' -> w and parks before its marks; C joins, which would apply W's
    entry and could publish a checkpoint holding it, and parks at its marks. The main
    thread's lookup (dirty) meets an exception where it marks the others; its retry answers
    {w}, so B, which looks up after that, must answer {w} too."""
    t = ReplicatedTrie(checkpoint_every=1)
    b, w, c = _Reader(t), _Reader(t, name="W"), _Reader(t, name="C")
    for x in (t, b, w):
        assert (x.lookup("a") if x is t else x.lookup("a")) == frozenset()
    w.call(lambda: t.subscribe("y", 0))  # checkpoint at 1: the main thread's place is freed
    assert b.lookup("a") == frozenset()  # B is clean
    gc.collect()
    assert t._local.r.at() is None and t._local.r.dirty.get() is True
    gates = {n: (threading.Event(), threading.Event()) for n in "WC"}
    original = ReplicatedTrie._mark_others

    def mark(self, me):
        gate = gates.get(threading.current_thread().name)
        if gate is not None and not gate[1].is_set():
            gate[0].set()
            assert gate[1].wait(30)
        return original(self, me)

    monkeypatch.setattr(ReplicatedTrie, "_mark_others", mark)
    _, written = w.start(lambda: t.subscribe("a", "w"))
    assert gates["W"][0].wait(30)
    _, joined = c.start(lambda: t.lookup("a"))
    assert gates["C"][0].wait(30)
    monkeypatch.setattr(t, "_replicas", _RaiseOnce(t._replicas, threading.current_thread(),
                                                   KeyboardInterrupt()), raising=False)
    with pytest.raises(KeyboardInterrupt):
        t.lookup("a")
    seen_by_main = t.lookup("a")
    seen_by_b = b.lookup("a")
    for gate in gates.values():
        gate[1].set()
    assert written.wait(30) and joined.wait(30)
    assert seen_by_main == {"w"} and seen_by_b == {"w"}


def test_a_kept_exception_does_not_keep_the_log():
    """An exception raised out of a write's catch-up and kept (as a Future keeps it) holds
    no log entry: after many more writes the log is about one checkpoint interval."""
    from ctrie.replicated import _Entry

    t = ReplicatedTrie(checkpoint_every=16)
    t.subscribe("a", 1)
    last = t._tail.get()
    _in_thread(lambda: t.subscribe("b", 2))  # the main thread is one entry behind
    last.next = _RaiseOnce(last.next, threading.current_thread(), KeyboardInterrupt())
    del last
    try:
        t.subscribe("c", 3)
    except KeyboardInterrupt as exc:
        kept = exc
    for i in range(500):
        t.subscribe(f"p.{i % 20}", i)
    gc.collect()
    live = sum(type(o) is _Entry for o in gc.get_objects())
    assert kept.__traceback__ is not None and live <= 3 * 16, f"{live} log entries alive"
    assert t.lookup("c") == {3} and t.lookup("b") == {2}
