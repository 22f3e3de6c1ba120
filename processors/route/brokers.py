"""Java's DefaultRequestProcessor, its brokers' part: REGISTER_BROKER, UNREGISTER_BROKER, BROKER_HEARTBEAT,
QUERY_DATA_VERSION and GET_BROKER_MEMBER_GROUP (requests.md).

Where we differ from Java:
- missing or malformed header fields answer SYSTEM_ERROR naming the field (Java: mostly an NPE text),
  and nothing is changed;
- UNREGISTER_BROKER is applied before answering (5.x queues it; the answer is the same);
- a refused or undecodable registration changes nothing (see namesrv/routes/registration.py);
- an identical registration, with no table change since, only refreshes liveness (the unchanged
  registration shortcut, namesrv/routes/shortcut.py).
"""

import gc
import hashlib
import time

from namesrv.protocol.codes import ResponseCode
from namesrv.routes.bodies import decode, encode
from namesrv.routes.bodies.decode import BodyDecodeError
from namesrv.routes.model import ORDER_TOPIC_CONFIG
from processors.route.common import RouteRequests

#: a registration with at least this many topics freezes the collector's generations afterwards
FREEZE_AFTER_TOPICS = 1000
#: the part of a checked JSON body the unchanged-registration fingerprint reads: its dataVersion is there
FINGERPRINT_HEAD_BYTES = 512
ZONE_NAME = "__ZONE_NAME"
CRC_MISMATCH = ("crc32 not match: the body's CRC32 is %d but the bodyCrc32 header says %d; the body was "
                "altered on the way: the broker resends at its next registration")
SINGLE_TOPIC_REFUSED = ("register broker failed: broker %s id %s at %s is not registered here and sent a "
                        "registration with a single topic, taken as an incremental update racing a name server "
                        "restart (the 5.x rule) and refused; nothing to do: its next full registration "
                        "(within 30 s) is accepted")


