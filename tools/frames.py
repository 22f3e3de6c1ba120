"""Requests a Java broker, client or admin tool could send, as editable drafts, and their bytes.

A ``Draft`` keeps the header as a plain dict (the JSON header's keys) so a mutation can put
any value in any field (a list for ``code``, a number in ``extFields``) before it is
encoded; ``encode_frame`` then writes it as a JSON or ROCKETMQ frame without checking
anything. Names come from fuzz-only pools, so fuzzed requests never touch the control
broker whose routes the checker compares (see ``tools.checks``).
"""

import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Optional

from namesrv.protocol.codes import LanguageCode, RequestCode

FUZZ_CLUSTERS = ("FuzzClusterA", "FuzzClusterB")
FUZZ_BROKERS = {"fuzz-broker-%d" % i: FUZZ_CLUSTERS[i % 2] for i in range(6)}
FUZZ_TOPICS = tuple("FuzzTopic-%d" % i for i in range(16))
FUZZ_NAMESPACES = ("FuzzNS", "ORDER_TOPIC_CONFIG")
FUZZ_KEYS = FUZZ_TOPICS[:4] + ("k0", "k1", "k2")

#: Codes a fuzzer sends. UPDATE_NAMESRV_CONFIG is left out on purpose: a valid one could set
#: serverMaxConnections=1 or an idle timeout of 1 s and the checker would blame the server.
FUZZ_CODES = tuple(int(c) for c in RequestCode if c != RequestCode.UPDATE_NAMESRV_CONFIG)

_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")


@dataclass
class Draft:
    header: dict
    body: Optional[bytes] = None
    serialize_type: int = 0
    ascii_json: bool = True
    #: labels of the mutations applied, for reports and crash files
    mutations: list = field(default_factory=list)


def addr(rng):
    return "127.0.0.1:%d" % rng.choice((20911, 20912, 20913, 20914))


def broker(rng):
    name = rng.choice(sorted(FUZZ_BROKERS))
    return name, FUZZ_BROKERS[name]


def topic_config(name, queues=4, perm=6):
    return {"order": False, "perm": perm, "readQueueNums": queues, "topicFilterType": "SINGLE_TAG",
            "topicName": name, "topicSysFlag": 0, "writeQueueNums": queues}


def register_body(topics, counter=1, timestamp=1700000000000):
    table = {t["topicName"]: t for t in topics}
    body = {"filterServerList": [], "topicConfigSerializeWrapper": {
        "dataVersion": {"counter": counter, "timestamp": timestamp}, "topicConfigTable": table}}
    return json.dumps(body, separators=(",", ":")).encode()


def compressed_raw(topics, counter=1, timestamp=1700000000000, mapping=None):
    """The inflated form of a compressed RegisterBrokerBody (bodies.md §4.2), before zlib."""
    def chunk(data):
        return _INT.pack(len(data)) + data

    out = [chunk(json.dumps({"counter": counter, "timestamp": timestamp}).encode()), _INT.pack(len(topics))]
    for t in topics:
        out.append(chunk(("%s %d %d %d %s" % (t["topicName"], t["readQueueNums"], t["writeQueueNums"],
                                               t["perm"], t["topicFilterType"])).encode()))
    out.append(chunk(b"[]"))
    if mapping is not None:
        out.append(_INT.pack(len(mapping)))
        out.extend(chunk(json.dumps(m).encode()) for m in mapping)
    return b"".join(out)


def crc32(body):
    return zlib.crc32(body or b"") & 0x7FFFFFFF


def _register(rng, ext):
    name, cluster = broker(rng)
    broker_id = rng.choice((0, 0, 0, 1, 2))
    topics = [topic_config(t, rng.choice((1, 4, 8)), rng.choice((2, 4, 6, 7)))
              for t in rng.sample(FUZZ_TOPICS, rng.randint(0, 6))]
    compressed = rng.random() < 0.3
    counter = rng.randint(1, 5)
    if compressed:
        body = zlib.compress(compressed_raw(topics, counter), 9)
    else:
        body = register_body(topics, counter)
    ext.update(brokerName=name, brokerAddr=addr(rng), clusterName=cluster, haServerAddr=addr(rng),
               brokerId=str(broker_id), compressed="true" if compressed else "false",
               bodyCrc32=str(crc32(body)) if rng.random() < 0.8 else "0")
    if rng.random() < 0.3:
        ext["heartbeatTimeoutMillis"] = str(rng.choice((1000, 30000, 120000)))
    return body


