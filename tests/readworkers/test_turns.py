"""A read worker's connections take turns (namesrv/readworkers/worker/turns.py): a client with one read is
answered in the pass that reads it, however many reads other clients pipelined."""

import struct

from twisted.internet.testing import StringTransport

from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.remoting import ConnectionState
from namesrv.readworkers.worker import turns as turns_module
from tests.brokers import route_request
from tests.fakes import StepTimer, one_turn, run_turns
from tests.protocol.test_remoting import written_frames
from tests.readworkers.test_forwarding import worker


class ReadingTransport(StringTransport):
    """Records whether the connection reads its socket (pauseProducing / resumeProducing)."""

    reading = True

    def pauseProducing(self):
        self.reading = False

    def resumeProducing(self):
        self.reading = True


def _connect(factory):
    proto = factory.buildProtocol(None)
    transport = ReadingTransport(peerAddress=None)
    proto.makeConnection(transport)
    return proto, transport


#: a pipeline deeper than a turn's quantum
DEEP = 3 * turns_module.QUANTUM + 5


def _reads(topic, first_opaque, n):
    return b"".join(encode_frame(route_request(topic, opaque=first_opaque + i)) for i in range(n))


def _opaques(transport):
    return [decode_frame(f[4:]).opaque for f in written_frames(transport)]


def _waiting(proto):
    return proto.state in (ConnectionState.WAITING, ConnectionState.WAITING_UNREAD)


def _scheduler(factory):
    """The worker's scheduler, and its reactor (a task.Clock: ``one_turn`` is one reactor turn)."""
    scheduler = factory.turns.scheduler
    return scheduler, scheduler.reactor


def test_a_few_reads_are_answered_at_once_without_waiting(tmp_path):
    harness, factory = worker(tmp_path)
    proto, transport = _connect(factory)
    proto.dataReceived(_reads("T1", 1, turns_module.QUANTUM))
    assert _opaques(transport) == list(range(1, turns_module.QUANTUM + 1))
    assert transport.reading and not factory.turns.busy()


def test_a_deep_pipeline_takes_turns_and_a_single_read_goes_first(tmp_path):
    harness, factory = worker(tmp_path)
    scheduler, reactor = _scheduler(factory)
    scheduler.budget = lambda: 0   # one connection's quantum per reactor turn
    deep = [_connect(factory) for _ in range(3)]
    answered = []
    for n, (proto, transport) in enumerate(deep):
        proto.dataReceived(_reads("T1", 1000 * (n + 1), DEEP))
        answered.append(_opaques(transport))
        assert _waiting(proto) and transport.reading   # the rest waits its turn
    # the first handles a quantum; once it waits, the other pipelines wait whole
    assert [len(a) for a in answered] == [turns_module.QUANTUM, 0, 0]
    prober, probe = _connect(factory)
    prober.dataReceived(_reads("T2", 1, 1))
    assert _opaques(probe) == [1]   # answered in the pass that read it, before the reads queued
    prober.dataReceived(_reads("T2", 2, turns_module.FIRST))
    assert _opaques(probe) == list(range(2, 2 + turns_module.FIRST))   # a read or two: at once too
    first = 2 + turns_module.FIRST
    prober.dataReceived(_reads("T2", first, turns_module.FIRST + 1))
    assert _opaques(probe) == [] and _waiting(prober)   # more: they wait their turn, whole
    prober.dataReceived(_reads("T2", first + turns_module.FIRST + 1, 1))
    assert _opaques(probe) == []    # read while waiting: behind what waits, in order
    turns = 0
    while factory.turns.busy():
        one_turn(reactor)
        turns += 1
    assert turns >= (3 * DEEP - turns_module.QUANTUM) // turns_module.QUANTUM
    for n, (proto, transport) in enumerate(deep):
        assert answered[n] + _opaques(transport) == list(range(1000 * (n + 1), 1000 * (n + 1) + DEEP))
        assert not _waiting(proto)
    assert _opaques(probe) == list(range(first, first + turns_module.FIRST + 2)) and not _waiting(prober)


