"""tests/parallel.py: what a worker takes at a time, and in which order the units go out."""

from tests.parallel import SLOWEST, slowest_first, unit_of


def test_a_file_is_a_unit_and_the_spark_tests_are_one():
    assert unit_of("tests/routes/test_tables.py::test_x[1]") == "tests/routes/test_tables.py"
    assert unit_of("tests/spark/test_browser.py::test_y") == unit_of("tests/spark/test_session.py::T::test_z")
    assert unit_of("bench/tests/test_bench_smoke.py::test_w") == "bench/tests/test_bench_smoke.py"


def test_the_slowest_go_first_in_their_order_and_the_rest_keep_theirs():
    rest = ["tests/b.py", "tests/a.py", "tests/c.py"]
    units = rest[:1] + [SLOWEST[2]] + rest[1:] + [SLOWEST[0]]
    assert slowest_first(units) == [SLOWEST[0], SLOWEST[2]] + rest


def test_every_slow_unit_named_exists():
    import os
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for unit in SLOWEST:
        assert os.path.exists(os.path.join(root, unit)), unit
