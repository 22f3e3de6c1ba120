"""Report 1: broker liveness per name server: sessions, heartbeat gaps, expirations, flaps.

Per (server, brokerAddr) the lifecycle events are ordered by time (ties: expired, unregistered,
registered, heartbeat) and read as a state machine, with window functions only (one sort per broker,
no self-join, cost linear in the number of events):

- a *contact* (registered or heartbeat) after nothing or after an end starts a *session*; the first
  end (expired or unregistered) after a contact ends it. A log that starts while a broker is already
  registered therefore starts its session at the first heartbeat seen;
- a *heartbeat gap* is the time between two consecutive contacts, unless the broker left cleanly in
  between (unregistered for a request or a closed channel): gaps across an expiration are counted, as
  they are what made the server expire the broker;
- a *flap* is an expiration followed by the next session start on the same server within
  ``flap_minutes``.

Gap percentiles are exact at any count: the value at rank ``ceil(q × n)`` of the broker's sorted
gaps. That is what ``percentile_approx`` at accuracy 10,000 gave up to about that many gaps (a week of
30 s heartbeats is twice as many), for about the same time (9.7 M lines: the aggregation 7.8 s instead
of 11.7 s, end to end within the machine's noise).
"""

from pyspark import StorageLevel
from pyspark.sql import Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark.collect import LocalTable, last_events

CONTACTS = ("broker_registered", "broker_heartbeat")
PRIORITY = {"broker_expired": 0, "broker_unregistered": 1, "broker_registered": 2, "broker_heartbeat": 3}
KEY = ["server", "brokerAddr"]
ORDER = ["ts", "_prio"]


def _priority():
    expr = None
    for event, prio in PRIORITY.items():
        expr = F.when(F.col("event") == event, prio) if expr is None else expr.when(F.col("event") == event, prio)
    return expr


def timeline(broker_events):
    """Broker events in order with ``gap`` (ms since the previous contact) and session markers."""
    w = Window.partitionBy(*KEY).orderBy(*ORDER)
    before = w.rowsBetween(Window.unboundedPreceding, -1)
    rows = broker_events.select("server", "brokerAddr", "cluster", "brokerName", "brokerId", "ts", "event",
                                "reason", _priority().alias("_prio"),
                                F.col("event").isin(*CONTACTS).alias("contact"))
    rows = rows.select("*", F.lag("event").over(w).alias("_prevEvent"), F.lag("contact").over(w).alias("_prevContact"))
    clean_end = ((F.col("event") == "broker_unregistered")
                 & (F.coalesce(F.col("reason"), F.lit("")) != "expired")
                 & (F.coalesce(F.col("_prevEvent"), F.lit("")) != "broker_expired"))
    rows = rows.select(
        "*",
        F.last(F.when(F.col("contact"), F.col("ts")), ignorenulls=True).over(before).alias("_prevContactTs"),
        F.last(F.when(clean_end, F.col("ts")), ignorenulls=True).over(before).alias("_prevBreakTs"))
    gap = F.when(F.col("contact") & F.col("_prevContactTs").isNotNull()
                 & (F.col("_prevBreakTs").isNull() | (F.col("_prevBreakTs") <= F.col("_prevContactTs"))),
                 F.col("ts") - F.col("_prevContactTs"))
    starts = F.col("contact") & ~F.coalesce(F.col("_prevContact"), F.lit(False))
    ends = ~F.col("contact") & F.coalesce(F.col("_prevContact"), F.lit(False))
    return rows.select("server", "brokerAddr", "cluster", "brokerName", "brokerId", "ts", "event", "reason",
                       "_prio", "contact", gap.alias("gap"), starts.alias("sessionStart"), ends.alias("sessionEnd"))


def boundaries(tl):
    """Session starts and ends, each with the next boundary's time and event (strictly alternating)."""
    w = Window.partitionBy(*KEY).orderBy(*ORDER)
    b = tl.filter(F.col("sessionStart") | F.col("sessionEnd"))
    return b.select("*", F.lead("ts").over(w).alias("nextTs"), F.lead("event").over(w).alias("nextEvent"),
                    F.lead("reason").over(w).alias("nextReason"))


def session_starts(bounds):
    """One row per session: its start and the next boundary (time, event, reason). A session still open
    has no next boundary: it ends at its server's last event, which ``close_sessions`` fills in on the
    driver (a join with the server spans here was a broadcast, a Spark job of its own)."""
    s = bounds.filter(F.col("sessionStart"))
    return s.select("server", "cluster", "brokerName", "brokerId", "brokerAddr", F.col("ts").alias("start"),
                    "nextTs", F.col("nextEvent").alias("endEvent"), F.col("nextReason").alias("endReason"))


def close_sessions(starts, servers):
    """``broker_sessions`` from the collected ``session_starts`` and ``servers`` (``collect.LocalTable``):
    the end is the next boundary, else the server's last event (then ``open``)."""
    last = last_events(servers)
    fields = {f.name: f for f in starts.schema.fields}
    schema = T.StructType([fields[name] for name in ("server", "cluster", "brokerName", "brokerId", "brokerAddr",
                                                     "start")]
                          + [T.StructField("end", T.LongType()), T.StructField("durationMs", T.LongType()),
                             fields["endEvent"], fields["endReason"], T.StructField("open", T.BooleanType())])
    rows = []
    for r in starts.dicts():
        end = r["nextTs"] if r["nextTs"] is not None else last.get(r["server"])
        duration = None if end is None or r["start"] is None else end - r["start"]
        rows.append((r["server"], r["cluster"], r["brokerName"], r["brokerId"], r["brokerAddr"], r["start"], end,
                     duration, r["endEvent"], r["endReason"], r["nextTs"] is None))
    return LocalTable(schema, rows)


