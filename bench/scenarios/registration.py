"""Registration cost: one REGISTER_BROKER of N topics, plain and compressed, on an idle connection.

Server-side handling time is measured two ways:
- ``handling``: the client's round trip minus the round trip of a trivial request
  (GET_KV_CONFIG miss) on the same connection — everything the server does, framing,
  scheduling and event logging included;
- ``event``: the ``us`` field the route processor writes to the event log — decoding the
  body and applying it.
Each is compared with what the bare parse costs in this process: ``json.loads`` of the
plain body, inflate + split of the compressed one. ``first`` is a registration into an
empty table (the broker is unregistered in between), ``unchanged`` a re-registration
with the same DataVersion: the periodic heartbeat of a broker whose topics did not change.
The whole set runs on a server with the event log (the default) and on one without:
the difference is what logging a registration costs.

``python -m bench registration [--sizes 10000,50000] [--repeats 5] [--profile]`` prints, on its
own, the whole round trip of first registrations and re-registrations (unchanged, changed)
and the server's CPU per registration; ``--profile`` adds the server's dearest functions.
"""

import glob
import json
import os
import statistics
import time

from bench.lib import options
from bench.lib.brokers import FakeBroker, parse_compressed, parse_plain, register_body, topic_names
from bench.lib.servers import NamesrvServer, cpu_seconds
from bench.scenarios.profiling import top_functions

SECTION = "Registration cost (REGISTER_BROKER, one broker, idle connection)"
_REGISTER_EVENTS = ("broker_registered", "broker_heartbeat")
KINDS = ("first", "unchanged")


def _median_time(function, repeat):
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _log_files(path):
    """The event log and its rotated copies, oldest first."""
    rotated = sorted(glob.glob(glob.escape(path) + ".*"), key=lambda p: -int(p.rsplit(".", 1)[1])
                     if p.rsplit(".", 1)[1].isdigit() else 0)
    return [p for p in rotated if p.rsplit(".", 1)[1].isdigit()] + [path]


def _read_events(path, names, expected, timeout=15.0):
    """``{brokerName: [us, ...]}`` from the event log, waiting until ``expected`` events arrived."""
    deadline = time.monotonic() + timeout
    while True:
        found = {}
        for log_file in _log_files(path):
            try:
                with open(log_file, "rb") as f:
                    for line in f:
                        if b'"broker_' not in line:
                            continue
                        try:
                            event = json.loads(line)
                        except ValueError:
                            continue
                        if event.get("event") in _REGISTER_EVENTS and event.get("brokerName") in names:
                            found.setdefault(event["brokerName"], []).append(event.get("us"))
            except OSError:
                pass
        if sum(len(v) for v in found.values()) >= expected or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def run(collector, scale, log=print):
    rows = []
    for event_log in (True, False):
        runs = []
        with NamesrvServer(event_log=event_log) as server:
            for index, count in enumerate(scale.register_sizes):
                topics = topic_names("BenchRegTopic", count)
                for compressed in (False, True):
                    runs.append(_measure(server, topics, compressed, 100 + 2 * index + compressed, scale))
            events = {}
            if event_log:
                names = {r["broker"] for r in runs}
                expected = sum(len(r["first"]) + len(r["unchanged"]) for r in runs)
                events = _read_events(server.event_log_file, names, expected)
        for r in runs:
            r["event_log"] = event_log
            rows.append(_report(collector, r, events.get(r["broker"], []), log))
    collector.note(SECTION, _pivot(rows))
    collector.hide_figures(SECTION)


