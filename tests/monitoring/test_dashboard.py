"""conf/grafana/namesrv.json as Grafana reads it: the panels the issue asks for, each with its queries,
laid out on the 24-column grid without overlaps (the queries themselves run in test_prometheus_live)."""

import json
import os

from tests.integration.server import REPO

DASHBOARD = os.path.join(REPO, "conf", "grafana", "namesrv.json")

#: what an operator looks for first, and a metric its panel must query
EXPECTED = {
    "Live brokers per cluster": "rocketmq_namesrv_cluster_live_brokers",
    "Registrations and expirations": "rocketmq_namesrv_broker_expirations_total",
    "Route reads by response code": "rocketmq_namesrv_requests_total",
    "Route read latency": "rocketmq_namesrv_request_duration_seconds_bucket",
    "SYSTEM_BUSY and other refusals": "rocketmq_namesrv_rejected_requests_total",
    "Connections": "rocketmq_namesrv_connections_limit",
    "Read workers": "rocketmq_namesrv_read_worker_restarts_total",
    "Event log drops and bad frames": "rocketmq_namesrv_event_log_dropped_total",
}


def load():
    with open(DASHBOARD) as f:
        return json.load(f)


def test_the_panels_an_operator_needs_are_there_with_their_metrics():
    panels = {p["title"]: p for p in load()["panels"]}
    for title, metric in EXPECTED.items():
        assert title in panels, title
        assert any(metric in t["expr"] for t in panels[title]["targets"]), (title, metric)
    latency = " ".join(t["expr"] for t in panels["Route read latency"]["targets"])
    assert all("histogram_quantile(%s," % q in latency for q in ("0.5", "0.9", "0.99"))


def test_every_query_panel_uses_the_data_source_variable_and_unique_ref_ids():
    dashboard = load()
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["datasource", "job", "instance"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)), panel["title"]
        assert all(t["expr"].strip() for t in panel["targets"]), panel["title"]


def test_panels_fit_the_grid_without_overlapping():
    cells = {}
    for panel in load()["panels"]:
        pos = panel["gridPos"]
        assert 0 <= pos["x"] and pos["x"] + pos["w"] <= 24, panel["title"]
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, "%s overlaps %s" % (panel["title"], cells[(x, y)])
                cells[(x, y)] = panel["title"]
