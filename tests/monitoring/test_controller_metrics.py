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


def test_every_members_role_lag_and_last_contact_and_the_store_are_exported(tmp_path):
    """A simulated group of three with a learner, read on its leader: what an operator alerts on when a member
    falls behind or the store nears its bound."""
    from namesrv.controller.metrics import raft_families
    from tests.controller.raftsim import SimGroup, apply_id
    g = SimGroup(tmp_path, spare=1)
    try:
        leader = g.leader()
        for broker_id in range(1, 6):
            g.propose(leader, [apply_id("b", broker_id)])
        g.run(0.2)
        g.start("n3", join=True)
        added = g.logs[leader].changes.add("n3", g.addresses["n3"])
        g.run_until(lambda: added.called)
        g.run(0.5)
        families = {f.name: f for f in raft_families(g.logs[leader].status())}
    finally:
        g.close()
    roles = {(s.labels["member"], s.labels["role"]) for s in families[PREFIX_RAFT + "member"].samples}
    assert roles == {("n0", "voter"), ("n1", "voter"), ("n2", "voter"), ("n3", "learner")}
    lags = {s.labels["member"]: s.value for s in families[PREFIX_RAFT + "member_lag_entries"].samples}
    assert lags == {"n0": 0, "n1": 0, "n2": 0, "n3": 0}
    contact = {s.labels["member"]: s.value for s in families[PREFIX_RAFT + "member_last_contact_seconds"].samples}
    assert set(contact) == {"n0", "n1", "n2", "n3"} and all(0 <= v < 1 for v in contact.values())
    parts = {s.labels["part"]: s.value for s in families[PREFIX_RAFT + "store_bytes"].samples}
    assert parts["journal"] > 0 and parts["snapshot"] == 0
    assert families[PREFIX_RAFT + "store_max_bytes"].samples[0].value == 64 << 20
    assert families[PREFIX_RAFT + "group_epoch"].samples[0].value == 0


PREFIX_RAFT = "rocketmq_namesrv_controller_raft_"
