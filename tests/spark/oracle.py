"""Independent, plain-Python answers to the reports, computed from the generated JSON events.

Written from the report definitions (see the spark modules' docstrings), not from their code: loops
over sorted events instead of window functions, so a wrong window or join in Spark shows up as a
mismatch here.
"""

import glob
import json
import math
import os
from collections import Counter, defaultdict

PRIO = {"broker_expired": 0, "broker_unregistered": 1, "broker_registered": 2, "broker_heartbeat": 3}
CONTACTS = {"broker_registered", "broker_heartbeat"}


def read_events(directory):
    events = []
    for path in sorted(glob.glob(os.path.join(directory, "*", "namesrv-events.log*"))):
        with open(path) as f:
            events.extend(json.loads(line) for line in f if line.strip())
    return events


def rank_percentile(values, q):
    """The report's gap percentile (``liveness.rank_percentiles``): the value at rank ceil(q * n)."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(q * len(ordered))) - 1]


def by_broker(events):
    """(server, brokerAddr) -> lifecycle events in report order."""
    groups = defaultdict(list)
    for e in events:
        if e["event"] in PRIO:
            groups[(e["server"], e["brokerAddr"])].append(e)
    for rows in groups.values():
        rows.sort(key=lambda e: (e["ts"], PRIO[e["event"]]))
    return groups


def walk(rows):
    """gaps [(ts, gap)], sessions [(start, end or None, end event)], flaps-ready ends [(ts, event)]."""
    gaps, sessions, last_contact, broken, in_session, prev_event = [], [], None, False, False, None
    for e in rows:
        if e["event"] in CONTACTS:
            if last_contact is not None and not broken:
                gaps.append((e["ts"], e["ts"] - last_contact))
            last_contact, broken = e["ts"], False
            if not in_session:
                sessions.append([e["ts"], None, None])
                in_session = True
        else:
            if (e["event"] == "broker_unregistered" and e.get("reason") != "expired"
                    and prev_event != "broker_expired"):
                broken = True
            if in_session:
                sessions[-1][1], sessions[-1][2] = e["ts"], e["event"]
                in_session = False
        prev_event = e["event"]
    return gaps, sessions


def liveness(events, flap_minutes=10):
    """{(server, addr): dict(counts, gaps, p50, p99, max, sessions)}, flaps set."""
    result, flaps = {}, set()
    for key, rows in by_broker(events).items():
        gaps, sessions = walk(rows)
        values = [g for _, g in gaps]
        counts = Counter(e["event"] for e in rows)
        result[key] = {
            "registrations": counts["broker_registered"], "heartbeats": counts["broker_heartbeat"],
            "expirations": counts["broker_expired"], "unregistrations": counts["broker_unregistered"],
            "sessions": len(sessions), "gaps": gaps,
            "gapP50Ms": rank_percentile(values, 0.5) if values else None,
            "gapP99Ms": rank_percentile(values, 0.99) if values else None,
            "gapMaxMs": max(values) if values else None, "session_list": sessions}
        for (start, end, why), nxt in zip(sessions, sessions[1:] + [None]):
            if why == "broker_expired" and nxt is not None and nxt[0] - end <= flap_minutes * 60000:
                flaps.add((key[0], key[1], end, nxt[0]))
    return result, flaps


def windows(events):
    span = {}
    for e in events:
        first, last = span.get(e["server"], (e["ts"], e["ts"]))
        span[e["server"]] = (min(first, e["ts"]), max(last, e["ts"]))
    return span


def hist_percentiles(hist):
    """(p50, p99) of a merged {bucket: count}: first bucket whose cumulative count reaches q."""
    total = sum(hist.values())
    cum, p50, p99 = 0, None, None
    for bucket in sorted(hist):
        cum += hist[bucket]
        if p50 is None and cum * 100 >= 50 * total:
            p50 = bucket
        if p99 is None and cum * 100 >= 99 * total:
            p99 = bucket
    return p50, p99


def requests_per_minute(events):
    rows = {}
    for e in events:
        if e["event"] != "request":
            continue
        key = (e["server"], e["ts"] // 60000 * 60000, e["code"])
        r = rows.setdefault(key, {"requests": 0, "errors": 0, "usSum": 0, "usMax": 0, "hist": Counter()})
        r["requests"] += e["count"]
        r["errors"] += e["count"] if e["resp"] > 0 else 0
        r["usSum"] += e["usSum"]
        r["usMax"] = max(r["usMax"], e["usMax"])
        r["hist"].update({int(k): v for k, v in e["hist"].items()})
    for r in rows.values():
        r["usP50"], r["usP99"] = hist_percentiles(r["hist"])
    return rows


def vanished(events):
    """{(server, topic, vanishedAt): returnedAt or None}."""
    result = {}
    per = defaultdict(list)
    for e in events:
        if e["event"] == "topic_route_changed":
            per[(e["server"], e["topic"])].append(e)
    for (server, topic), rows in per.items():
        rows.sort(key=lambda e: (e["ts"], len(e["after"]) > 0))
        gone_at = None
        for e in rows:
            if not e["after"] and gone_at is None:
                gone_at = e["ts"]
                result[(server, topic, gone_at)] = None
            elif e["after"] and gone_at is not None:
                result[(server, topic, gone_at)] = e["ts"]
                gone_at = None
    return result


def disagreements(events, min_ms=1000):
    """{(brokerAddr, start, end, knownBy, missingOn)} by a direct sweep over every boundary time."""
    span = windows(events)
    servers = sorted(span)
    live, _ = liveness(events)
    per_broker = defaultdict(dict)
    for (server, addr), info in live.items():
        per_broker[addr][server] = [(s, e if e is not None else span[server][1]) for s, e, _ in info["session_list"]]
    result = set()
    for addr, sessions in per_broker.items():
        times = sorted({t for s in sessions.values() for iv in s for t in iv}
                       | {t for first_last in span.values() for t in first_last})

        def state(t):
            active = [s for s in servers if span[s][0] <= t < span[s][1]]
            known = tuple(s for s in active if any(a <= t < b for a, b in sessions.get(s, [])))
            missing = tuple(s for s in active if s not in known)
            return (known, missing) if known and missing else None

        current, start = None, None
        for t in times:
            st = state(t)
            if st != current:
                if current is not None and t - start >= min_ms:
                    result.add((addr, start, t, current[0], current[1]))
                current, start = st, t
    return result
