"""The worker's stdin: a burst of replica parts is applied a part per step of the worker's scheduler,
never all at once."""

import argparse

from twisted.internet import task
from twisted.internet.testing import StringTransport

from namesrv.readworkers.channel.feed import publication
from namesrv.readworkers.channel.generation import SharedGeneration
from namesrv.readworkers.worker.entry import ReadWorker
from namesrv.readworkers.worker.replica import Replica
from namesrv.service import make_service
from processors.route import RouteProcessor
from tests.brokers import register_request
from tests.config_for import service_config as make_config
from tests.fakes import FakeConnection, one_turn, run_turns, Reactor


def test_a_burst_of_parts_is_applied_a_step_per_turn_and_listening_follows_the_first_whole_copy(tmp_path):
    service = make_service(make_config(tmp_path), clock=task.Clock(), reactor=Reactor())
    topics = ["Burst%d" % i for i in range(7)]
    service.registry.dispatch(register_request("C", "b", "127.0.0.1:10911", topics=topics), FakeConnection("127.0.0.1:40000"))
    shared = SharedGeneration(str(tmp_path / "generation"), writable=True)
    shared.bump()
    started = service.context.started
    data = b"".join(publication(shared.value, service.routes, service.kv, service.config, started, RouteProcessor.replicable_codes,
                                None, part_topics=2))

    clock = task.Clock()
    replica = Replica(SharedGeneration(str(tmp_path / "generation")), clock)
    replica.context.scheduler.budget = lambda: 0   # every turn is over its budget after one step
    options = argparse.Namespace(upstream=str(tmp_path / "up.sock"), handoff=None, index=0)
    worker = ReadWorker(options, clock, replica, guards=None)   # listen() is replaced below: no guards needed
    listened = []
    worker.listen = lambda: listened.append(replica.generation)
    worker.makeConnection(StringTransport())

    worker.dataReceived(data)               # 4 parts of 2 topics and the final message, in one read
    assert len(replica.context.routes.topic_queue_table) == 0 and not listened
    seen = []
    for _ in range(5):
        one_turn(clock)
        seen.append(len(replica.context.routes.topic_queue_table))
    assert seen == [2, 4, 6, 7, 7]
    assert listened == [shared.value] and replica.fresh()
    run_turns(clock)
    assert not clock.getDelayedCalls()


def test_a_message_down_reads_back_as_it_was_sent():
    """``pack_down`` pickles without a memo: the same values come back (a name twice is two equal strings), with
    the length prefix of the bytes that follow."""
    import pickle
    import struct
    from namesrv.readworkers.channel.feed import down_reader, pack_down
    names = ["T%04d" % i for i in range(3000)] + ["\udc80lone", "é"]
    message = {"kind": "topics", "shapes": {"groups": [names, names[:5]], "gone": []}, "big": 1 << 70,
               "rows": [["b", 8, 8, 6, 0]] * 3}
    data = pack_down(message)
    assert struct.unpack(">I", data[:4])[0] == len(data) - 4
    assert pickle.loads(data[4:]) == message
    reader = down_reader()
    assert list(reader.feed(data[:10]) or ()) + list(reader.feed(data[10:]) or ()) == [message]
