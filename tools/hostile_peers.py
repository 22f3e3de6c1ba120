"""Run each hostile-peer scenario against a NameServer and measure a good client's route latency meanwhile.

    python -m tools.hostile_peers                      # spawns `twistd namesrv`, runs every scenario
    python -m tools.hostile_peers --only storm,slowloris
    python -m tools.hostile_peers --quick              # smaller numbers, about a minute

For every scenario the figures are: what the hostile peers achieved, the good client's route
latency (p50 / p99 / max, from a separate process asking every 10 ms), the server's RSS
(before / peak / after) and whether the tables were still consistent afterwards.
The spawned server uses ``serverChannelMaxIdleTimeSeconds=10``, ``serverSlowReaderTimeoutSeconds=5``
and ``serverReadFrameTimeoutSeconds=8`` (defaults 120, 30, 60) so that the run is short;
everything else is default.
"""

import argparse
import functools
import json
import os
import sys
import tempfile
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tools import checks, peers  # noqa: E402
from tools.latency import LatencyProbe, RssSampler  # noqa: E402

SERVER_PROPERTIES = {"serverChannelMaxIdleTimeSeconds": "10", "serverSlowReaderTimeoutSeconds": "5",
                     "serverReadFrameTimeoutSeconds": "8"}


def scenarios(host, port, quick=False):
    """(name, description, callable) in run order; sizes follow the issue unless ``quick``."""
    q = (lambda full, small: small if quick else full)
    return [
        ("baseline", "no hostile peer", functools.partial(_idle, q(5.0, 2.0))),
        ("slow_readers", "%d peers pipeline GET_ALL_TOPIC_LIST (2,000 topics) and never read" % q(50, 10),
         functools.partial(peers.slow_readers, host, port, q(50, 10), q(12.0, 8.0))),
        ("slowloris", "%d peers send 1 byte/s of a 1 MiB REGISTER_BROKER frame" % q(1000, 100),
         functools.partial(peers.slowloris, host, port, q(1000, 100), q(12.0, 10.0))),
        ("half_open", "%d connections send 3 bytes, then nothing" % q(2000, 200),
         functools.partial(peers.half_open, host, port, q(2000, 200), q(16.0, 13.0))),
        ("storm", "%d connections opened at once and dropped (RST), %d rounds" % (q(5000, 1000), q(3, 2)),
         functools.partial(peers.connection_storm, host, port, q(5000, 1000), q(3, 2), 120.0)),
        ("register_then_cut", "broker registers 10,000 topics, then disconnects mid-body of the next, x%d"
         % q(5, 2), functools.partial(peers.register_then_cut, host, port, 10000, q(5, 2))),
        ("big_registration", "one broker re-registers %d topics (plain JSON) %d times" % (q(100000, 20000), 3),
         functools.partial(peers.big_registration, host, port, q(100000, 20000), 3)),
        ("zlib_bombs", "%d compressed registrations inflating to %d MiB each" % (q(3, 1), q(255, 64)),
         functools.partial(peers.zlib_bombs, host, port, q(3, 1), q(255, 64) << 20)),
    ]


def _idle(seconds):
    time.sleep(seconds)
    return {}


def run_scenario(host, port, pid, name, description, action, checker):
    with RssSampler(pid) as rss, LatencyProbe(host, port) as probe:
        started = time.monotonic()
        figures = action()
        seconds = time.monotonic() - started
    problems = checker.check()
    return {"scenario": name, "description": description, "seconds": round(seconds, 1), "figures": figures,
            "latency": probe.stats, "rss_kib": [rss.first_kib, rss.peak_kib, rss.last_kib],
            "consistent": not problems, "problems": problems[:3]}


def _ms(value):
    return "%.1f" % value if value is not None else "-"


def _mib(kib):
    return "%.0f" % (kib / 1024.0) if kib else "?"


def format_table(results):
    lines = ["| scenario | hostile peers | result | good client route p50 / p99 / max ms (errors) | "
             "server RSS MiB before / peak / after | tables consistent |", "|---|---|---|---|---|---|"]
    for r in results:
        lat = r["latency"]
        figures = ", ".join("%s=%s" % (k, round(v, 2) if isinstance(v, float) else v)
                            for k, v in r["figures"].items())
        lines.append("| %s | %s | %s | %s / %s / %s (%d) | %s / %s / %s | %s |" % (
            r["scenario"], r["description"], figures or "-", _ms(lat["p50_ms"]), _ms(lat["p99_ms"]),
            _ms(lat["max_ms"]), lat["errors"], *map(_mib, r["rss_kib"]), "yes" if r["consistent"] else
            "NO: %s" % r["problems"]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated scenario names")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--port", type=int, help="use a server already listening on 127.0.0.1:PORT")
    parser.add_argument("--pid", type=int)
    parser.add_argument("--json", help="also write the figures as JSON to this file")
    args = parser.parse_args(argv)
    server = None
    if args.port is None:
        from tests.integration.server import NamesrvProcess
        server = NamesrvProcess(tempfile.mkdtemp(prefix="namesrv-hostile-"), SERVER_PROPERTIES).start()
        port, pid = server.port, server.process.pid
    else:
        port, pid = args.port, args.pid
    host = "127.0.0.1"
    results = []
    try:
        control = checks.ControlBroker(host, port, keepalive=3.0)
        filler = peers.fill_topics(host, port, 2000, keepalive=3.0)
        checker = checks.TableChecker(host, port, timeout=10)
        checker.record_expected()
        wanted = set(args.only.split(",")) if args.only else None
        for name, description, action in scenarios(host, port, args.quick):
            if wanted and name not in wanted:
                continue
            sys.stderr.write("hostile_peers: %s ...\n" % name)
            results.append(run_scenario(host, port, pid, name, description, action, checker))
            sys.stderr.write("hostile_peers: %s\n" % json.dumps(results[-1], default=str))
        filler.close()
        control.close()
    finally:
        if server is not None:
            code = server.stop()
            log = checks.server_log(server)
            sys.stderr.write("hostile_peers: server exit code %s, tracebacks in its log: %d\n"
                             % (code, log.count("Traceback")))
    print(format_table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 0 if all(r["consistent"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
