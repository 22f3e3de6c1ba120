"""Report 2: heartbeat intervals (the gaps of ``liveness.timeline``) and brokers drifting past 30 s.

Brokers re-register every 30 s (``registerNameServerPeriod``); the NameServer expires them after
120 s of silence. An interval above ``period + tolerance`` (30 s + 5 s by default) is *late*; a broker
with late intervals is listed in ``heartbeat_drift`` with how many, how late and when, per server (a
broker late on one server only points at the network path to that server).

The distribution is a histogram of whole seconds, per cluster, capped at ``MAX_BUCKET_S`` (the last
bucket holds everything longer).
"""

from pyspark.sql import functions as F

MAX_BUCKET_S = 300


def intervals(tl):
    return tl.filter(F.col("gap").isNotNull())


def distribution(tl):
    """(cluster, bucketS, intervals): bucketS = whole seconds of the interval, capped at MAX_BUCKET_S."""
    bucket = F.least(F.floor(F.col("gap") / 1000), F.lit(MAX_BUCKET_S)).cast("int")
    return (intervals(tl).groupBy(F.coalesce(F.col("cluster"), F.lit("")).alias("cluster"), bucket.alias("bucketS"))
            .agg(F.count(F.lit(1)).alias("intervals")))


def drift(tl, period_s=30, tolerance_s=5):
    """Brokers (per server) with intervals longer than ``period_s + tolerance_s`` seconds."""
    limit_ms = int((period_s + tolerance_s) * 1000)
    late = F.col("gap") > limit_ms
    pct = F.percentile_approx("gap", [0.5, 0.99], 10000)
    agg = (intervals(tl).groupBy("server", "brokerAddr")
           .agg(F.max("cluster").alias("cluster"), F.max("brokerName").alias("brokerName"),
                F.count(F.lit(1)).alias("intervals"),
                F.sum(late.cast("int")).alias("lateIntervals"), pct.alias("_p"), F.max("gap").alias("maxMs"),
                F.min(F.when(late, F.col("ts"))).alias("firstLateAt"),
                F.max(F.when(late, F.col("ts"))).alias("lastLateAt")))
    return (agg.filter(F.col("lateIntervals") > 0)
            .select("cluster", "brokerName", "brokerAddr", "server", "intervals", "lateIntervals",
                    F.round(F.col("lateIntervals") / F.col("intervals"), 4).alias("lateRatio"),
                    F.col("_p")[0].alias("p50Ms"), F.col("_p")[1].alias("p99Ms"), "maxMs",
                    "firstLateAt", "lastLateAt", F.lit(limit_ms).cast("long").alias("thresholdMs")))