def _measure(server, topics, compressed, index, scale):
    body = register_body(topics, compressed)
    parse = parse_compressed if compressed else parse_plain
    parse_s = _median_time(lambda: parse(body), scale.register_parse_repeats)
    mode = "compressed" if compressed else "plain"
    broker = FakeBroker(server.port, "bench-reg-%d-%s" % (len(topics), mode), index)
    try:
        broker.trivial()
        trivial = statistics.median(broker.trivial() for _ in range(scale.register_trivial_repeats))
        first, unchanged = [], []
        for _ in range(scale.register_repeats):
            first.append(_register(broker, body, compressed))
            for _ in range(scale.register_unchanged):
                unchanged.append(_register(broker, body, compressed))
            broker.unregister()
    finally:
        broker.close()
    return {"broker": broker.name, "topics": len(topics), "compressed": compressed, "body_bytes": len(body),
            "parse_s": parse_s, "trivial_s": trivial, "first": first, "unchanged": unchanged}


def _register(broker, body, compressed):
    answer, seconds = broker.register(body, compressed)
    if answer.code != 0:
        raise RuntimeError("REGISTER_BROKER of %s failed: %s %s" % (broker.name, answer.code, answer.remark))
    return seconds


def _report(collector, r, event_us, log):
    """Figures of one (size, mode, event log) run; returns its row for the summary table."""
    params = {"topics": r["topics"], "compressed": r["compressed"], "body_bytes": r["body_bytes"],
              "event_log": r["event_log"]}
    parse_ms = r["parse_s"] * 1000
    collector.add(SECTION, "register.parse_ms", parse_ms, "ms", **params)
    # Events come in order: per repeat one broker_registered, then the unchanged ones.
    per_repeat = 1 + (len(r["unchanged"]) // max(1, len(r["first"])))
    by_kind = {"first": [us for i, us in enumerate(event_us) if i % per_repeat == 0 and us is not None],
               "unchanged": [us for i, us in enumerate(event_us) if i % per_repeat != 0 and us is not None]}
    row = dict(params, parse_ms=parse_ms)
    for kind in KINDS:
        rtts = r[kind]
        kind_params = dict(params, kind=kind, samples=len(rtts))
        handling_ms = (statistics.median(rtts) - r["trivial_s"]) * 1000
        collector.add(SECTION, "register.handling_ms", handling_ms, "ms",
                      trivial_rtt_ms=round(r["trivial_s"] * 1000, 3), **kind_params)
        collector.add(SECTION, "register.handling_ratio_to_parse", handling_ms / parse_ms, "ratio", **kind_params)
        row[kind] = handling_ms
        line = "register %6d topics %-10s %-9s %-11s handling %8.2f ms (%5.1fx parse %7.2f ms)" % (
            r["topics"], "compressed" if r["compressed"] else "plain", kind,
            "event log" if r["event_log"] else "no events", handling_ms, handling_ms / parse_ms, parse_ms)
        events = by_kind[kind]
        if events:
            event_ms = statistics.median(events) / 1000.0
            collector.add(SECTION, "register.event_ms", event_ms, "ms", **kind_params)
            collector.add(SECTION, "register.event_ratio_to_parse", event_ms / parse_ms, "ratio", **kind_params)
            row[kind + "_event"] = event_ms
            line += "; event log us %8.2f ms" % event_ms
        log(line)
    return row


def _pivot(rows):
    lines = ["Milliseconds per REGISTER_BROKER (median); × = ratio to the bare parse in the benchmark process; "
             "`us` = the processor's own time from the event log. Every figure is in results.jsonl.", "",
             "| topics | body | bytes | event log | parse ms | first ms | first × | first us-field ms "
             "| unchanged ms | unchanged × | unchanged us-field ms |",
             "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]

    def ms(value):
        return "%.1f" % value if value is not None else "–"

    for row in rows:
        lines.append("| %d | %s | %d | %s | %s | %s | %.1f | %s | %s | %.1f | %s |" % (
            row["topics"], "compressed" if row["compressed"] else "plain", row["body_bytes"],
            "on" if row["event_log"] else "off", ms(row["parse_ms"]), ms(row["first"]),
            row["first"] / row["parse_ms"], ms(row.get("first_event")), ms(row["unchanged"]),
            row["unchanged"] / row["parse_ms"], ms(row.get("unchanged_event"))))
    return "\n".join(lines)


# -- round trips of first registrations and re-registrations (python -m bench registration) --------

ROUND_TRIP_KINDS = ("first", "unchanged", "changed")


def round_trips(server, topics, index, repeats):
    """``{kind: [seconds, ...]}`` for one broker of ``topics``, plain body, everything counted.

    ``first``: into tables that do not know the broker (unregistered in between);
    ``unchanged``: the same body again (the periodic re-registration of a quiet broker);
    ``changed``: the same topics with a new DataVersion (decoded and applied again, nothing moves).
    Also ``{kind: server CPU seconds per registration}`` (its main process, /proc clock ticks:
    the figure a busy machine moves least).
    """
    bodies = {"first": register_body(topics, False, 1)}
    bodies["unchanged"], bodies["changed"] = bodies["first"], register_body(topics, False, 2)
    broker = FakeBroker(server.port, "bench-rtt-%d" % len(topics), index)
    found = {kind: [] for kind in ROUND_TRIP_KINDS}
    cpu = dict.fromkeys(ROUND_TRIP_KINDS, 0.0)
    try:
        broker.trivial()
        for _ in range(repeats):
            for kind in ROUND_TRIP_KINDS:
                before = cpu_seconds(server.pid, children=False)
                found[kind].append(_register(broker, bodies[kind], False))
                cpu[kind] += cpu_seconds(server.pid, children=False) - before
            broker.unregister()
    finally:
        broker.close()
    return found, {kind: seconds / repeats for kind, seconds in cpu.items()}


def decode_costs(body, repeat):
    """Median milliseconds to decode a plain body: the typed decoder, the lenient one, bare ``json.loads``."""
    from namesrv.routes.bodies import decode

    typed = _median_time(lambda: decode.decode_register_broker_body(body, False, 409), repeat)
    lenient = _median_time(lambda: decode.decode_lenient_register_body(body, 409), repeat)
    return typed * 1000, lenient * 1000, _median_time(lambda: parse_plain(body), repeat) * 1000


OPTIONS = (
    options.Option("--sizes", "topics per registration, comma-separated", default="10000,50000"),
    options.REPEATS(5, "registrations of each kind per size"),
    options.Option("--no-event-log", "run the server without its event log", action="store_true"),
    options.Option("--profile", "cProfile the server's reactor thread and print the dearest functions (slows it)",
                   action="store_true"),
)


def main(argv=None):
    """Print the median round trip of REGISTER_BROKER per size and kind on a default server (event log on)."""
    args = options.parse("registration", __doc__, OPTIONS, argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    print("REGISTER_BROKER round trip, plain body, loopback; load average %.2f; median (min..max) of %d"
          % (os.getloadavg()[0], args.repeats))
    with NamesrvServer(event_log=not args.no_event_log) as server:
        if args.profile:
            server.start_profile()
        for index, count in enumerate(sizes):
            topics = topic_names("BenchRttTopic", count)
            print("decode  %6d topics in this process: typed %.2f ms, lenient %.2f ms, json.loads alone %.2f ms"
                  % ((count,) + decode_costs(register_body(topics, False), args.repeats)), flush=True)
            found, cpu = round_trips(server, topics, 200 + index, args.repeats)
            for kind in ROUND_TRIP_KINDS:
                ms = sorted(s * 1000 for s in found[kind])
                print("register %6d topics %-9s round trip %8.2f ms (%.2f..%.2f); server CPU %6.1f ms"
                      % (count, kind, statistics.median(ms), ms[0], ms[-1], cpu[kind] * 1000), flush=True)
        if args.profile:
            total, rows = top_functions(server.stop_profile(), count=40, by="cumulative",
                                        only=("namesrv/", "processors/", "twisted/", "<built-in", "<method"))
            print("profile: %.3f s on the reactor thread; by cumulative time:" % total)
            for label, own, cumulative, calls in rows:
                print("  %8.3f s own %8.3f s %8d calls  %s" % (cumulative, own, calls, label))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