class BrokerRequests(RouteRequests):
    def __init__(self, context, timer=time.perf_counter):
        RouteRequests.__init__(self, context)
        #: an identical registration, with no table change since, only refreshes liveness (kept with the
        #: tables, so that a takeover carries it on)
        self.unchanged = context.routes.unchanged
        self.timer = timer

    def _order_topic_config_body(self):
        if not self.context.config.returnOrderTopicConfigToBroker:
            return None
        return self.context.kv.kv_table_body(ORDER_TOPIC_CONFIG)

    def register_broker(self, request, connection):
        started = self.timer()
        broker_name = request.require("brokerName")
        broker_addr = request.require("brokerAddr")
        cluster = request.require("clusterName")
        ha_server_addr = self.require_present(request, "haServerAddr")
        broker_id = request.require_int("brokerId")
        compressed = request.get_bool("compressed", False)
        body_crc32 = request.get_int("bodyCrc32", 0)
        heartbeat_timeout = request.get_int("heartbeatTimeoutMillis")
        enable_acting_master = request.get_bool("enableActingMaster")
        zone_name = request.get(ZONE_NAME)

        body = request.body
        delete_topics = bool(self.context.config.deleteTopicWithBrokerRegistration)
        if body_crc32 != 0:
            crc = decode.crc32(body)
            if crc != body_crc32:
                return self.error(request, CRC_MISMATCH % (crc, body_crc32))
        fingerprint = self._fingerprint(request, delete_topics, body_crc32, compressed)
        refreshed = self.unchanged.refresh(cluster, broker_addr, fingerprint, connection, heartbeat_timeout)
        if refreshed is not None:
            result, last = refreshed
            return self._registered(request, result, cluster, broker_name, broker_id, broker_addr,
                                    last.topics, last.data_version, body, compressed, started)
        try:
            decoded = decode.decode_register_broker_body(
                body, compressed, request.version,
                self.context.config.maxInflatedBodyLength or decode.MAX_INFLATED_BYTES)
        except BodyDecodeError as e:
            return self.error(request, "Failed to decode RegisterBrokerBody: %s" % e)

        wrapper = decoded.topic_config_wrapper
        result = self.routes.register_broker(
            cluster, broker_addr, broker_name, broker_id, ha_server_addr, wrapper, decoded.filter_server_list,
            connection, zone_name=zone_name, heartbeat_timeout_millis=heartbeat_timeout,
            enable_acting_master=enable_acting_master,
            delete_topic_with_broker_registration=delete_topics)
        if result is None:
            return self.error(request, SINGLE_TOPIC_REFUSED % (broker_name, broker_id, broker_addr))
        topics, data_version = len(wrapper.topic_config_table), wrapper.data_version.as_event()
        if topics >= FREEZE_AFTER_TOPICS:
            # The tables just grew by tens of thousands of long-lived objects: move everything
            # alive out of the collector's reach now, or the next full collections scan it all
            # (bench/results/design-figures.md#frozen-tables).
            gc.freeze()
        if not result.stale:
            self.unchanged.remember(cluster, broker_addr, broker_name, fingerprint, topics, data_version)
        return self._registered(request, result, cluster, broker_name, broker_id, broker_addr, topics, data_version,
                                body, compressed, started)

    @staticmethod
    def _fingerprint(request, delete_topics, body_crc32, compressed):
        """What must be identical for a registration to be "the same as last time": header, body and
        the one property that changes what applying it does.

        A plain JSON body whose CRC the header carries (every 4.9 and 5.x broker sends ``bodyCrc32``),
        just checked against it, is known by that CRC, its length and its first 512 bytes. A Java broker
        writes the ``dataVersion`` there (fastjson orders keys by name: ``filterServerList``, then the
        wrapper's ``dataVersion``), and a new dataVersion is how Java tells a changed table, so such a
        change always changes this fingerprint; other bytes would have to keep a 31-bit CRC and the
        length. Hashing the whole body was a visible part of a fleet's first registration
        (figures: bench/results/design-figures.md#registration-fingerprint). A body without a CRC, or deflated
        (4.9's ``compressedRegister``), is hashed whole.
        """
        body = request.body or b""
        digest = hashlib.sha256(repr((request.version, int(request.serialize_type),
                                      sorted((request.ext or {}).items()), delete_topics,
                                      len(body))).encode("utf-8", "surrogatepass"))
        # SHA-256, not blake2b: with SHA-NI it is the faster of the two here
        digest.update(body if not body_crc32 or compressed else body[:FINGERPRINT_HEAD_BYTES])
        return digest.digest()

    def _registered(self, request, result, cluster, broker_name, broker_id, broker_addr, topics, data_version,
                    body, compressed, started):
        ext = {}  # Java's typed (empty) response header: "extFields":{}
        if result.master_addr is not None:
            if result.ha_server_addr is not None:
                ext["haServerAddr"] = result.ha_server_addr  # Java's HashMap writes it first
            ext["masterAddr"] = result.master_addr
        response = request.make_response(ResponseCode.SUCCESS, None, ext, self._order_topic_config_body())
        if not result.stale:
            self.context.events.emit(
                "broker_registered" if result.first else "broker_heartbeat",
                cluster=cluster, brokerName=broker_name, brokerId=broker_id, brokerAddr=broker_addr,
                topics=topics, dataVersion=data_version,
                changed=result.changed, bodyBytes=len(body) if body else 0, compressed=compressed,
                us=int((self.timer() - started) * 1e6))
            if result.became_master:
                # the report's failovers: when each name server routed a newly elected master
                self.context.events.emit(
                    "route_master_changed", cluster=cluster, brokerName=broker_name, masterAddress=broker_addr,
                    masterBrokerId=broker_id, masterEpoch=result.master_epoch, trigger="registration")
        return response

    def unregister_broker(self, request, connection):
        broker_name = request.require("brokerName")
        broker_addr = request.require("brokerAddr")
        cluster = request.require("clusterName")
        broker_id = request.require_int("brokerId")
        if self.routes.unregister_broker(cluster, broker_addr, broker_name, broker_id):
            self.context.events.emit("broker_unregistered", cluster=cluster, brokerName=broker_name,
                                     brokerId=broker_id, brokerAddr=broker_addr, reason="request")
        return request.make_response(ResponseCode.SUCCESS)

    def get_broker_member_group(self, request, connection):
        cluster = request.require("clusterName")
        broker_name = request.require("brokerName")
        addrs = self.routes.broker_member_group(cluster, broker_name)
        return request.make_response(ResponseCode.SUCCESS,
                                     body=encode.encode_broker_member_group(cluster, broker_name, addrs))

    def query_data_version(self, request, connection):
        request.require("brokerName")
        broker_addr = request.require("brokerAddr")
        cluster = request.require("clusterName")
        request.require_int("brokerId")
        try:
            data_version = decode.decode_data_version(request.body)
        except BodyDecodeError as e:
            return self.error(request, "Failed to decode DataVersion: %s" % e)
        changed, stored = self.routes.query_data_version(cluster, broker_addr, data_version)
        body = encode.encode_data_version(stored) if stored is not None else None
        return request.make_response(ResponseCode.SUCCESS, ext={"changed": "true" if changed else "false"},
                                     body=body)

    def broker_heartbeat(self, request, connection):
        cluster = request.require("clusterName")
        broker_addr = request.require("brokerAddr")
        request.require("brokerName")
        for name in ("brokerId", "epoch", "maxOffset", "confirmOffset", "heartbeatTimeoutMills",
                     "electionPriority"):
            request.get_int(name)  # controller-mode fields: ignored, but a bad number is still an error
        self.routes.broker_heartbeat(cluster, broker_addr)
        return request.make_response(ResponseCode.SUCCESS)
