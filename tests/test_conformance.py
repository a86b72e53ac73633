"""Layer 2: every matcher of the registry, in every dialect, against the reference matcher.

One body per test, parametrized over ``matchers.REGISTRY`` x the three dialects. A matcher may
differ from the reference only where its class documents a limit (see ``tests/matchers.py``);
the helpers of :class:`matchers.Subject` allow exactly those limits and nothing else.
"""

from __future__ import annotations

import random

import pytest
from matchers import IDS, REGISTRY, Subject, build, model_repr
from strategies import (
    DIALECTS,
    INVALID_PATTERNS,
    INVALID_TOPICS,
    NON_STR,
    SUBSCRIBERS,
    SYNTAX,
    UNHASHABLE,
    all_topics,
    every_pattern,
    random_pattern,
    random_topic,
    seed_for,
)

import ctrie
from ctrie import Dialect, InvalidTopicError

# The optimized bitmap gets max_words = 4: patterns of up to 5 words then include some it may
# reject, and the universe includes topics longer than 4 words, which it must not match.
MAX_WORDS = 4
PATTERN_WORDS = 5

over_registry = pytest.mark.parametrize("spec", REGISTRY, ids=IDS)
over_dialects = pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)


def universe(dialect: Dialect, rng: random.Random, n_long: int = 40) -> list[str]:
    """Every topic of up to 3 words, plus some of 4 to 6 words; the inverted bitmap's space."""
    long = {random_topic(rng, dialect, 4, 6) for _ in range(n_long)}
    return sorted(set(all_topics(dialect, 3)) | long)


def test_registry():
    assert len(set(IDS)) == len(IDS)
    names = {s.name for s in REGISTRY}
    assert {"NaiveMatcher", "InvertedBitmapMatcher", "OptimizedBitmapMatcher",
            "LockedTrie(cache=True)", "LockedTrie(cache=False)"} <= names
    assert ("CSTrie" in names) is hasattr(ctrie, "CSTrie")


# --- oracle agreement -----------------------------------------------------------------------


