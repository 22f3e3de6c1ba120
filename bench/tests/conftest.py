"""The benchmarks' own tests share the suite's one local SparkSession (tests/spark/conftest.py)."""

from tests.spark.conftest import spark  # noqa: F401
