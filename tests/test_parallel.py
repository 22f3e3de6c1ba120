"""tests/parallel.py: what a worker takes at a time."""

from tests.parallel import unit_of


def test_a_file_is_a_unit_and_the_spark_tests_are_one():
    assert unit_of("tests/routes/test_tables.py::test_x[1]") == "tests/routes/test_tables.py"
    assert unit_of("tests/spark/test_browser.py::test_y") == unit_of("tests/spark/test_session.py::T::test_z")
    assert unit_of("bench/tests/test_bench_smoke.py::test_w") == "bench/tests/test_bench_smoke.py"
