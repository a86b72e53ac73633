"""Seeded pub/sub workloads as Parquet: subscriptions and messages.

Words follow a bounded Zipf law: the word of rank ``r`` (1-based) in a vocabulary of ``V``
words is drawn with probability proportional to ``1 / r**s``. Each topic level has its own
popularity order (a seeded permutation of the vocabulary), so the most popular first word is
not the most popular second word. A topic or pattern has a uniform number of levels in
``levels = (lo, hi)``.

Patterns are drawn like topics, then wildcards are placed by the *wildcard spec*
(``--wildcards``, parsed by :func:`experiments.pipeline.cli.parse_wildcards`): ``single=P``
turns each level into the one-level wildcard with probability ``P``; ``multi=Q`` gives a
pattern a many-level wildcard with probability ``Q`` (it replaces the last level in NATS and
MQTT, where it may only end a pattern, and a random level in AMQP, where it may stand
anywhere).

Everything is vectorised (numpy draws, pyarrow string joins) and done in chunks of
:data:`CHUNK_ROWS` rows, each with its own generator seeded by ``(seed, stream, chunk)``:
the output depends on the seed and the parameters only, not on the machine or on how many
chunks there are, and a million messages take a second or two. Files are written with
pyarrow under fixed names (``part-00000.parquet``...), so two runs with the same arguments
produce byte-identical files. No Spark (and no Java) is needed.

Invalid topics (``invalid_rate``) cycle through the ways a topic of the dialect can be
wrong, including a null topic: see :data:`INVALID_FORMS`.

A *hot topic* (``hot_share``) skews the messages: that fraction of them (drawn from a stream
of their own, so that the other messages do not change) get one topic, made of the most
popular word of each of the first ``levels[0]`` levels (:func:`hot_topic`). Invalid topics
are injected after, over all messages alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = [
    "CHUNK_ROWS",
    "INVALID_FORMS",
    "MESSAGES_SCHEMA",
    "SUBSCRIPTIONS_SCHEMA",
    "Workload",
    "generate",
    "hot_topic",
    "message_batches",
    "subscription_batches",
]

#: Rows per generator chunk, per row group and per file.
CHUNK_ROWS = 1 << 17

SUBSCRIPTIONS_SCHEMA = pa.schema([("pattern", pa.string()), ("subscriber", pa.string())])
MESSAGES_SCHEMA = pa.schema([("message_id", pa.int64()), ("topic", pa.string())])

# Independent random streams of one seed.
_STREAM_SUBSCRIPTIONS = 1
_STREAM_MESSAGES = 2
_STREAM_PERMUTATIONS = 3
_STREAM_HOT = 4

_SYNTAX = {  # dialect -> (separator, one-level wildcard, many-level wildcard)
    "nats": (".", "*", ">"),
    "amqp": (".", "*", "#"),
    "mqtt": ("/", "+", "#"),
}

#: Per dialect, the invalid topic forms injected by ``invalid_rate``, applied in turn to the
#: valid topic they replace (``None`` is a null topic).
INVALID_FORMS: dict[str, tuple[Callable[[str], str | None], ...]] = {
    "nats": (
        lambda t: None,
        lambda t: "",
        lambda t: t + ".",
        lambda t: t.replace(".", "..", 1) if "." in t else "." + t,
        lambda t: t + " x",
        lambda t: t + ".*",
        lambda t: t + ".>",
    ),
    "amqp": (
        lambda t: None,
        lambda t: "",
        lambda t: "." + t,
        lambda t: t + ".#",
        lambda t: "*." + t,
    ),
    "mqtt": (
        lambda t: None,
        lambda t: "",
        lambda t: t + "/#",
        lambda t: "+/" + t,
        lambda t: t + "\x00",
    ),
}


@dataclass(frozen=True)
class Workload:
    """The parameters that, with the seed, determine a generated data set."""

    subscriptions: int
    messages: int
    dialect: str = "nats"
    seed: int = 1
    wildcards: dict[str, float] = field(default_factory=lambda: {"single": 0.1, "multi": 0.05})
    invalid_rate: float = 0.0
    vocabulary: int = 1000
    zipf: float = 1.1
    levels: tuple[int, int] = (3, 5)
    subscribers: int | None = None  # distinct subscribers; None: as many as subscriptions
    hot_share: float = 0.0  # fraction of the messages given the hot topic

    def __post_init__(self) -> None:
        if self.dialect not in _SYNTAX:
            raise ValueError(f"unknown dialect {self.dialect!r}; choose from nats, amqp, mqtt")
        for name in ("subscriptions", "messages"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")
        if self.vocabulary < 1:
            raise ValueError("vocabulary must be >= 1")
        if not self.zipf >= 0:
            raise ValueError("zipf exponent must be >= 0")
        if not 0.0 <= self.invalid_rate <= 1.0:
            raise ValueError("invalid_rate must be between 0 and 1")
        if not 0.0 <= self.hot_share <= 1.0:
            raise ValueError("hot_share must be between 0 and 1")
        if self.subscribers is not None and self.subscribers < 1:
            raise ValueError("subscribers must be >= 1")


class _Words:
    """Vectorised drawing of words and joining of levels for one workload."""

    def __init__(self, wl: Workload) -> None:
        self.wl = wl
        self.sep, self.single, self.multi = _SYNTAX[wl.dialect]
        ranks = np.arange(1, wl.vocabulary + 1, dtype=np.float64)
        weights = ranks ** -wl.zipf
        cdf = np.cumsum(weights)
        self.cdf = cdf / cdf[-1]
        perm_rng = np.random.default_rng([wl.seed, _STREAM_PERMUTATIONS])
        hi = wl.levels[1]
        # permutation[level][rank index] -> word index
        self.permutation = np.stack([perm_rng.permutation(wl.vocabulary) for _ in range(hi)])
        # Word index V is the one-level wildcard, V + 1 the many-level one.
        self.vocab = pa.array([f"w{i}" for i in range(wl.vocabulary)] + [self.single, self.multi],
                              pa.string())
        self.wild_single = wl.vocabulary
        self.wild_multi = wl.vocabulary + 1

    def draw(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Word indices ``(n, hi)`` and level counts ``(n,)``."""
        lo, hi = self.wl.levels
        lengths = rng.integers(lo, hi + 1, size=n)
        ranks = np.searchsorted(self.cdf, rng.random((n, hi)), side="right")
        np.minimum(ranks, self.wl.vocabulary - 1, out=ranks)  # guard the cdf's last ulp
        words = self.permutation[np.arange(hi)[None, :], ranks]
        return words, lengths

    def hot_topic(self) -> str:
        """The most popular word of each of the first ``levels[0]`` levels, joined."""
        words = self.permutation[np.arange(self.wl.levels[0]), 0]
        return self.sep.join(f"w{i}" for i in words)

    def join(self, words: np.ndarray, lengths: np.ndarray) -> pa.Array:
        """The strings: each row's first ``lengths`` levels joined by the separator."""
        n, hi = words.shape
        cols = []
        for j in range(hi):
            absent = lengths <= j
            idx = pa.array(words[:, j], pa.int64(), mask=absent)
            cols.append(pc.take(self.vocab, idx))
        return pc.binary_join_element_wise(*cols, self.sep, null_handling="skip")


