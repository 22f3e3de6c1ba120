"""The bulk paths of the route tables against the plainest ones (hypothesis, differential).

Every change of QueueData is a batch of moves of topics between interned maps (``RouteTables._plan``):
which topics move is taken in one of three ways (a map's whole set, its set minus those that stay, the
names given), a registration's topics are grouped by QueueData in C when they share one, and an
operation of one batch names its topic_route_changed groups from the moves themselves
(``namesrv/routes/bulk.py``). Two managers run the same operations, one with each shortcut replaced by
the plainest way (the names given, a loop, the per-topic comparison of the topics' maps before and
after): tables, every emitted change and every answer body must be identical.
"""

from contextlib import contextmanager

import pytest
from hypothesis import given, settings, strategies as st
from twisted.internet.task import Clock

from namesrv.routes import bulk, tables as tables_module
from namesrv.routes.changes import RouteChanges
from namesrv.routes.model import QueueData
from tests.fakes import FakeConnection as Conn, RecordingEventLog as Events
from tests.routes.helpers import new_routes, topic, wrapper

TOPICS = ["t%03d" % i for i in range(150)]
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
              st.sampled_from(CONNS), st.booleans(), st.sampled_from([0, 0, 7])),
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
        _, name, addr, broker_id, names, perm, counter, acting, conn, delete, odd = op
        # every ``odd``-th topic with other queue settings: the registration's topics in several groups
        configs = [topic(t, perm=perm, queues=2 if odd and i % odd == 0 else 8) for i, t in enumerate(names)]
        configs.append(topic("baseTopic"))
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
    return ({t: dict(qmap) for t, qmap in routes.topic_queue_table.items()},
            {name: sorted(topics) for name, topics in routes.tables.broker_topics.items()},
            routes.all_topic_list_body(), routes.cluster_info_body(),
            [routes.route_body(t, True) for t in sorted(routes.topic_queue_table)])


def changes(events):
    return sorted((c["topic"], tuple(c["before"]), tuple(c["after"])) for c in events.topic_changes())


def _plain_grouping(queue_datas, names, olds):
    groups = {}
    for queue_data, name, old in zip(queue_datas, names, olds):
        group = groups.setdefault(id(queue_data), (queue_data, [], []))
        group[1].append(name)
        group[2].append(old)
    return list(groups.values())


def _plain_report(self, moves, table):
    touched = {}
    for topics, before, _, _ in reversed(moves):
        touched.update(dict.fromkeys(topics, before if before is not None else ()))
    for (before, after), topics in bulk.route_changes(touched, table).items():
        for name in topics:
            self.events.emit("topic_route_changed", topic=name, before=list(before), after=list(after))


@contextmanager
def plainest():
    """The shortcuts replaced by the plainest ways: the reference behaviour."""
    patch = pytest.MonkeyPatch()
    patch.setattr(tables_module, "_moving", lambda topics, count, wanted: set(wanted or topics) & topics)
    patch.setattr(bulk, "by_queue_data", _plain_grouping)
    patch.setattr(bulk, "uniform_queue_data", lambda broker_name, topic_configs, perm_mask: None)
    patch.setattr(bulk, "whole_maps", lambda table, names: ([], names))
    patch.setattr(RouteChanges, "_report", _plain_report)
    try:
        yield
    finally:
        patch.undo()


@settings(max_examples=150, deadline=None)
@given(operations=st.lists(ops, min_size=1, max_size=25))
def test_bulk_paths_change_nothing_observable(operations):
    fast_events, slow_events = Events(), Events()
    fast, slow = new_routes(Clock(), fast_events), new_routes(Clock(), slow_events)
    for op in operations:
        with pytest.MonkeyPatch.context() as patch:   # whole maps looked for at these sizes too
            patch.setattr(bulk, "WHOLE_MAPS_FROM", 4)
            patch.setattr(bulk, "WHOLE_MAP_SAMPLES", 3)
            fast_result = apply(fast, op)
        with plainest():
            slow_result = apply(slow, op)
        assert repr(fast_result) == repr(slow_result)
        assert changes(fast_events) == changes(slow_events)
        assert state(fast) == state(slow)
        fast.check_invariants()
        slow.check_invariants()


