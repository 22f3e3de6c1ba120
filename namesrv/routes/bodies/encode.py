"""Answer bodies of the route requests (protocol bodies.md §3-§10), encoded as Java writes them.

Routes are standard JSON or fastjson's own dialect by the requester's version
(``use_standard_json``); every other answer is plain fastjson, like Java.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Optional

from namesrv.codec import fastjson

if TYPE_CHECKING:   # types only
    from namesrv.routes.model import BrokerData, DataVersion, TopicRouteData

#: Routes are standard JSON for requesters at or above V4_9_4.
VERSION_STANDARD_JSON = 401


def encode_data_version(data_version: DataVersion) -> bytes:
    return fastjson.dumps_plain(data_version).encode("utf-8")


# -- TopicRouteData -----------------------------------------------------------------

def use_standard_json(version: int, accept_standard_json_only: object) -> bool:
    """The route encoding rule of 4.9.8 and 5.x (PITFALLS 6: exactly this, nothing wider)."""
    return version >= VERSION_STANDARD_JSON or bool(accept_standard_json_only)


def encode_topic_route(route: TopicRouteData, standard: bool) -> bytes:
    if standard:
        return fastjson.dumps_standard(route).encode("ascii")
    return fastjson.dumps_plain(route).encode("utf-8")


# -- other answers (always plain fastjson, like Java) ---------------------------------

def encode_cluster_info(broker_addr_table: Mapping[str, BrokerData], cluster_addr_table: Mapping[str, Iterable[str]]) \
        -> bytes:
    """ClusterInfo: ``{"brokerAddrTable":{name: BrokerData}, "clusterAddrTable":{cluster: [names]}}``."""
    clusters = {cluster: sorted(names) for cluster, names in cluster_addr_table.items()}
    return fastjson.dumps_plain({"brokerAddrTable": broker_addr_table, "clusterAddrTable": clusters}).encode("utf-8")


def encode_topic_list(topics: Iterable[str], broker_addr: Optional[str] = None) -> bytes:
    return fastjson.dumps_plain({"brokerAddr": broker_addr, "topicList": list(topics)}).encode("utf-8")


def encode_broker_member_group(cluster: str, broker_name: str, broker_addrs: Mapping[int, str]) -> bytes:
    group = {"brokerAddrs": broker_addrs, "brokerName": broker_name, "cluster": cluster}
    return fastjson.dumps_plain({"brokerMemberGroup": group}).encode("utf-8")


# -- TopicRouteData from pieces ----------------------------------------------------------
#
# A route body names no topic: it is its brokers' BrokerData and their QueueData, so every
# piece is shared by all topics on that broker (with 100,000 topics on 1,000 brokers, a
# broker's piece serves ~1,000 topics). Each piece is encoded once and a body is joined from
# them: the same bytes as encode_topic_route, for a few microseconds instead of ~100.

_ROUTE_HEAD = b'{"brokerDatas":['
_ROUTE_NO_FILTERS = b'],"filterServerTable":{}'
_ROUTE_ORDER_CONF = b',"orderTopicConf":'
_ROUTE_QUEUES = b',"queueDatas":['
_ROUTE_END = b']}'
_COMMA = b","


def encode_piece(value: object, standard: bool) -> bytes:
    """One value (a BrokerData, a QueueData, a string) as it appears inside a route body."""
    if standard:
        return fastjson.dumps_standard(value).encode("ascii")
    return fastjson.dumps_plain(value).encode("utf-8")


def join_topic_route(broker_pieces: Iterable[bytes], queue_pieces: Iterable[bytes], order_topic_conf: Optional[str],
                     standard: bool) -> bytes:
    """The TopicRouteData body of these pieces (sorted by broker name), with no filter servers
    and no static-topic mapping: byte for byte what ``encode_topic_route`` writes for them."""
    parts = [_ROUTE_HEAD, _COMMA.join(broker_pieces), _ROUTE_NO_FILTERS]
    if order_topic_conf is not None:
        parts.append(_ROUTE_ORDER_CONF)
        parts.append(encode_piece(order_topic_conf, standard))
    parts.append(_ROUTE_QUEUES)
    parts.append(_COMMA.join(queue_pieces))
    parts.append(_ROUTE_END)
    return b"".join(parts)
