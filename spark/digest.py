"""The small aggregates behind ``report.html``, from the tables collected to the driver, then charted.

The tables arrive on the driver in the report's one collect (``collect``), with three extra aggregates
that ``extra_frames`` adds to it: the malformed-line samples (at most ``SAMPLES``), events per minute and
requests per minute and code. Everything here is plain Python over those rows: no Spark job. Time series
are bucketed so a chart has at most about ``MAX_POINTS`` points whatever the time span, and tables are
cut to their top ``top`` rows.
"""

import math
import os

from pyspark.sql import functions as F

from spark import failovers
from spark.schema import KIND_MALFORMED

MAX_POINTS = 500
#: Lanes in the per-broker timeline (the brokers with most flaps, then expirations).
LANES = 12
SAMPLES = 10
#: Request codes drawn in the request and latency charts (the busiest).
TOP_CODES = 6


def bucket_ms(first, last):
    if first is None or last is None:
        return 60000
    return max(60000, int(math.ceil((last - first) / MAX_POINTS / 60000.0)) * 60000)


def extra_frames(staged, line_summary, request_minutely):
    """The page's aggregates beyond the tables, to collect with them (each small: a row per minute)."""
    return {
        "_samples": staged.filter(F.col("kind") == KIND_MALFORMED).select("file", "raw").limit(SAMPLES),
        "_events": (line_summary.filter(F.col("minute").isNotNull()).groupBy("minute", "event")
                    .agg(F.sum("lines").alias("count"))),
        "_requests": (request_minutely.groupBy("minute", "code", "name")
                      .agg(F.sum("requests").alias("requests"), F.sum("errors").alias("errors"),
                           F.max("usP99").alias("p99"))),
        "_request_minutely_rows": request_minutely.agg(F.count(F.lit(1)).alias("rows")),
    }


def ordered(table, order):
    """``table``'s rows as dicts in Spark's ``orderBy`` order: ``order`` items are a column name
    (ascending, NULLs first) or ``("name", "desc")`` (NULLs last). Python's sort is stable, also
    reversed: sorting by the last key first gives the order of all keys."""
    rows = table.dicts()
    for item in reversed(order):
        name, desc = (item[0], True) if isinstance(item, tuple) else (item, False)
        present = sorted((r for r in rows if r[name] is not None), key=lambda r: r[name], reverse=desc)
        missing = [r for r in rows if r[name] is None]
        rows = present + missing if desc else missing + present
    return rows


def _rows(table, order, top):
    """(columns, the first ``top`` rows in ``order`` as lists): a table as the page shows it."""
    return table.columns, [[r[c] for c in table.columns] for r in ordered(table, order)[:top]]


def _bucket(ms, size):
    return ms // size * size


def collect(tables, top=20):
    """Everything the HTML page and the charts need, as plain Python values, from ``tables``
    ({name: ``collect.LocalTable``}: the report's tables and ``extra_frames``)."""
    d = {}
    kinds = {}
    for r in tables["input_lines"].dicts():
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + r["lines"]
    d["kinds"] = sorted(kinds.items(), key=lambda kv: -kv[1])
    d["samples"] = [(r["file"], r["raw"]) for r in tables["_samples"].dicts()]
    d["servers"] = _rows(tables["servers"], ["server"], 1000)
    firsts = [v for v in tables["servers"].column("firstTs") if v is not None]
    lasts = [v for v in tables["servers"].column("lastTs") if v is not None]
    d["first"], d["last"] = (min(firsts) if firsts else None), (max(lasts) if lasts else None)
    size = d["bucket"] = bucket_ms(d["first"], d["last"])

    per_bucket = {}
    for r in tables["_events"].dicts():
        key = (_bucket(r["minute"], size), r["event"])
        per_bucket[key] = per_bucket.get(key, 0) + r["count"]
    d["covered"] = sorted({b for b, _ in per_bucket})
    flap_buckets = {}
    for at in tables["broker_flaps"].column("expiredAt"):
        if at is not None:
            flap_buckets[_bucket(at, size)] = flap_buckets.get(_bucket(at, size), 0) + 1
    d["liveness_series"] = {
        "registrations": sorted((b, n) for (b, e), n in per_bucket.items() if e == "broker_registered"),
        "expirations": sorted((b, n) for (b, e), n in per_bucket.items() if e == "broker_expired"),
        "flaps": sorted(flap_buckets.items())}
    liveness = tables["broker_liveness"]
    d["liveness_top"] = _rows(liveness, [("flaps", "desc"), ("expirations", "desc"), ("gapMaxMs", "desc"),
                                         "brokerAddr", "server"], top)
    lanes = ordered(liveness, [("flaps", "desc"), ("expirations", "desc"), "brokerAddr", "server"])[:LANES]

    def lane(server, addr):
        return "%s @ %s" % (addr, server)

    d["lanes"] = ["%s  %d flaps/%d exp" % (lane(r["server"], r["brokerAddr"]), r["flaps"], r["expirations"])
                  for r in lanes]
    label = {(r["server"], r["brokerAddr"]): text for r, text in zip(lanes, d["lanes"])}
    d["sessions"] = [(label[(r["server"], r["brokerAddr"])], r["start"], r["end"], r["endEvent"])
                     for r in ordered(tables["broker_sessions"], ["start"])
                     if (r["server"], r["brokerAddr"]) in label][:5000]
    d["lane_flaps"] = [(label[(r["server"], r["brokerAddr"])], r["expiredAt"], r["reRegisteredAt"])
                       for r in tables["broker_flaps"].dicts() if (r["server"], r["brokerAddr"]) in label][:5000]
    d["flaps_top"] = _rows(tables["broker_flaps"], ["expiredAt", "server", "brokerAddr"], top)

    hist = {}
    for r in tables["heartbeat_intervals"].dicts():
        hist[r["bucketS"]] = hist.get(r["bucketS"], 0) + r["intervals"]
    d["interval_hist"] = sorted(hist.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0))
    d["drift_top"] = _rows(tables["heartbeat_drift"], [("lateIntervals", "desc"), "brokerAddr", "server"], top)

    codes = tables["request_codes"]
    d["codes"] = _rows(codes, [("requests", "desc")], 100)
    top_codes = {r["code"] for r in ordered(codes, [("requests", "desc")])[:TOP_CODES]}
    req = {}
    for r in tables["_requests"].dicts():
        if r["code"] in top_codes:
            key = (_bucket(r["minute"], size), r["code"], r["name"])
            n, p99 = req.get(key, (0, None))
            req[key] = (n + (r["requests"] or 0), p99 if r["p99"] is None or (p99 is not None and p99 >= r["p99"])
                        else r["p99"])
    d["request_series"] = {}
    d["latency_series"] = {}
    for (b, code, name), (n, p99) in sorted(req.items(), key=lambda kv: kv[0][0]):
        label = "%s (%s)" % (name, code)
        d["request_series"].setdefault(label, []).append((b, n / (size / 60000.0)))
        if p99 is not None:
            d["latency_series"].setdefault(label, []).append((b, p99 / 1000.0))
    d["responses"] = _rows(tables["request_responses"], [("requests", "desc")], top)

    d["churn_top"] = _rows(tables["topic_churn"], [("changes", "desc"), "topic"], top)
    d["vanished_top"] = _rows(tables["topic_vanished"], [("vanishedMs", "desc"), "topic", "server"], top)
    dis = {}
    for r in tables["ns_disagreement_minutes"].dicts():
        dis.setdefault(_bucket(r["minute"], size), set()).add(r["brokerAddr"])
    d["disagreement_series"] = {"brokers in disagreement": sorted((b, len(v)) for b, v in dis.items())}
    d["disagreement_top"] = _rows(tables["ns_disagreement"], [("durationMs", "desc"), "brokerAddr"], top)
    d["failovers_top"] = _rows(tables["controller_failovers"], ["recovered", ("masterlessMs", "desc"), "lostAt"], top)
    d["no_master_top"] = _rows(tables["controller_no_master"], ["masterBackAt", ("attempts", "desc"), "firstAt"], top)
    d["controller_events"] = failovers.controller_event_count(tables["_controller_events"])
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


