"""The Raft snapshot's life: written when the log grows, sent to a member behind it, read at start.

pysyncobj compacts its log through a serializer object (``Serializer``: ``serialize``,
``checkSerializing``, ``deserialize``, ``getTransmissionData``, ``setTransmissionData``,
``cancelTransmisstion``); its own writes a file on the reactor thread and renames it without an
fsync. ``hooks.use_snapshot_store`` gives it this one instead:

- **Written in order, durable before the log shrinks.** ``serialize`` encodes the state as of the
  last applied entry (``snapshot.py``) and hands it to the journal's disk queue (``disk.py``: a
  temporary file, fsync, rename, directory fsync, in the disk thread). ``checkSerializing`` says
  SUCCESS only once that is on disk; only then does pysyncobj rewrite the journal without the
  entries the snapshot holds. A crash at any point leaves the old snapshot with the whole journal,
  or the new one with a journal that still starts before it (``journal.reconcile`` cuts it at
  start), or both new.
- **Sent in chunks that say where they belong.** Each chunk carries the snapshot's last index, its
  offset and the total size; a chunk out of place (a lost one, a newer snapshot meanwhile) starts
  the transfer again rather than building a damaged file, and a snapshot larger than
  ``controllerStoreMaxBytes`` is refused. The receiver checks the whole snapshot before it takes it,
  and writes it through the same disk queue before the journal is cleared behind it.
- **Read at start** from the disk (``load``), before pysyncobj is built.
"""

import struct
from typing import TYPE_CHECKING, Any, Optional

from pysyncobj.config import SERIALIZER_STATE
from twisted.logger import Logger
from twisted.python.failure import Failure

from namesrv.controller.replication import snapshot
from namesrv.controller.replication.disk import Disk

if TYPE_CHECKING:   # types only
    from namesrv.controller.replication.raft import RaftLog

FILE = "raft.snapshot"
#: a chunk's place: the snapshot's last index, the chunk's offset, the snapshot's size
_CHUNK_HEAD = struct.Struct(">QQQ")


