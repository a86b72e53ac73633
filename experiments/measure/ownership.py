"""``ownership``: one thread's lookup rate on a matcher it built itself vs one another thread built.

On free-threaded CPython 3.13, ``dict.get`` of a fresh ``str`` key from a thread that did not
create the dict costs 100x (``ctrie/_ftdict.py``, ``tools/ft_dict_get.py``), and every
concurrent experiment builds its matchers in the main thread and reads them from workers. This
experiment measures what remains of that difference for every matcher, on the workload where
it was found: ``width`` NATS request/reply inboxes (``_INBOX.<i>.reply``; MQTT form for paho)
and ``lookups`` lookups of them, all made fresh by ``str.split`` as a broker's are.

Per round, one matcher is built by the main thread, then looked up:

- ``reader: builder``: by the main thread itself;
- ``reader: other``: by a new thread, while the main thread waits in ``join()`` (the builder
  stays alive: a thread that has exited may hand its id to the next one, which then reads as
  the owner).

Unit: lookups per second, one value per round. The ratio other / builder, within one run, is
the figure (goal on the free-threaded build: at least 0.8). The inverted bitmap is skipped
when ``width`` x ``width`` exceeds the size's scan budget (its build matches every pattern
against every topic of its space); the naive matcher, which tests every pattern on every
lookup, gets as many lookups as that budget allows (``params.lookups`` says how many).
"""

from __future__ import annotations

import threading
from time import perf_counter
from typing import Any

from .. import registry
from ..env import Run
from ..progress import bar

__all__ = ["READERS", "run_ownership"]

READERS = ("builder", "other")


def _topics(width: int, lookups: int, sep: str) -> list[str]:
    # Fresh strings, as a broker gets them from the wire: built here, never the stored keys.
    return [sep.join(("_INBOX", str(n % width), "reply")) for n in range(lookups)]


def _read(lookup: Any, topics: list[str]) -> float:
    t0 = perf_counter()
    for t in topics:
        lookup(t)
    return len(topics) / (perf_counter() - t0)


def _in_thread(lookup: Any, topics: list[str]) -> float:
    out: list[float] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            out.append(_read(lookup, topics))
        except BaseException as exc:  # re-raised below
            errors.append(exc)

    th = threading.Thread(target=work, daemon=True)
    th.start()
    th.join()
    if errors:
        raise errors[0]
    return out[0]


def run_ownership(run: Run, algorithms: list[str], dialects: list[str]) -> None:
    """Record lookups per second per (algorithm, reader)."""
    size = run.size
    width, lookups, rounds = size.ownership_width, size.ownership_lookups, size.ownership_rounds
    with bar(len(algorithms) * rounds, "ownership") as progress:
        for algorithm in algorithms:
            progress.set_postfix_str(algorithm)
            dialect = "mqtt" if algorithm == "paho" else "nats"
            sep = "/" if dialect == "mqtt" else "."
            patterns = [sep.join(("_INBOX", str(i), "reply")) for i in range(width)]
            n_look = lookups
            if algorithm == "naive":  # O(patterns) per lookup
                n_look = max(1, min(lookups, int(size.inverted_scan_budget // width)))
            params: dict[str, Any] = {"width": width, "lookups": n_look,
                                      "subject": sep.join(("_INBOX", "<i>", "reply"))}
            why = registry.unavailable(algorithm)
            if not why and algorithm == "inverted_bitmap" and width * width > size.inverted_scan_budget:
                why = (f"its build matches {width:,} patterns against {width:,} topics, over "
                       f"this size's scan budget ({size.inverted_scan_budget:.0e})")
            if why:
                for reader in READERS:
                    run.record("ownership", algorithm, dialect, "inbox",
                               {**params, "reader": reader}, unit="ops/s", status="skipped",
                               note=why)
                progress.update(rounds)
                continue
            values: dict[str, list[float]] = {r: [] for r in READERS}
            try:
                for k in range(rounds):
                    m = registry.make(algorithm, dialect, topic_space=patterns, max_words=3)
                    registry.populate(m, patterns, ["s"] * width)
                    # Alternate which reader goes first, so neither always meets a warm cache.
                    order = READERS if k % 2 == 0 else READERS[::-1]
                    for reader in order:
                        topics = _topics(width, n_look, sep)
                        rate = (_read(m.lookup, topics) if reader == "builder"
                                else _in_thread(m.lookup, topics))
                        values[reader].append(rate)
                    progress.update(1)
            except Exception as exc:
                for reader in READERS:
                    run.record("ownership", algorithm, dialect, "inbox",
                               {**params, "reader": reader}, unit="ops/s",
                               values=values[reader], status="failed",
                               note=f"{type(exc).__name__}: {exc}")
                progress.write(f"  ownership {algorithm}: FAILED {exc!r}")
                progress.update(rounds - len(values["other"]))
                continue
            for reader in READERS:
                run.record("ownership", algorithm, dialect, "inbox", {**params, "reader": reader},
                           unit="ops/s", values=values[reader])
