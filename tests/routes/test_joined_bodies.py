"""Joined route bodies are byte for byte the bodies the encoder writes, whatever the tables hold."""

from hypothesis import given, settings, strategies as st

from namesrv.routes.bodies import encode
from tests.routes.helpers import new_routes, register

names = st.text(alphabet=st.sampled_from("ab/-_\u00e9\u4e2d\U0001f600\"\\"), min_size=1, max_size=6)
registration = st.fixed_dictionaries({
    "name": st.sampled_from(["b1", "b2", "b3", "b\u00e9/4"]),
    "broker_id": st.sampled_from([0, 0, 1, 2]),
    "topics": st.lists(st.sampled_from(["T1", "T2", "T3", "T\u00e9"]), min_size=2, max_size=4, unique=True),
    "zone": st.one_of(st.none(), names),
    "acting": st.sampled_from([None, True, False]),
    "counter": st.integers(1, 3),
    "filters": st.sampled_from([(), ("f:1",)]),
})


@settings(max_examples=150, deadline=None)
@given(st.lists(registration, min_size=1, max_size=8), st.one_of(st.none(), names), st.booleans())
def test_joined_bodies_equal_encoded_ones(registrations, order_conf, acting):
    routes = new_routes()
    for n, r in enumerate(registrations):
        register(routes, *r["topics"], name=r["name"], addr="127.0.0.%d:%d" % (1 + r["broker_id"], 10 + n % 3),
                 broker_id=r["broker_id"], zone=r["zone"], acting=r["acting"], counter=r["counter"],
                 filters=r["filters"], base_topic=False)
    for topic in ["T1", "T2", "T3", "T\u00e9", "absent"]:
        for standard in (True, False):
            route = routes.pickup_topic_route(topic, acting)
            expected = None
            if route is not None:
                route.order_topic_conf = order_conf
                expected = encode.encode_topic_route(route, standard)
            assert routes.route_body(topic, standard, order_conf, acting) == expected


def expected_body(routes, topic, standard=True):
    route = routes.pickup_topic_route(topic, False)
    return None if route is None else encode.encode_topic_route(route, standard)


def test_a_topic_keeps_its_joined_body_until_something_it_was_built_from_changes():
    routes = new_routes()
    register(routes, "T1", "T2", name="b1", addr="127.0.0.1:10911")
    register(routes, "T2", "T3", name="b2", addr="127.0.0.2:10911")
    bodies = {t: routes.route_body(t, True) for t in ("T1", "T2", "T3")}
    joined = routes.joined_bodies(True, False)
    assert set(joined) >= {"T1", "T2", "T3"} and joined["T1"] is bodies["T1"]
    register(routes, "T2", "T3", name="b2", addr="127.0.0.2:10911")            # unchanged: all kept
    assert all(joined[t] is bodies[t] for t in bodies)
    register(routes, "T2", "T3", name="b2", addr="127.0.0.2:10911", broker_id=1)   # b2's BrokerData changes
    assert "T1" in joined and "T2" not in joined and "T3" not in joined
    bodies.update((topic, routes.route_body(topic, True)) for topic in ("T2", "T3"))
    # b1 takes T4 (and keeps T2's QueueData, as 4.9 does): the routes of T1, T2 and T3 are the same
    register(routes, "T1", "T4", name="b1", addr="127.0.0.1:10911", counter=2)
    assert all(joined[t] is bodies[t] for t in bodies)
    routes.delete_topic("T2")
    assert "T2" not in joined and joined["T1"] is bodies["T1"]
    for topic in ("T1", "T2", "T3", "T4"):
        assert routes.route_body(topic, True) == expected_body(routes, topic)


def test_joined_bodies_stay_within_their_bytes():
    routes = new_routes()
    topics = ["Topic%03d" % i for i in range(200)]
    register(routes, *topics, name="b1", addr="127.0.0.1:10911")
    register(routes, *topics[::2], name="b2", addr="127.0.0.2:10911")
    cache = routes.body_cache
    one = len(routes.route_body(topics[0], True))
    cache.set_max_bytes(one * 3 + 40 * 100)          # room for two or three bodies and a few dozen topics
    for _ in range(3):
        for topic in topics:
            assert routes.route_body(topic, True) == expected_body(routes, topic)
            assert cache.interned_bytes <= cache.max_bytes
    assert 0 < len(routes.joined_bodies(True, False)) < len(topics)


def test_many_brokers_changing_together_forget_their_topics_bodies_precisely_or_all_at_once():
    from namesrv.routes.bodycache import RouteBodyCache
    cache = RouteBodyCache()
    for topic in ("T1", "T2", "T3", "T4"):
        cache.remember_joined(topic, (True, False), b"body-" + topic.encode())
    cache.remember_route("T4", (True, False, None), b"whole")
    cache.forget_routes_of([{"T1"}, set(), {"T1", "T2"}])     # fewer than kept: exactly those go
    assert set(cache.joined[(True, False)]) == {"T3", "T4"} and "T4" in cache.routes
    assert cache.interned_bytes > 0 and cache.route_bytes > 0
    cache.forget_routes_of([{"T3"}, {"T3", "T4"}])             # as many as kept: all go at once
    assert cache.joined[(True, False)] == {} and cache.routes == {}
    assert cache.interned_bytes == 0 and cache.route_bytes == 0
    cache.forget_routes_of([])                                  # nothing named: nothing to do


def test_a_publication_that_drops_every_broker_forgets_every_body():
    routes = new_routes()
    register(routes, "T1", "T2", name="b1", addr="127.0.0.1:10911")
    register(routes, "T2", "T3", name="b2", addr="127.0.0.2:10911")
    register(routes, "T9", name="b3", addr="127.0.0.3:10911")
    for topic in ("T1", "T2", "T3", "T9"):
        routes.route_body(topic, True)
    joined = routes.joined_bodies(True, False)
    tables = routes.tables
    kept = [(d.cluster, d.broker_name, d.zone_name, d.enable_acting_master, sorted(d.broker_addrs.items()))
            for d in tables.broker_addr_table.values() if d.broker_name == "b3"]
    tables.update_broker_rows(kept, {"DefaultCluster": ["b3"]}, [])
    assert not {"T1", "T2", "T3"} & set(joined)
    for topic in ("T1", "T2", "T3", "T9"):
        assert routes.route_body(topic, True) == expected_body(routes, topic)
