"""The result cache's storage, measured before choosing it: the probe of a cached topic in a
plain ``dict`` (``in`` then ``[]``; and ``dict.get``, the 3.13t pathology) and in
``cereggii.AtomicDict`` (``get``), by the thread that filled it and by another thread, with
topic strings the reader made itself (as a broker's are), 1,024 entries; then the hit path of
``CSTrie(cache=True)`` against an uncached ``CSTrie`` lookup of the same topic (the hot
lookup of the latency benchmark). Median of ``--rounds`` rounds, ns per probe.

    python tools/cache_substrate.py [--rounds 5] [--n 200000] [--json FILE]
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

from cereggii import AtomicDict  # noqa: E402

from ctrie import CSTrie  # noqa: E402

ENTRIES = 1024


def _topics() -> list[str]:
    return [f"stock.{i}.ibm" for i in range(ENTRIES)]


def _fresh(keys: list[str], n: int) -> list[str]:
    # New string objects equal to the stored keys, made by the reading thread.
    return [(keys[i % len(keys)] + "#")[:-1] for i in range(n)]


def _probe_in(d, keys):
    for k in keys:
        if k in d:
            d[k]


def _probe_get(d, keys):
    for k in keys:
        d.get(k)


def _time(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def _in_thread(fn, *args) -> float:
    out: list[float] = []
    th = threading.Thread(target=lambda: out.append(fn(*args)))
    th.start()
    th.join()
    return out[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    env = environment([str(Path(__file__).resolve().parent.parent)], n=args.n,
                      rounds=args.rounds)
    print("#", headline(env))
    keys = _topics()
    plain = {k: (0, frozenset({1})) for k in keys}
    atomic = AtomicDict()
    for k in keys:
        atomic[k] = (0, frozenset({1}))
    rows: dict[str, list[float]] = {}

    def run(name: str, fn, d, other: bool) -> None:
        def body():
            probes = _fresh(keys, args.n)
            return _time(fn, d, probes)
        dt = _in_thread(body) if other else body()
        rows.setdefault(name, []).append(dt / args.n * 1e9)

    topic = "foo.bar.baz.qux.quux"
    rng = random.Random(1)
    hot = [".".join(rng.choice("abcdefghij") for _ in range(5)) for _ in range(1000)]
    tries = {}
    for cached in (False, True):
        t = CSTrie(cache=cached)
        for i, p in enumerate(hot):
            t.subscribe(p, f"h{i}")
        t.subscribe("foo.*.baz.qux.quux", "x")
        tries[cached] = t

    def lookups(t, other: bool, name: str) -> None:
        def body():
            look = t.lookup
            ts = [(topic + "#")[:-1] for _ in range(args.n // 4)]
            return _time(lambda: [look(x) for x in ts]) / len(ts)
        rows.setdefault(name, []).append((_in_thread(body) if other else body()) * 1e9)

    for _ in range(args.rounds):
        for other in (False, True):
            who = "another thread" if other else "the filling thread"
            run(f"dict: in + [] ({who})", _probe_in, plain, other)
            run(f"dict: get ({who})", _probe_get, plain, other)
            run(f"AtomicDict: get ({who})", _probe_get, atomic, other)
            lookups(tries[False], other, f"CSTrie lookup ({who})")
            lookups(tries[True], other, f"CSTrie(cache=True) lookup, a hit ({who})")
    out = {name: statistics.median(v) for name, v in rows.items()}
    for name, v in out.items():
        print(f"  {name:52s} {v:9.1f} ns  [{min(rows[name]):.1f}-{max(rows[name]):.1f}]")
    for who in ("the filling thread", "another thread"):
        r = out[f"CSTrie(cache=True) lookup, a hit ({who})"] / out[f"CSTrie lookup ({who})"]
        print(f"  hit / uncached lookup ({who}): {r:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"env": env, "ns": out, "values": rows}, indent=1))


if __name__ == "__main__":
    main()
