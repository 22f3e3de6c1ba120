"""Read both log formats into one table of classified lines, staged once as Parquet.

Every input line becomes one row with a ``kind`` (see ``schema.KIND_*``): malformed lines are
counted, never fatal. Our JSON lines are parsed with ``from_json`` and a fixed schema; other lines
are tried as Java ``namesrv.log`` lines (``javalog``). Everything runs in the executors; the driver
only lists the input paths.

The classified lines are written once to ``<out>/_work/lines`` (Parquet: each report reads only its
columns) and every report reads from there: the raw logs are scanned once. The table is not partitioned
by event: heartbeats are almost every line, so the partitions saved little reading, and writing 10 event
partitions from every task cost about a third more CPU than the plain write (``bench/results/spark_fleet.md``).
"""

import contextlib

from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark import javalog
from spark.schema import (BROKER_EVENTS, EVENT_COLUMNS, EVENT_TYPES, IDENTITY_EVENT, JSON_READ_SCHEMA, KIND_BLANK,
                          KIND_CONTINUATION, KIND_JAVA, KIND_JAVA_OTHER, KIND_JSON, KIND_MALFORMED)

RAW_SAMPLE_CHARS = 300
LINE_SCHEMA = T.StructType([T.StructField("value", T.StringType()), T.StructField("file", T.StringType())])


def hadoop_path(spark, path):
    jvm = spark._jvm
    p = jvm.org.apache.hadoop.fs.Path(path)
    return p, p.getFileSystem(spark._jsc.hadoopConfiguration())


def split_inputs(inputs):
    """``--input`` values (repeatable, comma-separated) as one list of paths or globs."""
    result = []
    for item in inputs if isinstance(inputs, (list, tuple)) else [inputs]:
        result.extend(part.strip() for part in str(item).split(",") if part.strip())
    return result


def resolve_inputs(spark, inputs):
    """(existing, missing): which paths/globs match anything, checked through the Hadoop FileSystem."""
    existing, missing = [], []
    for item in split_inputs(inputs):
        path, fs = hadoop_path(spark, item)
        try:
            statuses = fs.globStatus(path)
        except Exception:  # noqa: BLE001 - an unreachable file system is a missing input, reported
            statuses = None
        (existing if statuses else missing).append(item)
    return existing, missing


def read_lines(spark, inputs):
    """(DataFrame[value, file], missing inputs). Directories are read recursively; .gz is inflated."""
    existing, missing = resolve_inputs(spark, inputs)
    if not existing:
        return spark.createDataFrame([], LINE_SCHEMA), missing
    df = (spark.read.option("recursiveFileLookup", "true").option("ignoreCorruptFiles", "true")
          .text(existing))
    return df.select("value", F.col("_metadata.file_path").alias("file")), missing


def input_bytes(spark, inputs, limit):
    """Bytes of the input (stops counting past ``limit``), local or on any Hadoop file system; None when
    a file system cannot tell."""
    from spark.session import local_input_bytes
    paths = split_inputs(inputs)
    size = local_input_bytes(paths, limit)
    if size is not None:
        return size
    total = 0
    try:
        for item in paths:
            path, fs = hadoop_path(spark, item)
            for status in fs.globStatus(path) or []:
                total += fs.getContentSummary(status.getPath()).getLength()
                if total > limit:
                    return total
    except Exception:  # noqa: BLE001 - an unreadable input is reported by the staging, not here
        return None
    return total


def topics_array(text):
    """``topics`` read as text (``JSON_READ_SCHEMA``) as the array<string> it is, NULL unless a JSON array."""
    return F.when(text.startswith("["), F.from_json(text, EVENT_TYPES["topics"]))


