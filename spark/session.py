"""The SparkSession for the reports.

``python -m spark.report`` defaults to ``local[*]``; under ``spark-submit`` (the JVM is already up and
``PYSPARK_GATEWAY_PORT`` is set) the master and resources come from spark-submit, unless ``--master``
is given explicitly. The runtime settings the jobs rely on are set by ``configure`` on any session.
"""

import os
import subprocess

from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

#: Runtime settings the jobs depend on (safe to set on an existing session).
RUNTIME_CONF = {
    # Minute buckets and Java log timestamps are computed in UTC whatever the machine's zone.
    "spark.sql.session.timeZone": "UTC",
    # A malformed value in a log line must become NULL, never fail the job (Spark 4 defaults to ANSI).
    "spark.sql.ansi.enabled": "false",
    # Write the partitioned incremental stage without sorting every task's rows first.
    "spark.sql.maxConcurrentOutputFileWriters": "32",
    # One Spark job per action: adaptive execution runs every shuffle stage as a job of its own, and a
    # report is a handful of actions over plans with many shuffles (the small tables in one collect). The
    # shuffle partitions are set to the cores already, what adaptive execution would mostly coalesce to.
    "spark.sql.adaptive.enabled": "false",
    # ... and a join Spark guesses small is broadcast by a job of its own too (the one join of a small table
    # against every heartbeat is a shuffled hash join, ``ingest.broker_events``).
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    # HotSpot does not compile a method above 8,000 bytes of bytecode: the staging query's generated loop
    # (every column of both log formats) is about 21,000, and ran interpreted for every line. At this
    # limit Spark generates smaller per-operator code for that stage instead (Spark's documentation
    # suggests 8000 on HotSpot): 12.5 -> 8.8 CPU s to classify 970 k fleet lines.
    "spark.sql.codegen.hugeMethodLimit": "8000",
}

#: Given to the builder of a session ``get_session`` creates (a static setting: an existing session keeps
#: its own). With it on (Spark 4's default) every Column operation records its Python call site in
#: the JVM for error messages: ``F.col`` took 13 py4j round trips instead of 3, ``a == b`` 24 instead
#: of 4, and building a report's few thousand expressions took seconds of the driver's time. Errors
#: still name the failing expression, without the Python line.
DRIVER_CONF = {"spark.python.sql.dataFrameDebugging.enabled": "false"}

#: Settings for a local session only (a cluster keeps its own).
LOCAL_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


#: Input below this size (local files) is a small report, whose JVM mostly warms up: see ``quick_jit_conf``.
SMALL_INPUT_BYTES = 256 * 1024 * 1024
#: Input below this size is planned and run by Spark's interpreted expressions (``INTERPRETED``). Measured on
#: 2 cores, generated code against interpreted: 111 lines 19.1-21.3 s against 15.1-16.1; 28 k lines (6.3 MB)
#: 27.8-31.1 against 23.4-27.5; 87 k lines (20 MB) 34.3-36.8 against 31.4-34.0; 254 k lines (59 MB)
#: 39.5 against 47.0-52.8 (the crossing is past 20 MB; this leaves a margin).
INTERPRETED_BELOW_BYTES = 16 * 1024 * 1024
#: Projections, predicates, orderings and joins' keys evaluated by Spark's interpreted expressions instead of
#: Java source compiled by Janino (and then by the JIT) for every query: a small report has milliseconds of
#: data and hundreds of such classes to compile (313 at 254 k lines, 3.5 s of the driver's time before
#: its jobs start, plus the JIT's). The setting is Spark's own switch for the path its generated code
#: falls back to when it does not compile (``spark.sql.codegen.factoryMode``, marked internal); whole-stage
#: code generation is not affected. A runtime SQL setting: it applies under spark-submit too.
INTERPRETED = {"spark.sql.codegen.factoryMode": "NO_CODEGEN"}
#: The JIT's first tier only. A small report's JVM spent half its CPU in the C2 compiler threads (44 of 97
#: CPU seconds at 254 k lines), compiling code that then ran for seconds; with C1 alone the report took 55.
QUICK_JIT = "-XX:TieredStopAtLevel=1"
#: For ``spark-submit --driver-java-options`` on a cluster. The driver's JVM is up before our code runs, so
#: the report cannot choose its JIT there. On a cluster the driver plans the queries and takes the
#: collected rows, and the executors read the lines; the JIT's first tier suits that work. Default tiers
#: compile Spark's planning code with C2 for nothing. 107 lines through spark-submit on the standalone
#: cluster (2 cores): driver JVM CPU 23.5-28.2 s against 44.7-48.8 s, end to end 30.5-37.3 s against
#: 39.1-41.5 s.
SUBMIT_DRIVER_JAVA_OPTIONS = QUICK_JIT


