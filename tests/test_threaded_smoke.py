"""A threaded smoke test of every matcher of the registry, in every dialect.

Four threads subscribe, unsubscribe and look up at once (``sys.setswitchinterval(1e-6)`` on
the GIL build, so that they interleave finely), started together at a barrier. Every thread
owns its subscriber ids, so:

- each ``unsubscribe`` return value is known exactly (only its owner touches a pair);
- in each ``lookup``, the owner's subscribers are exactly those its own model predicts (its
  own writes happened before), and any other subscriber returned is one that could be there:
  a known id, with one of the patterns it may use matching the topic;
- the final state is exactly the union of the threads' models.

This is a smoke test, not a proof: the linearizability layer checks histories. Loops are
bounded in count and time, and threads re-raise their exception on join.
"""

from __future__ import annotations

import random
import time

import pytest
from matchers import IDS, REGISTRY, build, reference_matches
from strategies import DIALECTS, all_topics, every_pattern, seed_for
from threads import run_threads, switch_interval

THREADS = 4
SUBS_PER_THREAD = 3
PATTERNS_PER_SUB = 6
OPS_PER_THREAD = 2500
TIME_LIMIT = 20.0  # seconds a thread may run before it stops, whatever its count
JOIN_TIMEOUT = 60.0  # a thread still running then is a failure (run_threads)
MAX_WORDS = 3


@pytest.mark.concurrency
@pytest.mark.timeout(180)
@pytest.mark.parametrize("spec", REGISTRY, ids=IDS)
@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_threaded_smoke(spec, dialect, figures):
    seed = seed_for("threaded", spec.name, dialect)
    rng = random.Random(seed)
    topics = all_topics(dialect, MAX_WORDS)
    subject = build(spec, dialect, topics, MAX_WORDS)
    m = subject.matcher
    # Patterns the matcher documents as unsupported are left out: a rejection could not be
    # checked against a global state that other threads are changing.
    pool = [p for p in every_pattern(dialect, MAX_WORDS) if not subject.may_reject(p)]
    owned = {k: [(f"t{k}", i) for i in range(SUBS_PER_THREAD)] for k in range(THREADS)}
    allowed = {s: rng.sample(pool, PATTERNS_PER_SUB) for subs in owned.values() for s in subs}
    could = {  # topic -> every subscriber that may ever be returned for it
        t: frozenset(s for s, ps in allowed.items() if any(reference_matches(p, t, dialect)
                                                         for p in ps))
        for t in topics
    }
    models: dict[int, dict[str, set]] = {k: {} for k in range(THREADS)}
    deadline = time.monotonic() + TIME_LIMIT

    def work(k: int) -> int:
        """Thread k's operations; returns how many it ran."""
        r = random.Random(seed * 1000 + k)
        mine = owned[k]
        model = models[k]
        done = 0
        for i in range(OPS_PER_THREAD):
            if time.monotonic() > deadline:
                break
            ctx = f"thread {k} op {i}, seed={seed}"
            x = r.random()
            s = r.choice(mine)
            p = r.choice(allowed[s])
            if x < 0.45:
                m.subscribe(p, s)
                model.setdefault(p, set()).add(s)
            elif x < 0.75:
                present = s in model.get(p, ())
                got = m.unsubscribe(p, s)
                assert got is present, (
                    f"unsubscribe({p!r}, {s!r}) = {got}, its owner knows {present}; {ctx}"
                )
                if present:
                    model[p].discard(s)
                    if not model[p]:
                        del model[p]
            else:
                t = r.choice(topics)
                got = m.lookup(t)
                assert isinstance(got, frozenset), ctx
                extra = got - could[t]
                assert not extra, f"lookup({t!r}) returned impossible {sorted(extra)}; {ctx}"
                own = {x for x in got if x in mine}
                want = {
                    s for p, ss in model.items() if reference_matches(p, t, dialect) for s in ss
                }
                assert own == want, (
                    f"lookup({t!r}): own subscribers {sorted(own)}, expected {sorted(want)} "
                    f"from {model}; {ctx}"
                )
            done += 1
        return done

    with switch_interval(1e-6):
        counts = run_threads([work] * THREADS, timeout=JOIN_TIMEOUT)

    ops = sum(counts)
    figures.add(f"threaded smoke ops {spec.name}", ops)
    assert ops >= THREADS * 100, f"only {ops} operations ran in {TIME_LIMIT} s, seed={seed}"

    final: dict[str, set] = {}
    for model in models.values():
        for p, ss in model.items():
            final.setdefault(p, set()).update(ss)
    ctx = f"after the threads, seed={seed}"
    subject.check_state(final, ctx)
    for t in topics:
        subject.check_lookup(final, t, ctx)
    check = getattr(m, "check", None)
    if check is not None:
        check()
