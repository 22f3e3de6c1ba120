"""The normalized event row shared by every report, and the schema of our JSON event lines.

Both input formats become these columns (Java lines fill what their message carries and leave the rest
NULL). ``ts`` is epoch milliseconds (UTC); Java lines have second resolution.
"""

from pyspark.sql import types as T

_S, _L, _I, _B = T.StringType(), T.LongType(), T.IntegerType(), T.BooleanType()
_ARR = T.ArrayType(T.StringType())

#: Fields read from our JSON lines (see COMMON.md for their meaning).
JSON_SCHEMA = T.StructType([
    T.StructField("ts", _L), T.StructField("event", _S), T.StructField("server", _S),
    T.StructField("cluster", _S), T.StructField("brokerName", _S), T.StructField("brokerId", _L),
    T.StructField("brokerAddr", _S), T.StructField("reason", _S), T.StructField("ageMs", _L),
    T.StructField("topic", _S), T.StructField("before", _ARR), T.StructField("after", _ARR),
    T.StructField("code", _I), T.StructField("name", _S), T.StructField("resp", _I),
    T.StructField("count", _L), T.StructField("us", _L), T.StructField("usSum", _L),
    T.StructField("usMax", _L), T.StructField("hist", T.MapType(_S, _L)), T.StructField("peers", _L),
    T.StructField("peer", _S),
    T.StructField("topics", _ARR),   # topic_route_changed for several topics with the same before/after
    # the controller's master events (controller_master_inactive/_elected/_unavailable: spark.failovers)
    T.StructField("masterBrokerId", _L), T.StructField("masterAddress", _S), T.StructField("masterEpoch", _L),
    T.StructField("trigger", _S), T.StructField("masterlessMillis", _L),
])

#: What ``from_json`` reads: JSON_SCHEMA with ``topics`` as text. Heartbeats and registrations carry a
#: topic *count* there (``"topics":6``): read as an array, every such line failed that field and Spark
#: built two exceptions per line to return the partial row, about half of the staging time. As text,
#: the raw JSON of the value is kept and turned into the array only when it is one (``ingest.topics_array``),
#: with the same result (NULL for anything but an array).
JSON_READ_SCHEMA = T.StructType([T.StructField(f.name, _S) if f.name == "topics" else f for f in JSON_SCHEMA.fields])

#: The normalized event columns, in order: JSON fields plus ``added``/``removed`` (brokerNames that
#: joined/left a topic), ``source`` ("json" | "java") and ``file``.
EVENT_COLUMNS = [f.name for f in JSON_SCHEMA.fields] + ["added", "removed", "source", "file"]
EVENT_TYPES = dict([(f.name, f.dataType) for f in JSON_SCHEMA.fields]
                   + [("added", _ARR), ("removed", _ARR), ("source", _S), ("file", _S)])

#: What each input line is: a normalized event, or why it is not one.
KIND_JSON = "json"               # one of our JSON events
KIND_JAVA = "java"               # a Java namesrv.log line mapped to an event
KIND_JAVA_OTHER = "java_other"   # a well-formed Java log line that carries no event we use
KIND_CONTINUATION = "continuation"  # a stack-trace line following a Java log line
KIND_MALFORMED = "malformed"     # anything else (bad JSON, JSON without ts/event, garbage)
KIND_BLANK = "blank"

BROKER_EVENTS = ("broker_registered", "broker_heartbeat", "broker_expired", "broker_unregistered")
#: Java-only helper rows carrying a brokerAddr's cluster/brokerName/brokerId (not reported).
IDENTITY_EVENT = "broker_identity"
