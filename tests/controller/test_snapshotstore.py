"""The snapshot store pysyncobj is given: a snapshot durable before the log shrinks, chunks that say where they
belong (a chunk out of place starts the transfer again), and a snapshot larger than the store's bound refused."""

from pysyncobj.config import SERIALIZER_STATE
from twisted.internet import task

from namesrv.controller.replication import snapshot
from namesrv.controller.replication.disk import MemoryDisk
from namesrv.controller.replication.membership import Configuration
from namesrv.controller.replication.snapshotstore import FILE, SnapshotStore

NOOP = b"\x01"
CONFIG = Configuration.static({"n0": "10.0.0.1:9878", "n1": "10.0.0.2:9878"})


class Owner:
    def __init__(self, groups=0):
        self.state = {"applied": groups, "groups": [{"cluster": "c", "brokerName": "b%04d" % i, "nextBrokerId": 2,
                                                     "brokers": [[1, "10.0.0.9:10911", "x" * 64]], "masterId": 1,
                                                     "masterEpoch": 1, "syncStateSet": [1], "syncStateSetEpoch": 1}
                                                    for i in range(groups)]}
        self.loaded = []

    def snapshot_state(self):
        return self.state, CONFIG

    def snapshot_loaded(self, decoded):
        self.loaded.append(decoded)


def test_a_snapshot_counts_as_written_only_once_it_is_on_disk():
    clock = task.Clock()
    disk = MemoryDisk(clock, latency=0.05)
    store = SnapshotStore(disk, Owner(3))
    store.serialize((None, (NOOP, 10, 2), (NOOP, 9, 2), None), 9)
    assert store.checkSerializing() == (SERIALIZER_STATE.SERIALIZING, 9) and disk.read_file(FILE) is None
    clock.advance(0.05)
    assert store.checkSerializing() == (SERIALIZER_STATE.SUCCESS, 9)
    assert store.checkSerializing()[0] == SERIALIZER_STATE.NOT_SERIALIZING
    assert snapshot.decode(disk.read_file(FILE))[1] == (NOOP, 10, 2)


def _sent(store, node="n1"):
    chunks = []
    while True:
        chunk = store.getTransmissionData(node)
        chunks.append(chunk)
        if chunk[2]:
            return chunks


def _leader(groups, chunk_size):
    clock = task.Clock()
    leader = SnapshotStore(MemoryDisk(clock, latency=0), Owner(groups), chunk_size=chunk_size)
    leader.serialize((None, (NOOP, 10, 2), (NOOP, 9, 2), None), 9)
    clock.advance(0)
    return leader


def test_chunks_rebuild_the_snapshot_and_one_out_of_place_starts_the_transfer_again():
    leader = _leader(groups=50, chunk_size=1000)
    chunks = _sent(leader)
    assert len(chunks) > 3 and chunks[0][1] and not chunks[1][1]
    follower = SnapshotStore(MemoryDisk(task.Clock()), Owner())
    assert [follower.setTransmissionData(c) for c in chunks[:-1]] == [False] * (len(chunks) - 1)
    assert follower.setTransmissionData(chunks[-1]) and follower.decoded[1] == (NOOP, 10, 2)
    assert follower.installed == 1
    lossy = SnapshotStore(MemoryDisk(task.Clock()), Owner())
    for chunk in chunks[:1] + chunks[2:]:                       # the second chunk was lost
        assert not lossy.setTransmissionData(chunk)
    assert lossy.installed == 0 and lossy.current is None
    for chunk in _sent(leader):                                 # the leader starts again: it takes
        done = lossy.setTransmissionData(chunk)
    assert done and lossy.installed == 1


def test_a_snapshot_larger_than_the_bound_or_damaged_is_refused():
    leader = _leader(groups=50, chunk_size=1000)
    small = SnapshotStore(MemoryDisk(task.Clock()), Owner(), max_bytes=2000)
    assert not any(small.setTransmissionData(chunk) for chunk in _sent(leader))
    assert small.refused == 1 and small.current is None
    chunks = _sent(leader)
    raw, first, last = chunks[-1]
    chunks[-1] = (raw[:-1] + bytes([raw[-1] ^ 1]), first, last)
    damaged = SnapshotStore(MemoryDisk(task.Clock()), Owner())
    assert not any(damaged.setTransmissionData(chunk) for chunk in chunks) and damaged.current is None
