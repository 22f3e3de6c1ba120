"""Build REGISTER_BROKER requests the way a Java broker encodes them (bodies.md §4), independently of the server code."""

import json
import struct
import zlib

from namesrv.protocol.codes import RequestCode, Version
from namesrv.protocol.command import make_request


def topic_config(name, queues=4, perm=6, sys_flag=0, order=False):
    return {"order": order, "perm": perm, "readQueueNums": queues, "topicFilterType": "SINGLE_TAG",
            "topicName": name, "topicSysFlag": sys_flag, "writeQueueNums": queues}


def plain_body(topics, counter=1, timestamp=1700000000000, filter_servers=(), state_version=None):
    """``state_version``: a 5.x broker in controller mode writes its master epoch there (else absent)."""
    table = {t["topicName"]: t for t in topics}
    version = {"counter": counter, "timestamp": timestamp}
    if state_version is not None:
        version["stateVersion"] = state_version
    body = {"filterServerList": list(filter_servers),
            "topicConfigSerializeWrapper": {"dataVersion": version, "topicConfigTable": table}}
    return json.dumps(body, separators=(",", ":")).encode()


def compressed_body(topics, counter=1, timestamp=1700000000000, filter_servers=()):
    def chunk(data):
        return struct.pack(">i", len(data)) + data

    raw = chunk(json.dumps({"counter": counter, "timestamp": timestamp}, separators=(",", ":")).encode())
    raw += struct.pack(">i", len(topics))
    for t in topics:
        raw += chunk(("%s %d %d %d %s" % (t["topicName"], t["readQueueNums"], t["writeQueueNums"], t["perm"],
                                          t["topicFilterType"])).encode())
    raw += chunk(json.dumps(list(filter_servers)).encode())
    return zlib.compress(raw, 9)


def crc32(body):
    return zlib.crc32(body) & 0x7FFFFFFF


def register_request(cluster, broker_name, broker_addr, broker_id=0, topics=(), counter=1,
                     compressed=False, ha_addr=None, version=Version.V4_9_8, extra_ext=None, state_version=None,
                     **kwargs):
    topics = [t if isinstance(t, dict) else topic_config(t) for t in topics]
    if compressed:
        assert state_version is None, "the compressed body has no stateVersion"
        body = compressed_body(topics, counter)
    else:
        body = plain_body(topics, counter, state_version=state_version)
    ext = {"brokerName": broker_name, "brokerAddr": broker_addr, "clusterName": cluster,
           "haServerAddr": ha_addr or broker_addr, "brokerId": str(broker_id),
           "compressed": "true" if compressed else "false", "bodyCrc32": str(crc32(body))}
    ext.update(extra_ext or {})
    return make_request(RequestCode.REGISTER_BROKER, ext, body=body, version=version, **kwargs)


def route_request(topic, version=Version.V4_9_8, **kwargs):
    return make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, version=version, **kwargs)
