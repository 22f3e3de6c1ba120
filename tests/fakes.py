"""The stand-ins every test area shares: a connection with no socket, an event log that remembers.

Both provide the interface of what they replace (checked with ``verifyObject`` in
tests/test_interfaces.py), so a change to IRemotingConnection or IEventLog breaks the fakes
loudly instead of letting tests pass against something the server would never see.
"""

import itertools
import struct
from types import SimpleNamespace

from twisted.internet import task
from twisted.trial.unittest import SynchronousTestCase
from twisted.python.failure import Failure
from zope.interface import implementer

from namesrv.interfaces import IRemotingConnection, IRequestProcessor
from namesrv.observe.eventlog import NullEventLog


_connection_ids = itertools.count(1)


@implementer(IRemotingConnection)
class FakeConnection:
    """A connection the tables and processors can hold; ``close()`` is only recorded.

    ``closing`` follows RemotingProtocol (the scheduler skips liveness requests from a
    connection that is closing); ``closed`` says whether ``close()`` was called.
    """

    def __init__(self, peer="127.0.0.1:5555", connection_id=None, closing=False):
        self.peer = peer
        self.connection_id = next(_connection_ids) if connection_id is None else connection_id
        self.closing = closing
        self.closed = False

    def close(self):
        self.closing = True
        self.closed = True

    def __repr__(self):
        return "<FakeConnection %d %s>" % (self.connection_id, self.peer)


class RecordingEventLog(NullEventLog):
    """A NullEventLog that keeps what it was told: ``emitted`` (event, fields) and ``requests``."""

    def __init__(self, server_id="127.0.0.1:9876"):
        NullEventLog.__init__(self, server_id)
        self.emitted = []
        self.requests = []

    def emit(self, event, **fields):
        self.emitted.append((event, fields))
        NullEventLog.emit(self, event, **fields)

    def record_request(self, code, response_code, micros, peer):
        self.requests.append((code, response_code, peer))

    def record_requests(self, code, response_code, count, micros, peer):
        self.requests.extend([(code, response_code, peer)] * count)

    def named(self, name):
        return [fields for event, fields in self.emitted if event == name]

    def topic_changes(self):
        """``topic_route_changed`` events, one dict per topic (an event may list several ``topics``)."""
        return topic_changes(self.named("topic_route_changed"))

    def clear(self):
        del self.emitted[:]


def topic_changes(events):
    """Expand ``topic_route_changed`` events into one {topic, before, after} per topic."""
    out = []
    for fields in events:
        topics = fields["topics"] if "topics" in fields else [fields["topic"]]
        assert ("topics" in fields) != ("topic" in fields) and (len(topics) > 1 or "topic" in fields)
        out.extend({"topic": t, "before": fields["before"], "after": fields["after"]} for t in topics)
    return out


class StepTimer:
    """A ``timer`` for code that measures its own time (the scheduler's budget, queue waits): it
    stands still until a test says how long a step took (``spend``)."""

    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now

    def spend(self, seconds):
        self.now += seconds


def turn_scheduler(clock, budget=0.001, timer=None):
    """A TurnScheduler on ``clock`` (a task.Clock): ``one_turn(clock)`` runs one of its turns."""
    from namesrv.timing.scheduler import TurnScheduler
    return TurnScheduler(clock, budget if callable(budget) else (lambda: budget), timer or StepTimer())


def one_turn(clock):
    """One reactor turn on a task.Clock: the scheduler's next turn and what was due with it."""
    from namesrv.timing.scheduler import NEXT_TURN
    clock.advance(NEXT_TURN)


def run_turns(clock, limit=100000):
    """Reactor turns on ``clock`` until nothing is due at once (every sliced job has ended or waits)."""
    from namesrv.timing.scheduler import NEXT_TURN
    for _ in range(limit):
        if not any(call.getTime() <= clock.seconds() + NEXT_TURN for call in clock.getDelayedCalls()):
            return
        clock.advance(NEXT_TURN)
    raise AssertionError("still turning after %d turns" % limit)


