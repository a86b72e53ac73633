"""The Spark pipeline (``experiments.pipeline``): generate, route, aggregate.

Pure parts run without Spark: the regex translation is held to ``ctrie.matches`` over every
pattern and topic of the suite's small alphabets, the per-partition router to the matcher,
the generator to byte-identical output for a seed, ``aggregate`` to medians worked out by
hand. The Spark parts share ONE local session (module fixture, ``local[2]``, 4 shuffle
partitions, no UI) and route small data sets per dialect: the suite's alphabets (every
pattern, every topic, the invalid topics, a null topic, a null message_id) plus a generated
workload with injected invalid topics. Each route run is checked message by message against
the in-process ``CSTrie`` and the reference matcher, its rejections against the validator's
messages, its summary against the outputs, and its regex baseline against the matcher.

Spark tests are skipped (with the reason) only when pyspark is not importable or no Java is
found; generate and aggregate tests need numpy, pyarrow and pandas (the ``pipeline`` extra).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest
from strategies import DIALECTS, INVALID_TOPICS, all_topics, every_pattern

from ctrie import CSTrie, Dialect, InvalidTopicError, matches, validate_topic
from experiments.pipeline import cli, matchers, regex, routing

# --- regex translation (no Spark) -----------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_regex_translation_agrees_with_reference_matcher(dialect: Dialect) -> None:
    pats = every_pattern(dialect, 3)
    tops = all_topics(dialect, 4)
    wrong = []
    for p in pats:
        rx = re.compile(regex.pattern_regex(p, dialect.value, flavor="python"))
        for t in tops:
            got = rx.match(regex.subject(t, dialect.value)) is not None
            if got != matches(p, t, dialect):
                wrong.append((p, t, got))
    assert not wrong, f"{len(wrong)} of {len(pats) * len(tops)} disagree, e.g. {wrong[:5]}"
    assert len(pats) * len(tops) > 3000


def test_regex_java_flavour_anchors_at_the_very_end() -> None:
    # '$' would also match before a final newline, which AMQP and MQTT topics may hold.
    assert regex.pattern_regex("a.*", "amqp").endswith(r"\z")
    assert regex.pattern_regex("+/#", "mqtt").startswith(r"^(?!\/\$)")
    assert regex.pattern_regex("a.#.#.b", "amqp").count("*") == 1  # '#.#' merged


# --- the per-partition core (no Spark) ------------------------------------------------------


def test_router_routes_rejects_and_counts() -> None:
    pairs = [("a.*", "s1"), ("a.>", "s2"), ("b", "s1")]
    router = routing.Router(matchers.build("cstrie", "nats", pairs))
    ids = [1, 2, 3, 4, 5, None, 7]
    topics = ["a.x", "b", "c", None, "a..b", "a.y", "a.x"]
    d_ids, offsets, d_subs, r_ids, r_topics, r_reasons = router.route(ids, topics)
    assert d_ids == [1, 2, 7] and offsets == [0, 2, 3, 5]
    assert [sorted(d_subs[a:b]) for a, b in zip(offsets, offsets[1:])] == [
        ["s1", "s2"], ["s1"], ["s1", "s2"]]
    assert r_ids == [4, 5, None]
    assert r_topics == [None, "a..b", "a.y"]
    assert r_reasons[0] == "topic must be a str, not NoneType: None"
    with pytest.raises(InvalidTopicError) as err:
        validate_topic("a..b", "nats")
    assert r_reasons[1] == str(err.value)
    assert r_reasons[2] == "message_id is null"
    assert dict(router.histogram) == {2: 2, 1: 1, 0: 1}
    assert router.top_topics(5) == [("a.x", 2, 2), ("b", 1, 1)]
    assert router.top_topics(1) == [("a.x", 2, 2)]
    groups = list(routing.figure_groups(router, 1))
    assert groups[0][0] == routing.FANOUT
    assert dict(zip(groups[0][1], map(int, groups[0][3]))) == {2: 2, 1: 1, 0: 1}
    assert groups[1] == (routing.TOPIC, [2], [0, 1], ["2:a.x"])


def test_router_keeps_a_matcher_bug_as_a_rejection() -> None:
    class Broken:
        def lookup(self, topic):
            raise KeyError(topic)

    router = routing.Router(Broken())
    _, _, _, r_ids, _, reasons = router.route([1], ["a"])
    assert r_ids == [1] and reasons == [f"{routing.MATCHER_ERROR}KeyError: 'a'"]


def test_check_subscriptions_rejects_bad_rows_and_unsupported_patterns() -> None:
    rows = [("a.*", "s"), ("a.*", "s"), ("a..b", "s"), (None, "s"), ("b", None)]
    pairs, rejected, m = routing.check_subscriptions(rows, "cstrie", "nats")
    assert pairs == [("a.*", "s")] and m.lookup("a.b") == frozenset({"s"})
    assert [r[0] for r in rejected] == ["a..b", None, "b"]
    assert "empty tokens" in rejected[0][2] and rejected[2][2] == "subscriber is null"
    _, rejected, _ = routing.check_subscriptions([("a.#.b", "s")], "optimized_bitmap", "amqp",
                                                 max_words=4)
    assert len(rejected) == 1  # documented UnsupportedPatternError


def test_matcher_build_runs_with_the_collector_paused(monkeypatch) -> None:
    """PySpark's Broadcast.value re-enables the cyclic collector when it returns: loaded
    inside the paused build, it made a 1,000,000-subscription build in a Spark worker take
    161 s instead of 11-15 s."""
    import gc

    class Broadcast:  # what a worker sees: .value loads with the collector off, then on
        @property
        def value(self):
            gc.enable()
            return [("a.*", "s1"), ("b", "s2")]

    during = []
    build = matchers.build

    def spy(*args, **kwargs):
        during.append(gc.isenabled())
        return build(*args, **kwargs)

    monkeypatch.setattr(matchers, "build", spy)
    try:
        router, info = routing.task_router(routing.RouteSetup(Broadcast()))
    finally:
        gc.unfreeze()
    assert during == [False] and gc.isenabled()
    assert info["built"] and router.matcher.lookup("a.x") == frozenset({"s1"})


def test_cli_choices_match_the_modules() -> None:
    from experiments.pipeline import route

    assert cli._MATCHERS == tuple(matchers.MATCHERS)
    assert cli._IMPLS == route.IMPLS
    assert cli._DELIVERIES == route.DELIVERIES


# --- generate (no Spark) --------------------------------------------------------------------


def _digest(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_generate_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="generate needs the pipeline extra (pyarrow)")
    pq = pytest.importorskip("pyarrow.parquet")
    args = ["generate", "--subscriptions", "3000", "--messages", "300000", "--seed", "7",
            "--wildcards", "single=0.2,multi=0.1", "--invalid-rate", "0.01"]
    assert cli.main([*args, "--out", str(tmp_path / "a")]) == 0
    assert cli.main([*args, "--out", str(tmp_path / "b")]) == 0
    other_seed = ["8" if a == "7" else a for a in args]
    assert cli.main([*other_seed, "--out", str(tmp_path / "c")]) == 0
    a, b, c = (_digest(tmp_path / x) for x in "abc")
    assert a == b
    assert len(a) == 5  # 1 subscription file, 3 message files (chunks), workload.json
    assert a["subscriptions/part-00000.parquet"] != c["subscriptions/part-00000.parquet"]
    msgs = pq.read_table(tmp_path / "a" / "messages")
    assert msgs.schema.names == ["message_id", "topic"] and msgs.num_rows == 300_000
    assert msgs.column("message_id").to_pylist() == list(range(300_000))
    subs = pq.read_table(tmp_path / "a" / "subscriptions")
    assert subs.schema.names == ["pattern", "subscriber"] and subs.num_rows == 3000
    pats = subs.column("pattern").to_pylist()
    words = [w for p in pats for w in p.split(".")]
    assert 0.15 < words.count("*") / len(words) < 0.25  # single=0.2 per level
    assert 0.07 < sum(p.endswith(">") for p in pats) / len(pats) < 0.13  # multi=0.1
    bad = 0
    for t in msgs.column("topic").to_pylist()[:50_000]:
        try:
            validate_topic(t, "nats")
        except (InvalidTopicError, TypeError):
            bad += 1
    assert 300 < bad < 700  # invalid-rate 0.01 of 50,000


def test_generate_refuses_to_overwrite_and_rejects_bad_specs(tmp_path: Path, capsys) -> None:
    pytest.importorskip("pyarrow", reason="generate needs the pipeline extra (pyarrow)")
    args = ["generate", "--out", str(tmp_path), "--subscriptions", "10", "--messages", "10"]
    assert cli.main(args) == 0
    assert cli.main(args) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert cli.main([*args, "--overwrite"]) == 0
    with pytest.raises(SystemExit):
        cli.main([*args, "--wildcards", "single=2"])
    assert "--wildcards" in capsys.readouterr().err


# --- aggregate (no Spark) -------------------------------------------------------------------


def _record(algorithm: str, median: float, *, gil: bool = True, lo: float | None = None,
            hi: float | None = None, **extra) -> dict:
    rec = {"experiment": "throughput", "algorithm": algorithm, "dialect": "nats",
           # an outcome (wall_s) and a setting of one algorithm (max_words) in params must
           # not split cells
           "workload": "3-digit", "threads": 1,
           "params": {"subscriptions": 1000, "messages": 100, "wall_s": median,
                      **({"max_words": 3} if algorithm == "naive" else {})},
           "seed": 1, "rounds": 3, "median": median, "min": lo if lo is not None else median,
           "max": hi if hi is not None else median, "unit": "msg/s", "python": "3.13.1",
           "gil_enabled": gil, "cpu_count": 2, "package_version": "0.1.0",
           "git_commit": "abc", "timestamp": "2026-01-01T00:00:00+00:00", "status": "ok"}
    rec.update(extra)
    return rec


def test_aggregate_gets_known_medians_right(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas", reason="aggregate needs the pipeline extra (pandas)")
    runs = {
        "run1/3.13-gil": [_record("cstrie", 100, lo=90, hi=130), _record("naive", 10),
                          _record("cstrie", 50, gil=False)],
        "run2/nested/deeper": [_record("cstrie", 300), _record("naive", 40, lo=5),
                               _record("cstrie", 70, gil=False),
                               _record("naive", None, status="skipped")],
        "run3": [_record("cstrie", 200), _record("naive", 20, hi=99)],
    }
    for folder, recs in runs.items():
        path = tmp_path / "in" / folder / "throughput-x.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in recs) + "not json\n")
    (tmp_path / "in" / "run3" / "other.txt").write_text("ignored")
    out = tmp_path / "out"
    rc = cli.main(["aggregate", "--from", str(tmp_path / "in" / "run1"),
                   str(tmp_path / "in" / "run2"), str(tmp_path / "in" / "run3"),
                   "--out", str(out)])
    assert rc == 0
    summary = pd.read_csv(out / "summary.csv")
    assert set(pd.read_parquet(out / "summary.parquet")["median"]) == set(summary["median"])
    by = {(r.algorithm, r.build): r for r in summary.itertuples()}
    assert set(by) == {("cstrie", "3.13.1-gil"), ("naive", "3.13.1-gil"),
                       ("cstrie", "3.13.1-nogil")}
    c = by[("cstrie", "3.13.1-gil")]
    assert (c.runs, c.median, c.q1, c.q3, c.iqr, c.min, c.max) == (3, 200, 150, 250, 100, 90,
                                                                   300)
    n = by[("naive", "3.13.1-gil")]
    assert (n.runs, n.median, n.min, n.max) == (3, 20, 5, 99)
    assert n.ratio == pytest.approx(20 / 200)
    assert c.ratio == 1.0
    ft = by[("cstrie", "3.13.1-nogil")]
    assert (ft.runs, ft.median, ft.ratio) == (2, 60, 1.0)
    records = pd.read_parquet(out / "records.parquet")
    assert len(records) == 8  # the skipped cell and the bad lines are left out
    assert set(summary["params"]) == {'{"messages": 100, "subscriptions": 1000}'}
    # a reference named with other case and punctuation, and overwrite protection
    assert cli.main(["aggregate", "--from", str(tmp_path / "in"), "--out", str(out)]) == 2
    assert cli.main(["aggregate", "--from", str(tmp_path / "in"), "--out", str(out),
                     "--reference", "Naive", "--overwrite"]) == 0
    summary = pd.read_csv(out / "summary.csv")
    c = summary[(summary.algorithm == "cstrie") & (summary.build == "3.13.1-gil")].iloc[0]
    assert c.ratio == pytest.approx(200 / 20)


# --- Spark ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark", reason="pyspark not installed (pip install -e '.[pipeline]')")
    pytest.importorskip("pyarrow", reason="pyarrow not installed (the pipeline extra)")
    from experiments.pipeline import sparkutil

    problem = sparkutil.java_problem()
    if problem:
        pytest.skip(problem)
    session = sparkutil.session("local[2]", SPARK_CONF)
    yield session
    session.stop()


SPARK_CONF = [("spark.sql.shuffle.partitions", "4"), ("spark.ui.enabled", "false")]


def _write_parquet(path: Path, columns: dict[str, list], types: dict[str, str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({k: pa.array(v, getattr(pa, types[k])()) for k, v in
                             columns.items()}), path)


# Invalid in every dialect (NATS, AMQP: an empty word; MQTT: '#' sharing a level), unlike
# "", which is AMQP's empty key.
BAD_PATTERN = "a..b#"


def _dataset(tmp: Path, dialect: Dialect, seed: int) -> tuple[Path, Path, list, list]:
    """The suite's alphabet (every pattern, every topic, invalid and null topics, a null id)
    in one file each, plus a generated workload with invalid topics in a second file."""
    from experiments.pipeline.generate import Workload, generate

    generate(Workload(subscriptions=200, messages=1500, dialect=dialect.value, seed=seed,
                      vocabulary=30, levels=(1, 4), invalid_rate=0.05), tmp / "gen")
    rng = random.Random(seed)
    pats = every_pattern(dialect, 3)
    subs = [(p, f"u{rng.randrange(40)}") for p in pats] + [(BAD_PATTERN, "u0"), (None, "u1")]
    tops = all_topics(dialect, 3) + INVALID_TOPICS[dialect] + [None]
    ids = list(range(10**6, 10**6 + len(tops)))
    ids[5] = None  # a null message_id
    subs_dir, msgs_dir = tmp / "subs [1]", tmp / "msgs{a,b}*"  # glob characters: literal
    _write_parquet(subs_dir / "alphabet.parquet",
                   {"pattern": [p for p, _ in subs], "subscriber": [s for _, s in subs]},
                   {"pattern": "string", "subscriber": "string"})
    _write_parquet(msgs_dir / "alphabet.parquet", {"message_id": ids, "topic": tops},
                   {"message_id": "int64", "topic": "string"})
    import pyarrow.parquet as pq

    gsubs = pq.read_table(tmp / "gen" / "subscriptions")
    gmsgs = pq.read_table(tmp / "gen" / "messages")
    pq.write_table(gsubs, subs_dir / "generated.parquet")
    pq.write_table(gmsgs, msgs_dir / "generated.parquet")
    subs += list(zip(gsubs.column(0).to_pylist(), gsubs.column(1).to_pylist()))
    msgs = list(zip(ids, tops)) + list(zip(gmsgs.column(0).to_pylist(),
                                           gmsgs.column(1).to_pylist()))
    return subs_dir, msgs_dir, subs, msgs


def _expected(subs: list, msgs: list, dialect: Dialect):
    """In-process routing: deliveries by CSTrie.lookup, rejections by the validator."""
    trie = CSTrie(dialect)
    valid_pairs = []
    for p, s in subs:
        try:
            trie.subscribe(p, s)
        except (InvalidTopicError, TypeError):
            continue
        valid_pairs.append((p, s))
    deliveries, rejected = set(), {}
    for mid, t in msgs:
        try:
            if mid is None:
                raise TypeError("message_id is null")
            got = trie.lookup(t)
        except (InvalidTopicError, TypeError) as exc:
            rejected[(mid, t)] = str(exc)
            continue
        deliveries.update((mid, s) for s in got)
    return deliveries, rejected, valid_pairs


def _rows(path: Path, *cols: str) -> list[tuple]:
    import pyarrow.parquet as pq

    t = pq.read_table(path, columns=list(cols))
    return list(zip(*(t.column(c).to_pylist() for c in cols)))


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.value)
def test_route_equals_in_process_lookup(spark, tmp_path: Path, dialect: Dialect) -> None:
    from experiments.pipeline.route import RouteOptions, run_route

    subs_path, msgs_path, subs, msgs = _dataset(tmp_path, dialect, seed=len(dialect.value))
    out = tmp_path / "out [2]"
    summary = run_route(RouteOptions(
        subscriptions=str(subs_path), messages=str(msgs_path), out=str(out),
        dialect=dialect.value, master="local[2]", conf=SPARK_CONF, baseline="regex",
        partitions=3, top=5), log=lambda _: None)
    want_deliveries, want_rejected, valid_pairs = _expected(subs, msgs, dialect)

    got = _rows(out / "deliveries", "message_id", "subscriber")
    assert len(got) == len(set(got)), "a delivery was written twice"
    assert set(got) == want_deliveries
    # the alphabet part once more, against the reference matcher itself
    alphabet = {m for m in msgs if m[0] is not None and m[0] >= 10**6}
    for mid, t in alphabet:
        if (mid, t) in want_rejected:
            continue
        ref = {s for p, s in valid_pairs if matches(p, t, dialect)}
        assert {s for i, s in got if i == mid} == ref, (t, mid)

    rejected = _rows(out / "rejected", "message_id", "topic", "reason")
    assert {(m, t): r for m, t, r in rejected} == want_rejected
    assert len(rejected) == len(want_rejected) > 10
    assert any(t is None for _, t, _ in rejected) and any(m is None for m, _, _ in rejected)

    assert summary["messages_in"] == len(msgs)
    assert summary["messages_in"] == summary["messages_routed"] + summary["messages_rejected"]
    assert summary["messages_rejected"] == len(want_rejected)
    assert summary["deliveries"] == len(want_deliveries)
    assert summary["matcher_errors"] == 0
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk["deliveries"] == summary["deliveries"]
    for key in ("seconds", "messages_per_second", "matcher", "dialect", "master", "impl",
                "python", "spark_version"):
        assert on_disk[key] is not None, key
    assert on_disk["dialect"] == dialect.value and on_disk["matcher"] == "cstrie"

    hist = dict(_rows(out / "fanout" / "histogram", "fanout", "messages"))
    assert sum(hist.values()) == summary["messages_routed"]
    assert sum(f * n for f, n in hist.items()) == summary["deliveries"]
    per_message = Counter(mid for mid, _ in want_deliveries)
    per_topic: Counter[str] = Counter()
    for mid, t in msgs:
        if (mid, t) not in want_rejected and per_message[mid]:
            per_topic[t] += per_message[mid]
    best = sorted(per_topic.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    top = _rows(out / "fanout" / "top_topics", "rank", "topic", "deliveries")
    assert [(t, d) for _, t, d in sorted(top)] == best

    assert {r[0] for r in _rows(out / "rejected_subscriptions", "pattern")} == {BAD_PATTERN, None}
    b = summary["baseline"]
    assert b["equal"] and b["only_regex"] == 0 and b["only_matcher"] == 0, b
    assert b["messages"] == len(msgs) and b["speedup"] > 0
    assert b["regex_deliveries"] == b["matcher_deliveries"] == len(want_deliveries)


def test_impls_and_matchers_produce_the_same_stream(spark, tmp_path: Path) -> None:
    from experiments.pipeline.route import IMPLS, route_frame
    from experiments.pipeline.sparkutil import read_parquet

    dialect = Dialect.MQTT
    subs_path, msgs_path, subs, msgs = _dataset(tmp_path, dialect, seed=11)
    pairs, _, _ = routing.check_subscriptions(subs, "cstrie", "mqtt")
    df = read_parquet(spark, str(msgs_path)).repartition(3)
    seen = {}
    id_pairs, names = routing.subscriber_ids(pairs)
    for name, impl in [("cstrie", i) for i in IMPLS] + [("locked_trie", "arrow"),
                                                        ("naive", "rdd"),
                                                        ("inverted_bitmap", "pandas"),
                                                        ("cstrie", "arrow ids"),
                                                        ("locked_trie", "arrow ids"),
                                                        ("inverted_bitmap", "arrow ids")]:
        # "arrow ids": the matchers hold subscriber indices, Arrow turns them into names
        ids = impl == "arrow ids"
        setup = routing.RouteSetup(spark.sparkContext.broadcast(id_pairs if ids else pairs),
                                   name, "mqtt", names=names if ids else None)
        impl = impl.split()[0]
        rows = route_frame(spark, df, setup, impl).collect()
        deliveries = {(r.message_id, r.subscriber) for r in rows if r.kind == routing.DELIVERY}
        rejected = sorted((r.message_id is None, r.message_id, r.subscriber) for r in rows
                          if r.kind == routing.REJECTED)
        hist: dict[int, int] = {}
        for r in rows:
            if r.kind == routing.FANOUT:
                hist[r.message_id] = hist.get(r.message_id, 0) + int(r.subscriber)
        seen[(name, impl, ids)] = (deliveries, rejected, hist)
    first = seen[("cstrie", "arrow", False)]
    assert len(first[0]) > 100 and len(first[1]) > 10
    for key, value in seen.items():
        assert value == first, key


def test_route_errors_name_the_option_column_and_file(spark, tmp_path: Path, capsys) -> None:
    good = tmp_path / "subs.parquet"
    _write_parquet(good, {"pattern": ["a"], "subscriber": ["s"]},
                   {"pattern": "string", "subscriber": "string"})
    bad = tmp_path / "msgs" / "part-1.parquet"
    _write_parquet(tmp_path / "msgs" / "part-0.parquet", {"message_id": [1], "topic": ["a"]},
                   {"message_id": "int64", "topic": "string"})
    _write_parquet(bad, {"message_id": [2], "subject": ["a"]},
                   {"message_id": "int64", "subject": "string"})
    base = ["route", "--subscriptions", str(good), "--master", "local[2]",
            *[x for k, v in SPARK_CONF for x in ("--conf", f"{k}={v}")]]
    rc = cli.main([*base, "--messages", str(tmp_path / "msgs"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and "--messages" in err and "'topic'" in err and str(bad) in err, err
    rc = cli.main([*base, "--messages", str(tmp_path / "nope"), "--out", str(tmp_path / "o")])
    assert rc == 2 and "no such file" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("x")
    rc = cli.main([*base, "--messages", str(tmp_path / "msgs" / "part-0.parquet"), "--out",
                   str(tmp_path / "full")])
    err = capsys.readouterr().err
    assert rc == 2 and "not empty" in err and "--overwrite" in err


def test_missing_java_stops_with_a_clear_message(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java here
    rc = cli.main(["route", "--subscriptions", "s", "--messages", "m", "--out",
                   str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "JDK 17" in err and "openjdk-17-jre-headless" in err and "JAVA_HOME" in err


def test_add_parser_mounts_the_commands_on_a_harness_parser(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="generate needs the pipeline extra (pyarrow)")
    parser = argparse.ArgumentParser(prog="python -m experiments")
    sub = parser.add_subparsers(dest="command", required=True)
    cli.add_parser(sub)
    args = parser.parse_args(["pipeline", "generate", "--out", str(tmp_path),
                              "--subscriptions", "5", "--messages", "5"])
    assert args.command == "pipeline" and cli.run(args) == 0
    assert (tmp_path / "messages" / "part-00000.parquet").is_file()


def test_spark_console_is_quiet(spark) -> None:
    """No progress bars, and the driver JVM started with the quiet log4j2 configuration
    (warnings and errors only; not the local session's start-up notes)."""
    assert spark.sparkContext.getConf().get("spark.ui.showConsoleProgress") == "false"
    jvm = spark._jvm
    assert "cstrie-log4j2-" in str(jvm.java.lang.System.getProperty("log4j2.configurationFile"))
    logger = jvm.org.apache.logging.log4j.LogManager.getLogger
    assert str(logger("org.apache.spark.SparkContext").getLevel()) == "WARN"
    assert str(logger("org.apache.hadoop.util.NativeCodeLoader").getLevel()) == "ERROR"


def test_route_checks_local_paths_before_starting_spark(tmp_path: Path, monkeypatch,
                                                        capsys) -> None:
    """Each local mistake is a one-line error without a Spark start-up (seconds each)."""
    pytest.importorskip("pyarrow", reason="the checks read Parquet footers with pyarrow")
    from experiments.pipeline import route, sparkutil

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(route, "session", no_spark)
    monkeypatch.setattr(route, "java_problem", lambda: None)
    monkeypatch.setattr(sparkutil, "java_problem", lambda: None)
    subs = tmp_path / "subs.parquet"
    _write_parquet(subs, {"pattern": ["a"], "subscriber": ["s"]},
                   {"pattern": "string", "subscriber": "string"})
    msgs = tmp_path / "msgs.parquet"
    _write_parquet(msgs, {"message_id": [1], "topic": ["a"]},
                   {"message_id": "int64", "topic": "string"})
    (tmp_path / "notes.txt").write_text("not parquet")
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("x")
    cases = [
        (["--messages", str(tmp_path / "nope")], "--messages", "no such file"),
        (["--messages", str(tmp_path / "notes.txt")], "--messages", "cannot read"),
        (["--messages", str(tmp_path / "empty")], "--messages", "no data files"),
        (["--messages", str(subs)], "--messages", "'message_id' is missing"),
        (["--messages", str(msgs), "--out", str(tmp_path / "full")], "--out", "not empty"),
    ]
    for extra, option, what in cases:
        args = ["route", "--subscriptions", str(subs), "--out", str(tmp_path / "o"), *extra]
        rc = cli.main(args)
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1, (extra, err)
        assert err[0].startswith(f"error: {option} ") and what in err[0], err


# --- issue 22: nothing lost on any rerun, failure or input layout ---------------------------


def _no_spark(monkeypatch) -> None:
    """Make starting Spark fail the test (the checks must come first), Java or not."""
    from experiments.pipeline import route, sparkutil

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(route, "session", no_spark)
    monkeypatch.setattr(route, "java_problem", lambda: None)
    monkeypatch.setattr(sparkutil, "java_problem", lambda: None)


def _workload(folder: Path, dialect: str = "nats", messages: int = 400) -> Path:
    """A small generated workload (``subscriptions/``, ``messages/``, ``workload.json``)."""
    from experiments.pipeline.generate import Workload, generate

    generate(Workload(subscriptions=60, messages=messages, dialect=dialect, seed=5,
                      vocabulary=8, levels=(1, 3), invalid_rate=0.05), folder)
    return folder


def _route(wl: Path, out: Path, log=lambda _: None, **kwargs) -> dict:
    from experiments.pipeline.route import RouteOptions, run_route

    return run_route(RouteOptions(
        subscriptions=str(wl / "subscriptions"), messages=str(kwargs.pop("messages", None)
                                                              or wl / "messages"),
        out=str(out), master="local[2]", conf=SPARK_CONF, partitions=2, **kwargs), log=log)


def _route_paths(subs: Path, msgs: Path, out: Path, **kwargs) -> dict:
    from experiments.pipeline.route import RouteOptions, run_route

    return run_route(RouteOptions(subscriptions=str(subs), messages=str(msgs), out=str(out),
                                  master="local[2]", conf=SPARK_CONF, partitions=2, **kwargs),
                     log=lambda _: None)


def _leftovers(out: Path) -> list[str]:
    """Entries a run left beside ``out`` (its staging folder, the results it replaced)."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f"{out.name}."))


def test_route_shows_no_marker_or_summary_before_it_is_reconciled(spark, tmp_path: Path
                                                                  ) -> None:
    """Nothing of a run is visible at --out (no _SUCCESS of any output folder, no summary)
    until the run is complete and reconciled: at every stage line but the last, the
    final paths hold none of it."""
    wl = _workload(tmp_path / "wl")
    out = tmp_path / "out"
    seen: list[tuple[str, list[str]]] = []

    def watch(msg: str) -> None:
        markers = ([str(p.relative_to(out)) for p in out.rglob("*")
                    if p.name in ("_SUCCESS", "summary.json")] if out.exists() else [])
        seen.append((msg, markers))

    summary = _route(wl, out, watch)
    early = [(msg, markers) for msg, markers in seen[:-1] if markers]
    assert not early, f"visible at --out before the run was published: {early}"
    assert (out / "_SUCCESS").is_file() and (out / "deliveries" / "_SUCCESS").is_file()
    assert json.loads((out / "summary.json").read_text())["deliveries"] == summary["deliveries"]
    assert _leftovers(out) == []


@pytest.mark.parametrize("failure", ["interrupt", "lost row"])
def test_a_failed_rerun_keeps_the_previous_results(spark, tmp_path: Path, monkeypatch,
                                                   failure: str) -> None:
    """--overwrite replaces the previous results only with a complete, reconciled run: an
    interrupted run, or one whose routed figures do not add up to the input files' rows
    (here Spark is made to lose a row), leaves them as they were, with nothing beside them."""
    wl = _workload(tmp_path / "wl")
    out = tmp_path / "out"
    first = _route(wl, out)
    before = _digest(out)
    assert "summary.json" in before and first["messages_in"] == 400
    if failure == "interrupt":
        def log(msg: str) -> None:  # once the new deliveries are written
            if msg.startswith("[route") and "writing fanout" in msg:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            _route(wl, out, log, overwrite=True)
    else:
        from pyspark.sql.readwriter import DataFrameReader

        read = DataFrameReader.parquet

        def lossy(self, *paths, **options):
            df = read(self, *paths, **options)
            if any("messages" in str(p) for p in paths):
                return df.where("message_id is null or message_id <> 7")
            return df

        monkeypatch.setattr(DataFrameReader, "parquet", lossy)
        with pytest.raises(RuntimeError, match="do not reconcile.*400 rows by their footers"):
            _route(wl, out, overwrite=True)
    assert _digest(out) == before
    assert _leftovers(out) == []


def test_every_file_below_an_input_folder_is_routed(spark, tmp_path: Path) -> None:
    """Plain subfolders, a subfolder of a subfolder, a partition folder beside top-level
    files and a file of zero rows are all read; names Spark skips (_SUCCESS, .crc, a _tmp/
    folder) are skipped; messages_in is the input files' rows by their footers."""
    import pyarrow.parquet as pq

    wl = _workload(tmp_path / "wl", messages=600)
    table = pq.read_table(wl / "messages")
    msgs = tmp_path / "in"
    layout = {"part-0.parquet": (0, 100), "old/part-1.parquet": (100, 200),
              "a/b/part-2.parquet": (200, 300), "date=2026-11-01/part-3.parquet": (300, 400),
              "zero-rows.parquet": (400, 400), "_tmp/part-9.parquet": (500, 600),
              "old/.part-8.parquet": (400, 500)}
    for name, (lo, hi) in layout.items():
        (msgs / name).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table.slice(lo, hi - lo), msgs / name)
    (msgs / "_SUCCESS").write_text("")
    out = tmp_path / "out"
    summary = _route(wl, out, messages=msgs)
    want, rejected, _ = _expected(_rows(wl / "subscriptions", "pattern", "subscriber"),
                                  _rows(wl / "messages", "message_id", "topic")[:400],
                                  Dialect.NATS)
    assert summary["messages_in"] == 400
    assert summary["messages_routed"] + summary["messages_rejected"] == 400
    assert summary["messages_rejected"] == len(rejected) > 0
    assert set(_rows(out / "deliveries", "message_id", "subscriber")) == want
    files = summary["input_files"]["messages"]
    assert files["files"] == 5 and files["rows"] == 400
    assert files["subfolders"] == ["a/b", "date=2026-11-01", "old"]
    assert files["hidden_not_read"] == ["_tmp/", "old/.part-8.parquet"]


