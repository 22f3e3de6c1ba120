"""Warm restart snapshots: round trip, liveness after restore, all-or-nothing on bad data."""

import msgpack
import pytest
from twisted.internet.task import Clock

from namesrv.routes.slicedsnapshot import write_all
from namesrv.routes.snapshot import SnapshotError, encode_snapshot, restore_snapshot
from tests.routes.helpers import (
    BROKER, CLUSTER, MASTER_ADDR, SLAVE_ADDR, FakeConnection, RecordingEventLog, new_routes, populated, register,
    same_tables)


def test_round_trip_restores_every_table():
    clock = Clock()
    original = populated(clock)
    clock.advance(50)
    events = RecordingEventLog()
    restored = new_routes(clock, events)
    restore_snapshot(restored, encode_snapshot(original))
    restored.check_invariants()
    for topic in original.topic_names():
        assert restored.route_body(topic, True) == original.route_body(topic, True)
        assert restored.route_body(topic, False) == original.route_body(topic, False)
    assert restored.cluster_info_body() == original.cluster_info_body()
    assert restored.topic_queue_mapping_info_table == original.topic_queue_mapping_info_table
    assert restored.filter_server_table == original.filter_server_table
    live = restored.broker_live_table[(CLUSTER, MASTER_ADDR)]
    assert live.connection is None and live.last_update == 50
    assert live.data_version == original.broker_live_table[(CLUSTER, MASTER_ADDR)].data_version
    assert (live.broker_name, live.broker_id) == (BROKER, 0)
    changed = [e.get("topics") or [e["topic"]] for e in events.named("topic_route_changed")]
    assert sorted(t for topics in changed for t in topics) == ["T", "U", "V", "baseTopic"]
    assert len(changed) < 4                     # topics that changed alike share one event


def test_restored_brokers_expire_by_the_usual_rule_or_re_register():
    clock = Clock()
    restored = new_routes(clock)
    restore_snapshot(restored, encode_snapshot(populated(clock)))
    conn = FakeConnection()
    register(restored, "T", "U", conn=conn, acting=True, zone="z1", filters=["f:1"], state=3)
    clock.advance(11)
    assert [e.broker_addr for e in restored.scan_not_active_brokers()] == [SLAVE_ADDR]  # 10 s timeout
    clock.advance(110)
    assert sorted(e.broker_addr for e in restored.scan_not_active_brokers()) == sorted(["127.0.0.1:2", MASTER_ADDR])
    restored.check_invariants()
    assert restored.topic_names() == []


def test_restore_replaces_what_was_there():
    clock = Clock()
    routes = new_routes(clock)
    register(routes, "Old", name="old", addr="o:1", conn=FakeConnection())
    restore_snapshot(routes, encode_snapshot(populated(clock)))
    routes.check_invariants()
    assert "Old" not in routes.topic_queue_table and "old" not in routes.broker_addr_table


@pytest.mark.parametrize("data", [
    b"",
    b"garbage",
    msgpack.packb({"format": "something else", "version": 1}),
    msgpack.packb({"format": "rocketmq-namesrv-routes", "version": 99}),
    msgpack.packb([1, 2, 3]),
])
def test_foreign_or_old_data_is_refused(data):
    routes = populated(Clock())
    before = routes.cluster_info_body(), routes.topic_names()
    with pytest.raises(SnapshotError):
        restore_snapshot(routes, data)
    assert (routes.cluster_info_body(), routes.topic_names()) == before


def _corrupt(key, value):
    decoded = msgpack.unpackb(encode_snapshot(populated(Clock())), raw=False, strict_map_key=False)
    decoded[key] = value
    return msgpack.packb(decoded, use_bin_type=True)


def _version_1(**changes):
    """The snapshot as version 1 wrote it: every topic's QueueData rows."""
    from namesrv.routes import rows
    routes = populated(Clock())
    decoded = msgpack.unpackb(encode_snapshot(routes), raw=False, strict_map_key=False)
    del decoded["shapes"]
    decoded.update(version=1, topics=rows.topic_rows(routes))
    decoded.update(changes)
    return msgpack.packb(decoded, use_bin_type=True)


def _shapes(queue_datas, shapes, topics):
    return _corrupt("shapes", {"queueDatas": queue_datas, "shapes": shapes, "topics": topics})


def test_a_version_1_snapshot_is_still_read():
    routes = new_routes(Clock())
    restore_snapshot(routes, _version_1())
    original = populated(Clock())
    assert routes.topic_names() == original.topic_names()
    assert [routes.route_body(t, True) for t in routes.topic_names()] == \
        [original.route_body(t, True) for t in original.topic_names()]
    routes.check_invariants()


