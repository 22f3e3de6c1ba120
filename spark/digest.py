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


def collect(staged, tables, top=20):
    """Everything the HTML page and the charts need, as plain Python values."""
    d = {}
    kinds = tables["input_lines"].groupBy("kind").agg(F.sum("lines").alias("lines")).collect()
    d["kinds"] = sorted(((r["kind"], r["lines"]) for r in kinds), key=lambda kv: -kv[1])
    d["samples"] = [(r["file"], r["raw"]) for r in
                    staged.filter(F.col("kind") == KIND_MALFORMED).select("file", "raw").limit(SAMPLES).collect()]
    d["servers"] = _rows(tables["servers"], ["server"], 1000)
    span = tables["servers"].agg(F.min("firstTs").alias("a"), F.max("lastTs").alias("b")).collect()[0]
    d["first"], d["last"] = span["a"], span["b"]
    size = d["bucket"] = bucket_ms(d["first"], d["last"])

    broker_events = staged.filter(F.col("event").isin("broker_registered", "broker_expired"))
    per_bucket = broker_events.groupBy(_bucket("ts", size).alias("b"), "event").count().collect()
    flap_buckets = tables["broker_flaps"].groupBy(_bucket("expiredAt", size).alias("b")).count().collect()
    d["liveness_series"] = {
        "registrations": [(r["b"], r["count"]) for r in per_bucket if r["event"] == "broker_registered"],
        "expirations": [(r["b"], r["count"]) for r in per_bucket if r["event"] == "broker_expired"],
        "flaps": [(r["b"], r["count"]) for r in flap_buckets]}
    liveness = tables["broker_liveness"]
    d["liveness_top"] = _rows(liveness, [F.desc("flaps"), F.desc("expirations"), F.desc("gapMaxMs"),
                                         "brokerAddr", "server"], top)
    lanes = liveness.orderBy(F.desc("flaps"), F.desc("expirations"), "brokerAddr", "server").limit(12).collect()
    lane_keys = [(r["server"], r["brokerAddr"]) for r in lanes]
    d["lanes"] = ["%s @ %s" % (b, s) for s, b in lane_keys]
    sess = []
    if lane_keys:
        cond = None
        for s, b in lane_keys:
            c = (F.col("server") == s) & (F.col("brokerAddr") == b)
            cond = c if cond is None else cond | c
        for r in tables["broker_sessions"].filter(cond).orderBy("start").limit(5000).collect():
            sess.append(("%s @ %s" % (r["brokerAddr"], r["server"]), r["start"], r["end"],
                         r["endEvent"] == "broker_expired"))
    d["sessions"] = sess
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
        d["latency_series"].setdefault(label, []).append((r["b"], r["p99"]))
    d["responses"] = _rows(tables["request_responses"], [F.desc("requests")], top)

    d["churn_top"] = _rows(tables["topic_churn"], [F.desc("changes"), "topic"], top)
    d["vanished_top"] = _rows(tables["topic_vanished"], [F.desc("vanishedMs"), "topic", "server"], top)
    mins = tables["ns_disagreement_minutes"]
    dis = (mins.groupBy(_bucket("minute", size).alias("b"))
           .agg(F.countDistinct("brokerAddr").alias("n")).collect())
    d["disagreement_series"] = {"brokers in disagreement": [(r["b"], r["n"]) for r in dis]}
    d["disagreement_top"] = _rows(tables["ns_disagreement"], [F.desc("durationMs"), "brokerAddr"], top)
    return d


CHARTS = ("lines_by_kind", "liveness_events", "liveness_sessions", "heartbeat_intervals", "heartbeat_drift",
          "requests", "request_latency", "request_errors", "topic_churn", "topic_vanished", "ns_disagreement")


def draw(d, directory):
    """Write every chart of ``CHARTS`` into ``directory``; returns {name: file name}."""
    os.makedirs(directory, exist_ok=True)

    def p(name):
        return os.path.join(directory, name + ".png")

    minutes = d["bucket"] // 60000
    charts.bars(p("lines_by_kind"), "Input lines by kind", [k for k, _ in d["kinds"]], [v for _, v in d["kinds"]],
                "lines", log=True)
    charts.series(p("liveness_events"), "Broker registrations, expirations and flaps per %d min" % minutes,
                  d["liveness_series"], "events")
    charts.sessions(p("liveness_sessions"), "Broker sessions (x: expired), most flapping brokers",
                    d["sessions"], d["lanes"])
    charts.bars(p("heartbeat_intervals"), "Heartbeat intervals (s)", [b for b, _ in d["interval_hist"]],
                [n for _, n in d["interval_hist"]], "seconds", horizontal=False, log=True)
    names, rows = d["drift_top"]
    charts.bars(p("heartbeat_drift"), "Late heartbeat intervals per broker (top)",
                ["%s @ %s" % (r[names.index("brokerAddr")], r[names.index("server")]) for r in rows],
                [r[names.index("lateIntervals")] for r in rows], "late intervals")
    charts.series(p("requests"), "Requests per minute (top codes)", d["request_series"], "requests/min", log=True)
    charts.series(p("request_latency"), "Worst per-server p99 latency (µs, log2 bucket bound)",
                  d["latency_series"], "µs", log=True)
    names, rows = d["codes"]
    with_errors = [r for r in rows if r[names.index("errors")]]
    charts.bars(p("request_errors"), "Error rate per request code",
                ["%s (%s)" % (r[names.index("name")], r[names.index("code")]) for r in with_errors],
                [r[names.index("errorRate")] for r in with_errors], "errors / requests")
    names, rows = d["churn_top"]
    charts.bars(p("topic_churn"), "Topics whose broker set changed most", [r[names.index("topic")] for r in rows],
                [r[names.index("changes")] for r in rows], "changes")
    names, rows = d["vanished_top"]
    charts.bars(p("topic_vanished"), "Longest topic vanishings (min)",
                ["%s @ %s" % (r[names.index("topic")], r[names.index("server")]) for r in rows],
                [r[names.index("vanishedMs")] / 60000.0 for r in rows], "minutes without any broker")
    charts.series(p("ns_disagreement"), "Brokers known to some name servers but not others (per %d min)" % minutes,
                  d["disagreement_series"], "brokers", step=True)
    return {name: name + ".png" for name in CHARTS}