def test_route_takes_the_dialect_from_workload_json(tmp_path: Path, monkeypatch,
                                                    capsys) -> None:
    """A --dialect that contradicts the workload.json beside the inputs is one line, before
    Spark starts, unless --dialect-mismatch-ok; without --dialect the recorded one is used."""
    pytest.importorskip("pyarrow", reason="generate needs the pipeline extra (pyarrow)")
    _no_spark(monkeypatch)
    wl = _workload(tmp_path / "wl")
    args = ["route", "--subscriptions", str(wl / "subscriptions"), "--messages",
            str(wl / "messages"), "--out", str(tmp_path / "o"), "--dialect", "mqtt"]
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --dialect mqtt: "), err
    assert str(wl / "workload.json") in err[0] and "nats" in err[0]
    assert "--dialect-mismatch-ok" in err[0]
    assert not (tmp_path / "o").exists()
    from experiments.pipeline.inputs import choose_dialect

    manifest = {str(wl / "workload.json"): "nats"}
    assert choose_dialect(None, manifest, False)[0] == "nats"
    assert "workload.json" in choose_dialect(None, manifest, False)[1]
    assert choose_dialect("mqtt", manifest, True)[0] == "mqtt"
    assert choose_dialect("nats", manifest, False) == ("nats", f"--dialect, as "
                                                               f"{wl / 'workload.json'} says")
    assert choose_dialect(None, {}, False)[0] == "nats"
    with pytest.raises(Exception, match="disagree"):
        choose_dialect(None, {"a/workload.json": "mqtt", "b/workload.json": "nats"}, False)


