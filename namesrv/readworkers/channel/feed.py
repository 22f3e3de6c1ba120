"""The messages between the main process and its read workers, over the workers' stdin/stdout.

Each message is a 4-byte big-endian length and a map. Down (main → worker) the map is a
pickle: the tables hold whatever a broker sent that Python keeps (a lone surrogate in a
topic name, an integer beyond 64 bits in a static-topic mapping), which msgpack cannot
carry, and the worker is our own child reading its parent. Up (worker → main) it is
msgpack: the main process never unpickles what a worker writes. Down, one
publication is some ``{"kind": "topics", "reset": bool, "quiet": bool, "topics": …, "mappings": …}``
parts (see delta.py; the first part of a full copy has ``reset``; ``quiet`` parts carry changes
not settled yet, see main/publisher.py), then one
``{"kind": "replica", "generation": …, "full": bool, "whole": bool, …}`` with the broker tables, the
ORDER_TOPIC_CONFIG namespace, the properties and the codes a worker may answer. Up
(worker → main): ``{"kind": "counts", "counts": [[code, responseCode, count, micros], ...],
"connections": {kind: count}, "rejections": [[requestClass, reason, count], ...], "proxy": {kind: count}}``
(connections by how they started, policy refusals, and what PROXY headers said, for the main
process's metrics) and
``{"kind": "resync"}`` (send me everything again).
"""

import io
import pickle
import struct

import msgpack

from namesrv.protocol.lengthprefixed import LengthPrefixedReader
from namesrv.readworkers.channel.delta import ONE_MESSAGE_TOPICS, PART_TOPICS, encode_brokers, encode_topics
from namesrv.routes.model import ORDER_TOPIC_CONFIG

_LENGTH = struct.Struct(">I")
#: far above any message we send (a part holds PART_TOPICS topics)
MAX_MESSAGE = 1 << 28


class FeedError(ValueError):
    """A message that cannot be read: the stream is no longer trustworthy."""


def pack(message):
    """An upward message (worker → main), msgpack."""
    data = msgpack.packb(message, use_bin_type=True)
    return _LENGTH.pack(len(data)) + data


def pack_down(message):
    """A downward message (main → worker), pickled without a memo (``Pickler.fast``): a message is a tree of
    plain values, never self-referential, and a registration's 4,000 topic names pickle in 40 % of the time."""
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.fast = True
    pickler.dump(message)
    data = buffer.getbuffer()
    _LENGTH.pack_into(data, 0, len(data) - 4)
    del data
    return buffer.getvalue()


def _msgpack_loads(data):
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


class MessageReader(LengthPrefixedReader):
    """Bytes in (any cut), whole messages out; ``loads`` decodes one (msgpack: upward messages)."""

    error = FeedError
    max_message = MAX_MESSAGE

    def __init__(self, loads=_msgpack_loads):
        LengthPrefixedReader.__init__(self, loads)


def topics_part(routes, topics, reset=False, quiet=False, moves=None):
    """One part, unencoded: the current state of ``topics`` (``reset``: the first part of a full copy;
    ``quiet``: of changes nobody was told of yet, after which the shared counter has not moved;
    ``moves``: (topics, map) naming each of ``topics`` once, their maps now)."""
    return dict(encode_topics(routes, topics, moves), kind="topics", reset=reset, quiet=quiet)


def topics_message(routes, topics, reset=False, quiet=False):
    """``topics_part``, encoded."""
    return pack_down(topics_part(routes, topics, reset, quiet))


def replica_message(generation, routes, kv, config, started, local_codes, full, brokers=None, part=None,
                    whole=True):
    """The end of a publication: after it a worker may answer ``local_codes`` while the shared
    counter still reads ``generation`` (the value when the publication began). ``brokers``: the broker
    names changed since the previous publication (None: every broker's row); ``part``: the publication's
    only topics part (``topics_part``), carried in the same message (one message, one turn to apply: the
    replica is fresh again sooner). ``whole``: nothing a read could see changed while the parts were
    encoded, so the replica holds one state of the main tables (else it waits for the next publication)."""
    return pack_down(dict(encode_brokers(routes, brokers), kind="replica", generation=generation, full=full,
                     topics=part, whole=whole,
                     orderTopicConfig=kv.namespace(ORDER_TOPIC_CONFIG),
                     config=config.texts(),
                     started=started, localCodes=sorted(local_codes)))


def one_message_limit(part_topics=PART_TOPICS):
    """Up to how many changed topics a publication is one message: ONE_MESSAGE_TOPICS, or ``part_topics``
    when parts of another size are asked (tests ask for tiny ones, to have publications of several)."""
    return ONE_MESSAGE_TOPICS if part_topics == PART_TOPICS else part_topics


def publication(generation, routes, kv, config, started, local_codes, topics=None, part_topics=PART_TOPICS,
                quiet=False, brokers=None, moves=None, unchanged=lambda: True):
    """The messages of one publication, one at a time: parts of ``topics`` (None: every topic,
    a full copy, never ``quiet``), then the final replica message with the rows of ``brokers``
    (None: every broker's; a full copy has them all). Encoded lazily, so a caller may send one per
    reactor turn; ``unchanged()``, asked as the final message is encoded, says whether the tables
    stayed as they were since the first part (its ``whole``). ``moves`` (Publisher: the tracker's moves
    naming each topic once) spares a small publication the look at each topic's map."""
    full = topics is None
    names = list(routes.topic_queue_table) if full else list(topics)
    one_message = one_message_limit(part_topics)
    if not full and len(names) <= one_message:
        yield replica_message(generation, routes, kv, config, started, local_codes, False, brokers,
                              topics_part(routes, names, quiet=quiet, moves=moves) if names else None)
        return
    for start in range(0, max(len(names), 1 if full else 0), part_topics):
        yield topics_message(routes, names[start:start + part_topics], reset=full and start == 0,
                             quiet=quiet and not full)
    yield replica_message(generation, routes, kv, config, started, local_codes, full, None if full else brokers,
                          whole=bool(unchanged()))


def resync_message():
    """A worker that could not apply a replica asks for a full one."""
    return pack({"kind": "resync"})


def down_reader():
    """A MessageReader for the worker's stdin (pickled messages from the main process)."""
    return MessageReader(loads=pickle.loads)


def counts_message(counts, connections=None, rejections=None, refused=None, proxy=None):
    """A worker's report: its answers, connections and refusals by kind since the last one, ``refused``,
    the ``request_refused`` events its trust policy wrote (the main process puts them in its event log),
    and ``proxy``, what PROXY headers said (server/proxyprotocol.py KINDS)."""
    return pack({"kind": "counts",
                 "counts": [[code, response, n, micros] for (code, response), (n, micros) in counts.items()],
                 "connections": dict(connections or {}),
                 "rejections": [[request_class, reason, n]
                                for (request_class, reason), n in (rejections or {}).items()],
                 "refused": list(refused or ()),
                 "proxy": dict(proxy or {})})


#: the fields of a ``request_refused`` event a worker may report, and their types (a schema: nothing else
#: from a worker reaches the main process's event log)
REFUSED_FIELDS = {"peer": str, "code": int, "port": str, "request_class": str, "reason": str, "account": str,
                  "unsaid": int}


def refused_event(fields):
    """The checked fields of one reported ``request_refused`` event, or None when it is not one."""
    if not isinstance(fields, dict):
        return None
    checked = {}
    for key, value in fields.items():
        kind = REFUSED_FIELDS.get(key)
        if kind is None or not (value is None or (isinstance(value, kind) and not isinstance(value, bool))):
            return None
        checked[key] = value
    return checked
