"""The report's answer first: was the fleet healthy, and if not, what went wrong, worst first.

Someone on call opens the report to learn whether anything happened; this picks the incidents out of
the collected tables (plain Python over a few hundred rows, no Spark job):

- brokers that expired or flapped on any name server (most flaps, then expirations, first);
- the longest heartbeat gaps above the late limit (period + tolerance);
- the minutes in which the name servers disagreed about a broker, with the longest intervals;
- request-error spikes: minutes in which a request code's errors (all servers together) reached
  ``SPIKE_MIN_ERRORS`` and ``SPIKE_FACTOR`` times that code's median errors per minute (the route
  lookups of unknown topics answer TOPIC_NOT_EXIST all day long: a steady rate is not a spike);
- when the logs carry the controller's events: broker groups that lost their master (those left
  without one first, then the longest without one).

A period with none of these is healthy.
"""

from spark.failovers import controller_event_count

SHOWN = 5
SPIKE_MIN_ERRORS = 20
SPIKE_FACTOR = 5


def _median(values):
    values = sorted(values)
    if not values:
        return 0
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0


def troubled_brokers(liveness):
    """Brokers (over all servers) with an expiration or a flap, worst first."""
    per = {}
    for r in liveness.dicts():
        if not (r["expirations"] or r["flaps"]):
            continue
        b = per.setdefault(r["brokerAddr"], {"brokerAddr": r["brokerAddr"], "brokerName": r["brokerName"],
                                             "flaps": 0, "expirations": 0, "servers": [], "gapMaxMs": 0})
        b["flaps"] += r["flaps"] or 0
        b["expirations"] += r["expirations"] or 0
        b["servers"].append(r["server"])
        b["gapMaxMs"] = max(b["gapMaxMs"], r["gapMaxMs"] or 0)
        b["brokerName"] = b["brokerName"] or r["brokerName"]
    for b in per.values():
        b["servers"].sort()
    return sorted(per.values(), key=lambda b: (-b["flaps"], -b["expirations"], -b["gapMaxMs"], b["brokerAddr"]))


def longest_gaps(liveness, late_ms):
    """(server, broker) pairs whose longest heartbeat gap is above ``late_ms``, longest first."""
    rows = [r for r in liveness.dicts() if (r["gapMaxMs"] or 0) > late_ms]
    return sorted(rows, key=lambda r: (-r["gapMaxMs"], r["brokerAddr"], r["server"]))


def disagreement(intervals, minutes):
    """{minutes: distinct minutes with any disagreement, intervals: longest first}."""
    rows = sorted(intervals.dicts(), key=lambda r: (-r["durationMs"], r["brokerAddr"], r["start"]))
    return {"minutes": len(set(minutes.column("minute"))), "brokers": len({r["brokerAddr"] for r in rows}),
            "intervals": rows}


def error_spikes(per_minute):
    """Minutes in which a code's errors spiked (see the module's docstring), most errors first.

    ``per_minute``: rows of (minute, code, name, requests, errors), summed over the servers.
    """
    by_code = {}
    for r in per_minute.dicts():
        by_code.setdefault(r["code"], []).append(r)
    spikes = []
    for rows in by_code.values():
        limit = max(SPIKE_MIN_ERRORS, SPIKE_FACTOR * _median([r["errors"] or 0 for r in rows]))
        spikes += [dict(r, baseline=_median([x["errors"] or 0 for x in rows])) for r in rows
                   if (r["errors"] or 0) >= limit]
    return sorted(spikes, key=lambda r: (-r["errors"], r["minute"], r["code"]))


def lost_masters(failovers):
    """Failovers worst first: groups never given a master back, then the longest without one."""
    return sorted(failovers.dicts(), key=lambda r: (r["recovered"], -(r["masterlessMs"] or 0), r["lostAt"] or 0,
                                                     r["brokerName"] or ""))


def what_happened(tables, late_ms):
    """The block's content from the collected tables ({name: ``collect.LocalTable``})."""
    liveness = tables["broker_liveness"]
    found = {"brokers": troubled_brokers(liveness), "gaps": longest_gaps(liveness, late_ms),
             "disagreement": disagreement(tables["ns_disagreement"], tables["ns_disagreement_minutes"]),
             "errors": error_spikes(tables["_requests"]), "late_ms": late_ms, "shown": SHOWN,
             "controller": controller_event_count(tables["_controller_events"]) > 0,
             "failovers": lost_masters(tables["controller_failovers"])}
    found["healthy"] = not (found["brokers"] or found["gaps"] or found["disagreement"]["intervals"]
                            or found["errors"] or found["failovers"])
    return found
