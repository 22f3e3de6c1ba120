"""Where a heartbeat storm's time goes: ``python -m bench heartbeat_stall [--brokers 100] [--topics 1000]``.

An unstarted NameServer (a ``task.Clock`` as its reactor, no sockets) gets B brokers' REGISTER_BROKER
frames in 64 KiB pieces, as a read would deliver them, round after round: round 0 registers, round 1
re-registers after every broker changed the tables (the full path), later rounds are steady-state
heartbeats (the unchanged-registration shortcut). Prints, per round, the cost of reading and framing
(what one epoll pass over every ready broker socket costs the reactor) and of handling.
"""

import os
import tempfile
import time

from twisted.internet import task
from twisted.internet.testing import StringTransport

from bench.lib import options
from bench.lib.brokers import OwnTopicsLayout


def build(brokers, topics, workdir):
    from namesrv.config import NamesrvConfig
    from namesrv.observe.eventlog import NullEventLog
    from namesrv.protocol.codec import encode_frame
    from namesrv.service import make_service

    config = NamesrvConfig()
    config.update({"eventLogEnable": "false", "routeSnapshotEnable": "false", "listenPort": "0",
                   "kvConfigPath": os.path.join(workdir, "kv.json"), "logDir": workdir,
                   "configStorePath": os.path.join(workdir, "namesrv.properties")})
    clock = task.Clock()
    service = make_service(config, reactor=clock, events=NullEventLog())
    layout = OwnTopicsLayout(topics)   # the brokers of bench.scenarios.mixed
    links = []
    for i in range(brokers):
        frame = encode_frame(layout.register_request(i))
        protocol = service.factory.buildProtocol(None)
        protocol.makeConnection(StringTransport())
        links.append((protocol, frame))
    return service, clock, links


def one_round(service, clock, links, piece=65536):
    from namesrv.timing.scheduler import NEXT_TURN
    reading = worst = 0.0
    for protocol, frame in links:
        for at in range(0, len(frame), piece):
            started = time.perf_counter()
            protocol.dataReceived(frame[at:at + piece])
            took = time.perf_counter() - started
            reading += took
            worst = max(worst, took)
    started = time.perf_counter()
    while service.context.scheduler.busy():   # the scheduler's turns, one per advance
        clock.advance(NEXT_TURN)
    return reading, worst, time.perf_counter() - started


OPTIONS = (options.BROKERS(100), options.TOPICS(1000, "each broker's"),
           options.ROUNDS(4, "of every broker's registration"))


def main(argv=None):
    args = options.parse("heartbeat_stall", __doc__, OPTIONS, argv)
    with tempfile.TemporaryDirectory(prefix="bench-stall-") as workdir:
        service, clock, links = build(args.brokers, args.topics, workdir)
        processor = service.registry.processor_for(103)
        for number in range(args.rounds):
            skipped = processor.unchanged.skipped
            reading, worst, handling = one_round(service, clock, links)
            print("round %d: read+frame %.1f ms (%.3f ms per broker, worst read %.2f ms); handling %.1f ms "
                  "(%.3f ms per broker); %d of %d on the unchanged shortcut"
                  % (number, reading * 1e3, reading * 1e3 / args.brokers, worst * 1e3, handling * 1e3,
                     handling * 1e3 / args.brokers, processor.unchanged.skipped - skipped, args.brokers))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
