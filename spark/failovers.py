"""Report 6: controller failovers: which broker groups lost their master, for how long they had none,
who took over, and which groups the controller could give no master at all.

The controller (RIP-44, ``enableControllerInNamesrv``) writes three events about masters, only on the
controller that leads: ``controller_master_inactive`` when it learns a group's master is gone,
``controller_master_elected`` (new master id, address, epoch, ``trigger``, and ``masterlessMillis``
when a master had been lost) and ``controller_master_unavailable`` when no replica could be elected.
There are a handful per failover, so Spark only selects them (``controller_events``, collected with
the other small tables in the report's one collect) and the episodes are put together on the driver.

An *episode* is per broker group (``brokerName``, as the controller keys its groups), across every
controller: it opens at the first ``controller_master_inactive`` and closes at the next
``controller_master_elected``. A second ``inactive`` while open is the same loss seen again (a new
leader learns it anew) and only adds its server. An ``elected`` with ``masterlessMillis`` and no open
episode is a loss whose ``inactive`` is not in the input (before ``--since``, or in a rotated-away
file): the loss time is inferred from it. An episode still open at the end lasts until the last event
of the servers that logged it (``returned`` false, as a vanished topic's), and is the worst case:
a group without a master at the end of the logs. Elections with no loss before them (the first
election, an admin's ``electMaster`` of a live master) are not failovers.

Clients follow the route, not the controller: every name server writes ``route_master_changed`` when its
routes start naming a new master for a group, from the master's registration as brokerId 0 (``trigger``
"registration") or from an election the controller in its process applied ("controller"). A failover is
*routed* at the first of those naming the elected address, between its loss and the group's next loss, on
any server (``routedAt``, ``routedMs`` from the loss, ``routedVia``), and ``lastRoutedAt`` is when the last of
the servers that did (``routedBy``) followed. NULL where no name server logged it (Java's, or before it).

No-master periods (``controller_no_master``): per group, consecutive ``controller_master_unavailable``
events until the next election (``masterBackAt``, NULL if none came).
"""

from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark.collect import LocalTable, last_events, sql_max

INACTIVE, ELECTED, UNAVAILABLE = ("controller_master_inactive", "controller_master_elected",
                                  "controller_master_unavailable")
ROUTED = "route_master_changed"
#: at one millisecond: a loss, then the failed attempts, then the election, then the routes
_ORDER = {INACTIVE: 0, UNAVAILABLE: 1, ELECTED: 2, ROUTED: 3}
COLUMNS = ("ts", "server", "event", "cluster", "brokerName", "masterBrokerId", "masterAddress", "masterEpoch",
           "trigger", "masterlessMillis")


def controller_events(events):
    """The controllers' master events as they are (a few per failover): collected, then paired on the driver."""
    return events.filter(F.col("event").isin(INACTIVE, ELECTED, UNAVAILABLE, ROUTED)).select(*COLUMNS)


def controller_event_count(rows):
    """How many of the collected rows are the controller's own (the routes' events are every name server's)."""
    return sum(1 for event in rows.column("event") if event != ROUTED)


_S, _L = T.StringType(), T.LongType()
FAILOVER_SCHEMA = T.StructType([
    T.StructField("cluster", _S), T.StructField("brokerName", _S), T.StructField("lostAt", _L),
    T.StructField("oldMasterId", _L), T.StructField("oldMasterAddress", _S), T.StructField("oldEpoch", _L),
    T.StructField("electedAt", _L), T.StructField("newMasterId", _L), T.StructField("newMasterAddress", _S),
    T.StructField("newEpoch", _L), T.StructField("trigger", _S), T.StructField("masterlessMs", _L),
    T.StructField("recovered", T.BooleanType()), T.StructField("failedElections", _L),
    T.StructField("lossInferred", T.BooleanType()), T.StructField("servers", T.ArrayType(_S)),
    T.StructField("routedAt", _L), T.StructField("routedMs", _L), T.StructField("routedVia", _S),
    T.StructField("lastRoutedAt", _L), T.StructField("routedBy", T.ArrayType(_S)),
])
NO_MASTER_SCHEMA = T.StructType([
    T.StructField("cluster", _S), T.StructField("brokerName", _S), T.StructField("firstAt", _L),
    T.StructField("lastAt", _L), T.StructField("attempts", _L), T.StructField("masterBackAt", _L),
    T.StructField("servers", T.ArrayType(_S)),
])


