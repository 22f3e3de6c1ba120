"""Route-read latency during a registration storm: the figure behind the isolation work.

    python -m bench storm                      # 200 brokers x 1,000 topics, scheduler on
    python -m bench storm --scheduler off      # the same without the route-first scheduler
    python -m bench storm --big-topics 50000 --scans 20
    python -m bench storm --target 127.0.0.1:9876   # against a server you started

Three processes, so the load generator's GIL never slows the measurement: the server
(``twistd namesrv``, or with ``--minimal`` a server built from the route processor alone),
the storm (one thread per broker; every round, all brokers send REGISTER_BROKER with a
new DataVersion at once, so each registration rewrites its 1,000 topics), and a reader
sending GET_ROUTEINFO_BY_TOPIC back to back and timing each answer. It prints the
reader's p50/p99/max before and during the storm. Nothing here is imported by the server.
"""

import multiprocessing
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from bench.lib import options
from bench.lib.brokers import broker_addr, plain_body, register_request
from bench.lib.brokers.bodies import DATA_VERSION_TIMESTAMP
from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode, Version
from namesrv.protocol.command import make_request

PROBE_TOPIC = "storm-probe"


def register_frame(n, topics, counter):
    """Broker ``n``'s REGISTER_BROKER with DataVersion ``counter``: a new one each round, so every topic is
    written again."""
    body = plain_body(topics, counter, timestamp=DATA_VERSION_TIMESTAMP + counter)
    return encode_frame(register_request("storm-broker-%d" % n, broker_addr(n), body, False, cluster="StormCluster",
                                         opaque=counter))


class Conn:
    def __init__(self, address, timeout=120.0):
        self.sock = socket.create_connection(address, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def call(self, frame):
        self.sock.sendall(frame)
        (length,) = struct.unpack(">i", self._read(4))
        return decode_frame(self._read(length))

    def _read(self, n):
        chunks = []
        while n:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ConnectionError("closed by the server")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)


def reader(address, stop, out):
    """Back-to-back route reads; (monotonic end time, seconds) for each answer."""
    conn = Conn(address)
    frame = encode_frame(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": PROBE_TOPIC},
                                      version=Version.V4_9_8, opaque=1))
    samples, codes = [], {}
    while not stop.is_set():
        started = time.monotonic()
        answer = conn.call(frame)
        ended = time.monotonic()
        samples.append((ended, ended - started))
        codes[answer.code] = codes.get(answer.code, 0) + 1
    out.put((samples, codes))


def storm(address, brokers, topics, rounds, big_topics, scans):
    """Run the storm; returns (start, end, answer code counts, registrations sent)."""
    frames = [[register_frame(n, ["storm-%d-topic-%d" % (n, i) for i in range(topics)], r + 1)
               for r in range(rounds)] for n in range(brokers)]
    if big_topics:
        frames.append([register_frame(brokers, ["big-topic-%d" % i for i in range(big_topics)], r + 1)
                       for r in range(rounds)])
    conns = [Conn(address) for _ in frames]
    barrier = threading.Barrier(len(conns) + 1 + (1 if scans else 0))
    codes, lock = {}, threading.Lock()

    def broker(i):
        for frame in frames[i]:
            barrier.wait()
            code = conns[i].call(frame).code
            with lock:
                codes[code] = codes.get(code, 0) + 1

    def admin():
        conn = Conn(address)
        scan = encode_frame(make_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}, opaque=1))
        for _ in range(rounds):
            barrier.wait()
            for _ in range(scans):
                code = conn.call(scan).code
                with lock:
                    codes["scan:%d" % code] = codes.get("scan:%d" % code, 0) + 1

    threads = [threading.Thread(target=broker, args=(i,), daemon=True) for i in range(len(conns))]
    if scans:
        threads.append(threading.Thread(target=admin, daemon=True))
    for t in threads:
        t.start()
    started = time.monotonic()
    for _ in range(rounds):
        barrier.wait()
    for t in threads:
        t.join()
    return started, time.monotonic(), codes, sum(len(f) for f in frames)


def percentiles(values):
    if not values:
        return "no samples"
    values = sorted(values)

    def at(p):
        return values[min(len(values) - 1, int(p * len(values)))] * 1000

    return "n=%d p50=%.2fms p99=%.2fms max=%.2fms" % (len(values), at(0.50), at(0.99), values[-1] * 1000)


