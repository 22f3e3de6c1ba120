"""The metrics the alert rules need beyond the first set: live brokers per cluster, first
registrations per broker, the connection limit, read worker restarts, /health for a scrape."""

from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport
from twisted.web.test.requesthelper import DummyRequest

from namesrv.dispatch.classes import RequestClassifier
from namesrv.dispatch.registry import ProcessorRegistry
from namesrv.observe.eventlog import NullEventLog
from namesrv.observe.health import HealthResource, Readiness
from namesrv.observe.metrics import NamesrvMetrics
from namesrv.server.factory import RemotingServerFactory
from namesrv.readworkers.main.processes import ReadWorkerGauges
from tests.config_for import make_config
from tests.routes.helpers import new_routes, register
from tests.security.fakes import Housekeeping


def sample(metrics, metric, **labels):
    metrics.refresh()
    return metrics.registry.get_sample_value(metric, labels or None)


def test_a_cluster_whose_last_broker_is_gone_stays_listed_at_zero():
    routes = new_routes()
    register(routes, "t1", cluster="A", name="a", addr="127.0.0.1:10911")
    register(routes, "t1", cluster="A", name="a", addr="127.0.0.1:10912", broker_id=1)
    register(routes, "t2", cluster="B", name="b", addr="127.0.0.1:10913")
    metrics = NamesrvMetrics(RequestClassifier(), routes=routes)
    assert sample(metrics, "rocketmq_namesrv_cluster_live_brokers", cluster="A") == 2
    assert sample(metrics, "rocketmq_namesrv_cluster_live_brokers", cluster="B") == 1
    routes.unregister_broker("B", "127.0.0.1:10913", "b")
    assert "B" not in routes.cluster_addr_table
    assert sample(metrics, "rocketmq_namesrv_cluster_live_brokers", cluster="B") == 0
    assert sample(metrics, "rocketmq_namesrv_cluster_live_brokers", cluster="A") == 2
    assert sample(metrics, "rocketmq_namesrv_active_brokers") == 2   # the old total is kept


def test_a_cluster_registered_and_gone_between_two_scrapes_is_listed_at_zero():
    routes = new_routes()
    metrics = NamesrvMetrics(RequestClassifier(), routes=routes)
    metrics.event("broker_registered", {"cluster": "Brief", "brokerName": "b", "brokerId": 0})
    assert sample(metrics, "rocketmq_namesrv_cluster_live_brokers", cluster="Brief") == 0


def test_first_registrations_count_per_broker_so_a_flapping_one_stands_out():
    metrics = NamesrvMetrics(RequestClassifier())
    for _ in range(3):
        metrics.event("broker_registered", {"cluster": "A", "brokerName": "a", "brokerId": 0})
        metrics.event("broker_heartbeat", {"cluster": "A", "brokerName": "a", "brokerId": 0})
    metrics.event("broker_registered", {"cluster": "A", "brokerName": "b", "brokerId": 1})
    assert sample(metrics, "rocketmq_namesrv_broker_first_registrations_total", cluster="A", broker_name="a",
                  broker_id="0") == 3
    assert sample(metrics, "rocketmq_namesrv_broker_first_registrations_total", cluster="A", broker_name="b",
                  broker_id="1") == 1


def test_the_connection_limit_is_the_one_the_factory_applies():
    factory = RemotingServerFactory(ProcessorRegistry([]), make_config(serverMaxConnections=2), Housekeeping(),
                                    NullEventLog())
    proto = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", 1))
    proto.makeConnection(StringTransport())
    metrics = NamesrvMetrics(RequestClassifier(), factory=factory)
    assert sample(metrics, "rocketmq_namesrv_connections_limit") == 2
    assert sample(metrics, "rocketmq_namesrv_connections") == 1
    factory.config.update({"serverMaxConnections": "5"})   # UPDATE_NAMESRV_CONFIG: read at scrape time
    assert sample(metrics, "rocketmq_namesrv_connections_limit") == 5


class _Pool:
    def __init__(self, count, running):
        self.count = count
        self.workers = dict.fromkeys(range(running))


def test_read_workers_running_configured_and_restarts():
    metrics = NamesrvMetrics(RequestClassifier())
    assert sample(metrics, "rocketmq_namesrv_read_workers") is None   # no pool: no gauge
    metrics.add_collector(ReadWorkerGauges(_Pool(2, 1)))
    metrics.read_worker_exited()
    assert sample(metrics, "rocketmq_namesrv_read_workers") == 1
    assert sample(metrics, "rocketmq_namesrv_read_workers_configured") == 2
    assert sample(metrics, "rocketmq_namesrv_read_worker_restarts_total") == 1


def render_health(readiness, *query):
    request = DummyRequest([b"health"])
    for key, value in query:
        request.addArg(key, value)
    body = HealthResource(readiness, reactor=None).render_GET(request)
    return request, body


def test_health_for_a_prometheus_scrape_keeps_the_status_code_and_says_it_in_text():
    request, body = render_health(Readiness(), (b"format", b"prometheus"))
    assert request.responseCode == 503   # a scrape job on /health: up is 0
    assert request.responseHeaders.getRawHeaders(b"content-type")[0].startswith(b"text/plain; version=0.0.4")
    assert b"\nrocketmq_namesrv_health_up 0\n" in body
    request, body = render_health(Readiness())
    assert request.responseCode == 503 and body.startswith(b'{"status": "DOWN"')
