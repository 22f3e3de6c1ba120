"""A master the controllers committed is routed before its own registration, and never over a newer one
(RouteInfoManager.route_committed_master: the master epoch, a 5.x broker's stateVersion, decides)."""

from twisted.internet.task import Clock

from namesrv.routes.model import MASTER_ID
from tests.routes.helpers import CLUSTER, FakeConnection, addrs_of, new_routes, register

OLD, NEW, THIRD = "127.0.0.1:10911", "127.0.0.1:10921", "127.0.0.1:10931"


def group_at_epoch(epoch=1, clock=None):
    """broker-a with OLD as master (id 0) and NEW as a slave (id 2), both registered at ``epoch``."""
    routes = new_routes(clock or Clock())
    register(routes, "T", addr=OLD, broker_id=0, state=epoch, conn=FakeConnection())
    register(routes, "T", addr=NEW, broker_id=2, state=epoch, conn=FakeConnection())
    return routes


def test_the_elected_slave_becomes_brokerId_0_and_the_old_master_leaves_the_route():
    routes = group_at_epoch(1)
    assert addrs_of(routes, "T") == {0: OLD, 2: NEW}     # read once: the body is cached
    assert routes.route_committed_master("broker-a", NEW, 2) is True
    assert addrs_of(routes, "T") == {0: NEW}
    live = routes.broker_live_table[(CLUSTER, NEW)]
    assert (live.broker_id, live.data_version.state_version) == (MASTER_ID, 2)
    # the queues stay: they belong to the group, not to an address
    assert routes.pickup_topic_route("T", True).queue_datas[0].broker_name == "broker-a"
    routes.check_invariants()


def test_a_master_registered_at_that_epoch_or_later_is_never_replaced():
    routes = group_at_epoch(1)
    register(routes, "T", addr=OLD, broker_id=0, state=3, counter=2)      # OLD re-elected at epoch 3
    assert routes.route_committed_master("broker-a", NEW, 2) is False    # a stale member's election
    assert routes.route_committed_master("broker-a", NEW, 3) is False    # the same epoch: the registration wins
    assert addrs_of(routes, "T") == {0: OLD, 2: NEW}


def test_nothing_changes_unless_the_elected_broker_is_live_here_as_an_older_member():
    routes = group_at_epoch(1)
    assert routes.route_committed_master("broker-a", THIRD, 2) is False   # never registered here
    assert routes.route_committed_master("broker-b", NEW, 2) is False     # no such group here
    assert routes.route_committed_master("broker-a", OLD, 2) is False     # already brokerId 0
    register(routes, "T", addr=NEW, broker_id=2, state=4, counter=2)     # knows a later epoch, as a slave
    assert routes.route_committed_master("broker-a", NEW, 2) is False
    routes = group_at_epoch(1)
    routes.unregister_broker(CLUSTER, NEW, "broker-a")
    assert routes.route_committed_master("broker-a", NEW, 2) is False     # gone
    assert addrs_of(routes, "T") == {0: OLD}


def test_a_group_whose_master_left_gets_the_elected_one():
    routes = group_at_epoch(1)
    routes.unregister_broker(CLUSTER, OLD, "broker-a")
    assert addrs_of(routes, "T") == {2: NEW}
    assert routes.route_committed_master("broker-a", NEW, 2) is True
    assert addrs_of(routes, "T") == {0: NEW}


def test_the_old_masters_late_registration_is_refused_and_the_new_masters_own_one_is_taken():
    routes = group_at_epoch(1)
    routes.route_committed_master("broker-a", NEW, 2)
    late = register(routes, "T", addr=OLD, broker_id=0, state=1, counter=5)
    assert late.stale and addrs_of(routes, "T") == {0: NEW}
    assert (CLUSTER, OLD) not in routes.broker_live_table               # the stale-address guard dropped it
    # the old master, told it is a slave now, registers under its own id
    register(routes, "T", addr=OLD, broker_id=1, state=2, counter=6)
    assert addrs_of(routes, "T") == {0: NEW, 1: OLD}
    # the new master's own registration (its DataVersion at epoch 2) is a full one and changes no address
    own = register(routes, "T", "U", addr=NEW, broker_id=0, state=2, counter=2)
    assert own.changed and addrs_of(routes, "T") == {0: NEW, 1: OLD} and addrs_of(routes, "U") == {0: NEW, 1: OLD}
    routes.check_invariants()


def test_the_elected_master_keeps_its_liveness_connection_and_expiry():
    clock = Clock()
    routes = group_at_epoch(1, clock)
    connection = routes.broker_live_table[(CLUSTER, NEW)].connection
    clock.advance(100)
    routes.route_committed_master("broker-a", NEW, 2)
    assert routes.broker_live_table[(CLUSTER, NEW)].connection is connection
    clock.advance(25)      # 125 s after its last registration: expired as it would have been
    expired = {removed.broker_addr for removed in routes.scan_not_active_brokers()}
    assert expired == {OLD, NEW}
    assert routes.pickup_topic_route("T", True) is None


def test_closing_the_elected_masters_connection_forgets_it():
    routes = group_at_epoch(1)
    connection = routes.broker_live_table[(CLUSTER, NEW)].connection
    routes.route_committed_master("broker-a", NEW, 2)
    [removed] = routes.on_connection_closed(connection)
    assert (removed.broker_addr, removed.broker_id) == (NEW, 0)
    assert "broker-a" not in routes.broker_addr_table     # the old master was listed no more either


def test_the_new_masters_late_registration_as_a_slave_does_not_unlist_it():
    routes = group_at_epoch(1)
    routes.route_committed_master("broker-a", NEW, 2)
    # sent before it heard of its election, delivered after: an older epoch than the one it is master at
    late = register(routes, "T", addr=NEW, broker_id=2, state=1, counter=3)
    assert late.stale and addrs_of(routes, "T") == {0: NEW}
    assert routes.broker_live_table[(CLUSTER, NEW)].data_version.state_version == 2
    # a slave registration at a later epoch is a real role change
    register(routes, "T", addr=NEW, broker_id=2, state=3, counter=4)
    assert addrs_of(routes, "T") == {2: NEW}


def test_brokers_outside_controller_mode_switch_roles_as_in_java():
    routes = new_routes()
    register(routes, "T", addr=NEW, broker_id=0)
    register(routes, "T", addr=NEW, broker_id=1, counter=2)     # stateVersion 0 both times
    assert addrs_of(routes, "T") == {1: NEW}
