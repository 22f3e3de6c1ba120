"""Builders shared by the route tests: topic tables, registrations (fakes come from tests/fakes.py)."""

from twisted.internet.task import Clock

from namesrv.routes import RouteInfoManager
from namesrv.routes.model import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from tests.fakes import FakeConnection, RecordingEventLog, topic_changes  # noqa: F401 (shared by the route tests)

CLUSTER = "DefaultCluster"
BROKER = "broker-a"
MASTER_ADDR = "127.0.0.1:10911"
SLAVE_ADDR = "127.0.0.1:30911"
MASTER_HA = "127.0.0.1:20911"
SLAVE_HA = "127.0.0.1:40911"


def new_routes(clock=None, events=None):
    return RouteInfoManager(clock=clock or Clock(), events=events)


def topic(name, queues=8, perm=6, sys_flag=0):
    return TopicConfig(name, queues, queues, perm, "SINGLE_TAG", sys_flag)


def wrapper(*topics, counter=1, timestamp=1700000000000, state=0, mappings=None):
    configs = [t if isinstance(t, TopicConfig) else topic(t) for t in topics]
    return TopicConfigSerializeWrapper(DataVersion(timestamp, counter, state), {c.topic_name: c for c in configs},
                                       mappings or {})


def register(routes, *topics, cluster=CLUSTER, name=BROKER, addr=MASTER_ADDR, broker_id=0, ha=None, counter=1,
             conn=None, acting=None, timeout=None, state=0, filters=(), delete_topics=False, base_topic=True,
             zone=None, mappings=None):
    """Register like the Java tests do: every table also carries ``baseTopic`` unless told otherwise."""
    names = (["baseTopic"] if base_topic else []) + list(topics)
    return routes.register_broker(
        cluster, addr, name, broker_id, ha or addr, wrapper(*names, counter=counter, state=state, mappings=mappings),
        list(filters), conn, zone_name=zone, heartbeat_timeout_millis=timeout, enable_acting_master=acting,
        delete_topic_with_broker_registration=delete_topics)


def addrs_of(routes, topic_name, support_acting_master=True):
    route = routes.pickup_topic_route(topic_name, support_acting_master)
    assert route is not None, "no route for %s" % topic_name
    assert len(route.broker_datas) == 1
    return route.broker_datas[0].broker_addrs


def perm_of(routes, topic_name, broker_name=BROKER):
    return routes.topic_queue_table[topic_name][broker_name].perm


def populated(clock):
    """Tables with a bit of everything: two clusters, a slave, mappings, a wiped broker."""
    routes = new_routes(clock)
    register(routes, "T", "U", conn=FakeConnection(), acting=True, zone="z1", filters=["f:1"], state=3,
             mappings={"U": {"bname": BROKER, "currIdMap": {0: 0, 1: 1}, "topic": "U", "epoch": 2}})
    register(routes, "T", addr=SLAVE_ADDR, broker_id=1, conn=FakeConnection(), acting=True, timeout=10000)
    register(routes, "T", "V", cluster="C2", name="broker-b", addr="127.0.0.1:2")
    routes.wipe_write_perm_of_broker("broker-b")
    return routes


def same_tables(a, b):
    """Every answer two route tables give is the same (and their live rows and mappings)."""
    from namesrv.routes import rows
    assert a.topic_names() == b.topic_names()
    assert [a.route_body(t, True) for t in a.topic_names()] == [b.route_body(t, True) for t in b.topic_names()]
    assert a.cluster_info_body() == b.cluster_info_body()
    assert sorted(map(str, rows.live_rows(a))) == sorted(map(str, rows.live_rows(b)))
    assert a.topic_queue_mapping_info_table == b.topic_queue_mapping_info_table