def test_route_uses_the_recorded_dialect(spark, tmp_path: Path) -> None:
    logged: list[str] = []
    wl = _workload(tmp_path / "wl", dialect="mqtt")
    summary = _route(wl, tmp_path / "out", logged.append)
    assert summary["dialect"] == "mqtt"
    assert summary["dialect_source"] == f"from {wl / 'workload.json'}"
    assert f"dialect mqtt (from {wl / 'workload.json'})" in logged
    forced = _route(wl, tmp_path / "forced", dialect="nats", dialect_mismatch_ok=True)
    assert forced["dialect"] == "nats" and "--dialect-mismatch-ok" in forced["dialect_source"]
    assert forced["deliveries"] != summary["deliveries"]


def test_a_stray_file_in_an_input_folder_is_one_line_before_spark(tmp_path: Path, monkeypatch,
                                                                  capsys) -> None:
    """A file Spark would read that is not Parquet (a README, an empty file) is one line
    naming it, well under 2 s and before Spark starts; Spark's own files are skipped."""
    import time
    import zlib

    pytest.importorskip("pyarrow", reason="the checks read Parquet footers with pyarrow")
    _no_spark(monkeypatch)
    wl = _workload(tmp_path / "wl")
    msgs = wl / "messages"
    (msgs / "_SUCCESS").write_text("")
    # Spark's own checksum file, as Hadoop writes it (a junk one would be refused: see
    # test_a_checksum_file_spark_cannot_use_is_one_line_before_spark)
    data = (msgs / "part-00000.parquet").read_bytes()
    sums = b"".join(zlib.crc32(data[i:i + 512]).to_bytes(4, "big")
                    for i in range(0, len(data), 512))
    (msgs / ".part-00000.parquet.crc").write_bytes(b"crc\0" + (512).to_bytes(4, "big") + sums)
    for stray, why in [("README", "magic bytes"), ("part-1.parquet", "0 bytes"),
                       ("sub/notes.txt", "magic bytes")]:
        (msgs / stray).parent.mkdir(exist_ok=True)
        (msgs / stray).write_text("the messages of 2026-11-01\n" if why == "magic bytes" else "")
        t0 = time.perf_counter()
        rc = cli.main(["route", "--subscriptions", str(wl / "subscriptions"), "--messages",
                       str(msgs), "--out", str(tmp_path / "o")])
        seconds = time.perf_counter() - t0
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1, err
        assert err[0].startswith(f"error: --messages {msgs}: cannot read {msgs / stray} ")
        assert why in err[0] and "move it out" in err[0]
        assert seconds < 2, seconds
        (msgs / stray).unlink()


