"""The address service's two targets, measured on real `twistd namesrv` processes (127.0.0.1).

    python -m tools.address_drill                      # both parts, default settings, 3 rounds
    python -m tools.address_drill --only death --rounds 5
    python -m tools.address_drill --only flood --flood-seconds 10 --flooders 2 --read-workers 0 [--flooder-nice 19]

*death*: name servers A (serving the list of A and B, default address-service settings) and B.
Each round kills B (SIGKILL), then starts it again; and stops it (SIGSTOP: the port still
accepts, nothing answers), then lets it go on (SIGCONT). A client asks A's list every 20 ms and
records how long after the kill (or stop) B was gone from it, and how long after B answered a
request again (or was let go on) it was back.

*flood*: a producer-like client asks A for a route every 10 ms in its own process
(tools.latency), first alone, then while ``--flooders`` processes send address requests as fast
as they can on keep-alive connections: good ones, unknown subgroups, odd characters, 600-byte
and 20 KiB paths. Prints the route latency both ways and what the flood got (by HTTP status).
"""

import argparse
import collections
import http.client
import json
import multiprocessing
import os
import signal
import tempfile
import time
import urllib.error
import urllib.request

from tests.integration.server import NamesrvProcess, free_port
from tools import checks
from tools.latency import LatencyProbe


def served(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.read().decode().strip()
    except (urllib.error.URLError, OSError) as e:
        return "error: %s" % e


def seconds_until(url, wanted, started, within=60.0, every=0.02):
    while time.monotonic() - started < within:
        if served(url) == wanted:
            return round(time.monotonic() - started, 2)
        time.sleep(every)
    return None


def signal_tree(pid, sig):
    """``sig`` to a server and its read workers (its children), by PID."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            children = [int(child) for child in f.read().split()]
    except OSError:
        children = []
    for target in [pid, *children]:
        os.kill(target, sig)


def death(rounds, workdir, read_workers):
    http, a_port, b_port = free_port(), free_port(), free_port()
    both, alone = "127.0.0.1:%d;127.0.0.1:%d" % (a_port, b_port), "127.0.0.1:%d" % a_port
    for name in ("a", "b"):
        os.makedirs(os.path.join(workdir, name), exist_ok=True)
    b_props = {"routeReadWorkers": str(read_workers)}
    a = NamesrvProcess(os.path.join(workdir, "a"), {"routeReadWorkers": str(read_workers),
                                                    "prometheusListenPort": str(http),
                                                    "addressServiceNamesrvAddr": both}, port=a_port).start()
    b = NamesrvProcess(os.path.join(workdir, "b"), b_props, port=b_port).start()
    url = "http://127.0.0.1:%d/rocketmq/nsaddr" % http
    results = collections.defaultdict(list)
    try:
        assert seconds_until(url, both, time.monotonic()) is not None
        for _ in range(rounds):
            started = time.monotonic()
            b.stop(signal.SIGKILL)
            results["killed_gone_s"].append(seconds_until(url, alone, started))
            b = NamesrvProcess(os.path.join(workdir, "b"), b_props, port=b_port).start()
            results["restarted_back_s"].append(seconds_until(url, both, time.monotonic()))
            started = time.monotonic()
            signal_tree(b.process.pid, signal.SIGSTOP)
            results["stopped_gone_s"].append(seconds_until(url, alone, started))
            started = time.monotonic()
            signal_tree(b.process.pid, signal.SIGCONT)
            results["continued_back_s"].append(seconds_until(url, both, started))
    finally:
        b.stop()
        a.stop()
    return dict(results)


_BAD_TARGETS = ["/rocketmq/unknown", "/rocketmq/a%00b", "/rocketmq/%C3%A9", "/rocketmq/" + "x" * 600,
                "/rocketmq/" + "y" * 20000]


def _flood(port, stop, results, niceness):
    os.nice(niceness)
    counts = collections.Counter()
    conn, i = None, 0
    while not stop.is_set():
        target = _BAD_TARGETS[i % len(_BAD_TARGETS)] if i % 2 else "/rocketmq/nsaddr"
        i += 1
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", target)
            answer = conn.getresponse()
            answer.read()
            counts[str(answer.status)] += 1
            if answer.will_close:
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            counts["closed"] += 1
            if conn is not None:
                conn.close()
            conn = None
    results.put(dict(counts))


def flood(seconds, flooders, workdir, read_workers, max_per_second, niceness=0):
    http_port = free_port()
    server = NamesrvProcess(workdir, {"routeReadWorkers": str(read_workers), "prometheusListenPort": str(http_port),
                                      "addressServiceMaxRequestsPerSecond": str(max_per_second),
                                      "addressServiceNamesrvAddr": "127.0.0.1:%d" % 9876}).start()
    out = {"read_workers": read_workers, "max_per_second": max_per_second, "flooders": flooders,
           "flooder_nice": niceness}
    try:
        with checks.ControlBroker("127.0.0.1", server.port, keepalive=10):
            with LatencyProbe("127.0.0.1", server.port) as quiet:
                time.sleep(seconds)
            ctx = multiprocessing.get_context("fork")
            stop, results = ctx.Event(), ctx.Queue()
            workers = [ctx.Process(target=_flood, args=(http_port, stop, results, niceness), daemon=True)
                       for _ in range(flooders)]
            for w in workers:
                w.start()
            time.sleep(0.5)
            with LatencyProbe("127.0.0.1", server.port) as flooded:
                time.sleep(seconds)
            stop.set()
            counts = collections.Counter()
            for _ in workers:
                counts.update(results.get(timeout=30))
            for w in workers:
                w.join(10)
    finally:
        server.stop()
    out.update(quiet=quiet.stats, flooded=flooded.stats, flood_answers=dict(counts),
               flood_per_second=round(sum(counts.values()) / (seconds + 0.5)))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["death", "flood"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--flood-seconds", type=float, default=10.0)
    parser.add_argument("--flooders", type=int, default=2)
    parser.add_argument("--read-workers", type=int, default=0)
    parser.add_argument("--max-per-second", type=int, default=500, help="addressServiceMaxRequestsPerSecond")
    parser.add_argument("--flooder-nice", type=int, default=0, help="run the flooders at this niceness (19: their "
                        "own CPU time counts less against the server's, as when they run on other hosts)")
    args = parser.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="namesrv-address-drill-")
    report = {}
    if args.only in (None, "death"):
        report["death"] = death(args.rounds, os.path.join(workdir, "death"), args.read_workers)
    if args.only in (None, "flood"):
        os.makedirs(os.path.join(workdir, "flood"))
        report["flood"] = flood(args.flood_seconds, args.flooders, os.path.join(workdir, "flood"), args.read_workers,
                                args.max_per_second, args.flooder_nice)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