@over_registry
@over_dialects
def test_oracle_agreement(spec, dialect, figures):
    """Random seeded patterns and subscribers; after each batch of subscribes and of
    unsubscribes, every topic of the universe is looked up and compared with the reference
    applied to every stored pattern."""
    seed = seed_for("oracle", spec.name, dialect)
    rng = random.Random(seed)
    topics = universe(dialect, rng)
    subject = build(spec, dialect, topics, MAX_WORDS)
    model: dict[str, set] = {}
    lookups = non_empty = 0
    for rnd in range(3):
        for i in range(40):
            pattern = random_pattern(rng, dialect, PATTERN_WORDS)
            ctx = f"seed={seed} round={rnd} subscribe #{i}"
            subject.subscribe(model, pattern, rng.choice(SUBSCRIBERS), ctx)
        for phase in ("after subscribing", "after unsubscribing"):
            ctx = f"seed={seed} round={rnd} {phase}"
            subject.check_state(model, ctx)
            for topic in topics:
                non_empty += bool(subject.check_lookup(model, topic, ctx))
                lookups += 1
            if phase == "after subscribing":
                pairs = sorted(((p, s) for p, ss in model.items() for s in ss), key=repr)
                for p, s in rng.sample(pairs, len(pairs) // 2):
                    subject.unsubscribe(model, p, s, ctx)
                for _ in range(10):  # pairs that are (most likely) absent
                    p = random_pattern(rng, dialect, PATTERN_WORDS)
                    subject.unsubscribe(model, p, rng.choice(SUBSCRIBERS), ctx)
    # The run must have exercised matching, not compared empty sets.
    assert non_empty > lookups // 4, f"seed={seed}: only {non_empty}/{lookups} lookups matched"
    figures.add(f"oracle lookups {spec.name}", lookups)


# --- protocol basics ------------------------------------------------------------------------


def _overlapping_patterns(dialect: Dialect) -> tuple[str, list[str]]:
    """A topic and several distinct patterns that all match it (two equivalent in AMQP)."""
    s = SYNTAX[dialect]
    j = s.sep.join
    topic = j(["a", "b"])
    pats = [topic, j(["a", s.single]), j([s.single, "b"]), j([s.single, s.single]),
            s.multi, j(["a", s.multi])]
    if dialect is Dialect.AMQP:
        pats += [j([s.multi, s.multi]), j([s.multi, "b"])]
    if dialect is Dialect.MQTT:
        pats += [j(["a", "b", s.multi])]  # '#' matches the parent
    return topic, pats


@over_registry
@over_dialects
def test_protocol_basics(spec, dialect, figures):
    topic, pats = _overlapping_patterns(dialect)
    for p in pats:
        assert ctrie.matches(p, topic, dialect), (p, topic)  # the premise of this test
    subject = build(spec, dialect.value, [topic, "x"], MAX_WORDS)  # dialect given by name
    pats = [p for p in pats if not subject.may_reject(p)]  # only the documented exceptions
    m = subject.matcher
    assert m.dialect is dialect
    assert isinstance(m, ctrie.Matcher)

    assert len(m) == 0 and m.subscriptions() == {}
    assert m.lookup(topic) == frozenset() and isinstance(m.lookup(topic), frozenset)

    # subscribe is idempotent
    assert m.subscribe(pats[0], "x") is None
    m.subscribe(pats[0], "x")
    assert len(m) == 1
    assert m.subscriptions() == {pats[0]: frozenset({"x"})}
    assert m.lookup(topic) == frozenset({"x"})

    # one subscriber through several matching patterns appears once
    for p in pats:
        m.subscribe(p, "x")
    assert len(m) == len(pats)
    assert m.subscriptions() == {p: frozenset({"x"}) for p in pats}
    got = m.lookup(topic)
    assert isinstance(got, frozenset) and got == frozenset({"x"})

    # several subscribers of one pattern
    m.subscribe(pats[0], "y")
    m.subscribe(pats[0], ("t", 1))
    assert m.lookup(topic) == frozenset({"x", "y", ("t", 1)})
    assert m.subscriptions()[pats[0]] == frozenset({"x", "y", ("t", 1)})
    assert len(m) == len(pats) + 2

    # unsubscribe: True exactly when the pair was present
    assert m.unsubscribe(pats[0], "z") is False  # pattern present, subscriber not
    assert m.unsubscribe(SYNTAX[dialect].sep.join(["q", "r"]), "x") is False  # pattern absent
    assert m.unsubscribe(pats[0], "y") is True
    assert m.unsubscribe(pats[0], "y") is False
    assert len(m) == len(pats) + 1
    assert m.lookup(topic) == frozenset({"x", ("t", 1)})

    # removing one pattern's last subscriber leaves no empty entry and keeps the others
    assert m.unsubscribe(pats[1], "x") is True
    subs = m.subscriptions()
    assert pats[1] not in subs
    assert all(isinstance(v, frozenset) and v for v in subs.values()), subs
    assert m.lookup(topic) == frozenset({"x", ("t", 1)})  # still matched through the others

    # remove everything, last pattern first
    for p in reversed(pats):
        if p != pats[1]:
            assert m.unsubscribe(p, "x") is True, p
    assert m.lookup(topic) == frozenset({("t", 1)})
    assert m.unsubscribe(pats[0], ("t", 1)) is True
    assert len(m) == 0 and m.subscriptions() == {} and m.lookup(topic) == frozenset()
    figures.add(f"protocol checks {spec.name}", 1)


# --- bad input ------------------------------------------------------------------------------


def _populated(spec, dialect, seed) -> tuple[Subject, dict[str, set], list[str]]:
    rng = random.Random(seed)
    topics = universe(dialect, rng, n_long=10)
    subject = build(spec, dialect, topics, MAX_WORDS)
    model: dict[str, set] = {}
    for _ in range(30):
        subject.subscribe(model, random_pattern(rng, dialect, 3), rng.choice(SUBSCRIBERS))
    return subject, model, topics


@over_registry
@over_dialects
def test_bad_input_raises_and_changes_nothing(spec, dialect, figures):
    seed = seed_for("bad input", spec.name, dialect)
    subject, model, topics = _populated(spec, dialect, seed)
    m = subject.matcher
    subject.check_state(model, f"seed={seed}")
    lookups_before = {t: m.lookup(t) for t in topics}
    fresh = SYNTAX[dialect].sep.join(["fresh", "pattern"])  # valid, not stored
    stored = next(iter(model))

    calls = []  # (description, callable, expected exception, offending string or None)
    for x in NON_STR:
        calls += [
            (f"subscribe({x!r}, 's')", lambda x=x: m.subscribe(x, "s"), TypeError, None),
            (f"unsubscribe({x!r}, 's')", lambda x=x: m.unsubscribe(x, "s"), TypeError, None),
            (f"lookup({x!r})", lambda x=x: m.lookup(x), TypeError, None),
        ]
    for u in UNHASHABLE:
        for p in (fresh, stored):
            calls += [
                (f"subscribe({p!r}, {u!r})", lambda p=p, u=u: m.subscribe(p, u), TypeError, None),
                (f"unsubscribe({p!r}, {u!r})", lambda p=p, u=u: m.unsubscribe(p, u), TypeError,
                 None),
            ]
    for p in INVALID_PATTERNS[dialect]:
        calls += [
            (f"subscribe({p!r}, 's')", lambda p=p: m.subscribe(p, "s"), InvalidTopicError, p),
            (f"unsubscribe({p!r}, 's')", lambda p=p: m.unsubscribe(p, "s"), InvalidTopicError, p),
        ]
    for t in INVALID_TOPICS[dialect]:
        calls.append((f"lookup({t!r})", lambda t=t: m.lookup(t), InvalidTopicError, t))

    for what, call, exc_type, offending in calls:
        ctx = f"{subject}: {what}, seed={seed}"
        with pytest.raises(exc_type) as info:
            call()
        if offending is not None:
            assert repr(offending) in str(info.value), f"{ctx}: message {str(info.value)!r}"
        subject.check_state(model, ctx)
    # and the matcher still answers as before
    for t in topics:
        assert m.lookup(t) == lookups_before[t], f"{subject}: lookup({t!r}) changed, seed={seed}"
    figures.add(f"bad input calls {spec.name}", len(calls))


# --- subscribe everything, then remove everything -------------------------------------------


@over_registry
@over_dialects
def test_fill_then_empty(spec, dialect, figures):
    """Every pattern of up to 3 words (a second subscriber on every other one), then every
    pair removed in a seeded random order: the matcher must end exactly empty, and be usable
    again."""
    seed = seed_for("fill then empty", spec.name, dialect)
    rng = random.Random(seed)
    topics = universe(dialect, rng, n_long=10)
    subject = build(spec, dialect, topics, 3)  # patterns of 3 words: none beyond max_words
    m = subject.matcher
    model: dict[str, set] = {}
    pats = every_pattern(dialect, 3)
    for i, p in enumerate(pats):
        subject.subscribe(model, p, "s", f"seed={seed}")
        if i % 2:
            subject.subscribe(model, p, i, f"seed={seed}")
    subject.check_state(model, f"seed={seed} full")
    for t in topics:
        subject.check_lookup(model, t, f"seed={seed} full")
    pairs = sorted(((p, s) for p, ss in model.items() for s in ss), key=repr)
    rng.shuffle(pairs)
    for k, (p, s) in enumerate(pairs):
        assert m.unsubscribe(p, s) is True, (
            f"{subject}: unsubscribe({p!r}, {s!r}) #{k} seed={seed}"
        )
        model[p].discard(s)
        if not model[p]:
            del model[p]
        if k % 97 == 0:  # spot checks on the way down
            subject.check_state(model, f"seed={seed} after {k + 1} removals")
    assert model == {}
    assert len(m) == 0, f"{subject}: len {len(m)} after removing everything, seed={seed}"
    assert m.subscriptions() == {}, f"{subject}: {model_repr(m.subscriptions())}, seed={seed}"
    for t in topics:
        assert m.lookup(t) == frozenset(), f"{subject}: lookup({t!r}) after emptying, seed={seed}"
    for p, s in pairs[:50]:
        assert m.unsubscribe(p, s) is False, f"{subject}: {p!r}, {s!r} removed twice"
    # usable again
    p0 = pats[len(pats) // 2]
    subject.subscribe(model, p0, "again")
    subject.check_state(model, f"seed={seed} refilled")
    for t in topics:
        subject.check_lookup(model, t, f"seed={seed} refilled")
    figures.add(f"fill-empty pairs {spec.name}", len(pairs))


# --- the documented limits themselves -------------------------------------------------------

LIMITED = [s for s in REGISTRY if s.blind_outside_space or s.blind_beyond_max_words]


@pytest.mark.parametrize("spec", LIMITED, ids=[s.name for s in LIMITED])
@over_dialects
def test_documented_limits(spec, dialect, figures):
    """What the class docstrings promise outside their capacity: frozenset(), not an error
    and not a guess."""
    s = SYNTAX[dialect]
    one, two, three = "a", s.sep.join(["a", "b"]), s.sep.join(["a", "b", "a"])
    m = build(spec, dialect, [one, two], 2).matcher
    for p in (s.multi, s.sep.join(["a", s.multi])):
        m.subscribe(p, "s")
    assert m.lookup(two) == frozenset({"s"})
    if spec.blind_outside_space:
        assert m.lookup(s.sep.join(["b", "a"])) == frozenset()  # outside the space
    if spec.blind_beyond_max_words:
        assert m.lookup(three) == frozenset()  # longer than max_words
    assert len(m) == 2
    figures.add(f"documented-limit checks {spec.name}", 1)


@over_dialects
def test_inverted_bitmap_can_raise_outside_its_space(dialect, figures):
    """InvertedBitmapMatcher(..., outside_space="raise"): a valid topic outside the space
    raises TopicOutsideSpaceError (an InvalidTopicError) naming the topic and the rule, and
    changes nothing; a topic inside answers as before; an invalid topic still breaks its
    dialect's rule; the default still answers frozenset()."""
    from baselines import InvertedBitmapMatcher, TopicOutsideSpaceError

    s = SYNTAX[dialect]
    inside, outside = s.sep.join(["a", "b"]), s.sep.join(["b", "a"])
    space = [inside, "a"] + ([""] if dialect is Dialect.AMQP else [])
    strict = InvertedBitmapMatcher(space, dialect=dialect, outside_space="raise")
    lenient = InvertedBitmapMatcher(space, dialect=dialect)
    for m in (strict, lenient):
        m.subscribe(s.multi, "all")
        m.subscribe(s.sep.join(["a", s.single]), "a.*")
    state = (strict.subscriptions(), len(strict))
    assert strict.lookup(inside) == lenient.lookup(inside) == frozenset({"all", "a.*"})
    assert lenient.lookup(outside) == frozenset()
    for topic in (outside, "x" * 1_000_000):
        with pytest.raises(TopicOutsideSpaceError) as info:
            strict.lookup(topic)
        msg = str(info.value)
        assert isinstance(info.value, InvalidTopicError) and info.value.value == topic
        assert "topic space" in msg and len(msg) <= 1_000, msg[:2_000]
        assert (repr(topic) if len(topic) < 100 else f"{len(topic):,} characters") in msg, msg
    assert (strict.subscriptions(), len(strict)) == state
    if dialect is Dialect.AMQP:
        assert strict.lookup("") == frozenset({"all"})  # the empty key, inside the space
    bad = INVALID_TOPICS[dialect][0]
    with pytest.raises(InvalidTopicError) as info:
        strict.lookup(bad)
    assert not isinstance(info.value, TopicOutsideSpaceError), str(info.value)
    with pytest.raises(ValueError, match="outside_space"):
        InvertedBitmapMatcher(space, dialect=dialect, outside_space="ignore")
    with pytest.raises(TypeError):
        InvertedBitmapMatcher(space, dialect, "raise")  # keyword-only
    figures.add("outside-space checks InvertedBitmapMatcher", 1)


@pytest.mark.parametrize("options", [{"cache_max": 10}, {"cache_sweep_to": 5},
                                     {"cache": False, "cache_max": 10, "cache_sweep_to": 1}])
def test_cache_bounds_without_the_cache_are_refused(options):
    """``cache_max`` and ``cache_sweep_to`` bound the result cache: without ``cache=True``
    they would be ignored, so they are refused, naming the argument and the rule."""
    with pytest.raises(ValueError) as info:
        ctrie.CSTrie(**options)
    msg = str(info.value)
    named = [k for k in options if k.startswith("cache_")]
    assert all(k in msg for k in named) and "cache=True" in msg, msg
    assert len(ctrie.CSTrie(cache=True, cache_max=10, cache_sweep_to=1)) == 0  # with it: fine


# --- the AMQP empty key ---------------------------------------------------------------------

# AMQP 0-9-1: a routing key is "zero or more words". RabbitMQ routes a message published with
# the key "" to a '#' binding and to a '' binding; '#' matches zero or more words, so 'a.#'
# matches 'a' but not "" (its 'a' needs a word), and '*' needs one.
EMPTY_KEY_MATCHED = ["", "#", "#.#"]
EMPTY_KEY_UNMATCHED = ["*", "*.#", "#.*", "a.#", "#.a", "a", "#c"]


@over_registry
def test_amqp_empty_key(spec, figures):
    """The empty key as a pattern and as a topic: matched exactly by the patterns that can
    match zero words, reported by subscriptions() and counted by len(), removable; the
    pattern '' matches nothing else."""
    topics = ["", "a", "a.b", "#c"]
    subject = build(spec, Dialect.AMQP, topics, MAX_WORDS)
    m = subject.matcher
    model: dict[str, set] = {}
    for k, p in enumerate(EMPTY_KEY_MATCHED + EMPTY_KEY_UNMATCHED):
        subject.subscribe(model, p, k)
    assert m.lookup("") == frozenset(range(len(EMPTY_KEY_MATCHED))), f"{subject}"
    subject.check_state(model)
    assert "" in m.subscriptions(), f"{subject}: subscriptions() lost the empty key"
    for t in topics:
        subject.check_lookup(model, t)
    subject.subscribe(model, "", "second")
    subject.subscribe(model, "", "second")  # idempotent
    assert m.lookup("") == frozenset({0, 1, 2, "second"})
    assert subject.unsubscribe(model, "", 0) is True
    assert subject.unsubscribe(model, "", 0) is False
    for t in topics:
        subject.check_lookup(model, t)
    subject.check_state(model)
    assert subject.unsubscribe(model, "", "second") is True
    assert "" not in m.subscriptions()
    subject.check_state(model)
    assert m.lookup("") == frozenset({1, 2})
    if hasattr(m, "check"):
        m.check()
    figures.add(f"empty key checks {spec.name}", 1)


@over_registry
@pytest.mark.parametrize("dialect", [Dialect.NATS, Dialect.MQTT], ids=lambda d: d.value)
def test_empty_string_stays_invalid_outside_amqp(spec, dialect):
    subject = build(spec, dialect, ["a"], MAX_WORDS)
    m = subject.matcher
    for call in (lambda: m.subscribe("", 1), lambda: m.unsubscribe("", 1), lambda: m.lookup("")):
        with pytest.raises(InvalidTopicError):
            call()
    assert len(m) == 0 and m.subscriptions() == {}


# --- long bad input: abbreviated messages ---------------------------------------------------

MESSAGE_MAX = 1_000


def _long_bad_input(dialect: Dialect) -> list[tuple[str, str, int, int, tuple[str, ...]]]:
    """(kind, string, character index, word index, words the message must use for the rule)
    of a 10,000-level pattern and a 1 MB topic that break a rule near their end."""
    s = SYNTAX[dialect]
    sep = s.sep
    deep = sep.join(["w"] * 5_000)
    pattern_cases = {
        Dialect.NATS: (sep.join([deep, ">", deep[:-2]]), ("last",)),  # '>' then 4,999 words
        Dialect.AMQP: (deep + sep + sep + deep[:-2], ("empty",)),  # an empty word
        Dialect.MQTT: (sep.join([deep, "#", deep[:-2]]), ("last",)),
    }
    pattern, pattern_rule = pattern_cases[dialect]
    mega = sep.join(["w"] * 500_000)  # 999,999 characters
    topic_cases = {
        Dialect.NATS: (mega + sep + "*", ("literal", "wildcard", "'*'")),
        Dialect.AMQP: (mega + sep + "#", ("literal", "wildcard", "'#'")),
        Dialect.MQTT: (mega + sep + "+", ("'+'", "wildcard")),
    }
    topic, topic_rule = topic_cases[dialect]
    # Each breaks its rule right after the 5,000 (500,000) words of ``deep`` (``mega``).
    return [("pattern", pattern, len(deep) + 1, 5_000, pattern_rule),
            ("topic", topic, len(mega) + 1, 500_000, topic_rule)]


@over_registry
@over_dialects
def test_long_bad_input_gives_a_short_message(spec, dialect, figures):
    """A 10,000-level pattern and a 1 MB topic that break a rule near their end: every
    matcher's error names the rule, the string's start and length, and where it broke
    (character and word index, with the characters around it), in at most about 1,000
    characters, and changes nothing."""
    subject, model, _ = _populated(spec, dialect, seed_for("long bad input", spec.name, dialect))
    m = subject.matcher
    for kind, s, at, word, rule_words in _long_bad_input(dialect):
        calls = ([lambda: m.subscribe(s, "x"), lambda: m.unsubscribe(s, "x")]
                 if kind == "pattern" else [lambda: m.lookup(s)])
        for call in calls:
            with pytest.raises(InvalidTopicError) as info:
                call()
            msg = str(info.value)
            ctx = f"{subject} {kind} of {len(s):,} characters: {msg!r}"
            assert len(msg) <= MESSAGE_MAX, ctx
            assert f"{len(s):,} characters" in msg, ctx
            assert repr(s[:40])[:-1] in msg, ctx  # its start
            assert f"character index {at:,}" in msg and f"word index {word:,}" in msg, ctx
            assert any(w in msg.lower() for w in rule_words), ctx
            assert repr(s[at - 5:at + 1])[1:-1] in msg, ctx  # the characters up to the break
            assert info.value.value is s and info.value.position == at, ctx
            subject.check_state(model, ctx)
        figures.add(f"long bad input messages {spec.name}", len(calls))


@over_registry
def test_long_non_str_and_unhashable_input_gives_a_short_message(spec):
    m = build(spec, Dialect.NATS, ["a"], MAX_WORDS).matcher
    big = [b"x" * 1_000_000, list(range(1_000_000))]
    for call in (lambda: m.subscribe(big[0], "s"), lambda: m.lookup(big[0]),
                 lambda: m.subscribe("a", big[1])):
        with pytest.raises(TypeError) as info:
            call()
        assert len(str(info.value)) <= MESSAGE_MAX, str(info.value)[:2_000]
    assert len(m) == 0


def test_help_shows_the_constructors_public_arguments():
    """``help(CSTrie)`` and ``inspect.signature`` show what ``__init__`` takes (its
    ``__new__`` only picks the class and would hide ``cache_max`` behind ``**_kw``), and
    no private argument."""
    import inspect

    params = inspect.signature(ctrie.CSTrie).parameters
    assert list(params) == ["dialect", "cache", "cache_max", "cache_sweep_to"], list(params)
