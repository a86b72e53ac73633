"""The ``route`` command: every message of a Parquet data set through one matcher per
partition, with the regex cross join as an optional baseline.

Outputs under ``--out`` (all Parquet folders written by Spark, except ``summary.json``):

=========================  ===============================================================
``deliveries/``            ``message_id`` bigint, ``subscriber`` string: one row per
                           (message, subscriber) the matcher delivers to
``rejected/``              ``message_id``, ``topic``, ``reason``: every message whose topic
                           is invalid in the dialect (or null), reason = the error message
``rejected_subscriptions/`` ``pattern``, ``subscriber``, ``reason``: subscription rows not
                           loaded (invalid or null pattern, null subscriber, a pattern the
                           matcher cannot represent)
``fanout/histogram/``      ``fanout`` bigint, ``messages`` bigint: how many routed messages
                           had each number of deliveries (0 included)
``fanout/top_topics/``     ``rank``, ``topic``, ``fanout``, ``messages``, ``deliveries``: the
                           ``--top`` topics by deliveries (ties by topic)
``baseline/``              with ``--baseline regex``: ``matcher_deliveries/`` and
                           ``regex_deliveries/`` of the compared message set
``summary.json``           counts, timings, versions, fanout figures, baseline and
                           in-process comparison (see :func:`job.route_into`)
=========================  ===============================================================

The command is made of these modules, one step each: :mod:`~experiments.pipeline.inputs`
(which files an input is, checked and counted before Spark starts),
:mod:`~experiments.pipeline.partitioning` (messages by topic, ``--salt``),
:mod:`~experiments.pipeline.routing` (the per-partition routing),
:mod:`~experiments.pipeline.adapters` (its Spark adapters, ``--impl``, ``--deliveries``),
:mod:`~experiments.pipeline.job` (the Spark job: route, write, decode, reconcile; how the work
is done and what it costs), :mod:`~experiments.pipeline.baseline` (``--baseline regex``),
:mod:`~experiments.pipeline.summary` (the summary's figures and stage timings) and
:mod:`~experiments.pipeline.publish` (the staging folder and the swap into ``--out``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import matchers
from .inputs import (MESSAGE_COLUMNS, SUBSCRIPTION_COLUMNS, InputFiles, check_input,
                     input_dialect)
from .job import route_into
from .partitioning import HOT_SAMPLE, hot_topics, partition_messages
from .publish import OUTPUTS, publish_target, staged_run
from .adapters import DEFAULT_IMPL, IMPLS, route_frame
from .routing import DELIVERIES
from .sparkutil import (PipelineError, Store, check_local_out, is_local, java_problem, session,
                        under_spark_submit)
from .summary import Stages, now

__all__ = ["DEFAULT_IMPL", "DELIVERIES", "HOT_SAMPLE", "IMPLS", "OUTPUTS", "RouteOptions",
           "hot_topics", "partition_messages", "route_frame", "run_route"]


@dataclass
class RouteOptions:
    """The ``route`` command's options (see ``python -m experiments.pipeline route -h``)."""

    subscriptions: str
    messages: str
    out: str
    matcher: str = "cstrie"
    #: None: the dialect recorded in a ``workload.json`` beside the inputs, else ``nats``.
    dialect: str | None = None
    #: Route with ``dialect`` although a ``workload.json`` beside the inputs says otherwise.
    dialect_mismatch_ok: bool = False
    master: str | None = "local[*]"  # None: spark-submit's master, else local[*]
    executor_python: str | None = None  # the executors' interpreter (see sparkutil.session)
    conf: list[tuple[str, str]] = field(default_factory=list)
    impl: str = DEFAULT_IMPL
    partitions: int | None = None
    baseline: str | None = None
    baseline_limit: int | None = None
    top: int = 20
    inprocess: int = 0
    max_words: int | None = None
    overwrite: bool = False
    salt: bool = False  # spread hot topics over all partitions (else: one partition a topic)
    #: ``rows``: one row per delivery; ``ids``: one per message, subscriber indices (--impl arrow)
    deliveries: str = "rows"
    argv: list[str] = field(default_factory=list)


def run_route(opts: RouteOptions, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the ``route`` command; return the summary (also written to ``summary.json``).

    Nothing in ``--out`` is touched before every input has been checked, and then only to
    replace it as a whole: the run is written into a staging folder beside ``--out``
    (``<out>.incomplete-<time>-<pid>``), reconciled there, given its ``summary.json``, and
    only then swapped in (:mod:`experiments.pipeline.publish`); ``<out>/_SUCCESS`` is
    written after that, last. A run that fails or is interrupted deletes its staging folder
    and leaves ``--out`` as it was.

    Raises :class:`PipelineError` for bad arguments or inputs, and ``RuntimeError`` if the
    figures do not reconcile (nothing is published then).
    """
    if log is None:
        def log(msg: str) -> None:
            print(msg, file=sys.stderr, flush=True)
    problem = java_problem()
    if problem:  # before importing pyspark: the first thing to fix
        raise PipelineError(problem)
    if opts.matcher not in matchers.MATCHERS:
        raise PipelineError(f"--matcher {opts.matcher!r}: choose from "
                            f"{', '.join(matchers.MATCHERS)}")
    if opts.impl not in IMPLS:
        raise PipelineError(f"--impl {opts.impl!r}: choose from {', '.join(IMPLS)}")
    if opts.deliveries not in DELIVERIES:
        raise PipelineError(f"--deliveries {opts.deliveries!r}: choose from "
                            f"{', '.join(DELIVERIES)}")
    if opts.deliveries == "ids" and opts.impl != "arrow":
        raise PipelineError(f"--deliveries ids needs --impl arrow, not {opts.impl}")
    # Whatever is local is checked now, not after Spark's start-up (seconds).
    inputs = ((opts.subscriptions, "--subscriptions", SUBSCRIPTION_COLUMNS),
              (opts.messages, "--messages", MESSAGE_COLUMNS))
    checked: dict[str, InputFiles] = {}
    for path, option, columns in inputs:
        if is_local(path):
            checked[option] = check_input(path, option, columns)
    paths = [opts.messages, opts.subscriptions]
    dialect, source, said = (
        input_dialect(opts.dialect, opts.dialect_mismatch_ok, paths, None)
        if all(is_local(p) for p in paths) else (None, None, []))
    out = opts.out.rstrip("/") or opts.out
    if is_local(out):
        check_local_out(out, opts.overwrite, OUTPUTS)
    for line in said:  # after the checks: an error is one line
        log(line)

    started = now()
    stages = Stages(7 + bool(opts.inprocess) + bool(opts.baseline) + bool(opts.salt), log)
    master = opts.master or (None if under_spark_submit() else "local[*]")
    stages.start("session", f"starting Spark ({master or 'the master spark-submit was given'})")
    spark = session(master, opts.conf, executor_python=opts.executor_python)
    store = Store(spark)
    for path, option, columns in inputs:
        if option not in checked:
            checked[option] = check_input(path, option, columns, spark, store)
    if dialect is None:
        dialect, source, said = input_dialect(opts.dialect, opts.dialect_mismatch_ok, paths,
                                              store)
        for line in said:
            log(line)
    final, fs = publish_target(store, out, opts.overwrite)

    def run(stage: str) -> dict[str, Any]:
        summary = route_into(spark, store, opts, dialect, checked, stage, out, stages)
        summary["dialect_source"] = source
        summary["started"] = started
        summary["finished"] = now()
        return summary

    return staged_run(store, final, fs, run, f"replacing {out} with the new run"
                      if opts.overwrite else f"moving the new run to {out}", stages, log)
