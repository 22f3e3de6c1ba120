"""The encoded-route cache (PITFALLS 8) and the topic_route_changed events."""

import pytest
from twisted.internet.task import Clock

from namesrv.codec import fastjson
from namesrv.routes.bodies import encode
from tests.routes.helpers import BROKER, CLUSTER, MASTER_ADDR, SLAVE_ADDR, FakeConnection, RecordingEventLog, new_routes, register


@pytest.fixture
def events():
    return RecordingEventLog()


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def routes(clock, events):
    routes = new_routes(clock, events)
    yield routes
    routes.check_invariants()


@pytest.fixture
def encodes(monkeypatch):
    """Every value the route queries encode: the pieces routes are joined from, and whole routes."""
    seen = []
    piece, whole = encode.encode_piece, encode.encode_topic_route
    monkeypatch.setattr(encode, "encode_piece", lambda value, standard: seen.append(value) or piece(value, standard))
    monkeypatch.setattr(encode, "encode_topic_route", lambda route, standard: seen.append(route) or whole(route, standard))
    return seen


def test_route_is_encoded_once_per_change(routes, encodes):
    register(routes, "T", "U", acting=True)
    first = routes.route_body("T", True)
    assert routes.route_body("T", True) == first
    other = routes.route_body("U", True)
    encoded = len(encodes)
    assert encoded > 0
    register(routes, "T", "U", acting=True)  # heartbeat: same DataVersion
    routes.broker_heartbeat(CLUSTER, MASTER_ADDR)
    routes.query_data_version(CLUSTER, MASTER_ADDR, None)
    assert routes.route_body("T", True) == first and routes.route_body("U", True) == other
    assert len(encodes) == encoded


def test_joined_routes_are_the_encoded_routes(routes):
    register(routes, "T", "U", name="b1", addr="h:1")
    register(routes, "T", name="b2", addr="h:2", zone="z\u00e9/")
    register(routes, "T", "U", name="b3", addr="h:3", broker_id=1)     # a group without a master
    for topic in ("T", "U"):
        for standard in (True, False):
            for conf in (None, "b1:8;b2:4/\u00e9"):
                route = routes.pickup_topic_route(topic)
                route.order_topic_conf = conf
                assert routes.route_body(topic, standard, conf) == encode.encode_topic_route(route, standard)


def test_encodings_and_order_conf_are_cached_separately(routes, encodes):
    register(routes, "T")
    standard, plain = routes.route_body("T", True), routes.route_body("T", False)
    assert standard != plain
    with_conf = routes.route_body("T", True, "broker-a:8")
    assert b"orderTopicConf" in with_conf and b"orderTopicConf" not in routes.route_body("T", True)
    del encodes[:]
    assert routes.route_body("T", False) == plain and encodes == []


@pytest.mark.parametrize("change", [
    lambda routes: register(routes, "T", addr=SLAVE_ADDR, broker_id=1),         # BrokerData gains a slave
    lambda routes: register(routes, "T", counter=2, filters=["f:1"]),            # filter servers
    lambda routes: routes.wipe_write_perm_of_broker(BROKER),                      # perm
    lambda routes: register(routes, "T", zone="z"),                               # zoneName
    lambda routes: register(routes, "T", name="broker-b", addr="127.0.0.1:2"),   # another broker joins
    lambda routes: routes.delete_topic("T"),
    lambda routes: routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0),
])
def test_every_input_of_a_route_invalidates_it(routes, change, encodes):
    register(routes, "T", "Untouched", name="broker-c", addr="127.0.0.1:3")
    register(routes, "T")
    before = routes.route_body("T", True)
    untouched = routes.route_body("Untouched", True)
    change(routes)
    after = routes.route_body("T", True)
    fresh = routes.pickup_topic_route("T")
    assert after != before
    assert after == (None if fresh is None else encode.encode_topic_route(fresh, True))
    del encodes[:]
    assert routes.route_body("Untouched", True) == untouched
    assert encodes == []           # other topics keep their encoding (or the pieces it is joined from)


def test_perm_restored_to_same_value_keeps_cache_valid(routes, encodes):
    register(routes, "T")
    body = routes.route_body("T", True)
    del encodes[:]
    routes.add_write_perm_of_broker(BROKER)  # 6 -> 6: nothing changed
    assert routes.route_body("T", True) == body and encodes == []


def test_cluster_info_and_topic_list_caches(routes):
    register(routes, "T")
    info, topics = routes.cluster_info_body(), routes.all_topic_list_body()
    register(routes, "T")
    assert routes.cluster_info_body() is info and routes.all_topic_list_body() is topics
    register(routes, "T", addr=SLAVE_ADDR, broker_id=1)
    assert b"30911" in routes.cluster_info_body() and routes.all_topic_list_body() is topics
    register(routes, "T", "V", counter=2)
    assert b'"V"' in routes.all_topic_list_body()


