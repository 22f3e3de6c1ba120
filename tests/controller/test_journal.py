"""The Raft journal and its disk: what survives a crash or a power cut, and what refuses to start."""

import os
import pytest
from twisted.internet import defer, task

from namesrv.controller.replication import snapshot
from namesrv.controller.replication.codec import encode_events
from namesrv.controller.replication.disk import FileDisk, MemoryDisk
from namesrv.controller.replication.membership import Configuration
from namesrv.controller.replication.journal import DurableJournal, JournalError, encode_record

NOOP = b"\x01"


def _journal(clock, disk=None):
    return DurableJournal(disk or MemoryDisk(clock, latency=0.01))


def test_records_replay_entries_cuts_and_the_vote():
    clock = task.Clock()
    disk = MemoryDisk(clock, latency=0.01)
    journal = _journal(clock, disk)
    journal.add(NOOP, 1, 0)
    journal.setCurrentTerm(3, "n1")
    for index in range(2, 6):
        journal.add(encode_events([{"type": "apply_broker_id", "brokerId": index}]), index, 3)
    journal.deleteEntriesFrom(3)             # positions 3.. (indexes 4, 5) cut back
    journal.add(NOOP, 4, 4)
    journal.setCurrentTerm(4, None)
    done = journal.when_synced()
    clock.advance(0.02)
    assert done.called and journal.synced == journal.written
    again = _journal(clock, disk)
    assert [(i, t) for _, i, t in again] == [(1, 0), (2, 3), (3, 3), (4, 4)]
    assert (again.getCurrentTerm(), again.getVotedForNodeId()) == (4, None)


def test_nothing_is_durable_before_its_sync_and_a_power_cut_loses_exactly_that():
    clock = task.Clock()
    disk = MemoryDisk(clock, latency=0.01)
    journal = _journal(clock, disk)
    journal.add(NOOP, 1, 0)
    journal.when_synced()
    clock.advance(0.02)
    journal.setCurrentTerm(7, "n2")          # a vote not yet synced
    journal.sync()
    disk.power_cut()                         # the fsync under way never finished
    after = _journal(clock, disk)
    assert after.getCurrentTerm() == 0 and after.getVotedForNodeId() is None and len(after) == 1


def test_a_torn_last_record_is_dropped_and_a_damaged_middle_refuses_to_start():
    clock = task.Clock()
    disk = MemoryDisk(clock)
    journal = _journal(clock, disk)
    for index in (1, 2, 3):
        journal.add(NOOP, index, 1)
    journal.when_synced()
    clock.advance(0.01)
    whole = disk.durable
    disk.durable = whole[:-3]                # the last record cut short
    assert len(_journal(clock, disk)) == 2
    assert len(disk.durable) < len(whole) - 3  # and cut off the file
    damaged = bytearray(whole)
    damaged[len(encode_record(["H", "rocketmq-namesrv-raft", 1])) + 12] ^= 0xFF
    disk.durable = bytes(damaged)
    with pytest.raises(JournalError):
        _journal(clock, disk)


def test_the_snapshot_and_the_journal_rewrite_behind_it_go_to_disk_in_order(tmp_path):
    """The snapshot is a sibling file written through the journal's own queue: written, fsynced and renamed
    before the rewrite that drops the entries it holds, in the same thread, in order."""
    from twisted.internet import reactor
    done = []
    path = str(tmp_path / "raft.journal")

    class Disk(FileDisk):
        def _write_sibling(self, name, data):
            done.append(("file", name))
            return FileDisk._write_sibling(self, name, data)

        def _replace(self, data):
            done.append(("replace", os.path.exists(str(tmp_path / "raft.snapshot"))))
            return FileDisk._replace(self, data)

    disk = Disk(path, reactor)
    disk._write = lambda ops: defer.maybeDeferred(disk._write_now, ops)      # the thread's work, inline
    journal = DurableJournal(disk)
    for index in range(1, 6):
        journal.add(NOOP, index, 1)
    journal.setCurrentTerm(1, "n0")
    disk.write_file("raft.snapshot", snapshot.encode({"applied": 0, "groups": []}, (NOOP, 3, 1), (NOOP, 2, 1),
                                                     Configuration.static({"n0": "10.0.0.1:9878"})))
    journal.deleteEntriesTo(2)               # entries before position 2 are in the snapshot now
    assert journal.when_synced().called
    assert done[-2:] == [("file", "raft.snapshot"), ("replace", True)]
    again = DurableJournal(FileDisk(path, reactor))
    assert [i for _, i, _ in again] == [3, 4, 5] and again.getVotedForNodeId() == "n0"
    assert [name for name in os.listdir(tmp_path) if name.endswith(".tmp")] == []