def classify(lines, java_tz=javalog.DEFAULT_TZ):
    """One row per line: ``kind``, the normalized event columns (NULL unless an event) and ``raw``."""
    v = F.col("value")
    stripped = F.ltrim(v)
    is_blank = F.trim(v) == ""
    is_json = stripped.startswith("{")
    step1 = lines.select(
        "value", "file",
        is_blank.alias("_blank"), is_json.alias("_isjson"),
        F.when(is_json, F.from_json(v, JSON_READ_SCHEMA)).alias("_j"),
        F.when(~is_json & ~is_blank, javalog.layout(v)).alias("_l"),
    )
    j, lay = F.col("_j"), F.col("_l")
    step1 = step1.select("*", F.when(lay.isNotNull(), javalog.message_kind(lay["msg"])).alias("_jk"))
    java_fields = javalog.event_columns(lay["msg"], F.col("_jk"))
    jf_names = set(java_fields) - {"event"}
    json_ok = j["ts"].isNotNull() & j["event"].isNotNull()
    step2 = step1.select(
        "*",
        F.when(lay.isNotNull(), java_fields["event"]).alias("_jevent"),
        F.when(lay.isNotNull(), javalog.timestamp_ms(lay["date"], lay["millis"], java_tz)).alias("_jts"),
        F.when(lay.isNotNull() & java_fields["event"].isNotNull(),
               F.struct(*[java_fields[name].alias(name) for name in java_fields if name != "event"])).alias("_jf"),
    )
    kind = (F.when(F.col("_blank"), KIND_BLANK)
            .when(F.col("_isjson"), F.when(json_ok, KIND_JSON).otherwise(KIND_MALFORMED))
            .when(lay.isNotNull() & F.col("_jts").isNull(), KIND_MALFORMED)   # e.g. month 13
            .when(lay.isNotNull(), F.when(F.col("_jevent").isNotNull(), KIND_JAVA).otherwise(KIND_JAVA_OTHER))
            .when(v.rlike(javalog.CONTINUATION), KIND_CONTINUATION)
            .otherwise(KIND_MALFORMED))
    step3 = step2.select("*", kind.alias("kind"))
    is_j, is_java = F.col("kind") == KIND_JSON, F.col("kind") == KIND_JAVA
    jf = F.col("_jf")
    path_server = javalog.server_from_path(F.col("file"))

    def column(name):
        if name == "file":
            return F.col("file")
        if name == "source":
            return F.when(is_j, "json").when(is_java, "java")
        if name == "server":  # every line gets one (malformed lines too, for the input summary)
            return F.coalesce(F.when(is_j, j["server"]), path_server)
        if name == "ts":
            return F.when(is_j, j["ts"]).when(is_java, F.col("_jts"))
        if name == "event":
            return F.when(is_j, j["event"]).when(is_java, F.col("_jevent"))
        if name == "added":
            return F.when(is_j, F.when(j["before"].isNotNull() & j["after"].isNotNull(),
                                       F.array_except(j["after"], j["before"]))).when(is_java, jf["added"])
        if name == "removed":
            return F.when(is_j, F.when(j["before"].isNotNull() & j["after"].isNotNull(),
                                       F.array_except(j["before"], j["after"]))).when(is_java, jf["removed"])
        if name == "topics":
            return F.when(is_j, topics_array(j["topics"]))
        java_value = jf[name] if name in jf_names else F.lit(None)
        return F.when(is_j, j[name]).when(is_java, java_value.cast(EVENT_TYPES[name]))

    columns = [column(name).cast(EVENT_TYPES[name]).alias(name) for name in EVENT_COLUMNS]
    raw = F.when(F.col("kind") == KIND_MALFORMED, F.substring(v, 1, RAW_SAMPLE_CHARS)).alias("raw")
    return step3.select(F.col("kind"), *columns, raw)


#: The staged lines are read back a few times and deleted after the run: written plainly. Snappy, the
#: per-page checksums and the size statistics were a third of the staging job's CPU (970 k fleet lines:
#: 13.9 CPU s to stage, 9.3 without them, 6.2 to classify without writing); the files are about 1.6x
#: larger, and each later scan is cheaper for not inflating them. Min/max statistics stay (``--since``).
LEAN_PARQUET = {"compression": "none", "parquet.size.statistics.enabled": "false",
                "parquet.page.write-checksum.enabled": "false"}
#: Input splits per core of the staging job. Spark makes one task per file below 1/cores of the input
#: (3 files of 20 MB on 2 cores: 3 tasks, the last one alone), smaller splits keep every core busy.
SPLITS_PER_CORE = 4


def split_over_cores(spark):
    """``sql_conf`` for a scan of the input planned inside the block: ``SPLITS_PER_CORE`` splits per core."""
    splits = SPLITS_PER_CORE * max(1, spark.sparkContext.defaultParallelism)
    return sql_conf(spark, {"spark.sql.files.minPartitionNum": str(splits)})


