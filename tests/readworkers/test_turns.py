"""A read worker's connections take turns (namesrv/readworkers/worker/turns.py): a client with one read is
answered in the pass that reads it, however many reads other clients pipelined."""

from twisted.internet import task
from twisted.internet.testing import StringTransport

from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.readworkers.worker import turns as turns_module
from tests.brokers import route_request
from tests.protocol.test_remoting import written_frames
from tests.readworkers.test_forwarding import worker


class OneTurnAtATime:
    """A reactor's callLater whose calls run one turn at a time."""

    def __init__(self):
        self.due = []

    def callLater(self, delay, f, *args):
        call = task.DelayedCall(0, f, args, {}, lambda c: None, lambda c: None)
        self.due.append(call)
        return call

    def turn(self):
        due, self.due = self.due, []
        for call in due:
            if call.active():
                call.called = 1
                call.func(*call.args)


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


def test_a_few_reads_are_answered_at_once_without_waiting(tmp_path):
    harness, factory = worker(tmp_path)
    proto, transport = _connect(factory)
    proto.dataReceived(_reads("T1", 1, turns_module.QUANTUM))
    assert _opaques(transport) == list(range(1, turns_module.QUANTUM + 1))
    assert transport.reading and not factory.turns.busy()


def test_a_deep_pipeline_takes_turns_and_a_single_read_goes_first(tmp_path):
    harness, factory = worker(tmp_path)
    factory.turns.budget = 0   # one connection's quantum per reactor turn
    factory.turns.reactor = reactor = OneTurnAtATime()
    deep = [_connect(factory) for _ in range(3)]
    answered = []
    for n, (proto, transport) in enumerate(deep):
        proto.dataReceived(_reads("T1", 1000 * (n + 1), DEEP))
        answered.append(_opaques(transport))
        assert proto.in_turns and transport.reading   # the rest waits its turn
    # the first handles a quantum; once it waits, the other pipelines wait whole
    assert [len(a) for a in answered] == [turns_module.QUANTUM, 0, 0]
    prober, probe = _connect(factory)
    prober.dataReceived(_reads("T2", 1, 1))
    assert _opaques(probe) == [1]   # answered in the pass that read it, before the reads queued
    prober.dataReceived(_reads("T2", 2, turns_module.FIRST))
    assert _opaques(probe) == list(range(2, 2 + turns_module.FIRST))   # a read or two: at once too
    first = 2 + turns_module.FIRST
    prober.dataReceived(_reads("T2", first, turns_module.FIRST + 1))
    assert _opaques(probe) == [] and prober.in_turns   # more: they wait their turn, whole
    prober.dataReceived(_reads("T2", first + turns_module.FIRST + 1, 1))
    assert _opaques(probe) == []    # read while waiting: behind what waits, in order
    turns = 0
    while factory.turns.busy():
        reactor.turn()
        turns += 1
    assert turns >= (3 * DEEP - turns_module.QUANTUM) // turns_module.QUANTUM
    for n, (proto, transport) in enumerate(deep):
        assert answered[n] + _opaques(transport) == list(range(1000 * (n + 1), 1000 * (n + 1) + DEEP))
        assert not proto.in_turns
    assert _opaques(probe) == list(range(first, first + turns_module.FIRST + 2)) and not prober.in_turns


def test_a_closed_connection_leaves_its_turn(tmp_path):
    harness, factory = worker(tmp_path)
    proto, transport = _connect(factory)
    proto.dataReceived(_reads("T1", 1, DEEP))
    written_frames(transport)
    proto.connectionLost(None)
    factory.reactor.advance(0)
    assert written_frames(transport) == [] and not factory.turns.busy()


def test_a_paused_slow_reader_goes_on_when_resumed(tmp_path):
    harness, factory = worker(tmp_path)
    proto, transport = _connect(factory)
    proto.dataReceived(_reads("T1", 1, DEEP))
    assert len(_opaques(transport)) == turns_module.QUANTUM
    proto.pauseProducing()       # its peer stopped reading the answers
    factory.reactor.advance(0)
    assert _opaques(transport) == [] and not factory.turns.busy()
    proto.resumeProducing()
    while factory.turns.busy():
        factory.reactor.advance(0)
    assert _opaques(transport) == list(range(turns_module.QUANTUM + 1, DEEP + 1)) and not proto.in_turns


def test_a_pass_over_its_budget_leaves_one_frame_per_connection_read_after(tmp_path):
    harness, factory = worker(tmp_path)
    now = [100.0]
    factory.turns.timer = lambda: now[0]
    factory.turns.reactor = reactor = OneTurnAtATime()
    first, first_t = _connect(factory)
    first.dataReceived(_reads("T1", 1, 10))
    assert _opaques(first_t) == list(range(1, 11)) and not factory.turns.busy()
    now[0] += 2 * turns_module.BUDGET   # this pass over the sockets has used its budget
    late, late_t = _connect(factory)
    late.dataReceived(_reads("T1", 100, 10))
    assert _opaques(late_t) == [] and late.in_turns
    single, single_t = _connect(factory)
    single.dataReceived(_reads("T1", 300, 1))
    assert _opaques(single_t) == [300]
    reactor.turn()   # the next reactor turn: turns, and a new pass
    assert _opaques(late_t) == list(range(100, 110)) and not late.in_turns
    fresh, fresh_t = _connect(factory)
    fresh.dataReceived(_reads("T1", 200, 10))
    assert _opaques(fresh_t) == list(range(200, 210))


def test_a_connection_waiting_for_its_turn_stops_reading_past_the_limit(tmp_path):
    harness, factory = worker(tmp_path)
    proto, transport = _connect(factory)
    proto.dataReceived(_reads("T1", 1, DEEP))
    assert proto.in_turns and transport.reading
    frame = encode_frame(route_request("T1", opaque=5000))
    while transport.reading:   # a client that writes and writes
        proto.dataReceived(frame)
    assert len(proto.reader.buffer) > turns_module.TURN_READ_LIMIT
    while factory.turns.busy():
        factory.reactor.advance(0)
    assert transport.reading and not proto.in_turns   # its turn done: read again
    assert _opaques(transport)[-1] == 5000
