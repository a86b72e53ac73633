"""The seeded workloads of ``methodology.md``, in NATS form, and their MQTT form.

Every generator takes a ``seed`` and is deterministic for it (``random.Random(str)`` seeds
are hashed with SHA-512, so they are stable across runs and interpreters). Patterns and
topics are written in the NATS dialect (``.``, ``*``, ``>``); :func:`to_mqtt` rewrites one
into the MQTT dialect (``/``, ``+``, ``#``), which is how paho-mqtt's ``MQTTMatcher`` and the
MQTT form of every experiment receive them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = [
    "DENSE_LEVELS",
    "DENSE_WORDS",
    "DenseWorkload",
    "EXAMPLES",
    "EXAMPLE_SEED",
    "ExampleWorkload",
    "LATENCY_PATTERN",
    "LATENCY_TOPIC",
    "SCALING_SUBSCRIBER",
    "ThroughputWorkload",
    "dense_workload",
    "fresh_patterns",
    "hot_population",
    "inbox",
    "lookup_pool",
    "mqtt_sensors_example",
    "nats_inbox_example",
    "rng",
    "scaling_items",
    "scaling_plan",
    "throughput_workload",
    "to_mqtt",
]

#: The pattern the latency benchmarks subscribe and unsubscribe (the original's).
LATENCY_PATTERN = "foo.*.baz.qux.quux"
#: The topic the latency benchmarks look up (the original's).
LATENCY_TOPIC = "foo.bar.baz.qux.quux"
#: The one subscriber of the scaling workloads (the original's).
SCALING_SUBSCRIBER = "abc"

_MQTT_WORD = {"*": "+", ">": "#"}


def rng(seed: int, purpose: str) -> random.Random:
    """A generator for one purpose of one seed, independent of the others."""
    return random.Random(f"cstrie-{seed}-{purpose}")


def to_mqtt(nats: str) -> str:
    """The MQTT form of a NATS pattern or topic: ``a.*.>`` -> ``a/+/#``."""
    return "/".join(_MQTT_WORD.get(w, w) for w in nats.split("."))


def hot_population(seed: int, n: int = 1000, words: int = 5) -> list[str]:
    """``n`` literal patterns of ``words`` random words: the "hot" population.

    The original drew unseeded random integers as words (Go ``rand.Int()``, 63 bits); here
    they are 63-bit integers from a seeded generator.
    """
    r = rng(seed, "hot")
    return [".".join(str(r.getrandbits(63)) for _ in range(words)) for _ in range(n)]


def fresh_patterns(n: int, tag: str = "") -> list[str]:
    """``n`` distinct patterns shaped like :data:`LATENCY_PATTERN` for the real-work variants.

    ``foo.*.baz.qux.<tag>f<i>``: one single-level wildcard, five words, no two alike, and
    none equal to a pattern of the hot population or the faithful benchmark.
    """
    return [f"foo.*.baz.qux.{tag}f{i}" for i in range(n)]


def lookup_pool(n: int) -> list[str]:
    """``n`` distinct topics that :data:`LATENCY_PATTERN` matches (``foo.t<i>.baz.qux.quux``).

    Cycling through more topics than ``LockedTrie``'s result cache holds defeats the cache:
    the ``distinct`` lookup variant measures the matching walk rather than a cache hit.
    """
    return [f"foo.t{i}.baz.qux.quux" for i in range(n)]


#: Levels of the dense workload's topics (and at most of its filters).
DENSE_LEVELS = 5
#: The words of every level of the dense workload.
DENSE_WORDS = tuple(f"w{i}" for i in range(5))
#: Per level of a dense filter: the chance of ``>`` (ending the filter; never at the last
#: level), and the chance of ``*``; the rest is a random word.
DENSE_MULTI, DENSE_SINGLE = 0.1, 0.1


@dataclass(frozen=True)
class DenseWorkload:
    """Distinct wildcard filters (subscriber ``i`` for filter ``i``) and the topics to look up."""

    filters: list[str]
    topics: list[str]


def _dense_filter(r: random.Random) -> str:
    parts = []
    for level in range(DENSE_LEVELS):
        x = r.random()
        if x < DENSE_MULTI and level < DENSE_LEVELS - 1:
            parts.append(">")
            break
        parts.append("*" if x < DENSE_MULTI + DENSE_SINGLE else r.choice(DENSE_WORDS))
    return ".".join(parts)


def dense_workload(seed: int, filters: int = 850, topics: int = 2000) -> DenseWorkload:
    """The dense wildcard lookup workload: few words per level, many wildcards.

    ``filters`` distinct filters of up to :data:`DENSE_LEVELS` levels over the words
    :data:`DENSE_WORDS`: at each level ``>`` with probability 0.1 (it ends the filter, and
    is never the last level), ``*`` with probability 0.1, else a random word; filters are
    drawn until ``filters`` distinct ones are left. Then ``topics`` topics of exactly
    :data:`DENSE_LEVELS` random words. At the quick size (850 filters) a topic matches about
    9 filters, against at most one in the hot population of :func:`hot_population`.
    """
    r = rng(seed, "dense")
    found: dict[str, None] = {}
    while len(found) < filters:
        found[_dense_filter(r)] = None
    words = [".".join(r.choice(DENSE_WORDS) for _ in range(DENSE_LEVELS)) for _ in range(topics)]
    return DenseWorkload(list(found), words)