def local_input_bytes(paths, limit=None):
    """Bytes of the local input files (stops counting past ``limit``); None if any input is not a local path
    (hdfs://, s3a://: unknown before the JVM is up)."""
    import glob
    limit = SMALL_INPUT_BYTES if limit is None else limit
    total = 0
    for pattern in paths:
        if "://" in pattern and not pattern.startswith("file:"):
            return None
        for path in glob.glob(pattern[len("file:"):] if pattern.startswith("file:") else pattern):
            for root, _, files in os.walk(path) if os.path.isdir(path) else [("", None, [path])]:
                for name in files:
                    try:
                        total += os.path.getsize(os.path.join(root, name))
                    except OSError:
                        pass
                    if total > limit:
                        return total
    return total


#: For a large input: C2 only for the code that stays hot. The C2 compiler thread spent about 45 of the 75
#: CPU seconds of staging 2.9 M fleet lines, compiling Spark's planning and setup code along with the
#: loops over the lines; with 10x its default thresholds it compiles the loops (called for every line)
#: and leaves lukewarm code at C1: 57-60 CPU s instead of 71-72.
PATIENT_JIT = ("-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 "
               "-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000")


def quick_jit_conf(paths, conf=None):
    """JVM options for the report's JIT, for the driver and the executors unless ``conf`` already sets
    their Java options: ``QUICK_JIT`` for a small report (local input under ``SMALL_INPUT_BYTES``),
    ``PATIENT_JIT`` for a large or a remote one, whose hot loops run long enough to repay the C2 compiler."""
    size = local_input_bytes(paths, SMALL_INPUT_BYTES)
    options = PATIENT_JIT if size is None or size > SMALL_INPUT_BYTES else QUICK_JIT
    keys = ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions")
    return {key: options for key in keys if key not in (conf or {})}


def under_spark_submit():
    return bool(os.environ.get("PYSPARK_GATEWAY_PORT"))


def local_cores(master):
    """Cores of a ``local``/``local[N]``/``local[*]`` master."""
    inside = master[master.find("[") + 1:master.find("]")] if "[" in master else "1"
    if inside.split(",")[0] == "*":
        return os.cpu_count() or 1
    try:
        return max(1, int(inside.split(",")[0]))
    except ValueError:
        return os.cpu_count() or 1


def get_session(master=None, app_name="namesrv-report", conf=None):
    """An existing active session, or a new one (``local[*]`` unless spark-submit chose a master).

    A local session gets 2 shuffle partitions per core (the 200 default costs seconds per stage on
    small inputs; adaptive execution still splits big ones) and logs only errors.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return configure(active)
    builder = SparkSession.builder.appName(app_name)
    if master is None and not under_spark_submit():
        master = "local[*]"
    local = master is not None and master.startswith("local")
    if master is not None:
        builder = builder.master(master)
    for key, value in DRIVER_CONF.items():
        builder = builder.config(key, value)
    if local:
        for key, value in dict(LOCAL_CONF, **{"spark.sql.shuffle.partitions": str(2 * local_cores(master))}).items():
            builder = builder.config(key, value)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if local:
        spark.sparkContext.setLogLevel("ERROR")
    return configure(spark)


def launch(master=None, conf=None, class_cache=None, app_name="namesrv-report"):
    """``get_session`` for a command that starts its own JVM: with ``class_cache`` (``classcache.ClassCache``)
    the driver JVM maps the class archive, or writes it at exit. Not when a session is already active or
    under spark-submit (the JVM is up). A JVM that does not start with the archive loses the archive and
    is started again without it."""
    conf = dict(conf or {})
    if (class_cache is None or class_cache.state == "off" or under_spark_submit()
            or SparkSession.getActiveSession() is not None):
        return get_session(master, app_name, conf)
    options = conf.get("spark.driver.extraJavaOptions", "")
    with_cache = dict(conf, **{"spark.driver.extraJavaOptions": (options + " " + class_cache.java_options()).strip()})
    try:
        return get_session(master, app_name, with_cache)
    except PySparkRuntimeError as error:
        condition = getattr(error, "getCondition", error.getErrorClass)()   # pyspark 4 / 3.5
        if class_cache.state != "used" or condition != "JAVA_GATEWAY_EXITED":
            raise
        class_cache.discard()   # the JVM did not start with it: start once more without
        return get_session(master, app_name, conf)


def shutdown_jvm(timeout=300):
    """End the JVM this process launched for pyspark and wait for it (it writes a class archive on its
    way out): close its stdin, which it watches, and kill it after ``timeout``. Its exit code, or None
    when no JVM was launched here (spark-submit's, or none)."""
    from pyspark import SparkContext
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None) if gateway is not None else None
    if proc is None:
        return None
    SparkContext._gateway = SparkContext._jvm = None
    try:
        gateway.shutdown()
    except Exception:  # noqa: BLE001 - already closed
        pass
    try:
        proc.stdin.close()
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()
    except OSError:
        return proc.poll()


def configure(spark):
    """The runtime settings, and 2 shuffle partitions per core of the application unless it chose a number:
    without adaptive execution nothing coalesces Spark's default of 200, and a report's plans have dozens
    of shuffles (a few hundred lines took 231 s on a 2-core standalone cluster with 200)."""
    for key, value in RUNTIME_CONF.items():
        spark.conf.set(key, value)
    if not spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        spark.conf.set("spark.sql.shuffle.partitions", str(2 * max(1, spark.sparkContext.defaultParallelism)))
    return spark
