"""``python -m bench worker_reads [CONNECTIONS DEPTH ROUNDS]``: a read worker's CPU per route read, in process.

A main service is filled (4 brokers × 500 topics), its publication applied to a Replica, and CONNECTIONS
connections of a WorkerConnectionFactory (StringTransports, nothing written kept) are each fed DEPTH
pipelined GET_ROUTEINFO_BY_TOPIC per read, ROUNDS rounds, the reactor (a task.Clock) turned until nothing
is due between rounds: framing, turns, the answer cache and the writes run; sockets do not. Prints the
best of 5 in microseconds of CPU per read. Of the name server it uses only what every tree since the read
workers has, so it can be copied (with bench/lib/options.py) into an older tree to compare.
"""

import os
import tempfile
import time

from twisted.internet import task
from twisted.internet.testing import StringTransport

from bench.lib import options
from bench.lib.brokers import register_body, register_request
from namesrv.config import NamesrvConfig
from namesrv.protocol.codec import encode_frame
from namesrv.protocol.codes import RequestCode, Version
from namesrv.protocol.command import make_request
from namesrv.status.views import PageConnection


class _Sink(StringTransport):
    def write(self, data):
        pass


def _replica(workdir):
    from namesrv.readworkers.channel.feed import down_reader, publication
    from namesrv.readworkers.channel.generation import SharedGeneration
    from namesrv.readworkers.worker.replica import Replica
    from namesrv.service import make_service

    config = NamesrvConfig()
    config.update({"eventLogEnable": "false", "routeSnapshotEnable": "false", "listenPort": "0",
                   "kvConfigPath": os.path.join(workdir, "kv.json"), "logDir": workdir,
                   "configStorePath": os.path.join(workdir, "namesrv.properties")})
    service = make_service(config, reactor=task.Clock(), clock=task.Clock())
    topics = ["T%04d" % i for i in range(500)]
    for b in range(4):
        answer = service.registry.dispatch(register_request("b%d" % b, "10.0.0.%d:10911" % b,
                                                            register_body(topics, False), False),
                                           PageConnection("127.0.0.1:40000"))
        assert answer.code == 0
    shared = SharedGeneration(os.path.join(workdir, "generation"), writable=True)
    shared.bump()
    clock = task.Clock()
    replica = Replica(SharedGeneration(os.path.join(workdir, "generation")), clock)
    route = service.registry.processor_for(RequestCode.GET_ROUTEINFO_BY_TOPIC)
    data = b"".join(publication(shared.value, service.routes, service.kv, service.config, service.context.started,
                                sorted(route.replicable_codes), None))
    for message in down_reader().feed(data):
        replica.apply(message)
    assert replica.fresh()
    return replica, clock, topics


OPTIONS = (options.CONNECTIONS(255, flag="connections", nargs="?"), options.DEPTH(32, flag="depth", nargs="?"),
           options.ROUNDS(4, "of every connection's reads", flag="rounds", nargs="?"))


def main(argv=None):
    from namesrv.readworkers.worker.connections import WorkerConnectionFactory
    args = options.parse("worker_reads", __doc__, OPTIONS, argv)
    connections, depth, rounds = args.connections, args.depth, args.rounds
    with tempfile.TemporaryDirectory(prefix="bench-worker-reads-") as workdir:
        replica, clock, topics = _replica(workdir)
        factory = WorkerConnectionFactory(replica, os.path.join(workdir, "up.sock"), clock)
        factory.idle_timeout = lambda: None
        protocols = []
        for _ in range(connections):
            protocol = factory.buildProtocol(None)
            protocol.makeConnection(_Sink(peerAddress=None))
            protocols.append(protocol)
        reads = [b"".join(encode_frame(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                    {"topic": topics[(i * depth + j) % len(topics)]},
                                                    opaque=j + 1, version=Version.V4_9_8))
                          for j in range(depth)) for i in range(connections)]

        def run():
            for _ in range(rounds):
                for protocol, data in zip(protocols, reads):
                    protocol.dataReceived(data)
                for _ in range(100000):   # reactor turns until nothing is due
                    if not any(call.getTime() <= clock.seconds() + 1e-8 for call in clock.getDelayedCalls()):
                        break
                    clock.advance(1e-8)
        run()
        best = None
        for _ in range(5):
            started = time.process_time()
            run()
            took = time.process_time() - started
            best = took if best is None else min(best, took)
        count = connections * depth * rounds
        print("%d connections × %d reads: %.2f us of CPU per read (%d reads, best of 5)"
              % (connections, depth, best / count * 1e6, count))


if __name__ == "__main__":
    main()
