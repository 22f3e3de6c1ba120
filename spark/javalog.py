"""The Java NameServer's ``namesrv.log`` as normalized events (Spark columns, no Python UDF).

Layout (``distribution/conf/logback_namesrv.xml`` in 4.9, ``rmq.namesrv.logback.xml`` in 5.x)::

    %d{yyy-MM-dd HH:mm:ss,GMT+8} %p %t - %m%n      ->  2024-03-01 08:00:00 INFO NSScheduledThread1 - ...

The file appender writes seconds in GMT+8 (``GMT+8`` is the date converter's time-zone option, not
milliseconds); the console appender of 4.9 writes ``,SSS`` milliseconds. Both are accepted and the zone
is a parameter (``--java-tz``). A log line carries no server id: it comes from the file's path
(``server_from_path``).

Messages used (``RouteInfoManager`` and ``NettyRemotingServer``; 4.9 and 5.x wording):

=======================================================================  ===========================
``new broker registered, <addr> HAServer: <ha>`` (4.9)                   broker_registered
``new broker registered, BrokerIdentityInfo [clusterName=C, brokerAddr=A] HAService: <ha>`` (5.x)
``cluster [C] brokerName [B] master address change from X to A`` (4.9)   broker_heartbeat when X == A
                                                                         (logged at every master
                                                                         registration), else identity
``The broker channel expired, <addr or BrokerIdentityInfo> <n>ms``       broker_expired (ageMs unknown)
``unregisterBroker, remove from brokerLiveTable OK, <addr or info>``     broker_unregistered: reason
                                                                         "request" (4.9) or "unknown"
                                                                         (5.x routes every removal here)
``the broker's channel destroyed, <addr>, clean it's data structure...``  broker_unregistered,
                                                                         reason "channel_closed" (4.9)
``remove brokerAddr[<id>, <addr>] from brokerAddrTable, because ...``    identity (brokerId)
``new topic registered, T QueueData [brokerName=B, ...]``                topic_route_changed [] -> [B]
``Register topic route:T, [QueueData [brokerName=B, ...], ...]`` (5.x)   topic_route_changed [] -> [B..]
``removeTopicByBrokerName, remove one broker's topic T QueueData [..]``  topic_route_changed, removed
``remove topic[T QueueData [brokerName=B, ..]], from topicQueueTable..`` topic_route_changed, removed
``deleteTopic, remove one broker's topic B T QueueData [..]``            topic_route_changed, removed
``... remove the topic all queue [C] T`` / ``remove topic[T] all queue`` topic_route_changed, after []
``NETTY SERVER PIPELINE: channelInactive, the channel[<peer>]``          channel_closed
=======================================================================  ===========================

Java logs no heartbeat of a slave, no broker joining an existing topic and (5.x) no heartbeat at all,
so from Java logs those numbers are lower bounds; ``before``/``after`` are NULL where unknown.
"""

from pyspark.sql import functions as F

LAYOUT = (r"^(\d{3,4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[,.](\d{3}))?\s+"
          r"(TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\s+(.*?) - (.*)$")
CONTINUATION = (r"^(\s+at |\s+\.\.\. \d+ (more|common frames omitted)|\s*Caused by: |\s*Suppressed: |"
                r"[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)+(Exception|Error|Throwable)(: .*)?$)")
DEFAULT_TZ = "GMT+08:00"

_ID = r"(?:BrokerIdentityInfo \[clusterName=(.*?), brokerAddr=([^\]\s]+)\]|([^\s\[\]]+))"
_QD = r"QueueData \[brokerName=([^,\]\s]+)"
_PATTERNS = {
    "REG": r"^new broker registered, " + _ID + r" HA(?:Server|Service): ",
    "MASTER": r"^cluster \[(.*?)\] brokerName \[(.*?)\] master address change from (\S+) to (\S+)$",
    "EXPIRED": r"^The broker channel expired, " + _ID + r" (\d+)ms$",
    "UNREG": r"^unregisterBroker, remove from brokerLiveTable OK, " + _ID + r"$",
    "DESTROYED": r"^the broker's channel destroyed, (\S+), clean it's data structure at once$",
    "REMOVE_ADDR": r"^remove brokerAddr\[(-?\d+), ([^\]\s]+)\] from brokerAddrTable",
    "NEW_TOPIC": r"^new topic registered, (\S+) " + _QD,
    "REG_TOPIC": r"^Register topic route:(\S+?), \[",
    "TOPIC_DROP": r"^removeTopicByBrokerName, remove one broker's topic (\S+) " + _QD,
    "TOPIC_GONE": r"^removeTopicByBrokerName, remove the topic all queue (\S+)$",
    "CD_TOPIC_DROP": r"^remove topic\[(\S+) " + _QD,
    "CD_TOPIC_GONE": r"^remove topic\[(\S+)\] all queue, from topicQueueTable",
    "DEL_DROP": r"^deleteTopic, remove one broker's topic (\S+) (\S+) " + _QD,
    "DEL_GONE": r"^deleteTopic, remove the topic all queue (?:\S+ )?(\S+)$",
    "INACTIVE": r"^NETTY SERVER PIPELINE: channelInactive, the channel\[(.*?)\]$",
}