def inbox(i: object) -> str:
    """The NATS request/reply inbox subject ``_INBOX.<i>.reply``."""
    return f"_INBOX.{i}.reply"


@dataclass(frozen=True)
class ThroughputWorkload:
    """Subscriptions (subscriber ``i`` for pattern ``i``) and the messages to look up."""

    patterns: list[str]
    messages: list[str]
    alphabet: int

    @property
    def distinct_patterns(self) -> int:
        return len(set(self.patterns))


def throughput_workload(seed: int, subscriptions: int = 1000, messages: int = 100_000,
                        alphabet: int = 10) -> ThroughputWorkload:
    """The 3-digit workload of the Fast Topic Matching throughput benchmark.

    Pattern ``i`` has 3 words drawn from ``0 .. alphabet-1`` (digits in the original);
    ``i % 10 == 0`` makes it ``*.d.d``, else ``i % 25 == 0`` ``d.*.d``, else ``i % 45 == 0``
    ``d.d.*``, else it is all literal. Message ``i`` is pattern ``i % subscriptions`` with
    each ``*`` replaced by a random word of the alphabet. ``alphabet`` above 10 is only used
    by the memory growth variant that wants mostly distinct patterns.
    """
    r = rng(seed, f"throughput-{alphabet}")
    patterns = []
    for i in range(subscriptions):
        w = [str(r.randrange(alphabet)) for _ in range(3)]
        if i % 10 == 0:
            w[0] = "*"
        elif i % 25 == 0:
            w[1] = "*"
        elif i % 45 == 0:
            w[2] = "*"
        patterns.append(".".join(w))
    split = [p.split(".") for p in patterns]
    msgs = []
    for i in range(messages):
        words = split[i % subscriptions]
        msgs.append(".".join(str(r.randrange(alphabet)) if x == "*" else x for x in words))
    return ThroughputWorkload(patterns, msgs, alphabet)


def scaling_items(ops: int = 1000) -> list[str]:
    """The items every scaling worker operates on: ``f"{j % 10}.{j % 50}.{j}"``."""
    return [f"{j % 10}.{j % 50}.{j}" for j in range(ops)]


def scaling_plan(workload: str, worker: int, ops: int, seed: int) -> list[bool]:
    """Which of a worker's ``ops`` operations are writes (True) in a scaling workload.

    - ``50/50``: odd ``j`` subscribes, even ``j`` looks up;
    - ``90/10-faithful``: the original's "90/10": worker ``w`` writes all its operations if
      ``w % 10 == 0`` and only looks up otherwise, so the real write share is
      ``ceil(n / 10) / n`` for ``n`` workers (100 % at 1, 50 % at 2, 25 % at 4, ...);
    - ``90/10-true``: each operation is a write with probability 0.1 (seeded per worker).
    """
    if workload == "50/50":
        return [j % 2 == 1 for j in range(ops)]
    if workload == "90/10-faithful":
        return [worker % 10 == 0] * ops
    if workload == "90/10-true":
        r = rng(seed, f"ninety-ten-{worker}")
        return [r.random() < 0.1 for _ in range(ops)]
    raise ValueError(f"unknown scaling workload {workload!r}")


# --- example workloads of the ``compare`` command --------------------------------------------

#: The seed the shipped example workloads (``examples/<name>/``) were generated with.
EXAMPLE_SEED = 1
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
NATS_SERVICES = ("orders", "payments", "inventory", "shipping", "users", "auth", "search",
                 "pricing", "catalog", "notify", "billing", "reports")
NATS_METHODS = ("get", "list", "create", "update", "delete")


@dataclass(frozen=True)
class ExampleWorkload:
    """A broker's workload: (pattern, subscriber) pairs and the topics published, in order."""

    subscriptions: list[tuple[str, str]]
    topics: list[str]


def _nuid(r: random.Random, n: int = 22) -> str:
    """A NATS-style unique id: ``n`` base-62 characters."""
    return "".join(r.choice(_BASE62) for _ in range(n))


