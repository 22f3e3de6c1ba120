"""How ``make test`` shares the suite between its two workers (pytest-xdist, ``-n 2 --dist loadfile``).

A worker takes a whole file at a time, so a file's module fixtures (a tiny benchmark run, a server
started once for its tests) run once. The Spark tests are one unit for the same reason one level up:
their session fixtures (a JVM, the generated fleets and their reports) are built once, by one worker,
instead of once by each while the other's CPU is wanted elsewhere.

The units that take longest go out first (SLOWEST): handed out last, one of them would leave a worker
running alone at the end. The list only orders the work; a unit missing from it or no longer slow
changes how long the suite takes, never what it runs.
"""

import pytest

#: Directories whose files one worker runs together (their session-scoped fixtures are costly).
TOGETHER = ("tests/spark/",)

#: The slowest units, slowest first (`make test ARGS=--durations=60`, two workers, 2 cores: 40-300 s each).
SLOWEST = (
    "tests/spark/",
    "bench/tests/test_bench_smoke.py",
    "tests/faultlab/test_lab.py",
    "tests/docs/test_snippets.py",
    "tests/packaging/test_wheel.py",
    "bench/tests/test_bigfleet.py",
    "bench/tests/test_spark_floor.py",
    "tests/tools/test_stress.py",
    "tests/packaging/test_make_run.py",
    "tests/integration/test_wrong_starts.py",
    "tests/robustness/test_faults.py",
)


def unit_of(nodeid):
    """The work unit of a test id: its file, or the directory of TOGETHER it lies in."""
    path = nodeid.split("::", 1)[0]
    for directory in TOGETHER:
        if path.startswith(directory):
            return directory
    return path


def slowest_first(units):
    """``units`` (in xdist's order: most tests first) with SLOWEST's ahead, in SLOWEST's order."""
    rank = {unit: place for place, unit in enumerate(SLOWEST)}
    return sorted(units, key=lambda unit: rank.get(unit, len(SLOWEST)))   # stable: the rest keep their order


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, with TOGETHER's directories as single units and SLOWEST's handed out first; other
    modes are xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SlowestFileFirst(LoadFileScheduling):
        ordered = False

        def _split_scope(self, nodeid):
            return unit_of(nodeid)

        def _assign_work_unit(self, node):
            if not self.ordered:   # the first assignment: the queue of units is complete
                self.ordered = True
                queue = list(self.workqueue.items())
                order = slowest_first([unit for unit, _ in queue])
                units = dict(queue)
                self.workqueue.clear()
                for unit in order:
                    self.workqueue[unit] = units[unit]
            super()._assign_work_unit(node)

    return SlowestFileFirst(config, log)
