"""Route throughput: GET_ROUTEINFO_BY_TOPIC on the NameServer vs the Twisted ceiling.

A few fake brokers register the same T topics (each route answer then lists them all,
as for a topic spread over a cluster); the load generator asks for random topics out
of T. The baseline server answers every frame with a real route answer fetched from the
NameServer, so both move the same bytes.
"""

import os

from bench.lib.brokers import FakeBroker, topic_names
from bench.lib.loadgen import run_load
from bench.lib.servers import BaselineServer
from bench.lib.wire import route_request, route_templates

SECTION = "Route queries (GET_ROUTEINFO_BY_TOPIC)"
ROUTE_TOPIC_PREFIX = "BenchRouteTopic"


class RouteFleet:
    """The brokers whose topics the route clients ask for; they stay connected until ``close``."""

    def __init__(self, server, brokers, topics, first_index=0):
        self.topics = topic_names(ROUTE_TOPIC_PREFIX, topics)
        self.brokers = []
        try:
            for i in range(brokers):
                broker = FakeBroker(server.port, "bench-route-broker-%02d" % i, first_index + i)
                self.brokers.append(broker)
                broker.register_topics(self.topics)
        except Exception:
            self.close()
            raise

    def sample_answer(self):
        """A real route answer (the baseline sends these bytes back)."""
        answer = self.brokers[0].client.call(route_request(self.topics[0]))
        if answer.code != 0 or not answer.body:
            raise RuntimeError("route query failed: %s %s" % (answer.code, answer.remark))
        return answer.body

    def templates(self):
        return route_templates(self.topics)

    def close(self):
        for broker in self.brokers:
            broker.close()
        self.brokers = []


def report_load(collector, section, prefix, result, **params):
    """The four figures of one load run; extra run facts go into the params."""
    s = result.summary()
    facts = dict(params, requests=s["requests"], errors=s["errors"], unmatched=s["unmatched"],
                 server_cpu=round(s["server_cpu"], 2) if s["server_cpu"] is not None else None,
                 client_cpu=round(s["client_cpu"], 2), stalled=s["stalled"] or None,
                 loadavg=round(os.getloadavg()[0], 2))
    if s["requests"] == 0:
        raise RuntimeError("%s: no answer in the measuring window" % prefix)
    collector.add(section, prefix + ".rps", s["rps"], "req/s", **facts)
    for key in ("p50", "p99", "p999"):
        collector.add(section, "%s.%s" % (prefix, key), s[key + "_ms"], "ms", **params)


def run(collector, server, scale, log=print):
    """Measure the NameServer (``server``, started) and a baseline server; returns the fleet
    (still registered, for the benchmarks that follow on the same server).

    The two servers are measured in alternating rounds and each keeps its best round: on a
    shared machine a neighbour's burst then costs a round, not the comparison.
    """
    spec = scale.route_load
    fleet = RouteFleet(server, scale.route_brokers, scale.route_topics)
    params = dict(spec.params(), topics=scale.route_topics, brokers=scale.route_brokers, rounds=scale.route_rounds)
    body = fleet.sample_answer()
    templates = fleet.templates()
    bases, ours = [], []
    with BaselineServer(body) as baseline:
        for i in range(scale.route_rounds):
            bases.append(run_load(baseline.port, templates, spec, server=baseline))
            log(bases[-1].line("baseline (Twisted ceiling) #%d" % (i + 1)))
            ours.append(run_load(server.port, templates, spec, server=server))
            log(ours[-1].line("namesrv #%d" % (i + 1)))
    base = max(bases, key=lambda r: r.rps)
    result = max(ours, key=lambda r: r.rps)
    report_load(collector, SECTION, "route.baseline", base, answer_bytes=len(body), **params)
    report_load(collector, SECTION, "route.namesrv", result, answer_bytes=len(body), **params)
    collector.add(SECTION, "route.namesrv.ratio_to_baseline", result.rps / base.rps, "ratio", **params)
    log("namesrv / baseline throughput (best rounds): %.0f / %.0f = %.2f" % (result.rps, base.rps,
                                                                            result.rps / base.rps))
    return fleet
