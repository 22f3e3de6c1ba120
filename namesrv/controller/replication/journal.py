"""The Raft journal pysyncobj writes to: its log entries, its term and its vote, as checked records.

pysyncobj asks a journal for ``add``, ``clear``, ``deleteEntriesFrom``, ``deleteEntriesTo``,
indexing, and the term and vote (``setCurrentTerm``); ``hooks.py`` hands it this one instead of
its mmap file. Every change is a record appended to one file (``disk.py``):

    [u32 length][u32 crc32 of payload][payload: msgpack list]
    ["H", "rocketmq-namesrv-raft", 2]       the file's first record: the format and its version
    ["E", index, term, command]             a log entry
    ["X", index]                            entries from index on are gone (a follower's log cut back)
    ["T", term, votedFor]                   the term and this member's vote in it

Dropping old entries after a snapshot (``deleteEntriesTo``) and a snapshot received from the
leader (``clear``) rewrite the file whole; the snapshot goes through the same disk queue first
(``snapshots.py``), so it is durable before the entries it replaces are gone.

Format versions: 1 (no configuration entries) and 2 are read; a journal of another version is
refused in one line naming both (``JournalError``), before anything is replayed.

The journal also knows the group's configuration in force (``membership.py``): the last
configuration entry in the log, else ``base`` (the snapshot's, or the static one). It is told to
``on_configuration`` whenever an entry adds one or a cut removes one.

Nothing written is durable before ``sync()`` fires; ``written`` and ``synced`` count records so
that the member link can hold each message until what it depends on is on disk.

At start the records are replayed. A last record cut short or failing its checksum is a write a
crash interrupted: it is dropped (it was never synced, so nobody heard of it). A bad record with
good ones after it is damage, not a crash, and refuses to start (``JournalError``).
"""

from collections.abc import Callable
from typing import Any

import struct
import zlib

from twisted.internet import defer
from twisted.logger import Logger
from twisted.python.failure import Failure

from namesrv.controller.replication import membership
from namesrv.controller.replication.codec import CodecError, check_command, pack, unpack
from namesrv.controller.replication.disk import Disk
from namesrv.controller.replication.membership import Configuration
from namesrv.controller.replication.snapshot import Entry

MAGIC = "rocketmq-namesrv-raft"
VERSION = 2
READS = (1, 2)
_HEAD = struct.Struct(">II")


class JournalError(ValueError):
    """The journal is damaged in a way a crash cannot explain: refuse to start rather than guess."""


def encode_record(fields: list[Any]) -> bytes:
    payload = pack(fields)
    return _HEAD.pack(len(payload), zlib.crc32(payload)) + payload


