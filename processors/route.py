"""The route processor: broker registration and every route/topic query (requests.md).

Java splits these between DefaultRequestProcessor and (5.x) ClientRequestProcessor; they
share one set of tables, so here they are one processor. Configuration is read from
``context.config`` on every request (UPDATE_NAMESRV_CONFIG takes effect at once).

Where we differ from Java:
- missing or malformed header fields answer SYSTEM_ERROR naming the field (Java: mostly
  an NPE text), and nothing is changed;
- UNREGISTER_BROKER is applied before answering (5.x queues it; the answer is the same);
- a refused or undecodable registration changes nothing (see namesrv/routes/registration.py).
"""

import functools
import gc
import hashlib
import time

from twisted.internet import defer
from twisted.python.failure import Failure
from zope.interface import implementer

from namesrv.interfaces import IReplicableProcessor
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import HeaderFieldError
from namesrv.routes import topiclists
from namesrv.routes.bodies import decode, encode
from namesrv.routes.bodies.decode import BodyDecodeError
from namesrv.routes.model import ORDER_TOPIC_CONFIG
from namesrv.routes.queries import filter_by_zone
from processors.sliced import SlicedAnswers

#: 5.x's FAQUrl.APPLY_TOPIC_URL (4.9.8: http://rocketmq.apache.org/docs/faq/).
FAQ_URL = "https://rocketmq.apache.org/docs/bestPractice/06FAQ"
ZONE_MODE = "__ZONE_MODE"
#: a registration with at least this many topics freezes the collector's generations afterwards
FREEZE_AFTER_TOPICS = 1000
#: the part of a checked JSON body the unchanged-registration fingerprint reads: its dataVersion is there
FINGERPRINT_HEAD_BYTES = 512
ZONE_NAME = "__ZONE_NAME"

# Refusals that explain themselves: Java's remark first (whatever matches it still does),
# then what was wrong and what to do, on one line.
CRC_MISMATCH = ("crc32 not match: the body's CRC32 is %d but the bodyCrc32 header says %d; the body was "
                "altered on the way: the broker resends at its next registration")
SINGLE_TOPIC_REFUSED = ("register broker failed: broker %s id %s at %s is not registered here and sent a "
                        "registration with a single topic, taken as an incremental update racing a name server "
                        "restart (the 5.x rule) and refused; nothing to do: its next full registration "
                        "(within 30 s) is accepted")
NOT_READY = ("name server not ready: route queries are answered %.0f s after start (needWaitForService, "
             "waitSecondsForService) so that brokers re-register first; retry shortly")
LIST_DISABLED = "disable: topic lists are switched off on this name server (%s=false); set it to true to allow them"
TOO_LARGE = ("disable: this answer (%s) would take %s, more than the %d-byte frame (maxFrameLength, 16 MiB "
             "as every RocketMQ client's frameMaxLength) that a client accepts, so it is not sent; ask for a "
             "topic's route instead, or raise both limits")
#: bytes of a frame besides the body: the length fields (8) and room for the answer's header
FRAME_OVERHEAD = 8 + 1024

#: requests that change the route tables or list their topics whole: they wait while a snapshot is restored
WAIT_FOR_RESTORE = frozenset([
    RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER, RequestCode.WIPE_WRITE_PERM_OF_BROKER,
    RequestCode.ADD_WRITE_PERM_OF_BROKER, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    RequestCode.DELETE_TOPIC_IN_NAMESRV, RequestCode.REGISTER_TOPIC_IN_NAMESRV, RequestCode.GET_TOPICS_BY_CLUSTER,
    RequestCode.GET_UNIT_TOPIC_LIST, RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
    RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
])


def _topic_not_exist_remark(topic):
    return "No topic route info in name server for the topic: %s\nSee %s for further details." % (topic, FAQ_URL)