def flaps(bounds, flap_minutes):
    """Expirations followed by a new session on the same server within ``flap_minutes``."""
    e = bounds.filter(F.col("sessionEnd") & (F.col("event") == "broker_expired") & F.col("nextTs").isNotNull())
    down = F.col("nextTs") - F.col("ts")
    return (e.filter(down <= flap_minutes * 60000)
            .select("server", "cluster", "brokerName", "brokerId", "brokerAddr", F.col("ts").alias("expiredAt"),
                    F.col("nextTs").alias("reRegisteredAt"), down.alias("downMs")))


QUANTILES = (0.5, 0.99)


def rank_percentiles(sorted_values, quantiles=QUANTILES):
    """The values at rank ``ceil(q × n)`` of an ascending array column (null where it is empty)."""
    n = F.size(sorted_values)
    picked = [F.element_at(sorted_values, F.greatest(F.lit(1), F.ceil(F.lit(float(q)) * n).cast("int")))
              for q in quantiles]
    return F.when(n > 0, F.array(*picked))


def per_broker(tl, late_ms):
    """Per (server, broker), in one aggregation over the timeline (one pass, one percentile): what
    ``summary`` and ``heartbeat.drift`` report. ``late_ms``: intervals above it are late.

    The drift columns are over the intervals only (rows with a ``gap``), as ``heartbeat.drift`` defines them.
    """
    def count_of(event):
        return F.sum(F.when(F.col("event") == event, 1).otherwise(0)).alias(event.split("_", 1)[1])

    interval = F.col("gap").isNotNull()
    late = F.col("gap") > late_ms
    agg = (tl.groupBy(*KEY)
            .agg(F.max("cluster").alias("cluster"), F.max("brokerName").alias("brokerName"),
                 F.max("brokerId").alias("brokerId"), count_of("broker_registered"),
                 count_of("broker_heartbeat"), count_of("broker_expired"), count_of("broker_unregistered"),
                 F.sum(F.col("sessionStart").cast("int")).alias("sessions"),
                 F.min("ts").alias("firstSeen"), F.max("ts").alias("lastSeen"),
                 F.count("gap").alias("gaps"), F.array_sort(F.collect_list("gap")).alias("_gaps"),
                 F.max("gap").alias("gapMaxMs"),
                 F.max(F.when(interval, F.col("cluster"))).alias("_intervalCluster"),
                 F.max(F.when(interval, F.col("brokerName"))).alias("_intervalBrokerName"),
                 F.sum(late.cast("int")).alias("lateIntervals"),
                 F.min(F.when(late, F.col("ts"))).alias("firstLateAt"),
                 F.max(F.when(late, F.col("ts"))).alias("lastLateAt")))
    return agg.select("*", rank_percentiles(F.col("_gaps")).alias("_p")).drop("_gaps")


def summary(agg, flap_rows):
    """Per (server, broker): registrations, heartbeats, expirations, flaps and heartbeat gap statistics
    (``agg``: ``per_broker``)."""
    flap_counts = flap_rows.groupBy(*KEY).agg(F.count(F.lit(1)).alias("flaps"))
    return (agg.join(flap_counts, KEY, "left")
            .select("cluster", "brokerName", "brokerId", "brokerAddr", "server",
                    F.col("registered").alias("registrations"), F.col("heartbeat").alias("heartbeats"),
                    F.col("expired").alias("expirations"), F.col("unregistered").alias("unregistrations"),
                    F.coalesce(F.col("flaps"), F.lit(0)).alias("flaps"), "sessions", "firstSeen", "lastSeen",
                    "gaps", F.col("_p")[0].alias("gapP50Ms"), F.col("_p")[1].alias("gapP99Ms"), "gapMaxMs"))


class Liveness:
    """The liveness tables of one run; ``timeline`` (and the small per-broker aggregate, which
    ``heartbeat.drift`` reads too) are persisted while the reports use them. ``late_ms``: intervals
    above it are late (``heartbeat.drift``). ``session_starts`` becomes ``broker_sessions`` on the
    driver (``close_sessions``)."""

    def __init__(self, broker_events, flap_minutes=10, late_ms=35000):
        self.late_ms = int(late_ms)
        self.timeline = timeline(broker_events).persist(StorageLevel.MEMORY_AND_DISK)
        self.bounds = boundaries(self.timeline).persist(StorageLevel.MEMORY_AND_DISK)
        self.per_broker = per_broker(self.timeline, self.late_ms).persist(StorageLevel.MEMORY_AND_DISK)
        self.session_starts = session_starts(self.bounds)
        self.flaps = flaps(self.bounds, flap_minutes)
        self.summary = summary(self.per_broker, self.flaps)

    def release(self):
        self.timeline.unpersist()
        self.bounds.unpersist()
        self.per_broker.unpersist()