def decode_records(data: bytes) -> tuple[list[Any], int]:
    """(records, good_length): every whole, checked record (decoded msgpack, Any: ``_replay`` checks it), and
    where the last good one ends."""
    records: list[Any] = []
    offset = 0
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

    def __init__(self, disk: Disk, base: tuple[int, Configuration] | None = None) -> None:
        self.disk = disk
        #: (index, Configuration) the configuration in force before any configuration entry of the log
        self.base = base
        #: [(index, Configuration)] of the configuration entries in the log, in order
        self.configurations: list[tuple[int, Configuration]] = []
        #: called with the configuration in force whenever it changes
        self.on_configuration: Callable[[Configuration], object] | None = None
        self.size = 0           # bytes of the journal file (what was handed to the disk)
        self._entries: list[Entry] = []
        #: entries cut from the log and not written as cut yet (see deleteEntriesFrom)
        self._cut: list[Entry] = []
        self._term = 0
        self._voted_for: str | None = None
        self.written = 0        # records handed to the disk
        self.synced = 0         # records known durable
        self._syncing: defer.Deferred[None] | None = None
        self._watchers: list[tuple[int, defer.Deferred[None]]] = []     # (records needed, Deferred)
        self.failed: BaseException | None = None      # the error of a sync that failed: this member must stop
        self.on_failure: Callable[[BaseException], object] | None = None
        #: called with the number of records durable after each sync (the transport releases messages)
        self.synced_listeners: list[Callable[[int], object]] = []
        self._load()

    # -- start ------------------------------------------------------------------------------------
    def _load(self) -> None:
        data = self.disk.read()
        records, good = decode_records(data)
        if good < len(data):
            self.log.warn("controller journal: a torn last record ({n} bytes) dropped: it was never synced",
                          n=len(data) - good)
            self.disk.truncate(good)
        self.size = good
        if not records:
            header = encode_record(["H", MAGIC, VERSION])
            self.disk.replace(header)
            self.size = len(header)
            self.written += 1
            return
        head = records[0]
        if not (isinstance(head, list) and len(head) == 3 and head[:2] == ["H", MAGIC]):
            raise JournalError("not a rocketmq-namesrv Raft journal (header %r)" % (head[:3],))
        if head[2] not in READS:
            raise JournalError("the journal is format version %r; this server reads versions %s (a newer server "
                               "wrote it: run that version, or move this member's store aside to let it catch up "
                               "from the others)" % (head[2], "-".join(map(str, (READS[0], READS[-1])))))
        for fields in records[1:]:
            self._replay(fields)
        if head[2] != VERSION:
            self._rewrite()           # an older format is read, then written again in this one

    def _replay(self, fields: Any) -> None:
        try:
            kind = fields[0]
            if kind == "E":
                _, index, term, command = fields
                check_command(command)
                if self._entries and index != self._entries[-1][1] + 1:
                    raise JournalError("journal entry %d follows %d" % (index, self._entries[-1][1]))
                self._entries.append((command, int(index), int(term)))
                self._note(command, int(index))
            elif kind == "X":
                index = int(fields[1])
                self._entries = [e for e in self._entries if e[1] < index]
                self.configurations = [c for c in self.configurations if c[0] < index]
            elif kind == "T":
                self._term, self._voted_for = int(fields[1]), fields[2]
            else:
                raise JournalError("unknown journal record %r" % (kind,))
        except (CodecError, TypeError, ValueError, IndexError) as e:
            if isinstance(e, JournalError):
                raise
            raise JournalError("bad journal record %r: %s" % (fields[:3], e))

    # -- the configuration in force ---------------------------------------------------------------
    def _note(self, command: bytes, index: int) -> bool:
        if membership.is_configuration(command):
            self.configurations.append((index, membership.decode_command(command)))
            return True
        return False

    def configuration(self) -> tuple[int, Configuration] | None:
        """(index, Configuration) in force: the last configuration entry, else ``base``."""
        if self.configurations and (self.base is None or self.configurations[-1][0] > self.base[0]):
            return self.configurations[-1]
        return self.base

    def set_base(self, index: int, configuration: Configuration) -> None:
        """A snapshot holds ``configuration`` as of ``index`` (loaded at start, or received from the leader)."""
        before = self.configuration()
        self.base = (index, configuration)
        self.configurations = [c for c in self.configurations if c[0] > index]
        self._changed(before)

    def _changed(self, before: tuple[int, Configuration] | None) -> None:
        after = self.configuration()
        if after != before and self.on_configuration is not None and after is not None:
            self.on_configuration(after[1])

    def uncommitted_configurations(self, commit_index: int) -> list[int]:
        return [index for index, _ in self.configurations if index > commit_index]

    def reconcile(self, prev: Entry, last: Entry) -> bool:
        """At start, before pysyncobj reads the snapshot whose last two entries are ``prev`` and ``last``: keep
        the log from ``prev`` on when it holds both (a crash fell between the snapshot and the journal's
        rewrite, or nothing did), so that pysyncobj does not drop the entries after the snapshot. False
        when the log does not hold them (a snapshot received from the leader replaces it)."""
        positions = {entry[1]: i for i, entry in enumerate(self._entries)}
        at = positions.get(prev[1])
        if at is None or self._entries[at] != tuple(prev) or at + 1 >= len(self._entries) \
                or self._entries[at + 1] != tuple(last):
            return False
        if at > 0:
            self.deleteEntriesTo(at)
        return True

    # -- pysyncobj's interface ---------------------------------------------------------------------
    def add(self, command: bytes, idx: int, term: int) -> None:
        entry = (command, idx, term)
        self._entries.append(entry)
        if self._cut and self._cut[0] == entry:
            self._cut.pop(0)               # the same entry again: it is on disk already
        else:
            self._write_cut()
            self._append(["E", idx, term, command])
        before = self.configuration()
        if self._note(command, idx):
            self._changed(before)

    def clear(self) -> None:
        """pysyncobj installs a snapshot from the leader: the entries it replaces go (the snapshot went to the
        same disk queue first, so it is durable before they are gone)."""
        before = self.configuration()
        self._entries = []
        self.configurations = []
        self._rewrite()
        self._changed(before)

    def deleteEntriesFrom(self, entryFrom: int) -> None:
        """Cut the log back from position ``entryFrom`` (a follower's conflicting tail).

        pysyncobj cuts whenever a leader sends entries a member has already (after a lost acknowledgement),
        then appends the same entries again. Written as is, a cut followed by the same entries would leave,
        after a crash between the two writes, a log without entries this member had acknowledged; so the cut
        is only kept here (``_cut``) and written when an entry that differs comes, or before anything is
        made durable: entries that come back the same are never cut on disk."""
        if entryFrom >= len(self._entries):
            return
        self._write_cut()
        index = self._entries[entryFrom][1]
        self._cut = self._entries[entryFrom:]
        del self._entries[entryFrom:]
        before = self.configuration()
        self.configurations = [c for c in self.configurations if c[0] < index]
        self._changed(before)

    def _write_cut(self) -> None:
        """The cut kept back, for the entries that did not come back the same: on disk now."""
        if self._cut:
            self._append(["X", self._cut[0][1]])
        self._cut = []

    def deleteEntriesTo(self, entryTo: int) -> None:
        """Drop the entries a snapshot now holds (positions before ``entryTo``)."""
        if entryTo <= 0:
            return
        self._entries = self._entries[entryTo:]
        self._rewrite()

    def __getitem__(self, item: int) -> Entry:
        return self._entries[item]

    def __len__(self) -> int:
        return len(self._entries)

    def setRaftCommitIndex(self, raftCommitIndex: int) -> None:
        """Not kept: Raft does not need it, and a restarted member learns it from the leader."""

    def getRaftCommitIndex(self) -> int:
        return 1

    def setCurrentTerm(self, term: int, votedForNodeId: str | None) -> None:
        if (term, votedForNodeId) == (self._term, self._voted_for):
            return
        self._write_cut()
        self._term, self._voted_for = term, votedForNodeId
        self._append(["T", term, votedForNodeId])

    def getCurrentTerm(self) -> int:
        return self._term

    def getVotedForNodeId(self) -> str | None:
        return self._voted_for

    def onOneSecondTimer(self) -> None:
        pass

    def _destroy(self) -> None:
        close = getattr(self.disk, "close", None)
        if close is not None and self._syncing is None:
            close()

    # -- writing ------------------------------------------------------------------------------------
    def _append(self, fields: list[Any]) -> None:
        record = encode_record(fields)
        self.disk.append(record)
        self.size += len(record)
        self.written += 1

    def _rewrite(self) -> None:
        self._cut = []                     # the whole file is written from the entries as they are now
        records = [encode_record(["H", MAGIC, VERSION])]
        if self._term or self._voted_for is not None:
            records.append(encode_record(["T", self._term, self._voted_for]))
        records.extend(encode_record(["E", idx, term, command]) for command, idx, term in self._entries)
        data = b"".join(records)
        self.disk.replace(data)
        self.size = len(data)
        self.written += 1

    @property
    def dirty(self) -> bool:
        return self.written > self.synced or bool(self._cut)

    def sync(self) -> None:
        """Make everything written so far durable (one batch at a time); returns nothing, see ``when_synced``."""
        self._write_cut()
        if self.failed is not None or self._syncing is not None or not self.dirty:
            return
        target = self.written
        self._syncing = self.disk.sync()
        self._syncing.addCallbacks(self._synced, self._sync_failed, callbackArgs=(target,))

    def _synced(self, _: object, target: int) -> None:
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

    def _sync_failed(self, failure: Failure) -> None:
        self._syncing = None
        error = failure.value
        assert error is not None        # a Failure always holds its exception (Twisted types it Optional)
        self.failed = error
        self.log.critical("controller journal cannot be written ({err}): this controller leaves Raft until it "
                          "is restarted", err=failure.getErrorMessage())
        watchers, self._watchers = self._watchers, []
        for _, d in watchers:
            d.errback(failure)
        if self.on_failure is not None:
            self.on_failure(error)

    def when_synced(self, records: int | None = None) -> defer.Deferred[None]:
        """A Deferred firing once the first ``records`` records (default: all written so far) are durable."""
        if records is None:
            self._write_cut()
        records = self.written if records is None else records
        if self.failed is not None:
            return defer.fail(self.failed)
        if records <= self.synced:
            return defer.succeed(None)
        d: defer.Deferred[None] = defer.Deferred()
        self._watchers.append((records, d))
        self.sync()
        return d
