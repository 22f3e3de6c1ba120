"""1,000 broker groups in controller mode against one controller: does it keep up, how fast does it act?

    python -m bench controller_groups [--groups 1000] [--window 20] [--victims 20] [--embedded]

A `twistd controller` (or, with ``--embedded``, a `twistd namesrv` with the controller inside) on
127.0.0.1; this process plays every broker over real TCP: each group's two brokers get their ids
(1012, 1013), beat, register (1003), the first one elects itself (1002); then every broker beats
once a second (904, one-way, as 5.x brokers do) and every broker polls its replica info every
2 s (1004), as ReplicasManager does. Printed: the controller process's CPU over the window (of
one core), the latency of a 1004 probe meanwhile, and for ``--victims`` masters whose connection
is aborted one at a time, the time until NOTIFY_BROKER_ROLE_CHANGED reaches the survivor's port.
"""

import os
import resource
import subprocess
import sys
import tempfile
import time

from twisted.internet import defer, protocol, reactor, task
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol

from bench.lib import options
from bench.lib.brokers import CLUSTER, Broker, controller_heartbeat_request, replica_info_request
from bench.scenarios.controller_failover import free_port, wait
from namesrv.client import RemotingClientProtocol
from namesrv.protocol.codec import encode_frame
from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request

TWISTD = os.path.join(os.path.dirname(sys.executable), "twistd")


class NotificationListener(protocol.Protocol):
    def __init__(self, broker):
        self.broker = broker

    def dataReceived(self, data):
        if self.broker.notified_at is None:
            self.broker.notified_at = time.monotonic()


class ControllerModeBroker:
    """A 5.x broker in controller mode: its ids, beats, polls and election, over one connection."""

    def __init__(self, group, index):
        self.name = "broker-%04d" % group
        self.index = index
        self.listener = reactor.listenTCP(0, protocol.Factory.forProtocol(lambda: NotificationListener(self)),
                                          interface="127.0.0.1")
        self.address = "127.0.0.1:%d" % self.listener.getHost().port
        self.client = None
        self.broker_id = None
        self.notified_at = None
        self._beat_frame = self._poll_frame = None

    @defer.inlineCallbacks
    def connect(self, port):
        self.client = yield connectProtocol(TCP4ClientEndpoint(reactor, "127.0.0.1", port), RemotingClientProtocol())

    def call(self, code, **ext):
        return self.client.call(make_request(code, ext=ext))

    def beat(self):
        if self._beat_frame is None:     # encoded once: the load generator must not be what is measured
            self._beat_frame = encode_frame(controller_heartbeat_request(
                Broker(self.name, self.broker_id, self.address, CLUSTER)))
        self.client.transport.write(self._beat_frame)

    def poll(self):
        if self._poll_frame is None:
            self._poll_frame = encode_frame(replica_info_request(self.name))
        self.client.unsolicited.clear()     # the answers to earlier polls: not waited for
        self.client.transport.write(self._poll_frame)

    @defer.inlineCallbacks
    def add_to_sync_state_set(self, slave):
        """The master reports its slave in sync (1001), so that the slave can take over."""
        body = ('{"syncStateSet":[%d,%d],"syncStateSetEpoch":1}' % (self.broker_id, slave.broker_id)).encode()
        answer = yield self.client.call(make_request(RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, ext={
            "brokerName": self.name, "masterBrokerId": str(self.broker_id), "masterEpoch": "1"}, body=body))
        assert answer.code == 0, (answer.code, answer.remark)

    @defer.inlineCallbacks
    def start(self, elect):
        answer = yield self.call(RequestCode.CONTROLLER_GET_NEXT_BROKER_ID, clusterName=CLUSTER, brokerName=self.name)
        self.broker_id = int(answer.ext["nextBrokerId"])
        answer = yield self.call(RequestCode.CONTROLLER_APPLY_BROKER_ID, clusterName=CLUSTER, brokerName=self.name,
                                 appliedBrokerId=str(self.broker_id), registerCheckCode="%s;1" % self.address)
        assert answer.code == 0, (answer.code, answer.remark)
        self.beat()
        yield self.call(RequestCode.CONTROLLER_REGISTER_BROKER, clusterName=CLUSTER, brokerName=self.name,
                        brokerId=str(self.broker_id), brokerAddress=self.address)
        if elect:
            answer = yield self.call(RequestCode.CONTROLLER_ELECT_MASTER, clusterName=CLUSTER, brokerName=self.name,
                                     brokerId=str(self.broker_id), designateElect="false")
            assert answer.code == 0, (answer.code, answer.remark)


def _listening(port):
    import socket
    try:
        socket.create_connection(("127.0.0.1", port), 1).close()
        return True
    except OSError:
        return False


def server_side_elections(log_dir):
    """masterlessMillis of every controller-made election in the event log: from the master found gone to
    the new master committed, as the controller itself measured it."""
    import glob
    import json
    found = []
    for path in glob.glob(os.path.join(log_dir, "*.log")):
        with open(path) as f:
            for line in f:
                event = json.loads(line)
                if event.get("event") == "controller_master_elected" and event.get("masterlessMillis") is not None:
                    found.append(event["masterlessMillis"])
    return found


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


