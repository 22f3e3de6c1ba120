"""Route reads past one core: the same load on one process and with read workers.

Three set-ups, each a fresh server with the same route fleet:

- ``1proc``: ``routeReadWorkers=0``, the single-process server (the default before read workers);
- ``2proc``: ``routeReadWorkers=1``, the main process and one worker both accept;
- ``default``: nothing set: ``routeReadWorkers=auto`` (one fewer than the usable CPUs) and
  ``routeReadWorkersExclusive=true``: the workers accept every connection, answer route reads
  and hand brokers' connections to the main process, which answers the rest (on 2 CPUs:
  one worker, two processes, one per core);
- ``2workers_exclusive``: two exclusive workers (three processes).

Measured with the answer cache (the server's per-request cost is then as low as the load
generator's, and both share this machine's two cores) and without it (each answer is
built, so the server is what limits). A server's CPU includes its workers'. Then, on the
single process and the exclusive set-ups, where no route read waits behind the main
process's registration work: the longest route read while brokers register 10,000 new
topics each, and the mixed load (route reads while 100 brokers heartbeat).
"""

import threading
import time

from bench.scenarios import mixed
from bench.lib.brokers import FakeBroker, parse_plain, plain_body, topic_names
from bench.lib.loadgen import LoadSpec, run_load
from bench.scenarios.route import RouteFleet, report_load
from bench.lib.servers import NamesrvServer
from namesrv.config import default_read_workers

SECTION = "Route reads on 1 and 2 cores (routeReadWorkers)"
MIXED_SECTION = "Mixed load with read workers (exclusive)"
STALL_SECTION = "Route reads during first registrations (the longest wait vs one parse)"
DEFAULT = None   # a set-up's workers/exclusive left to the defaults
SETUPS = (("1proc", 0, False), ("2proc", 1, False), ("default", DEFAULT, DEFAULT), ("2workers_exclusive", 2, True))
EXCLUSIVE = (SETUPS[2], SETUPS[3])


def resolved(workers):
    return default_read_workers() if workers is DEFAULT else workers


def start_server(workers, exclusive, cache=True):
    properties = {"answerCacheEnable": "true" if cache else "false"}
    if workers is DEFAULT:
        workers = default_read_workers()
    else:
        properties.update(routeReadWorkers=str(workers), routeReadWorkersExclusive="true" if exclusive else "false")
    server = NamesrvServer(properties=properties)
    server.start()
    try:
        for index in range(workers):
            server.wait_for_log("read worker %d listening" % index)
    except Exception:
        server.cleanup()
        raise
    return server


def measure(spec, scale, workers, exclusive, cache):
    server = start_server(workers, exclusive, cache)
    try:
        fleet = RouteFleet(server, scale.route_brokers, scale.route_topics)
        try:
            return run_load(server.port, fleet.templates(), spec, server=server)
        finally:
            fleet.close()
    finally:
        server.cleanup()


def run(collector, scale, log=print):
    spec = scale.cores_load
    params = dict(spec.params(), topics=scale.route_topics, brokers=scale.route_brokers)
    for cache in (True, False):
        label = "cached" if cache else "uncached"
        best = {}
        for round_index in range(scale.route_rounds):
            for name, workers, exclusive in SETUPS:
                result = measure(spec, scale, workers, exclusive, cache)
                log(result.line("%s, %s #%d" % (label, name, round_index + 1)))
                if name not in best or result.rps > best[name].rps:
                    best[name] = result
        for name, workers, exclusive in SETUPS:
            report_load(collector, SECTION, "cores.%s.%s" % (label, name), best[name], route_read_workers=resolved(workers),
                        exclusive=exclusive is not False, answer_cache=cache, **params)
        for name, _, _ in SETUPS[1:]:
            ratio = best[name].rps / best["1proc"].rps
            collector.add(SECTION, "cores.%s.%s.ratio_to_1proc" % (label, name), ratio, "ratio",
                          answer_cache=cache, **params)
            log("%s: %s / 1proc = %.0f / %.0f = %.2f" % (label, name, best[name].rps, best["1proc"].rps, ratio))
    if scale.stall_topics:
        for name, workers, exclusive in SETUPS:
            registration_stall(collector, scale, log, name, workers, exclusive)
    if scale.mixed_brokers:
        for name, workers, exclusive in EXCLUSIVE:
            server = start_server(workers, exclusive)
            try:
                fleet = RouteFleet(server, scale.route_brokers, scale.route_topics)
                try:
                    log("mixed load, %s:" % name)
                    mixed.run(collector, server, fleet, scale, log, section=MIXED_SECTION,
                              prefix="cores.mixed.%s" % name, route_read_workers=resolved(workers),
                              exclusive=exclusive is not False)
                finally:
                    fleet.close()
            finally:
                server.cleanup()


def registration_stall(collector, scale, log, name, workers, exclusive):
    """Route reads at a steady rate while brokers register ``stall_topics`` new topics each:
    the longest read latency, next to what merely parsing one such body costs."""
    topics = scale.stall_topics
    rounds = scale.stall_registrations
    bodies = [plain_body(topic_names("BenchStall%02d" % i, topics)) for i in range(rounds)]
    parse_ms = min(_seconds(parse_plain, body) for body in bodies) * 1000
    spec = LoadSpec(connections=8, depth=1, warmup=0.5, duration=1.0 + 0.5 * rounds, rate=1000)
    server = start_server(workers, exclusive)
    try:
        fleet = RouteFleet(server, scale.route_brokers, scale.route_topics)
        brokers = [FakeBroker(server.port, "bench-stall-%02d" % i, 200 + i) for i in range(rounds)]
        register_ms = []

        def register_all():
            time.sleep(spec.warmup + 0.5)
            for broker, body in zip(brokers, bodies):
                answer, seconds = broker.register(body, False)
                register_ms.append(seconds * 1000 if answer.code == 0 else float("nan"))
                time.sleep(0.4)

        thread = threading.Thread(target=register_all, daemon=True)
        thread.start()
        try:
            result = run_load(server.port, fleet.templates(), spec, server=server)
        finally:
            thread.join(60)
            for broker in brokers:
                broker.close()
            fleet.close()
    finally:
        server.cleanup()
    longest = result.latency_ms(1.0)
    params = dict(topics=topics, registrations=rounds, rate=spec.rate, route_read_workers=resolved(workers),
                  exclusive=exclusive is not False, register_rtt_ms="/".join("%.0f" % ms for ms in register_ms))
    collector.add(STALL_SECTION, "stall.%s.longest_read_ms" % name, longest, "ms", **params)
    collector.add(STALL_SECTION, "stall.%s.p99_read_ms" % name, result.latency_ms(0.99), "ms", **params)
    collector.add(STALL_SECTION, "stall.%s.parse_ms" % name, parse_ms, "ms", topics=topics)
    collector.add(STALL_SECTION, "stall.%s.longest_read_to_parse" % name, longest / parse_ms, "ratio", **params)
    log("%s: longest route read %.1f ms during %d registrations of %d topics (one parse: %.1f ms; "
        "registration round trips %s ms)" % (name, longest, rounds, topics, parse_ms, params["register_rtt_ms"]))


def _seconds(function, *args):
    started = time.perf_counter()
    function(*args)
    return time.perf_counter() - started
