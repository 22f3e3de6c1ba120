"""The Raft snapshot's format: the controller state as of an applied entry, as checked msgpack.

A snapshot is ``[u32 length][u32 crc32][msgpack]`` of::

    {"format": "rocketmq-namesrv-raft-snapshot", "version": 2, "state": ReplicaState.to_dict(),
     "last": [command, index, term], "prev": [...], "configuration": membership wire form}

Reading one checks the checksum and every field before the state is replaced. Version 1 (without
the group's configuration: the static one of ``controllerDLegerPeers`` applied) is read too; any
other version is refused in one line naming both. Where and when snapshots are written, sent and
read: ``snapshotstore.py``.
"""

from typing import Any, Optional

import struct
import zlib

from namesrv.controller.replication.codec import CodecError, check_command, pack, unpack
from namesrv.controller.replication.membership import Configuration

FORMAT = "rocketmq-namesrv-raft-snapshot"
VERSION = 2
READS = (1, 2)
_HEAD = struct.Struct(">II")
#: a log entry as pysyncobj keeps it: (command, index, term)
Entry = tuple[bytes, int, int]
#: a snapshot read: (state dict, last entry, previous entry, the group's configuration or None for version 1)
Decoded = tuple[dict[str, Any], Entry, Entry, Optional[Configuration]]


class SnapshotError(ValueError):
    """A snapshot that is not one of ours, is damaged, or is of a format version this server does not read."""


def encode(state_dict: dict[str, Any], last: Entry, prev: Entry, configuration: Configuration) -> bytes:
    payload = pack({"format": FORMAT, "version": VERSION, "state": state_dict, "last": list(last),
                    "prev": list(prev), "configuration": configuration.to_wire()})
    return _HEAD.pack(len(payload), zlib.crc32(payload)) + payload


def decode(data: bytes) -> Decoded:
    """(state dict, last entry, previous entry, Configuration or None) from a snapshot's bytes, or SnapshotError."""
    if len(data) < _HEAD.size:
        raise SnapshotError("a snapshot of %d bytes" % len(data))
    length, crc = _HEAD.unpack_from(data)
    payload = data[_HEAD.size:]
    if len(payload) != length or zlib.crc32(payload) != crc:
        raise SnapshotError("the snapshot fails its length or checksum")
    try:
        value = unpack(payload)
    except CodecError as e:
        raise SnapshotError(str(e))
    if not (isinstance(value, dict) and value.get("format") == FORMAT):
        raise SnapshotError("not a rocketmq-namesrv Raft snapshot")
    if value.get("version") not in READS:
        raise SnapshotError("the snapshot is format version %r; this server reads versions %d-%d (a newer server "
                            "wrote it)" % (value.get("version"), READS[0], READS[-1]))
    if not isinstance(value.get("state"), dict):
        raise SnapshotError("a snapshot without a state")
    configuration = None
    if value["version"] >= 2:
        try:
            configuration = Configuration.from_wire(value.get("configuration"))
        except CodecError as e:
            raise SnapshotError("its configuration: %s" % e)
    return value["state"], _entry(value.get("last")), _entry(value.get("prev")), configuration


def _entry(raw: object) -> Entry:
    if not (isinstance(raw, list) and len(raw) == 3 and isinstance(raw[1], int) and isinstance(raw[2], int)):
        raise SnapshotError("a snapshot entry is [command, index, term]")
    try:
        check_command(raw[0])
    except CodecError as e:
        raise SnapshotError(str(e))
    return (raw[0], raw[1], raw[2])
