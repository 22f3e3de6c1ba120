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
from tests.spark import cluster
from tests.spark.conftest import DATA, SAMPLES, assert_same_tables

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN_TIMEOUT_S = 300
DRIVER_CONF = ["spark.driver.host=127.0.0.1", "spark.driver.bindAddress=127.0.0.1", "spark.driver.memory=768m",
               "spark.executor.memory=768m", "spark.cores.max=2", "spark.sql.shuffle.partitions=4",
               "spark.ui.enabled=false"]


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    c = cluster.StandaloneCluster(str(tmp_path_factory.mktemp("cluster")))
    try:
        yield c.start()
    finally:
        c.stop()
    assert all(p.poll() is not None for p in c.procs)


def _run(cmd, cwd, env):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


@pytest.fixture(scope="module")
def master_run(standalone, generated, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("cluster-master") / "out")
    env = cluster.spark_env()
    env["PYTHONPATH"] = REPO
    cmd = [sys.executable, "-m", "spark.report", "--master", standalone.url, "--input", generated[0],
           "--output", out, "--quiet"]
    for item in DRIVER_CONF:
        cmd += ["--conf", item]
    return out, _run(cmd, REPO, env)


@pytest.fixture(scope="module")
def submit_run(standalone, mixed, tmp_path_factory):
    base = tmp_path_factory.mktemp("cluster-submit")
    archive, launcher = package.build(str(base / "dist"))
    out = str(base / "out")
    env = cluster.spark_env()
    env.pop("PYTHONPATH", None)
    cmd = [os.path.join(cluster.SPARK_HOME, "bin", "spark-submit"), "--master", standalone.url,
           "--py-files", archive]
    for item in DRIVER_CONF:
        cmd += ["--conf", item]
    inputs = [mixed[0]] + [os.path.join(DATA, d) for d in SAMPLES]
    cmd += [launcher, "--output", out, "--quiet"] + ["--input=" + i for i in inputs]
    return out, _run(cmd, str(base), env)


def test_the_package_holds_every_module_and_is_reproducible(tmp_path):
    first = package.build_zip(str(tmp_path / "a.zip"))
    with zipfile.ZipFile(first) as z:
        names = set(z.namelist())
    modules = {"spark/" + n for n in os.listdir(os.path.dirname(package.__file__)) if n.endswith(".py")}
    assert names == modules and "spark/report.py" in names
    with open(first, "rb") as a, open(package.build_zip(str(tmp_path / "b.zip")), "rb") as b:
        assert a.read() == b.read()


def test_master_url_gives_the_local_tables(spark, master_run, generated_report, standalone):
    out, _ = master_run
    assert_same_tables(spark, out, generated_report[0], report.TABLES)
    assert os.path.exists(os.path.join(out, "report.html"))
    assert any(app["name"] == "namesrv-report" for app in standalone.completed_apps())


def test_spark_submit_with_the_package_gives_the_local_tables(spark, submit_run, formats_report, standalone):
    out, proc = submit_run
    assert_same_tables(spark, out, formats_report[0], report.TABLES)
    assert os.path.exists(os.path.join(out, "report.html"))
    assert "namesrv-report" in [app["name"] for app in standalone.completed_apps()]
