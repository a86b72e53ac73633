"""Progress bars on stderr: tqdm where it is installed, else a plain line printer.

``bar(total, desc)`` returns an object with ``update(n=1)``, ``set_postfix_str(s)``,
``write(s)`` and ``close()``, usable as a context manager. Set ``CSTRIE_NO_PROGRESS=1`` to
silence the bars (messages passed to ``write`` are still printed).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

__all__ = ["bar", "say"]

_MIN_INTERVAL = 2.0  # seconds between two lines of the fallback printer


def say(msg: str) -> None:
    """Print a progress message on stderr (between bars)."""
    print(msg, file=sys.stderr, flush=True)


class _Plain:
    """A progress printer for environments without tqdm: one line every few seconds."""

    def __init__(self, total: int, desc: str, enabled: bool) -> None:
        self.total = total
        self.desc = desc
        self.n = 0
        self.enabled = enabled
        self.postfix = ""
        self.start = self.last = time.monotonic()
        if enabled:
            say(f"{desc}: 0/{total}")

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if self.enabled and (now - self.last >= _MIN_INTERVAL or self.n >= self.total):
            self.last = now
            post = f" {self.postfix}" if self.postfix else ""
            say(f"{self.desc}: {self.n}/{self.total} ({now - self.start:.0f} s){post}")

    def set_postfix_str(self, s: str) -> None:
        self.postfix = s

    def write(self, s: str) -> None:
        say(s)

    def close(self) -> None:
        pass

    def __enter__(self) -> _Plain:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Tqdm:
    """Thin wrapper so that both implementations have the same methods."""

    def __init__(self, tqdm: Any, total: int, desc: str, enabled: bool) -> None:
        self._tqdm = tqdm
        tty = sys.stderr.isatty()
        # On a pipe or a log file every refresh is a new line: refresh rarely there.
        self._bar = tqdm(total=total, desc=desc, file=sys.stderr, disable=not enabled,
                         dynamic_ncols=True, leave=True, mininterval=0.1 if tty else 10.0)

    def update(self, n: int = 1) -> None:
        self._bar.update(n)

    def set_postfix_str(self, s: str) -> None:
        self._bar.set_postfix_str(s, refresh=False)

    def write(self, s: str) -> None:
        self._tqdm.write(s, file=sys.stderr)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> _Tqdm:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def bar(total: int, desc: str) -> _Plain | _Tqdm:
    """A progress bar over ``total`` steps labelled ``desc``."""
    enabled = os.environ.get("CSTRIE_NO_PROGRESS", "") in ("", "0")
    try:
        from tqdm import tqdm
    except ImportError:
        return _Plain(total, desc, enabled)
    return _Tqdm(tqdm, total, desc, enabled)
