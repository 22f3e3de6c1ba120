"""What one Prometheus scrape costs the reactor: ``NamesrvMetrics.refresh()`` (run on the reactor
thread) and the whole exposition, with N live brokers in 10 clusters.

    python -m bench metrics_scrape [--brokers 100 1000 5000] [--repeat 500]
"""

import os
import timeit

from bench.lib import options
from namesrv.dispatch.classes import RequestClassifier
from namesrv.observe.metrics import NamesrvMetrics
from namesrv.routes import RouteInfoManager
from namesrv.routes.model import DataVersion, TopicConfig, TopicConfigSerializeWrapper


def routes_with(brokers):
    routes = RouteInfoManager()
    for i in range(brokers):
        topics = {name: TopicConfig(name, 8, 8, 6, "SINGLE_TAG", 0) for name in ("t%d" % i, "u%d" % i)}
        routes.register_broker("C%d" % (i % 10), "127.0.0.1:%d" % (10000 + i), "b%d" % i, 0, "127.0.0.1:1",
                               TopicConfigSerializeWrapper(DataVersion(1, 1, 0), topics, {}), [], None)
    return routes


OPTIONS = (options.BROKERS([100, 1000, 5000], "live, in 10 clusters: one measurement for each count", nargs="+"),
           options.REPEAT(500, "refreshes a timing"))


def main(argv=None):
    args = options.parse("metrics_scrape", __doc__, OPTIONS, argv)
    print("load average: %s" % " ".join("%.1f" % x for x in os.getloadavg()))
    for brokers in args.brokers:
        metrics = NamesrvMetrics(RequestClassifier(), routes=routes_with(brokers))
        refresh = min(timeit.repeat(metrics.refresh, number=args.repeat, repeat=5)) / args.repeat
        whole = min(timeit.repeat(metrics.exposition, number=50, repeat=3)) / 50
        print("%6d live brokers: refresh (reactor thread) %7.1f us, refresh + text %7.1f us" % (
            brokers, refresh * 1e6, whole * 1e6))


if __name__ == "__main__":
    main()
