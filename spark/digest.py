"""The small aggregates behind ``report.html``: collected from the written tables, then charted.

Only aggregated, bounded results reach the driver: time series are bucketed so a chart has at most
about ``MAX_POINTS`` points whatever the time span, and tables are cut to their top ``top`` rows.
The malformed-line samples are at most ``SAMPLES`` lines.
"""

import math
import os

from pyspark.sql import functions as F

from spark import charts
from spark.schema import KIND_MALFORMED

MAX_POINTS = 500
#: Lanes in the per-broker timeline (the brokers with most flaps, then expirations).
LANES = 12
SAMPLES = 10


def bucket_ms(first, last):
    if first is None or last is None:
        return 60000
    return max(60000, int(math.ceil((last - first) / MAX_POINTS / 60000.0)) * 60000)


def _bucket(column, size):
    return (F.floor(F.col(column) / size) * size).cast("long")


def _rows(df, order, top, columns=None):
    rows = df.orderBy(*order).limit(top).collect()
    names = columns or df.columns
    return names, [[row[name] for name in names] for row in rows]


def collect(staged, tables, top=20, line_summary=None):
    """Everything the HTML page and the charts need, as plain Python values.

    ``line_summary`` (``ingest.line_summary`` of ``staged``, if the caller has it) saves a pass over the
    staged lines for the event series: its minutes are bucketed further (buckets are whole minutes).
    """
    d = {}
    kinds = tables["input_lines"].groupBy("kind").agg(F.sum("lines").alias("lines")).collect()
    d["kinds"] = sorted(((r["kind"], r["lines"]) for r in kinds), key=lambda kv: -kv[1])
    d["samples"] = [(r["file"], r["raw"]) for r in
                    staged.filter(F.col("kind") == KIND_MALFORMED).select("file", "raw").limit(SAMPLES).collect()]
    d["servers"] = _rows(tables["servers"], ["server"], 1000)
    span = tables["servers"].agg(F.min("firstTs").alias("a"), F.max("lastTs").alias("b")).collect()[0]
    d["first"], d["last"] = span["a"], span["b"]
    size = d["bucket"] = bucket_ms(d["first"], d["last"])

    if line_summary is None:
        per_bucket = (staged.filter(F.col("ts").isNotNull()).groupBy(_bucket("ts", size).alias("b"), "event")
                      .count().collect())
    else:
        per_bucket = (line_summary.filter(F.col("minute").isNotNull())
                      .groupBy(_bucket("minute", size).alias("b"), "event").agg(F.sum("lines").alias("count"))
                      .collect())
    d["covered"] = sorted({r["b"] for r in per_bucket})
    flap_buckets = tables["broker_flaps"].groupBy(_bucket("expiredAt", size).alias("b")).count().collect()
    d["liveness_series"] = {
        "registrations": [(r["b"], r["count"]) for r in per_bucket if r["event"] == "broker_registered"],
        "expirations": [(r["b"], r["count"]) for r in per_bucket if r["event"] == "broker_expired"],
        "flaps": [(r["b"], r["count"]) for r in flap_buckets]}
    liveness = tables["broker_liveness"]
    d["liveness_top"] = _rows(liveness, [F.desc("flaps"), F.desc("expirations"), F.desc("gapMaxMs"),
                                         "brokerAddr", "server"], top)
    lanes = liveness.orderBy(F.desc("flaps"), F.desc("expirations"), "brokerAddr", "server").limit(LANES).collect()
    lane_keys = [(r["server"], r["brokerAddr"]) for r in lanes]

    def lane(server, addr):
        return "%s @ %s" % (addr, server)

    d["lanes"] = ["%s  %d flaps/%d exp" % (lane(r["server"], r["brokerAddr"]), r["flaps"], r["expirations"])
                  for r in lanes]
    label = dict(zip([lane(*k) for k in lane_keys], d["lanes"]))
    sess, flapped = [], []
    if lane_keys:
        cond = None
        for s, b in lane_keys:
            c = (F.col("server") == s) & (F.col("brokerAddr") == b)
            cond = c if cond is None else cond | c
        for r in tables["broker_sessions"].filter(cond).orderBy("start").limit(5000).collect():
            sess.append((label[lane(r["server"], r["brokerAddr"])], r["start"], r["end"], r["endEvent"]))
        for r in tables["broker_flaps"].filter(cond).limit(5000).collect():
            flapped.append((label[lane(r["server"], r["brokerAddr"])], r["expiredAt"], r["reRegisteredAt"]))
    d["sessions"] = sess
    d["lane_flaps"] = flapped
    d["flaps_top"] = _rows(tables["broker_flaps"], ["expiredAt", "server", "brokerAddr"], top)

    hist = tables["heartbeat_intervals"].groupBy("bucketS").agg(F.sum("intervals").alias("n")).orderBy("bucketS")
    d["interval_hist"] = [(r["bucketS"], r["n"]) for r in hist.collect()]
    d["drift_top"] = _rows(tables["heartbeat_drift"], [F.desc("lateIntervals"), "brokerAddr", "server"], top)

    codes = tables["request_codes"]
    d["codes"] = _rows(codes, [F.desc("requests")], 100)
    top_codes = [r["code"] for r in codes.orderBy(F.desc("requests")).limit(6).collect()]
    minute = tables["request_minutely"].filter(F.col("code").isin(top_codes) if top_codes else F.lit(False))
    req = (minute.groupBy(_bucket("minute", size).alias("b"), "code", "name")
           .agg(F.sum("requests").alias("n"), F.max("usP99").alias("p99")).collect())
    d["request_series"] = {}
    d["latency_series"] = {}
    for r in req:
        label = "%s (%s)" % (r["name"], r["code"])
        d["request_series"].setdefault(label, []).append((r["b"], r["n"] / (size / 60000.0)))
        d["latency_series"].setdefault(label, []).append((r["b"], r["p99"] / 1000.0))
    d["responses"] = _rows(tables["request_responses"], [F.desc("requests")], top)

    d["churn_top"] = _rows(tables["topic_churn"], [F.desc("changes"), "topic"], top)
    d["vanished_top"] = _rows(tables["topic_vanished"], [F.desc("vanishedMs"), "topic", "server"], top)
    mins = tables["ns_disagreement_minutes"]
    dis = (mins.groupBy(_bucket("minute", size).alias("b"))
           .agg(F.countDistinct("brokerAddr").alias("n")).collect())
    d["disagreement_series"] = {"brokers in disagreement": [(r["b"], r["n"]) for r in dis]}
    d["disagreement_top"] = _rows(tables["ns_disagreement"], [F.desc("durationMs"), "brokerAddr"], top)
    return d