def _chunks(total: int) -> Iterator[tuple[int, int]]:
    for c, start in enumerate(range(0, total, CHUNK_ROWS)):
        yield c, min(CHUNK_ROWS, total - start)


def subscription_batches(wl: Workload) -> Iterator[pa.RecordBatch]:
    """The subscriptions, one record batch per chunk, in order."""
    gen = _Words(wl)
    n_subscribers = wl.subscribers or max(1, wl.subscriptions)
    p_single, p_multi = wl.wildcards["single"], wl.wildcards["multi"]
    for c, n in _chunks(wl.subscriptions):
        rng = np.random.default_rng([wl.seed, _STREAM_SUBSCRIPTIONS, c])
        words, lengths = gen.draw(rng, n)
        hi = words.shape[1]
        present = np.arange(hi)[None, :] < lengths[:, None]
        words[(rng.random((n, hi)) < p_single) & present] = gen.wild_single
        multi = rng.random(n) < p_multi
        if wl.dialect == "amqp":
            where = (rng.random(n) * lengths).astype(np.int64)  # any level
        else:
            where = lengths - 1  # the last level
        rows = np.nonzero(multi)[0]
        words[rows, where[rows]] = gen.wild_multi
        subscribers = rng.integers(0, n_subscribers, size=n)
        sub_col = pc.binary_join_element_wise("s", pa.array(subscribers).cast(pa.string()), "")
        yield pa.RecordBatch.from_arrays([gen.join(words, lengths), sub_col],
                                         schema=SUBSCRIPTIONS_SCHEMA)


