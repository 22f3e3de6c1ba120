"""The metrics observer: labels, unknown codes, route-table gauges, per-server registries."""

from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

from namesrv.observe.eventlog import EventLog, NullEventLog
from namesrv.observe.metrics import NamesrvMetrics
from namesrv.dispatch.registry import ProcessorRegistry
from namesrv.dispatch.classes import RequestClassifier
from namesrv.server.factory import RemotingServerFactory
from tests.config_for import make_config
from tests.fakes import RecordingEventLog
from tests.routes.helpers import new_routes, register
from tests.security.fakes import Housekeeping


def sample(metrics, metric, **labels):
    metrics.refresh()
    return metrics.registry.get_sample_value(metric, labels or None)


def test_requests_by_code_and_response_code_with_latency_per_class():
    metrics = NamesrvMetrics(RequestClassifier())
    metrics.record_request(105, 0, 250, "p")
    metrics.record_request(105, 17, 120, "p")
    metrics.record_request(103, -1, 9000, "p")
    assert sample(metrics, "rocketmq_namesrv_requests_total", code="105", name="GET_ROUTEINFO_BY_TOPIC",
                  request_class="route_read", response_code="17") == 1
    assert sample(metrics, "rocketmq_namesrv_requests_total", code="103", name="REGISTER_BROKER",
                  request_class="broker_control", response_code="-1") == 1
    assert sample(metrics, "rocketmq_namesrv_request_duration_seconds_count", request_class="route_read") == 2
    assert sample(metrics, "rocketmq_namesrv_request_duration_seconds_bucket", request_class="route_read",
                  le="0.00025") == 2
    assert sample(metrics, "rocketmq_namesrv_request_duration_seconds_bucket", request_class="broker_control",
                  le="0.005") == 0


def test_unknown_codes_share_one_label_so_a_scanner_cannot_explode_the_series():
    metrics = NamesrvMetrics(RequestClassifier())
    for code in range(5000, 5100):
        metrics.record_request(code, 3, 10, "p")
    assert sample(metrics, "rocketmq_namesrv_requests_total", code="other", name="OTHER",
                  request_class="admin_write", response_code="3") == 100
    plugin = NamesrvMetrics(RequestClassifier({4242: "admin_read"}))
    plugin.record_request(4242, 0, 10, "p")
    assert sample(plugin, "rocketmq_namesrv_requests_total", code="4242", name="OTHER",
                  request_class="admin_read", response_code="0") == 1


def test_state_gauges_are_read_at_scrape_time_from_the_real_objects(tmp_path):
    routes = new_routes()
    register(routes, "t1")
    factory = RemotingServerFactory(ProcessorRegistry([]), make_config(serverMaxConnections=2), Housekeeping(),
                                    NullEventLog())
    for port in (1, 2, 3):
        proto = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", port))
        if proto is not None:
            proto.makeConnection(StringTransport())
    events = EventLog(str(tmp_path / "events.log"), "127.0.0.1:9876", queue_size=1)  # never started: fills up
    for n in range(3):
        events.emit("kv_changed", n=n)
    metrics = NamesrvMetrics(RequestClassifier(), routes=routes, factory=factory, events=events)
    assert sample(metrics, "rocketmq_namesrv_topics") == 2   # baseTopic and t1
    register(routes, "t2", counter=2)
    assert sample(metrics, "rocketmq_namesrv_topics") == 3
    assert sample(metrics, "rocketmq_namesrv_active_brokers") == 1
    assert sample(metrics, "rocketmq_namesrv_clusters") == 1
    assert sample(metrics, "rocketmq_namesrv_connections") == 2
    assert sample(metrics, "rocketmq_namesrv_connections_refused_total") == 1
    assert sample(metrics, "rocketmq_namesrv_event_log_dropped_total") == 2


def test_a_null_event_log_reports_nothing_dropped():
    assert sample(NamesrvMetrics(RequestClassifier(), events=NullEventLog()),
                  "rocketmq_namesrv_event_log_dropped_total") == 0


def test_events_feed_expirations_unregistrations_and_bad_frames():
    events = RecordingEventLog()
    metrics = NamesrvMetrics(RequestClassifier(), events=events)
    events.add_listener(metrics.event)
    events.emit("broker_expired", brokerAddr="a")
    events.emit("broker_unregistered", reason="channel_closed")
    events.emit("bad_frame", peer="p", reason="r")
    assert events.emitted[0][0] == "broker_expired"  # the log still gets every event
    assert sample(metrics, "rocketmq_namesrv_broker_expirations_total") == 1
    assert sample(metrics, "rocketmq_namesrv_broker_unregistrations_total", reason="channel_closed") == 1
    assert sample(metrics, "rocketmq_namesrv_bad_frames_total") == 1


def test_each_server_has_its_own_registry():
    one, two = NamesrvMetrics(RequestClassifier()), NamesrvMetrics(RequestClassifier())
    one.record_request(105, 0, 1, "p")
    assert b'response_code="0"} 1.0' in one.exposition()
    assert b"GET_ROUTEINFO_BY_TOPIC" not in two.exposition()


def test_rejections_and_queue_waits():
    metrics = NamesrvMetrics(RequestClassifier())
    metrics.rejected("broker_control", "overload")
    metrics.queue_waited("admin_read", 0.02)
    assert sample(metrics, "rocketmq_namesrv_rejected_requests_total", request_class="broker_control",
                  reason="overload") == 1
    assert sample(metrics, "rocketmq_namesrv_rejected_requests_total", request_class="route_read",
                  reason="acl_unsigned") == 0
    assert sample(metrics, "rocketmq_namesrv_queue_wait_seconds_count", request_class="admin_read") == 1
