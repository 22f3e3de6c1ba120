"""Report 5: brokers known to one name server but not another (the AP design's inconsistency window).

Name servers never talk to each other: each one learns a broker from its own registrations and
forgets it on its own expiry scan, so for a while a client may get a route with the broker from one
server and without it from another. From ``broker_sessions`` (when each server knew each broker) and
each server's observed span (``servers``: first to last event), a sweep over the session boundaries of
each broker gives the intervals where at least one server *active at that time* knows the broker and
at least one other active server does not. Only the boundaries are visited (no per-minute expansion of
sessions), so the cost follows the number of sessions.

Both inputs are small tables already on the driver (a row per session, a row per server), so this is
plain Python over them: computed in Spark it took four more jobs (three broadcasts and a collect,
about 5 s of a small report), since its columns are the servers, known only after the first collect.

Intervals shorter than ``min_ms`` (default 1 s: the jitter of one registration reaching the servers)
are dropped. ``ns_disagreement_minutes`` lists, per minute, each broker in disagreement during it and
for how many milliseconds of that minute.
"""

from pyspark.sql import types as T

from spark.collect import LocalTable, sql_max

_S, _L, _ARR = T.StringType(), T.LongType(), T.ArrayType(T.StringType())

INTERVAL_SCHEMA = T.StructType([
    T.StructField("cluster", _S), T.StructField("brokerName", _S), T.StructField("brokerAddr", _S),
    T.StructField("start", _L), T.StructField("end", _L), T.StructField("durationMs", _L),
    T.StructField("knownBy", _ARR), T.StructField("missingOn", _ARR),
])
MINUTES_SCHEMA = T.StructType([
    T.StructField("minute", _L), T.StructField("cluster", _S), T.StructField("brokerName", _S),
    T.StructField("brokerAddr", _S), T.StructField("disagreeMs", _L), T.StructField("knownBy", _ARR),
    T.StructField("missingOn", _ARR),
])
MINUTE_MS = 60000


def _deltas(sessions, windows, servers):
    """{brokerAddr: {ts: ([known delta per server], [active delta per server])}} at every session start
    and end and every server's first and last event, for each broker that has a session."""
    index = {s: i for i, s in enumerate(servers)}
    n = len(servers)
    per_broker = {}

    def add(addr, ts, server, known, active):
        i = index.get(server)
        if i is None:
            return
        dk, da = per_broker.setdefault(addr, {}).setdefault(ts, ([0] * n, [0] * n))
        dk[i] += known
        da[i] += active

    for s in sessions:
        add(s["brokerAddr"], s["start"], s["server"], 1, 0)
        add(s["brokerAddr"], s["end"], s["server"], -1, 0)
    for addr in {s["brokerAddr"] for s in sessions}:
        for server, (first, last) in windows.items():
            add(addr, first, server, 0, 1)
            add(addr, last, server, 0, -1)
    return per_broker


def _islands(changes, servers):
    """The runs of equal (knownBy, missingOn) over a broker's boundary times (ascending) in which some
    active server knows the broker and another does not: [(start, end, knownBy, missingOn)]."""
    n = len(servers)
    known, active = [0] * n, [0] * n
    times = sorted(changes)
    runs, state = [], None
    for pos, ts in enumerate(times):
        dk, da = changes[ts]
        for i in range(n):
            known[i] += dk[i]
            active[i] += da[i]
        known_by = [servers[i] for i in range(n) if known[i] > 0 and active[i] > 0]
        missing_on = [servers[i] for i in range(n) if known[i] <= 0 and active[i] > 0]
        now = (known_by, missing_on) if known_by and missing_on else None
        if now != state:   # a new run starts here (a run of agreement is not kept)
            state = now
            if now is not None:
                runs.append([ts, None, known_by, missing_on])
        if now is not None and pos + 1 < len(times):   # the run lasts at least until the next boundary
            runs[-1][1] = times[pos + 1]
    return [tuple(run) for run in runs if run[1] is not None]


def intervals(sessions, servers_table, min_ms=1000):
    """``ns_disagreement`` (a ``LocalTable``) from the collected ``broker_sessions`` and ``servers``."""
    windows = {r["server"]: (r["firstTs"], r["lastTs"]) for r in servers_table.dicts()
               if r["server"] is not None and r["firstTs"] is not None}
    servers = sorted(windows)
    if len(servers) < 2:
        return LocalTable(INTERVAL_SCHEMA, [])
    every = [r for r in sessions.dicts() if r["brokerAddr"] is not None]
    rows = [r for r in every if r["start"] is not None and r["end"] is not None]
    names = {}
    for r in every:
        names.setdefault(r["brokerAddr"], []).append((r["cluster"], r["brokerName"]))
    found = []
    for addr, changes in _deltas(rows, windows, servers).items():
        cluster = sql_max(c for c, _ in names[addr])
        broker_name = sql_max(b for _, b in names[addr])
        for start, end, known_by, missing_on in _islands(changes, servers):
            if end - start >= min_ms:
                found.append((cluster, broker_name, addr, start, end, end - start, known_by, missing_on))
    return LocalTable(INTERVAL_SCHEMA, found)


def minutes(iv):
    """``ns_disagreement_minutes``: (minute, broker) in disagreement during that minute, for
    ``disagreeMs`` of it, from ``intervals``."""
    per = {}
    for r in iv.dicts():
        first = r["start"] // MINUTE_MS * MINUTE_MS
        last = (r["end"] - 1) // MINUTE_MS * MINUTE_MS
        for minute in range(first, last + 1, MINUTE_MS):
            acc = per.setdefault((minute, r["brokerAddr"]), {"cluster": [], "brokerName": [], "ms": 0,
                                                             "knownBy": set(), "missingOn": set()})
            acc["cluster"].append(r["cluster"])
            acc["brokerName"].append(r["brokerName"])
            acc["ms"] += min(r["end"], minute + MINUTE_MS) - max(r["start"], minute)
            acc["knownBy"].update(r["knownBy"])
            acc["missingOn"].update(r["missingOn"])
    return LocalTable(MINUTES_SCHEMA, [
        (minute, sql_max(acc["cluster"]), sql_max(acc["brokerName"]), addr, acc["ms"], sorted(acc["knownBy"]),
         sorted(acc["missingOn"]))
        for (minute, addr), acc in per.items()])
