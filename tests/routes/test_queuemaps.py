"""A replica's topics share one read-only map per distinct set of QueueData (namesrv/routes/queuemaps.py)."""

import pytest

from namesrv.readworkers.channel import delta
from namesrv.routes import RouteInfoManager, rows
from namesrv.routes.queuemaps import QueueMapInterner, SharedQueueMap
from tests.routes.helpers import new_routes, register, topic


def _fleet():
    main = new_routes()
    for b in range(4):
        names = ["T%03d" % t for t in range(b * 10, b * 10 + 30)]   # each topic on up to 3 brokers
        register(main, *names, name="b%d" % b, addr="10.0.0.%d:10911" % b, base_topic=False)
    return main


def _replica(main):
    replica = RouteInfoManager(share_queue_maps=True)
    delta.apply_topics(replica, delta.encode_topics(main, list(main.topic_queue_table)), reset=True)
    delta.apply_brokers(replica, delta.encode_brokers(main))
    return replica


def test_topics_with_the_same_queue_datas_share_one_map_and_answer_the_same():
    main = _fleet()
    replica = _replica(main)
    maps = {id(qmap) for qmap in replica.topic_queue_table.values()}
    assert len(maps) == len(rows.topic_shapes(main)["shapes"]) < len(main.topic_queue_table)
    assert replica.topic_queue_table["T012"] is replica.topic_queue_table["T015"]   # both on b0, b1
    for name in main.topic_queue_table:
        assert replica.route_body(name, False) == main.route_body(name, False)
        assert replica.route_body(name, True) == main.route_body(name, True)
    replica.check_invariants()


def test_a_part_replaces_one_topics_map_and_leaves_the_others_sharing_the_old_one():
    main = _fleet()
    replica = _replica(main)
    shared = replica.topic_queue_table["T015"]
    register(main, *["T%03d" % t for t in range(0, 30)], topic("T012", queues=2), name="b0", addr="10.0.0.0:10911",
             counter=2, base_topic=False)
    delta.apply_topics(replica, delta.encode_topics(main, ["T012"]))
    assert replica.topic_queue_table["T015"] is shared and shared["b0"].read_queue_nums == 8
    assert replica.topic_queue_table["T012"]["b0"].read_queue_nums == 2
    assert replica.route_body("T012", False) == main.route_body("T012", False)
    delta.apply_topics(replica, {"shapes": rows.topic_shapes(main, ["gone"]), "mappings": {"gone": None}})
    replica.check_invariants()


def test_a_shared_map_refuses_to_change_in_place():
    replica = _replica(_fleet())
    qmap = replica.topic_queue_table["T015"]
    assert type(qmap) is SharedQueueMap
    for change in (lambda: qmap.__setitem__("b9", None), lambda: qmap.pop("b0"), lambda: qmap.clear(),
                   lambda: qmap.update({}), lambda: qmap.setdefault("b9"), lambda: qmap.popitem(),
                   lambda: qmap.__delitem__("b0")):
        with pytest.raises(TypeError):
            change()
    assert sorted(qmap) == ["b0", "b1"]
    copy = qmap.copy()
    copy["b9"] = None   # a copy is a plain dict
    assert type(copy) is dict and "b9" not in qmap


def test_the_interner_keys_by_the_queue_datas_themselves():
    main = _fleet()
    interner = QueueMapInterner()
    one = interner.share(dict(main.topic_queue_table["T012"]))
    assert interner.share(dict(main.topic_queue_table["T015"])) is one
    assert interner.share(one) is one
    other = interner.share(dict(main.topic_queue_table["T005"]))
    assert other is not one and len(interner) == 2
    del one
    assert len(interner) == 1   # a map no topic holds goes