def _by_group(rows):
    groups = {}
    for r in sorted(rows.dicts(), key=lambda r: (r["ts"], _ORDER[r["event"]], r["server"] or "")):
        groups.setdefault(r["brokerName"], []).append(r)
    return groups


def _cluster(events):
    return next((r["cluster"] for r in events if r["cluster"] is not None), None)


def failovers(rows, servers):
    """(``controller_failovers``, ``controller_no_master``) as ``LocalTable``s, from the collected
    ``controller_events`` rows and the ``servers`` table (where an open episode ends)."""
    last = last_events(servers)
    lost, no_master = [], []
    for name, events in sorted(_by_group(rows).items(), key=lambda kv: kv[0] or ""):
        routes = [r for r in events if r["event"] == ROUTED]
        events = [r for r in events if r["event"] != ROUTED]
        cluster = _cluster(events)
        episode, unavailable = None, None
        first = len(lost)
        for r in events:
            if r["event"] == INACTIVE:
                if episode is None:
                    episode = {"lostAt": r["ts"], "old": (r["masterBrokerId"], r["masterAddress"], r["masterEpoch"]),
                               "failed": 0, "servers": set(), "inferred": False}
                episode["servers"].add(r["server"])
            elif r["event"] == UNAVAILABLE:
                if episode is not None:
                    episode["failed"] += 1
                    episode["servers"].add(r["server"])
                if unavailable is None:
                    unavailable = {"firstAt": r["ts"], "attempts": 0, "servers": set()}
                unavailable.update(lastAt=r["ts"], attempts=unavailable["attempts"] + 1)
                unavailable["servers"].add(r["server"])
            else:
                if episode is None and r["masterlessMillis"] is not None:
                    episode = {"lostAt": r["ts"] - r["masterlessMillis"], "old": (None, None, None), "failed": 0,
                               "servers": set(), "inferred": True}
                if episode is not None:
                    episode["servers"].add(r["server"])
                    lost.append(_failover(cluster, name, episode, r))
                    episode = None
                if unavailable is not None:
                    no_master.append(_no_master(cluster, name, unavailable, r["ts"]))
                    unavailable = None
        if episode is not None:
            until = sql_max([last.get(s) for s in episode["servers"]] + [episode["lostAt"]])
            lost.append(_failover(cluster, name, episode, None, until))
        if unavailable is not None:
            no_master.append(_no_master(cluster, name, unavailable, None))
        lost[first:] = _routed(lost[first:], routes)
    return LocalTable(FAILOVER_SCHEMA, lost), LocalTable(NO_MASTER_SCHEMA, no_master)


def _routed(group_failovers, routes):
    """One group's failover rows (in time order) with the routing columns: see the module's docstring."""
    out = []
    for i, row in enumerate(group_failovers):
        lost_at, address = row[2], row[8]
        until = group_failovers[i + 1][2] if i + 1 < len(group_failovers) else None
        firsts = {}
        if address is not None:
            for r in routes:   # in time order
                if r["masterAddress"] == address and r["ts"] >= lost_at and (until is None or r["ts"] < until):
                    firsts.setdefault(r["server"], r)
        if not firsts:
            out.append(row + (None, None, None, None, None))
            continue
        earliest = min(firsts.values(), key=lambda r: r["ts"])
        out.append(row + (earliest["ts"], earliest["ts"] - lost_at, earliest["trigger"],
                          max(r["ts"] for r in firsts.values()), sorted(s for s in firsts if s is not None)))
    return out


def _failover(cluster, name, episode, elected, until=None):
    old_id, old_address, old_epoch = episode["old"]
    if elected is None:
        return (cluster, name, episode["lostAt"], old_id, old_address, old_epoch, None, None, None, None, None,
                until - episode["lostAt"], False, episode["failed"], episode["inferred"], sorted(episode["servers"]))
    return (cluster, name, episode["lostAt"], old_id, old_address, old_epoch, elected["ts"],
            elected["masterBrokerId"], elected["masterAddress"], elected["masterEpoch"], elected["trigger"],
            elected["ts"] - episode["lostAt"], True, episode["failed"], episode["inferred"],
            sorted(episode["servers"]))


def _no_master(cluster, name, unavailable, back_at):
    return (cluster, name, unavailable["firstAt"], unavailable["lastAt"], unavailable["attempts"], back_at,
            sorted(unavailable["servers"]))
