"""The route tables: topics, brokers, clusters, liveness, filter servers, static-topic mappings.

Pure Python, no sockets and no reactor (see STYLE.md): processors call it, housekeeping
and the snapshot file drive it.
"""

from namesrv.routes.bodies.decode import BodyDecodeError
from namesrv.routes.manager import RouteInfoManager
from namesrv.routes.model import (
    MASTER_ID, PERM_INHERIT, PERM_READ, PERM_WRITE, BrokerData, BrokerLiveInfo, DataVersion, QueueData,
    RegisterBrokerBody, RegisterBrokerResult, RemovedBroker, TopicConfig, TopicConfigSerializeWrapper,
    TopicRouteData)

__all__ = [
    "RouteInfoManager", "BodyDecodeError", "MASTER_ID", "PERM_INHERIT", "PERM_READ", "PERM_WRITE", "BrokerData",
    "BrokerLiveInfo", "DataVersion", "QueueData", "RegisterBrokerBody", "RegisterBrokerResult", "RemovedBroker",
    "TopicConfig", "TopicConfigSerializeWrapper", "TopicRouteData",
]