def test_a_first_registration_is_one_event_naming_every_topic():
    events = Events()
    routes = new_routes(Clock(), events)
    names = ["t%03d" % i for i in range(200, 0, -1)]
    routes.register_broker("c1", "h:1", "a", 0, "h:10", wrapper(*[topic(t) for t in names]), [], Conn())
    assert events.named("topic_route_changed") == [{"topics": sorted(names), "before": [], "after": ["a"]}]
    assert list(routes.topic_queue_table) == names
    assert len({id(qmap) for qmap in routes.topic_queue_table.values()}) == 1   # one shared map


def test_a_second_broker_of_the_same_topics_changes_their_map_in_place():
    events = Events()
    routes = new_routes(Clock(), events)
    apply(routes, ("register", "a", "h:1", 0, TOPICS[:120], 6, 1, None, CONNS[0], False, 0))
    first = routes.topic_queue_table[TOPICS[0]]
    topics, key = first.topics, first.key
    apply(routes, ("register", "b", "h:2", 0, TOPICS[:120], 6, 1, None, CONNS[1], False, 0))
    second = routes.topic_queue_table[TOPICS[0]]
    # every topic of the map got b: the map itself took the new QueueData (no table entry changed)
    assert second is first and sorted(second) == ["a", "b"] and second.topics is topics
    assert key not in routes.tables.queue_maps.maps and routes.tables.queue_maps.maps[second.key] is second
    assert list(routes.tables.queue_maps.by_broker["b"].values()) == [second]
    assert events.named("topic_route_changed")[1] == {"topics": sorted(TOPICS[:120] + ["baseTopic"]),
                                                      "before": ["a"], "after": ["a", "b"]}
    routes.check_invariants()


def test_a_part_of_a_map_moves_with_the_stored_strings():
    routes = new_routes(Clock())
    apply(routes, ("register", "a", "h:1", 0, TOPICS[:120], 6, 1, None, CONNS[0], False, 0))
    stored = {name: name for name in routes.topic_queue_table}
    fresh = ["".join(list(name)) for name in TOPICS[:100]]   # equal strings, other objects
    routes.register_broker("c1", "h:2", "b", 0, "h:20", wrapper(*[topic(t) for t in fresh]), [], CONNS[1])
    moved = routes.topic_queue_table[TOPICS[0]].topics
    assert len(moved) == 100 and all(name is stored[name] for name in moved)
    routes.check_invariants()


def test_an_unchanged_data_version_still_adds_the_topics_the_broker_lacks():
    ops_ = [("register", "a", "h:1", 0, TOPICS[:120], 6, 1, None, CONNS[0], False, 0),
            ("register", "b", "h:2", 0, TOPICS[:100], 6, 1, None, CONNS[1], False, 0),
            ("register", "b", "h:2", 0, TOPICS[:120], 6, 1, None, CONNS[1], False, 0),   # same DataVersion
            ("register", "b", "h:2", 0, TOPICS[:120], 4, 2, None, CONNS[1], False, 0)]   # new perm everywhere
    fast_events, slow_events = Events(), Events()
    fast, slow = new_routes(Clock(), fast_events), new_routes(Clock(), slow_events)
    for op in ops_:
        apply(fast, op)
        with plainest():
            apply(slow, op)
        assert state(fast) == state(slow)
    assert changes(fast_events) == changes(slow_events)
    assert all(fast.topic_queue_table[t]["b"].perm == 4 for t in TOPICS[:120])