def wait_listening(address, process=None, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError("the server exited with %s" % process.returncode)
        try:
            socket.create_connection(address, timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("nothing listens on %s:%s" % address)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn_server(port, scheduler, minimal, workdir, settings=()):
    if minimal:
        cmd = [sys.executable, "-m", "bench.scenarios.storm", "--serve", str(port), "--scheduler", scheduler]
        cmd += ["--set=%s" % setting for setting in settings]
    else:
        props = os.path.join(workdir, "namesrv.properties")
        with open(props, "w") as f:
            f.write("listenPort=%d\nbindAddress=127.0.0.1\nkvConfigPath=%s\nrouteSnapshotEnable=false\n"
                    "eventLogEnable=false\nlogDir=%s\nisolationSchedulerEnable=%s\n"
                    % (port, os.path.join(workdir, "kv.json"), workdir, "true" if scheduler == "on" else "false"))
            f.writelines(setting.strip() + "\n" for setting in settings)
        twistd = os.path.join(os.path.dirname(sys.executable), "twistd")
        cmd = [twistd, "-n", "--pidfile=", "--logfile", os.path.join(workdir, "twistd.log"), "namesrv", "-c", props]
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")])))
    return subprocess.Popen(cmd, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def build_minimal_service(reactor, config):
    """A guarded request path with the route processor alone (no KV store, no event log):
    ``factory`` dispatches through the request chain (``chain``) as in ``make_service``."""
    import types
    from namesrv.context import NamesrvContext
    from namesrv.observe.eventlog import NullEventLog
    from namesrv.server.housekeeping import BrokerHousekeeping
    from namesrv.dispatch.chain import namesrv_chain
    from namesrv.routes import RouteInfoManager
    from namesrv.server.factory import RemotingServerFactory
    from processors.route import RouteProcessor

    class NoKV:
        def kv_table_body(self, namespace):
            return None

        def get(self, namespace, key):
            return None

    events = NullEventLog()
    routes = RouteInfoManager(events=events)
    context = NamesrvContext(config=config, routes=routes, kv=NoKV(), reactor=reactor, events=events)
    chain = namesrv_chain([RouteProcessor(context)], config, context.scheduler, events, reactor)
    factory = RemotingServerFactory(chain.entry, config, BrokerHousekeeping(routes, events), events, reactor)
    return types.SimpleNamespace(config=config, reactor=reactor, routes=routes, events=events, registry=chain.registry,
                                 chain=chain, factory=factory)


def serve_minimal(port, scheduler, settings=()):
    """A server from the route processor alone (for when the full service is not available)."""
    from twisted.internet import reactor
    from namesrv.config import NamesrvConfig

    config = NamesrvConfig()
    overrides = {"bindAddress": "127.0.0.1", "isolationSchedulerEnable": "true" if scheduler == "on" else "false"}
    overrides.update(options.properties(settings))
    config.update(overrides, source="--set", announce=False)
    svc = build_minimal_service(reactor, config)
    reactor.listenTCP(port, svc.factory, interface="127.0.0.1", backlog=1024)
    reactor.run()


OPTIONS = (
    options.TARGET,
    options.BROKERS(200),
    options.TOPICS(1000, "each broker's"),
    options.ROUNDS(3, "of every broker registering at once"),
    options.Option("--big-topics", "one more broker with this many topics", type=int, default=0),
    options.Option("--scans", "GET_ALL_TOPIC_LIST requests per round", type=int, default=0),
    options.Option("--scheduler", "isolationSchedulerEnable", choices=("on", "off"), default="on"),
    options.Option("--minimal", "serve with the route processor alone", action="store_true"),
    options.Option("--baseline", "seconds of reads before the storm", type=float, default=2.0),
    options.PROPERTY([], "e.g. schedulerTurnBudgetMillis=2", flag="--set"),
    options.Option("--serve", options.HIDDEN, type=int),   # the --minimal server's own process
)


def main(argv=None):
    args = options.parse("storm", __doc__, OPTIONS, argv)
    if args.serve:
        return serve_minimal(args.serve, args.scheduler, args.set)

    server = None
    workdir = tempfile.mkdtemp(prefix="storm-")
    if args.target:
        host, _, port = args.target.rpartition(":")
        address = (host, int(port))
    else:
        address = ("127.0.0.1", free_port())
        server = spawn_server(address[1], args.scheduler, args.minimal, workdir, args.set)
    try:
        wait_listening(address, server)
        probe_broker = Conn(address)  # stays open: closing it would unregister the broker
        answer = probe_broker.call(register_frame(10 ** 6, [PROBE_TOPIC, PROBE_TOPIC + "-2"], 1))
        if answer.code != 0:
            raise RuntimeError("registering the probe topic failed: %s %s" % (answer.code, answer.remark))
        stop, out = multiprocessing.Event(), multiprocessing.Queue()
        probe = multiprocessing.Process(target=reader, args=(address, stop, out), daemon=True)
        probe.start()
        time.sleep(args.baseline)
        started, ended, codes, sent = storm(address, args.brokers, args.topics, args.rounds,
                                            args.big_topics, args.scans)
        time.sleep(0.5)
        stop.set()
        samples, read_codes = out.get(timeout=60)
        probe.join(10)
    finally:
        if server is not None:
            server.terminate()
            server.wait(20)
    before = [s for t, s in samples if t < started]
    during = [s for t, s in samples if started <= t <= ended]
    print("server: %s, scheduler %s" % ("minimal (route processor only)" if args.minimal else
                                        args.target or "twistd namesrv", args.scheduler))
    print("storm: %d brokers x %d topics, %d rounds%s%s: %d registrations in %.2fs (%.0f/s), answers %s"
          % (args.brokers, args.topics, args.rounds,
             ", +1 broker with %d topics" % args.big_topics if args.big_topics else "",
             ", %d admin scans/round" % args.scans if args.scans else "",
             sent, ended - started, sent / (ended - started), codes))
    print("route reads before the storm: %s" % percentiles(before))
    print("route reads during the storm: %s (answer codes %s)" % (percentiles(during), read_codes))


if __name__ == "__main__":
    main()
