"""Publishing a ``route`` run: it is written into a staging folder beside ``--out``
(``<out>.incomplete-<time>-<pid>``, on the same file system, so that the swap is a rename),
reconciled there and given its ``summary.json``; only then is it swapped in place of
``--out`` (:func:`sparkutil.swap_in`: ``os.rename`` for a local ``--out``, Hadoop's
``FileSystem.rename`` elsewhere), the previous results deleted, and ``<out>/_SUCCESS`` written,
last. A run that fails or is interrupted deletes its staging folder and leaves ``--out`` as it
was."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .sparkutil import (PipelineError, Store, is_local, local_path, out_problem, remove_tree,
                        swap_in)
from .summary import Stages

__all__ = ["OUTPUTS", "check_out", "publish_target", "staged_run"]

#: Entries of ``--out`` that a run writes: an ``--out`` holding anything else is not
#: replaced (``_routing`` stands here for the runs that wrote it into ``--out``).
OUTPUTS = ("deliveries", "subscribers", "rejected", "rejected_subscriptions", "fanout",
           "baseline", "summary.json", "_SUCCESS", "_routing")

#: The stream is written here, partitioned by kind, then turned into the outputs.
STAGING = "_routing"


def check_out(store: Store, out: str, overwrite: bool) -> None:
    """The checks of :func:`check_local_out` that Hadoop can make, for a non-local --out."""
    if store.exists(out) and not store.is_dir(out):
        raise PipelineError(f"--out {out}: exists and is not a directory")
    problem = out_problem(out, store.children(out), overwrite, OUTPUTS)
    if problem:
        raise problem


def publish_target(store: Store, out: str, overwrite: bool) -> tuple[str, Store | None]:
    """Where the run of ``--out`` is published, and the Hadoop store to do it with (None: a
    local folder, renamed with ``os.rename``). A local ``--out`` was checked before Spark
    started (:func:`sparkutil.check_local_out`); another is checked here."""
    if is_local(out):  # an --out that is a symbolic link stays one, to the new results
        local_out = os.path.realpath(local_path(out))
        os.makedirs(os.path.dirname(local_out), exist_ok=True)
        return f"file:{local_out}", None
    check_out(store, out, overwrite)
    return out, store


def staged_run(store: Store, final: str, fs: Store | None, run: Callable[[str], dict[str, Any]],
               what: str, stages: Stages, log: Callable[[str], None]) -> dict[str, Any]:
    """``run(stage)`` writes the run into the staging folder ``stage`` and returns its
    summary; the summary is written there as ``summary.json``, the folder swapped in as
    ``final`` (the ``publish`` stage, logged as ``what``) and ``final/_SUCCESS`` written last.
    Return the summary."""
    tag = f"{datetime.now().strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    stage = f"{final}.incomplete-{tag}"  # beside --out: the same file system, a cheap rename
    published = False
    try:
        summary = run(stage)
        store.write_text(f"{stage}/summary.json", json.dumps(summary, indent=2) + "\n")
        stages.start("publish", what)
        previous = f"{final}.previous-{tag}"
        replaced = swap_in(stage, final, previous, fs)
        published = True
        if replaced:
            try:
                remove_tree(previous, fs)
            except Exception as exc:  # noqa: BLE001 - the new results are in place
                log(f"note: could not delete the previous results, moved to {previous} "
                    f"({exc}): delete them")
        store.write_text(f"{final}/_SUCCESS", "")  # last: the run's own marker
        stages.stop()
    finally:
        if not published:
            try:
                remove_tree(stage, fs)
            except Exception as exc:  # noqa: BLE001 - say it; the first error matters more
                log(f"note: could not delete the staging folder {stage} ({exc}): delete it")
    return summary
