"""One local[2] SparkSession for every Spark test, and the generated inputs and reports they share.

The reports are built once per session (each full run is a few dozen small Spark jobs), then many
tests check their tables against plain-Python answers (``oracle``) from the same generated events.
"""

import os
import shutil
import subprocess

import pytest

pyspark = pytest.importorskip("pyspark")

DATA = os.path.join(os.path.dirname(__file__), "..", "data")


def _java_available():
    try:
        return subprocess.run(["java", "-version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


if not _java_available():  # pragma: no cover
    pytest.skip("no Java runtime for Spark", allow_module_level=True)


@pytest.fixture(scope="session")
def spark():
    from spark.session import get_session
    session = get_session("local[2]", app_name="namesrv-report-tests", conf={
        "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false", "spark.default.parallelism": "2",
        "spark.driver.memory": "1g"})
    yield session
    session.stop()
    stop_gateway()


def stop_gateway():
    """End the JVM pyspark started for the session (it would otherwise live until pytest exits):
    close its stdin, which it watches, and kill it by PID after a grace."""
    from pyspark import SparkContext
    gateway = SparkContext._gateway
    if gateway is None:
        return
    SparkContext._gateway = SparkContext._jvm = None
    try:
        gateway.shutdown()
    except Exception:
        pass
    proc = getattr(gateway, "proc", None)
    if proc is None:
        return
    try:
        proc.stdin.close()
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except OSError:
        pass


@pytest.fixture(scope="session")
def generated(tmp_path_factory):
    """3 JSON servers x 6 brokers x 20 topics x 3 h with 3 flaps, an outage, a partition, 2 restarts, a drift."""
    from spark import gen_logs
    out = str(tmp_path_factory.mktemp("gen-json"))
    truth = gen_logs.generate(out, servers=3, brokers=6, topics=20, hours=3, seed=7, flaps=3, outages=1,
                              partitions=1, restarts=2, drifts=1)
    return out, truth


@pytest.fixture(scope="session")
def generated_report(spark, generated, tmp_path_factory):
    from spark import report
    out = str(tmp_path_factory.mktemp("report-json"))
    summary = report.run(spark, [generated[0]], out, codegen=True)   # the others are small: interpreted
    return out, summary


@pytest.fixture(scope="session")
def quiet_report(spark, tmp_path_factory):
    """A report over a fleet with no incident at all: 2 JSON servers x 4 brokers x 1 h."""
    from spark import gen_logs, report
    logs = str(tmp_path_factory.mktemp("gen-quiet"))
    truth = gen_logs.generate(logs, servers=2, brokers=4, topics=8, hours=1, seed=5, flaps=0, outages=0,
                              partitions=0, restarts=0, drifts=0)
    out = str(tmp_path_factory.mktemp("report-quiet"))
    return out, report.run(spark, [logs], out), truth


@pytest.fixture(scope="session")
def failover_report(spark, tmp_path_factory):
    """A fleet whose controller (in the first of 2 servers) replaces 3 masters and cannot elect 2: 1 h, no
    other incident."""
    from spark import gen_logs, report
    logs = str(tmp_path_factory.mktemp("gen-failovers"))
    truth = gen_logs.generate(logs, servers=2, brokers=6, topics=6, hours=1, seed=3, flaps=0, outages=0,
                              partitions=0, restarts=0, drifts=0, failovers=3, no_master=2)
    out = str(tmp_path_factory.mktemp("report-failovers"))
    return out, report.run(spark, [logs], out), truth


@pytest.fixture(scope="session")
def mixed(tmp_path_factory):
    """The same kind of fleet, the first 2 of 3 servers writing the Java 4.9 namesrv.log."""
    from spark import gen_logs
    out = str(tmp_path_factory.mktemp("gen-mixed"))
    truth = gen_logs.generate(out, servers=3, brokers=5, topics=12, hours=2.5, seed=11, flaps=2, outages=1,
                              partitions=1, restarts=2, drifts=0, java_servers=2)
    return out, truth


@pytest.fixture(scope="session")
def formats_report(spark, mixed, tmp_path_factory):
    """One report over the mixed fleet plus every sample of tests/data (their server ids differ)."""
    from spark import report
    out = str(tmp_path_factory.mktemp("report-formats"))
    inputs = [mixed[0]] + [os.path.join(DATA, d) for d in SAMPLES]
    return out, report.run(spark, inputs, out, keep_work=True)


SAMPLES = ("eventlog", "java49", "java5", "malformed")
SAMPLE_SERVERS = {"10.0.1.21:9876": "json", "10.0.1.22:9876": "java", "10.0.1.23:9876": "java",
                  "10.0.1.24:9876": "json"}


def table(spark, out, name):
    return [row.asDict(recursive=True) for row in spark.read.parquet(os.path.join(out, name + ".parquet")).collect()]


def sorted_rows(spark, out, name):
    """(columns, rows as sorted tuples of reprs) of a written table: order-free, exact comparison."""
    df = spark.read.parquet(os.path.join(out, name + ".parquet"))
    return df.columns, sorted(tuple(repr(v) for v in r) for r in df.collect())


def assert_same_tables(spark, got, want, names):
    for name in names:
        assert sorted_rows(spark, got, name) == sorted_rows(spark, want, name), name


@pytest.fixture
def read_table(spark):
    return lambda out, name: table(spark, out, name)


@pytest.fixture
def scratch(tmp_path):
    yield tmp_path
    shutil.rmtree(tmp_path, ignore_errors=True)
