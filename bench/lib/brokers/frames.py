"""What a fake broker sends: REGISTER_BROKER, UNREGISTER_BROKER and the heartbeats of each broker style.

A fleet's frames are pre-encoded once (``bench.lib.wire.FrameTemplate``: the opaque cut out) and a
register frame keeps its body apart (``split_register``), so that every broker serving the same topics
sends the one body object. Styles: ``4.9`` re-sends its full REGISTER_BROKER every period
(``forceRegister`` is on by default in 4.9.8, which then never asks QUERY_DATA_VERSION first); ``5.x``
registers once and then sends BROKER_HEARTBEAT (oneway, no answer) plus QUERY_DATA_VERSION every period.
A broker in controller mode beats the controller with its epoch and offset instead.
"""

import json

from bench.lib.brokers.bodies import crc32, data_version
from bench.lib.wire import FrameTemplate
from namesrv.protocol.codes import RequestCode, Version
from namesrv.protocol.command import make_request

CLUSTER = "BenchCluster"
STYLES = ("4.9", "5.x")


def register_request(broker_name, broker_addr, body, compressed, broker_id=0, cluster=CLUSTER,
                     version=Version.V4_9_8, opaque=0):
    ext = {"brokerName": broker_name, "brokerAddr": broker_addr, "clusterName": cluster,
           "haServerAddr": broker_addr, "brokerId": str(broker_id),
           "compressed": "true" if compressed else "false", "bodyCrc32": str(crc32(body))}
    return make_request(RequestCode.REGISTER_BROKER, ext, body=body, version=version, opaque=opaque)


def register_template(broker_name, broker_addr, body, compressed, **kwargs):
    return FrameTemplate(register_request(broker_name, broker_addr, body, compressed, **kwargs))


def unregister_request(broker):
    ext = {"brokerName": broker.name, "brokerAddr": broker.addr, "clusterName": broker.cluster,
           "brokerId": str(broker.broker_id)}
    return make_request(RequestCode.UNREGISTER_BROKER, ext)


def split_register(command, body):
    """A register frame as a template whose body is the shared ``body`` object (not a copy): ``(template,
    body)``, sent as ``template.pre, opaque, template.post, body``."""
    template = FrameTemplate(command)
    if body:
        assert template.post.endswith(body)
        template.post = template.post[:-len(body)]
    return template, body


def style_frames(broker, body, style):
    """``{"register": [(template, tail)], "beat": [...]}`` of ``broker`` (a ``layouts.Broker``) in
    ``style``; the last frame of each kind is the one answered."""
    register = split_register(register_request(broker.name, broker.addr, body, False, broker.broker_id,
                                               broker.cluster), body)
    if style == "4.9":
        return {"register": [register], "beat": [register]}
    ext = {"brokerName": broker.name, "brokerAddr": broker.addr, "clusterName": broker.cluster,
           "brokerId": str(broker.broker_id)}
    heartbeat = make_request(RequestCode.BROKER_HEARTBEAT, ext, oneway=True, version=Version.V5_3_3)
    query = make_request(RequestCode.QUERY_DATA_VERSION, ext, version=Version.V5_3_3,
                         body=json.dumps(data_version(1), separators=(",", ":")).encode())
    return {"register": [register], "beat": [(FrameTemplate(heartbeat), b""), (FrameTemplate(query), b"")]}


def controller_heartbeat_request(broker):
    """BROKER_HEARTBEAT to the controller (oneway), as a 5.x broker in controller mode sends it."""
    return make_request(RequestCode.BROKER_HEARTBEAT, oneway=True, ext={
        "clusterName": broker.cluster, "brokerAddr": broker.addr, "brokerName": broker.name,
        "brokerId": str(broker.broker_id), "heartbeatTimeoutMills": "10000", "epoch": "1", "maxOffset": "0"})


def replica_info_request(broker_name, opaque=1):
    """CONTROLLER_GET_REPLICA_INFO, which a 5.x broker in controller mode polls (ReplicasManager)."""
    return make_request(RequestCode.CONTROLLER_GET_REPLICA_INFO, opaque=opaque, ext={"brokerName": broker_name})
