"""RouteTables alone: its changes, the indexes kept beside the tables, and the rows it is rebuilt from."""

from namesrv.routes import rows
from namesrv.routes.changes import RouteChanges
from namesrv.routes.invariants import check_invariants
from namesrv.routes.model import BrokerLiveInfo, DataVersion, QueueData
from namesrv.routes.tables import RouteTables
from tests.fakes import RecordingEventLog
from tests.routes.helpers import new_routes, register, topic


class Tracker(set):
    full = False


def new_tables():
    changes = RouteChanges(events=RecordingEventLog())
    return RouteTables(changes), changes


def test_put_and_remove_queue_data_keep_the_reverse_index_and_report_each_change():
    tables, changes = new_tables()
    tracker = changes.track(Tracker())
    tables.new_broker_data("c", "a").broker_addrs[0] = "h:1"
    tables.add_to_cluster("c", "a")
    with changes.operation(tables):
        tables.put_queue_data("T", QueueData("a", 4, 4, 6))
    assert tables.topics_of("a") == {"T"} and tracker == {"T"}
    assert changes.events.named("topic_route_changed") == [{"topic": "T", "before": [], "after": ["a"]}]
    check_invariants(tables, changes.body_cache)
    generation = changes.generation
    tables.put_queue_data("T", QueueData("a", 4, 4, 6))          # the same value: nothing to report
    assert changes.generation == generation
    with changes.operation(tables):
        tables.remove_queue_data("T", "a")
    assert tables.topic_queue_table == {} and tables.topics_of("a") == ()
    check_invariants(tables, changes.body_cache)


def test_a_bulk_first_registration_is_one_change_and_one_event():
    tables, changes = new_tables()
    heard = []
    changes.add_listener(lambda: heard.append(1))
    tables.new_broker_data("c", "a").broker_addrs[0] = "h:1"
    tables.add_to_cluster("c", "a")
    heard.clear()
    tables.put_broker_topics("a", {name: topic(name) for name in ("T1", "T2", "T3")})
    assert heard == [1]
    assert changes.events.named("topic_route_changed") == [{"topics": ["T1", "T2", "T3"], "before": [],
                                                             "after": ["a"]}]
    assert len({id(qmap["a"]) for qmap in tables.topic_queue_table.values()}) == 1


def test_the_registration_token_moves_with_the_broker_and_with_a_reset():
    tables, _ = new_tables()
    tables.add_to_cluster("c", "a")
    token = tables.registration_token("a")
    assert tables.registration_token("a") == token
    tables.add_to_cluster("c", "b")                                # another broker: a's token stays
    assert tables.registration_token("a") == token
    tables.new_broker_data("c", "a")
    assert tables.registration_token("a") != token
    token = tables.registration_token("a")
    tables.reset()
    assert tables.registration_token("a") != token


def test_live_entries_index_their_connection_and_drop_their_filter_servers():
    tables, _ = new_tables()
    live = BrokerLiveInfo(0, 1000, DataVersion(), "conn", None, "a", 0)
    tables.bind_live(("c", "h:1"), live)
    tables.set_filter_servers(("c", "h:1"), ["f:1"])
    assert tables.by_connection == {"conn": {("c", "h:1")}} and len(tables.deadlines) == 1
    tables.bind_live(("c", "h:1"), BrokerLiveInfo(1, 1000, DataVersion(), "other", None, "a", 0))
    assert tables.by_connection == {"other": {("c", "h:1")}}
    assert tables.drop_live(("c", "h:1")).connection == "other"
    assert tables.by_connection == {} and tables.filter_server_table == {}


def test_rows_give_back_the_same_tables_and_indexes():
    routes = new_routes()
    register(routes, "T1", "T2", filters=["f:1"], mappings={"T1": {"bname": "broker-a", "epoch": 1}})
    register(routes, "T2", name="broker-b", addr="h:2")
    tables, changes = new_tables()
    tracker = changes.track(Tracker())
    tables.replace_from_rows(now=5.0, topics=rows.topic_rows(routes), live=rows.live_rows(routes),
                             mappings=routes.topic_queue_mapping_info_table, **rows.broker_level_rows(routes))
    assert tracker.full
    assert tables.topic_queue_table == routes.topic_queue_table
    assert tables.broker_addr_table == routes.broker_addr_table
    assert tables.cluster_addr_table == routes.cluster_addr_table
    assert tables.filter_server_table == routes.filter_server_table
    assert tables.topic_queue_mapping_info_table == routes.topic_queue_mapping_info_table
    assert tables.broker_topics == routes.tables.broker_topics
    assert sorted(tables.broker_live_table) == sorted(routes.broker_live_table)
    assert all(live.last_update == 5.0 and live.connection is None for live in tables.broker_live_table.values())
    check_invariants(tables, changes.body_cache)