@defer.inlineCallbacks
def run(args, workdir):
    port = free_port(neighbours=(0, 1))
    conf = os.path.join(workdir, "controller.properties")
    props = {"controllerDLegerGroup": "bench", "controllerDLegerPeers": "n0-127.0.0.1:%d" % port,
             "controllerDLegerSelfId": "n0", "controllerStorePath": os.path.join(workdir, "ctrl"),
             "logDir": os.path.join(workdir, "logs"), "serverMaxConnections": "20000"}
    if args.embedded:
        props.update(enableControllerInNamesrv="true", listenPort=str(free_port()), routeReadWorkers="0",
                     kvConfigPath=os.path.join(workdir, "kv.json"),
                     routeSnapshotPath=os.path.join(workdir, "routes.snapshot"))
    with open(conf, "w") as f:
        f.writelines("%s=%s\n" % item for item in props.items())
    server = subprocess.Popen([TWISTD, "-n", "--pidfile=", "--logfile", os.path.join(workdir, "twistd.log"),
                               "namesrv" if args.embedded else "controller", "-c", conf], cwd=workdir)
    try:
        wait(lambda: _listening(port), 60, "controller listening")
        groups = [(ControllerModeBroker(g, 0), ControllerModeBroker(g, 1)) for g in range(args.groups)]
        started = time.monotonic()
        for first in range(0, args.groups, 50):
            batch = groups[first:first + 50]
            yield defer.gatherResults([b.connect(port) for pair in batch for b in pair])
            yield defer.gatherResults([pair[0].start(True) for pair in batch])
            yield defer.gatherResults([pair[1].start(False) for pair in batch])
            yield defer.gatherResults([pair[0].add_to_sync_state_set(pair[1]) for pair in batch])
        print("%d groups (%d brokers) registered and elected in %.1f s" % (args.groups, 2 * args.groups,
                                                                          time.monotonic() - started), flush=True)
        brokers = [b for pair in groups for b in pair]
        # spread over each period in 20 slices, as independent brokers' timers are
        slices = [brokers[i::20] for i in range(20)]
        beats = [task.LoopingCall(lambda part=part: [b.beat() for b in part]) for part in slices]
        polls = [task.LoopingCall(lambda part=part: [b.poll() for b in part[::2]]) for part in slices]
        for i, (beat, poll) in enumerate(zip(beats, polls)):
            reactor.callLater(i / 20.0, beat.start, 1.0)
            reactor.callLater(i / 10.0, poll.start, 2.0)
        yield task.deferLater(reactor, 2.0, lambda: None)
        probe = groups[0][1]
        latencies = []
        cpu0, t0 = cpu_seconds(server.pid), time.monotonic()
        while time.monotonic() - t0 < args.window:
            sent = time.monotonic()
            yield probe.call(RequestCode.CONTROLLER_GET_REPLICA_INFO, brokerName=probe.name)
            latencies.append((time.monotonic() - sent) * 1000)
            yield task.deferLater(reactor, 0.05, lambda: None)
        cpu = (cpu_seconds(server.pid) - cpu0) / (time.monotonic() - t0)
        print("window %.0f s: %d beats/s + %d replica polls/s; controller CPU %.1f %% of one core; "
              "1004 probe p50 %.2f ms, p99 %.2f ms, max %.2f ms" % (
                  args.window, len(brokers), len(brokers) // 2, 100 * cpu, percentile(latencies, 0.5),
                  percentile(latencies, 0.99), max(latencies)), flush=True)
        delays = []
        for master, survivor in groups[1:1 + args.victims]:
            survivor.notified_at = None
            killed_at = time.monotonic()
            master.client.transport.abortConnection()
            deadline = killed_at + 5
            while survivor.notified_at is None and time.monotonic() < deadline:
                yield task.deferLater(reactor, 0.001, lambda: None)
            if survivor.notified_at is not None:
                delays.append((survivor.notified_at - killed_at) * 1000)
            yield task.deferLater(reactor, 0.2, lambda: None)
        print("%d masters killed one at a time: 1008 at the survivor after p50 %.1f ms, p99 %.1f ms, max %.1f ms "
              "(%d of %d notified)" % (args.victims, percentile(delays, 0.5), percentile(delays, 0.99),
                                       max(delays) if delays else float("nan"), len(delays), args.victims),
              flush=True)
        for call in beats + polls:
            if call.running:
                call.stop()
        server.terminate()
        server.wait(30)
        elected = server_side_elections(os.path.join(workdir, "logs"))
        if elected:
            print("server side (event log): master lost -> new master committed p50 %.1f ms, max %.1f ms" % (
                percentile(elected, 0.5), max(elected)), flush=True)
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(30)


OPTIONS = (
    options.Option("--groups", "broker groups (a master and a slave each)", type=int, default=1000),
    options.Option("--window", "seconds of steady load measured", type=float, default=20.0),
    options.Option("--victims", "masters whose connection is aborted, one at a time", type=int, default=20),
    options.Option("--embedded", "the controller inside twistd namesrv", action="store_true"),
)


def main(argv=None):
    args = options.parse("controller_groups", __doc__, OPTIONS, argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    workdir = tempfile.mkdtemp(prefix="controller-groups-")
    task.react(lambda _reactor: run(args, workdir))


if __name__ == "__main__":
    main()