class SyncPool:
    def callInThreadWithCallback(self, on_result, f, *args, **kwargs):
        try:
            result, ok = f(*args, **kwargs), True
        except Exception:
            result, ok = Failure(), False
        on_result(ok, result)


class CallableClock(task.Clock):
    """A task.Clock that is also the ``time.time``-like callable some classes take (``clock()``); ``now``
    reads and sets its time (``clock.now += 2.5``)."""

    def __init__(self, now=0.0):
        task.Clock.__init__(self)
        self.rightNow = now

    def __call__(self):
        return self.seconds()

    @property
    def now(self):
        return self.rightNow

    @now.setter
    def now(self, value):
        self.rightNow = value


class Reactor(task.Clock):
    """A Clock whose threads run at once (the KV file is written synchronously)."""

    def getThreadPool(self):
        return SyncPool()

    def callFromThread(self, f, *args, **kwargs):
        f(*args, **kwargs)


def written_frames(transport):
    """Every whole frame written to ``transport`` (length field included), which is then cleared."""
    data = transport.value()
    transport.clear()
    out = []
    while data:
        (length,) = struct.unpack(">i", data[:4])
        out.append(data[:4 + length])
        data = data[4 + length:]
    return out


_trial = SynchronousTestCase()


def result_of(d):
    """The result of a Deferred that has already fired: trial's ``successResultOf`` (a failure or a
    Deferred still waiting fails the test, with the failure's traceback)."""
    return _trial.successResultOf(d)


def failure_of(d, *expected):
    """The Failure of a Deferred that has already failed: trial's ``failureResultOf``."""
    return _trial.failureResultOf(d, *expected)


def answers_so_far(deferred_or_answer):
    """A list that holds the answer now, or once the Deferred fires (then it stays empty until it does)."""
    found = []
    if hasattr(deferred_or_answer, "addCallback"):
        deferred_or_answer.addCallback(found.append)
    else:
        found.append(deferred_or_answer)
    return found


@implementer(IRequestProcessor)
class FakeProcessor:
    """A processor of ``codes`` answering with ``handler(request)``; ``reject`` is its reject_request answer."""

    def __init__(self, name, codes, handler, reject=None):
        self.name = name
        self.codes = frozenset(codes)
        self.handler = handler
        self.reject = reject

    def reject_request(self, request):
        return self.reject

    def process_request(self, request, connection):
        return self.handler(request)


class FakeStatusTracker:
    """What spark/progress.py reads of a SparkContext's status tracker: jobs and stages the test sets."""

    def __init__(self):
        self.jobs, self.stages, self.all_jobs = [], {}, []

    def getJobIdsForGroup(self, group):
        return list(self.all_jobs)

    def getActiveJobsIds(self):
        return list(self.jobs)

    def getActiveStageIds(self):
        return list(self.stages)

    def getStageInfo(self, stage_id):
        done, total = self.stages[stage_id]
        return SimpleNamespace(numCompletedTasks=done, numTasks=total)


class HeldThreadPool:
    """Runs nothing until the test says so (what deferToThreadPool needs of a pool)."""

    def __init__(self):
        self.jobs = []

    def callInThreadWithCallback(self, on_result, f, *args, **kwargs):
        self.jobs.append((on_result, f, args, kwargs))

    def run_next(self):
        on_result, f, args, kwargs = self.jobs.pop(0)
        try:
            result = f(*args, **kwargs)
        except BaseException as e:
            on_result(False, Failure(e))
        else:
            on_result(True, result)


class HeldPoolReactor(Reactor):
    """The shared fake reactor (a task.Clock), its thread pool holding work until the test lets it run."""

    def __init__(self):
        Reactor.__init__(self)
        self.pool = HeldThreadPool()

    def getThreadPool(self):
        return self.pool


class FakeUnixTransport:
    """A UNIX transport that records what was written, the descriptors sent and whether it was lost."""

    def __init__(self):
        self.written, self.descriptors, self.lost = [], [], False

    def sendFileDescriptor(self, descriptor):
        self.descriptors.append(descriptor)

    def write(self, data):
        self.written.append(data)

    def loseConnection(self):
        self.lost = True