class SnapshotStore:
    """pysyncobj's serializer over our disk queue; ``owner`` is the RaftLog (``snapshot_state()``,
    ``snapshot_loaded(decoded)``)."""

    log = Logger()

    def __init__(self, disk: Disk, owner: "RaftLog", chunk_size: int = 1 << 20, max_bytes: int = 64 << 20) -> None:
        self.disk = disk
        self.owner = owner
        self.chunk_size = chunk_size
        self.max_bytes = max_bytes
        self.current: Optional[bytes] = None   # the bytes of the newest snapshot (durable, or received and queued)
        self.decoded: Optional[snapshot.Decoded] = None
        self._status = SERIALIZER_STATE.NOT_SERIALIZING
        self._serializing_id: Any = None     # pysyncobj's id of the serialization under way (opaque to us)
        self._outgoing: dict[Any, int] = {}  # pysyncobj's node -> offset sent so far
        self._incoming: Optional[tuple[int, int, bytearray]] = None   # (last index, total, bytes so far)
        self.written = 0
        self.installed = 0
        self.refused = 0

    # -- start ---------------------------------------------------------------------------------------
    def load(self) -> Optional[snapshot.Decoded]:
        """The decoded snapshot on disk, or None; SnapshotError when there is one we cannot read."""
        data = self.disk.read_file(FILE)
        if data is None:
            return None
        self.decoded = snapshot.decode(data)
        self.current = data
        return self.decoded

    @property
    def size(self) -> int:
        return len(self.current) if self.current is not None else 0

    @property
    def last_index(self) -> int:
        return self.decoded[1][1] if self.decoded is not None else 0

    # -- writing (pysyncobj's log compaction) ------------------------------------------------------------
    def serialize(self, data: tuple[Any, snapshot.Entry, snapshot.Entry, Any], serialize_id: Any) -> None:
        """pysyncobj compacts: ``data`` is (its state, unused here; last entry; previous entry; its cluster)."""
        if self._status != SERIALIZER_STATE.NOT_SERIALIZING:
            return
        _, last, prev, _cluster = data
        state, configuration = self.owner.snapshot_state()
        encoded = snapshot.encode(state, last, prev, configuration)
        self._status = SERIALIZER_STATE.SERIALIZING
        self._serializing_id = serialize_id
        self.disk.write_file(FILE, encoded)
        self.disk.sync().addCallbacks(self._written, self._not_written, callbackArgs=(encoded,))

    def _written(self, _: object, encoded: bytes) -> None:
        self.current = encoded
        self.decoded = snapshot.decode(encoded)
        self._outgoing.clear()
        self.written += 1
        self._status = SERIALIZER_STATE.SUCCESS

    def _not_written(self, failure: Failure) -> None:
        self.log.error("controller: Raft snapshot not written: {err}", err=failure.getErrorMessage())
        self._status = SERIALIZER_STATE.FAILED

    def checkSerializing(self) -> tuple[int, Any]:
        status = self._status
        if status in (SERIALIZER_STATE.SUCCESS, SERIALIZER_STATE.FAILED):
            self._status = SERIALIZER_STATE.NOT_SERIALIZING
        return status, self._serializing_id

    def deserialize(self) -> tuple[None, snapshot.Entry, snapshot.Entry, tuple[str, ...]]:
        """The snapshot for pysyncobj to start from: (None, last, prev, cluster); the owner loads its state."""
        decoded = self.decoded
        assert decoded is not None       # pysyncobj asks only once a snapshot was read at start or received
        self.owner.snapshot_loaded(decoded)
        _, last, prev, configuration = decoded
        return None, last, prev, tuple(configuration.members) if configuration is not None else ()

    # -- sending ---------------------------------------------------------------------------------------------
    def getTransmissionData(self, node: Any) -> Optional[tuple[bytes, bool, bool]]:
        if self.current is None:
            return None
        offset = self._outgoing.get(node, 0)
        chunk = self.current[offset:offset + self.chunk_size]
        end = offset + len(chunk)
        if end >= len(self.current):
            self._outgoing.pop(node, None)
        else:
            self._outgoing[node] = end
        return (_CHUNK_HEAD.pack(self.last_index, offset, len(self.current)) + chunk, offset == 0,
                end >= len(self.current))

    def cancelTransmisstion(self, node: Any) -> None:       # pysyncobj's spelling
        self._outgoing.pop(node, None)

    # -- receiving --------------------------------------------------------------------------------------------
    def setTransmissionData(self, data: Optional[tuple[bytes, bool, bool]]) -> bool:
        """A chunk from the leader; True once a whole, checked snapshot is in (and queued for the disk)."""
        if data is None:
            return False
        raw, _, _ = data
        if len(raw) < _CHUNK_HEAD.size:
            return self._drop("a snapshot chunk without its place")
        last_index, offset, total = _CHUNK_HEAD.unpack_from(raw)
        body = raw[_CHUNK_HEAD.size:]
        if offset == 0:
            if total > self.max_bytes:
                self.refused += 1
                return self._drop("a snapshot of %d bytes (controllerStoreMaxBytes is %d)" % (total, self.max_bytes))
            self._incoming = (last_index, total, bytearray())
        incoming = self._incoming
        if incoming is None or incoming[:2] != (last_index, total) or len(incoming[2]) != offset:
            return self._drop(None)       # a chunk of a transfer we did not follow: the leader starts again
        incoming[2].extend(body)
        if len(incoming[2]) > total:
            return self._drop("a snapshot larger than it said")
        if len(incoming[2]) < total:
            return False
        received = bytes(incoming[2])
        self._incoming = None
        try:
            decoded = snapshot.decode(received)
        except snapshot.SnapshotError as e:
            return self._drop("a snapshot from the leader refused: %s" % e)
        self.disk.write_file(FILE, received)
        self.current, self.decoded = received, decoded
        self._outgoing.clear()
        self.installed += 1
        self.log.info("controller: Raft snapshot received from the leader ({n} bytes, entry {index}): this member "
                      "was behind the leader's log", n=len(received), index=decoded[1][1])
        return True

    def _drop(self, reason: Optional[str]) -> bool:
        self._incoming = None
        if reason:
            self.log.warn("controller: {reason}", reason=reason)
        return False
