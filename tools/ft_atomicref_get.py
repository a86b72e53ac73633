#!/usr/bin/env python3
"""Standalone reproducer: on free-threaded CPython, cereggii's ``AtomicRef.get()`` can return
an object that was never stored in the reference.

Usage: ``python tools/ft_atomicref_get.py [--seconds 5] [--rounds 3] [--read single|double]``.
Needs only cereggii and the standard library, so it can go with an upstream report as is.

A writer thread replaces the value of one ``AtomicRef`` over and over (``compare_and_set``
of the value it read for a new ``Tagged("stored", n)``), dropping the old value, and makes
objects of the same size that it keeps for a while, each in an ``AtomicRef`` of its own
(``Tagged("elsewhere", n)``). A reader thread reads the first reference in a loop and checks
the tag. Every value ever stored in that reference is tagged "stored", so an "elsewhere"
object returned by its ``get()`` was never stored there.

Why (cereggii 1.0.1, ``src/cereggii/atomic_ref.c``): on a free-threaded build
``AtomicRef_Get`` loads the pointer, then takes a reference with ``_Py_TryIncref`` and
returns the object, without checking that the ``AtomicRef`` still holds that pointer. If the
writer swapped the value out and freed it in between, and a new object of the same size took
the memory, ``_Py_TryIncref`` succeeds on the new object. CPython's own lock-free reads check
the source again after the increment (``_Py_TryIncrefCompare``). ``--read double`` reads as
this package does (``ctrie/_atomic.py``): keep a value only when two consecutive ``get()``
calls return the same object.

What it showed here (2 cores, 3.13.15t, cereggii 1.0.1, rounds of 5 s, two runs): with
single reads, a wrong object in 2 of 3 rounds and in 1 of 4 (9-28 million reads a round);
the race is narrow, so a round may show none. With double reads, none in 3 rounds. With the
GIL (3.11), none. The exit status is 1 when a wrong object was seen.
"""

from __future__ import annotations

import argparse
import platform
import sys
import sysconfig
import threading
import time

from cereggii import AtomicRef


class Tagged:
    __slots__ = ("tag", "n")

    def __init__(self, tag: str, n: int) -> None:
        self.tag = tag
        self.n = n


def read_double(ref: AtomicRef) -> Tagged:
    """The value, kept only when two consecutive reads return the same object."""
    m = ref.get()
    while True:
        m2 = ref.get()
        if m2 is m:
            return m
        m = m2


def one_round(seconds: float, double: bool) -> tuple[int, list[tuple[str, int]]]:
    """(reads made, wrong objects seen) in one round of ``seconds``."""
    ref: AtomicRef = AtomicRef(Tagged("stored", 0))
    stop = threading.Event()
    wrong: list[tuple[str, int]] = []
    reads = [0]

    def writer() -> None:
        n = 0
        kept: list[AtomicRef] = []
        while not stop.is_set():
            old = ref.get()
            ref.compare_and_set(old, Tagged("stored", n))
            del old  # the last reference to the replaced value goes here
            kept.append(AtomicRef(Tagged("elsewhere", n)))  # same size, may take its memory
            if len(kept) > 8:
                kept.pop(0)
            n += 1

    def reader() -> None:
        k = 0
        get = ref.get
        while not stop.is_set():
            x = read_double(ref) if double else get()
            if x.tag != "stored":
                wrong.append((x.tag, x.n))
            k += 1
        reads[0] = k

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return reads[0], wrong


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5.0, help="seconds per round (default 5)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--read", choices=("single", "double"), default="single",
                    help="single: AtomicRef.get(); double: two reads that agree")
    args = ap.parse_args(argv)
    if args.seconds <= 0 or args.rounds < 1:
        ap.error("--seconds must be positive and --rounds at least 1")
    import cereggii

    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    print(f"# Python {platform.python_version()}, free-threaded build "
          f"{bool(sysconfig.get_config_var('Py_GIL_DISABLED'))}, GIL {'on' if gil else 'off'}, "
          f"cereggii {getattr(cereggii, '__version__', '?')}, {args.read} reads, "
          f"{args.rounds} rounds of {args.seconds:g} s", flush=True)
    total = 0
    for r in range(args.rounds):
        reads, wrong = one_round(args.seconds, args.read == "double")
        total += len(wrong)
        print(f"round {r + 1}: {reads:,} reads, {len(wrong)} returned an object never stored "
              f"in the reference{': ' + repr(wrong[:3]) if wrong else ''}", flush=True)
    print(f"# {total} wrong objects in all")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
