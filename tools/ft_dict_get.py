#!/usr/bin/env python3
"""Standalone reproducer: ``dict.get`` from a thread that did not create the dict, on
free-threaded CPython 3.13.

Usage: ``python tools/ft_dict_get.py [--keys 100] [--calls 200000] [--json]``, or
``python tools/ft_dict_get.py --copy [--json]`` for the second pathology below.

Needs nothing but the standard library, so it can be attached to an upstream report and rerun
as is on 3.14t and later. For each way of reading a dict it times ``--calls`` reads (over
``--keys`` string keys, stored keys and equal-but-not-identical "fresh" copies of them, as a
topic split into words gives) and prints nanoseconds per read, once in the thread that created
the dict and once in another thread (the creator waits in ``join()`` meanwhile).

What it showed on this project's machines (2 cores; see ``shared/design/free-threading.md``):
on 3.13.5t and 3.13.15t, ``d.get(fresh)`` from another thread costs 13-14 us against 0.1 us in
the creating thread, while ``k in d`` followed by ``d[k]`` does not. A profile puts the time in
``sched_yield`` under ``_PyMutex_LockTimed`` <- ``_PyCriticalSection_BeginSlow`` <-
``_Py_dict_lookup_threadsafe``. On a GIL build every row is tens of nanoseconds.

``--copy``: the copy-on-write pattern of a trie's writes, in one thread: copy the dict and
insert a key, copy that and delete the key, over and over, copying with ``d.copy()``,
``{**d}`` or ``dict(d.items())``. On 3.13.15t ``d.copy()`` of a small dict that deletions
have left sparse (one entry after two insert-and-delete rounds; three entries after five)
took about 16 us where the others take tens of nanoseconds, so the pattern cost about 8 us
a pair at one entry against 0.3 with ``{**d}``; the two met at 32 to 40 entries, and at 128
``d.copy()`` was the cheaper. On the GIL build ``d.copy()`` is the cheapest at every size.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import threading
import time
import timeit
from collections.abc import Callable


def _fresh(s: str) -> str:
    # An equal string that is a different object (as str.split produces).
    return "".join(list(s))


# Each case: the statement run once per key of a pass (``k`` is the key, ``d`` the dict, ``s``
# a frozenset of its keys made by the creating thread), which keys it gets, and what the
# reading thread does first (nothing, or iterate the dict once).
CASES: dict[str, tuple[str, str, str]] = {
    "d.get(fresh)": ("d.get(k)", "fresh", ""),
    "k in d + d[k] (fresh)": ("d[k] if k in d else None", "fresh", ""),  # the package's idiom
    "d.get(stored object)": ("d.get(k)", "stored", ""),
    "d[fresh]": ("d[k]", "fresh", ""),
    "d.get(missing)": ("d.get(k)", "missing", ""),
    "missing in d": ("k in d", "missing", ""),
    "fresh in frozenset": ("k in s", "fresh", ""),
    "d.setdefault(fresh, v)": ("d.setdefault(k, 0)", "fresh", ""),  # present: changes nothing
    "d.pop(missing, None)": ("d.pop(k, None)", "missing", ""),  # absent: changes nothing
    # The same d.get after the reading thread has iterated the dict once.
    "d.get(fresh), d iterated": ("d.get(k)", "fresh", "list(d)"),
}


def _timer(stmt: str, setup: str, d: dict, keys: list[str], s: frozenset) -> timeit.Timer:
    # Locals of the timed function (setup runs in the thread that times), so that the loop
    # reads no global.
    return timeit.Timer(f"for k in keys: {stmt}", setup=f"d, keys, s = _d, _keys, _s; {setup}",
                        globals={"_d": d, "_keys": keys, "_s": s})


def measure(nkeys: int, calls: int) -> dict:
    stored = [f"word{i}" for i in range(nkeys)]
    keys = {"stored": stored, "fresh": [_fresh(k) for k in stored],
            "missing": [_fresh(f"none{i}") for i in range(nkeys)]}
    assert all(a == b and a is not b for a, b in zip(stored, keys["fresh"]))
    passes = max(1, calls // nkeys)
    rows: dict[str, dict[str, float]] = {}
    for name, (stmt, which, setup) in CASES.items():
        d = {k: i for i, k in enumerate(stored)}  # created by this (the main) thread
        timer = _timer(stmt, setup, d, keys[which], frozenset(d))
        timer.timeit(1)  # warm up in the creator
        own = timer.timeit(passes)
        out: list[float] = []
        th = threading.Thread(target=lambda: out.append(timer.timeit(passes)))
        th.start()
        th.join()
        n = passes * nkeys
        rows[name] = {"creating thread": own / n * 1e9, "another thread": out[0] / n * 1e9}
    return rows


#: Ways of copying a dict timed by ``--copy``, each a function of the dict.
COPIES: dict[str, Callable[[dict], dict]] = {
    "d.copy()": dict.copy, "{**d}": lambda d: {**d}, "dict(d.items())": lambda d: dict(d.items())}
COPY_SIZES = (1, 3, 8, 32, 128)


def _pairs(copy: Callable[[dict], dict], d: dict, pairs: int) -> float:
    """Seconds per pair of copy-on-write updates of ``d``: copy it and insert a new key,
    then copy that and delete the key (the write pattern of a trie whose levels are
    immutable dicts: a subscribe, then an unsubscribe)."""
    clock = time.perf_counter
    t0 = clock()
    for j in range(pairs):
        k = f"extra{j}"
        d2 = copy(d)
        d2[k] = j
        d = copy(d2)
        del d[k]
    return (clock() - t0) / pairs


def measure_copy(pairs: int) -> dict:
    """ns per pair of updates, by size and way of copying (best of three runs)."""
    rows: dict[str, dict[str, float]] = {}
    for n in COPY_SIZES:
        rows[f"{n} entries"] = {
            name: min(_pairs(copy, {f"word{i}": i for i in range(n)}, pairs)
                      for _ in range(3)) * 1e9
            for name, copy in COPIES.items()}
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=100, help="keys in the dict (default 100)")
    ap.add_argument("--calls", type=int, default=200_000, help="reads per cell (default 200,000)")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    ap.add_argument("--copy", action="store_true",
                    help="time dict copies instead, in one thread (see the module docstring)")
    args = ap.parse_args(argv)
    if args.keys < 1 or args.calls < 1:
        ap.error("--keys and --calls must be at least 1")
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    if args.copy:
        pairs = max(1, args.calls // 10)
        copies = measure_copy(pairs)
        info = {"python": platform.python_version(),
                "implementation": platform.python_implementation(), "gil_enabled": gil,
                "pairs": pairs, "ns_per_pair": copies}
        if args.json:
            print(json.dumps(info, indent=2))
            return 0
        print(f"{info['implementation']} {info['python']} ({'GIL' if gil else 'free-threaded'}), "
              f"one thread, {pairs:,} pairs (copy + insert, copy + delete) per cell, "
              "ns per pair:")
        print(f"  {'dict':12s}" + "".join(f"{name:>17s}" for name in COPIES))
        for row, r in copies.items():
            print(f"  {row:12s}" + "".join(f"{r[name]:17,.0f}" for name in COPIES))
        return 0
    rows = measure(args.keys, args.calls)
    info = {"python": platform.python_version(), "implementation": platform.python_implementation(),
            "gil_enabled": gil, "keys": args.keys, "calls": args.calls, "ns_per_read": rows}
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"{info['implementation']} {info['python']} ({'GIL' if gil else 'free-threaded'}), "
          f"{args.keys} keys, about {args.calls:,} reads per cell, ns per read:")
    print(f"  {'read':24s} {'creating thread':>16s} {'another thread':>15s} {'ratio':>7s}")
    for name, r in rows.items():
        a, b = r["creating thread"], r["another thread"]
        print(f"  {name:24s} {a:16,.0f} {b:15,.0f} {b / a:7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
