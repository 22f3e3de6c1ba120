"""``report.html``: one self-describing page over the tables, with the PNG charts beside it.

The page opens with "What happened" (``headline``): healthy or not, then the incidents worst first, each
linking to its section and tables. Times are shown in UTC. Every table of the run is linked as CSV; the
page shows its top rows only.
"""

import datetime
import html
import re

TIME_COLUMNS = {"firstTs", "lastTs", "firstSeen", "lastSeen", "start", "end", "expiredAt", "reRegisteredAt",
                "firstLateAt", "lastLateAt", "minute", "firstMinute", "lastMinute", "vanishedAt", "returnedAt",
                "firstChange", "lastChange", "lostAt", "electedAt", "firstAt", "lastAt", "masterBackAt", "routedAt",
                "lastRoutedAt"}

SECTIONS = [
    ("inputs", "Inputs", ["lines_by_kind"], ["input_lines", "servers"],
     "Lines read per kind: <b>json</b> and <b>java</b> lines are events; <b>java_other</b> are Java log lines "
     "without an event we use; <b>continuation</b> are stack-trace lines; <b>malformed</b> lines are counted "
     "and skipped."),
    ("liveness", "1. Broker liveness", ["liveness_events", "liveness_sessions"],
     ["broker_liveness", "broker_sessions", "broker_flaps"],
     "Per name server and broker: sessions (registered until expired or unregistered), heartbeat gaps "
     "(p50/p99/max), expirations, and flaps: an expiration followed by a re-registration on the same server "
     "within {flap_minutes} minutes."),
    ("heartbeat", "2. Heartbeat intervals", ["heartbeat_intervals", "heartbeat_drift"],
     ["heartbeat_intervals", "heartbeat_drift"],
     "Time between two registrations of a broker on a server. Brokers with intervals above "
     "{drift_limit_s} s are listed as drifting (brokers re-register every 30 s, servers expire them after "
     "120 s)."),
    ("requests", "3. Request mix and latency", ["requests", "request_latency", "request_errors"],
     ["request_minutely", "request_codes", "request_responses"],
     "Requests per code, server and minute with p50/p99 latency (upper bounds of log2 µs buckets) and the "
     "error rate (answers with a response code above 0, e.g. TOPIC_NOT_EXIST)."),
    ("topics", "4. Topic route churn", ["topic_churn", "topic_vanished"], ["topic_churn", "topic_vanished"],
     "Topics whose broker set changed most (on the server that saw most), and topics that vanished (no broker "
     "left) and for how long."),
    ("disagreement", "5. Name server disagreement", ["ns_disagreement"],
     ["ns_disagreement", "ns_disagreement_minutes"],
     "Intervals (at least {min_disagreement_ms} ms) where a broker was known to some active name servers but "
     "not to others: the window in which clients may get different routes depending on the server they ask."),
    ("failovers", "6. Controller failovers", [], ["controller_failovers", "controller_no_master"],
     "Broker groups whose master the controller (RIP-44) found gone: when, how long the group had no master, "
     "who was elected (id, address, epoch) and by what trigger, and when the name servers' routes named it "
     "(clients find a master from then on: routedMs from the loss, via the master's registration or the "
     "controller in the name server); groups not given a master back first. Then the periods in which the "
     "controller could elect no master. {controller_note}"),
]

_TOPS = {"inputs": "servers", "liveness": "liveness_top", "heartbeat": "drift_top", "requests": "codes",
         "topics": "churn_top", "disagreement": "disagreement_top", "failovers": "failovers_top"}
_EXTRA = {"liveness": ("Flaps", "flaps_top"), "topics": ("Longest vanishings", "vanished_top"),
          "requests": ("Responses", "responses"), "failovers": ("Groups left without a master", "no_master_top")}


def _cell(name, value):
    if value is None:
        return ""
    if name in TIME_COLUMNS and isinstance(value, int):
        return datetime.datetime.fromtimestamp(value / 1000.0, tz=datetime.timezone.utc).strftime(
            "%Y-%m-%d %H:%M:%S")
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join("%s: %s" % kv for kv in sorted(value.items()))
    if isinstance(value, float):
        return "%.4g" % value
    return str(value)


_WORD_START = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _heading(column):
    """A column's name with a line-break opportunity before each capital (gap<wbr>P99<wbr>Ms): seventeen
    camelCase names side by side made a table wider than a 1280-px window."""
    return _WORD_START.sub("<wbr>", html.escape(column))