def test_the_temp_files_a_crash_left_are_removed_at_start_never_while_a_batch_is_written(tmp_path):
    """Written through storage/atomicfile.py: a crash mid-replacement leaves the old file and a temp file."""
    from twisted.internet import reactor
    left = ("raft.snapshot.tmp", "raft.snapshot.a1b2.tmp", "raft.journal.c3d4.tmp")
    for name in left + ("fenced.e5.tmp",):
        (tmp_path / name).write_bytes(b"torn")
    disk = FileDisk(str(tmp_path / "raft.journal"), reactor)
    disk._write = lambda ops: defer.Deferred()   # a batch that is still being written
    disk.write_file("fenced", b"reason")
    disk.sync()
    assert disk.read_file("fenced") is None and (tmp_path / "fenced.e5.tmp").exists()
    disk = FileDisk(str(tmp_path / "raft.journal"), reactor)
    assert disk.read() == b"" and disk.read_file("raft.snapshot") is None
    assert sorted(os.listdir(tmp_path)) == ["fenced.e5.tmp"]


def test_a_disk_that_cannot_be_written_stops_the_member():
    clock = task.Clock()

    class Broken(MemoryDisk):
        def _write(self, ops):
            return defer.fail(OSError(28, "No space left on device"))

    journal = _journal(clock, Broken(clock))
    failed = []
    journal.on_failure = failed.append
    journal.add(NOOP, 1, 0)
    d = journal.when_synced()
    errors = []
    d.addErrback(errors.append)
    assert failed and errors and journal.failed is not None


def test_snapshots_are_checked_before_they_replace_the_state():
    members = Configuration.static({"n0": "10.0.0.1:9878", "n1": "10.0.0.2:9878"})
    data = snapshot.encode({"applied": 4, "groups": []}, (NOOP, 9, 2), (NOOP, 8, 2), members)
    state, last, prev, configuration = snapshot.decode(data)
    assert state["applied"] == 4 and last == (NOOP, 9, 2) and configuration == members
    with pytest.raises(snapshot.SnapshotError):
        snapshot.decode(data[:-1] + bytes([data[-1] ^ 1]))
    import pickle
    with pytest.raises(snapshot.SnapshotError):
        snapshot.decode(pickle.dumps({"state": {}}))


def test_entries_cut_and_sent_again_the_same_are_never_cut_on_disk():
    """pysyncobj cuts a follower's log whenever the leader sends entries it has already, then appends the same
    entries: a crash between the two writes must not leave the log without entries it acknowledged. Only a
    cut whose entries do not come back the same reaches the disk."""
    clock = task.Clock()
    disk = MemoryDisk(clock, latency=0.01)
    journal = _journal(clock, disk)
    for index in range(1, 6):
        journal.add(NOOP, index, 1)
    journal.sync()
    clock.advance(0.02)
    durable = len(disk.durable)
    journal.deleteEntriesFrom(2)                 # positions 2.. are entries 3, 4, 5
    journal.add(NOOP, 3, 1)
    journal.add(NOOP, 4, 1)
    assert len(disk.durable) == durable and disk._ops.items == []     # nothing written for 3 and 4
    journal.add(encode_events([{"type": "x"}]), 5, 2)      # entry 5 of another term: a real conflict
    assert [i for _, i, _ in journal] == [1, 2, 3, 4, 5] and journal.dirty
    journal.sync()
    clock.advance(0.02)
    assert [(i, t) for _, i, t in DurableJournal(_Durable(disk.durable))] == [(1, 1), (2, 1), (3, 1), (4, 1), (5, 2)]
    journal.deleteEntriesFrom(3)                 # entries 4, 5 go and nothing comes back: the cut is written
    assert journal.dirty
    journal.sync()
    clock.advance(0.02)
    assert [i for _, i, _ in DurableJournal(_Durable(disk.durable))] == [1, 2, 3]


class _Durable(MemoryDisk):
    def __init__(self, data):
        MemoryDisk.__init__(self, task.Clock())
        self.durable = data


def test_a_journal_of_version_1_is_read_and_written_again_as_version_2_and_an_unknown_one_refused():
    older = encode_record(["H", "rocketmq-namesrv-raft", 1]) + encode_record(["E", 1, 0, NOOP]) + \
        encode_record(["T", 3, "n1"])
    journal = DurableJournal(_Durable(older))
    assert [i for _, i, _ in journal] == [1] and journal.getCurrentTerm() == 3
    journal.sync()
    journal.disk.clock.advance(1)
    assert journal.disk.durable.startswith(encode_record(["H", "rocketmq-namesrv-raft", 2]))
    newer = encode_record(["H", "rocketmq-namesrv-raft", 3]) + encode_record(["E", 1, 0, NOOP])
    with pytest.raises(JournalError, match="format version 3; this server reads versions 1-2"):
        DurableJournal(_Durable(newer))


def test_a_snapshot_of_version_1_is_read_and_one_of_an_unknown_version_refused_naming_both():
    import struct
    import zlib
    from namesrv.controller.replication.codec import pack

    def framed(value):
        payload = pack(value)
        return struct.pack(">II", len(payload), zlib.crc32(payload)) + payload
    v1 = {"format": "rocketmq-namesrv-raft-snapshot", "version": 1, "state": {"applied": 2, "groups": []},
          "last": [NOOP, 5, 1], "prev": [NOOP, 4, 1], "members": ["n0", "n1"]}
    state, last, prev, configuration = snapshot.decode(framed(v1))
    assert last == (NOOP, 5, 1) and configuration is None       # the static configuration applies
    with pytest.raises(snapshot.SnapshotError, match="format version 7; this server reads versions 1-2"):
        snapshot.decode(framed(dict(v1, version=7)))
