"""The Raft journal pysyncobj writes to: its log entries, its term and its vote, as checked records.

pysyncobj asks a journal for ``add``, ``clear``, ``deleteEntriesFrom``, ``deleteEntriesTo``,
indexing, and the term and vote (``setCurrentTerm``); ``hooks.py`` hands it this one instead of
its mmap file. Every change is a record appended to one file (``disk.py``):

    [u32 length][u32 crc32 of payload][payload: msgpack list]
    ["H", "rocketmq-namesrv-raft", 1]       the file's first record
    ["E", index, term, command]             a log entry
    ["X", index]                            entries from index on are gone (a follower's log cut back)
    ["T", term, votedFor]                   the term and this member's vote in it

Dropping old entries after a snapshot (``deleteEntriesTo``) and a snapshot received from the
leader (``clear``) rewrite the file whole, after the snapshot itself is made durable.

Nothing written is durable before ``sync()`` fires; ``written`` and ``synced`` count records so
that the member link can hold each message until what it depends on is on disk.

At start the records are replayed. A last record cut short or failing its checksum is a write a
crash interrupted: it is dropped (it was never synced, so nobody heard of it). A bad record with
good ones after it is damage, not a crash, and refuses to start (``JournalError``).
"""

import struct
import zlib

from twisted.internet import defer
from twisted.logger import Logger

from namesrv.controller.replication.codec import CodecError, check_command, pack, unpack

MAGIC = "rocketmq-namesrv-raft"
VERSION = 1
_HEAD = struct.Struct(">II")


class JournalError(ValueError):
    """The journal is damaged in a way a crash cannot explain: refuse to start rather than guess."""


def encode_record(fields):
    payload = pack(fields)
    return _HEAD.pack(len(payload), zlib.crc32(payload)) + payload


def decode_records(data):
    """(records, good_length): every whole, checked record, and where the last good one ends."""
    records, offset = [], 0
    while offset < len(data):
        if len(data) - offset < _HEAD.size:
            break
        length, crc = _HEAD.unpack_from(data, offset)
        end = offset + _HEAD.size + length
        if end > len(data):
            break
        payload = data[offset + _HEAD.size:end]
        if zlib.crc32(payload) != crc:
            if end < len(data):
                raise JournalError("journal record at byte %d fails its checksum and is not the last" % offset)
            break
        try:
            fields = unpack(payload)
        except CodecError as e:
            raise JournalError("journal record at byte %d: %s" % (offset, e))
        records.append(fields)
        offset = end
    return records, offset