def stage(spark, inputs, path, java_tz=javalog.DEFAULT_TZ):
    """Classify every input line and write them to ``path`` (Parquet, one table; ``load_stage`` reads it).

    Returns the list of inputs that matched nothing.
    """
    lines, missing = read_lines(spark, inputs)
    writer = classify(lines, java_tz).write.mode("overwrite")
    for key, value in LEAN_PARQUET.items():
        writer = writer.option(key, value)
    with split_over_cores(spark):
        writer.parquet(path)
    return missing


def stage_in_memory(spark, inputs, java_tz=javalog.DEFAULT_TZ):
    """(classified lines, inputs that matched nothing): a DataFrame whose lines are classified by the first
    job that reads them and then kept by the executors (a local checkpoint: memory, then their disks),
    instead of written to Parquet and read back (``stage``). No job runs here, so the report's other
    frames can be built and planned on it while ``materialize`` runs that first job on another thread.

    For small inputs on a local master only: the kept rows are uncompressed, and a local checkpoint has no
    lineage to recompute from, so on a cluster a lost executor would fail the report; the Parquet stage is
    columnar and survives on the output's file system. (``persist`` keeps the lineage, but building its
    columnar cache cost more than the Parquet stage: 39.0, 39.2 s at 254 k lines, against 33.8, 33.8 s
    with the checkpoint and 37.9, 39.6 s with Parquet.)"""
    lines, missing = read_lines(spark, inputs)
    with split_over_cores(spark):   # planned here: the scan's splits
        classified = classify(lines, java_tz).select(*stage_schema().names)
        staged = classified.localCheckpoint(eager=False)
    # The plan under the checkpoint holds its operators' metrics, which the driver keeps only while they
    # are referenced. Tasks serialized before the staging job ended (the collect starts while it runs)
    # still report those metrics, and a driver that had dropped them logged an ERROR per task and metric
    # ("non-existent accumulator"). Kept until ``release``.
    staged._namesrv_unstaged = classified
    return staged, missing


def materialize(staged):
    """Run the job that classifies and keeps the lines of ``stage_in_memory`` (it writes nothing)."""
    staged.write.format("noop").mode("overwrite").save()


def release(staged):
    """Drop the kept lines of ``stage_in_memory`` (``DataFrame.unpersist`` does not reach a checkpoint's
    blocks: they belong to the RDD under its plan)."""
    staged.__dict__.pop("_namesrv_unstaged", None)
    try:
        staged._jdf.logicalPlan().rdd().unpersist(False)
    except Exception:  # noqa: BLE001 - a plan of another shape keeps nothing of ours
        pass


@contextlib.contextmanager
def sql_conf(spark, settings):
    """Session settings for the queries run inside the block (planned there: a scan's splits), then
    the previous values back."""
    before = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def stage_schema(partitions=("event",)):
    """The staged table's schema (given when reading: an empty input leaves no Parquet file to infer from).

    ``event`` comes last, whether it is a partition column (``incremental``) or a plain one (``stage``).
    """
    fields = [T.StructField("kind", T.StringType())]
    fields += [T.StructField(name, EVENT_TYPES[name]) for name in EVENT_COLUMNS if name != "event"]
    fields += [T.StructField("raw", T.StringType())]
    fields += [T.StructField(name, T.StringType()) for name in partitions]
    return T.StructType(fields)


def load_stage(spark, path, since=None, until=None, partitions=("event",)):
    """The staged lines; with ``since``/``until`` (epoch ms, until exclusive) only events in that window.

    Lines without a time (malformed, blank, stack traces, Java lines without an event) are kept: they
    are still counted in the input summary.
    """
    staged = spark.read.schema(stage_schema(partitions)).parquet(path)
    if partitions != ("event",):
        staged = staged.select(*[name for name in stage_schema().names])
    return in_window(staged, since, until)


def in_window(staged, since=None, until=None):
    """``staged`` without the events outside [since, until) (lines without a time are kept)."""
    ts = F.col("ts")
    if since is not None:
        staged = staged.filter(ts.isNull() | (ts >= F.lit(since)))
    if until is not None:
        staged = staged.filter(ts.isNull() | (ts < F.lit(until)))
    return staged


def events_of(staged):
    """The normalized events (JSON and Java), without the Java-only identity rows."""
    return staged.filter(F.col("kind").isin(KIND_JSON, KIND_JAVA) & (F.col("event") != IDENTITY_EVENT)
                         & F.col("ts").isNotNull() & F.col("server").isNotNull())


