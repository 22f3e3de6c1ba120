"""The route processor (the ``route`` plugin): broker registration and every route and topic request, on
one set of tables (requests.md).

Java splits these between two processors, and so do we, by the same line, in three modules:

- ``brokers.py``: DefaultRequestProcessor's brokers' part (REGISTER_BROKER, UNREGISTER_BROKER,
  BROKER_HEARTBEAT, QUERY_DATA_VERSION, GET_BROKER_MEMBER_GROUP);
- ``client.py``: ClientRequestProcessor (GET_ROUTEINFO_BY_TOPIC), which read workers answer from their
  replica too;
- ``topics.py``: DefaultRequestProcessor's tools' part (cluster info, topic lists, write permissions,
  topics deleted or registered by hand).

Java's DefaultRequestProcessor also answers the KV and configuration codes: here the ``kvconfig`` and
``default`` processors do (processors/kvconfig.py, processors/default.py). Every request that changes the
tables or lists them whole waits while a route snapshot is restored (namesrv/storage/restoring.py).
"""

import time

from zope.interface import implementer

from namesrv.interfaces import IReplicableProcessor
from namesrv.protocol.codes import RequestCode
from namesrv.routes import topiclists
from processors.route.brokers import FINGERPRINT_HEAD_BYTES, BrokerRequests
from processors.route.client import ClientRequests
from processors.route.common import FRAME_OVERHEAD
from processors.route.topics import TopicRequests

__all__ = ["RouteProcessor", "FINGERPRINT_HEAD_BYTES", "FRAME_OVERHEAD"]

#: requests that change the route tables or list their topics whole: they wait while a snapshot is restored
WAIT_FOR_RESTORE = frozenset([
    RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER, RequestCode.WIPE_WRITE_PERM_OF_BROKER,
    RequestCode.ADD_WRITE_PERM_OF_BROKER, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    RequestCode.DELETE_TOPIC_IN_NAMESRV, RequestCode.REGISTER_TOPIC_IN_NAMESRV, RequestCode.GET_TOPICS_BY_CLUSTER,
    RequestCode.GET_UNIT_TOPIC_LIST, RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
    RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
])


@implementer(IReplicableProcessor)
class RouteProcessor:
    name = "route"
    #: answered by read workers from their replica (namesrv/readworkers)
    replicable_codes = frozenset([RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO])

    def __init__(self, context, timer=time.perf_counter):
        self.context = context
        brokers = self.brokers = BrokerRequests(context, timer)
        client = self.client = ClientRequests(context)
        topics = self.topics = TopicRequests(context)
        self._handlers = {
            RequestCode.REGISTER_BROKER: brokers.register_broker,
            RequestCode.UNREGISTER_BROKER: brokers.unregister_broker,
            RequestCode.BROKER_HEARTBEAT: brokers.broker_heartbeat,
            RequestCode.QUERY_DATA_VERSION: brokers.query_data_version,
            RequestCode.GET_BROKER_MEMBER_GROUP: brokers.get_broker_member_group,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: client.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: topics.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: topics.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: topics.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: topics.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: topics.delete_topic,
            RequestCode.REGISTER_TOPIC_IN_NAMESRV: topics.register_topic,
            RequestCode.GET_TOPICS_BY_CLUSTER: topics.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: topics.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: topics.topic_list_handler(topiclists.is_unit),
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: topics.topic_list_handler(topiclists.is_unit_sub),
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: topics.topic_list_handler(topiclists.is_unit_sub_ununit),
        }
        self.codes = frozenset(self._handlers)

    @property
    def routes(self):
        return self.context.routes

    @property
    def unchanged(self):
        """The unchanged-registration shortcut's state (kept with the tables)."""
        return self.brokers.unchanged

    @property
    def sliced(self):
        return self.topics.sliced

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
