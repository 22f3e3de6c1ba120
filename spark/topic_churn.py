"""Report 4: topic route churn: whose broker set changed most, which topics vanished and how long.

The ordering work is done in Spark (``transitions``, ``per_server``); joining the collected rows with the
servers' last events and taking the busiest server per topic is done on the driver (``vanished``,
``churn``): both inputs are small, and in Spark each join with the server spans was a broadcast job.

Every server logs the same change when a broker comes or goes, so per topic the numbers are taken on
the server that saw the most (``max`` over servers), not summed. A change is one distinct timestamp
per (server, topic): the Java log writes a removal and the "all queue" line for one change.

A topic *vanishes* on a server when its broker set becomes empty (``after == []``: our
``topic_route_changed``, or Java's "remove the topic all queue" lines) and *returns* with the next
non-empty set; a topic still gone at the end of that server's log is counted until its last event
(``returned`` false). From Java logs a broker joining an existing topic is not logged, so ``added``
is a lower bound there.
"""

from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark.collect import LocalTable, last_events, sql_max, sql_min


def _empty():
    return F.array().cast("array<string>")


def topic_events(events):
    """One row per (event, topic): an event for several topics (``topics``) is expanded."""
    te = events.filter(F.col("event") == "topic_route_changed")
    te = te.withColumn("topic", F.explode_outer(F.coalesce(F.col("topics"), F.array(F.col("topic")))))
    return te.filter(F.col("topic").isNotNull())


def _size(column):
    return F.size(F.coalesce(F.col(column), _empty()))


def transitions(te):
    """One row per (server, topic, vanishing): when, when it returned (NULL if it did not), which brokers
    it had. How long it was gone needs the server's last event for a topic still gone: ``vanished`` adds
    it on the driver."""
    state = te.filter(F.col("after").isNotNull()).select(
        "server", "topic", "ts", (F.size("after") > 0).alias("present"), F.col("before").alias("lastBrokers"))
    w = Window.partitionBy("server", "topic").orderBy("ts", "present")
    state = state.select("*", F.lag("present").over(w).alias("_prev"))
    changed = state.filter(F.col("present") != F.coalesce(F.col("_prev"), F.lit(True)))
    changed = changed.select("*", F.lead("ts").over(w).alias("returnedAt"))
    return changed.filter(~F.col("present")).select("server", "topic", F.col("ts").alias("vanishedAt"), "returnedAt",
                                                    "lastBrokers")


def per_server(te):
    """Per (topic, server): changes, events, brokers added/removed, every broker named, first and last change.
    ``churn`` takes the busiest server per topic on the driver."""
    brokers = F.concat(*[F.coalesce(F.col(c), _empty()) for c in ("before", "after", "added", "removed")])
    return (te.groupBy("topic", "server")
            .agg(F.countDistinct("ts").alias("changes"), F.count(F.lit(1)).alias("events"),
                 F.sum(_size("added")).alias("added"), F.sum(_size("removed")).alias("removed"),
                 F.array_distinct(F.flatten(F.collect_list(brokers))).alias("brokers"),
                 F.min("ts").alias("firstChange"), F.max("ts").alias("lastChange")))


_L = T.LongType()
VANISHED_SCHEMA = T.StructType([
    T.StructField("server", T.StringType()), T.StructField("topic", T.StringType()),
    T.StructField("vanishedAt", _L), T.StructField("returnedAt", _L), T.StructField("vanishedMs", _L),
    T.StructField("returned", T.BooleanType()), T.StructField("lastBrokers", T.ArrayType(T.StringType())),
])
CHURN_SCHEMA = T.StructType([
    T.StructField("topic", T.StringType()), T.StructField("changes", _L), T.StructField("events", _L),
    T.StructField("servers", _L), T.StructField("brokersAdded", _L), T.StructField("brokersRemoved", _L),
    T.StructField("vanishings", _L), T.StructField("vanishedMs", _L),
    T.StructField("brokers", T.ArrayType(T.StringType())), T.StructField("firstChange", _L),
    T.StructField("lastChange", _L),
])


def _sorted_distinct(values):
    """``sort_array(array_distinct(...))``: ascending, one NULL first if any."""
    distinct = set(values)
    return ([None] if None in distinct else []) + sorted(v for v in distinct if v is not None)


def vanished(gone, servers):
    """``topic_vanished`` from the collected ``transitions`` and ``servers`` (``collect.LocalTable``): a topic
    still gone is counted until its server's last event (or its own vanishing, if later)."""
    last = last_events(servers)
    rows = []
    for r in gone.dicts():
        until = r["returnedAt"] if r["returnedAt"] is not None else sql_max([last.get(r["server"]), r["vanishedAt"]])
        rows.append((r["server"], r["topic"], r["vanishedAt"], r["returnedAt"],
                     None if until is None or r["vanishedAt"] is None else until - r["vanishedAt"],
                     r["returnedAt"] is not None, r["lastBrokers"]))
    return LocalTable(VANISHED_SCHEMA, rows)


def churn(per_server_rows, gone):
    """``topic_churn`` from the collected ``per_server`` rows and ``topic_vanished``: per topic the numbers
    of the server that saw most (``max`` over servers), events summed, brokers merged."""
    vanishings = {}
    for r in gone.dicts():
        key = (r["topic"], r["server"])
        count, ms = vanishings.get(key, (0, None))
        vanishings[key] = (count + 1, ms if r["vanishedMs"] is None else (ms or 0) + r["vanishedMs"])
    per_topic = {}
    for r in per_server_rows.dicts():
        per_topic.setdefault(r["topic"], []).append(r)
    rows = []
    for topic, group in per_topic.items():
        gone_counts = [vanishings.get((topic, r["server"]), (0, None)) for r in group]
        rows.append((topic, sql_max(r["changes"] for r in group), sum(r["events"] for r in group),
                     len({r["server"] for r in group if r["server"] is not None}),
                     sql_max(r["added"] for r in group), sql_max(r["removed"] for r in group),
                     sql_max(count for count, _ in gone_counts), sql_max(ms or 0 for _, ms in gone_counts),
                     _sorted_distinct(b for r in group for b in (r["brokers"] or [])),
                     sql_min(r["firstChange"] for r in group), sql_max(r["lastChange"] for r in group)))
    return LocalTable(CHURN_SCHEMA, rows)