#: chart name -> (title with its unit, the one line saying what to look for). ``{minutes}``: the bucket.
CHARTS = {
    "lines_by_kind": ("Input lines by kind (lines, log scale)",
                      "Almost everything should be json or java; a visible malformed bar means damaged input."),
    "liveness_events": ("Broker registrations, expirations and flaps (events per {minutes} min, log scale above 1)",
                        "Look for expiration and flap spikes; grey bands are times with no log data, not quiet."),
    "liveness_sessions": ("Per-broker timeline, most flapping brokers on top",
                          "A healthy broker is one unbroken green bar; red x and orange bands mark a flapping one."),
    "heartbeat_intervals": ("Heartbeat intervals (count per whole second, log scale)",
                            "Expect one peak at 30 s; mass past 35 s is late heartbeats, past 120 s expirations."),
    "heartbeat_drift": ("Late heartbeat intervals per broker (intervals above the limit)",
                        "A broker late on one server only points at the network path to that server."),
    "requests": ("Requests per minute, busiest codes (requests/min, log scale)",
                 "Look for drops to zero and sudden surges; grey bands are times with no log data."),
    "request_latency": ("Worst per-server p99 latency, busiest codes (ms, log scale)",
                        "p99 is the upper bound of a log2 bucket; look for sustained rises, not single spikes."),
    "request_errors": ("Error rate per request code (% of requests)",
                       "Route lookups for unknown topics answer TOPIC_NOT_EXIST; other codes should be near 0."),
    "topic_churn": ("Topics whose broker set changed most (changes)",
                    "Topics at the top moved between brokers most often: expect flapping brokers behind them."),
    "topic_vanished": ("Longest topic vanishings (minutes without any broker)",
                       "Clients got no route for these topics for this long."),
    "ns_disagreement": ("Brokers known to some name servers but not others (brokers per {minutes} min)",
                        "Anything above 0 means clients could get different routes from different servers."),
}