class DurableJournal:
    """pysyncobj's Journal interface over checked, synced records."""

    log = Logger()

    def __init__(self, disk, first_sync=()):
        self.disk = disk
        #: files that must be durable before the journal is rewritten without the entries they replace
        self.first_sync = tuple(first_sync)
        self._entries = []
        self._term = 0
        self._voted_for = None
        self.written = 0        # records handed to the disk
        self.synced = 0         # records known durable
        self._syncing = None
        self._watchers = []     # (records needed, Deferred)
        self.failed = None      # the error of a sync that failed: this member must stop
        self.on_failure = None
        #: called with the number of records durable after each sync (the transport releases messages)
        self.synced_listeners = []
        self._load()

    # -- start ------------------------------------------------------------------------------------
    def _load(self):
        data = self.disk.read()
        records, good = decode_records(data)
        if good < len(data):
            self.log.warn("controller journal: a torn last record ({n} bytes) dropped: it was never synced",
                          n=len(data) - good)
            self.disk.truncate(good)
        if not records:
            self.disk.replace(encode_record(["H", MAGIC, VERSION]))
            self.written += 1
            return
        head = records[0]
        if not (isinstance(head, list) and head[:1] == ["H"] and head[1:] == [MAGIC, VERSION]):
            raise JournalError("not a rocketmq-namesrv Raft journal (header %r)" % (head,))
        for fields in records[1:]:
            self._replay(fields)

    def _replay(self, fields):
        try:
            kind = fields[0]
            if kind == "E":
                _, index, term, command = fields
                check_command(command)
                if self._entries and index != self._entries[-1][1] + 1:
                    raise JournalError("journal entry %d follows %d" % (index, self._entries[-1][1]))
                self._entries.append((command, int(index), int(term)))
            elif kind == "X":
                index = int(fields[1])
                self._entries = [e for e in self._entries if e[1] < index]
            elif kind == "T":
                self._term, self._voted_for = int(fields[1]), fields[2]
            else:
                raise JournalError("unknown journal record %r" % (kind,))
        except (CodecError, TypeError, ValueError, IndexError) as e:
            if isinstance(e, JournalError):
                raise
            raise JournalError("bad journal record %r: %s" % (fields[:3], e))

    # -- pysyncobj's interface ---------------------------------------------------------------------
    def add(self, command, idx, term):
        self._entries.append((command, idx, term))
        self._append(["E", idx, term, command])

    def clear(self):
        """pysyncobj installs a snapshot from the leader: the entries it replaces go, after the snapshot is durable."""
        self._entries = []
        self._rewrite()

    def deleteEntriesFrom(self, entryFrom):
        """Cut the log back from position ``entryFrom`` (a follower's conflicting tail)."""
        if entryFrom >= len(self._entries):
            return
        index = self._entries[entryFrom][1]
        del self._entries[entryFrom:]
        self._append(["X", index])

    def deleteEntriesTo(self, entryTo):
        """Drop the entries a snapshot now holds (positions before ``entryTo``)."""
        if entryTo <= 0:
            return
        self._entries = self._entries[entryTo:]
        self._rewrite()

    def __getitem__(self, item):
        return self._entries[item]

    def __len__(self):
        return len(self._entries)

    def setRaftCommitIndex(self, raftCommitIndex):
        """Not kept: Raft does not need it, and a restarted member learns it from the leader."""

    def getRaftCommitIndex(self):
        return 1

    def setCurrentTerm(self, term, votedForNodeId):
        if (term, votedForNodeId) == (self._term, self._voted_for):
            return
        self._term, self._voted_for = term, votedForNodeId
        self._append(["T", term, votedForNodeId])

    def getCurrentTerm(self):
        return self._term

    def getVotedForNodeId(self):
        return self._voted_for

    def onOneSecondTimer(self):
        pass

    def _destroy(self):
        close = getattr(self.disk, "close", None)
        if close is not None and self._syncing is None:
            close()

    # -- writing ------------------------------------------------------------------------------------
    def _append(self, fields):
        self.disk.append(encode_record(fields))
        self.written += 1

    def _rewrite(self):
        records = [encode_record(["H", MAGIC, VERSION])]
        if self._term or self._voted_for is not None:
            records.append(encode_record(["T", self._term, self._voted_for]))
        records.extend(encode_record(["E", idx, term, command]) for command, idx, term in self._entries)
        self.disk.replace(b"".join(records), self.first_sync)
        self.written += 1

    @property
    def dirty(self):
        return self.written > self.synced

    def sync(self):
        """Make everything written so far durable (one batch at a time); returns nothing, see ``when_synced``."""
        if self.failed is not None or self._syncing is not None or not self.dirty:
            return
        target = self.written
        self._syncing = self.disk.sync()
        self._syncing.addCallbacks(self._synced, self._sync_failed, callbackArgs=(target,))

    def _synced(self, _, target):
        self._syncing = None
        self.synced = max(self.synced, target)
        ready = [w for w in self._watchers if w[0] <= self.synced]
        self._watchers = [w for w in self._watchers if w[0] > self.synced]
        for _, d in ready:
            d.callback(None)
        for listener in list(self.synced_listeners):
            listener(self.synced)
        if self.dirty:
            self.sync()

    def _sync_failed(self, failure):
        self._syncing = None
        self.failed = failure.value
        self.log.critical("controller journal cannot be written ({err}): this controller leaves Raft until it "
                          "is restarted", err=failure.getErrorMessage())
        watchers, self._watchers = self._watchers, []
        for _, d in watchers:
            d.errback(failure)
        if self.on_failure is not None:
            self.on_failure(failure.value)

    def when_synced(self, records=None):
        """A Deferred firing once the first ``records`` records (default: all written so far) are durable."""
        records = self.written if records is None else records
        if self.failed is not None:
            return defer.fail(self.failed)
        if records <= self.synced:
            return defer.succeed(None)
        d = defer.Deferred()
        self._watchers.append((records, d))
        self.sync()
        return d
