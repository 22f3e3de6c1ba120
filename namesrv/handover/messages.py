"""The takeover conversation's messages: length-prefixed msgpack maps with a ``kind``.

Old and new code meet here during an upgrade, so the format is small and versioned: the
new process offers the versions it speaks (``hello``), the old one answers in the highest
both know (``state`` says which) or refuses. Unknown keys are ignored, so a later version
may add fields without a new number; a new number is for changes an old reader would
misread. Messages that carry a descriptor (``state``: the listening socket; ``connection``:
one client's socket) are written right after it is queued, so the receiver matches
descriptors to messages in order.
"""

import struct

import msgpack

from namesrv.protocol.lengthprefixed import LengthPrefixedReader

#: versions this code speaks, oldest first. 2: the tables are copied twice, first while the old process
#: still serves (``precopy``), then only what changed since (``state`` with ``delta``), so clients wait
#: only for the second, small copy and the sockets' move. 3: the first copy is a route snapshot file
#: (routes/slicedsnapshot.py, written a chunk per reactor turn: the old process never stops for it) passed
#: open with ``precopy`` (``snapshot``: true), which the new process's read workers restore too.
VERSIONS = (1, 2, 3)
#: a message larger than this is garbage (the route tables of 1M topics are well below)
MAX_MESSAGE = 1 << 30

_LENGTH = struct.Struct(">I")

# kinds, in the order they are sent
HELLO = "hello"            # new → old: versions, instance, listen, pid
REFUSE = "refuse"          # old → new: reason (the conversation ends)
PRECOPY = "precopy"        # old → new (version 2, still serving): version, routes (snapshot encoding);
                           # version 3: snapshot (true), with the snapshot file's descriptor
PRECOPIED = "precopied"    # new → old (version 2): the first copy is restored; drain now
STATE = "state"            # old → new, with the listening socket: version, routes (snapshot encoding)
                           # or, in version 2, delta (what changed since the precopy) and registrations
                           # (the unchanged-registration shortcut's entries still valid)
READY = "ready"            # new → old: serving from the socket; send the connections
CONNECTION = "connection"  # old → new, with one socket: peer, unread
DONE = "done"              # old → new: moved, closed (counts); the old process exits


class HandoverProtocolError(ValueError):
    """Bytes that are not a takeover message (or one too large)."""


def encode(kind, **fields):
    fields["kind"] = kind
    data = msgpack.packb(fields, use_bin_type=True)
    return _LENGTH.pack(len(data)) + data


def choose_version(offered):
    """The highest version both sides speak, or None."""
    try:
        common = set(VERSIONS) & {v for v in offered if isinstance(v, int) and not isinstance(v, bool)}
    except TypeError:
        return None
    return max(common) if common else None


class MessageReader(LengthPrefixedReader):
    """Bytes in (any cut), whole messages (dicts with a string ``kind``) out."""

    error = HandoverProtocolError

    def __init__(self, max_message=MAX_MESSAGE):
        LengthPrefixedReader.__init__(self, _decode, max_message)


def _decode(data):
    try:
        message = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as e:   # msgpack raises several unrelated types on garbage
        raise HandoverProtocolError("undecodable message: %s" % e)
    if not isinstance(message, dict) or not isinstance(message.get("kind"), str):
        raise HandoverProtocolError("not a takeover message")
    return message
