"""Report 3: request mix, latency percentiles and error rates per request code.

``request`` events are per-second aggregates (``count``, ``usSum``, ``usMax`` and a log2 histogram
``hist`` of µs, see ``namesrv.observe.eventlog``); a single-request event (``count`` 1, ``us``) is folded in as a
one-entry histogram. Histograms merge by adding counts per bucket, so the per-minute p50/p99 are
exact *bucket upper bounds* (within a factor of two of the true latency), whatever the sampling.

An error is any answer with a response code above 0 (SUCCESS is 0, oneway requests have -1), e.g.
TOPIC_NOT_EXIST (17) for "No route info of this topic".

Tables: ``request_minutely`` (server, minute, code), ``request_codes`` (per code over everything,
histogram merged from the minute rows) and ``request_responses`` (per code and response code).
"""

from pyspark.sql import functions as F

KEYS = ["server", "minute", "code"]

# Merge an array<struct<key:string,value:bigint>> of histogram entries into sorted buckets and counts.
_MERGE = """
transform(array_sort(array_distinct(transform({e}, x -> cast(x.key as bigint)))),
          k -> named_struct('b', k, 'n', aggregate(filter({e}, x -> cast(x.key as bigint) = k), 0L,
                                                   (a, x) -> a + x.value)))
"""
# Percentiles from sorted buckets: the first bucket whose cumulative count reaches q of the total.
_PCT = """
aggregate({b}, named_struct('cum', 0L, 'p50', cast(null as bigint), 'p99', cast(null as bigint)),
          (acc, x) -> named_struct('cum', acc.cum + x.n,
              'p50', coalesce(acc.p50, if((acc.cum + x.n) * 100 >= 50 * {total}, x.b, null)),
              'p99', coalesce(acc.p99, if((acc.cum + x.n) * 100 >= 99 * {total}, x.b, null))))
"""


def _bucket(us):
    """Upper bound of the log2 bucket of ``us`` (as ``namesrv.observe.eventlog.histogram_bucket``)."""
    us = F.greatest(us, F.lit(1))
    return F.when(us <= 1, F.lit(1).cast("long")).otherwise(
        F.pow(F.lit(2.0), F.length(F.bin(us - 1))).cast("long"))


def requests(events):
    r = events.filter((F.col("event") == "request") & F.col("code").isNotNull())
    count = F.coalesce(F.col("count"), F.lit(1)).cast("long")
    us = F.coalesce(F.col("us"), F.lit(0))
    hist = F.coalesce(F.col("hist"), F.create_map(_bucket(us).cast("string"), count))
    return r.select("server", (F.floor(F.col("ts") / 60000) * 60000).cast("long").alias("minute"), "code",
                    F.coalesce(F.col("name"), F.concat(F.lit("UNKNOWN_"), F.col("code").cast("string"))).alias("name"),
                    F.coalesce(F.col("resp"), F.lit(0)).alias("resp"), count.alias("count"),
                    F.coalesce(F.col("usSum"), us * count).alias("usSum"),
                    F.coalesce(F.col("usMax"), us).alias("usMax"),
                    hist.alias("hist"), F.coalesce(F.col("peers"), F.lit(1)).alias("peers"))


def _with_percentiles(df, entries, total):
    merged = df.withColumn("_b", F.expr(_MERGE.format(e=entries)))
    pct = merged.withColumn("_pct", F.expr(_PCT.format(b="_b", total=total)))
    return pct.withColumn("hist", F.map_from_arrays(F.transform("_b", lambda x: x["b"].cast("string")),
                                                    F.transform("_b", lambda x: x["n"])))


def _rate(errors, total):
    return F.when(total > 0, F.round(errors / total, 6)).otherwise(F.lit(0.0))


def minutely(req):
    """Per (server, minute, code): totals, and percentiles from the minute's merged histogram.

    Histogram buckets are summed with an ordinary hash aggregation over the exploded entries (a few
    per event) and only the merged buckets (about ten per row) are collected into arrays.
    """
    totals = (req.groupBy(*KEYS)
              .agg(F.max("name").alias("name"), F.sum("count").alias("requests"),
                   F.sum(F.when(F.col("resp") > 0, F.col("count")).otherwise(0)).alias("errors"),
                   F.sum("usSum").alias("usSum"), F.max("usMax").alias("usMax"), F.max("peers").alias("peersMax")))
    buckets = (req.select(*KEYS, F.explode("hist").alias("key", "n"))
               .groupBy(*KEYS, "key").agg(F.sum("n").alias("value"))
               .groupBy(*KEYS).agg(F.collect_list(F.struct("key", "value")).alias("_e")))
    rows = _with_percentiles(totals.join(buckets, KEYS, "left"), "_e", "requests")
    return rows.select("server", "minute", "code", "name", "requests", "errors",
                       _rate(F.col("errors"), F.col("requests")).alias("errorRate"),
                       F.round(F.col("usSum") / F.col("requests"), 1).alias("usMean"),
                       F.col("_pct.p50").alias("usP50"), F.col("_pct.p99").alias("usP99"), "usMax", "usSum",
                       "peersMax", "hist")


def per_code(minute_rows):
    """Totals per code, with percentiles from the minute histograms merged."""
    totals = (minute_rows.groupBy("code")
              .agg(F.max("name").alias("name"), F.sum("requests").alias("requests"), F.sum("errors").alias("errors"),
                   F.sum("usSum").alias("usSum"), F.max("usMax").alias("usMax"),
                   F.countDistinct("server").alias("servers"),
                   F.min("minute").alias("firstMinute"), F.max("minute").alias("lastMinute")))
    buckets = (minute_rows.select("code", F.explode("hist").alias("b", "n"))
               .groupBy("code", "b").agg(F.sum("n").alias("n"))
               .groupBy("code").agg(F.collect_list(F.struct("b", "n")).alias("_e"), F.sum("n").alias("_total")))
    entries = buckets.select("code", "_total",
                             F.transform("_e", lambda x: F.struct(x["b"].alias("key"), x["n"].alias("value")))
                             .alias("_e"))
    hist = _with_percentiles(entries, "_e", "_total")
    return (totals.join(hist, "code", "left")
            .select("code", "name", "requests", "errors", _rate(F.col("errors"), F.col("requests")).alias("errorRate"),
                    F.round(F.col("usSum") / F.col("requests"), 1).alias("usMean"),
                    F.col("_pct.p50").alias("usP50"), F.col("_pct.p99").alias("usP99"), "usMax", "servers",
                    "firstMinute", "lastMinute"))


def responses(req):
    per = req.groupBy("code", "resp").agg(F.max("name").alias("name"), F.sum("count").alias("requests"))
    return per.select("code", "name", "resp", "requests")
