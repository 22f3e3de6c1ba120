"""Entry point: ``python -m spark.report --input DIR_OR_GLOB --output OUT_DIR [--master local[*]]``.

Also runs unchanged under ``spark-submit``; only the driver runs Python (there is no Python UDF).
``make spark-package`` (``python -m spark.package --dist dist``) builds the zip and a launcher::

    spark-submit --master spark://host:7077 --py-files dist/spark.zip dist/spark_report.py \
        --input hdfs:///logs/namesrv --output s3a://reports/namesrv/2024-03

``--since``/``--until`` keep only the events of a time window (lines without a time are still counted);
``--incremental`` keeps the classified lines in ``OUT/_stage`` and re-reads only new or changed input
files (``incremental``). On a terminal a progress line shows the report being built and Spark's job and
stage; every run ends with a one-line summary (``--quiet``: none, ``--json``: the full summary).

Inputs and output may be on any Hadoop file system (``hdfs://``, ``s3a://``, ``file:``). Writes into OUT_DIR:

- ``<table>.parquet/`` and ``<table>.csv`` (one file, header row) for every table in ``TABLES``: the
  ``LARGE`` ones written by Spark, the others collected in one job and written from the driver;
- ``report.html`` (opening with "What happened", ``headline``) and ``charts/*.png``.

Times in the tables are epoch milliseconds (UTC); each CSV adds a readable ``<column>Utc`` twin.
An empty or missing input gives the same files with no rows. Malformed lines are counted
(``input_lines``) and skipped.
"""

import argparse
import datetime
import importlib.util
import json
import os
import sys
import time

#: what the report needs beyond the server: (module, what it is for); both come with the extra
EXTRAS = (("pyspark", "PySpark"), ("matplotlib", "matplotlib (the charts)"),
          ("pyarrow", "pyarrow (the small tables' Parquet, written on the driver)"))


def missing_extras():
    """One line naming what to install, or None: run before importing the jobs, so that a plain
    ``pip install .`` gets a hint instead of a ModuleNotFoundError traceback."""
    missing = [what for module, what in EXTRAS if importlib.util.find_spec(module) is None]
    if not missing:
        return None
    return "spark.report: %s not installed: pip install 'rocketmq-namesrv[spark]'" % " and ".join(missing)


if __name__ == "__main__" and missing_extras():
    sys.exit(missing_extras())

from pyspark import StorageLevel
from spark import (chartworkers, collect, digest, disagreement, failovers, headline, heartbeat, htmlreport,
                   incremental, ingest, javalog, overlap, progress, request_mix, topic_churn)
from spark.liveness import Liveness, close_sessions
from spark.output import LocalStaging, OutputDir
from spark.classcache import ClassCache
from spark.session import (INTERPRETED, INTERPRETED_BELOW_BYTES, launch, quick_jit_conf, shutdown_jvm,
                           under_spark_submit)

WORK = "_work/lines"

#: table name -> (epoch-ms columns, which get a readable twin in the CSV; CSV row order)
TABLES = {
    "input_lines": ((), ("file", "kind")),
    "servers": (("firstTs", "lastTs"), ("server",)),
    "broker_liveness": (("firstSeen", "lastSeen"), ("cluster", "brokerName", "brokerAddr", "server")),
    "broker_sessions": (("start", "end"), ("cluster", "brokerName", "brokerAddr", "server", "start")),
    "broker_flaps": (("expiredAt", "reRegisteredAt"), ("expiredAt", "server", "brokerAddr")),
    "heartbeat_intervals": ((), ("cluster", "bucketS")),
    "heartbeat_drift": (("firstLateAt", "lastLateAt"), ("cluster", "brokerName", "brokerAddr", "server")),
    "request_minutely": (("minute",), ("server", "minute", "code")),
    "request_codes": (("firstMinute", "lastMinute"), ("code",)),
    "request_responses": ((), ("code", "resp")),
    "topic_vanished": (("vanishedAt", "returnedAt"), ("topic", "server", "vanishedAt")),
    "topic_churn": (("firstChange", "lastChange"), ("topic",)),
    "ns_disagreement": (("start", "end"), ("brokerAddr", "start")),
    "ns_disagreement_minutes": (("minute",), ("minute", "brokerAddr")),
    "controller_failovers": (("lostAt", "electedAt", "routedAt", "lastRoutedAt"), ("lostAt", "brokerName")),
    "controller_no_master": (("firstAt", "lastAt", "masterBackAt"), ("firstAt", "brokerName")),
}

