"""The reports on a real Spark standalone cluster (master + worker on 127.0.0.1) give local[2]'s tables.

Two runs, each in its own driver process, against the same cluster:

- ``python -m spark.report --master spark://127.0.0.1:PORT`` from the checkout;
- ``spark-submit --py-files dist/spark.zip dist/spark_report.py`` with the package ``python -m spark.package``
  (``make spark-package``) builds, from a directory outside the checkout and without the checkout on
  ``PYTHONPATH``: only the zip can provide ``spark``.

Each is compared table by table with the local[2] report of the same input (session fixtures). The
spark-submit run reads the mixed fleet (Java 4.9 logs) and every sample, so both Java formats are parsed
in executor JVMs too.
"""

import os
import subprocess
import sys
import zipfile

import pytest

from spark import package, report
from spark.session import SUBMIT_DRIVER_JAVA_OPTIONS
from tests.spark import cluster
from tests.spark.conftest import DATA, SAMPLES, assert_same_tables

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN_TIMEOUT_S = 420
#: Each application takes one of the worker's two cores, so both runs share the cluster at once: most of a
#: small report's time is its drivers' start and planning, which two drivers overlap.
DRIVER_CONF = ["spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1", "spark.driver.memory=768m",
               "spark.executor.memory=640m", "spark.cores.max=1", "spark.executor.cores=1",
               "spark.sql.shuffle.partitions=2", "spark.default.parallelism=2", "spark.ui.enabled=false"]


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    c = cluster.StandaloneCluster(str(tmp_path_factory.mktemp("cluster")), cores=2, memory="1536m")
    try:
        yield c.start()
    finally:
        c.stop()
    assert all(p.poll() is not None for p in c.procs)


def _conf():
    return [arg for item in DRIVER_CONF for arg in ("--conf", item)]


def _master_command(standalone, generated, out):
    env = cluster.spark_env()
    env["PYTHONPATH"] = REPO
    cmd = [sys.executable, "-m", "spark.report", "--master", standalone.url, "--input", generated[0],
           "--output", out, "--quiet"] + _conf()
    return cmd, REPO, env


def _submit_command(standalone, mixed, base, out):
    archive, launcher = package.build(str(base / "dist"))
    env = cluster.spark_env()
    env.pop("PYTHONPATH", None)
    inputs = [mixed[0]] + [os.path.join(DATA, d) for d in SAMPLES]
    cmd = ([os.path.join(cluster.SPARK_HOME, "bin", "spark-submit"), "--master", standalone.url,
            "--driver-java-options", SUBMIT_DRIVER_JAVA_OPTIONS,   # as the README's command
            "--py-files", archive] + _conf() + [launcher, "--output", out, "--quiet"]
           + ["--input=" + i for i in inputs])
    return cmd, str(base), env


@pytest.fixture(scope="module")
def cluster_runs(standalone, generated, mixed, tmp_path_factory):
    """Both drivers at once against the same cluster; {name: (output dir, exit code, stderr)}."""
    base = tmp_path_factory.mktemp("cluster-runs")
    outs = {"master": str(base / "master-out"), "submit": str(base / "submit-out")}
    commands = {"master": _master_command(standalone, generated, outs["master"]),
                "submit": _submit_command(standalone, mixed, base, outs["submit"])}
    procs = {}
    for name, (cmd, cwd, env) in commands.items():
        log = open(str(base / (name + ".stderr")), "w+")
        procs[name] = (subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=log), log)
    results = {}
    for name, (proc, log) in procs.items():
        try:
            code = proc.wait(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        log.seek(0)
        results[name] = (outs[name], code, log.read()[-4000:])
        log.close()
    return results


def test_the_package_holds_every_module_and_is_reproducible(tmp_path):
    first = package.build_zip(str(tmp_path / "a.zip"))
    with zipfile.ZipFile(first) as z:
        names = set(z.namelist())
    modules = {"spark/" + n for n in os.listdir(os.path.dirname(package.__file__)) if n.endswith(".py")}
    assert names == modules and "spark/report.py" in names
    with open(first, "rb") as a, open(package.build_zip(str(tmp_path / "b.zip")), "rb") as b:
        assert a.read() == b.read()


def assert_ran_as_locally(spark, run, local_report):
    """``run`` (output dir, exit code, stderr: one of ``cluster_runs``) ended well with the tables of
    ``local_report`` (the same inputs' local run) and its page."""
    out, code, stderr = run
    assert code == 0, stderr
    assert_same_tables(spark, out, local_report[0], report.TABLES)
    assert os.path.exists(os.path.join(out, "report.html"))


@pytest.mark.cluster
def test_master_url_gives_the_local_tables(spark, cluster_runs, generated_report, standalone):
    assert_ran_as_locally(spark, cluster_runs["master"], generated_report)
    assert any(app["name"] == "namesrv-report" for app in standalone.completed_apps())


@pytest.mark.cluster
def test_spark_submit_with_the_package_gives_the_local_tables(spark, cluster_runs, formats_report, standalone):
    assert_ran_as_locally(spark, cluster_runs["submit"], formats_report)
    assert [app["name"] for app in standalone.completed_apps()] == ["namesrv-report"] * 2   # both ran there
