"""Every request code the server answers belongs to one class; authorization, isolation and metrics
work per class. This is the one table, for every port that speaks remoting (the name server's, the
controller's, and the read workers'); docs/security.md's table is generated from it
(``python -m namesrv.dispatch.classtable``).

The classes follow who sends the request and what it can break:

- ``route_read``: producers and consumers asking where to send and read (the hot path);
- ``broker_control``: brokers registering, heart-beating, leaving, and everything a broker asks of the
  controller (ids, in-sync sets, its own elections): what moves a master or a route;
- ``admin_read``: tools listing clusters, topics, KV entries, in-sync sets and the configuration;
- ``admin_write``: tools changing KV entries, the configuration, topics, broker permissions, or
  designating a master.

Each entry also names the header fields that say which resources a request touches (its cluster, broker
group and topic), for the ACL policies that allow or deny per resource; every broker-control request
names its broker group (``brokerName``), so a broker's account is scoped by ``Broker:<name>``. A processor plugin's own codes
join the table through IClassifiedProcessor; a code in no table is ``admin_write`` for the limits, and
refused outright when ACL is on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from namesrv.interfaces import IClassifiedProcessor, IRequestProcessor
from namesrv.protocol.codes import RequestCode as C
from namesrv.protocol.command import RemotingCommand

ROUTE_READ = "route_read"
BROKER_CONTROL = "broker_control"
ADMIN_READ = "admin_read"
ADMIN_WRITE = "admin_write"

#: In the order they are listed in metrics and reports.
ALL_CLASSES = (ROUTE_READ, BROKER_CONTROL, ADMIN_READ, ADMIN_WRITE)

#: Resource kinds an ACL policy may name (``Cluster:name``, ``Broker:name``, ``Topic:name``).
CLUSTER = "Cluster"
BROKER = "Broker"
TOPIC = "Topic"

NAMESRV = "namesrv"
CONTROLLER = "controller"


@dataclass(frozen=True)
class RequestClass:
    """One code's class, the header fields naming its resources, and where it is answered."""

    name: str
    resources: tuple[tuple[str, str], ...] = ()              # ((kind, header field), ...)
    ports: tuple[str, ...] = (NAMESRV,)
    #: (header field, class): when the field is "true" the request belongs to that class instead; () for none
    escalation: tuple[str, ...] = ()
    note: str = ""

    def classify(self, request: RemotingCommand) -> str:
        if self.escalation:
            field, stronger = self.escalation
            if request.get_bool(field, False):
                return stronger
        return self.name


_GROUP = ((CLUSTER, "clusterName"), (BROKER, "brokerName"))
_BROKER = ((BROKER, "brokerName"),)
_TOPIC = ((TOPIC, "topic"),)
_BOTH = (NAMESRV, CONTROLLER)
_CTRL = (CONTROLLER,)

