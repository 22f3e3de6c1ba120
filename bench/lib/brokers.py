"""Fake brokers: REGISTER_BROKER bodies in the Java formats (bodies.md §4) and their connections.

Bodies are built here from the format description, not with the server's encoder, so a
benchmark also checks that the server reads what a 4.9.8 broker writes. A broker's
routes live as long as the connection it registered on: a ``FakeBroker`` keeps its
socket open until ``close()``.
"""

import json
import struct
import time
import zlib

from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codes import RequestCode, Version
from namesrv.protocol.command import make_request

from bench.lib.wire import FrameTemplate

CLUSTER = "BenchCluster"
DATA_VERSION_TIMESTAMP = 1_700_000_000_000
_INT = struct.Struct(">i")


def topic_names(prefix, count, start=0):
    return ["%s-%06d" % (prefix, i) for i in range(start, start + count)]


def topic_config(name, queues=8, perm=6):
    """A TopicConfig as fastjson writes it (alphabetical fields)."""
    return {"order": False, "perm": perm, "readQueueNums": queues, "topicFilterType": "SINGLE_TAG",
            "topicName": name, "topicSysFlag": 0, "writeQueueNums": queues}


def data_version(counter):
    return {"counter": counter, "timestamp": DATA_VERSION_TIMESTAMP}


def plain_body(topics, counter=1, queues=8):
    """RegisterBrokerBody as plain JSON (§4.1), compact like fastjson."""
    body = {"filterServerList": [],
            "topicConfigSerializeWrapper": {"dataVersion": data_version(counter),
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


def register_request(broker_name, broker_addr, body, compressed, broker_id=0, cluster=CLUSTER,
                     version=Version.V4_9_8):
    ext = {"brokerName": broker_name, "brokerAddr": broker_addr, "clusterName": cluster,
           "haServerAddr": broker_addr, "brokerId": str(broker_id),
           "compressed": "true" if compressed else "false", "bodyCrc32": str(crc32(body))}
    return make_request(RequestCode.REGISTER_BROKER, ext, body=body, version=version)


def register_template(broker_name, broker_addr, body, compressed, **kwargs):
    return FrameTemplate(register_request(broker_name, broker_addr, body, compressed, **kwargs))


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


def broker_addr(index):
    """A distinct fake address per broker index (live entries are keyed by cluster and address)."""
    return "10.%d.%d.%d:10911" % ((index >> 16) & 255, (index >> 8) & 255, index & 255)


class FakeBroker:
    """One broker on its own connection: register, unregister, and time each round trip."""

    def __init__(self, port, name, index, broker_id=0, cluster=CLUSTER, timeout=60.0):
        self.name = name
        self.broker_id = broker_id
        self.addr = broker_addr(index)
        self.cluster = cluster
        self.client = BlockingRemotingClient("127.0.0.1", port, timeout=timeout)

    def register(self, body, compressed):
        """``(answer, seconds)`` of one REGISTER_BROKER round trip."""
        request = register_request(self.name, self.addr, body, compressed, self.broker_id, self.cluster)
        started = time.perf_counter()
        answer = self.client.call(request)
        return answer, time.perf_counter() - started

    def register_topics(self, topics, compressed=False, counter=1):
        answer, seconds = self.register(register_body(topics, compressed, counter), compressed)
        if answer.code != 0:
            raise RuntimeError("registration of %s refused: %s %s" % (self.name, answer.code, answer.remark))
        return seconds

    def unregister(self):
        ext = {"brokerName": self.name, "brokerAddr": self.addr, "clusterName": self.cluster,
               "brokerId": str(self.broker_id)}
        return self.client.call(make_request(RequestCode.UNREGISTER_BROKER, ext))

    def trivial(self):
        """GET_KV_CONFIG for a missing key: the cheapest request that still goes through a processor."""
        request = make_request(RequestCode.GET_KV_CONFIG, {"namespace": "BENCH", "key": "absent"})
        started = time.perf_counter()
        self.client.call(request)
        return time.perf_counter() - started

    def close(self):
        self.client.close()


def queue_data_json_bytes(broker_name, queues=8, perm=6):
    """Bytes of one QueueData as the route answer carries it: the raw size of one (topic, broker) entry."""
    return len(json.dumps({"brokerName": broker_name, "perm": perm, "readQueueNums": queues,
                           "topicSysFlag": 0, "writeQueueNums": queues}, separators=(",", ":")))
