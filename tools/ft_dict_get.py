#!/usr/bin/env python3
"""Standalone reproducer: ``dict.get`` from a thread that did not create the dict, on
free-threaded CPython 3.13.

Usage: ``python tools/ft_dict_get.py [--keys 100] [--calls 200000] [--json]``

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
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import threading
import timeit


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=100, help="keys in the dict (default 100)")
    ap.add_argument("--calls", type=int, default=200_000, help="reads per cell (default 200,000)")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    args = ap.parse_args(argv)
    if args.keys < 1 or args.calls < 1:
        ap.error("--keys and --calls must be at least 1")
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
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
