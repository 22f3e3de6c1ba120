"""Restart figures: route readers across `twistd namesrv --takeover`, over real sockets.

A server runs with one registered broker; reader threads ask for the broker's topic's
route in a loop (one keeps its connection, as a Java client does; one opens a connection
per request, so the accept queue is exercised too); a second server is started with the
same properties file and ``--takeover``; the old one hands over and exits. Printed: the
requests sent, failed, answered TOPIC_NOT_EXIST, and the slowest answer during the switch
(from starting the new process until the old one has exited) and outside it.

    python -m bench restart [--workers 1] [--seconds 4] [--readers 2]

Bounded: each reader stops after ``--seconds`` past the old process's exit or 60 s in all.
"""

import os
import subprocess
import sys
import time

from bench.lib import options
from bench.lib.brokers import register_body, register_request
from bench.lib.servers import REPO, NamesrvServer
from namesrv.client import BlockingRemotingClient, RouteReadLoop
from namesrv.protocol.codes import ResponseCode

TOPIC = "RestartBenchTopic"
HARD_LIMIT = 60.0


class Reader(RouteReadLoop):
    """Records (start, seconds, outcome) for every request until stopped."""

    def __init__(self, port, fresh):
        RouteReadLoop.__init__(self, port, TOPIC, fresh, max_seconds=HARD_LIMIT)

    def record(self, began, seconds, code, error):
        outcome = ("ok" if code == ResponseCode.SUCCESS
                   else "not_exist" if code == ResponseCode.TOPIC_NOT_EXIST else "failed")
        self.samples.append((began, seconds, outcome))


class TakeoverServer(NamesrvServer):
    def command(self):
        return NamesrvServer.command(self) + ["--takeover"]


def run(workers, seconds, readers):
    old = NamesrvServer({"routeReadWorkers": str(workers), "routeSnapshotEnable": "true",
                         "routeSnapshotPath": "routes.snapshot"})
    old.start()
    new = None
    try:
        if workers:
            old.wait_for_log("read worker 0 listening")
        broker = BlockingRemotingClient("127.0.0.1", old.port)
        body = register_body([TOPIC, TOPIC + "2"], compressed=False)
        assert broker.call(register_request("b-restart", "127.0.0.1:10911", body, False)).code == 0
        threads = [Reader(old.port, fresh=bool(i % 2)) for i in range(readers)]
        for thread in threads:
            thread.start()
        time.sleep(1.0)
        new = TakeoverServer.__new__(TakeoverServer)
        new.__dict__.update(old.__dict__)
        new.log_file = os.path.join(old.workdir, "namesrv-new.log")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
        switch_began = time.monotonic()
        with open(new.log_file, "ab") as log:
            new.process = subprocess.Popen(new.command(), cwd=old.workdir, env=env, stdout=log,
                                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        old.process.wait(30)
        switch_ended = time.monotonic()
        time.sleep(seconds)
        for thread in threads:
            thread.stop_event.set()
            thread.join(HARD_LIMIT)
        heartbeat = broker.call(register_request("b-restart", "127.0.0.1:10911", body, False)).code
        broker.close()
    finally:
        old.stop()
        if new is not None:
            new.stop()
    samples = [s for thread in threads for s in thread.samples]
    during = [s for s in samples if switch_began <= s[0] + s[1] and s[0] <= switch_ended]
    outside = sorted(s[1] for s in samples if s not in during)
    count = lambda rows, what: sum(1 for s in rows if s[2] == what)  # noqa: E731
    print("routeReadWorkers=%d, %d readers (half on a new connection per request)" % (workers, readers))
    print("  switch (new process started -> old process exited): %.3f s; old exit code %s"
          % (switch_ended - switch_began, old.process.returncode))
    print("  requests sent: %d (%d during the switch)" % (len(samples), len(during)))
    print("  failed: %d   TOPIC_NOT_EXIST: %d" % (count(samples, "failed"), count(samples, "not_exist")))
    print("  slowest answer during the switch: %.3f s; outside it: p99 %.4f s, max %.4f s"
          % (max((s[1] for s in during), default=0.0), outside[int(len(outside) * 0.99)] if outside else 0.0,
             outside[-1] if outside else 0.0))
    for thread in threads:
        for began, took, outcome in thread.samples:
            if outcome != "ok":
                print("  %s on %s connection: began %+.3f s after the new process started, took %.3f s"
                      % (outcome, "a new" if thread.fresh else "a kept", began - switch_began, took))
    print("  broker's connection opened on the old process, registration answered after: code %d" % heartbeat)
    return 0 if count(samples, "failed") == count(samples, "not_exist") == 0 else 1


OPTIONS = (options.WORKERS([1, 0]), options.SECONDS(2.0, "after the old process exited"), options.READERS(2))


def main(argv=None):
    args = options.parse("restart", __doc__, OPTIONS, argv)
    return max(run(w, args.seconds, args.readers) for w in args.workers)


if __name__ == "__main__":
    sys.exit(main())
