"""Every request code belongs to one class; authorization, isolation and metrics work per class.

The classes follow who sends the request and what it can break:

- ``route_read``: producers and consumers asking for a topic's route (the hot path);
- ``broker_control``: brokers registering, heart-beating and leaving;
- ``admin_read``: tools listing clusters, topics, KV entries and the configuration;
- ``admin_write``: tools changing KV entries, the configuration, topics or broker permissions.

A code no table knows (a plugin processor's own code) is ``admin_write`` unless its
processor declares otherwise with a ``code_classes`` mapping: unknown means most guarded.
"""

from namesrv.protocol.codes import RequestCode as C

ROUTE_READ = "route_read"
BROKER_CONTROL = "broker_control"
ADMIN_READ = "admin_read"
ADMIN_WRITE = "admin_write"

#: In the order they are listed in metrics and reports.
ALL_CLASSES = (ROUTE_READ, BROKER_CONTROL, ADMIN_READ, ADMIN_WRITE)

DEFAULT_CLASSES = {
    C.GET_ROUTEINFO_BY_TOPIC: ROUTE_READ,

    C.REGISTER_BROKER: BROKER_CONTROL,
    C.UNREGISTER_BROKER: BROKER_CONTROL,
    C.BROKER_HEARTBEAT: BROKER_CONTROL,
    C.QUERY_DATA_VERSION: BROKER_CONTROL,
    C.NOTIFY_MIN_BROKER_ID_CHANGE: BROKER_CONTROL,

    C.GET_BROKER_CLUSTER_INFO: ADMIN_READ,
    C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: ADMIN_READ,
    C.GET_TOPICS_BY_CLUSTER: ADMIN_READ,
    C.GET_SYSTEM_TOPIC_LIST_FROM_NS: ADMIN_READ,
    C.GET_UNIT_TOPIC_LIST: ADMIN_READ,
    C.GET_HAS_UNIT_SUB_TOPIC_LIST: ADMIN_READ,
    C.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: ADMIN_READ,
    C.GET_KV_CONFIG: ADMIN_READ,
    C.GET_KVLIST_BY_NAMESPACE: ADMIN_READ,
    C.GET_NAMESRV_CONFIG: ADMIN_READ,
    C.GET_BROKER_MEMBER_GROUP: ADMIN_READ,
    C.CONTROLLER_LIST_MEMBERS: ADMIN_READ,

    C.PUT_KV_CONFIG: ADMIN_WRITE,
    C.DELETE_KV_CONFIG: ADMIN_WRITE,
    C.UPDATE_NAMESRV_CONFIG: ADMIN_WRITE,
    C.WIPE_WRITE_PERM_OF_BROKER: ADMIN_WRITE,
    C.ADD_WRITE_PERM_OF_BROKER: ADMIN_WRITE,
    C.DELETE_TOPIC_IN_NAMESRV: ADMIN_WRITE,
    C.REGISTER_TOPIC_IN_NAMESRV: ADMIN_WRITE,
    C.CONTROLLER_ADD_MEMBER: ADMIN_WRITE,
    C.CONTROLLER_PROMOTE_MEMBER: ADMIN_WRITE,
    C.CONTROLLER_REMOVE_MEMBER: ADMIN_WRITE,
    C.CONTROLLER_TRANSFER_LEADER: ADMIN_WRITE,
}


def normalize_class(name):
    """``routeRead``, ``route-read`` and ``ROUTE_READ`` all name ``route_read``; anything else is an error."""
    key = name.strip().replace("-", "").replace("_", "").lower()
    for request_class in ALL_CLASSES:
        if request_class.replace("_", "") == key:
            return request_class
    raise ValueError("unknown request class %r (expected one of %s)" % (name.strip(), ", ".join(ALL_CLASSES)))


def parse_class_list(text):
    """A comma-separated property value → frozenset of class names (``all`` means every class)."""
    names = [part for part in (text or "").split(",") if part.strip()]
    if any(part.strip().lower() == "all" for part in names):
        return frozenset(ALL_CLASSES)
    return frozenset(normalize_class(part) for part in names)


class RequestClassifier:
    """Maps a request code to its class: the table above, then processors' ``code_classes``."""

    def __init__(self, extra=None):
        self._classes = {int(code): cls for code, cls in DEFAULT_CLASSES.items()}
        for code, cls in (extra or {}).items():
            self._classes[int(code)] = normalize_class(cls)

    @classmethod
    def from_registry(cls, registry):
        extra = {}
        for processor in getattr(registry, "processors", ()):
            extra.update(getattr(processor, "code_classes", None) or {})
        return cls(extra)

    def classify(self, code):
        return self._classes.get(code, ADMIN_WRITE)

    def known(self, code):
        return code in self._classes