#: Path parts that name a server: ``10.0.0.1_9876``, ``ns1:9876``, ``namesrv_10.0.0.1_9876.log`` (the
#: occurrence nearest to the file wins).
SERVER_IN_PATH = (r"^(?:.*[/_])?((?:\d{1,3}\.){3}\d{1,3}|[A-Za-z][A-Za-z0-9.-]*?)[_:](\d{2,5})"
                  r"(?:[/_.-].*)?$")
#: File names that say nothing about the server (their directory is used instead).
STANDARD_NAMES = ("namesrv", "namesrv_default", "namesrv-events", "namesrv_events", "rocketmq_client",
                  "remoting", "namesrv_traffic")


def _group(column, kind, index):
    return F.nullif(F.regexp_extract(column, _PATTERNS[kind], index), F.lit(""))


def _pick(jkind, mapping, default=None):
    """CASE jkind WHEN k THEN mapping[k] ... (only the matching branch is evaluated)."""
    expr = None
    for kind, value in mapping.items():
        expr = F.when(jkind == kind, value) if expr is None else expr.when(jkind == kind, value)
    return expr if default is None else expr.otherwise(default)


def layout(value):
    """A struct (date, millis, level, thread, msg) when ``value`` has the logback layout, else NULL."""
    date = F.regexp_extract(value, LAYOUT, 1)
    return F.when(date != "", F.struct(
        date.alias("date"), F.regexp_extract(value, LAYOUT, 2).alias("millis"),
        F.regexp_extract(value, LAYOUT, 3).alias("level"), F.regexp_extract(value, LAYOUT, 4).alias("thread"),
        F.regexp_extract(value, LAYOUT, 5).alias("msg")))


def timestamp_ms(date, millis, tz=DEFAULT_TZ):
    """Epoch ms of a wall-clock ``yyyy-MM-dd HH:mm:ss`` in zone ``tz`` (session zone must be UTC)."""
    local = F.try_to_timestamp(date, F.lit("yyyy-MM-dd HH:mm:ss"))
    instant = F.to_utc_timestamp(local, tz)
    extra = F.coalesce(F.nullif(millis, F.lit("")).cast("long"), F.lit(0))
    return F.unix_millis(instant) + extra


def message_kind(msg):
    m = msg
    return (F.when(m.startswith("new broker registered, "), "REG")
            .when(m.startswith("cluster [") & m.contains("] master address change from "), "MASTER")
            .when(m.startswith("The broker channel expired, "), "EXPIRED")
            .when(m.startswith("unregisterBroker, remove from brokerLiveTable OK, "), "UNREG")
            .when(m.startswith("the broker's channel destroyed, ") & m.endswith("clean it's data structure at once"),
                  "DESTROYED")
            .when(m.startswith("remove brokerAddr["), "REMOVE_ADDR")
            .when(m.startswith("new topic registered, "), "NEW_TOPIC")
            .when(m.startswith("Register topic route:"), "REG_TOPIC")
            .when(m.startswith("removeTopicByBrokerName, remove one broker's topic "), "TOPIC_DROP")
            .when(m.startswith("removeTopicByBrokerName, remove the topic all queue "), "TOPIC_GONE")
            .when(m.startswith("remove topic[") & m.contains(" QueueData [brokerName="), "CD_TOPIC_DROP")
            .when(m.startswith("remove topic[") & m.contains("] all queue, from topicQueueTable"), "CD_TOPIC_GONE")
            .when(m.startswith("deleteTopic, remove one broker's topic "), "DEL_DROP")
            .when(m.startswith("deleteTopic, remove the topic all queue "), "DEL_GONE")
            .when(m.startswith("NETTY SERVER PIPELINE: channelInactive, the channel["), "INACTIVE"))


