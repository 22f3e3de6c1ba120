"""A worker that does not exit when its stdin closes names itself (its stacks, through SIGUSR1) and is killed,
well within the whole stop's bound (namesrv/observe/stopwatch.py)."""

from twisted.internet import task
from twisted.python.failure import Failure

from namesrv.observe.stopwatch import STOP_BOUND
from namesrv.readworkers.main import processes
from namesrv.readworkers.main.processes import WorkerProcess
from namesrv.service import make_service
from tests.config_for import service_config as make_config
from tests.readworkers.pools import pool_for


class ChildTransport:
    def __init__(self):
        self.signals = []
        self.stdin_closed = False

    def closeStdin(self):
        self.stdin_closed = True

    def signalProcess(self, name):
        self.signals.append(name)


def stopping_worker(tmp_path):
    clock = task.Clock()
    service = make_service(make_config(tmp_path), clock=clock, reactor=clock)
    pool = pool_for(service)
    pool.reactor = clock
    worker = pool.workers[0] = WorkerProcess(pool, 0)
    worker.transport = ChildTransport()
    worker.listening = True
    return worker, clock


def test_a_worker_that_does_not_exit_prints_its_stacks_then_is_killed_within_the_bound(tmp_path):
    worker, clock = stopping_worker(tmp_path)
    ended = worker.stop()
    assert worker.transport.stdin_closed and worker.transport.signals == []
    clock.advance(processes.STOP_GRACE)
    assert worker.transport.signals == ["USR1"]          # faulthandler in the worker: its stacks, into our log
    clock.advance(processes.DUMP_GRACE)
    assert worker.transport.signals == ["USR1", "KILL"]
    assert processes.STOP_GRACE + processes.DUMP_GRACE < STOP_BOUND
    worker.processEnded(Failure(Exception("killed")))
    assert ended.called


def test_a_worker_that_exits_in_time_is_left_alone(tmp_path):
    worker, clock = stopping_worker(tmp_path)
    ended = worker.stop()
    clock.advance(processes.STOP_GRACE / 2)
    worker.processEnded(Failure(Exception("done")))
    clock.advance(processes.STOP_GRACE + processes.DUMP_GRACE)
    assert ended.called and worker.transport.signals == []


def test_a_worker_still_starting_is_ended_at_once(tmp_path):
    """Not listening yet (importing, restoring its first copy): no client, no count to wait for; SIGTERM."""
    worker, clock = stopping_worker(tmp_path)
    worker.listening = False
    worker.stop()
    assert worker.transport.stdin_closed and worker.transport.signals == ["TERM"]
