"""The messages between the main process and its read workers, over the workers' stdin/stdout.

Each message is a 4-byte big-endian length and a msgpack map. Down (main → worker):
``{"kind": "replica", ...}`` (see ``replica_message``). Up (worker → main):
``{"kind": "counts", "counts": [[code, responseCode, count, micros], ...]}`` and
``{"kind": "resync"}`` (send me everything again).
"""

import struct

import msgpack

from namesrv.config import java_text
from namesrv.routes.model import ORDER_TOPIC_CONFIG
from namesrv.readworkers.delta import encode_tables

_LENGTH = struct.Struct(">I")
#: a replica of 100 brokers x 10,000 topics is ~20 MB; anything far above is garbage
MAX_MESSAGE = 1 << 30


class FeedError(ValueError):
    """A message that cannot be read: the stream is no longer trustworthy."""


def pack(message):
    data = msgpack.packb(message, use_bin_type=True)
    return _LENGTH.pack(len(data)) + data


class MessageReader:
    """Bytes in (any cut), whole messages out."""

    def __init__(self):
        self._buffer = bytearray()

    def feed(self, data):
        self._buffer += data
        messages = []
        buffer = self._buffer
        offset = 0
        while len(buffer) - offset >= 4:
            (length,) = _LENGTH.unpack_from(buffer, offset)
            if length > MAX_MESSAGE:
                raise FeedError("message of %d bytes" % length)
            end = offset + 4 + length
            if end > len(buffer):
                break
            try:
                message = msgpack.unpackb(bytes(buffer[offset + 4:end]), raw=False, strict_map_key=False)
            except Exception as e:  # msgpack raises several unrelated types on garbage
                raise FeedError("undecodable message: %s" % e)
            if not isinstance(message, dict):
                raise FeedError("message is not a map")
            messages.append(message)
            offset = end
        if offset:
            del buffer[:offset]
        return messages


def replica_message(generation, routes, kv, config, started, local_codes, topics=None):
    """Everything a worker needs to answer ``local_codes`` as the main process would now:
    all topics (``topics`` None: a worker's first message, or after a reset), or the
    ``topics`` changed since the previous message."""
    return pack({
        "kind": "replica",
        "generation": generation,
        "tables": encode_tables(routes, topics),
        "orderTopicConfig": kv.namespace(ORDER_TOPIC_CONFIG),
        "config": {name: java_text(config.get(name)) for name in config.names()},
        "started": started,
        "localCodes": sorted(local_codes),
    })


def resync_message():
    """A worker that could not apply a replica asks for a full one."""
    return pack({"kind": "resync"})


def counts_message(counts):
    return pack({"kind": "counts", "counts": [[code, response, n, micros]
                                              for (code, response), (n, micros) in counts.items()]})