DEFAULTS = {"flap_minutes": 10.0, "heartbeat_period_s": 30.0, "drift_tolerance_s": 5.0,
            "min_disagreement_ms": 1000, "java_tz": javalog.DEFAULT_TZ, "top": 20, "keep_work": False,
            "since": None, "until": None, "incremental": False}


def utc_time(text):
    """``--since``/``--until``: epoch ms, or an ISO date or date-time in UTC (``2024-03-01``, ``2024-03-01T12:00``)."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    try:
        when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError("not an epoch-ms number or ISO date/time: %r" % text)
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return int(when.timestamp() * 1000)


def build_parser():
    p = argparse.ArgumentParser(prog="python -m spark.report", description=__doc__.split("\n\n")[0])
    p.add_argument("--input", action="append", required=True,
                   help="directory (read recursively), file or glob; repeat or comma-separate for several")
    p.add_argument("--output", required=True, help="report directory (created; its tables are overwritten)")
    p.add_argument("--master", default=None,
                   help="Spark master (default local[*]; under spark-submit, the one spark-submit chose)")
    p.add_argument("--flap-minutes", type=float, default=DEFAULTS["flap_minutes"],
                   help="an expiration followed by a re-registration within this many minutes is a flap")
    p.add_argument("--heartbeat-period-s", type=float, default=DEFAULTS["heartbeat_period_s"],
                   help="the brokers' registration period")
    p.add_argument("--drift-tolerance-s", type=float, default=DEFAULTS["drift_tolerance_s"],
                   help="intervals above period + tolerance are late")
    p.add_argument("--min-disagreement-ms", type=int, default=DEFAULTS["min_disagreement_ms"],
                   help="shorter disagreement intervals are ignored")
    p.add_argument("--java-tz", default=DEFAULTS["java_tz"],
                   help="time zone of Java namesrv.log timestamps (logback_namesrv.xml writes GMT+8)")
    p.add_argument("--top", type=int, default=DEFAULTS["top"], help="rows per table shown in report.html")
    p.add_argument("--keep-work", action="store_true", help="keep the staged, classified lines (_work/lines)")
    p.add_argument("--since", type=utc_time, default=None,
                   help="only events at or after this time (epoch ms or ISO date/time, UTC)")
    p.add_argument("--until", type=utc_time, default=None,
                   help="only events before this time (epoch ms or ISO date/time, UTC)")
    p.add_argument("--incremental", action="store_true",
                   help="keep the classified lines in OUT/_stage and re-read only new or changed input files")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="Spark setting for a session this command creates (e.g. spark.driver.memory=4g)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress line and no closing summary (progress is only drawn on a terminal anyway)")
    p.add_argument("--no-class-cache", action="store_true",
                   help="do not map (or write) the JVM class archive that halves the session start (classcache)")
    p.add_argument("--class-cache-dir", default=None,
                   help="where the class archive is kept (default ~/.cache/rocketmq-namesrv, or $XDG_CACHE_HOME)")
    p.add_argument("--json", action="store_true",
                   help="end with the run's summary as JSON (row counts per table, lines per kind) on stdout")
    return p


#: Tables that grow with the time span (a row per server, minute and code): Parquet and CSV written by
#: Spark. Every other table is small (a row per server, broker, topic, incident...): collected once and
#: written from the driver.
LARGE = ("request_minutely",)

#: The steps of a run, in order, as the progress line names them.
PHASES = ("staging", "requests", "tables", "disagreement", "files", "charts and html")


#: Input below this size, on a local master, is staged in memory (``ingest.stage_in_memory``), not as
#: Parquet: the report's frames are built and planned while the lines are classified, and nothing is
#: written and read back. 254 k lines (59 MB): 33.8, 33.8 s against 37.9, 39.6 s, same answers.
MEMORY_STAGE_BELOW_BYTES = 128 * 1024 * 1024


def run(spark, inputs, output, progress_display=None, chart_workers=None, codegen=None, **options):
    """``report_tables`` with the session's settings for this input: below ``INTERPRETED_BELOW_BYTES`` (or
    with ``codegen=False``) Spark's expressions are interpreted, not compiled (``session.INTERPRETED``);
    ``codegen=True`` keeps generated code whatever the size. The session's settings are restored after.
    Below ``MEMORY_STAGE_BELOW_BYTES`` on a local master the lines are staged in memory."""
    size = ingest.input_bytes(spark, inputs, MEMORY_STAGE_BELOW_BYTES)   # None: a file system that cannot tell
    if codegen is None:
        codegen = size is None or size >= INTERPRETED_BELOW_BYTES
    in_memory = (size is not None and size < MEMORY_STAGE_BELOW_BYTES
                 and spark.sparkContext.master.startswith("local"))
    with ingest.sql_conf(spark, {} if codegen else INTERPRETED):
        summary = report_tables(spark, inputs, output, progress_display, chart_workers, in_memory, **options)
    summary["codegen"] = bool(codegen)
    return summary


def report_tables(spark, inputs, output, progress_display=None, chart_workers=None, in_memory=False, **options):
    """Build every table, the charts and ``report.html``; returns a summary (row counts, timings, jobs).

    The Spark jobs of a run: staging the lines (one parse: kept in memory for a small input on a local
    master, while the other frames are built on it, else written once as Parquet), ONE collect of every small
    table and the page's aggregates, and the large table's Parquet and CSV (from the collect's cached
    rows, on another thread while the driver works on the rest). What only joins small collected tables
    (sessions and vanished topics with the servers' last events, the busiest server per topic, the
    name-server disagreement) is computed on the driver, and so are the small tables' files and the page;
    the charts are drawn by ``chart_workers`` (``chartworkers.ChartWorkers``) when given.
    """
    opts = dict(DEFAULTS, **options)
    show = progress.PhaseTimes(spark, progress_display)
    started = time.time()
    out = OutputDir(spark, output)
    show.phase("staging")
    classifying = None
    if opts["incremental"]:
        staging = incremental.update(spark, out, inputs, opts["java_tz"])
        missing = staging["missing"]
        staged = ingest.load_stage(spark, out.path(incremental.STAGE), opts["since"], opts["until"],
                                   partitions=("fileId", "event"))
    elif opts["keep_work"] or not in_memory:
        missing = ingest.stage(spark, inputs, out.path(WORK), opts["java_tz"])
        staging = None
        staged = ingest.load_stage(spark, out.path(WORK), opts["since"], opts["until"])
    else:
        kept, missing = ingest.stage_in_memory(spark, inputs, opts["java_tz"])
        staging = None
        classifying = overlap.Background(ingest.materialize, kept)
        staged = ingest.in_window(kept, opts["since"], opts["until"])
    events = ingest.events_of(staged)

    show.phase("requests")
    req = request_mix.requests(events)
    # computed (and kept) by the collect below, which reads it for request_codes and the page; its own
    # files are written afterwards, while the driver works on the collected tables
    minute = request_mix.minutely(req).persist(StorageLevel.MEMORY_AND_DISK)

    show.phase("tables")
    lines = ingest.line_summary(staged).persist(StorageLevel.MEMORY_AND_DISK)
    late_ms = heartbeat.late_ms(opts["heartbeat_period_s"], opts["drift_tolerance_s"])
    live = Liveness(ingest.broker_events(staged), opts["flap_minutes"], late_ms)
    te = topic_churn.topic_events(events)
    frames = {
        "input_lines": ingest.line_counts(lines), "servers": ingest.server_windows(lines),
        "broker_liveness": live.summary, "_session_starts": live.session_starts, "broker_flaps": live.flaps,
        "heartbeat_intervals": heartbeat.distribution(live.timeline),
        "heartbeat_drift": heartbeat.drift(live.per_broker, late_ms),
        "request_codes": request_mix.per_code(minute), "request_responses": request_mix.responses(req),
        "_vanishings": topic_churn.transitions(te), "_churn": topic_churn.per_server(te),
        "_controller_events": failovers.controller_events(events)}
    frames.update(digest.extra_frames(staged, lines, minute))
    got = collect.collect(frames)
    live.release()
    lines.unpersist()
    large = overlap.Background(out.write_table, "request_minutely", minute, *TABLES["request_minutely"])

    show.phase("disagreement")   # and the other joins with the server spans: small tables, on the driver
    got["broker_sessions"] = close_sessions(got["_session_starts"], got["servers"])
    got["topic_vanished"] = topic_churn.vanished(got["_vanishings"], got["servers"])
    got["topic_churn"] = topic_churn.churn(got["_churn"], got["topic_vanished"])
    got["ns_disagreement"] = disagreement.intervals(got["broker_sessions"], got["servers"],
                                                    opts["min_disagreement_ms"])
    got["ns_disagreement_minutes"] = disagreement.minutes(got["ns_disagreement"])
    got["controller_failovers"], got["controller_no_master"] = failovers.failovers(got["_controller_events"],
                                                                                 got["servers"])

    show.phase("files")
    counts = {}
    for name, (time_columns, order) in TABLES.items():
        if name in LARGE:
            continue
        out.put_local_table(name, got[name], time_columns, order)
        counts[name] = len(got[name])
    counts["request_minutely"] = got["_request_minutely_rows"].rows[0][0]
    counts = {name: counts[name] for name in TABLES}

    show.phase("charts and html")
    data = digest.collect(got, opts["top"])
    data["headline"] = headline.what_happened(got, late_ms)
    page_opts = dict(opts, inputs=ingest.split_inputs(inputs), missing=missing,
                     flap_minutes="%g" % opts["flap_minutes"],
                     drift_limit_s="%g" % (opts["heartbeat_period_s"] + opts["drift_tolerance_s"]))
    with LocalStaging() as local:
        images = digest.draw(data, os.path.join(local, "charts"), chart_workers)
        for image in images.values():
            out.put_file(os.path.join(local, "charts", image), "charts/" + image)
        page = os.path.join(local, "report.html")
        with open(page, "w", encoding="utf-8") as f:
            f.write(htmlreport.render(data, counts, page_opts, captions=digest.titles(data)))
        out.put_file(page, "report.html")
    large.result()
    minute.unpersist()
    if classifying is not None:
        classifying.result()
        ingest.release(kept)
    if not opts["keep_work"]:
        out.delete("_work")
    phases = show.finish()
    summary = {"output": output, "tables": counts, "lines": dict(data["kinds"]), "missing": missing,
               "seconds": round(time.time() - started, 1), "phases": phases,
               "jobs": progress.total_jobs(phases), "healthy": data["headline"]["healthy"],
               "stage": "incremental" if staging is not None else "memory" if classifying is not None else "parquet"}
    if staging is not None:
        summary["files"] = {"read": len(staging["read"]), "kept": len(staging["kept"]),
                            "dropped": len(staging["dropped"])}
    return summary


def jvm_cpu_seconds(spark):
    """CPU seconds the driver's JVM has used (with a local master: all the work), or None if unknown.

    A figure that a busy, shared machine disturbs much less than the wall time (``bench.scenarios.spark_bench``).
    """
    try:
        cpu = spark._jvm.java.lang.ProcessHandle.current().info().totalCpuDuration()
        return round(cpu.get().toMillis() / 1000.0, 1) if cpu.isPresent() else None
    except Exception:  # noqa: BLE001 - a JVM that cannot tell: leave the figure out
        return None


def main(argv=None):
    args = build_parser().parse_args(argv)
    from pyspark.sql import SparkSession
    existing = SparkSession.getActiveSession()
    user_conf = dict(item.split("=", 1) for item in args.conf if "=" in item)
    session_started = time.time()
    workers = chartworkers.ChartWorkers()   # they import matplotlib while the JVM starts
    try:
        summary = _main(args, existing, user_conf, session_started, workers)
    finally:
        workers.close()
    # The closing line comes last, once the JVM has exited (it may write the class archive on its
    # way out), and counts the whole command from the process's start, as ``time`` would.
    if existing is None:
        summary["total_seconds"] = progress.process_seconds(session_started)
    if args.json:
        print(json.dumps(summary, indent=1, sort_keys=True), flush=True)
    elif not args.quiet:
        print(progress.summary_line(summary), flush=True)
    return 0


def _main(args, existing, user_conf, session_started, workers):
    if not workers.count:
        overlap.preload("spark.charts")   # the driver draws: matplotlib, while the JVM starts
    conf = dict(quick_jit_conf(ingest.split_inputs(args.input), user_conf), **user_conf)
    cache = None
    if (existing is None and not under_spark_submit() and not args.no_class_cache
            and "spark.driver.extraJavaOptions" not in user_conf):
        cache = ClassCache(args.class_cache_dir)
    spark = launch(args.master, conf, cache)
    session_seconds = round(time.time() - session_started, 1)
    shown = progress.for_command_line(spark, PHASES, args.quiet)
    try:
        try:
            summary = run(spark, args.input, args.output, progress_display=shown, flap_minutes=args.flap_minutes,
                          heartbeat_period_s=args.heartbeat_period_s, drift_tolerance_s=args.drift_tolerance_s,
                          min_disagreement_ms=args.min_disagreement_ms, java_tz=args.java_tz, top=args.top,
                          keep_work=args.keep_work, since=args.since, until=args.until,
                          incremental=args.incremental, chart_workers=workers)
            summary["jvm_cpu_seconds"] = jvm_cpu_seconds(spark)
        finally:
            shown.close()
            if existing is None:
                spark.stop()
        summary["session_seconds"] = session_seconds
        summary["class_cache"] = "off" if cache is None else cache.state
    finally:
        if existing is None:   # a JVM writing the class archive does it on its way out: wait, then keep it
            code = shutdown_jvm()
            if cache is not None:
                cache.finish(code)
    return summary


if __name__ == "__main__":
    sys.exit(main())
