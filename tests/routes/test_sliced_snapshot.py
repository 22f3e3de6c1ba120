"""Version 3 route snapshots (namesrv/routes/slicedsnapshot.py): written while the tables change, checked whole
before use, restored a chunk at a time."""

import msgpack
import pytest
from twisted.internet.task import Clock

from namesrv.routes import slicedsnapshot
from namesrv.routes.slicedsnapshot import SnapshotError, TablesReplaced, restore_steps, write_all, write_steps
from namesrv.routes.snapshot import open_sliced, restore_snapshot, snapshot_owner
from tests.routes.helpers import (CLUSTER, FakeConnection, RecordingEventLog, new_routes, populated, register,
                                  same_tables)


def fleet(clock=None, brokers=6, per_broker=40):
    routes = new_routes(clock or Clock())
    for b in range(brokers):
        register(routes, *["T%04d" % (b * 10 + j) for j in range(per_broker)], name="b%d" % b,
                 addr="127.0.0.%d:10911" % (b + 1), conn=FakeConnection())
    return routes


def test_a_round_trip_gives_back_every_table_and_the_owner():
    original = populated(Clock())
    data = write_all(original, owner={"instance": "i"})
    assert snapshot_owner(data) == {"instance": "i"}
    copy = new_routes(Clock())
    restore_snapshot(copy, data)
    copy.check_invariants()
    same_tables(original, copy)


def test_changes_while_it_is_written_are_in_the_file_as_they_are_at_its_end():
    clock = Clock()
    routes = fleet(clock)
    steps = write_steps(routes, chunk_topics=25)
    next(steps)
    register(routes, "T0000", "New1", name="b9", addr="127.0.0.9:10911")   # a new broker, a new topic
    next(steps)
    routes.delete_topic("T0012")                                          # a topic gone
    routes.unregister_broker(CLUSTER, "127.0.0.3:10911", "b2", 0)         # a broker gone: its maps move
    register(routes, "T0001", name="b0", addr="127.0.0.1:10911", counter=2)   # a broker drops topics
    try:
        while True:
            next(steps)
    except StopIteration as done:
        data = b"".join(done.value)
    assert open_sliced(data).patch_from < len(open_sliced(data).chunks)   # patch chunks were needed
    copy = new_routes(clock)
    restore_snapshot(copy, data)
    copy.check_invariants()
    same_tables(routes, copy)


def test_tables_replaced_while_it_is_written_make_it_start_again():
    routes = fleet()
    steps = write_steps(routes, chunk_topics=25)
    next(steps)
    routes.replace_tables(fleet())
    with pytest.raises(TablesReplaced):
        for _ in steps:
            pass
    assert routes.changes.trackers == []     # its tracker goes with it


def test_the_restore_serves_the_broker_tables_first_then_a_chunk_at_a_time():
    original = fleet()
    data = b"".join(_pieces(original, chunk_topics=30))
    events = RecordingEventLog()
    routes = new_routes(Clock(), events)
    steps = restore_steps(routes, open_sliced(data), 0.0)
    next(steps)
    assert routes.cluster_info_body() == original.cluster_info_body() and routes.topic_queue_table == {}
    seen = []
    for _ in steps:
        seen.append(len(routes.topic_queue_table))
    assert seen == sorted(seen) and len(seen) >= 3 and seen[-1] == len(original.topic_queue_table)
    routes.check_invariants()
    restored = sorted(t for e in events.named("topic_route_changed") for t in e.get("topics") or [e["topic"]])
    assert restored == sorted(original.topic_queue_table)


def _pieces(routes, **kwargs):
    steps = write_steps(routes, **kwargs)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def test_any_truncation_or_altered_byte_is_refused_before_anything_is_used():
    data = write_all(populated(Clock()))
    for cut in range(0, len(data), max(1, len(data) // 60)):
        with pytest.raises(SnapshotError):
            open_sliced(data[:cut])
    for position in range(0, len(data), max(1, len(data) // 60)):
        altered = bytearray(data)
        altered[position] ^= 0x40
        with pytest.raises(SnapshotError):
            open_sliced(bytes(altered))
    with pytest.raises(SnapshotError):
        open_sliced(data + b"more")


def _rewritten(data, header_change=None, chunks=None):
    """``data`` with its header changed and its chunks replaced, CRCs made right again: what a writer bug
    (not a disk) could produce."""
    import struct
    import zlib
    view = memoryview(data)
    _, length, _ = struct.unpack_from(">8sII", view)
    header = msgpack.unpackb(view[16:16 + length], raw=False, strict_map_key=False)
    offset, old = 16 + length, []
    for size, _, _ in header["chunks"]:
        old.append(msgpack.unpackb(view[offset:offset + size], raw=False))
        offset += size
    chunks = old if chunks is None else chunks(old)
    packed = [msgpack.packb(c, use_bin_type=True) for c in chunks]
    header["chunks"] = [[len(p), zlib.crc32(p), sum(len(n) for _, n in c)] for p, c in zip(packed, chunks)]
    header["patchFrom"] = len(packed)   # no patch
    if header_change:
        header_change(header)
    packed_header = msgpack.packb(header, use_bin_type=True)
    return struct.pack(">8sII", b"RMQNSv3\n", len(packed_header), zlib.crc32(packed_header)) + packed_header \
        + b"".join(packed)


@pytest.mark.parametrize("change", [
    lambda h: h.update(brokers=[["b", "c", None, False, [["x", "a:1"]]]]),
    lambda h: h.update(shapes=[[99]]),
    lambda h: h.update(clusters={"C": []}),
    lambda h: h.update(live=None),
    lambda h: h.update(version=2),
    lambda h: h.update(patchFrom=99),
])
def test_a_bad_header_is_refused_before_anything_is_used(change):
    with pytest.raises(SnapshotError):
        open_sliced(_rewritten(write_all(populated(Clock())), header_change=change))


@pytest.mark.parametrize("chunks", [
    lambda old: old + [old[0]],                                  # every topic twice
    lambda old: [[[0, ["T", 5]]]] + old[1:],                     # a topic that is not a string
    lambda old: [[[77, ["T"]]]] + old[1:],                       # a shape out of range
    lambda old: [[[None, ["T"]]]] + old[1:],                     # "gone" in a chunk that is not a patch
    lambda old: [[[0, ["T"]], [1, ["T"]]]] + old[1:],             # one topic in two maps of one chunk
])
def test_a_bad_chunk_stops_the_restore_and_the_tables_stay_as_they_were(chunks):
    clock = Clock()
    routes = new_routes(clock)
    register(routes, "Mine", name="mine", addr="m:1", conn=FakeConnection())
    data = _rewritten(write_all(populated(clock)), chunks=chunks)
    with pytest.raises(SnapshotError):
        restore_snapshot(routes, data)
    routes.check_invariants()
    assert routes.topic_names() == ["Mine", "baseTopic"]


def test_topics_left_with_a_broker_the_tables_lack_stop_the_restore():
    clock = Clock()
    data = write_all(populated(clock))
    ghost = _rewritten(data, header_change=lambda h: h["queueDatas"].__setitem__(0, ["ghost", 1, 1, 6, 0]))
    routes = new_routes(clock)
    with pytest.raises(SnapshotError):
        restore_snapshot(routes, ghost)
    assert routes.topic_names() == []


def test_msgpack_refuses_what_it_cannot_carry():
    from tests.routes.helpers import topic
    routes = new_routes()
    register(routes, topic("Huge", queues=10 ** 30), topic("T"), name="broker-h", addr="127.0.0.1:3")
    with pytest.raises(SnapshotError):
        write_all(routes)
    assert routes.changes.trackers == []