def seed_draft(rng, opaque=1):
    """A well-formed request with a random NameServer code (or an unknown one)."""
    code = rng.choice(FUZZ_CODES + (int(RequestCode.REGISTER_BROKER),) * 6
                      + (int(RequestCode.GET_ROUTEINFO_BY_TOPIC),) * 3 + (rng.randint(0, 32767),))
    ext = {}
    body = None
    version = rng.choice((409, 409, 479, 401, 400, 36, 413))
    flag = 0
    name, cluster = broker(rng)
    topic = rng.choice(FUZZ_TOPICS)
    if code == RequestCode.REGISTER_BROKER:
        body = _register(rng, ext)
    elif code in (RequestCode.PUT_KV_CONFIG, RequestCode.GET_KV_CONFIG, RequestCode.DELETE_KV_CONFIG):
        ext.update(namespace=rng.choice(FUZZ_NAMESPACES), key=rng.choice(FUZZ_KEYS))
        if code == RequestCode.PUT_KV_CONFIG:
            ext["value"] = rng.choice(("%s:4" % name, "v%d" % rng.randint(0, 9), "x" * rng.randint(1, 300)))
    elif code == RequestCode.GET_KVLIST_BY_NAMESPACE:
        ext["namespace"] = rng.choice(FUZZ_NAMESPACES)
    elif code in (RequestCode.UNREGISTER_BROKER, RequestCode.QUERY_DATA_VERSION, RequestCode.BROKER_HEARTBEAT):
        ext.update(brokerName=name, brokerAddr=addr(rng), clusterName=cluster, brokerId=str(rng.choice((0, 1))))
        if code == RequestCode.QUERY_DATA_VERSION:
            body = json.dumps({"counter": rng.randint(0, 5), "timestamp": 1700000000000}).encode()
        if code == RequestCode.BROKER_HEARTBEAT:
            flag = 2
    elif code in (RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.DELETE_TOPIC_IN_NAMESRV):
        ext["topic"] = topic
        if code == RequestCode.GET_ROUTEINFO_BY_TOPIC and rng.random() < 0.3:
            ext["acceptStandardJsonOnly"] = "true"
        if code == RequestCode.DELETE_TOPIC_IN_NAMESRV and rng.random() < 0.5:
            ext["clusterName"] = cluster
    elif code == RequestCode.REGISTER_TOPIC_IN_NAMESRV:
        ext["topic"] = topic
        queue = {"brokerName": name, "perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}
        body = json.dumps({"queueDatas": [queue]}).encode()
    elif code in (RequestCode.WIPE_WRITE_PERM_OF_BROKER, RequestCode.ADD_WRITE_PERM_OF_BROKER):
        ext["brokerName"] = name
    elif code == RequestCode.GET_TOPICS_BY_CLUSTER:
        ext["cluster"] = cluster
    elif code == RequestCode.GET_BROKER_MEMBER_GROUP:
        ext.update(clusterName=cluster, brokerName=name)
    header = {"code": code, "extFields": ext or None, "flag": flag, "language": "JAVA", "opaque": opaque,
              "serializeTypeCurrentRPC": "JSON", "version": version}
    return Draft(header, body, serialize_type=1 if rng.random() < 0.3 else 0)


# -- encoding (never validates: garbage in, garbage out) -----------------------------

def encode_json_header(draft):
    header = {k: v for k, v in draft.header.items() if v is not None}
    text = json.dumps(header, ensure_ascii=draft.ascii_json, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def _as_int(value, bits):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        value = zlib.crc32(repr(value).encode("utf-8", "surrogatepass"))  # not hash(): seeds must replay
    value = int(value) if value == value and abs(value) != float("inf") else 0
    mask = (1 << bits) - 1
    value &= mask
    return value - (1 << bits) if value >> (bits - 1) else value


def _as_bytes(value):
    if value is None:
        return b""
    if not isinstance(value, str):
        value = json.dumps(value)
    return value.encode("utf-8", "surrogatepass")


def encode_rocketmq_header(draft):
    h = draft.header
    language = h.get("language")
    if isinstance(language, str):
        language = int(LanguageCode[language]) if language in LanguageCode.__members__ else 7
    out = [struct.pack(">hbhii", _as_int(h.get("code"), 16), _as_int(language or 0, 8),
                       _as_int(h.get("version") or 0, 16), _as_int(h.get("opaque") or 0, 32),
                       _as_int(h.get("flag") or 0, 32))]
    remark = _as_bytes(h.get("remark"))
    out += [_INT.pack(len(remark)), remark]
    entries = []
    ext = h.get("extFields")
    for key, value in (ext.items() if isinstance(ext, dict) else ()):
        k, v = _as_bytes(key), _as_bytes(value)
        entries.append(_SHORT.pack(_as_int(len(k), 16)) + k + _INT.pack(len(v)) + v)
    ext_bytes = b"".join(entries)
    out += [_INT.pack(len(ext_bytes)), ext_bytes]
    return b"".join(out)


def encode_header(draft):
    return encode_rocketmq_header(draft) if draft.serialize_type == 1 else encode_json_header(draft)


def assemble(header, body, serialize_type, header_length=None, total_length=None):
    """Frame bytes; the two lengths default to the true ones."""
    body = body or b""
    if header_length is None:
        header_length = len(header)
    if total_length is None:
        total_length = 4 + len(header) + len(body)
    word = ((serialize_type & 0xFF) << 24) | (header_length & 0xFFFFFF)
    return _INT.pack(_as_int(total_length, 32)) + _INT.pack(_as_int(word, 32)) + header + body


def encode_frame(draft):
    return assemble(encode_header(draft), draft.body, draft.serialize_type)
