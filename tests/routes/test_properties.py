"""Random operation sequences keep the tables consistent (hypothesis).

After every step: ``check_invariants()``; every cached route body equals a fresh
encoding (the cache was invalidated whenever it had to be); replaying the
topic_route_changed events gives exactly each topic's broker names. At the end a
snapshot round trip reproduces every route.
"""

from hypothesis import given, settings, strategies as st
from twisted.internet.task import Clock

from namesrv.routes.bodies import encode
from namesrv.routes.model import QueueData
from namesrv.routes import slicedsnapshot
from namesrv.routes.snapshot import encode_snapshot, restore_snapshot
from tests.routes.helpers import FakeConnection, RecordingEventLog, new_routes, topic, wrapper

CLUSTERS = ["c1", "c2"]
NAMES = ["a", "b", "c"]
ADDRS = ["h:1", "h:2", "h:3", "h:4"]
TOPICS = ["t1", "t2", "t3", "t4"]
CONNS = [FakeConnection(), FakeConnection(), FakeConnection()]

register_op = st.tuples(
    st.just("register"), st.sampled_from(CLUSTERS), st.sampled_from(NAMES), st.sampled_from(ADDRS),
    st.integers(0, 2), st.lists(st.tuples(st.sampled_from(TOPICS), st.sampled_from([4, 6, 7]),
                                          st.integers(0, 3)), max_size=4),
    st.integers(1, 3), st.integers(0, 2), st.sampled_from([None, True, False]), st.sampled_from(CONNS + [None]),
    st.sampled_from([None, 10000]), st.booleans(), st.lists(st.sampled_from(["f:1", "f:2"]), max_size=2))
ops = st.one_of(
    register_op,
    register_op,
    st.tuples(st.just("unregister"), st.sampled_from(CLUSTERS), st.sampled_from(ADDRS), st.sampled_from(NAMES)),
    st.tuples(st.just("close"), st.sampled_from(CONNS)),
    st.tuples(st.just("expire"), st.sampled_from([5, 30, 115, 125])),
    st.tuples(st.just("heartbeat"), st.sampled_from(CLUSTERS), st.sampled_from(ADDRS)),
    st.tuples(st.just("delete"), st.sampled_from(TOPICS + ["baseTopic"]), st.sampled_from([None] + CLUSTERS)),
    st.tuples(st.just("perm"), st.sampled_from(NAMES), st.booleans()),
    st.tuples(st.just("register_topic"), st.sampled_from(TOPICS), st.lists(st.sampled_from(NAMES + ["z"]),
                                                                            min_size=1, max_size=3)),
    st.tuples(st.just("read"), st.sampled_from(TOPICS + ["baseTopic"]), st.booleans(), st.booleans()),
)


def apply(routes, clock, op):
    kind = op[0]
    if kind == "register":
        (_, cluster, name, addr, broker_id, topics, counter, state, acting, conn, timeout, delete,
         filters) = op
        configs = [topic(t, perm=perm, sys_flag=flag) for t, perm, flag in topics]
        if len(configs) != 1 or counter != 3:
            configs.append(topic("baseTopic"))  # else: a one-topic registration, refused for unknown ids
        routes.register_broker(cluster, addr, name, broker_id, addr + "0",
                               wrapper(*configs, counter=counter, state=state), filters, conn,
                               heartbeat_timeout_millis=timeout, enable_acting_master=acting,
                               delete_topic_with_broker_registration=delete)
    elif kind == "unregister":
        routes.unregister_broker(op[1], op[2], op[3], 0)
    elif kind == "close":
        routes.on_connection_closed(op[1])
    elif kind == "expire":
        clock.advance(op[1])
        routes.scan_not_active_brokers()
    elif kind == "heartbeat":
        routes.broker_heartbeat(op[1], op[2])
    elif kind == "delete":
        routes.delete_topic(op[1], op[2])
    elif kind == "perm":
        (routes.wipe_write_perm_of_broker if op[2] else routes.add_write_perm_of_broker)(op[1])
    elif kind == "register_topic":
        routes.register_topic(op[1], [QueueData(n, 2, 2, 6) for n in op[2]])
    elif kind == "read":
        routes.route_body(op[1], op[2], support_acting_master=op[3])
        routes.cluster_info_body()
        routes.all_topic_list_body()


def check(routes, replayed):
    routes.check_invariants()
    for topic_name, variants in routes.body_cache.routes.items():
        for (standard, acting, conf), body in variants.items():
            route = routes.pickup_topic_route(topic_name, acting)
            route.order_topic_conf = conf
            assert body == encode.encode_topic_route(route, standard), "stale cached route of %s" % topic_name
    assert routes.cluster_info_body() == encode.encode_cluster_info(routes.broker_addr_table,
                                                                    routes.cluster_addr_table)
    assert routes.all_topic_list_body() == encode.encode_topic_list(sorted(routes.topic_queue_table))
    for topic_name in set(replayed) | set(routes.topic_queue_table):
        assert replayed.get(topic_name, []) == routes.topic_broker_names(topic_name), topic_name


@settings(max_examples=300, deadline=None)
@given(st.lists(ops, min_size=5, max_size=60))
def test_random_operations_keep_the_tables_consistent(operations):
    clock = Clock()
    events = RecordingEventLog()
    routes = new_routes(clock, events)
    replayed = {}
    for op in operations:
        apply(routes, clock, op)
        for fields in events.topic_changes():
            assert replayed.get(fields["topic"], []) == fields["before"]
            replayed[fields["topic"]] = fields["after"]
        events.clear()
        check(routes, replayed)
    for encoded in (encode_snapshot(routes), slicedsnapshot.write_all(routes)):   # versions 2 and 3
        copy = new_routes(Clock())
        restore_snapshot(copy, encoded)
        copy.check_invariants()
        assert sorted(copy.topic_queue_table) == sorted(routes.topic_queue_table)
        for topic_name in routes.topic_queue_table:
            assert copy.route_body(topic_name, True) == routes.route_body(topic_name, True)
