"""Report 4: topic route churn: whose broker set changed most, which topics vanished and how long.

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



def _empty():
    return F.array().cast("array<string>")


def topic_events(events):
    """One row per (event, topic): an event for several topics (``topics``) is expanded."""
    te = events.filter(F.col("event") == "topic_route_changed")
    te = te.withColumn("topic", F.explode_outer(F.coalesce(F.col("topics"), F.array(F.col("topic")))))
    return te.filter(F.col("topic").isNotNull())


def _size(column):
    return F.size(F.coalesce(F.col(column), _empty()))


def vanished(te, windows):
    """One row per (server, topic, vanishing): when, until when, how long, which brokers it had."""
    state = te.filter(F.col("after").isNotNull()).select(
        "server", "topic", "ts", (F.size("after") > 0).alias("present"), F.col("before").alias("lastBrokers"))
    w = Window.partitionBy("server", "topic").orderBy("ts", "present")
    state = state.select("*", F.lag("present").over(w).alias("_prev"))
    transitions = state.filter(F.col("present") != F.coalesce(F.col("_prev"), F.lit(True)))
    transitions = transitions.select("*", F.lead("ts").over(w).alias("returnedAt"))
    gone = transitions.filter(~F.col("present")).join(F.broadcast(windows.select("server", "lastTs")), "server", "left")
    until = F.coalesce(F.col("returnedAt"), F.greatest(F.col("lastTs"), F.col("ts")))
    return gone.select("server", "topic", F.col("ts").alias("vanishedAt"), "returnedAt",
                       (until - F.col("ts")).alias("vanishedMs"), F.col("returnedAt").isNotNull().alias("returned"),
                       "lastBrokers")


def churn(te, gone):
    """Per topic: changes, brokers added/removed, vanishings and total time vanished (busiest server)."""
    brokers = F.concat(*[F.coalesce(F.col(c), _empty()) for c in ("before", "after", "added", "removed")])
    per_server = (te.groupBy("topic", "server")
                  .agg(F.countDistinct("ts").alias("changes"), F.count(F.lit(1)).alias("events"),
                       F.sum(_size("added")).alias("added"), F.sum(_size("removed")).alias("removed"),
                       F.array_distinct(F.flatten(F.collect_list(brokers))).alias("brokers"),
                       F.min("ts").alias("firstChange"), F.max("ts").alias("lastChange")))
    gone_per_server = (gone.groupBy("topic", "server")
                       .agg(F.count(F.lit(1)).alias("vanishings"), F.sum("vanishedMs").alias("vanishedMs")))
    joined = per_server.join(gone_per_server, ["topic", "server"], "left")
    return (joined.groupBy("topic")
            .agg(F.max("changes").alias("changes"), F.sum("events").alias("events"),
                 F.countDistinct("server").alias("servers"), F.max("added").alias("brokersAdded"),
                 F.max("removed").alias("brokersRemoved"),
                 F.max(F.coalesce(F.col("vanishings"), F.lit(0))).alias("vanishings"),
                 F.max(F.coalesce(F.col("vanishedMs"), F.lit(0))).alias("vanishedMs"),
                 F.sort_array(F.array_distinct(F.flatten(F.collect_list("brokers")))).alias("brokers"),
                 F.min("firstChange").alias("firstChange"), F.max("lastChange").alias("lastChange")))