def table(columns, rows, limit=20):
    if not rows:
        return "<p class='empty'>(no rows)</p>"
    head = "".join("<th>%s</th>" % _heading(c) for c in columns)
    body = "".join("<tr>%s</tr>" % "".join("<td>%s</td>" % html.escape(_cell(c, v)) for c, v in zip(columns, row))
                   for row in rows[:limit])
    return "<table><thead><tr>%s</tr></thead><tbody>%s</tbody></table>" % (head, body)


def figure(chart_dir, image, title, caption):
    """A chart with its title (also the image's alt text) and the one line saying what to look for."""
    return ("<figure><img src='%s/%s.png' alt='%s'><figcaption><b>%s.</b> %s</figcaption></figure>"
            % (chart_dir, image, html.escape(title, quote=True), html.escape(title), html.escape(caption)))


def duration(ms):
    """``2 h 5 min``, ``4 min 20 s``, ``45.2 s``, ``14 ms``: a gap or an interval as a reader says it (a
    failover's election and routing take milliseconds)."""
    if ms < 1000:
        return "%d ms" % ms
    seconds = ms / 1000.0
    if seconds < 60:
        return "%.1f s" % seconds
    minutes, sec = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return "%d min %d s" % (minutes, sec)
    return "%d h %d min" % divmod(minutes, 60)


def _links(section, tables):
    return " (<a href='#%s'>section</a>; %s)" % (section, ", ".join(
        "<a href='%s.csv'>%s.csv</a>" % (t, t) for t in tables))


def _item(key, count, label, entries, section, tables, shown):
    """One kind of incident: its count, the worst ``shown`` entries, links to its section and tables."""
    more = "<li>... and %d more</li>" % (len(entries) - shown) if len(entries) > shown else ""
    listed = "<ol>%s%s</ol>" % ("".join("<li>%s</li>" % e for e in entries[:shown]), more) if entries else ": none"
    return "<li data-incident='%s' data-count='%d'><b>%s</b>%s%s</li>" % (
        key, count, html.escape(label), _links(section, tables), listed)


def failover_text(f):
    """One failover as the headline lists it."""
    old = "master %s (%s)" % (f["oldMasterId"], f["oldMasterAddress"]) if f["oldMasterId"] is not None else "master"
    lost = "%s of %s: %s lost at %s" % (f["brokerName"], f["cluster"] or "?", old, _cell("lostAt", f["lostAt"]))
    failed = "; %d failed election(s)" % f["failedElections"] if f["failedElections"] else ""
    if not f["recovered"]:
        return "%s, no master since (%s until the logs end)%s" % (lost, duration(f["masterlessMs"]), failed)
    routed = "; routed after %s (via %s)" % (duration(f["routedMs"]), f["routedVia"]) \
        if f.get("routedMs") is not None else "; no name server logged its route"
    return "%s, broker %s (%s) elected after %s, epoch %s (%s)%s%s" % (
        lost, f["newMasterId"], f["newMasterAddress"], duration(f["masterlessMs"]), f["newEpoch"], f["trigger"],
        routed, failed)


def what_happened(h, span):
    """The block that opens the page: healthy in one line, or the four kinds of incident, worst first,
    each linking to its section and its tables (``h``: ``headline.what_happened``)."""
    out = ["<section id='what-happened' data-healthy='%s'><h2>What happened</h2>" % str(h["healthy"]).lower()]
    late_s = "%g s" % (h["late_ms"] / 1000.0)
    if h["healthy"]:
        out.append("<p class='ok'>Healthy over %s: no broker expired or flapped, no heartbeat gap above %s, the "
                   "name servers agreed, no request-error spike%s.</p></section>" % (
                       html.escape(span), late_s, ", no broker group lost its master" if h.get("controller") else ""))
        return "".join(out)
    dis = h["disagreement"]
    counts = [(len(h["brokers"]), "broker(s) expired or flapped"), (len(h["gaps"]), "heartbeat gap(s) above " + late_s),
              (dis["minutes"], "minute(s) of name-server disagreement"), (len(h["errors"]), "request-error spike(s)"),
              (len(h.get("failovers") or ()), "broker group(s) that lost their master")]
    out.append("<p class='warn'>Not healthy over %s: %s.</p><ul>" % (
        html.escape(span), ", ".join("%d %s" % (n, what) for n, what in counts if n)))
    shown = h["shown"]
    out.append(_item("brokers", len(h["brokers"]), "Brokers that expired or flapped, worst first", [
        html.escape("%s (%s): %d flap(s), %d expiration(s) on %s; longest gap %s" % (
            b["brokerAddr"], b["brokerName"] or "?", b["flaps"], b["expirations"], ", ".join(b["servers"]),
            duration(b["gapMaxMs"]))) for b in h["brokers"]], "liveness", ["broker_liveness", "broker_flaps"], shown))
    out.append(_item("gaps", len(h["gaps"]), "Longest heartbeat gaps", [
        html.escape("%s on %s: %s" % (g["brokerAddr"], g["server"], duration(g["gapMaxMs"]))) for g in h["gaps"]],
        "heartbeat", ["broker_liveness", "heartbeat_drift"], shown))
    out.append(_item("disagreement", dis["minutes"], "Minutes the name servers disagreed (%d broker(s))"
                     % dis["brokers"], [
        html.escape("%s from %s for %s, known by %s, missing on %s" % (
            r["brokerAddr"], _cell("start", r["start"]), duration(r["durationMs"]), ", ".join(r["knownBy"] or []),
            ", ".join(r["missingOn"] or []))) for r in dis["intervals"]],
        "disagreement", ["ns_disagreement", "ns_disagreement_minutes"], shown))
    out.append(_item("errors", len(h["errors"]), "Request-error spikes", [
        html.escape("%s: %s (%s) %d errors of %d requests (median %g per minute)" % (
            _cell("minute", e["minute"]), e["name"], e["code"], e["errors"], e["requests"], e["baseline"]))
        for e in h["errors"]], "requests", ["request_minutely", "request_codes"], shown))
    if h.get("controller"):   # only when the logs carry the controller's events
        out.append(_item("failovers", len(h["failovers"]), "Broker groups that lost their master, worst first",
                         [html.escape(failover_text(f)) for f in h["failovers"]], "failovers",
                         ["controller_failovers", "controller_no_master"], shown))
    out.append("</ul></section>")
    return "".join(out)


