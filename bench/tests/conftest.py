"""The benchmarks' own tests use the suite's one local SparkSession when tests/spark made it (one JVM per
run), and make and stop their own only when run without it."""

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    from pyspark import SparkContext

    from spark.session import get_session
    from tests.spark.conftest import stop_gateway
    created = SparkContext._active_spark_context is None
    session = get_session("local[2]", app_name="namesrv-bench-tests", conf={
        "spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false", "spark.default.parallelism": "2",
        "spark.driver.memory": "1g"})
    yield session
    if created and SparkContext._active_spark_context is not None:
        session.stop()
        stop_gateway()