def nats_inbox_example(seed: int = EXAMPLE_SEED, subscriptions: int = 2000,
                       topics: int = 5000) -> ExampleWorkload:
    """NATS request/reply: service subjects and the clients' reply inboxes.

    Subscriptions: each ``svc.<service>.<method>`` served by 3 workers, one auditor per
    service on ``svc.<service>.>``, a read cache on ``svc.*.get``, a tracer on ``svc.>`` and
    an inbox tap on ``_INBOX.>``; 300 clients each with the response multiplexer of current
    NATS clients (``_INBOX.<nuid>.*``); the rest old-style one-request inboxes
    (``_INBOX.<nuid>``, literal) of random clients. Topics: 40 % requests (services and
    methods Zipf-weighted), 40 % replies to a multiplexed inbox (``_INBOX.<prefix>.<token>``),
    15 % replies to an old-style inbox, 5 % subjects nobody serves (``metrics.<host>.cpu``
    and replies to inboxes that timed out).
    """
    r = rng(seed, "example-nats-inbox")
    subs: list[tuple[str, str]] = []
    for s in NATS_SERVICES:
        for m in NATS_METHODS:
            subs.extend((f"svc.{s}.{m}", f"{s}-worker-{k}") for k in range(3))
        subs.append((f"svc.{s}.>", f"{s}-audit"))
    subs += [("svc.*.get", "read-cache"), ("svc.>", "tracer"), ("_INBOX.>", "inbox-tap")]
    prefixes = [_nuid(r) for _ in range(300)]
    subs.extend((f"_INBOX.{p}.*", f"client-{c}") for c, p in enumerate(prefixes))
    singles = []
    while len(subs) < subscriptions:
        singles.append(_nuid(r))
        subs.append((f"_INBOX.{singles[-1]}", f"client-{r.randrange(len(prefixes))}"))
    weights = [1 / (i + 1) for i in range(len(NATS_SERVICES))]
    out = []
    for _ in range(topics):
        x = r.random()
        if x < 0.40:
            service = r.choices(NATS_SERVICES, weights)[0]
            out.append(f"svc.{service}.{r.choices(NATS_METHODS, (5, 4, 2, 2, 1))[0]}")
        elif x < 0.80:
            out.append(f"_INBOX.{r.choice(prefixes)}.{_nuid(r, 8)}")
        elif x < 0.95:
            out.append(f"_INBOX.{r.choice(singles)}" if singles else f"_INBOX.{_nuid(r)}")
        elif x < 0.975:
            out.append(f"metrics.host{r.randrange(40)}.cpu")
        else:
            out.append(f"_INBOX.{_nuid(r)}")
    return ExampleWorkload(subs, out)


def mqtt_sensors_example(seed: int = EXAMPLE_SEED, subscriptions: int = 2000,
                         topics: int = 5000) -> ExampleWorkload:
    """An MQTT sensor tree: ``site/<building>/<floor>/<device>/<telemetry|status|alarm|cmd>``.

    6 buildings of 10 floors of 30 devices (``temp-``, ``hum-``, ``co2-`` or ``power-<n>``).
    Subscriptions: an auditor on ``#``, an alarm desk on ``site/+/+/+/alarm``, a broker
    monitor on ``$SYS/#`` and a watcher on ``+/broker/#`` (which matches no ``$SYS`` topic:
    MQTT 4.7.2), per building a dashboard on ``site/<b>/+/+/telemetry`` and a building
    management system on ``site/<b>/#``, per floor a panel on ``site/<b>/<f>/+/telemetry`` and
    ``.../+/status``; a historian on each device's ``.../telemetry`` (literal) while there is
    room, then devices' own ``.../cmd`` filters. Topics: 80 % telemetry, 10 % status, 3 %
    alarms, 5 % commands, 2 % ``$SYS/broker/...``.
    """
    r = rng(seed, "example-mqtt-sensors")
    kinds = ("temp", "hum", "co2", "power")
    devices = [f"site/b{b:02d}/f{f:02d}/{kinds[d % 4]}-{d:03d}"
               for b in range(1, 7) for f in range(10) for d in range(30)]
    subs = [("#", "audit"), ("site/+/+/+/alarm", "alarm-desk"), ("$SYS/#", "broker-monitor"),
            ("+/broker/#", "broker-watch")]
    for b in range(1, 7):
        subs += [(f"site/b{b:02d}/+/+/telemetry", f"dashboard-b{b:02d}"),
                 (f"site/b{b:02d}/#", f"bms-b{b:02d}")]
        for f in range(10):
            panel = f"panel-b{b:02d}-f{f:02d}"
            subs += [(f"site/b{b:02d}/f{f:02d}/+/telemetry", panel),
                     (f"site/b{b:02d}/f{f:02d}/+/status", panel)]
    order = r.sample(devices, len(devices))
    for d in order[:max(0, subscriptions - len(subs))]:
        subs.append((f"{d}/telemetry", "historian"))
    for d in order[:max(0, subscriptions - len(subs))]:
        subs.append((f"{d}/cmd", d[len("site/"):].replace("/", ":")))
    subs = subs[:subscriptions]
    sys_topics = ("$SYS/broker/load/messages/received", "$SYS/broker/clients/connected",
                  "$SYS/broker/uptime")
    out = []
    for _ in range(topics):
        x = r.random()
        d = r.choice(devices)
        if x < 0.80:
            out.append(f"{d}/telemetry")
        elif x < 0.90:
            out.append(f"{d}/status")
        elif x < 0.93:
            out.append(f"{d}/alarm")
        elif x < 0.98:
            out.append(f"{d}/cmd")
        else:
            out.append(r.choice(sys_topics))
    return ExampleWorkload(subs, out)


#: The example workloads by name: (generator, dialect).
EXAMPLES = {"nats-inbox": (nats_inbox_example, "nats"),
            "mqtt-sensors": (mqtt_sensors_example, "mqtt")}