def test_overwrite_refuses_an_out_holding_other_files(tmp_path: Path, monkeypatch,
                                                      capsys) -> None:
    """--overwrite replaces --out as a whole, so an --out holding files that route does not
    write is refused (before Spark) rather than replaced with them."""
    pytest.importorskip("pyarrow", reason="the checks read Parquet footers with pyarrow")
    _no_spark(monkeypatch)
    wl = _workload(tmp_path / "wl")
    out = tmp_path / "out"
    (out / "deliveries").mkdir(parents=True)
    (out / "notes.txt").write_text("mine")
    rc = cli.main(["route", "--subscriptions", str(wl / "subscriptions"), "--messages",
                   str(wl / "messages"), "--out", str(out), "--overwrite"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "notes.txt" in err[0] and "--out" in err[0], err
    assert (out / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("through", ["os", "hadoop"])
def test_swap_in_replaces_a_folder_and_puts_it_back_on_failure(spark, tmp_path: Path,
                                                               through: str) -> None:
    from experiments.pipeline.sparkutil import Store, remove_tree, swap_in

    store = Store(spark) if through == "hadoop" else None
    name = (lambda p: f"file://{p}") if through == "hadoop" else str
    out, stage, aside = tmp_path / "out", tmp_path / "out.new", tmp_path / "out.old"
    out.mkdir()
    (out / "old.txt").write_text("old")
    stage.mkdir()
    (stage / "new.txt").write_text("new")
    assert swap_in(name(stage), name(out), name(aside), store)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.old"]
    assert [p.name for p in out.iterdir()] == ["new.txt"]
    assert [p.name for p in aside.iterdir()] == ["old.txt"]
    remove_tree(name(aside), store)
    with pytest.raises(Exception):  # noqa: B017 - a stage that is not there
        swap_in(name(tmp_path / "missing"), name(out), name(aside), store)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert [p.name for p in out.iterdir()] == ["new.txt"]
    assert not swap_in(name(out), name(tmp_path / "fresh"), name(aside), store)  # no old one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh"]


def test_an_out_that_is_a_symbolic_link_stays_one(spark, tmp_path: Path) -> None:
    """The link's target is replaced (beside it), and the link then names the new run."""
    wl = _workload(tmp_path / "wl")
    (tmp_path / "disk" / "routed").mkdir(parents=True)
    (tmp_path / "routed").symlink_to(tmp_path / "disk" / "routed")
    _route(wl, tmp_path / "routed")
    summary = _route(wl, tmp_path / "routed", overwrite=True)
    assert (tmp_path / "routed").is_symlink()
    assert json.loads((tmp_path / "routed" / "summary.json").read_text()) == summary
    assert sorted(p.name for p in (tmp_path / "disk").iterdir()) == ["routed"]


def test_non_local_inputs_are_listed_and_counted_through_hadoop(spark, tmp_path: Path,
                                                                monkeypatch) -> None:
    """The path Hadoop file systems take (hdfs://, s3a://), run on file: URIs: the same
    files as the local listing, their rows by the footers read in the JVM, and a stray
    file as one line."""
    from experiments.pipeline import inputs, route, sparkutil

    wl = _workload(tmp_path / "wl")
    msgs = wl / "messages"
    (msgs / "old" / "_tmp").mkdir(parents=True)
    (msgs / "part-00000.parquet").rename(msgs / "old" / "part-0.parquet")
    (msgs / "old" / "_tmp" / "README").write_text("skipped")
    (msgs / "_SUCCESS").write_text("")
    local = inputs.check_input(str(msgs), "--messages", inputs.MESSAGE_COLUMNS)
    monkeypatch.setattr(inputs, "is_local", lambda path: False)
    store = sparkutil.Store(spark)
    remote = inputs.check_input(f"file://{msgs}", "--messages", inputs.MESSAGE_COLUMNS, spark,
                                store)
    assert remote.rows == local.rows == 400 and len(remote.files) == len(local.files) == 1
    assert remote.files[0].endswith("/old/part-0.parquet") and remote.folders == ("old",)
    assert remote.hidden == local.hidden == ("old/_tmp/",)
    assert "Hadoop" in remote.counted_by and "pyarrow" in local.counted_by
    (msgs / "README").write_text("not parquet")
    with pytest.raises(sparkutil.PipelineError) as err:
        inputs.check_input(f"file://{msgs}", "--messages", inputs.MESSAGE_COLUMNS, spark, store)
    assert "README" in str(err.value) and "\n" not in str(err.value)


# --- the matcher is built once per Python worker (a separate driver process) ----------------

#: Put first on the Python workers' path, it wraps ``matchers.build`` and the mapInArrow body
#: to append ``build <pid>`` / ``task <pid>`` to $CSTRIE_PROBE_LOG: a count of builds and tasks
#: that does not rely on the pipeline's own report.
_PROBE = '''
import os
_log = os.environ.get("CSTRIE_PROBE_LOG")
if _log:
    from experiments.pipeline import adapters as _r, matchers as _m

    def _note(what):
        with open(_log, "a") as fh:
            fh.write(f"{what} {os.getpid()}\\n")

    _build, _arrow = _m.build, _r.arrow_partition

    def build(*args, **kwargs):
        _note("build")
        return _build(*args, **kwargs)

    def arrow_partition(setup, batches):
        _note("task")
        yield from _arrow(setup, batches)

    _m.build, _r.arrow_partition = build, arrow_partition
'''

ROOT = Path(__file__).resolve().parents[1]


def _driver_env(**extra: str) -> dict[str, str]:
    """The environment of a driver started as a subprocess: this checkout first on the path,
    and no interpreter choice inherited from this process (the module's session sets
    PYSPARK_PYTHON here)."""
    import os

    env = {k: v for k, v in os.environ.items()
           if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYSPARK_GATEWAY_PORT",
                        "PYSPARK_GATEWAY_SECRET", "SPARK_HOME")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def test_matcher_is_built_once_per_python_worker_not_per_task(spark, tmp_path: Path) -> None:
    """8 partitions on 2 cores: the tasks run in (about) 2 reused Python workers, and each
    worker builds the matcher once, not once per task; the summary says the same."""
    import subprocess
    import sys

    from experiments.pipeline.generate import Workload, generate

    generate(Workload(subscriptions=3000, messages=40_000, seed=3), tmp_path / "wl")
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(_PROBE)
    log = tmp_path / "probe.log"
    out = tmp_path / "out"
    env = _driver_env(PYTHONPATH=f"{probe}:{ROOT}", CSTRIE_PROBE_LOG=str(log))
    cmd = [sys.executable, "-m", "experiments.pipeline", "route", "--master", "local[2]",
           "--partitions", "8", "--subscriptions", str(tmp_path / "wl" / "subscriptions"),
           "--messages", str(tmp_path / "wl" / "messages"), "--out", str(out),
           *[x for k, v in SPARK_CONF for x in ("--conf", f"{k}={v}")]]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [line.split() for line in log.read_text().splitlines()]
    tasks = [int(pid) for what, pid in lines if what == "task"]
    builds = [int(pid) for what, pid in lines if what == "build"]
    workers = set(tasks)
    assert len(tasks) == 8, lines
    assert len(workers) < len(tasks), f"no Python worker was reused: {lines}"
    assert len(builds) <= len(workers), (f"{len(builds)} builds in {len(workers)} Python "
                                        f"workers for {len(tasks)} tasks")
    assert len(builds) == len(set(builds)), "a worker built the matcher twice"
    report = json.loads((out / "summary.json").read_text())["matcher_builds"]
    assert report["tasks"] == 8 and report["builds"] == len(builds), report
    assert report["reused"] == 8 - len(builds)
    assert report["worker_processes"] == len(workers)
    assert report["build_seconds"]["max"] > 0 and report["rss_mb"]["max"] > 0, report
    tasks = json.loads((out / "summary.json").read_text())["tasks"]
    assert set(tasks["phase_seconds"]) == {"input", "lookup", "arrow", "output"}, tasks
    assert tasks["phase_seconds"]["lookup"] > 0 and tasks["python_cpu_seconds"] > 0, tasks


# --- hot topics: --salt spreads them, the figures stay exact ---------------------------------


def test_split_topic_figures_add_up_across_partitions() -> None:
    """A split topic routed in two partitions: each sends its share, not its top list only,
    so summing the rows per topic gives the figures of one partition routing everything."""
    pairs = [("a.*", "s1"), ("a.>", "s2"), ("b", "s1"), ("c", "s3")]
    msgs = [(i, t) for i, t in enumerate(["a.x"] * 6 + ["b"] * 3 + ["c"] * 7 + ["d"])]

    def rows(parts: list[list], split: frozenset[str]) -> dict[str, list[int]]:
        merged: dict[str, list[int]] = {}
        for part in parts:
            router = routing.Router(matchers.build("cstrie", "nats", pairs))
            router.route([i for i, _ in part], [t for _, t in part])
            for kind, ids, _, values in routing.figure_groups(router, 1, split):
                if kind == routing.TOPIC:
                    for n, v in zip(ids, values):
                        fanout, _, topic = v.partition(":")
                        merged.setdefault(topic, [int(fanout), 0])[1] += n
        return merged

    whole = rows([msgs], frozenset())
    assert whole == {"a.x": [2, 6]}  # top 1
    # "a.x" split over both halves (3 messages each), "b" and "c" each in one
    halves = [msgs[0:3] + msgs[6:9], msgs[3:6] + msgs[9:]]
    merged = rows(halves, frozenset({"a.x"}))
    assert merged["a.x"] == [2, 6]
    best = sorted(merged.items(), key=lambda kv: (-kv[1][0] * kv[1][1], kv[0]))[:1]
    assert best == [("a.x", [2, 6])]
    # without the split set, each half sends only its own top 1: the sum is not the figure
    # ("c", 7 deliveries, beats its 6 in the second half, so "a.x" loses half its messages)
    assert rows(halves, frozenset())["a.x"] == [2, 3]


def test_salt_spreads_a_hot_topic_with_the_same_outputs(spark, tmp_path: Path) -> None:
    """Half the messages on one topic: without --salt one task routes it all (rows per
    task far above the median); with --salt no task has more than 2x the median, and every
    output and figure is the same."""
    from experiments.pipeline.generate import Workload, generate, hot_topic
    from experiments.pipeline.route import RouteOptions, run_route

    wl = Workload(subscriptions=400, messages=40_000, seed=5, vocabulary=40, hot_share=0.5,
                  invalid_rate=0.02)
    generate(wl, tmp_path / "wl")
    runs = {}
    for salt in (False, True):
        out = tmp_path / f"out-{salt}"
        runs[salt] = (out, run_route(RouteOptions(
            subscriptions=str(tmp_path / "wl" / "subscriptions"),
            messages=str(tmp_path / "wl" / "messages"), out=str(out), master="local[2]",
            conf=SPARK_CONF, partitions=4, top=5, salt=salt), log=lambda _: None))
    (plain, s0), (salted, s1) = runs[False], runs[True]
    assert s0["tasks"]["messages"]["max_over_median"] > 3, s0["tasks"]
    assert s1["tasks"]["messages"]["max_over_median"] <= 2, s1["tasks"]
    assert list(s1["salt"]["hot_topics"]) == [hot_topic(wl)] and s0["salt"] is None
    assert s1["tasks"]["count"] == s0["tasks"]["count"] == 4
    for key in ("messages_in", "messages_routed", "messages_rejected", "deliveries",
                "fanout", "top_topics"):
        assert s0[key] == s1[key], key
    assert s1["top_topics"][0]["topic"] == hot_topic(wl)
    for name, cols in [("deliveries", ("message_id", "subscriber")),
                       ("rejected", ("message_id", "topic", "reason")),
                       ("fanout/histogram", ("fanout", "messages")),
                       ("fanout/top_topics", ("rank", "topic", "fanout", "messages",
                                              "deliveries"))]:
        a, b = _rows(plain / name, *cols), _rows(salted / name, *cols)
        assert sorted(a, key=repr) == sorted(b, key=repr), name


def test_a_stale_crc_file_is_one_line_before_spark(spark, tmp_path: Path, monkeypatch,
                                                   capsys) -> None:
    """A Parquet file written by Spark has a Hadoop checksum beside it (``.NAME.crc``);
    rewritten by a tool that leaves that checksum as it was, Hadoop refuses to read it
    (ChecksumException, a Java traceback of some 280 lines, exit status 1). It is one line
    naming the file, its checksum file and what to do, exit status 2, before Spark starts;
    a checksum that matches is no error."""
    import pyarrow.parquet as pq

    from experiments.pipeline import inputs

    wl = _workload(tmp_path / "wl")
    msgs = tmp_path / "spark-written"
    spark.read.parquet(str(wl / "messages")).coalesce(1).write.parquet(str(msgs))
    (data,) = msgs.glob("part-*.parquet")
    crc = msgs / f".{data.name}.crc"
    assert crc.is_file()
    assert inputs.check_input(str(msgs), "--messages", inputs.MESSAGE_COLUMNS).rows == 400
    pq.write_table(pq.read_table(data).slice(0, 300), data)  # other bytes, the .crc left
    _no_spark(monkeypatch)
    rc = cli.main(["route", "--subscriptions", str(wl / "subscriptions"), "--messages",
                   str(msgs), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: --messages {msgs}: {data} ") and str(crc) in err[0]
    assert "delete" in err[0] and "rewrite" in err[0], err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("sums", [b"", b"crc", b"xyz\0\0\0\2\0", b"crc\0\0\0\0\0"],
                         ids=["empty", "short", "foreign header", "zero bytes per checksum"])
def test_a_checksum_file_spark_cannot_use_is_one_line_before_spark(
        spark, tmp_path: Path, monkeypatch, capsys, sums: bytes) -> None:
    """A ``.NAME.crc`` that is no Hadoop checksum file (empty, cut short, another header, 0
    bytes per checksum) was taken for none: but Spark 4.3's Hadoop fails reading the file's
    columns beside it (``EOFException: Read past End of File``; ``/ by zero``), a 134-line
    traceback, exit status 1. It is one line naming the checksum file, exit status 2, before
    Spark starts."""
    wl = _workload(tmp_path / "wl")
    (data,) = (wl / "messages").glob("*.parquet")
    crc = data.parent / f".{data.name}.crc"
    crc.write_bytes(sums)
    with pytest.raises(Exception, match="Read past End of File|by zero"):  # why it is refused
        spark.read.parquet(str(data)).select("topic").collect()
    _no_spark(monkeypatch)
    rc = cli.main(["route", "--subscriptions", str(wl / "subscriptions"), "--messages",
                   str(wl / "messages"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1, err
    assert err[0].startswith(f"error: --messages {wl / 'messages'}: {crc}, beside {data}, ")
    assert err[0].endswith("delete it"), err
    assert not (tmp_path / "o").exists()


def test_a_file_that_goes_stale_during_the_run_is_one_line(spark, tmp_path: Path, monkeypatch,
                                                           capsys) -> None:
    """The same stale checksum met by Spark itself (the file changed after route checked it,
    here: the check skipped) ends in one line naming the file, exit status 2, not a Java
    traceback."""
    import pyarrow.parquet as pq

    from experiments.pipeline import inputs

    wl = _workload(tmp_path / "wl")
    msgs = tmp_path / "spark-written"
    spark.read.parquet(str(wl / "messages")).coalesce(1).write.parquet(str(msgs))
    (data,) = msgs.glob("part-*.parquet")
    pq.write_table(pq.read_table(data).slice(0, 300), data)
    monkeypatch.setattr(inputs, "_check_crc", lambda f, where: None)
    rc = cli.main(["route", "--subscriptions", str(wl / "subscriptions"), "--messages",
                   str(msgs), "--out", str(tmp_path / "o"), "--master", "local[2]"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2, err
    assert err[-1].startswith(f"error: file:{data} does not match its Hadoop checksum file"), err
    assert "Traceback" not in "\n".join(err)
    assert not (tmp_path / "o").exists()


def test_a_stale_checksum_under_a_path_with_a_space_is_one_line() -> None:
    """Hadoop's ChecksumException names the file as it is, spaces and all (``file:/data/st
    messages/part-0.parquet at 5120 exp: ... got: ...``, as Spark 4.3 reports it): the one-line
    error names the whole path, not its part up to the first space (which did not match at all:
    the Java traceback, exit status 1)."""
    from experiments.pipeline.sparkutil import checksum_error

    path = "file:/tmp/st messages/msgs{a,b}* [1]/part-00000-8aeef5ca-c000.snappy.parquet"
    java = ("org.apache.spark.SparkException: [FAILED_READ_FILE.CANNOT_READ_FILE_FOOTER] ...\n"
            f"Caused by: org.apache.hadoop.fs.ChecksumException: Checksum error: {path} at 5120 "
            "exp: -233432968 got: 2143210401\n\tat org.apache.hadoop.fs.FSInputChecker")
    err = checksum_error(RuntimeError(java))
    assert err is not None
    assert str(err).startswith(f"{path} does not match its Hadoop checksum file (from byte "
                               "5120)"), err
    assert checksum_error(RuntimeError("Checksum error: elsewhere")) is None


def test_duplicate_message_ids_are_counted_not_dropped(spark, tmp_path: Path) -> None:
    """Rows are not deduplicated (documented): a message_id that occurs twice is routed twice.
    The summary counts such rows (``duplicate_message_ids``: rows whose message_id an earlier
    row has too) and one log line says so; a set without duplicates counts 0 and says nothing."""
    import shutil

    wl = _workload(tmp_path / "wl")
    logged: list[str] = []
    clean = _route(wl, tmp_path / "clean", logged.append)
    assert clean["duplicate_message_ids"] == 0
    assert not [line for line in logged if "message_id" in line and "more than once" in line]
    msgs = tmp_path / "twice"
    shutil.copytree(wl / "messages", msgs / "a")
    shutil.copytree(wl / "messages", msgs / "b")
    logged.clear()
    summary = _route(wl, tmp_path / "out", logged.append, messages=msgs)
    assert summary["messages_in"] == 800
    assert summary["duplicate_message_ids"] == 400
    assert summary["deliveries"] == 2 * clean["deliveries"]  # routed twice, not deduplicated
    said = [line for line in logged if "more than once" in line]
    assert len(said) == 1 and "400" in said[0], logged


def test_deliveries_as_ids_hold_the_same_deliveries(spark, tmp_path: Path) -> None:
    """``--deliveries ids``: one row per message with its subscribers' ids, and
    ``subscribers/`` mapping each id to its name; decoded, the same deliveries as the rows
    form, and the same rejections (a non-ASCII topic and reason included), fanout and top
    topics, through the UTF-8 bytes the small kinds travel as."""
    import pyarrow.parquet as pq

    subs_path, msgs_path, _, _ = _dataset(tmp_path, Dialect.AMQP, seed=4)
    extra = msgs_path / "unicode.parquet"
    _write_parquet(extra, {"message_id": [10**7, 10**7 + 1], "topic": ["caf\u00e9.b", "caf\u00e9..\u00fc"]},
                   {"message_id": "int64", "topic": "string"})
    runs = {}
    for form in ("rows", "ids"):
        runs[form] = _route_paths(subs_path, msgs_path, tmp_path / form, deliveries=form,
                                  dialect="amqp")
    rows, ids = runs["rows"], runs["ids"]
    assert ids["deliveries_form"] == "ids" and rows["deliveries_form"] == "rows"
    for key in ("messages_in", "messages_routed", "messages_rejected", "deliveries", "fanout",
                "top_topics"):
        assert ids[key] == rows[key], key
    names = dict(_rows(tmp_path / "ids" / "subscribers", "subscriber_id", "subscriber"))
    table = pq.read_table(tmp_path / "ids" / "deliveries")
    assert table.schema.names == ["message_id", "subscriber_ids"]
    decoded = {(m, names[i]) for m, got in _rows(tmp_path / "ids" / "deliveries", "message_id",
                                                 "subscriber_ids") for i in got}
    assert decoded == set(_rows(tmp_path / "rows" / "deliveries", "message_id", "subscriber"))
    assert len(decoded) == rows["deliveries"] > 100
    rejected = sorted(_rows(tmp_path / "rows" / "rejected", "message_id", "topic", "reason"),
                      key=repr)
    assert sorted(_rows(tmp_path / "ids" / "rejected", "message_id", "topic", "reason"),
                  key=repr) == rejected
    assert any(t == "caf\u00e9..\u00fc" for _, t, _ in rejected)
