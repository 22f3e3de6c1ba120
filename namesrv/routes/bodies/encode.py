"""Answer bodies of the route requests (protocol bodies.md §3-§10), encoded as Java writes them.

Routes are standard JSON or fastjson's own dialect by the requester's version
(``use_standard_json``); every other answer is plain fastjson, like Java.
"""

from namesrv.codec import fastjson

#: Routes are standard JSON for requesters at or above V4_9_4.
VERSION_STANDARD_JSON = 401


def encode_data_version(data_version):
    return fastjson.dumps_plain(data_version).encode("utf-8")


# -- TopicRouteData -----------------------------------------------------------------

def use_standard_json(version, accept_standard_json_only):
    """The route encoding rule of 4.9.8 and 5.x (PITFALLS 6: exactly this, nothing wider)."""
    return version >= VERSION_STANDARD_JSON or bool(accept_standard_json_only)


def encode_topic_route(route, standard):
    if standard:
        return fastjson.dumps_standard(route).encode("ascii")
    return fastjson.dumps_plain(route).encode("utf-8")


# -- other answers (always plain fastjson, like Java) ---------------------------------

def encode_cluster_info(broker_addr_table, cluster_addr_table):
    """ClusterInfo: ``{"brokerAddrTable":{name: BrokerData}, "clusterAddrTable":{cluster: [names]}}``."""
    clusters = {cluster: sorted(names) for cluster, names in cluster_addr_table.items()}
    return fastjson.dumps_plain({"brokerAddrTable": broker_addr_table, "clusterAddrTable": clusters}).encode("utf-8")


def encode_topic_list(topics, broker_addr=None):
    return fastjson.dumps_plain({"brokerAddr": broker_addr, "topicList": list(topics)}).encode("utf-8")


def encode_broker_member_group(cluster, broker_name, broker_addrs):
    group = {"brokerAddrs": broker_addrs, "brokerName": broker_name, "cluster": cluster}
    return fastjson.dumps_plain({"brokerMemberGroup": group}).encode("utf-8")
