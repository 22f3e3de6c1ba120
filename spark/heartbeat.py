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


def late_ms(period_s=30, tolerance_s=5):
    return int((period_s + tolerance_s) * 1000)


def drift(per_broker, limit_ms):
    """Brokers (per server) with intervals longer than ``limit_ms`` (``late_ms``): from the per-broker
    aggregate of ``liveness.per_broker`` built with the same limit (one pass over the timeline for both
    reports), its columns over the intervals only."""
    return (per_broker.filter(F.col("lateIntervals") > 0)
            .select(F.col("_intervalCluster").alias("cluster"), F.col("_intervalBrokerName").alias("brokerName"),
                    "brokerAddr", "server", F.col("gaps").alias("intervals"), "lateIntervals",
                    F.round(F.col("lateIntervals") / F.col("gaps"), 4).alias("lateRatio"),
                    F.col("_p")[0].alias("p50Ms"), F.col("_p")[1].alias("p99Ms"), F.col("gapMaxMs").alias("maxMs"),
                    "firstLateAt", "lastLateAt", F.lit(limit_ms).cast("long").alias("thresholdMs")))