TABLE: dict[int, RequestClass] = {
    C.GET_ROUTEINFO_BY_TOPIC: RequestClass(ROUTE_READ, _TOPIC, note="a topic's route (producers, consumers)"),
    C.CONTROLLER_GET_METADATA_INFO: RequestClass(ROUTE_READ, (), _CTRL,
                                                 note="which controller leads (brokers and tools find it)"),

    C.REGISTER_BROKER: RequestClass(BROKER_CONTROL, _GROUP, note="a broker registers its topics"),
    C.UNREGISTER_BROKER: RequestClass(BROKER_CONTROL, _GROUP, note="a broker leaves"),
    C.BROKER_HEARTBEAT: RequestClass(BROKER_CONTROL, _GROUP, _BOTH,
                                     note="a broker's liveness (on the controller port: what failover follows)"),
    C.QUERY_DATA_VERSION: RequestClass(BROKER_CONTROL, _GROUP, note="a broker asks whether to register again"),
    C.GET_BROKER_MEMBER_GROUP: RequestClass(BROKER_CONTROL, _GROUP,
                                            note="a 5.x broker asks for its group's members (acting master)"),
    C.CONTROLLER_ALTER_SYNC_STATE_SET: RequestClass(BROKER_CONTROL, _BROKER, _CTRL,
                                                    note="a master changes its in-sync set"),
    C.CONTROLLER_ELECT_MASTER: RequestClass(BROKER_CONTROL, _GROUP, _CTRL, escalation=("designateElect", ADMIN_WRITE),
                                            note="a broker asks for an election; with designateElect (mqadmin "
                                                 "electMaster) an admin designates the master"),
    C.CONTROLLER_REGISTER_BROKER: RequestClass(BROKER_CONTROL, _GROUP, _CTRL,
                                               note="a broker registers its address and epochs"),
    C.CONTROLLER_GET_REPLICA_INFO: RequestClass(BROKER_CONTROL, _BROKER, _CTRL,
                                                note="a broker reads its group's master and epochs"),
    C.CONTROLLER_GET_NEXT_BROKER_ID: RequestClass(BROKER_CONTROL, _GROUP, _CTRL, note="a broker asks for an id"),
    C.CONTROLLER_APPLY_BROKER_ID: RequestClass(BROKER_CONTROL, _GROUP, _CTRL, note="a broker claims an id"),

    C.GET_BROKER_CLUSTER_INFO: RequestClass(ADMIN_READ, note="every cluster and broker"),
    C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: RequestClass(ADMIN_READ, note="every topic"),
    C.GET_TOPICS_BY_CLUSTER: RequestClass(ADMIN_READ, ((CLUSTER, "cluster"),), note="a cluster's topics"),
    C.GET_SYSTEM_TOPIC_LIST_FROM_NS: RequestClass(ADMIN_READ, note="the system topics"),
    C.GET_UNIT_TOPIC_LIST: RequestClass(ADMIN_READ, note="the unit topics"),
    C.GET_HAS_UNIT_SUB_TOPIC_LIST: RequestClass(ADMIN_READ, note="topics with unit subscriptions"),
    C.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: RequestClass(ADMIN_READ, note="topics with unit subscriptions, not unit"),
    C.GET_KV_CONFIG: RequestClass(ADMIN_READ, note="one KV entry"),
    C.GET_KVLIST_BY_NAMESPACE: RequestClass(ADMIN_READ, note="a KV namespace"),
    C.GET_NAMESRV_CONFIG: RequestClass(ADMIN_READ, note="the name server's properties"),
    C.CONTROLLER_GET_SYNC_STATE_DATA: RequestClass(ADMIN_READ, (), _CTRL, note="in-sync sets (mqadmin getSyncStateSet)"),
    C.GET_CONTROLLER_CONFIG: RequestClass(ADMIN_READ, (), _CTRL, note="the controller's properties"),
    C.CONTROLLER_LIST_MEMBERS: RequestClass(ADMIN_READ, (), _CTRL,
                                            note="the controller group's members, roles and lag (listControllers)"),

    C.PUT_KV_CONFIG: RequestClass(ADMIN_WRITE, note="set a KV entry"),
    C.DELETE_KV_CONFIG: RequestClass(ADMIN_WRITE, note="delete a KV entry"),
    C.UPDATE_NAMESRV_CONFIG: RequestClass(ADMIN_WRITE, note="change run-time properties"),
    C.WIPE_WRITE_PERM_OF_BROKER: RequestClass(ADMIN_WRITE, _BROKER, note="stop writes to a broker"),
    C.ADD_WRITE_PERM_OF_BROKER: RequestClass(ADMIN_WRITE, _BROKER, note="allow writes to a broker again"),
    C.DELETE_TOPIC_IN_NAMESRV: RequestClass(ADMIN_WRITE, ((TOPIC, "topic"), (CLUSTER, "clusterName")),
                                            note="delete a topic's routes"),
    C.REGISTER_TOPIC_IN_NAMESRV: RequestClass(ADMIN_WRITE, _TOPIC, note="register a topic's routes"),
    C.UPDATE_CONTROLLER_CONFIG: RequestClass(ADMIN_WRITE, (), _CTRL, note="change the controller's run-time properties"),
    C.CLEAN_BROKER_DATA: RequestClass(ADMIN_WRITE, _GROUP, _CTRL, note="forget a broker group's controller metadata"),
    C.CONTROLLER_ADD_MEMBER: RequestClass(ADMIN_WRITE, (), _CTRL, note="add a controller to the group, as a learner"),
    C.CONTROLLER_PROMOTE_MEMBER: RequestClass(ADMIN_WRITE, (), _CTRL, note="make a caught-up learner a voter"),
    C.CONTROLLER_REMOVE_MEMBER: RequestClass(ADMIN_WRITE, (), _CTRL, note="remove a controller from the group"),
    C.CONTROLLER_TRANSFER_LEADER: RequestClass(ADMIN_WRITE, (), _CTRL, note="hand the group's leadership over"),
}


def normalize_class(name: str) -> str:
    """``routeRead``, ``route-read`` and ``ROUTE_READ`` all name ``route_read``; anything else is an error."""
    key = name.strip().replace("-", "").replace("_", "").lower()
    for request_class in ALL_CLASSES:
        if request_class.replace("_", "") == key:
            return request_class
    raise ValueError("unknown request class %r (expected one of %s)" % (name.strip(), ", ".join(ALL_CLASSES)))


def parse_class_list(text: Optional[str]) -> frozenset[str]:
    """A comma-separated property value → frozenset of class names (``all`` means every class)."""
    names = [part for part in (text or "").split(",") if part.strip()]
    if any(part.strip().lower() == "all" for part in names):
        return frozenset(ALL_CLASSES)
    return frozenset(normalize_class(part) for part in names)


class RequestClassifier:
    """Maps a request to its class and resources: the table above, then processors' ``code_classes``."""

    def __init__(self, extra: Optional[Mapping[int, str]] = None) -> None:
        self._entries = dict(TABLE)
        for code, name in (extra or {}).items():
            self._entries[int(code)] = RequestClass(normalize_class(name), note="a plugin processor's code")
        self._names = {code: entry.name for code, entry in self._entries.items()}

    @classmethod
    def for_processors(cls, processors: Iterable[IRequestProcessor]) -> RequestClassifier:
        extra: dict[int, str] = {}
        for processor in processors:
            if IClassifiedProcessor.providedBy(processor):
                extra.update(processor.code_classes)
        return cls(extra)

    def classify(self, code: int) -> str:
        """The class of ``code`` alone (metrics, limits): the escalation a header may ask for aside."""
        return self._names.get(code, ADMIN_WRITE)

    def classify_request(self, request: RemotingCommand) -> str:
        """The class of ``request``, the header's escalation included (``electMaster`` is an admin's)."""
        entry = self._entries.get(request.code)
        return entry.classify(request) if entry is not None else ADMIN_WRITE

    def resources(self, request: RemotingCommand) -> list[tuple[str, str]]:
        """``[(kind, name)]`` the request names, from the header fields its entry lists (absent ones left out)."""
        entry = self._entries.get(request.code)
        if entry is None:
            return []
        named = []
        for kind, field in entry.resources:
            value = request.get(field)
            if value:
                named.append((kind, value))
        return named

    def known(self, code: int) -> bool:
        return code in self._entries

    def entry(self, code: int) -> Optional[RequestClass]:
        return self._entries.get(code)