IDENTITY_FIELDS = ("cluster", "brokerName", "brokerId")


def identity_values(staged):
    """(server, brokerAddr, cluster, brokerName, brokerId) combinations with, per field, the last time it
    was seen set: a hash aggregation (its buffer is three longs) whose result is small, about one row
    per (server, broker). ``max_by`` of a string straight over every line would be a sort aggregation:
    Spark's hash aggregation cannot hold a string in its buffer, so it sorted every heartbeat, twice.
    """
    rows = staged.filter(F.col("event").isin(*BROKER_EVENTS, IDENTITY_EVENT) & F.col("brokerAddr").isNotNull())
    return (rows.groupBy("server", "brokerAddr", *IDENTITY_FIELDS)
            .agg(*[F.max(F.when(F.col(name).isNotNull(), F.col("ts"))).alias("_at_" + name)
                   for name in IDENTITY_FIELDS]))


def broker_identities(values, keys=("brokerAddr",)):
    """``keys`` -> latest known cluster, brokerName, brokerId (small: one row per broker address), from
    ``identity_values`` (the value with the latest time, as ``max_by`` over the lines would give)."""
    suffix = "_" + "_".join(keys)

    def latest(name):
        return F.max_by(F.col(name), F.col("_at_" + name)).alias(name + suffix)

    return values.groupBy(*keys).agg(*[latest(name) for name in IDENTITY_FIELDS])


def broker_events(staged):
    """Broker lifecycle events with cluster/brokerName/brokerId filled in where a Java line lacks them.

    A Java line that does not name its broker takes the name last seen for that address on the same
    server (the master's "master address change" lines), else on any server (a slave is named only by
    our JSON logs). An address is assumed to keep its broker name. Every row has its (server, address)
    among the identities (they are read from the same lines), so the fallback rides along with it.
    """
    values = identity_values(staged)
    # one small table keyed like the rows, both names side by side, joined by hashing it on the rows' side
    # of a shuffle by (server, brokerAddr): the partitioning ``liveness.timeline``'s windows need, so that
    # shuffle is the one they would make anyway. A broadcast instead was a Spark job of its own that the
    # collect waited for (1-1.5 s, and about 1 s more of planning before the collect could start).
    names = broker_identities(values, ("server", "brokerAddr")).join(broker_identities(values), "brokerAddr", "left")
    rows = events_of(staged).filter(F.col("event").isin(*BROKER_EVENTS) & F.col("brokerAddr").isNotNull())
    joined = rows.join(names.hint("shuffle_hash"), ["server", "brokerAddr"], "left")

    def filled(name):
        return F.coalesce(name, name + "_server_brokerAddr", name + "_brokerAddr").alias(name)

    return joined.select("server", "ts", "event", "brokerAddr", "reason", "ageMs", "source",
                         filled("cluster"), filled("brokerName"), filled("brokerId"))


def line_summary(staged):
    """Lines per (file, server, kind, event, source, minute) with their first and last time: one pass over
    the staged lines, from which ``line_counts``, ``server_windows`` and the digest's event series are
    all derived (small: about one row per file, event and minute). Persist it when it is read again."""
    minute = (F.floor(F.col("ts") / 60000) * 60000).cast("long")
    return (staged.groupBy("file", "server", "kind", "event", "source", minute.alias("minute"))
            .agg(F.count(F.lit(1)).alias("lines"), F.min("ts").alias("firstTs"), F.max("ts").alias("lastTs")))


def line_counts(summary):
    """Lines per (file, server, kind): the input summary, malformed lines included (from ``line_summary``)."""
    return summary.groupBy("file", "server", "kind").agg(F.sum("lines").alias("lines"))


def server_windows(summary):
    """Per server: first and last event time and event count (the span it was observed), from
    ``line_summary``: its rows of events, as ``events_of`` keeps them."""
    events = summary.filter(F.col("kind").isin(KIND_JSON, KIND_JAVA) & (F.col("event") != IDENTITY_EVENT)
                            & F.col("firstTs").isNotNull() & F.col("server").isNotNull())
    return (events.groupBy("server")
            .agg(F.min("firstTs").alias("firstTs"), F.max("lastTs").alias("lastTs"), F.sum("lines").alias("events"),
                 F.concat_ws(",", F.sort_array(F.collect_set("source"))).alias("sources")))
