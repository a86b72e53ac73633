"""RDCSS on the root decides its outcome before the root moves (team issue 17, point 2).

Each test drives its threads one CAS site at a time through the fault hook
(:mod:`schedule`), so every interleaving here is exact and replays on both builds.
"""

from __future__ import annotations

import pytest
from schedule import StepScheduler

from ctrie import CSTrie
from ctrie.gcas import gcas_read
from ctrie.nodes import Gen, INode
from ctrie.rdcss import rdcss_root

pytestmark = pytest.mark.concurrency

#: Rounds the livelock adversary may play; each round is a full restart of all three operations.
ROUNDS = 50


# --- where a thread is parked ----------------------------------------------------------------


def _installed(sched: StepScheduler, name: str, trie: CSTrie):
    """``name`` is parked right after the root CAS that put a descriptor in the root."""
    return lambda: sched.at(name) == ("rdcss", "after") and type(trie._root.get()) is not INode


def _moved_root(sched: StepScheduler, name: str, trie: CSTrie):
    """``name`` is parked right after the root CAS that took a descriptor out of the root."""
    return lambda: sched.at(name) == ("rdcss", "after") and type(trie._root.get()) is INode


def _restarting(sched: StepScheduler, name: str):
    """``name`` is parked right after rolling back its aborted GCAS: its operation restarts
    (reads the root again) at its next step."""
    trace = sched[name].trace
    return lambda: (len(trace) >= 3 and trace[-1] == ("inode_cas", "after")
                    and trace[-3] == ("gcas_commit", "after"))


# --- the livelock of issue 17 ----------------------------------------------------------------


def _livelock(sched: StepScheduler, trie: CSTrie, rounds: int) -> tuple[int, bool]:
    """Play the adversary against snapshot ``S`` and subscribes ``A`` and ``B``; return how
    many rounds it kept all three restarting, and whether every round ended in one state.

    Setup: S puts its descriptor in the root; A (reading the root) completes it, moving the
    root to the new I-node, and is parked right after that root CAS. Then each round, with
    X the thread parked after its root CAS and Y the other subscribe:

    1. S settles its descriptor, finds it out of the root, and asks whether it committed.
       A verdict published only after the root CAS (X has not published it yet) says no,
       so S takes the snapshot again: a new descriptor over the new root.
    2. Y reads the root, completes S's new descriptor and parks right after its root CAS.
    3. X goes on with the root it got from its own root CAS, now two generations old: its
       GCAS aborts (the root's generation moved), it rolls back and will restart.

    X and Y then swap roles. When the verdict is decided before the root moves, S returns
    at step 1 of the first round and the adversary has nothing left to play.
    """
    if not (sched.run_until("S", _installed(sched, "S", trie))
            and sched.run_until("A", _moved_root(sched, "A", trie))):
        return 0, False
    x, y = "A", "B"
    main = trie._root.get().main.get()  # the root C-node, the same in every new root
    states = set()
    for k in range(rounds):
        if not (sched.run_until("S", _installed(sched, "S", trie))
                and sched.run_until(y, _moved_root(sched, y, trie))
                and sched.run_until(x, _restarting(sched, x))):
            return k, False
        states.add((sched.at("S"), sched.at(y), sched.at(x), trie._root.get().main.get() is main))
        x, y = y, x
    return rounds, len(states) == 1


def test_snapshot_and_two_subscribes_complete_under_the_livelock_adversary():
    """A ``read_only_snapshot()`` and two ``subscribe``s under the adversary of
    :func:`_livelock`: all three must complete within a bounded number of steps. With the
    RDCSS verdict published after the root CAS, the adversary keeps all three restarting
    for every one of its ``ROUNDS`` rounds, back in the same state each round."""
    trie = CSTrie()
    with StepScheduler() as sched:
        sched.spawn("S", trie.read_only_snapshot)
        sched.spawn("A", lambda: trie.subscribe("a", "A"))
        sched.spawn("B", lambda: trie.subscribe("b", "B"))
        kept, repeats = _livelock(sched, trie, ROUNDS)
        assert kept < ROUNDS, (
            f"livelock: for {kept} rounds ({sched.steps} scheduler steps) the snapshot and both "
            f"subscribes kept restarting and none completed"
            + (", every round ending in the same state (A and B swapped), so the schedule "
               "extends forever" if repeats else ""))
        sched.finish(max_steps=100)
        snap = sched["S"].result
    print(f"\nlivelock adversary: gave up after {kept} rounds; all done in {sched.steps} steps")
    assert snap.subscriptions() == {}  # decided before either subscribe committed
    assert trie.subscriptions() == {"a": frozenset({"A"}), "b": frozenset({"B"})}
    trie.check()


# --- the initiator's answer ------------------------------------------------------------------


@pytest.mark.parametrize("abort", [False, True], ids=["helper-commits", "helper-aborts"])
def test_rdcss_answer_is_what_happened_to_the_root(abort):
    """A helper settles the initiator's descriptor and parks right after its root CAS (where
    the old code had not yet set its ``committed`` flag); then the initiator returns. Its
    answer must say what happened to the root: True exactly when the root is ``nv``."""
    trie = CSTrie()
    trie.subscribe("a", 1)
    ov = trie._read_root()
    expected = gcas_read(ov, trie)
    nv = INode(expected, Gen())
    with StepScheduler() as sched:
        sched.spawn("I", lambda: rdcss_root(trie, ov, expected, nv))
        sched.spawn("H", lambda: trie._read_root(abort=abort))
        assert sched.run_until("I", _installed(sched, "I", trie))
        assert sched.run_until("H", _moved_root(sched, "H", trie))
        root = trie._root.get()
        assert not sched.run_until("I", lambda: False)  # to its end
        answer = sched["I"].result
        sched.finish()
    assert root is (nv if answer else ov), (
        f"rdcss_root answered {answer} but the root was moved to {'nv' if root is nv else 'ov'}")
    assert answer is (not abort)
    assert sched["H"].result is root and trie._root.get() is root


def test_an_aborter_finding_the_swap_committed_moves_the_root_forward():
    """Abort after the verdict. W's subscribe read the root ``ov`` before a snapshot's
    descriptor went in; helper H decides the descriptor COMMITTED and parks before moving the
    root. W's GCAS on ``ov`` then reads the root with ``abort=True``: it must move the root
    forward to the new I-node and abort its own write, never roll the root back to ``ov``,
    which would land W's write in the read-only snapshot (whose root is ``ov``)."""
    trie = CSTrie()
    trie.subscribe("a", 1)
    ov = trie._read_root()
    with StepScheduler() as sched:
        sched.spawn("S", trie.read_only_snapshot)
        sched.spawn("W", lambda: trie.subscribe("b", 2))
        sched.spawn("H", trie._read_root)
        assert sched.step("W") == ("inode_cas", "before")  # W has read ov and its C-node
        assert sched.run_until("S", _installed(sched, "S", trie))
        assert sched.run_until("H", lambda: sched.at("H") == ("rdcss_decide", "after"))
        desc = trie._root.get()
        assert type(desc) is not INode  # decided, the root not moved yet
        assert sched.run_until("W", lambda: sched.at("W") == ("rdcss", "after"))
        root = trie._root.get()
        assert root is desc.nv, f"the aborter moved the root to {'ov' if root is ov else root!r}"
        sched.finish()
        snap = sched["S"].result
    assert snap.subscriptions() == {"a": frozenset({1})}
    assert trie.subscriptions() == {"a": frozenset({1}), "b": frozenset({2})}
    trie.subscribe("c", 3)
    assert snap.subscriptions() == {"a": frozenset({1})}
    trie.check()
