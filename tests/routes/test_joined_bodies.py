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