def event_columns(msg, jk):
    """Normalized columns of a Java message of kind ``jk`` (a column holding ``message_kind(msg)``).

    ``event`` is NULL when the message is not one we use. ``jk`` should be a column computed in an
    earlier projection: inlined into every branch, the generated code would outgrow the JVM's 64 KB.
    """
    empty = F.array().cast("array<string>")

    def addr(kind):
        return F.coalesce(_group(msg, kind, 2), _group(msg, kind, 3))

    old_addr, new_addr = _group(msg, "MASTER", 3), _group(msg, "MASTER", 4)
    topic_event = "topic_route_changed"
    route_after = F.regexp_extract_all(msg, F.lit(r"brokerName=([^,\]\s]+)"), 1)
    after = _pick(jk, {"NEW_TOPIC": F.array(_group(msg, "NEW_TOPIC", 2)), "REG_TOPIC": route_after,
                       "TOPIC_GONE": empty, "CD_TOPIC_GONE": empty, "DEL_GONE": empty})
    return {
        "event": _pick(jk, {
            "REG": F.lit("broker_registered"),
            "MASTER": F.when(old_addr == new_addr, "broker_heartbeat").otherwise("broker_identity"),
            "EXPIRED": F.lit("broker_expired"), "UNREG": F.lit("broker_unregistered"),
            "DESTROYED": F.lit("broker_unregistered"), "REMOVE_ADDR": F.lit("broker_identity"),
            "NEW_TOPIC": F.lit(topic_event), "REG_TOPIC": F.lit(topic_event), "TOPIC_DROP": F.lit(topic_event),
            "TOPIC_GONE": F.lit(topic_event), "CD_TOPIC_DROP": F.lit(topic_event),
            "CD_TOPIC_GONE": F.lit(topic_event), "DEL_DROP": F.lit(topic_event), "DEL_GONE": F.lit(topic_event),
            "INACTIVE": F.lit("channel_closed")}),
        "brokerAddr": _pick(jk, {"REG": addr("REG"), "EXPIRED": addr("EXPIRED"), "UNREG": addr("UNREG"),
                                 "MASTER": new_addr, "DESTROYED": _group(msg, "DESTROYED", 1),
                                 "REMOVE_ADDR": _group(msg, "REMOVE_ADDR", 2)}),
        "cluster": _pick(jk, {"REG": _group(msg, "REG", 1), "EXPIRED": _group(msg, "EXPIRED", 1),
                              "UNREG": _group(msg, "UNREG", 1), "MASTER": _group(msg, "MASTER", 1)}),
        "brokerName": _pick(jk, {"MASTER": _group(msg, "MASTER", 2)}),
        "brokerId": _pick(jk, {"MASTER": F.lit(0).cast("long"),
                               "REMOVE_ADDR": _group(msg, "REMOVE_ADDR", 1).cast("long")}),
        "reason": _pick(jk, {"UNREG": F.when(msg.contains("BrokerIdentityInfo ["), "unknown").otherwise("request"),
                             "DESTROYED": F.lit("channel_closed")}),
        "topic": _pick(jk, {k: _group(msg, k, 2 if k == "DEL_DROP" else 1)
                            for k in ("NEW_TOPIC", "REG_TOPIC", "TOPIC_DROP", "TOPIC_GONE", "CD_TOPIC_DROP",
                                      "CD_TOPIC_GONE", "DEL_DROP", "DEL_GONE")}),
        "before": _pick(jk, {"NEW_TOPIC": empty, "REG_TOPIC": empty}),
        "after": after,
        "added": _pick(jk, {"NEW_TOPIC": after, "REG_TOPIC": after}),
        "removed": _pick(jk, {"TOPIC_DROP": F.array(_group(msg, "TOPIC_DROP", 2)),
                              "CD_TOPIC_DROP": F.array(_group(msg, "CD_TOPIC_DROP", 2)),
                              "DEL_DROP": F.array(_group(msg, "DEL_DROP", 1))}),
        "peer": _pick(jk, {"INACTIVE": _group(msg, "INACTIVE", 1)}),
    }


def server_from_path(file_path):
    """The server id a file's path names (``host:port``), else its file name (or directory if standard)."""
    path = F.regexp_replace(file_path, r"^[A-Za-z][A-Za-z0-9+.-]*:(//[^/]*)?", "")
    host = F.regexp_extract(path, SERVER_IN_PATH, 1)
    port = F.regexp_extract(path, SERVER_IN_PATH, 2)
    name = F.regexp_extract(path, r"([^/]+)$", 1)
    base = F.regexp_replace(name, r"(\.\d+)?(\.log)?(\.\d+)?(\.gz|\.bz2|\.deflate|\.lz4|\.snappy|\.zst)?$", "")
    parent = F.nullif(F.regexp_extract(path, r"([^/]+)/[^/]+$", 1), F.lit(""))
    fallback = F.when(base.isin(*STANDARD_NAMES) | (base == ""), F.coalesce(parent, name)).otherwise(base)
    return F.when(host != "", F.concat(host, F.lit(":"), port)).otherwise(fallback)
