"""Java's ClientRequestProcessor (5.x; in 4.9 part of DefaultRequestProcessor): GET_ROUTEINFO_BY_TOPIC,
the producers' and consumers' read, the one a read worker answers from its replica.

Its answer is cacheable (protocol/answercache.py): a pure function of the request's header and of the
tables, KV config and configuration, each of which invalidates the cache when it changes. Its
``varies_by`` says how the same request for another topic would be answered (answershapes.py).
"""

import functools

from namesrv.protocol.codes import ResponseCode
from namesrv.routes.bodies import encode
from namesrv.routes.model import ORDER_TOPIC_CONFIG
from namesrv.routes.queries import filter_by_zone
from processors.route.common import FAQ_URL, RouteRequests

ZONE_MODE = "__ZONE_MODE"
ZONE_NAME = "__ZONE_NAME"
NOT_READY = ("name server not ready: route queries are answered %.0f s after start (needWaitForService, "
             "waitSecondsForService) so that brokers re-register first; retry shortly")


def _topic_not_exist_remark(topic):
    return "No topic route info in name server for the topic: %s\nSee %s for further details." % (topic, FAQ_URL)


class ClientRequests(RouteRequests):
    def _ready(self):
        if not self.context.config.needWaitForService:
            return True
        elapsed = self.context.reactor.seconds() - self.context.started
        # A clock set backwards must not hold the grace forever (PITFALLS 5).
        return elapsed < 0 or elapsed >= float(self.context.config.waitSecondsForService)

    def get_route_info_by_topic(self, request, connection):
        topic = request.require("topic")
        if not self._ready():
            return self.error(request, NOT_READY % float(self.context.config.waitSecondsForService))
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