def test_a_map_that_takes_other_queue_data_in_place_is_no_other_moves_target():
    """A master re-registering at its slave's address: its new topic goes to the map the old QueueData had
    (still holding baseTopic), and baseTopic leaves that map for new QueueData: the map cannot change in place."""
    ops_ = [("register", "a", "h:1", 1, TOPICS[1:81], 6, 1, True, CONNS[0], False, 0),
            ("register", "a", "h:1", 0, ["t000"], 4, 1, None, CONNS[0], True, 0)]
    fast, slow = new_routes(Clock(), Events()), new_routes(Clock(), Events())
    for op in ops_:
        apply(fast, op)
        with plainest():
            apply(slow, op)
        assert state(fast) == state(slow)
    assert fast.topic_queue_table["t000"]["a"].perm == 4 and fast.topic_queue_table["baseTopic"]["a"].perm == 6
    fast.check_invariants()


class _Map(dict):
    __hash__ = object.__hash__


@settings(max_examples=200, deadline=None)
@given(owners=st.lists(st.integers(0, 5), min_size=1, max_size=60), named=st.lists(st.booleans(), min_size=60,
                                                                                  max_size=60),
       order=st.randoms(use_true_random=False), samples=st.integers(1, 8))
def test_whole_maps_are_the_maps_all_of_whose_topics_are_named(owners, named, order, samples):
    """``bulk.whole_maps`` against its definition: every map it takes has all its topics named, the rest are
    the other names in their order, and a map it leaves has a topic not named (or was not sampled)."""
    maps = [_Map(broker=i) for i in range(6)]
    for qmap in maps:
        qmap.topics = set()
    table = {}
    for i, owner in enumerate(owners):
        if owner:   # 0: a topic the table does not have
            table["t%02d" % i] = maps[owner]
            maps[owner].topics.add("t%02d" % i)
    names = ["t%02d" % i for i in range(len(owners)) if named[i]]
    order.shuffle(names)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bulk, "WHOLE_MAPS_FROM", 1)
        patch.setattr(bulk, "WHOLE_MAP_SAMPLES", samples)
        taken, rest = bulk.whole_maps(table, names)
    assert len(set(map(id, taken))) == len(taken)
    for qmap in taken:
        assert qmap.topics <= set(names)
    covered = set().union(*(qmap.topics for qmap in taken))
    assert rest == [name for name in names if name not in covered]
    sampled = {id(table[name]) for name in names[::max(1, len(names) // samples)] if name in table}
    for qmap in maps:
        if id(qmap) in sampled and qmap.topics and qmap.topics <= set(names):
            assert qmap in taken


def test_a_registration_of_topics_on_a_few_maps_moves_them_whole():
    """A broker's first registration of topics its neighbours have: each map they are on moves as a whole
    (no look-up per topic), the new topics keep their order, and the tables are as the plainest path makes them."""
    events = Events()
    fast, slow = new_routes(Clock(), events), new_routes(Clock(), Events())
    names = ["n%04d" % i for i in range(1200)]
    for routes, plain in ((fast, False), (slow, True)):
        with (plainest() if plain else pytest.MonkeyPatch.context()):
            routes.register_broker("c1", "h:1", "a", 0, "h:10", wrapper(*names[:600]), [], Conn())
            routes.register_broker("c1", "h:2", "b", 0, "h:20", wrapper(*names[300:900]), [], Conn())
            looked_up = []
            routes.tables.topic_queue_table = _Counting(routes.tables.topic_queue_table, looked_up)
            routes.register_broker("c1", "h:3", "c", 0, "h:30", wrapper(*names[::-1]), [], Conn())
            routes.tables.topic_queue_table = dict(routes.tables.topic_queue_table)
            if not plain:   # the 900 topics on a, b or both were in three maps, taken whole
                assert len(looked_up) < 400
    assert state(fast) == state(slow)
    assert list(fast.topic_queue_table) == names[:900] + names[:899:-1]
    fast.check_invariants()


class _Counting(dict):
    """A topic table that counts the look-ups of its topics."""

    def __init__(self, table, looked_up):
        dict.__init__(self, table)
        self.looked_up = looked_up

    def get(self, key, default=None):
        self.looked_up.append(key)
        return dict.get(self, key, default)
