"""The Raft snapshot: the controller state as of an applied entry, as checked msgpack (pysyncobj pickles its own).

pysyncobj compacts its log by asking a serializer to write the state to a temporary file, which
it then renames over the snapshot and sends, chunk by chunk, to a member too far behind; the
member renames what it received over its own snapshot and asks the deserializer to read it. We
give it both functions, so a snapshot is ``[u32 length][u32 crc32][msgpack]`` of::

    {"format": "rocketmq-namesrv-raft-snapshot", "version": 1,
     "state": ReplicaState.to_dict(), "last": [command, index, term], "prev": [...], "members": [ids]}

and reading one checks the checksum and every field before the state is replaced. pysyncobj
renames the file as soon as the serializer returns, so the file is fsynced here first: its
contents are durable before its name is (the journal makes the directory durable before it drops
the entries the snapshot replaced, ``journal.first_sync``).
"""

import os
import struct
import zlib

from namesrv.controller.replication.codec import CodecError, check_command, pack, unpack

FORMAT = "rocketmq-namesrv-raft-snapshot"
VERSION = 1
_HEAD = struct.Struct(">II")


class SnapshotError(ValueError):
    """A snapshot file that is not one of ours, or is damaged."""


def encode(state_dict, last, prev, members):
    payload = pack({"format": FORMAT, "version": VERSION, "state": state_dict, "last": list(last),
                    "prev": list(prev), "members": sorted(members)})
    return _HEAD.pack(len(payload), zlib.crc32(payload)) + payload


def decode(data):
    """(state dict, last entry, previous entry, member ids) from a snapshot's bytes, or SnapshotError."""
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
    if not (isinstance(value, dict) and value.get("format") == FORMAT and value.get("version") == VERSION
            and isinstance(value.get("state"), dict) and isinstance(value.get("members"), list)):
        raise SnapshotError("not a rocketmq-namesrv Raft snapshot")
    return value["state"], _entry(value.get("last")), _entry(value.get("prev")), frozenset(value["members"])


def _entry(raw):
    if not (isinstance(raw, list) and len(raw) == 3 and isinstance(raw[1], int) and isinstance(raw[2], int)):
        raise SnapshotError("a snapshot entry is [command, index, term]")
    try:
        check_command(raw[0])
    except CodecError as e:
        raise SnapshotError(str(e))
    return (raw[0], raw[1], raw[2])


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def read(path):
    with open(path, "rb") as f:
        return f.read()