def test_a_closed_connection_leaves_its_turn(tmp_path):
    harness, factory = worker(tmp_path)
    proto, transport = _connect(factory)
    proto.dataReceived(_reads("T1", 1, DEEP))
    written_frames(transport)
    proto.connectionLost(None)
    run_turns(_scheduler(factory)[1])
    assert written_frames(transport) == [] and not factory.turns.busy()


def test_a_paused_slow_reader_goes_on_when_resumed(tmp_path):
    harness, factory = worker(tmp_path)
    proto, transport = _connect(factory)
    proto.dataReceived(_reads("T1", 1, DEEP))
    assert len(_opaques(transport)) == turns_module.QUANTUM
    proto.pauseProducing()       # its peer stopped reading the answers
    assert not factory.turns.busy()   # it left its turns at once
    run_turns(_scheduler(factory)[1])
    assert _opaques(transport) == []
    proto.resumeProducing()
    run_turns(_scheduler(factory)[1])
    assert _opaques(transport) == list(range(turns_module.QUANTUM + 1, DEEP + 1)) and not _waiting(proto)


def test_a_pass_over_its_budget_leaves_one_frame_per_connection_read_after(tmp_path):
    harness, factory = worker(tmp_path)
    scheduler, reactor = _scheduler(factory)
    scheduler.timer = timer = StepTimer(100.0)
    first, first_t = _connect(factory)
    first.dataReceived(_reads("T1", 1, 10))
    assert _opaques(first_t) == list(range(1, 11)) and not factory.turns.busy()
    timer.spend(2 * scheduler.budget())   # this pass over the sockets has used its budget
    late, late_t = _connect(factory)
    late.dataReceived(_reads("T1", 100, 10))
    assert _opaques(late_t) == [] and _waiting(late)
    single, single_t = _connect(factory)
    single.dataReceived(_reads("T1", 300, 1))
    assert _opaques(single_t) == [300]
    one_turn(reactor)   # the next reactor turn: turns, and a new pass
    assert _opaques(late_t) == list(range(100, 110)) and not _waiting(late)
    fresh, fresh_t = _connect(factory)
    fresh.dataReceived(_reads("T1", 200, 10))
    assert _opaques(fresh_t) == list(range(200, 210))


def test_a_connection_waiting_for_its_turn_stops_reading_past_the_limit(tmp_path):
    harness, factory = worker(tmp_path)
    proto, transport = _connect(factory)
    proto.dataReceived(_reads("T1", 1, DEEP))
    assert _waiting(proto) and transport.reading
    frame = encode_frame(route_request("T1", opaque=5000))
    while transport.reading:   # a client that writes and writes
        proto.dataReceived(frame)
    assert proto.reader.buffered() > turns_module.TURN_READ_LIMIT
    assert proto.state is ConnectionState.WAITING_UNREAD
    run_turns(_scheduler(factory)[1])
    assert transport.reading and not _waiting(proto)   # its turn done: read again
    assert _opaques(transport)[-1] == 5000


def test_an_impossible_length_read_while_others_wait_closes_only_that_connection(tmp_path):
    harness, factory = worker(tmp_path)
    deep, deep_t = _connect(factory)
    deep.dataReceived(_reads("T1", 1, DEEP))
    assert factory.turns.busy()                      # others wait: what is read next is counted first
    bad, bad_t = _connect(factory)
    bad.dataReceived(_reads("T1", 500, 1) + struct.pack(">i", -4) + b"more")
    assert bad.state is ConnectionState.CLOSING and bad_t.disconnecting
    assert _opaques(bad_t) == [500]                  # what came before the bad frame was answered
    run_turns(_scheduler(factory)[1])
    assert _opaques(deep_t)[-1] == DEEP and not factory.turns.busy()
