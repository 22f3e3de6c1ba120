"""REGISTER_BROKER bodies in the Java formats (bodies.md §4), and what parsing them alone costs.

Bodies are built here from the format description, not with the server's encoder, so a benchmark also
checks that the server reads what a 4.9.8 broker writes.
"""

import json
import struct
import zlib

DATA_VERSION_TIMESTAMP = 1_700_000_000_000
_INT = struct.Struct(">i")


def topic_names(prefix, count, start=0):
    return ["%s-%06d" % (prefix, i) for i in range(start, start + count)]


def topic_config(name, queues=8, perm=6):
    """A TopicConfig as fastjson writes it (alphabetical fields)."""
    return {"order": False, "perm": perm, "readQueueNums": queues, "topicFilterType": "SINGLE_TAG",
            "topicName": name, "topicSysFlag": 0, "writeQueueNums": queues}


def data_version(counter, timestamp=DATA_VERSION_TIMESTAMP):
    return {"counter": counter, "timestamp": timestamp}


def plain_body(topics, counter=1, queues=8, timestamp=DATA_VERSION_TIMESTAMP):
    """RegisterBrokerBody as plain JSON (§4.1), compact like fastjson."""
    body = {"filterServerList": [],
            "topicConfigSerializeWrapper": {"dataVersion": data_version(counter, timestamp),
                                            "topicConfigTable": {t: topic_config(t, queues) for t in topics}}}
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


def compressed_raw(topics, counter=1, queues=8):
    """The inflated form of a compressed RegisterBrokerBody (§4.2, as a 4.9.8 broker writes it)."""
    def chunk(data):
        return _INT.pack(len(data)) + data

    parts = [chunk(json.dumps(data_version(counter), separators=(",", ":")).encode()), _INT.pack(len(topics))]
    parts.extend(chunk(("%s %d %d %d SINGLE_TAG" % (t, queues, queues, 6)).encode()) for t in topics)
    parts.append(chunk(b"[]"))
    return b"".join(parts)


def compressed_body(topics, counter=1, queues=8):
    """zlib stream at BEST_COMPRESSION, like Java's DeflaterOutputStream(Deflater(9))."""
    return zlib.compress(compressed_raw(topics, counter, queues), 9)


def register_body(topics, compressed, counter=1, queues=8):
    return (compressed_body if compressed else plain_body)(topics, counter, queues)


def crc32(body):
    return zlib.crc32(body) & 0x7FFFFFFF if body else 0


def parse_plain(body):
    """The floor for a plain registration: what ``json.loads`` alone costs."""
    return json.loads(body)


def parse_compressed(body):
    """The floor for a compressed registration: inflate, then split every topic line."""
    data = zlib.decompress(body)
    pos = 0

    def chunk():
        nonlocal pos
        (length,) = _INT.unpack_from(data, pos)
        pos += 4 + length
        return data[pos - length:pos]

    version = json.loads(chunk())
    (count,) = _INT.unpack_from(data, pos)
    pos += 4
    topics = {}
    for _ in range(count):
        name, read, write, perm, filter_type = chunk().decode().split(" ")[:5]
        topics[name] = (int(read), int(write), int(perm), filter_type)
    filters = json.loads(chunk())
    return version, topics, filters


def queue_data_json_bytes(broker_name, queues=8, perm=6):
    """Bytes of one QueueData as the route answer carries it: the raw size of one (topic, broker) entry."""
    return len(json.dumps({"brokerName": broker_name, "perm": perm, "readQueueNums": queues,
                           "topicSysFlag": 0, "writeQueueNums": queues}, separators=(",", ":")))
