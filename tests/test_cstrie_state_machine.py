"""A Hypothesis state machine for what only the CS-trie has: writable snapshots mutated on
both sides, read-only snapshots that must never change, and check() after every step.

The protocol operations themselves are held to the dict model for every matcher in
test_state_machine.py; here two tries (the original and its latest writable snapshot) each
have their own model, and read-only snapshots keep a frozen copy of the model they were
taken from.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ctrie import CSTrie, matches

PATTERNS = ["a", "a.b", "a.*", "a.>", "*.b", "a.b.c", "*.*.c", ">", "b.>"]
TOPICS = ["a", "a.b", "b.b", "a.b.c", "a.x.c"]
STEPS = {"n": 0}


def _expected(model: dict, topic: str) -> frozenset:
    return frozenset(s for p, subs in model.items() if matches(p, topic) for s in subs)


class SnapshotMachine(RuleBasedStateMachine):
    @initialize()
    def start(self):
        self.tries = [CSTrie()]
        self.models: list[dict] = [{}]
        self.frozen: list[tuple[CSTrie, dict]] = []

    sides = st.integers(0, 1)

    def _side(self, k):
        return k % len(self.tries)

    @rule(k=sides, p=st.sampled_from(PATTERNS), s=st.integers(0, 2))
    def subscribe(self, k, p, s):
        k = self._side(k)
        self.tries[k].subscribe(p, s)
        self.models[k].setdefault(p, set()).add(s)

    @rule(k=sides, p=st.sampled_from(PATTERNS), s=st.integers(0, 2))
    def unsubscribe(self, k, p, s):
        k = self._side(k)
        present = s in self.models[k].get(p, ())
        assert self.tries[k].unsubscribe(p, s) is present
        if present:
            self.models[k][p].discard(s)
            if not self.models[k][p]:
                del self.models[k][p]

    @rule(k=sides, topic=st.sampled_from(TOPICS))
    def lookup(self, k, topic):
        k = self._side(k)
        assert self.tries[k].lookup(topic) == _expected(self.models[k], topic)

    @rule(k=sides)
    def writable_snapshot(self, k):
        k = self._side(k)
        snap = self.tries[k].snapshot()
        model = {p: set(s) for p, s in self.models[k].items()}
        self.tries = [self.tries[k], snap]
        self.models = [self.models[k], model]

    @precondition(lambda self: len(self.frozen) < 5)
    @rule(k=sides)
    def read_only_snapshot(self, k):
        k = self._side(k)
        frozen_model = {p: frozenset(s) for p, s in self.models[k].items()}
        self.frozen.append((self.tries[k].read_only_snapshot(), frozen_model))

    @rule(k=sides)
    def subscriptions(self, k):
        # Public API; note that it takes a read-only snapshot, renewing the root generation.
        k = self._side(k)
        assert self.tries[k].subscriptions() == {p: frozenset(s) for p, s in self.models[k].items()}

    @invariant()
    def consistent(self):
        # Read without snapshotting (a quiescent walk, and lookups): a snapshot here would
        # give every trie a fresh generation after each step and hide sharing bugs.
        STEPS["n"] += 1
        for t, model in zip(self.tries, self.models):
            t.check()
            assert dict(t._items()) == {p: frozenset(s) for p, s in model.items()}
            for topic in TOPICS:
                assert t.lookup(topic) == _expected(model, topic), topic
        for ro, model in self.frozen:
            assert dict(ro._items()) == model
            ro.check()


def test_snapshot_state_machine(figures):
    STEPS["n"] = 0
    run_state_machine_as_test(SnapshotMachine, settings=settings(
        max_examples=300, stateful_step_count=40, deadline=None, derandomize=True,
        suppress_health_check=list(HealthCheck), database=None,
    ))
    figures.add("state machine steps CSTrie snapshots (check() each step)", STEPS["n"])
    assert STEPS["n"] >= 5_000
