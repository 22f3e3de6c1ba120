"""The route manager's parts built alone on one RouteTables: registrations, queries, admin operations,
and the change tracker's operations (the facade's own tests are the other files here)."""

from twisted.internet.task import Clock

from namesrv.routes.admin import RouteAdmin
from namesrv.routes.changes import RouteChanges
from namesrv.routes.invariants import check_invariants
from namesrv.routes.model import PERM_READ, DataVersion, QueueData
from namesrv.routes.queries import RouteQueries
from namesrv.routes.registration import BrokerRegistrations
from namesrv.routes.tables import RouteTables
from tests.fakes import RecordingEventLog
from tests.routes.helpers import wrapper


class Parts:
    def __init__(self):
        self.clock = Clock()
        self.changes = RouteChanges(events=RecordingEventLog())
        self.tables = RouteTables(self.changes)
        self.registrations = BrokerRegistrations(self.tables, self.changes, self.clock, 10000)
        self.queries = RouteQueries(self.tables, self.changes.body_cache)
        self.admin = RouteAdmin(self.tables, self.changes, self.clock)

    def register(self, name="a", addr="h:1", broker_id=0, topics=("T1", "T2"), counter=1, **kwargs):
        return self.registrations.register_broker("c", addr, name, broker_id, addr + "0",
                                                  wrapper(*topics, counter=counter), [], "conn-" + addr, **kwargs)

    def check(self):
        check_invariants(self.tables, self.changes.body_cache)


def test_registrations_alone_register_refuse_and_expire():
    parts = Parts()
    result = parts.register()
    assert (result.first, result.changed) == (True, True)
    assert parts.tables.topics_of("a") == {"T1", "T2"}
    assert parts.register(name="b", addr="h:2", topics=("T1",)) is None    # 5.x single-topic refusal
    assert "b" not in parts.tables.broker_addr_table
    slave = parts.register(addr="h:3", broker_id=1)
    assert (slave.master_addr, slave.ha_server_addr) == ("h:1", "h:10")
    parts.check()
    parts.clock.advance(11)
    expired = parts.registrations.scan_not_active_brokers()
    assert sorted((e.broker_addr, e.age_ms) for e in expired) == [("h:1", 11000), ("h:3", 11000)]
    assert parts.tables.topic_queue_table == {} and parts.tables.broker_addr_table == {}
    parts.check()


def test_registrations_alone_the_stale_address_guard_and_the_unchanged_shortcut():
    parts = Parts()
    parts.registrations.register_broker("c", "h:1", "a", 0, "x", wrapper("T1", "T2", state=5), [], None)
    stale = parts.registrations.register_broker("c", "h:9", "a", 0, "x", wrapper("T1", "T2", state=1), [], None)
    assert stale.stale and parts.tables.broker_addr_table["a"].broker_addrs == {0: "h:1"}
    token = parts.tables.registration_token("a")
    parts.clock.advance(5)
    refreshed = parts.registrations.refresh_unchanged_registration("c", "h:1", token, "conn")
    assert (refreshed.first, refreshed.changed) == (False, False)
    assert parts.tables.broker_live_table[("c", "h:1")].last_update == 5
    assert parts.registrations.refresh_unchanged_registration("c", "h:1", ("old", 0)) is None
    parts.check()


def test_queries_alone_answer_from_the_tables_and_keep_their_bodies():
    parts = Parts()
    parts.register()
    body = parts.queries.route_body("T1", True)
    pieces = dict(parts.queries.body_cache.broker_pieces)
    assert body == parts.queries.route_body("T1", True) and pieces      # joined from kept pieces
    assert all(parts.queries.body_cache.broker_pieces[key] is piece for key, piece in pieces.items())
    assert parts.queries.topic_names() == ["T1", "T2"]
    assert parts.queries.broker_topic_count("a") == 2
    assert parts.queries.topics_by_cluster("c") == ["T1", "T2"]
    assert parts.queries.broker_member_group("c", "a") == {0: "h:1"}
    assert parts.queries.route_body("nope", True) is None
    parts.register(topics=("T1", "T2"), counter=2, zone_name="z")    # the BrokerData changed: body dropped
    assert parts.queries.route_body("T1", True) != body
    assert parts.queries.stats()["topics"] == 2


def test_admin_alone_changes_perms_topics_and_liveness():
    parts = Parts()
    parts.register()
    assert parts.admin.wipe_write_perm_of_broker("a") == 2
    assert {qmap["a"].perm for qmap in parts.tables.topic_queue_table.values()} == {PERM_READ}
    assert parts.admin.register_topic("T3", [QueueData("a", 1, 1, 6)]) == 1
    assert parts.admin.register_topic("T4", [QueueData("unknown", 1, 1, 6)]) == 0
    parts.admin.delete_topic("T1")
    assert sorted(parts.tables.topic_queue_table) == ["T2", "T3"]
    parts.clock.advance(3)
    assert parts.admin.broker_heartbeat("c", "h:1") and not parts.admin.broker_heartbeat("c", "h:2")
    assert parts.tables.broker_live_table[("c", "h:1")].last_update == 3
    changed, stored = parts.admin.query_data_version("c", "h:1", DataVersion(1700000000000, 1, 0))
    assert not changed and stored == DataVersion(1700000000000, 1, 0)
    parts.check()


def test_an_operation_reports_the_broker_sets_it_changed_once_at_its_end():
    parts = Parts()
    parts.register(topics=("T1", "T2"))
    parts.register(name="b", addr="h:2", topics=("T2", "T3"))
    parts.changes.events.clear()
    heard = []
    parts.changes.add_listener(lambda: heard.append(1))
    with parts.changes.operation(parts.tables):
        parts.tables.remove_queue_data("T2", "a")
        parts.tables.remove_queue_data("T2", "b")
        parts.tables.put_queue_data("T2", QueueData("a", 1, 1, 6))
        assert heard == [] and parts.changes.events.named("topic_route_changed") == []
    assert heard == [1]
    assert parts.changes.events.named("topic_route_changed") == [{"topic": "T2", "before": ["a", "b"],
                                                                   "after": ["a"]}]