def test_topic_route_changed_events(routes, events):
    register(routes, "T")
    assert sorted((e["topic"], tuple(e["before"]), tuple(e["after"])) for e in events.topic_changes()) \
        == [("T", (), (BROKER,)), ("baseTopic", (), (BROKER,))]
    events.clear()
    register(routes, "T")
    register(routes, "T", addr=SLAVE_ADDR, broker_id=1)
    routes.wipe_write_perm_of_broker(BROKER)
    assert events.topic_changes() == []
    register(routes, "T", name="broker-b", addr="127.0.0.1:2", base_topic=False, counter=1, acting=None)
    # one topic registration from an unknown broker is refused: no event
    assert events.topic_changes() == []
    register(routes, "T", "X", name="broker-b", addr="127.0.0.1:2", base_topic=False)
    changed = {e["topic"]: (e["before"], e["after"]) for e in events.topic_changes()}
    assert changed == {"T": ([BROKER], [BROKER, "broker-b"]), "X": ([], ["broker-b"])}
    events.clear()
    routes.unregister_broker(CLUSTER, MASTER_ADDR, BROKER, 0)
    assert events.topic_changes() == []  # the slave still serves broker-a
    routes.on_connection_closed(FakeConnection())
    routes.unregister_broker(CLUSTER, SLAVE_ADDR, BROKER, 1)
    changed = {e["topic"]: (e["before"], e["after"]) for e in events.topic_changes()}
    assert changed == {"T": ([BROKER, "broker-b"], ["broker-b"]), "baseTopic": ([BROKER], [])}


def test_one_event_per_topic_per_operation(routes, events):
    register(routes, "T", name="b1", addr="h:1")
    register(routes, "T", name="b2", addr="h:2")
    events.clear()
    routes.delete_topic("T")
    assert events.topic_changes() == [{"topic": "T", "before": ["b1", "b2"], "after": []}]


def test_topics_with_the_same_change_share_one_event(routes, events):
    many = ["T%d" % i for i in range(500)]
    register(routes, *many, name="b1", addr="h:1")
    (event,) = [e for e in events.named("topic_route_changed") if "topics" in e]
    assert sorted(event["topics"]) == sorted(many + ["baseTopic"]) and "topic" not in event
    assert (event["before"], event["after"]) == ([], ["b1"])
    events.clear()
    register(routes, *many[:300], name="b2", addr="h:2", base_topic=False)
    routes.delete_topic("T499")
    grouped = {(tuple(e["before"]), tuple(e["after"])): e for e in events.named("topic_route_changed")}
    assert sorted(grouped[("b1",), ("b1", "b2")]["topics"]) == sorted(many[:300])
    assert grouped[("b1",), ()] == {"topic": "T499", "before": ["b1"], "after": []}


def test_expiry_emits_route_changes(routes, events, clock):
    register(routes, "T")
    events.clear()
    clock.advance(121)
    routes.scan_not_active_brokers()
    assert {e["topic"] for e in events.topic_changes()} == {"T", "baseTopic"}


def test_cached_body_decodes_to_the_route(routes):
    register(routes, "T", filters=["f:1"])
    decoded = fastjson.loads(routes.route_body("T", False))
    assert decoded["brokerDatas"][0]["brokerAddrs"] == {0: MASTER_ADDR}
    assert decoded["filterServerTable"] == {MASTER_ADDR: ["f:1"]}


def test_clear_forgets_everything_and_reports_it(routes, events):
    register(routes, "T", conn=FakeConnection(), filters=["f:1"])
    routes.route_body("T", True)
    events.clear()
    routes.clear()
    assert routes.stats() == {"topics": 0, "brokerNames": 0, "clusters": 0, "liveBrokers": 0, "filterServers": 0,
                              "cachedRoutes": 0}
    assert {e["topic"] for e in events.topic_changes()} == {"T", "baseTopic"}


def test_default_clock_is_monotonic():
    from namesrv.routes import RouteInfoManager
    routes = RouteInfoManager()
    register(routes, "T")
    assert routes.scan_not_active_brokers() == []
    assert routes.pickup_topic_route("T") is not None


def test_stored_queue_data_is_shared_and_never_changed_in_place(routes):
    register(routes, "T", "U", name="b1", addr="h:1")
    t, u = routes.topic_queue_table["T"]["b1"], routes.topic_queue_table["U"]["b1"]
    assert t is u
    routes.wipe_write_perm_of_broker("b1")
    assert t.perm & 2 and not routes.topic_queue_table["T"]["b1"].perm & 2   # replaced, not changed
    assert routes.topic_queue_table["T"]["b1"] is routes.topic_queue_table["U"]["b1"]