def render(d, summary, options, chart_dir="charts", captions=None):
    """The page as a string; ``summary``: {table: rows}; ``options``: the run's parameters;
    ``captions``: {chart: (title, caption)}."""
    captions = captions or {}
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>NameServer event report</title>",
           "<style>body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;"
           "font-size:12px;margin:.5em 0;max-width:100%}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
           "td{overflow-wrap:anywhere}"
           "th{background:#eee}img{max-width:100%;display:block;margin:.5em 0}.empty{color:#888}"
           ".warn{color:#a00}.ok{color:#070}#what-happened{border:1px solid #ccc;padding:0 1em;margin:1em 0}figure{margin:1em 0}figcaption{font-size:13px;color:#333}</style></head><body>",
           "<h1>NameServer event report</h1>"]
    first, last = d.get("first"), d.get("last")
    span = "no events" if first is None else "%s to %s (UTC)" % (_cell("start", first), _cell("end", last))
    malformed = dict(d["kinds"]).get("malformed", 0)
    if "headline" in d:
        out.append(what_happened(d["headline"], span))
    out.append("<p>Inputs: %s<br>Events from %s; %d server(s); %d malformed line(s).</p>" % (
        html.escape(", ".join(options.get("inputs", []))), html.escape(span), len(d["servers"][1]), malformed))
    if options.get("since") is not None or options.get("until") is not None:
        out.append("<p>Window: only events from %s to %s (UTC).</p>" % (
            html.escape(_cell("start", options.get("since")) or "the first"),
            html.escape(_cell("end", options.get("until")) or "the last")))
    if options.get("missing"):
        out.append("<p class='warn'>Inputs that matched nothing: %s</p>" % html.escape(", ".join(options["missing"])))
    out.append("<ul>%s</ul>" % "".join("<li><a href='#%s'>%s</a></li>" % (key, html.escape(title))
                                       for key, title, *_ in SECTIONS))
    text_options = dict(options, controller_note="" if d.get("controller_events") else
                        "The input has no controller event (name servers without enableControllerInNamesrv).")
    for key, title, images, tables, text in SECTIONS:
        out.append("<h2 id='%s'>%s</h2><p>%s</p>" % (key, html.escape(title), text.format(**text_options)))
        for image in images:
            out.append(figure(chart_dir, image, *captions.get(image, (image, ""))))
        out.append("<p>Tables: %s</p>" % ", ".join(
            "<a href='%s.csv'>%s.csv</a> (%d rows, also <code>%s.parquet</code>)" % (t, t, summary.get(t, 0), t)
            for t in tables))
        out.append(table(*d[_TOPS[key]]))
        if key in _EXTRA:
            label, item = _EXTRA[key]
            out.append("<h3>%s</h3>" % label + table(*d[item]))
        if key == "inputs":
            out.append("<h3>Lines by kind</h3>" + table(["kind", "lines"], [list(kv) for kv in d["kinds"]]))
            if d["samples"]:
                out.append("<h3>Malformed lines (first %d)</h3>" % len(d["samples"])
                           + table(["file", "line"], [list(s) for s in d["samples"]]))
    out.append("</body></html>")
    return "\n".join(out)