@pytest.mark.parametrize("data", [
    lambda: encode_snapshot(populated(Clock()))[:-7],
    lambda: _corrupt("brokers", [["b", "c", None, False, [["x", "a:1"]]]]),
    lambda: _version_1(topics={"T": [["ghost", 1, 1, 6, 0]]}),      # QueueData of an unknown broker
    lambda: _shapes([["ghost", 1, 1, 6, 0]], [[0]], {"T": 0}),      # ...in a version 2 snapshot
    lambda: _shapes([["b", 1, 1, 6, 0]], [[1]], {"T": 0}),          # an index out of range
    lambda: _shapes([["b", 1, 1, 6, 0], ["b", 2, 2, 6, 0]], [[0, 1]], {"T": 0}),   # one broker twice
    lambda: _shapes([["b", 1, 1, 6, 0]], [[0]], {"T": 1}),          # a shape out of range
    lambda: _shapes([["b", 1, 1, 6, 0]], [[0]], {"T": True}),       # not an index
    lambda: _shapes([["b", "one", 1, 6, 0]], [[0]], {"T": 0}),      # a bad row
    lambda: _corrupt("clusters", {"C": []}),
    lambda: _corrupt("live", [["c", "a", "b", 0, None, "soon", [1, 1, 0]]]),
    lambda: _corrupt("mappings", {"T": ["not", "a", "map"]}),
    lambda: _corrupt("live", None),
])
def test_corrupt_snapshot_is_refused_without_partial_load(data):
    clock = Clock()
    routes = new_routes(clock)
    conn = FakeConnection()
    register(routes, "Mine", name="mine", addr="m:1", conn=conn)
    with pytest.raises(SnapshotError):
        restore_snapshot(routes, data())
    routes.check_invariants()
    assert routes.topic_names() == ["Mine", "baseTopic"]
    assert len(routes.on_connection_closed(conn)) == 1


@pytest.mark.parametrize("encode", [encode_snapshot, write_all], ids=["whole", "sliced"])
def test_a_lone_surrogate_in_a_topic_name_survives_the_round_trip(encode):
    routes = new_routes()
    register(routes, "Odd\udc80Topic", "Plain")
    restored = new_routes()
    restore_snapshot(restored, encode(routes))
    assert restored.topic_names() == routes.topic_names()


def test_tables_msgpack_cannot_carry_are_not_saved_and_the_old_file_stays(tmp_path):
    from namesrv.storage.snapshotfile import RouteSnapshotFile
    from tests.fakes import run_turns, turn_scheduler
    from tests.routes.helpers import topic
    path = tmp_path / "routes.snapshot"
    routes = new_routes()
    register(routes, "T", "U")
    clock = Clock()
    file = RouteSnapshotFile(str(path), routes, clock, turn_scheduler(clock))
    file.save_now()
    saved = path.read_bytes()
    register(routes, topic("Huge", queues=10 ** 30), topic("T"), name="broker-h", addr="127.0.0.1:3")
    with pytest.raises(SnapshotError):
        encode_snapshot(routes)
    file.save_now()                        # logged, not raised: the shutdown goes on
    saving = file.save_in_background()     # a chunk per reactor turn
    ends = []
    saving.addBoth(ends.append)
    run_turns(clock)
    assert ends == [None]                  # logged, not raised: the timer keeps running
    assert path.read_bytes() == saved


class Tracker(set):
    full = False


def test_a_delta_brings_the_first_copy_up_to_date():
    from namesrv.routes.snapshot import apply_snapshot_delta, encode_snapshot_delta
    clock = Clock()
    old = populated(clock)
    tracker = old.track_topic_changes(Tracker())
    copy = new_routes(clock)
    restore_snapshot(copy, encode_snapshot(old))
    # meanwhile, on the old process: a new broker, a topic gone, a broker gone, a mapping changed
    register(old, "T", "W", cluster="C3", name="broker-c", addr="127.0.0.1:3")
    old.delete_topic("V")
    old.unregister_broker(CLUSTER, SLAVE_ADDR, BROKER, 1)
    register(old, "T", "U", conn=FakeConnection(), acting=True, zone="z1", counter=2,
             mappings={"U": {"bname": BROKER, "currIdMap": {0: 0}, "topic": "U", "epoch": 3}})
    apply_snapshot_delta(copy, encode_snapshot_delta(old, tracker))
    same_tables(old, copy)
    copy.check_invariants()


def test_a_delta_that_does_not_fit_is_refused():
    from namesrv.routes.snapshot import apply_snapshot_delta, encode_snapshot_delta
    old = populated(Clock())
    with pytest.raises(SnapshotError):
        apply_snapshot_delta(new_routes(Clock()), b"garbage")
    data = msgpack.unpackb(encode_snapshot_delta(old, []), raw=False, strict_map_key=False)
    data["shapes"] = {"queueDatas": [["ghost", 1, 1, 6, 0]], "shapes": [[0]], "topics": {"X": 0}}
    with pytest.raises(SnapshotError):   # QueueData of a broker the tables do not have
        apply_snapshot_delta(new_routes(Clock()), msgpack.packb(data, use_bin_type=True))
