"""The locked baseline at its best: LockedTrie(cache=False) with its one ``threading.Lock``
against the same trie with lookups on the read side of ``baselines.RWLock`` (so that readers
could walk together) and writes on its write side, at 1 and 2 threads, read-only and 10 %
writes, on whatever interpreter runs this. Paired rounds, both variants interleaved.

The RW variant exists only here: it skips LockedTrie's statistics (which a lookup updates
under the lock, and which readers sharing the lock would race on) and has no cache.

    python tools/rwlock_scaling.py [--ops 20000] [--rounds 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchenv import environment, headline  # noqa: E402

from baselines import LockedTrie  # noqa: E402
from baselines.locked_trie import _build  # noqa: E402
from baselines.rwlock import RWLock  # noqa: E402


class RWLockedTrie(LockedTrie):
    """LockedTrie with writes under an RWLock's write side and lookups under its read side."""

    __slots__ = ("_rw",)

    def __init__(self, dialect: str = "nats") -> None:
        super().__init__(dialect, cache=False)
        self._rw = RWLock()
        self._lock = self._rw.write_lock  # every mutation takes it with `with self._lock:`

    def lookup(self, topic: str) -> frozenset:
        words = self._topic_words(topic)
        rw = self._rw
        rw.acquire_read()
        try:
            return _build(self._walk(self._root, words))[0]
        finally:
            rw.release_read()


VARIANTS = {"Lock": lambda: LockedTrie(cache=False), "RWLock": RWLockedTrie}


def _round(variant: str, threads: int, ops: int, share: float) -> float:
    rng = random.Random(2)
    hot = [".".join(rng.choice("abcdefghij") for _ in range(5)) for _ in range(1000)]
    m = VARIANTS[variant]()
    for i, p in enumerate(hot):
        m.subscribe(p, f"h{i}")
    barrier = threading.Barrier(threads + 1)
    spans: list = [None] * threads

    def work(k: int) -> None:
        r = random.Random(100 + k)
        plan = [(r.random() < share, f"{j % 10}.{j % 50}.{j}") for j in range(ops)]
        sub, look = m.subscribe, m.lookup
        barrier.wait()
        t0 = time.perf_counter()
        for w, t in plan:
            if w:
                sub(t, "abc")
            else:
                look(t)
        spans[k] = (t0, time.perf_counter())

    ws = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for w in ws:
        w.start()
    barrier.wait()
    for w in ws:
        w.join()
    return threads * ops / (max(s[1] for s in spans) - min(s[0] for s in spans))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    env = environment([str(Path(__file__).resolve().parent.parent)], ops=args.ops,
                      rounds=args.rounds)
    print("#", headline(env))
    out = []
    for share in (0.0, 0.1):
        for n in (1, 2):
            rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
            for _ in range(args.rounds):
                for v in VARIANTS:
                    rates[v].append(_round(v, n, args.ops, share))
            ratios = [b / a for a, b in zip(rates["Lock"], rates["RWLock"])]
            row = {"write_share": share, "threads": n,
                   **{v: statistics.median(r) for v, r in rates.items()},
                   "rw_over_lock": statistics.median(ratios),
                   "rw_over_lock_range": [min(ratios), max(ratios)]}
            out.append(row)
            print(f"writes {share:4.0%} threads {n}: Lock {row['Lock'] / 1e3:6.0f}k/s  "
                  f"RWLock {row['RWLock'] / 1e3:6.0f}k/s  RWLock/Lock {row['rw_over_lock']:.2f} "
                  f"[{min(ratios):.2f}-{max(ratios):.2f}]")
    if args.json:
        args.json.write_text(json.dumps({"env": env, "rows": out}, indent=1))


if __name__ == "__main__":
    main()
