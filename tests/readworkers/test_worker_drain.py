"""A read worker's drain (worker/entry.py) on a task.Clock: idle connections go at once, busy ones when their
answers are out or, after ``drainloop.WORKER_GRACE``, regardless; then "drained" and the worker stops."""

import argparse

from twisted.internet import task
from twisted.internet.testing import StringTransport

from namesrv.readworkers.channel.feed import MessageReader
from namesrv.readworkers.channel.generation import SharedGeneration
from namesrv.readworkers.worker.entry import ReadWorker
from namesrv.readworkers.worker.replica import Replica
from namesrv.timing import drainloop


class StoppedClock(task.Clock):
    running = False   # the worker stops a running reactor once it has drained


class Guards:
    running = False


class Connection:
    """A worker's client connection with ``awaiting`` forwarded answers (no transport: a TLS one, which
    cannot move, so it is closed once idle)."""

    closing = False
    transport = None

    def __init__(self, factory, key, awaiting=0):
        self.factory, self.key, self.awaiting = factory, key, awaiting
        factory.connections[key] = self

    def close(self):
        self.closing = True   # gone from the factory once its transport has closed (``lost``)

    def lost(self):
        self.factory.connections.pop(self.key, None)


def draining_worker(tmp_path):
    SharedGeneration(str(tmp_path / "generation"), writable=True)
    clock = StoppedClock()
    replica = Replica(SharedGeneration(str(tmp_path / "generation")), clock)
    options = argparse.Namespace(upstream=str(tmp_path / "up.sock"), handoff=None, index=3)
    worker = ReadWorker(options, clock, replica, Guards())
    transport = StringTransport()
    worker.makeConnection(transport)
    return worker, transport, clock


def said(transport):
    return [m["kind"] for m in MessageReader().feed(transport.value())]


def test_idle_connections_go_at_the_first_look_and_the_worker_says_drained(tmp_path):
    worker, transport, clock = draining_worker(tmp_path)
    idle = Connection(worker.factory, 1)
    worker.drain()
    assert not idle.closing            # not in the batch that brought the drain message
    clock.advance(drainloop.QUICK)
    assert idle.closing and said(transport) == []
    clock.advance(drainloop.QUICK)
    assert said(transport) == []       # still closing
    idle.lost()
    clock.advance(drainloop.QUICK)
    assert said(transport) == ["drained"] and worker._stopped and not clock.getDelayedCalls()


def test_a_busy_connection_is_waited_for_until_the_grace_then_closed(tmp_path):
    worker, transport, clock = draining_worker(tmp_path)
    busy = Connection(worker.factory, 1, awaiting=1)
    worker.drain()
    worker.drain()                     # a second drain message changes nothing
    clock.pump([drainloop.SLOW] * int(drainloop.WORKER_GRACE / drainloop.SLOW - 1))
    assert not busy.closing and said(transport) == []
    clock.pump([drainloop.SLOW] * 2)
    assert busy.closing and said(transport) == []
    clock.pump([drainloop.SLOW] * 100)  # late, and not drained while it is still there
    assert said(transport) == []
    busy.lost()
    clock.advance(drainloop.SLOW)
    assert said(transport) == ["drained"] and worker._stopped


def test_a_connection_whose_answers_come_back_goes_then(tmp_path):
    worker, transport, clock = draining_worker(tmp_path)
    busy = Connection(worker.factory, 1, awaiting=1)
    worker.drain()
    clock.pump([drainloop.QUICK] * 30)
    assert not busy.closing
    busy.awaiting = 0
    clock.advance(drainloop.SLOW)
    assert busy.closing
    busy.lost()
    clock.advance(drainloop.SLOW)
    assert said(transport) == ["drained"] and clock.seconds() < drainloop.WORKER_GRACE