def chart_calls(d, directory):
    """Every chart of ``CHARTS`` as a call of ``spark.charts`` (function name, args, kwargs) writing into
    ``directory``: plain data, so that a worker process can draw it (``chartworkers``)."""
    t = titles(d)
    covered, bucket = d["covered"], d["bucket"]
    calls = []

    def p(name):
        return os.path.join(directory, name + ".png")

    def call(function, *args, **kwargs):
        calls.append((function, args, kwargs))

    call("bars", p("lines_by_kind"), t["lines_by_kind"][0], [k for k, _ in d["kinds"]], [v for _, v in d["kinds"]],
         "lines", log=True)
    call("series", p("liveness_events"), t["liveness_events"][0], d["liveness_series"],
         "events per %d min (log above 1)" % (bucket // 60000), covered, bucket, log="symlog")
    call("sessions", p("liveness_sessions"), t["liveness_sessions"][0], d["sessions"], d["lanes"], d["lane_flaps"],
         covered, bucket)
    call("bars", p("heartbeat_intervals"), t["heartbeat_intervals"][0], [b for b, _ in d["interval_hist"]],
         [n for _, n in d["interval_hist"]], "interval (s)", horizontal=False, log=True, ylabel="intervals")
    names, rows = d["drift_top"]
    call("bars", p("heartbeat_drift"), t["heartbeat_drift"][0],
         ["%s @ %s" % (r[names.index("brokerAddr")], r[names.index("server")]) for r in rows],
         [r[names.index("lateIntervals")] for r in rows], "late intervals")
    call("series", p("requests"), t["requests"][0], d["request_series"], "requests/min", covered, bucket, log=True)
    call("series", p("request_latency"), t["request_latency"][0], d["latency_series"], "p99 latency (ms)", covered,
         bucket, log=True, zero=False)
    names, rows = d["codes"]
    with_errors = [r for r in rows if r[names.index("errors")]]
    call("bars", p("request_errors"), t["request_errors"][0],
         ["%s (%s)" % (r[names.index("name")], r[names.index("code")]) for r in with_errors],
         [100.0 * r[names.index("errorRate")] for r in with_errors], "% of requests answered with an error")
    names, rows = d["churn_top"]
    call("bars", p("topic_churn"), t["topic_churn"][0], [r[names.index("topic")] for r in rows],
         [r[names.index("changes")] for r in rows], "broker-set changes")
    names, rows = d["vanished_top"]
    call("bars", p("topic_vanished"), t["topic_vanished"][0],
         ["%s @ %s" % (r[names.index("topic")], r[names.index("server")]) for r in rows],
         [r[names.index("vanishedMs")] / 60000.0 for r in rows], "minutes without any broker")
    call("series", p("ns_disagreement"), t["ns_disagreement"][0], d["disagreement_series"],
         "brokers in disagreement", covered, bucket)
    return calls


def draw(d, directory, workers=None):
    """Write every chart of ``CHARTS`` into ``directory`` (by ``workers``, a ``chartworkers.ChartWorkers``, when
    given); returns {name: file name}."""
    os.makedirs(directory, exist_ok=True)
    calls = chart_calls(d, directory)
    if workers is not None:
        workers.draw(calls)
    else:
        from spark import chartworkers
        chartworkers.draw_here(calls)
    return {name: name + ".png" for name in CHARTS}
