"""Mixed load: route queries at a steady rate, without and then with a fleet of heartbeating brokers.

B brokers × N topics each re-register every ``interval`` seconds (time-compressed: Java
brokers do it every 30 s) with an unchanged DataVersion, while the route clients ask at
a fixed rate (open loop, well below saturation) for the route topics. The figure that
matters is the route p99 with heartbeats over the p99 without: how long a route read
waits behind registration work on the one reactor thread.
"""

import time

from bench.lib.brokers import BrokerFleet, OwnTopicsLayout
from bench.lib.loadgen import run_load
from bench.scenarios.route import report_load
from bench.lib.wire import percentile

SECTION = "Mixed load (route queries while brokers heartbeat)"


def gc_params(reading):
    """The server's garbage collections during a load run, as figure parameters."""
    return {"gc_collections": "/".join(str(n) for n in reading["count"]),
            "gc_total_ms": round(sum(reading["total_s"]) * 1000, 1),
            "gc_longest_ms": round(max(reading["longest_s"]) * 1000, 1)}


def gc_text(reading):
    p = gc_params(reading)
    return "  gc %s (gen0/1/2), longest %.1f ms" % (p["gc_collections"], p["gc_longest_ms"])


def run(collector, server, fleet, scale, log=print, section=SECTION, prefix="mixed", **extra):
    spec = scale.mixed_load
    params = dict(spec.params(), hb_brokers=scale.mixed_brokers, hb_topics=scale.mixed_topics,
                  hb_interval_s=scale.mixed_interval, **extra)
    templates = fleet.templates()
    limit = 3 * (spec.warmup + spec.duration) + 120
    with BrokerFleet(server.port, OwnTopicsLayout(scale.mixed_topics)) as heartbeats:
        heartbeats.resize(scale.mixed_brokers)
        server.gc_pauses()
        quiet = run_load(server.port, templates, spec, server=server)
        quiet_gc = server.gc_pauses()
        log(quiet.line("route, no heartbeats") + gc_text(quiet_gc))
        heartbeats.start_beating(scale.mixed_interval, limit, grace=0.0, burst=True)   # answers after the stop uncounted
        time.sleep(scale.mixed_interval)
        server.gc_pauses()
        busy = run_load(server.port, templates, spec, server=server)
        busy_gc = server.gc_pauses()
        log(busy.line("route, with heartbeats") + gc_text(busy_gc))
        heartbeats.stop_beating()
        stats = heartbeats.beat_result()
    report_load(collector, section, prefix + ".route.quiet", quiet, **params, **gc_params(quiet_gc))
    report_load(collector, section, prefix + ".route.heartbeats", busy, **params, **gc_params(busy_gc))
    collector.add(section, prefix + ".route.p99_ratio", busy.latency_ms(0.99) / quiet.latency_ms(0.99), "ratio",
                  **params)
    collector.add(section, prefix + ".route.heartbeats.p99_to_p50", busy.latency_ms(0.99) / busy.latency_ms(0.5),
                  "ratio", **params)
    beating_seconds = max(1e-9, spec.warmup + spec.duration + scale.mixed_interval)
    hb_params = dict(params, rounds=stats["rounds"], late_rounds=stats["late_rounds"], sent=stats["sent"],
                     answered=stats["answered"])
    collector.add(section, prefix + ".heartbeat.rate", stats["answered"] / beating_seconds, "registrations/s",
                  **hb_params)
    if stats["rtts"]:
        collector.add(section, prefix + ".heartbeat.rtt_p50_ms", percentile(stats["rtts"], 0.5) * 1000, "ms", **params)
        collector.add(section, prefix + ".heartbeat.rtt_p99_ms", percentile(stats["rtts"], 0.99) * 1000, "ms",
                      **params)
    log("heartbeats: %d rounds (%d late), %d sent, %d answered; route p99 %.2f ms -> %.2f ms"
        % (stats["rounds"], stats["late_rounds"], stats["sent"], stats["answered"], quiet.latency_ms(0.99),
           busy.latency_ms(0.99)))
