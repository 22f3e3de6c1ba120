"""The controller's metrics: role, elections by result, in-sync set sizes, groups without a master,
live brokers, read from a controller whose brokers start, die and get a new master (task.Clock)."""

from namesrv.dispatch.classes import RequestClassifier
from namesrv.controller.metrics import ControllerCollector
from namesrv.observe.metrics import NamesrvMetrics
from namesrv.protocol.codes import ResponseCode
from namesrv.service import make_service
from tests.config_for import service_config
from tests.controller.harness import ControllerHarness, FakeBroker
from tests.integration.server import free_port


def sample(metrics, name, **labels):
    metrics.refresh()
    return metrics.registry.get_sample_value("rocketmq_namesrv_controller_" + name, labels or None)


def group_of_two():
    """broker-a: 1 master, 2 in sync, both beating; and the metrics reading its controller."""
    h = ControllerHarness()
    first, second = FakeBroker(h, port=30911), FakeBroker(h, port=30921)
    assert first.start().code == ResponseCode.SUCCESS and first.elect().code == ResponseCode.SUCCESS
    second.start()
    assert first.alter_sync_state_set({1, 2}, 1, master_epoch=1).code == ResponseCode.SUCCESS
    metrics = NamesrvMetrics(RequestClassifier())
    metrics.add_collector(ControllerCollector(h.controller))
    return h, first, second, metrics


def test_a_healthy_group_has_its_master_and_both_replicas_in_sync():
    h, _, _, metrics = group_of_two()
    group = dict(cluster="DefaultCluster", broker_name="broker-a")
    assert sample(metrics, "is_leader", controller_group="group1", controller_id="n0") == 1
    assert sample(metrics, "group_has_master", **group) == 1
    assert sample(metrics, "sync_state_set_size", **group) == 2
    assert sample(metrics, "group_live_brokers", **group) == 2
    assert sample(metrics, "live_brokers") == 2
    assert sample(metrics, "groups_without_master") == 0
    assert sample(metrics, "elections_total", result="new_master_elected") == 1


def test_a_master_replaced_then_a_group_left_without_one():
    h, first, second, metrics = group_of_two()
    group = dict(cluster="DefaultCluster", broker_name="broker-a")
    first.die()        # the controller elects the in-sync replica 2
    assert h.state.group("broker-a").master_id == 2
    assert sample(metrics, "elections_total", result="new_master_elected") == 2
    assert sample(metrics, "group_has_master", **group) == 1
    assert sample(metrics, "group_live_brokers", **group) == 1
    second.die()       # nobody in sync is left
    assert sample(metrics, "elections_total", result="no_master_elected") == 1
    assert sample(metrics, "group_has_master", **group) == 0
    assert sample(metrics, "groups_without_master") == 1
    assert sample(metrics, "live_brokers") == 0


def test_a_master_that_stopped_beating_counts_as_no_master_until_replaced():
    h, first, second, metrics = group_of_two()
    h.controller.replicated.leading = False          # a follower: it hears beats but elects nothing
    first.die()
    assert h.state.group("broker-a").master_id == 1
    assert sample(metrics, "group_has_master", cluster="DefaultCluster", broker_name="broker-a") == 0
    assert sample(metrics, "is_leader", controller_group="group1", controller_id="n0") == 0


def test_make_service_gives_the_metrics_port_its_embedded_controller(tmp_path):
    config = service_config(tmp_path, prometheusListenPort=free_port(), enableControllerInNamesrv=True,
                            controllerDLegerGroup="g", controllerDLegerSelfId="n0",
                            controllerDLegerPeers="n0-127.0.0.1:%d" % free_port(),
                            controllerStorePath=str(tmp_path / "controller"))
    svc = make_service(config)
    metrics = svc.getServiceNamed("prometheus").metrics
    assert [c.controller for c in metrics.collectors if isinstance(c, ControllerCollector)] == \
        [svc.controller.controller]
    svc.controller.replicated.start()
    try:
        assert sample(metrics, "is_leader", controller_group="g", controller_id="n0") == 1
        assert sample(metrics, "groups_without_master") == 0
    finally:
        svc.controller.replicated.stop()


def test_no_controller_no_controller_metrics(tmp_path):
    svc = make_service(service_config(tmp_path, prometheusListenPort=free_port()))
    assert b"rocketmq_namesrv_controller_" not in svc.getServiceNamed("prometheus").metrics.exposition()


def test_raft_members_term_lease_and_refusals_are_exported():
    from namesrv.controller.metrics import raft_families
    families = {f.name: f for f in raft_families({
        "mode": "raft", "term": 7, "connectedPeers": ["n1", "n2"], "leaseSeconds": 0.3, "authenticated": True,
        "refusedLinks": 4, "dropped": {"stale_ack": 2, "bad": 1}})}
    value = lambda name: families[name].samples[0].value
    assert value("rocketmq_namesrv_controller_raft_term") == 7
    assert value("rocketmq_namesrv_controller_raft_linked_members") == 2
    assert value("rocketmq_namesrv_controller_raft_lease_seconds") == 0.3
    assert value("rocketmq_namesrv_controller_raft_member_authentication") == 1
    assert value("rocketmq_namesrv_controller_raft_refused_connections") == 4
    dropped = {s.labels["reason"]: s.value for s in families["rocketmq_namesrv_controller_raft_dropped_messages"].samples}
    assert dropped == {"stale_ack": 2, "bad": 1}
    assert list(raft_families({"mode": "single"})) == []
