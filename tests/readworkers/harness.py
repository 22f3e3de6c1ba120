"""Harnesses of the read-worker tests: a replica fed by hand, a worker's connections, a recording worker."""

from twisted.internet import task
from twisted.internet.testing import StringTransport

from namesrv.protocol.codec import encode_frame
from namesrv.protocol.codes import RequestCode, Version
from namesrv.protocol.command import make_request
from namesrv.readworkers.channel.feed import down_reader, publication
from namesrv.readworkers.channel.generation import SharedGeneration
from namesrv.readworkers.main.publisher import TopicTracker
from namesrv.readworkers.worker.connections import WorkerConnectionFactory
from namesrv.readworkers.worker.freshness import WAIT
from namesrv.readworkers.worker.replica import Replica
from namesrv.service import make_service
from processors.route import RouteProcessor
from tests.brokers import register_request, route_request
from tests.config_for import service_config
from tests.fakes import FakeConnection, Reactor


class FakeWorker:
    ended = False

    def __init__(self, applied=None):
        self.applied_generation = applied


class RecordingWorker(FakeWorker):
    needs_full = False

    def __init__(self, applied=None):
        FakeWorker.__init__(self, applied)
        self.messages = []

    def send(self, message):
        self.messages.append(down_reader().feed(message)[0])


class Harness:
    """The main service, a shared counter and one replica fed by explicit ``publish()`` calls."""

    def __init__(self, tmp_path, acl=None, reactor=None):
        """``reactor``: the replica's, which a read waiting for a fresh replica waits on (freshness.py); without
        one, reads on a stale replica are forwarded at once."""
        self.service = make_service(service_config(tmp_path), clock=task.Clock(), reactor=Reactor())
        self.shared = SharedGeneration(str(tmp_path / "generation"), writable=True)
        self.tracker = self.service.routes.track_topic_changes(TopicTracker())
        self.service.routes.add_change_listener(self.changed)
        self.service.kv.change_listeners.append(self.changed)
        self.service.config.add_listener(self.changed)
        self.replica = Replica(SharedGeneration(str(tmp_path / "generation")), reactor or Reactor(), acl=acl,
                               fresh_wait=WAIT if reactor is not None else 0)
        self.sizes = []
        self.by_moves = 0   # publications built from the tracker's moves
        self.publish()
        self.by_moves = 0

    def changed(self, *ignored):
        self.shared.bump()

    def publish(self, part_topics=2, incremental=False):
        """A publication of what changed; ``incremental``: as the Publisher sends it, with only the broker rows
        that changed and the tracker's moves (no look at each topic) when they name each topic once."""
        full, topics = self.tracker.take()
        moves = self.tracker.take_moves(topics) if incremental else None
        brokers = self.tracker.take_brokers() if incremental else None
        self.by_moves = getattr(self, "by_moves", 0) + (moves is not None and not full)
        started = self.service.context.started
        data = b"".join(publication(self.shared.value, self.service.routes, self.service.kv, self.service.config,
                                    started, RouteProcessor.replicable_codes, None if full else topics,
                                    part_topics=part_topics, brokers=None if full else brokers,
                                    moves=None if full else moves))
        self.sizes.append((full, len(topics)))
        reader = down_reader()
        messages = reader.feed(data[:7]) + reader.feed(data[7:])   # any cut of the stream
        assert messages[-1]["kind"] == "replica"
        for message in messages:
            assert self.replica.apply(message)

    def main(self, request):
        return self.service.registry.dispatch(request, FakeConnection("127.0.0.1:40000"))

    def assert_same_answers(self, topics):
        assert self.replica.fresh()
        requests = [route_request(t, opaque=i + 1) for i, t in enumerate(topics)]
        requests += [route_request(t, version=Version.V5_0_0, opaque=100 + i) for i, t in enumerate(topics)]
        requests.append(make_request(RequestCode.GET_BROKER_CLUSTER_INFO, opaque=999))
        for request in requests:
            ours = encode_frame(self.replica.registry.dispatch(request, FakeConnection("127.0.0.1:40000")))
            assert ours == encode_frame(self.main(request)), request
        assert self.replica.context.routes.cluster_addr_table == self.service.routes.cluster_addr_table
        assert self.replica.context.routes.broker_addr_table == self.service.routes.broker_addr_table


class FakeUpstream:
    def __init__(self, downstream):
        self.downstream = downstream
        self.frames = []
        self.closed = False

    def send(self, frame):
        self.frames.append(frame)

    def close(self):
        self.closed = True


class Factory(WorkerConnectionFactory):
    def open_upstream(self, connection):
        self.upstream = FakeUpstream(connection)
        return self.upstream


def connect(factory):
    proto = factory.buildProtocol(None)
    transport = StringTransport(peerAddress=None)
    proto.makeConnection(transport)
    return proto, transport


def worker(tmp_path, reactor=None):
    harness = Harness(tmp_path, reactor=reactor)
    harness.main(register_request("C1", "broker-a", "10.0.0.1:10911", topics=["T1", "T2"]))
    harness.publish()
    return harness, Factory(harness.replica, str(tmp_path / "none.sock"), task.Clock())