@implementer(IReplicableProcessor)
class RouteProcessor:
    name = "route"
    #: answered by read workers from their replica (namesrv/readworkers)
    replicable_codes = frozenset([RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO])
    codes = frozenset([
        RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER, RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.GET_BROKER_CLUSTER_INFO, RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.ADD_WRITE_PERM_OF_BROKER, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV, RequestCode.REGISTER_TOPIC_IN_NAMESRV,
        RequestCode.GET_TOPICS_BY_CLUSTER, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS,
        RequestCode.GET_UNIT_TOPIC_LIST, RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, RequestCode.QUERY_DATA_VERSION,
        RequestCode.GET_BROKER_MEMBER_GROUP, RequestCode.BROKER_HEARTBEAT,
    ])

    def __init__(self, context, timer=time.perf_counter):
        self.context = context
        #: an identical registration, with no table change since, only refreshes liveness (kept with the
        #: tables, so that a takeover carries it on)
        self.unchanged = self.routes.unchanged
        self.timer = timer
        #: whole-table lists are built a slice per step of the process's scheduler (processors/sliced.py)
        self.sliced = SlicedAnswers(context.scheduler)
        self._handlers = {
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic,
            RequestCode.REGISTER_TOPIC_IN_NAMESRV: self.register_topic,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: self._topic_list_handler(topiclists.is_unit),
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self._topic_list_handler(topiclists.is_unit_sub),
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self._topic_list_handler(topiclists.is_unit_sub_ununit),
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.GET_BROKER_MEMBER_GROUP: self.get_broker_member_group,
            RequestCode.BROKER_HEARTBEAT: self.broker_heartbeat,
        }

    # -- IRequestProcessor ------------------------------------------------------------
    def reject_request(self, request):
        return None

    def process_request(self, request, connection):
        restoring = self.routes.restoring
        if restoring is not None and (request.code in WAIT_FOR_RESTORE or (
                request.code == RequestCode.GET_ROUTEINFO_BY_TOPIC
                and (request.ext or {}).get("topic") not in self.routes.topic_queue_table)):
            # a snapshot is being restored (namesrv/storage/restoring.py): what it may not hold yet waits
            # for its end, never a TOPIC_NOT_EXIST or a partial list before
            handler = self._handlers[request.code]
            return restoring.wait().addCallback(lambda ignored: handler(request, connection))
        return self._handlers[request.code](request, connection)

    # -- helpers ------------------------------------------------------------------------
    @property
    def routes(self):
        return self.context.routes

    @staticmethod
    def _require_present(request, name):
        """A required String that may be empty (Java's @CFNotNull only refuses null)."""
        value = (request.ext or {}).get(name)
        if value is None:
            raise HeaderFieldError(name)
        return value

    @staticmethod
    def _error(request, remark):
        return request.make_response(ResponseCode.SYSTEM_ERROR, remark)

    def _order_topic_config_body(self):
        if not self.context.config.returnOrderTopicConfigToBroker:
            return None
        return self.context.kv.kv_table_body(ORDER_TOPIC_CONFIG)

    # -- REGISTER_BROKER / UNREGISTER_BROKER -------------------------------------------
    def register_broker(self, request, connection):
        started = self.timer()
        broker_name = request.require("brokerName")
        broker_addr = request.require("brokerAddr")
        cluster = request.require("clusterName")
        ha_server_addr = self._require_present(request, "haServerAddr")
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
                return self._error(request, CRC_MISMATCH % (crc, body_crc32))
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
            return self._error(request, "Failed to decode RegisterBrokerBody: %s" % e)

        wrapper = decoded.topic_config_wrapper
        result = self.routes.register_broker(
            cluster, broker_addr, broker_name, broker_id, ha_server_addr, wrapper, decoded.filter_server_list,
            connection, zone_name=zone_name, heartbeat_timeout_millis=heartbeat_timeout,
            enable_acting_master=enable_acting_master,
            delete_topic_with_broker_registration=delete_topics)
        if result is None:
            return self._error(request, SINGLE_TOPIC_REFUSED % (broker_name, broker_id, broker_addr))
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
        length. Hashing all 600 KB cost a million-topic fleet's first registration 0.37 ms a broker
        (bench/results/issue41-cold-registration.md, section 8). A body without a CRC, or deflated
        (4.9's ``compressedRegister``), is hashed whole.
        """
        body = request.body or b""
        digest = hashlib.sha256(repr((request.version, int(request.serialize_type),
                                      sorted((request.ext or {}).items()), delete_topics,
                                      len(body))).encode("utf-8", "surrogatepass"))
        # SHA-256: ~1 ms per MB (SHA-NI); blake2b is 3x slower here
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

    # -- routes ---------------------------------------------------------------------------
    def _ready(self):
        if not self.context.config.needWaitForService:
            return True
        elapsed = self.context.reactor.seconds() - self.context.started
        # A clock set backwards must not hold the grace forever (PITFALLS 5).
        return elapsed < 0 or elapsed >= float(self.context.config.waitSecondsForService)

    def get_route_info_by_topic(self, request, connection):
        topic = request.require("topic")
        if not self._ready():
            return self._error(request, NOT_READY % float(self.context.config.waitSecondsForService))
        standard = encode.use_standard_json(request.version, request.get_bool("acceptStandardJsonOnly", False))
        zone = request.get(ZONE_NAME)
        if not (request.get_bool(ZONE_MODE, False) and zone is not None and zone.strip()):
            zone = None
        body = self._route_body(standard, zone, topic)
        if body is None:
            response = request.make_response(ResponseCode.TOPIC_NOT_EXIST, _topic_not_exist_remark(topic))
        else:
            response = request.make_response(ResponseCode.SUCCESS, body=body)
        # The same request for another topic gets this header with that topic's body, or (None: no
        # such topic) this TOPIC_NOT_EXIST header naming that topic instead (answershapes.py).
        response.varies_by = ("topic", self._body_for(standard, zone))
        # tables, config and KV config: all invalidate the AnswerCache; not while a snapshot is restored (its
        # shape would answer a topic not restored yet TOPIC_NOT_EXIST)
        response.cacheable = self.routes.restoring is None
        return response

    def _route_body(self, standard, zone, topic):
        """The route body of ``topic`` as a request in this JSON style and zone asks it, or None."""
        if not self._ready():
            return None
        config = self.context.config
        order_topic_conf = self.context.kv.get(ORDER_TOPIC_CONFIG, topic) if config.orderMessageEnable else None
        acting = bool(config.supportActingMaster)
        if zone is not None:
            return self._zone_route_body(topic, zone, order_topic_conf, acting)
        return self.routes.route_body(topic, standard, order_topic_conf, acting)

    def _body_for(self, standard, zone):
        """``topic`` -> its route body (or None) as this request asks it, for the AnswerCache's shape.

        A shape lives only until the next change of the tables, the KV config or the configuration
        (each invalidates the AnswerCache), and is made from an answer given while ready: so the
        readiness, ``orderMessageEnable`` and ``supportActingMaster`` it saw still hold, and a topic
        whose joined body is kept (no order conf) costs one lookup."""
        slow = functools.partial(self._route_body, standard, zone)
        config = self.context.config
        if zone is not None:
            return slow
        joined = self.routes.joined_bodies(standard, bool(config.supportActingMaster))
        if config.orderMessageEnable:
            kv = self.context.kv

            def body_for(topic):
                body = joined.get(topic)
                if body is None or kv.get(ORDER_TOPIC_CONFIG, topic) is not None:
                    return slow(topic)
                return body
        else:
            def body_for(topic):
                body = joined.get(topic)
                return body if body is not None else slow(topic)
        return body_for

    def _zone_route_body(self, topic, zone, order_topic_conf, acting):
        """5.x ZoneRouteRPCHook: keep the zone's brokers (and masterless ones); always plain JSON."""
        route = self.routes.pickup_topic_route(topic, acting)
        if route is None:
            return None
        route.order_topic_conf = order_topic_conf
        filter_by_zone(route, zone)
        return encode.encode_topic_route(route, standard=False)

    def get_broker_cluster_info(self, request, connection):
        response = self._bounded(request, "cluster info", self.routes.cluster_info_body())
        response.cacheable = True
        return response

    def _bounded(self, request, what, body):
        """SUCCESS with ``body``, or the TooLarge remark when its frame would pass ``maxFrameLength``."""
        if len(body) > self._body_limit():
            return self._error(request, TOO_LARGE % (what, "{:,} bytes".format(len(body)),
                                                    self.context.config.maxFrameLength))
        return request.make_response(ResponseCode.SUCCESS, body=body)

    def get_broker_member_group(self, request, connection):
        cluster = request.require("clusterName")
        broker_name = request.require("brokerName")
        addrs = self.routes.broker_member_group(cluster, broker_name)
        return request.make_response(ResponseCode.SUCCESS,
                                     body=encode.encode_broker_member_group(cluster, broker_name, addrs))

    # -- permissions and topics -------------------------------------------------------------
    def wipe_write_perm_of_broker(self, request, connection):
        count = self.routes.wipe_write_perm_of_broker(request.require("brokerName"))
        return request.make_response(ResponseCode.SUCCESS, ext={"wipeTopicCount": str(count)})

    def add_write_perm_of_broker(self, request, connection):
        count = self.routes.add_write_perm_of_broker(request.require("brokerName"))
        return request.make_response(ResponseCode.SUCCESS, ext={"addTopicCount": str(count)})

    def get_all_topic_list(self, request, connection):
        if not self.context.config.enableAllTopicList:
            return self._error(request, LIST_DISABLED % "enableAllTopicList")
        limit = self._body_limit()
        return self._topic_list_answer(request, "all topics", ("all", limit),
                                       lambda: self.routes.all_topic_list_sliced(limit))

    def _body_limit(self):
        """The largest body an answer may carry so that its frame fits in ``maxFrameLength``."""
        return int(self.context.config.maxFrameLength) - FRAME_OVERHEAD

    def _topic_list_answer(self, request, what, key, make):
        """Answer with the body ``make()``'s generator builds over reactor turns, or the TooLarge remark."""
        def answer(body):
            return request.make_response(ResponseCode.SUCCESS, body=body)

        def refused(failure):
            failure.trap(topiclists.TooLarge)
            too_large = failure.value
            size = "{:,} bytes".format(too_large.size) if too_large.count is None else \
                "at least {:,} bytes ({:,} topics)".format(too_large.size, too_large.count)
            return self._error(request, TOO_LARGE % (what, size, self.context.config.maxFrameLength))

        try:
            # a table of one slice or less is answered in this turn, whatever the machine's load
            result = self.sliced.run(key, make, at_once=len(self.routes.topic_queue_table) <= topiclists.SLICE)
        except topiclists.TooLarge:
            return refused(Failure())
        if isinstance(result, defer.Deferred):
            return result.addCallbacks(answer, refused)
        return answer(result)

    def delete_topic(self, request, connection):
        topic = request.require("topic")
        self.routes.delete_topic(topic, request.get("clusterName"))
        return request.make_response(ResponseCode.SUCCESS)

    def register_topic(self, request, connection):
        topic = request.require("topic")
        if request.body:
            try:
                queue_datas = decode.decode_queue_datas(request.body)
            except BodyDecodeError as e:
                return self._error(request, "Failed to decode TopicRouteData: %s" % e)
            self.routes.register_topic(topic, queue_datas)
        return request.make_response(ResponseCode.SUCCESS)

    def get_topics_by_cluster(self, request, connection):
        if not self.context.config.enableTopicList:
            return self._error(request, LIST_DISABLED % "enableTopicList")
        cluster, limit = request.require("cluster"), self._body_limit()
        return self._topic_list_answer(request, "topics of cluster %s" % cluster, ("cluster", cluster, limit),
                                       lambda: self.routes.topics_by_cluster_sliced(cluster, limit))

    def get_system_topic_list(self, request, connection):
        topics, broker_addr = self.routes.system_topic_list()
        return self._bounded(request, "system topics", encode.encode_topic_list(topics, broker_addr))

    def _topic_list_handler(self, accept):
        def handler(request, connection):
            if not self.context.config.enableTopicList:
                return self._error(request, LIST_DISABLED % "enableTopicList")
            limit = self._body_limit()
            return self._topic_list_answer(request, accept.__name__.replace("_", " ") + " topics",
                                           (accept.__name__, limit),
                                           lambda: self.routes.topics_by_sys_flag_sliced(accept, limit))
        return handler

    # -- liveness ---------------------------------------------------------------------------
    def query_data_version(self, request, connection):
        request.require("brokerName")
        broker_addr = request.require("brokerAddr")
        cluster = request.require("clusterName")
        request.require_int("brokerId")
        try:
            data_version = decode.decode_data_version(request.body)
        except BodyDecodeError as e:
            return self._error(request, "Failed to decode DataVersion: %s" % e)
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
