"""What a route read costs with ACL on against off, in process: CPU time a read, answer-cache hits, cache bytes.

    python -m bench acl_reads [--topics 100000] [--reads 300000] [--rounds 3] [--json]

The service of ``twistd namesrv`` (make_service) on one StringTransport connection from 127.0.0.1, ten brokers
over ``--topics`` topics; every topic's read is sent once, then ``--reads`` reads of random topics in pipelined
batches of 32, as the fleet benchmark's load generator sends them. With ACL on (``aclEnable=true``, a reading
user limited to 127.0.0.1/32) every frame is signed once, as bench.scenarios.bigfleet signs its templates.
Rounds alternate off and on. The figure is the process's CPU time a read (``time.process_time``): the server's
work only (no sockets, no load generator), so a busy machine changes it less than it changes reads/s.
"""

import json
import random
import shutil
import tempfile
import time

from twisted.internet import task
from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

from bench.lib import options
from bench.lib.brokers import register_body, register_request
from bench.lib.wire import route_request
from bench.scenarios.bigfleet import ACL_FILE, READER
from namesrv.config import NamesrvConfig
from namesrv.protocol.codec import encode_frame
from namesrv.service import make_service
from tests.fakes import Reactor, run_turns

BATCH = 32
BROKERS = 10


def one_run(topics, reads, acl, seed):
    workdir = tempfile.mkdtemp(prefix="bench-acl-reads-")
    try:
        config = NamesrvConfig()
        props = {"kvConfigPath": workdir + "/kv.json", "routeSnapshotEnable": "false", "eventLogEnable": "false",
                 "logDir": workdir, "routeReadWorkers": "0"}
        if acl:
            with open(workdir + "/acl.yml", "w") as f:
                f.write(ACL_FILE)
            props.update(aclEnable="true", aclFile=workdir + "/acl.yml", brokerAllowedAddresses="127.0.0.1")
        config.update(props, announce=False)
        reactor = Reactor()
        service = make_service(config, reactor=reactor, clock=task.Clock())
        proto = service.factory.buildProtocol(None)
        transport = StringTransport(peerAddress=IPv4Address("TCP", "127.0.0.1", 40000))
        proto.makeConnection(transport)
        names = ["Fleet%06d" % i for i in range(topics)]
        for broker in range(BROKERS):
            body = register_body(names[broker::BROKERS], False)
            proto.dataReceived(encode_frame(register_request("b%d" % broker, "127.0.0.1:%d" % (10000 + broker), body,
                                                             False, 0, "BenchCluster")))
            run_turns(reactor)   # a registration runs in the scheduler's turns
        transport.clear()
        assert len(service.routes.topic_names()) == topics, "the brokers did not register"
        frames = [encode_frame(route_request(name, credentials=READER if acl else None)) for name in names]
        for start in range(0, len(frames), BATCH):        # every frame once: the cache as the fleet's reads leave it
            proto.dataReceived(b"".join(frames[start:start + BATCH]))
            transport.clear()
        transport.clear()
        proto.dataReceived(b"".join(frames[:BATCH]))
        found = transport.value().count(b'{"code":0,') / float(min(BATCH, topics))   # the routes are there
        transport.clear()
        rng = random.Random(seed)
        order = [rng.randrange(topics) for _ in range(reads)]
        cache = service.answer_cache
        hits = cache.hits
        began = time.process_time()
        for start in range(0, reads, BATCH):
            proto.dataReceived(b"".join(frames[i] for i in order[start:start + BATCH]))
            transport.clear()
        cpu = time.process_time() - began
        return {"acl": acl, "topics": topics, "reads": reads, "cpu_us_per_read": cpu * 1e6 / reads,
                "cache_hit_share": (cache.hits - hits) / reads, "cache_keys": len(cache),
                "cache_mib": cache.total_bytes / 1048576.0, "found": found}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


OPTIONS = (
    options.TOPICS(100_000),
    options.Option("--reads", "route reads a run", type=int, default=300_000),
    options.ROUNDS(3, "pairs of runs, ACL off then on"),
    options.JSON,
)


def main(argv=None):
    args = options.parse("acl_reads", __doc__, OPTIONS, argv)
    costs = {False: [], True: []}
    for round_ in range(args.rounds):
        for acl in (False, True):
            run = one_run(args.topics, args.reads, acl, seed=round_)
            run["round"] = round_ + 1
            costs[acl].append(run["cpu_us_per_read"])
            print("round %d, ACL %-3s: %.2f us a read, %.1f%% from the answer cache (%d keys, %.1f MiB)"
                  % (round_ + 1, "on" if acl else "off", run["cpu_us_per_read"], 100 * run["cache_hit_share"],
                     run["cache_keys"], run["cache_mib"]), flush=True)
            if args.json:
                print(json.dumps(run, sort_keys=True), flush=True)
    off, on = sorted(costs[False])[len(costs[False]) // 2], sorted(costs[True])[len(costs[True]) // 2]
    print("median CPU a read: ACL off %.2f us, on %.2f us: reads at %.2fx the ACL-off rate for the same CPU"
          % (off, on, off / on))


if __name__ == "__main__":
    main()