def titles(d):
    """{chart: (title, caption)} with the run's bucket size filled in."""
    minutes = d["bucket"] // 60000
    return {name: (title.format(minutes=minutes), caption) for name, (title, caption) in CHARTS.items()}


def draw(d, directory):
    """Write every chart of ``CHARTS`` into ``directory``; returns {name: file name}."""
    os.makedirs(directory, exist_ok=True)
    t = titles(d)
    covered, bucket = d["covered"], d["bucket"]

    def p(name):
        return os.path.join(directory, name + ".png")

    charts.bars(p("lines_by_kind"), t["lines_by_kind"][0], [k for k, _ in d["kinds"]], [v for _, v in d["kinds"]],
                "lines", log=True)
    charts.series(p("liveness_events"), t["liveness_events"][0], d["liveness_series"],
                  "events per %d min (log above 1)" % (bucket // 60000), covered, bucket, log="symlog")
    charts.sessions(p("liveness_sessions"), t["liveness_sessions"][0], d["sessions"], d["lanes"], d["lane_flaps"],
                    covered, bucket)
    charts.bars(p("heartbeat_intervals"), t["heartbeat_intervals"][0], [b for b, _ in d["interval_hist"]],
                [n for _, n in d["interval_hist"]], "interval (s)", horizontal=False, log=True, ylabel="intervals")
    names, rows = d["drift_top"]
    charts.bars(p("heartbeat_drift"), t["heartbeat_drift"][0],
                ["%s @ %s" % (r[names.index("brokerAddr")], r[names.index("server")]) for r in rows],
                [r[names.index("lateIntervals")] for r in rows], "late intervals")
    charts.series(p("requests"), t["requests"][0], d["request_series"], "requests/min", covered, bucket, log=True)
    charts.series(p("request_latency"), t["request_latency"][0], d["latency_series"], "p99 latency (ms)", covered,
                  bucket, log=True, zero=False)
    names, rows = d["codes"]
    with_errors = [r for r in rows if r[names.index("errors")]]
    charts.bars(p("request_errors"), t["request_errors"][0],
                ["%s (%s)" % (r[names.index("name")], r[names.index("code")]) for r in with_errors],
                [100.0 * r[names.index("errorRate")] for r in with_errors], "% of requests answered with an error")
    names, rows = d["churn_top"]
    charts.bars(p("topic_churn"), t["topic_churn"][0], [r[names.index("topic")] for r in rows],
                [r[names.index("changes")] for r in rows], "broker-set changes")
    names, rows = d["vanished_top"]
    charts.bars(p("topic_vanished"), t["topic_vanished"][0],
                ["%s @ %s" % (r[names.index("topic")], r[names.index("server")]) for r in rows],
                [r[names.index("vanishedMs")] / 60000.0 for r in rows], "minutes without any broker")
    charts.series(p("ns_disagreement"), t["ns_disagreement"][0], d["disagreement_series"],
                  "brokers in disagreement", covered, bucket)
    return {name: name + ".png" for name in CHARTS}
