"""``python -m bench status_page [--brokers N] [--topics-per-broker N]``: the status page at fleet size.

Fills one in-process server (real processors, compressed registrations) with 1,000 brokers
and 100,000 topics (default), then times each view of the page as the reactor would run it:
the whole page, the broker table (first and a deep page), a broker filter, an exact topic
(the route answer), a topic substring search, a deep topic page, a 10,000-key KV namespace
and the events. Prints the median and the worst of ``--repeats`` runs in milliseconds: of the
longest reactor turn a view takes (what a registration can wait behind it; a search of a big
table runs over several turns), and of the whole view.
"""

import statistics
import tempfile
import time

from twisted.internet import task
from twisted.internet.address import IPv4Address
from twisted.web.test.requesthelper import DummyRequest

from bench.lib import options
from bench.lib.brokers import compressed_body, register_request, topic_names
from namesrv.config import NamesrvConfig
from namesrv.timing.scheduler import NEXT_TURN
from namesrv.service import make_service
from namesrv.status.views import PageConnection


def build(brokers, per_broker, workdir):
    config = NamesrvConfig()
    config.update({"listenPort": "0", "kvConfigPath": workdir + "/kv.json", "eventLogEnable": "false",
                   "routeSnapshotEnable": "false", "statusListenPort": "1"})
    svc = make_service(config, reactor=task.Clock(), clock=task.Clock())
    svc.test_reactor = svc.reactor
    for i in range(brokers):
        topics = topic_names("Topic-%04d" % i, per_broker)
        request = register_request("broker-%04d" % i, "10.0.%d.%d:10911" % (i // 250, i % 250),
                                   compressed_body(topics), True, cluster="Cluster-%d" % (i % 10))
        assert svc.registry.dispatch(request, PageConnection("10.0.0.1:%d" % (20000 + i))).code == 0
    svc.kv.table["ORDER_TOPIC_CONFIG"] = {"Topic-%04d-%06d" % (i % brokers, i): "broker:8" for i in range(10000)}
    page = svc.getServiceNamed("status-page")
    return svc, page.resource


def render(resource, uri, clock):
    """(the longest reactor turn, the whole view, bytes): the clock is turned until the answer is finished."""
    path = uri.partition("?")[0]
    request = DummyRequest([p.encode() for p in path.strip("/").split("/") if p])
    request.uri, request.path = uri.encode(), path.encode()
    request.client = IPv4Address("TCP", "127.0.0.1", 1)
    started = time.perf_counter()
    result = resource.render(request)
    if isinstance(result, bytes):
        request.write(result)
        request.finish()
    longest = time.perf_counter() - started
    while not request.finished:
        turn = time.perf_counter()
        assert clock.getDelayedCalls(), (uri, "not finished and nothing to run")
        clock.advance(NEXT_TURN)   # one reactor turn: what is due, and the scheduler's next turn
        longest = max(longest, time.perf_counter() - turn)
    whole = time.perf_counter() - started
    assert request.responseCode in (None, 200), (uri, request.responseCode)
    return longest, whole, sum(len(chunk) for chunk in request.written)


OPTIONS = (options.BROKERS(1000), options.TOPICS(100, "each broker's", flag="--topics-per-broker"),
           options.REPEATS(15, "renderings of each view"))


def main(argv=None):
    args = options.parse("status_page", __doc__, OPTIONS, argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir:
        svc, resource = build(args.brokers, args.topics_per_broker, workdir)
        print("filled %d brokers, %d topics in %.1f s" % (len(svc.routes.broker_live_table),
                                                        len(svc.routes.topic_queue_table),
                                                        time.perf_counter() - started))
        views = [("whole page", "/"), ("brokers, page 1", "/fragment/brokers"),
                 ("brokers, page 20", "/fragment/brokers?bp=20"), ("brokers, filter", "/fragment/brokers?bq=cluster-3"),
                 ("topic route (exact)", "/fragment/topics?t=Topic-0500-000050"),
                 ("topic substring", "/fragment/topics?t=-0500-"), ("topics, page 1", "/fragment/topics"),
                 ("topics, page 2000 (last)", "/fragment/topics?tp=2000"),
                 ("KV 10,000 keys, page 1", "/fragment/kv?ns=ORDER_TOPIC_CONFIG"),
                 ("events", "/fragment/events"), ("configuration", "/fragment/config")]
        print("%-28s %22s %22s %10s" % ("view", "longest turn: med/max", "whole view: med/max", "bytes"))
        for name, uri in views:
            runs = [render(resource, uri, svc.test_reactor) for _ in range(args.repeats)]
            turns = [run[0] * 1000 for run in runs]
            wholes = [run[1] * 1000 for run in runs]
            print("%-28s %10.2f %10.2f  %10.2f %10.2f %10d" % (
                name, statistics.median(turns), max(turns), statistics.median(wholes), max(wholes), runs[-1][2]))


if __name__ == "__main__":
    main()
