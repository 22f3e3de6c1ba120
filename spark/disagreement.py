"""Report 5: brokers known to one name server but not another (the AP design's inconsistency window).

Name servers never talk to each other: each one learns a broker from its own registrations and
forgets it on its own expiry scan, so for a while a client may get a route with the broker from one
server and without it from another. From ``liveness.sessions`` (when each server knew each broker)
and each server's observed span (first to last event), a sweep over the session boundaries of each
broker gives the intervals where at least one server *active at that time* knows the broker and at
least one other active server does not. Only the boundaries are processed (no per-minute expansion
of sessions), so the cost follows the number of lifecycle events. Servers are pivoted into columns,
so the report passes the list of server ids (from the collected ``servers`` table).

Intervals shorter than ``min_ms`` (default 1 s: the jitter of one registration reaching the servers)
are dropped. ``ns_disagreement_minutes`` lists, per minute, each broker in disagreement during it and
for how many milliseconds of that minute.
"""

from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

INTERVAL_SCHEMA = T.StructType([
    T.StructField("cluster", T.StringType()), T.StructField("brokerName", T.StringType()),
    T.StructField("brokerAddr", T.StringType()), T.StructField("start", T.LongType()),
    T.StructField("end", T.LongType()), T.StructField("durationMs", T.LongType()),
    T.StructField("knownBy", T.ArrayType(T.StringType())), T.StructField("missingOn", T.ArrayType(T.StringType())),
])


def _deltas(sess, windows):
    """(brokerAddr, ts, server, dKnown, dActive) at every session and server-span boundary."""
    def delta(df, ts, known, active):
        return df.select("brokerAddr", F.col(ts).alias("ts"), "server", F.lit(known).alias("dk"),
                         F.lit(active).alias("da"))

    known = sess.select("brokerAddr", "server", "start", "end")
    spans = known.select("brokerAddr").distinct().crossJoin(F.broadcast(windows.select("server", "firstTs", "lastTs")))
    return (delta(known, "start", 1, 0).unionByName(delta(known, "end", -1, 0))
            .unionByName(delta(spans, "firstTs", 0, 1)).unionByName(delta(spans, "lastTs", 0, -1)))


def intervals(sess, windows, servers, min_ms=1000):
    spark = sess.sparkSession
    if len(servers) < 2:
        return spark.createDataFrame([], INTERVAL_SCHEMA)
    deltas = _deltas(sess, windows)
    def of(column, i, server):
        return F.sum(F.when(F.col("server") == server, F.col(column)).otherwise(0)).alias("%s%d" % (column, i))

    per_ts = deltas.groupBy("brokerAddr", "ts").agg(*[of("dk", i, s) for i, s in enumerate(servers)],
                                                    *[of("da", i, s) for i, s in enumerate(servers)])
    w = Window.partitionBy("brokerAddr").orderBy("ts")
    running = w.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    state = per_ts.select("brokerAddr", "ts",
                          *[F.sum("dk%d" % i).over(running).alias("k%d" % i) for i in range(len(servers))],
                          *[F.sum("da%d" % i).over(running).alias("a%d" % i) for i in range(len(servers))],
                          F.lead("ts").over(w).alias("nextTs"))
    known_by = F.array_compact(F.array(*[F.when((F.col("k%d" % i) > 0) & (F.col("a%d" % i) > 0), F.lit(s))
                                         for i, s in enumerate(servers)]))
    missing_on = F.array_compact(F.array(*[F.when((F.col("k%d" % i) <= 0) & (F.col("a%d" % i) > 0), F.lit(s))
                                           for i, s in enumerate(servers)]))
    state = state.select("brokerAddr", "ts", "nextTs", known_by.alias("knownBy"), missing_on.alias("missingOn"))
    dis = (F.size("knownBy") > 0) & (F.size("missingOn") > 0)
    state = state.select("*", dis.alias("dis"))
    prev = [F.lag(c).over(w) for c in ("dis", "knownBy", "missingOn")]
    changed = (F.coalesce(prev[0] != F.col("dis"), F.lit(True)) | F.coalesce(prev[1] != F.col("knownBy"), F.lit(True))
               | F.coalesce(prev[2] != F.col("missingOn"), F.lit(True)))
    state = state.select("*", changed.cast("int").alias("_chg"))
    state = state.select("*", F.sum("_chg").over(running).alias("island"))
    islands = (state.filter(F.col("dis") & F.col("nextTs").isNotNull())
               .groupBy("brokerAddr", "island")
               .agg(F.min("ts").alias("start"), F.max("nextTs").alias("end"),
                    F.first("knownBy").alias("knownBy"), F.first("missingOn").alias("missingOn")))
    names = sess.groupBy("brokerAddr").agg(F.max("cluster").alias("cluster"), F.max("brokerName").alias("brokerName"))
    duration = F.col("end") - F.col("start")
    return (islands.filter(duration >= min_ms).join(names, "brokerAddr", "left")
            .select("cluster", "brokerName", "brokerAddr", "start", "end", duration.alias("durationMs"),
                    "knownBy", "missingOn"))


def minutes(iv):
    """(minute, broker): in disagreement during that minute, for ``disagreeMs`` of it."""
    first = F.floor(F.col("start") / 60000) * 60000
    last = F.floor((F.col("end") - 1) / 60000) * 60000
    exploded = iv.select("*", F.explode(F.sequence(first.cast("long"), last.cast("long"), F.lit(60000).cast("long")))
                         .alias("minute"))
    overlap = F.least(F.col("end"), F.col("minute") + 60000) - F.greatest(F.col("start"), F.col("minute"))
    return (exploded.groupBy("minute", "brokerAddr")
            .agg(F.max("cluster").alias("cluster"), F.max("brokerName").alias("brokerName"),
                 F.sum(overlap).alias("disagreeMs"),
                 F.sort_array(F.array_distinct(F.flatten(F.collect_list("knownBy")))).alias("knownBy"),
                 F.sort_array(F.array_distinct(F.flatten(F.collect_list("missingOn")))).alias("missingOn"))
            .select("minute", "cluster", "brokerName", "brokerAddr", "disagreeMs", "knownBy", "missingOn"))
