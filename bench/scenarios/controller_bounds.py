"""What one client can make a controller keep: RSS after a heartbeat flood, store size after an apply-id flood.

    python -m bench controller_bounds [--heartbeats 600] [--heartbeat-kib 900] [--applies 200] [--apply-kib 100]
                                      [--pythonpath DIR]

Issue 54's findings 4 and 5, measured from outside against a real `twistd controller` (one controller, its
state in a JSON file: the store) on 127.0.0.1. One connection sends ``--heartbeats`` BROKER_HEARTBEATs (904,
one-way, as brokers send them), each for a new broker name of ``--heartbeat-kib`` KiB with a timeout of a day;
the controller's RSS (VmRSS) is read before, after the flood, and 2 s after the connection closed. Then
``--applies`` CONTROLLER_APPLY_BROKER_IDs (1013), each a new broker name of ``--apply-kib`` KiB, and the store's
size before and after. ``--pythonpath`` runs another checkout's code (the same command against the code before
the bounds). Printed: one JSON object.
"""

import json
import os
import sys
import tempfile
import time

from bench.lib import options
from bench.scenarios.controller_failover import Process, free_port, wait
from namesrv.client import BlockingRemotingClient, ask
from namesrv.protocol.codes import RequestCode
from namesrv.protocol.command import make_request

TWISTD = os.path.join(os.path.dirname(sys.executable), "twistd")


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return None


def store_bytes(directory):
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(directory) for name in names)


def flood_heartbeats(port, count, size):
    refused = accepted = 0
    with BlockingRemotingClient("127.0.0.1", port, timeout=30) as client:
        for i in range(count):
            name = "%d-%s" % (i, "x" * (size - 8))
            answer = client.call(make_request(RequestCode.BROKER_HEARTBEAT, ext={
                "clusterName": "FloodCluster", "brokerAddr": "10.9.9.9:%d" % (10000 + i), "brokerName": name,
                "brokerId": "1", "heartbeatTimeoutMills": str(86400000)}))
            if answer.code == 0:
                accepted += 1
            else:
                refused += 1
        time.sleep(1.0)
        return accepted, refused


def flood_applies(port, count, size):
    refused = accepted = 0
    with BlockingRemotingClient("127.0.0.1", port, timeout=30) as client:
        for i in range(count):
            answer = client.call(make_request(RequestCode.CONTROLLER_APPLY_BROKER_ID, ext={
                "clusterName": "FloodCluster", "brokerName": "%d-%s" % (i, "n" * (size - 8)), "appliedBrokerId": "1",
                "registerCheckCode": "10.9.9.9:10911;%d" % i}))
            if answer.code == 0:
                accepted += 1
            else:
                refused += 1
    return accepted, refused


OPTIONS = (
    options.Option("--heartbeats", "heartbeats with new keys on one connection", type=int, default=600),
    options.Option("--heartbeat-kib", "KiB of each heartbeat's fields", type=int, default=900),
    options.Option("--applies", "apply-broker-id requests with new broker names", type=int, default=200),
    options.Option("--apply-kib", "KiB of each apply's names", type=int, default=100),
    options.Option("--pythonpath", "run the controller from this checkout's code instead"),
)


def main(argv=None):
    args = options.parse("controller_bounds", __doc__, OPTIONS, argv)
    workdir = tempfile.mkdtemp(prefix="controller-bounds-")
    port = free_port()
    store = os.path.join(workdir, "store")
    conf = os.path.join(workdir, "controller.properties")
    with open(conf, "w") as f:
        f.write("controllerDLegerGroup=bench\ncontrollerDLegerPeers=n0-127.0.0.1:%d\ncontrollerDLegerSelfId=n0\n"
                "controllerStorePath=%s\nconfigStorePath=%s\n" % (port, store, os.path.join(workdir, "c.conf")))
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    server = Process([TWISTD, "-n", "--pidfile=", "--logfile", os.path.join(workdir, "twistd.log"), "controller",
                      "-c", conf], env=env, cwd=workdir, log=os.path.join(workdir, "stdout.log"))
    try:
        wait(lambda: (ask(port, RequestCode.CONTROLLER_GET_METADATA_INFO) or None) is not None, 60,
             "the controller answering")
        time.sleep(1.0)
        pid = server.popen.pid
        rss_start = rss_mib(pid)
        started = time.monotonic()
        beats_accepted, beats_refused = flood_heartbeats(port, args.heartbeats, args.heartbeat_kib * 1024)
        flood_seconds = time.monotonic() - started
        rss_flood = rss_mib(pid)
        time.sleep(2.0)
        rss_closed = rss_mib(pid)
        store_before = store_bytes(store)
        applies_accepted, applies_refused = flood_applies(port, args.applies, args.apply_kib * 1024)
        time.sleep(1.0)
        store_after = store_bytes(store)
        print(json.dumps({
            "code": args.pythonpath or "this checkout", "heartbeats": args.heartbeats,
            "heartbeatKiB": args.heartbeat_kib, "heartbeatsAccepted": beats_accepted,
            "heartbeatsRefused": beats_refused, "floodSeconds": round(flood_seconds, 2),
            "rssStartMiB": round(rss_start, 1), "rssAfterFloodMiB": round(rss_flood, 1),
            "rssAfterCloseMiB": round(rss_closed, 1), "rssGrowthMiB": round(rss_flood - rss_start, 1),
            "applies": args.applies, "applyKiB": args.apply_kib, "appliesAccepted": applies_accepted,
            "appliesRefused": applies_refused, "storeBeforeBytes": store_before, "storeAfterBytes": store_after,
            "storeGrowthMiB": round((store_after - store_before) / 1048576.0, 3)}))
    finally:
        server.kill()


if __name__ == "__main__":
    main()
