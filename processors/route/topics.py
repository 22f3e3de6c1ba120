"""Java's DefaultRequestProcessor, its tools' part: the cluster info, the topic lists, a broker's write
permission, and topics deleted or registered by hand (requests.md).

The whole-table lists are built a slice per step of the process's scheduler (processors/sliced.py), and an
answer too large for a client's frame says so instead of being sent (Java sends it, and the client drops
the connection).
"""

from twisted.internet import defer
from twisted.python.failure import Failure

from namesrv.protocol.codes import ResponseCode
from namesrv.routes import topiclists
from namesrv.routes.bodies import decode, encode
from namesrv.routes.bodies.decode import BodyDecodeError
from processors.route.common import LIST_DISABLED, TOO_LARGE, RouteRequests
from processors.sliced import SlicedAnswers


class TopicRequests(RouteRequests):
    def __init__(self, context):
        RouteRequests.__init__(self, context)
        #: whole-table lists are built a slice per step of the process's scheduler (processors/sliced.py)
        self.sliced = SlicedAnswers(context.scheduler)

    def get_broker_cluster_info(self, request, connection):
        response = self.bounded(request, "cluster info", self.routes.cluster_info_body())
        response.cacheable = True
        return response

    # -- permissions and topics -------------------------------------------------------------
    def wipe_write_perm_of_broker(self, request, connection):
        count = self.routes.wipe_write_perm_of_broker(request.require("brokerName"))
        return request.make_response(ResponseCode.SUCCESS, ext={"wipeTopicCount": str(count)})

    def add_write_perm_of_broker(self, request, connection):
        count = self.routes.add_write_perm_of_broker(request.require("brokerName"))
        return request.make_response(ResponseCode.SUCCESS, ext={"addTopicCount": str(count)})

    def get_all_topic_list(self, request, connection):
        if not self.context.config.enableAllTopicList:
            return self.error(request, LIST_DISABLED % "enableAllTopicList")
        limit = self.body_limit()
        return self._topic_list_answer(request, "all topics", ("all", limit),
                                       lambda: self.routes.all_topic_list_sliced(limit))

    def _topic_list_answer(self, request, what, key, make):
        """Answer with the body ``make()``'s generator builds over reactor turns, or the TooLarge remark."""
        def answer(body):
            return request.make_response(ResponseCode.SUCCESS, body=body)

        def refused(failure):
            failure.trap(topiclists.TooLarge)
            too_large = failure.value
            size = "{:,} bytes".format(too_large.size) if too_large.count is None else \
                "at least {:,} bytes ({:,} topics)".format(too_large.size, too_large.count)
            return self.error(request, TOO_LARGE % (what, size, self.context.config.maxFrameLength))

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
                return self.error(request, "Failed to decode TopicRouteData: %s" % e)
            self.routes.register_topic(topic, queue_datas)
        return request.make_response(ResponseCode.SUCCESS)

    def get_topics_by_cluster(self, request, connection):
        if not self.context.config.enableTopicList:
            return self.error(request, LIST_DISABLED % "enableTopicList")
        cluster, limit = request.require("cluster"), self.body_limit()
        return self._topic_list_answer(request, "topics of cluster %s" % cluster, ("cluster", cluster, limit),
                                       lambda: self.routes.topics_by_cluster_sliced(cluster, limit))

    def get_system_topic_list(self, request, connection):
        topics, broker_addr = self.routes.system_topic_list()
        return self.bounded(request, "system topics", encode.encode_topic_list(topics, broker_addr))

    def topic_list_handler(self, accept):
        def handler(request, connection):
            if not self.context.config.enableTopicList:
                return self.error(request, LIST_DISABLED % "enableTopicList")
            limit = self.body_limit()
            return self._topic_list_answer(request, accept.__name__.replace("_", " ") + " topics",
                                           (accept.__name__, limit),
                                           lambda: self.routes.topics_by_sys_flag_sliced(accept, limit))
        return handler

