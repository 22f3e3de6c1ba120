"""Topics share one read-only map per distinct set of QueueData (namesrv/routes/queuemaps.py), in the main
process's tables and in a replica's alike."""

import pytest

from namesrv.readworkers.channel import delta
from namesrv.routes import RouteInfoManager, rows
from namesrv.routes.model import QueueData, shared_queue_data
from namesrv.routes.queuemaps import QueueMap, QueueMaps
from tests.routes.helpers import new_routes, register, topic


def _fleet():
    main = new_routes()
    for b in range(4):
        names = ["T%03d" % t for t in range(b * 10, b * 10 + 30)]   # each topic on up to 3 brokers
        register(main, *names, name="b%d" % b, addr="10.0.0.%d:10911" % b, base_topic=False)
    return main


def _replica(main):
    replica = RouteInfoManager()
    delta.apply_topics(replica, delta.encode_topics(main, list(main.topic_queue_table)), reset=True)
    delta.apply_brokers(replica, delta.encode_brokers(main))
    return replica


@pytest.mark.parametrize("which", ["main", "replica"])
def test_topics_with_the_same_queue_datas_share_one_map_and_answer_the_same(which):
    main = _fleet()
    routes = main if which == "main" else _replica(main)
    maps = {id(qmap) for qmap in routes.topic_queue_table.values()}
    assert len(maps) == len(rows.topic_shapes(main)["shapes"]) == len(routes.tables.queue_maps) \
        < len(main.topic_queue_table)
    assert routes.topic_queue_table["T012"] is routes.topic_queue_table["T015"]   # both on b0, b1
    assert routes.topic_queue_table["T012"].topics == {"T%03d" % t for t in range(10, 20)}
    for name in main.topic_queue_table:
        assert routes.route_body(name, False) == main.route_body(name, False)
        assert routes.route_body(name, True) == main.route_body(name, True)
    routes.check_invariants()


def test_a_part_replaces_one_topics_map_and_leaves_the_others_sharing_the_old_one():
    main = _fleet()
    replica = _replica(main)
    shared = replica.topic_queue_table["T015"]
    register(main, *["T%03d" % t for t in range(0, 30)], topic("T012", queues=2), name="b0", addr="10.0.0.0:10911",
             counter=2, base_topic=False)
    delta.apply_topics(replica, delta.encode_topics(main, ["T012"]))
    assert replica.topic_queue_table["T015"] is shared and shared["b0"].read_queue_nums == 8
    assert "T012" not in shared.topics
    assert replica.topic_queue_table["T012"]["b0"].read_queue_nums == 2
    assert replica.route_body("T012", False) == main.route_body("T012", False)
    delta.apply_topics(replica, {"shapes": rows.topic_shapes(main, ["gone"]), "mappings": {"gone": None}})
    replica.check_invariants()


def test_a_shared_map_refuses_to_change_in_place():
    routes = _fleet()
    qmap = routes.topic_queue_table["T015"]
    assert type(qmap) is QueueMap
    for change in (lambda: qmap.__setitem__("b9", None), lambda: qmap.pop("b0"), lambda: qmap.clear(),
                   lambda: qmap.update({}), lambda: qmap.setdefault("b9"), lambda: qmap.popitem(),
                   lambda: qmap.__delitem__("b0")):
        with pytest.raises(TypeError):
            change()
    assert sorted(qmap) == ["b0", "b1"]
    copy = qmap.copy()
    copy["b9"] = None   # a copy is a plain dict
    assert type(copy) is dict and "b9" not in qmap


def test_the_maps_are_keyed_by_the_queue_datas_themselves_and_go_with_their_last_topic():
    maps = QueueMaps()
    a, b = shared_queue_data(QueueData("a", 8, 8, 6)), shared_queue_data(QueueData("b", 8, 8, 6))
    one = maps.get([a, b])
    assert maps.get([b, a]) is one and maps.of(dict(one)) is one and maps.of(one) is one
    assert maps.with_queue_data(maps.get([a]), b) is one
    assert maps.without(one, {"b"}) is maps.get([a]) and maps.without(one, {"a", "b"}) is None
    assert set(maps.by_broker) == {"a", "b"} and len(maps.by_broker["a"]) == 2
    maps.release(one)
    assert len(maps) == 1 and set(maps.by_broker) == {"a"}
    assert maps.with_queue_data(maps.get([a]), b) is not one   # a new map: the released one is gone


def test_a_mass_disconnect_moves_each_maps_topics_once():
    routes = _fleet()
    before = len(routes.tables.queue_maps)
    routes.registrations.on_connections_closed([])   # nothing bound: nothing moves
    with routes.changes.operation(routes.tables), routes.tables.removals_together():
        for b in (0, 1):
            routes.tables.remove_broker_queue_datas("b%d" % b)
    assert len(routes.tables.queue_maps) < before
    assert all(not {"b0", "b1"} & set(qmap) for qmap in routes.topic_queue_table.values())
    assert "T015" not in routes.topic_queue_table and sorted(routes.topic_queue_table["T025"]) == ["b2"]
    routes.check_invariants()
