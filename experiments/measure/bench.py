"""One per-operation benchmark of the ``latency`` and ``primitives`` experiments.

A :class:`Bench` is a name and a *time function* ``f(loops) -> seconds`` in the form of
pyperf's ``Runner.bench_time_func`` (the function times only the work it should; set-up
such as the hot population happens on the first call, untimed). The same functions are run
by pyperf worker processes (:mod:`experiments.measure._pyperf_worker`) or, where pyperf is
not installed, by the stdlib fallback in :mod:`experiments.measure.microbench`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Bench", "TimeFunc"]

TimeFunc = Callable[[int], float]


@dataclass
class Bench:
    """One benchmark: ``setup()`` returns the time function; ``skip`` says why it cannot run."""

    name: str
    setup: Callable[[], TimeFunc] | None
    inner_loops: int = 1
    params: dict[str, Any] = field(default_factory=dict)
    skip: str | None = None
    #: Fixed loop count instead of calibration, for a benchmark whose untimed set-up per
    #: loop dwarfs its timed part (calibrating on the timed part would take minutes).
    loops: int | None = None

    _func: TimeFunc | None = None

    def __call__(self, loops: int) -> float:
        """Time ``loops`` iterations; the first call builds the state (untimed)."""
        if self._func is None:
            assert self.setup is not None, self.skip
            self._func = self.setup()
        return self._func(loops)
