"""A real Prometheus scraping a real `twistd namesrv`, with conf/prometheus as it ships: a broker
registers, stops beating and expires, and Prometheus sees the gauge move and the alert fire; every
dashboard panel's query runs against what it scraped."""

import json
import os
import re
import signal
import time

import pytest
import yaml

from namesrv.protocol.codes import ResponseCode
from tests.brokers import register_request, route_request
from tests.integration.server import REPO, NamesrvProcess, free_port
from tests.monitoring.prometheus import MISSING, PROMETHEUS, RULES, PrometheusProcess, scrape_config

pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason=MISSING)

DASHBOARD = os.path.join(REPO, "conf", "grafana", "namesrv.json")
HEARTBEAT_TIMEOUT_MS = 3000     # what the broker asks for (heartbeatTimeoutMillis); the scan runs every 0.5 s
METRIC_NAME = re.compile(r"\b(rocketmq_namesrv_[a-z0-9_]+|up)\b")


@pytest.fixture(scope="module")
def monitored(tmp_path_factory):
    """(the name server, the Prometheus scraping it); both ended by PID at the end."""
    workdir = tmp_path_factory.mktemp("monitored")
    metrics_port, port = free_port(), free_port()
    server = NamesrvProcess(workdir, {"prometheusListenPort": str(metrics_port), "scanNotActiveBrokerInterval": "500",
                                      "routeReadWorkers": "1", "addressServiceNamesrvAddr": "127.0.0.1:%d" % port},
                            port=port)
    prometheus = PrometheusProcess(workdir, scrape_config(["127.0.0.1:%d" % metrics_port]))
    try:
        server.start()
        prometheus.start()
        prometheus.wait_for("both scrape jobs up", lambda: len(prometheus.query("up == 1")) == 2)
        yield server, prometheus
    finally:
        prometheus.stop()
        server.stop()


def register(client, cluster, name, addr, topics):
    answer = client.call(register_request(cluster, name, addr, topics=topics,
                                          extra_ext={"heartbeatTimeoutMillis": str(HEARTBEAT_TIMEOUT_MS)}))
    assert answer.code == ResponseCode.SUCCESS, answer.remark


def firing(prometheus, alert, **labels):
    return [a for a in prometheus.alerts(alert) if a["state"] == "firing"
            and all(a["labels"].get(k) == v for k, v in labels.items())]


def test_a_broker_that_stops_beating_moves_the_gauge_and_fires_the_expiration_alert(monitored):
    server, prometheus = monitored
    live = 'rocketmq_namesrv_cluster_live_brokers{cluster="Watched"}'
    with server.client() as broker:
        deadline = time.monotonic() + 30
        while not prometheus.query(live + " == 1"):   # beat until a scrape has seen it
            assert time.monotonic() < deadline, "Prometheus never saw the broker live"
            register(broker, "Watched", "broker-w", "127.0.0.1:10941", ["WatchedTopic", "WatchedTopic2"])
            time.sleep(0.5)
        assert not firing(prometheus, "NamesrvBrokerExpired")
        stopped = time.monotonic()
        # no more heartbeats, connection left open: the scan expires it (a close would unregister it)
        prometheus.wait_for("the broker expire", lambda: prometheus.query(live + " == 0"))
        assert time.monotonic() - stopped >= HEARTBEAT_TIMEOUT_MS / 1000.0 - 1.0
        assert prometheus.query("rocketmq_namesrv_broker_expirations_total")[0][1] >= 1
        alert = prometheus.wait_for("NamesrvBrokerExpired firing",
                                    lambda: firing(prometheus, "NamesrvBrokerExpired", job="namesrv"))[0]
        assert alert["labels"]["severity"] == "warning"
        assert alert["annotations"]["runbook_url"].endswith("runbook.md#namesrvbrokerexpired")
        # the cluster's last broker is gone: its alert waits out its `for` (1 min), so pending here
        pending = prometheus.wait_for("NamesrvClusterNoLiveBroker pending", lambda: [
            a for a in prometheus.alerts("NamesrvClusterNoLiveBroker") if a["labels"].get("cluster") == "Watched"])
        assert pending[0]["state"] == "pending"


def test_health_is_scraped_as_a_probe_and_every_rule_evaluates(monitored):
    server, prometheus = monitored
    assert prometheus.query('up{job="namesrv-health"}')[0][1] == 1
    assert prometheus.query("rocketmq_namesrv_health_up")[0][1] == 1
    assert prometheus.query("rocketmq_namesrv_health_probe_seconds")[0][1] > 0
    with open(RULES) as f:
        expected = sum(len(group["rules"]) for group in yaml.safe_load(f)["groups"])

    def evaluated():
        rules = [rule for group in prometheus.api("rules")["groups"] for rule in group["rules"]]
        return len(rules) == expected and all(rule["health"] == "ok" for rule in rules) and rules

    for rule in prometheus.wait_for("every rule evaluated without error", evaluated):
        assert not rule.get("lastError"), rule
    assert not firing(prometheus, "NamesrvHealthDown") and not firing(prometheus, "NamesrvDown")


def panel_queries():
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target["expr"]


def substituted(expr):
    """The query Grafana sends with fleet ``namesrv``, every instance, and a 30 s rate interval."""
    return expr.replace("$__rate_interval", "30s").replace("$job", "namesrv").replace("$instance", ".*")


def test_every_dashboard_panel_queries_metrics_the_server_exports_without_error(monitored):
    server, prometheus = monitored
    with server.client() as client:
        register(client, "Dashboard", "broker-d", "127.0.0.1:10951", ["DashTopic", "DashTopic2"])
        assert client.call(route_request("DashTopic")).code == ResponseCode.SUCCESS
        assert client.call(route_request("NoSuchTopic")).code == ResponseCode.TOPIC_NOT_EXIST
    prometheus.wait_for("the route reads counted", lambda: prometheus.query(
        'rocketmq_namesrv_requests_total{request_class="route_read", response_code="17"}'))
    exported = set(prometheus.api("label/__name__/values"))
    with open(RULES) as f:
        rule_exprs = [rule["expr"] for group in yaml.safe_load(f)["groups"] for rule in group["rules"]]
    variables = [v["query"]["query"] for v in json.load(open(DASHBOARD))["templating"]["list"] if v["type"] == "query"]
    queries = list(panel_queries())
    assert len(queries) >= 20
    for where, expr in queries + [("rules", e) for e in rule_exprs] + [("variables", q) for q in variables]:
        unknown = set(METRIC_NAME.findall(expr)) - exported
        assert not unknown, "%s: %s uses %s, which the server does not export" % (where, expr, sorted(unknown))
    for title, expr in queries:
        query = substituted(expr)
        result = prometheus.wait_for("%r returning data (%s)" % (title, query), lambda: prometheus.query(query),
                                     timeout=10)
        assert result, title


def test_a_read_worker_killed_is_counted_and_replaced(monitored):
    server, prometheus = monitored
    with open("/proc/%d/task/%d/children" % (server.process.pid, server.process.pid)) as f:
        (worker,) = [int(pid) for pid in f.read().split()]
    os.kill(worker, signal.SIGKILL)
    prometheus.wait_for("the restart counted", lambda: prometheus.query(
        "rocketmq_namesrv_read_worker_restarts_total == 1"))
    prometheus.wait_for("the worker replaced", lambda: prometheus.query(
        "rocketmq_namesrv_read_workers == rocketmq_namesrv_read_workers_configured"))
    assert prometheus.query("increase(rocketmq_namesrv_read_worker_restarts_total[1m])")[0][1] > 0
