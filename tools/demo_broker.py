"""A stand-in broker for trying the status page: registers like a 4.9 broker, heart-beats, leaves on Ctrl-C.

    python -m tools.demo_broker -n 127.0.0.1:9876 --name broker-a --topics 5
    python -m tools.demo_broker --name broker-b --id 1 --addr 127.0.0.1:10921   # a slave of broker-b

It sends REGISTER_BROKER (plain RegisterBrokerBody, ``bodyCrc32`` set) every ``--period``
seconds on one connection, as a real broker does every 30 s, and UNREGISTER_BROKER when
stopped. Kill it with SIGKILL instead to watch the name server close its connection, or
pause it (Ctrl-Z) with ``--timeout-millis 10000`` to watch it expire.

When the name server goes away (a restart, Ctrl-C in its terminal) the stand-in notices its
connection close, connects again as soon as the server answers and registers at once (a real
broker waits for its next round, up to 30 s): the README's tour restarts the server under it.
"""

import argparse
import json
import select
import signal
import sys
import time
import zlib

from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codes import RequestCode, ResponseCode, Version
from namesrv.protocol.command import make_request


def register_body(topics, counter):
    table = {name: {"order": False, "perm": 6, "readQueueNums": 4, "topicFilterType": "SINGLE_TAG",
                    "topicName": name, "topicSysFlag": 0, "writeQueueNums": 4} for name in topics}
    body = {"filterServerList": [], "topicConfigSerializeWrapper": {
        "dataVersion": {"counter": counter, "timestamp": int(time.time() * 1000)}, "topicConfigTable": table}}
    return json.dumps(body, separators=(",", ":")).encode()


#: how often a broker whose name server went away tries to connect again
RECONNECT_SECONDS = 0.5


class DemoBroker:
    def __init__(self, args):
        self.args = args
        host, _, port = args.namesrvAddr.rpartition(":")
        self.address = (host, int(port))
        self.client = BlockingRemotingClient(*self.address)
        self.topics = ["%s-Topic%d" % (args.name, i) for i in range(args.topics)]
        self.body = register_body(self.topics, 1)

    def wait(self, seconds):
        """Sleep ``seconds``, or less: True as soon as the name server closes the connection."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            readable, _, _ = select.select([self.client.sock], [], [], left)
            if readable:
                try:
                    if not self.client.sock.recv(65536):   # nothing is expected: only the end counts
                        return True
                except OSError:
                    return True

    def reconnect(self):
        """A new connection once the name server answers again (a restart takes a few seconds)."""
        self.client.close()
        while True:
            try:
                self.client = BlockingRemotingClient(*self.address)
                return
            except OSError:
                time.sleep(RECONNECT_SECONDS)

    def header(self):
        a = self.args
        return {"brokerName": a.name, "brokerAddr": a.addr, "clusterName": a.cluster, "brokerId": str(a.id)}

    def register(self):
        ext = dict(self.header(), haServerAddr=self.args.addr, compressed="false",
                   bodyCrc32=str(zlib.crc32(self.body) & 0x7FFFFFFF))
        if self.args.timeout_millis:
            ext["heartbeatTimeoutMillis"] = str(self.args.timeout_millis)
        answer = self.client.call(make_request(RequestCode.REGISTER_BROKER, ext, self.body, version=Version.V4_9_8))
        if answer.code != ResponseCode.SUCCESS:
            raise SystemExit("registration refused: %d %s" % (answer.code, answer.remark))

    def unregister(self):
        self.client.call(make_request(RequestCode.UNREGISTER_BROKER, self.header(), version=Version.V4_9_8))
        self.client.close()


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m tools.demo_broker", description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--namesrvAddr", default="127.0.0.1:9876")
    parser.add_argument("--cluster", default="DefaultCluster")
    parser.add_argument("--name", default="broker-a")
    parser.add_argument("--id", type=int, default=0, help="0 master, > 0 slave")
    parser.add_argument("--addr", help="address the broker announces (default 127.0.0.1:10911 + 10 * id)")
    parser.add_argument("--topics", type=int, default=5)
    parser.add_argument("--period", type=float, default=30.0, help="seconds between registrations")
    parser.add_argument("--timeout-millis", type=int, default=0, help="heartbeatTimeoutMillis to announce (5.x)")
    parser.add_argument("--rounds", type=int, default=0, help="stop after this many registrations (0: never)")
    args = parser.parse_args(argv)
    args.addr = args.addr or "127.0.0.1:%d" % (10911 + 10 * args.id)
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    broker = DemoBroker(args)
    signal.signal(signal.SIGTERM, signal.default_int_handler)   # `kill` leaves as Ctrl-C does
    rounds = 0
    again = ""
    try:
        while True:
            try:
                broker.register()
            except OSError as e:   # the server went away between its answer and this round
                print("name server %s gone (%s): registering again once it answers" % (args.namesrvAddr, e),
                      flush=True)
                broker.reconnect()
                again = " again"
                continue
            rounds += 1
            print("registered %s (%s, id %d) with %d topics on %s%s" % (
                args.name, args.addr, args.id, len(broker.topics), args.namesrvAddr, again), flush=True)
            again = ""
            if args.rounds and rounds >= args.rounds:
                break
            if broker.wait(args.period):
                print("name server %s closed the connection: registering again once it answers" % args.namesrvAddr,
                      flush=True)
                broker.reconnect()
                again = " again"
    except KeyboardInterrupt:
        pass
    try:
        broker.unregister()
    except OSError as e:
        print("not unregistered: name server %s gone (%s)" % (args.namesrvAddr, e))
        return 0
    print("unregistered %s" % args.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