def message_batches(wl: Workload) -> Iterator[pa.RecordBatch]:
    """The messages (``message_id`` = row number), one record batch per chunk, in order."""
    gen = _Words(wl)
    forms = INVALID_FORMS[wl.dialect]
    start = 0
    for c, n in _chunks(wl.messages):
        rng = np.random.default_rng([wl.seed, _STREAM_MESSAGES, c])
        words, lengths = gen.draw(rng, n)
        topics = gen.join(words, lengths)
        if wl.hot_share:
            hot = np.random.default_rng([wl.seed, _STREAM_HOT, c]).random(n) < wl.hot_share
            topics = pc.if_else(pa.array(hot), pa.scalar(gen.hot_topic()), topics)
        bad = np.nonzero(rng.random(n) < wl.invalid_rate)[0]
        if len(bad):
            values = topics.to_pylist()
            for i in bad:  # the forms in turn, by message_id
                values[i] = forms[(start + int(i)) % len(forms)](values[i])
            topics = pa.array(values, pa.string())
        ids = pa.array(np.arange(start, start + n, dtype=np.int64))
        yield pa.RecordBatch.from_arrays([ids, topics], schema=MESSAGES_SCHEMA)
        start += n


def hot_topic(wl: Workload) -> str:
    """The topic a ``hot_share`` of the messages of ``wl`` get."""
    return _Words(wl).hot_topic()


def _write(folder: Path, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=False)
    paths = []
    for i, batch in enumerate(batches):
        path = folder / f"part-{i:05d}.parquet"
        pq.write_table(pa.Table.from_batches([batch], schema=schema), path,
                       compression="snappy", row_group_size=CHUNK_ROWS)
        paths.append(path)
    if not paths:  # an empty data set is still a readable data set
        path = folder / "part-00000.parquet"
        pq.write_table(schema.empty_table(), path, compression="snappy")
        paths.append(path)
    return paths


def generate(wl: Workload, out: Path) -> dict:
    """Write ``out/subscriptions``, ``out/messages`` and ``out/workload.json``; return the
    manifest (the parameters, file names and row counts). ``out`` must not hold them yet."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    subs = _write(out / "subscriptions", SUBSCRIPTIONS_SCHEMA, subscription_batches(wl))
    msgs = _write(out / "messages", MESSAGES_SCHEMA, message_batches(wl))
    manifest = {
        "workload": {**asdict(wl), "levels": list(wl.levels)},
        "subscriptions": {"rows": wl.subscriptions, "files": [p.name for p in subs]},
        "messages": {"rows": wl.messages, "files": [p.name for p in msgs]},
        **({"hot_topic": hot_topic(wl)} if wl.hot_share else {}),
        "pyarrow": pa.__version__,
        "numpy": np.__version__,
    }
    (out / "workload.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
