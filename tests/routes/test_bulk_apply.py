"""The bulk paths of a registration's table apply (and of a batch of closes) against the per-topic ones
(hypothesis, differential).

``RouteTables.put_broker_topics`` creates never-seen topics in bulk and recognises a re-registration that
changes nothing; ``RouteChanges.operation`` names the broker-set changes of such a creation, or of a uniform
change, without a per-topic loop (``namesrv/routes/bulk.py``). Two managers run
the same operations, one with those shortcuts switched off: tables, their order, every emitted
event (fields and order) and every answer body must be identical.
"""

from contextlib import contextmanager, nullcontext

import pytest
from hypothesis import given, settings, strategies as st
from twisted.internet.task import Clock

from namesrv.routes import bulk
from namesrv.routes.model import QueueData
from namesrv.routes.tables import RouteTables
from tests.fakes import FakeConnection as Conn, RecordingEventLog as Events
from tests.routes.helpers import new_routes, topic, wrapper

TOPICS = ["t%03d" % i for i in range(150)]   # bulk paths start at 64 topics
NAMES = ["a", "b", "c"]
ADDRS = ["h:1", "h:2", "h:3"]
CONNS = [Conn(), Conn()]

topic_sets = st.one_of(
    st.integers(1, 150).map(lambda n: TOPICS[:n]),
    st.integers(0, 140).map(lambda start: TOPICS[start:start + 80]),
    st.lists(st.sampled_from(TOPICS), max_size=90, unique=True))
ops = st.one_of(
    st.tuples(st.just("register"), st.sampled_from(NAMES), st.sampled_from(ADDRS), st.integers(0, 1), topic_sets,
              st.sampled_from([6, 6, 4]), st.integers(1, 3), st.sampled_from([None, True]),
              st.sampled_from(CONNS), st.booleans()),
    st.tuples(st.just("unregister"), st.sampled_from(ADDRS), st.sampled_from(NAMES)),
    st.tuples(st.just("close"), st.sampled_from(CONNS)),
    st.tuples(st.just("close_all")),
    st.tuples(st.just("delete"), st.sampled_from(TOPICS)),
    st.tuples(st.just("perm"), st.sampled_from(NAMES), st.booleans()),
    st.tuples(st.just("register_topic"), st.sampled_from(TOPICS), st.lists(st.sampled_from(NAMES), min_size=1,
                                                                          max_size=2)),
)


def apply(routes, op):
    kind = op[0]
    if kind == "register":
        _, name, addr, broker_id, names, perm, counter, acting, conn, delete = op
        configs = [topic(t, perm=perm) for t in names] + [topic("baseTopic")]
        return routes.register_broker("c1", addr, name, broker_id, addr + "0", wrapper(*configs, counter=counter),
                                      [], conn, enable_acting_master=acting,
                                      delete_topic_with_broker_registration=delete)
    if kind == "unregister":
        return routes.unregister_broker("c1", op[1], op[2], 0)
    if kind == "close":
        return routes.on_connection_closed(op[1])
    if kind == "close_all":                    # a switch reboots: every broker's connection at once
        return routes.on_connections_closed(CONNS)
    if kind == "delete":
        return routes.delete_topic(op[1], None)
    if kind == "perm":
        return (routes.wipe_write_perm_of_broker if op[2] else routes.add_write_perm_of_broker)(op[1])
    return routes.register_topic(op[1], [QueueData(n, 2, 2, 6) for n in op[2]])


def state(routes):
    return ([(t, list(qmap.items())) for t, qmap in routes.topic_queue_table.items()],
            {name: sorted(topics) for name, topics in routes.tables.broker_topics.items()},
            routes.all_topic_list_body(), routes.cluster_info_body(),
            [routes.route_body(t, True) for t in sorted(routes.topic_queue_table)])


@contextmanager
def per_topic_only():
    """The shortcuts switched off: the reference behaviour."""
    patch = pytest.MonkeyPatch()
    patch.setattr(bulk, "none_known", lambda table, topics: False)
    patch.setattr(bulk, "nothing_to_put", lambda table, topics, broker_name, queue_datas, only_missing: False)
    patch.setattr(bulk, "created_alone_change", lambda created, touched, table: None)
    patch.setattr(bulk, "uniform_change", lambda touched, table: None)
    patch.setattr(RouteTables, "removals_together", lambda self: nullcontext())   # one broker at a time
    try:
        yield
    finally:
        patch.undo()


def replay_both(operations):
    """Apply each operation to two fresh tables, bulk paths on one and per-topic only on the other; after
    each, yield both results, both tables and both event logs."""
    fast_events, slow_events = Events(), Events()
    fast, slow = new_routes(Clock(), fast_events), new_routes(Clock(), slow_events)
    for op in operations:
        fast_result = apply(fast, op)
        with per_topic_only():
            slow_result = apply(slow, op)
        yield fast_result, slow_result, fast, slow, fast_events, slow_events


@settings(max_examples=150, deadline=None)
@given(operations=st.lists(ops, min_size=1, max_size=25))
def test_bulk_paths_change_nothing_observable(operations):
    for fast_result, slow_result, fast, slow, fast_events, slow_events in replay_both(operations):
        assert repr(fast_result) == repr(slow_result)
        assert fast_events.emitted == slow_events.emitted
        assert state(fast) == state(slow)
        fast.check_invariants()


def test_a_first_registration_is_one_event_naming_every_topic_in_order():
    events = Events()
    routes = new_routes(Clock(), events)
    names = ["t%03d" % i for i in range(200, 0, -1)]
    routes.register_broker("c1", "h:1", "a", 0, "h:10", wrapper(*[topic(t) for t in names]), [], Conn())
    assert events.named("topic_route_changed") == [{"topics": names, "before": [], "after": ["a"]}]
    assert list(routes.topic_queue_table) == names
    assert len({id(qmap["a"]) for qmap in routes.topic_queue_table.values()}) == 1   # one shared QueueData


def test_a_second_broker_of_the_same_topics_matches_the_per_topic_path():
    ops_ = [("register", "a", "h:1", 0, TOPICS[:120], 6, 1, None, CONNS[0], False),
            ("register", "b", "h:2", 0, TOPICS[:120], 6, 1, None, CONNS[1], False),
            ("close", CONNS[0]),
            ("register", "a", "h:1", 0, TOPICS[:100], 4, 2, None, CONNS[0], True)]
    for _, _, fast, slow, fast_events, slow_events in replay_both(ops_):
        pass
    assert fast_events.emitted == slow_events.emitted
    assert state(fast) == state(slow)
    changes = fast_events.named("topic_route_changed")
    assert changes[1] == {"topics": TOPICS[:120] + ["baseTopic"], "before": ["a"], "after": ["a", "b"]}


def test_an_unchanged_data_version_still_adds_the_topics_the_broker_lacks():
    ops_ = [("register", "a", "h:1", 0, TOPICS[:120], 6, 1, None, CONNS[0], False),
            ("register", "b", "h:2", 0, TOPICS[:100], 6, 1, None, CONNS[1], False),
            ("register", "b", "h:2", 0, TOPICS[:120], 6, 1, None, CONNS[1], False),   # same DataVersion
            ("register", "b", "h:2", 0, TOPICS[:120], 4, 2, None, CONNS[1], False)]   # new perm everywhere
    for _, _, fast, slow, fast_events, slow_events in replay_both(ops_):
        assert state(fast) == state(slow)
    assert fast_events.emitted == slow_events.emitted
    assert all(fast.topic_queue_table[t]["b"].perm == 4 for t in TOPICS[:120])
