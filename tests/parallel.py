"""How ``make test`` shares the suite between its workers (pytest-xdist, ``-n WORKERS --dist loadfile``: one
more than the CPUs, three on the 2-core machine).

A worker takes a whole file at a time, so a file's module fixtures (a tiny benchmark run, a server
started once for its tests) run once. The Spark tests are one unit for the same reason one level up:
their session fixtures (a JVM, the generated fleets and their reports) are built once, by one worker,
instead of once by each while the other's CPU is wanted elsewhere.

The units go out in xdist's order (most tests first). Handing the slowest out first was tried and
gained nothing: the Spark tests, the benchmark smoke run and the Spark floor then ran at once and
waited on each other's CPU (the first Spark fixture took 164 s instead of 75 s). The suite took 797 s
that way, and 702 s and 778 s in xdist's order, in fresh clones on the idle 2-core machine. A third
worker is faster: in one fresh clone within the hour, three workers took 410 s (the CPUs 87 % busy) and two
510 s (80 %).
"""

import pytest

#: Directories whose files one worker runs together (their session-scoped fixtures are costly).
TOGETHER = ("tests/spark/",)


def unit_of(nodeid):
    """The work unit of a test id: its file, or the directory of TOGETHER it lies in."""
    path = nodeid.split("::", 1)[0]
    for directory in TOGETHER:
        if path.startswith(directory):
            return directory
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``, with TOGETHER's directories as single units; other modes are xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ByFileSparkTogether(LoadFileScheduling):
        def _split_scope(self, nodeid):
            return unit_of(nodeid)

    return ByFileSparkTogether(config, log)