def test_adopt_takes_every_table_and_index_of_the_other():
    routes = new_routes()
    register(routes, "T1")
    tables, changes = new_tables()
    tracker = changes.track(Tracker())
    tables.adopt(routes.tables)
    assert tables.topic_queue_table is routes.topic_queue_table and tables.deadlines is routes.tables.deadlines
    assert tracker.full
    check_invariants(tables, changes.body_cache)


def test_a_replica_refreshes_its_broker_tables_and_applies_topic_parts_from_rows():
    main = new_routes()
    register(main, "T1", "T2")
    replica = new_routes()
    heard = []
    replica.add_change_listener(lambda: heard.append(1))
    replica.apply_topic_rows(rows.topic_rows(main), {"T1": {"broker-a": {"bname": "broker-a"}}})
    replica.replace_from_rows(**rows.broker_level_rows(main))
    assert replica.topic_queue_table == main.topic_queue_table and replica.broker_addr_table == main.broker_addr_table
    assert replica.topic_queue_mapping_info_table == {"T1": {"broker-a": {"bname": "broker-a"}}}
    assert replica.route_body("T2", True) == main.route_body("T2", True)
    heard.clear()
    replica.apply_topic_rows({"T1": None, "T3": [["broker-a", 2, 2, 6, 0]]}, {"T1": None})
    assert sorted(replica.topic_queue_table) == ["T2", "T3", "baseTopic"] and heard == [1]
    assert replica.route_body("T1", True) is None and replica.topic_queue_mapping_info_table == {}
    assert replica.tables.topics_of("broker-a") == {"T2", "T3", "baseTopic"}


def test_topic_parts_by_shape_apply_as_rows_do():
    main = new_routes()
    register(main, "T1", "T2", "T3")
    register(main, "T2", "T3", "T4", name="broker-b", addr="127.0.0.1:2")
    by_rows, by_shapes = new_routes(), new_routes()
    by_rows.apply_topic_rows(rows.topic_rows(main))
    shapes = rows.topic_shapes(main)
    assert len(shapes["shapes"]) == 3 and len(shapes["queueDatas"]) == 2    # {a}, {a, b}, {b}: two QueueData
    by_shapes.apply_topic_shapes(shapes)
    assert by_shapes.topic_queue_table == by_rows.topic_queue_table == main.topic_queue_table
    assert by_shapes.tables.broker_topics == main.tables.broker_topics
    by_shapes.apply_topic_shapes(rows.topic_shapes(main, ["T1", "Gone"]) | {"topics": {"T1": None, "Gone": None}})
    assert "T1" not in by_shapes.topic_queue_table and by_shapes.tables.topics_of("broker-a") == {"T2", "T3", "baseTopic"}


def test_topics_going_a_few_from_each_map_leave_the_tables_as_on_the_main_process():
    """A mass disconnect reaches a replica as parts whose topics go a few from each map (100,000 topics on maps of
    tens): they go together, and every index, body and token is as if each had gone alone."""
    main = new_routes()
    names = ["T%02d" % i for i in range(24)]
    register(main, *names[:16])                                                     # broker-a: T00-T15
    register(main, *names[8:], name="broker-b", addr="127.0.0.1:2")                 # broker-b: T08-T23
    replica = new_routes()
    replica.apply_topic_shapes(rows.topic_shapes(main))
    replica.replace_from_rows(**rows.broker_level_rows(main))
    for name in names:
        replica.route_body(name, True)   # cached: the going ones must be forgotten
    tokens = {b: replica.tables.registration_token(b) for b in ("broker-a", "broker-b")}
    going = ["T01", "T02", "T09", "T10", "T17"] + ["T%02d" % i for i in range(20, 24)]   # a few of each map, one map whole
    for name in going:
        main.delete_topic(name)
    heard = []
    replica.add_change_listener(lambda: heard.append(1))
    replica.apply_topic_shapes(rows.topic_shapes(main, going) | {"topics": dict.fromkeys(going)})
    assert replica.topic_queue_table == main.topic_queue_table and heard == [1]
    assert replica.tables.topics_of("broker-a") == main.tables.topics_of("broker-a")
    assert replica.tables.topics_of("broker-b") == main.tables.topics_of("broker-b")
    assert all(replica.route_body(name, True) is None for name in going)
    assert all(replica.tables.registration_token(b) != tokens[b] for b in tokens)
    check_invariants(replica.tables, replica.tables.changes.body_cache)
