"""Layer 3: a Hypothesis state machine per matcher and dialect against a plain dict model.

One machine class (built by :func:`machine_class` for a registry entry and a dialect) runs
random sequences of subscribe, unsubscribe, lookup, subscriptions and len on the matcher and
on a ``dict[str, set]``, and compares every answer. Invalid input (bad patterns and topics,
non-``str`` values, unhashable subscribers) must raise the documented error and leave the
matcher as it was. A matcher with a ``check()`` method (``CSTrie``) has it called after every
step; one with ``snapshot()`` and ``read_only_snapshot()`` (``CSTrie``) also gets rules that
take snapshots, mutate writable ones apart from their origin (each against its own model),
and check that read-only ones keep their state and refuse writes with ``ReadOnlyError``.

Every rule counts the operations it runs; the total per matcher is added to the figures and
asserted, so that a change of settings cannot silently shrink the evidence.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from matchers import IDS, REGISTRY, MatcherSpec, build, model_repr
from strategies import (
    DIALECTS,
    INVALID_PATTERNS,
    INVALID_TOPICS,
    NON_STR,
    SYNTAX,
    UNHASHABLE,
    all_topics,
    pattern_pool,
    subscribers,
    topic_pool,
)

from ctrie import Dialect, InvalidTopicError, ReadOnlyError, UnsupportedPatternError

BAD_INPUT = ("invalid pattern", "invalid topic", "not a str", "unhashable subscriber")

# Patterns of up to 4 words, topics of up to 4 words; the optimized bitmap holds 3, so both
# of its documented limits are exercised.
PATTERN_WORDS = 4
TOPIC_WORDS = 4
MAX_WORDS = 3

MAX_FORKS = 3  # snapshots alive at once

MIN_STEPS_PER_MATCHER = 50_000
MIN_STEPS = math.ceil(MIN_STEPS_PER_MATCHER / len(DIALECTS))  # per (matcher, dialect)

SETTINGS = settings(
    # 300 steps stay well inside Hypothesis' per-example choice budget (longer runs overrun
    # and end early). Hypothesis mixes literals of every loaded module into its draws, so
    # the same settings give other examples when other tests are collected or any code
    # changes: at 70 examples one dialect's steps ranged from 15,152 (below MIN_STEPS, with
    # one selection of test files) to 21,000. 90 examples keep the floor with a margin.
    max_examples=90,
    stateful_step_count=300,
    print_blob=True,
    deadline=None,
    derandomize=True,  # reproducible: the same examples on every run
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def machine_class(spec: MatcherSpec, dialect: Dialect, steps: list[int]) -> type:
    """The state machine for one matcher and dialect; ``steps[0]`` counts operations run."""
    universe = all_topics(dialect, TOPIC_WORDS)
    pattern_strategy = pattern_pool(dialect, PATTERN_WORDS)
    topic_strategy = topic_pool(universe, SYNTAX[dialect].sep)

    class MatcherMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.subject = build(spec, dialect, universe, MAX_WORDS)
            self.m = self.subject.matcher
            self.model: dict[str, set] = {}
            self.pattern_strategy = pattern_strategy
            self.topic_strategy = topic_strategy
            self.forks: list[tuple] = []  # (Subject around a snapshot, its model, read-only)
            self.n_snapshots = 0

        def _pairs(self) -> list[tuple[str, object]]:
            return sorted(((p, s) for p, ss in self.model.items() for s in ss), key=repr)

        # --- valid operations -------------------------------------------------------------

        @rule(pattern=pattern_strategy, sub=subscribers())
        def subscribe(self, pattern, sub):
            steps[0] += 1
            self.subject.subscribe(self.model, pattern, sub)

        @precondition(lambda self: self.model)
        @rule(data=st.data())
        def unsubscribe_present(self, data):
            steps[0] += 1
            pattern, sub = data.draw(st.sampled_from(self._pairs()), label="pair")
            assert self.subject.unsubscribe(self.model, pattern, sub) is True

        @rule(pattern=pattern_strategy, sub=subscribers())
        def unsubscribe_any(self, pattern, sub):
            steps[0] += 1
            self.subject.unsubscribe(self.model, pattern, sub)

        @rule(topic=topic_strategy)
        def lookup(self, topic):
            steps[0] += 1
            self.subject.check_lookup(self.model, topic)

        @rule()
        def subscriptions(self):
            steps[0] += 1
            self.subject.check_state(self.model)

        @rule()
        def length(self):
            steps[0] += 1
            n = len(self.m)
            assert n == sum(map(len, self.model.values())), f"len() = {n}, model {self.model}"

        # --- invalid input: the right error, and nothing changes ---------------------------

        @rule(data=st.data(), kind=st.sampled_from(BAD_INPUT))
        def bad_input(self, data, kind):
            steps[0] += 1
            m = self.m
            if kind == "invalid pattern":
                op = data.draw(st.sampled_from(["subscribe", "unsubscribe"]), label="op")
                value = data.draw(st.sampled_from(INVALID_PATTERNS[dialect]), label="pattern")
                args, errors = (value, 0), InvalidTopicError
            elif kind == "invalid topic":
                op = "lookup"
                value = data.draw(st.sampled_from(INVALID_TOPICS[dialect]), label="topic")
                args, errors = (value,), InvalidTopicError
            elif kind == "not a str":
                op = data.draw(st.sampled_from(["subscribe", "unsubscribe", "lookup"]), label="op")
                value = data.draw(st.sampled_from(NON_STR), label="value")
                args, errors = ((value,) if op == "lookup" else (value, 0)), TypeError
            else:  # an unhashable subscriber, with a stored pattern or any pattern
                op = data.draw(st.sampled_from(["subscribe", "unsubscribe"]), label="op")
                stored = sorted(self.model) or ["fresh"]
                pattern = data.draw(st.one_of(st.sampled_from(stored), self.pattern_strategy),
                                    label="pattern")
                args = (pattern, data.draw(st.sampled_from(UNHASHABLE), label="subscriber"))
                # A pattern this matcher documents as unsupported breaks two rules: either
                # error is then correct.
                errors = (TypeError, UnsupportedPatternError) \
                    if self.subject.may_reject(pattern) else TypeError
                value = None
            with pytest.raises(errors) as info:
                getattr(m, op)(*args)
            if errors is InvalidTopicError:
                assert repr(value) in str(info.value), f"{op}{args!r}: {str(info.value)!r}"
            self.subject.check_state(self.model, f"after {op}{args!r}")

        # --- after every step ---------------------------------------------------------------

        @invariant()
        def structure(self):
            check = getattr(self.m, "check", None)
            if check is not None:
                check()

        def teardown(self):
            self.subject.check_state(self.model, "at the end of the example")
            for fork, model, _ in self.forks:
                fork.check_state(model, "at the end of the example")

    class SnapshotMachine(MatcherMachine):
        """The same machine, plus snapshot rules, for matchers that have snapshots (CSTrie).
        (A subclass rather than preconditions, so that other matchers do not pay for rules
        that can never run.)"""

        # A writable snapshot is mutated apart from its origin, each against its own model;
        # a read-only snapshot must keep the state it was taken in and refuse writes.

        @precondition(lambda self: len(self.forks) < MAX_FORKS)
        @rule(readonly=st.booleans())
        def take_snapshot(self, readonly):
            steps[0] += 1
            snap = self.m.read_only_snapshot() if readonly else self.m.snapshot()
            label = f"{'read-only ' if readonly else ''}snapshot #{self.n_snapshots}"
            self.n_snapshots += 1
            fork = self.subject.derived(snap, label)
            model = {p: set(ss) for p, ss in self.model.items()}
            fork.check_state(model, "just taken")
            self.forks.append((fork, model, readonly))

        @precondition(lambda self: self.forks)
        @rule(data=st.data(), pattern=pattern_strategy, sub=subscribers(),
              op=st.sampled_from(["subscribe", "unsubscribe", "lookup", "subscriptions"]))
        def on_snapshot(self, data, pattern, sub, op):
            steps[0] += 1
            fork, model, readonly = data.draw(st.sampled_from(self.forks), label="snapshot")
            if op == "lookup":
                fork.check_lookup(model, data.draw(self.topic_strategy, label="topic"))
            elif op == "subscriptions":
                fork.check_state(model)
            elif readonly:
                with pytest.raises(ReadOnlyError):
                    getattr(fork.matcher, op)(pattern, sub)
                fork.check_state(model, f"after a refused {op}({pattern!r}, {sub!r})")
            else:
                getattr(fork, op)(model, pattern, sub)
            fork.matcher.check()

        @invariant()
        def unshared(self):
            # Read every trie without snapshotting it (a quiescent walk): check_state goes
            # through subscriptions(), which takes a read-only snapshot and so gives the trie
            # a fresh generation; reading only that way would hide an I-node shared between
            # a trie and its snapshot.
            pairs = [(self.subject, self.model)] + [(f, m) for f, m, _ in self.forks]
            for subject, model in pairs:
                want = {p: frozenset(ss) for p, ss in model.items() if ss}
                got = dict(subject.matcher._items())
                assert got == want, (
                    f"{subject}: holds {model_repr(got)}, expected {model_repr(want)}"
                )

        @precondition(lambda self: self.forks)
        @rule(data=st.data())
        def drop_snapshot(self, data):
            steps[0] += 1
            i = data.draw(st.integers(0, len(self.forks) - 1), label="index")
            fork, model, _ = self.forks.pop(i)
            fork.check_state(model, "when dropped")

    probe = build(spec, dialect, universe, MAX_WORDS).matcher
    can_snapshot = hasattr(probe, "snapshot") and hasattr(probe, "read_only_snapshot")
    machine = SnapshotMachine if can_snapshot else MatcherMachine
    machine.__name__ = machine.__qualname__ = f"{machine.__name__}[{spec.name}-{dialect.value}]"
    return machine


@pytest.mark.parametrize("spec", REGISTRY, ids=IDS)
@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_state_machine(spec, dialect, figures):
    steps = [0]
    run_state_machine_as_test(machine_class(spec, dialect, steps), settings=SETTINGS)
    figures.add(f"state machine steps {spec.name}", steps[0])
    assert steps[0] >= MIN_STEPS, (
        f"{spec.name} {dialect.value}: only {steps[0]} steps ran (need {MIN_STEPS} per dialect "
        f"for {MIN_STEPS_PER_MATCHER} per matcher)"
    )
