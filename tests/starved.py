"""``pytest --one-step-a-turn``: every TurnScheduler of the test process runs one step a turn, as on a starved machine.

A turn of the scheduler runs steps until its budget, counted in real time, runs out (namesrv/timing/scheduler.py).
A test on a ``task.Clock`` that counts turns therefore passes where a turn holds several steps and fails where the
machine is loaded and each holds one (issue 57: the quiet-publication settle test). With this option the
schedulers' default timer moves a whole second a reading, so every step outlasts any budget: such a test fails
at once, on any machine. ``make test-starved`` runs the in-process unit tests so.
"""

import itertools


def pytest_addoption(parser):
    parser.addoption("--one-step-a-turn", action="store_true", default=False,
                     help="run every scheduler one step a turn (its timer outlasts any budget)")


def starved_timer():
    """A scheduler's timer that moves a second a reading: every step outlasts any turn's budget."""
    readings = itertools.count()
    return lambda: float(next(readings))


def pytest_configure(config):
    if not config.getoption("--one-step-a-turn"):
        return
    from namesrv.timing import scheduler

    timer = starved_timer()
    scheduler.TurnScheduler.__init__.__defaults__ = (timer,)
    scheduler.TurnScheduler.for_config.__func__.__defaults__ = (timer,)
