"""The Spark side of routing a partition: the three adapters that feed the core of
:mod:`experiments.pipeline.routing` (:func:`arrow_partition` for ``mapInArrow``,
:func:`pandas_partition` for ``mapInPandas``, :func:`rdd_partition` for
``RDD.mapPartitions``; ``route --impl``, :data:`IMPLS`), and :func:`route_frame`, which applies
one to a DataFrame of messages. With :attr:`RouteSetup.names`, the ``mapInArrow`` adapter
turns the subscriber indices its matcher returns into names with Arrow (``take``), or, with
``route --deliveries ids``, hands them over as they are. Nothing here imports pyspark at
module level."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

from . import matchers, workercache
from .routing import (DELIVERY, IDS_STREAM_DDL, STREAM_DDL, Group, RouteSetup, figure_groups,
                      rows_of, stream_groups, task_router)

__all__ = ["DEFAULT_IMPL", "IMPLS", "PHASES", "RDD_CHUNK", "arrow_partition", "names_array",
           "pandas_partition", "rdd_partition", "route_frame"]

#: The phases of a ``mapInArrow`` task's time (after its matcher): ``input`` waiting for and
#: converting the input batches (``to_pylist``), ``lookup`` routing them (:meth:`Router.route`),
#: ``arrow`` building the output batches, ``output`` handing them to Spark (serialising, and
#: waiting while the JVM takes them: exploding and writing Parquet).
PHASES = ("input", "lookup", "arrow", "output")

#: Subscriber names as Arrow arrays, by job (:attr:`RouteSetup.cache_key`), newest last: at
#: most two, as :data:`workercache.BUILT` keeps.
_NAMES: OrderedDict[str, Any] = OrderedDict()


def names_array(setup: RouteSetup) -> Any:
    """:attr:`RouteSetup.names` as a pyarrow string array, made once per Python worker and
    job."""
    import pyarrow as pa

    key = setup.cache_key
    arr = _NAMES.get(key) if key is not None else None
    if arr is None:
        names = setup.names
        arr = pa.array(names.value if hasattr(names, "value") else names, pa.string())
        if key is not None:
            _NAMES[key] = arr
            while len(_NAMES) > workercache.BUILT_SIZE:
                _NAMES.popitem(last=False)
    return arr


# --- mapInArrow -----------------------------------------------------------------------------


def arrow_partition(setup: RouteSetup, batches: Iterable[Any]) -> Iterator[Any]:
    """``mapInArrow`` body: record batches of (message_id, topic) -> stream batches."""
    import numpy as np
    import pyarrow as pa

    ids_form = setup.deliveries == "ids"
    schema = pa.schema([("kind", pa.int8()), ("message_id", pa.int64()),
                        ("subscriber_ids", pa.list_(pa.int32())) if ids_form else
                        ("subscribers", pa.list_(pa.string()))])

    names = None if setup.names is None else names_array(setup)

    def batch(group: Group) -> Any:
        kind, ids, offsets, values = group
        ends: Any = offsets  # a list, or an array for the bytes of the ids form
        if kind == DELIVERY and ids_form:
            subs = pa.array(values, pa.int32())
        elif kind == DELIVERY and names is not None:  # no Python str per delivery
            subs = names.take(pa.array(values, pa.int32()))
        elif ids_form:  # one row per value, its array the value's UTF-8 bytes
            data = [v.encode("utf-8") for v in values]
            ends = np.cumsum([0] + [len(d) for d in data])
            subs = pa.array(np.frombuffer(b"".join(data), dtype=np.uint8).astype(np.int32))
        else:
            subs = pa.array(values, pa.string())
        lists = pa.ListArray.from_arrays(pa.array(ends, pa.int32()), subs)
        return pa.RecordBatch.from_arrays(
            [pa.array(np.full(len(ids), kind, dtype=np.int8)), pa.array(ids, pa.int64()),
             lists], schema=schema)

    cpu0, clock = time.process_time(), time.perf_counter
    if setup.matcher in matchers.NEEDS_TOPIC_SPACE:
        batches = list(batches)
        router, info = task_router(
            setup, (t for b in batches for t in b.column("topic").to_pylist()))
    else:
        router, info = task_router(setup)
    # Where the task's time goes (summary.json's tasks.phase_seconds): waiting for and
    # converting input batches, routing them, building output batches, handing them over.
    phases = dict.fromkeys(PHASES, 0.0)
    pending = iter(batches)
    while True:
        t0 = clock()
        b = next(pending, None)
        if b is None:
            break
        ids, topics = b.column("message_id").to_pylist(), b.column("topic").to_pylist()
        t1 = clock()
        groups = list(stream_groups(router, ids, topics))
        phases["input"] += t1 - t0
        phases["lookup"] += clock() - t1
        for group in groups:
            t2 = clock()
            out = batch(group)
            t3 = clock()
            yield out
            phases["arrow"] += t3 - t2
            phases["output"] += clock() - t3
    for group in figure_groups(router, setup.top, setup.split_topics):
        yield batch(group)
    info.update(phases=phases, cpu_seconds=time.process_time() - cpu0)
    workercache.report_task(setup.stats, info, router.messages)


# --- mapInPandas ----------------------------------------------------------------------------


def _pylist(series: Any) -> list:
    """A column as a list with None (not NaN / pd.NA) for nulls."""
    values = series.tolist()
    if series.hasnans:
        isna = series.isna().tolist()
        values = [None if na else v for v, na in zip(values, isna)]
    return values


def pandas_partition(setup: RouteSetup, frames: Iterable[Any]) -> Iterator[Any]:
    """``mapInPandas`` body: DataFrames of (message_id, topic) -> stream DataFrames."""
    import pandas as pd

    def frame(group: Group) -> Any:
        _, ids, _, _ = group
        rows = list(rows_of(group))
        return pd.DataFrame({
            "kind": pd.Series([r[0] for r in rows], dtype="int8"),
            # nullable: a rejected message may have a null id
            "message_id": pd.Series(ids, dtype="Int64" if None in ids else "int64"),
            "subscribers": pd.Series([r[2] for r in rows], dtype=object)})

    if setup.matcher in matchers.NEEDS_TOPIC_SPACE:
        frames = list(frames)
        router, info = task_router(setup, (t for f in frames for t in _pylist(f["topic"])))
    else:
        router, info = task_router(setup)
    for f in frames:
        ids = [None if v is None else int(v) for v in _pylist(f["message_id"])]
        for group in stream_groups(router, ids, _pylist(f["topic"])):
            yield frame(group)
    for group in figure_groups(router, setup.top, setup.split_topics):
        yield frame(group)
    workercache.report_task(setup.stats, info, router.messages)


# --- RDD.mapPartitions ----------------------------------------------------------------------

#: Rows handed to the core at a time by the RDD adapter.
RDD_CHUNK = 10_000


def rdd_partition(setup: RouteSetup, rows: Iterable[Any]) -> Iterator[tuple]:
    """``RDD.mapPartitions`` body: Rows of (message_id, topic) -> stream tuples."""
    if setup.matcher in matchers.NEEDS_TOPIC_SPACE:
        rows = list(rows)
        router, info = task_router(setup, (r[1] for r in rows))
    else:
        router, info = task_router(setup)
    rows = iter(rows)
    while True:
        chunk = [r for _, r in zip(range(RDD_CHUNK), rows)]
        if not chunk:
            break
        for group in stream_groups(router, [r[0] for r in chunk], [r[1] for r in chunk]):
            yield from rows_of(group)
    for group in figure_groups(router, setup.top, setup.split_topics):
        yield from rows_of(group)
    workercache.report_task(setup.stats, info, router.messages)


# --- the Spark frame -------------------------------------------------------------------------

#: Ways of running the per-partition routing, by ``--impl`` name.
IMPLS = ("arrow", "pandas", "rdd")

#: The default ``--impl``, chosen by measurement. On the project's 2-core machine (local[*],
#: CPython 3.11.7, Spark 4.3.0, pyarrow 26, pandas 3.1), routing 1,000,000 generated NATS
#: messages (``generate --subscriptions 10000 --messages 1000000``, mean fanout 9.3, so
#: 9,325,249 deliveries) with CSTrie; three runs of each, interleaved; ``seconds`` is the
#: whole job (read, route, write every output, Spark start-up excluded):
#:
#: ==========  =====================  ==================  ======================
#: impl        seconds                messages/s median   route stage seconds
#: ==========  =====================  ==================  ======================
#: ``arrow``   24.4, 26.5, 25.1       39,780              14.3, 16.1, 15.0
#: ``pandas``  28.2, 28.3, 28.3       35,395              18.0, 18.0, 17.8
#: ``rdd``     34.5, 32.6, 31.6       30,691              24.6, 23.5, 23.0
#: ==========  =====================  ==================  ======================
#:
#: ``mapInArrow`` hands the function Arrow batches and takes Arrow batches back (one
#: ``to_pylist`` per column, one ``pa.array`` per output column); ``mapInPandas`` adds the
#: pandas conversions both ways; the RDD path pickles every row.
DEFAULT_IMPL = "arrow"


def route_frame(spark: Any, messages: Any, setup: RouteSetup, impl: str) -> Any:
    """Rows ``(kind, message_id, subscriber)`` of routing ``messages`` with ``impl``: the
    stream of :data:`STREAM_DDL` with its subscriber arrays exploded; with ``deliveries``
    ``ids``, the stream of :data:`IDS_STREAM_DDL` as it is."""
    from pyspark.sql import functions as F

    if setup.deliveries == "ids":  # one row per message: nothing to explode
        if impl != "arrow" or setup.names is None:
            raise ValueError("deliveries 'ids' needs impl 'arrow' and subscriber names")
        return messages.mapInArrow(partial(arrow_partition, setup), IDS_STREAM_DDL)
    if impl == "arrow":
        stream = messages.mapInArrow(partial(arrow_partition, setup), STREAM_DDL)
    elif impl == "pandas":
        stream = messages.mapInPandas(partial(pandas_partition, setup), STREAM_DDL)
    elif impl == "rdd":
        rdd = messages.rdd.mapPartitions(partial(rdd_partition, setup))
        stream = spark.createDataFrame(rdd, STREAM_DDL)
    else:
        raise ValueError(f"unknown impl {impl!r}; choose from {', '.join(IMPLS)}")
    return stream.select("kind", "message_id", F.explode("subscribers").alias("subscriber"))

