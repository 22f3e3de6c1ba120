"""What a replica message carries of the route tables: every topic once, then only changed ones.

The main process's tables change topic by topic (a broker's registration touches its
own topics), so after a worker's first, full copy, each message carries the current
QueueData and static-topic mappings of the topics changed since the previous message
(``None``: the topic is gone), plus the broker-level tables whole: they hold one entry
per broker and clusters, not per topic. A message states values, not differences, so
applying one twice, or one that overlaps a full copy, is harmless.
"""

from namesrv.routes.model import BrokerData, QueueData, shared_queue_data


class TopicTracker(set):
    """Topics changed since the last ``take()``; ``full`` when every topic must be sent."""

    def __init__(self):
        set.__init__(self)
        self.full = True

    def take(self):
        """(full, topics) since the previous take, and start over."""
        full, topics = self.full, set(self)
        self.full = False
        self.clear()
        return full, topics


def _queue_datas(qmap):
    return [[qd.broker_name, qd.read_queue_nums, qd.write_queue_nums, qd.perm, qd.topic_sys_flag]
            for qd in qmap.values()]


def encode_tables(routes, topics=None):
    """The tables as plain data: every topic when ``topics`` is None, else just those."""
    queue_table = routes.topic_queue_table
    mappings = routes.topic_queue_mapping_info_table
    if topics is None:
        topic_part = {topic: _queue_datas(qmap) for topic, qmap in queue_table.items()}
        mapping_part = dict(mappings)
    else:
        topic_part = {}
        mapping_part = {}
        for topic in topics:
            qmap = queue_table.get(topic)
            topic_part[topic] = _queue_datas(qmap) if qmap else None
            mapping_part[topic] = mappings.get(topic)
    return {
        "full": topics is None,
        "topics": topic_part,
        "mappings": mapping_part,
        "brokers": [[bd.broker_name, bd.cluster, bd.zone_name, bd.enable_acting_master,
                     [[broker_id, addr] for broker_id, addr in bd.broker_addrs.items()]]
                    for bd in routes.broker_addr_table.values()],
        "clusters": {cluster: sorted(names) for cluster, names in routes.cluster_addr_table.items()},
        "filters": [[cluster, addr, list(servers)] for (cluster, addr), servers in routes.filter_server_table.items()],
    }


#: topics applied per step: ~1.5 ms of work, so a big delta does not hold the worker's reactor
STEP_TOPICS = 500


def apply_tables(routes, tables):
    """Bring a worker's RouteInfoManager to the state ``tables`` describes, in one go."""
    for _ in apply_steps(routes, tables):
        pass


def apply_steps(routes, tables, step_topics=STEP_TOPICS):
    """``apply_tables`` as a generator: it yields between steps of ``step_topics`` topics.

    The tables are inconsistent until it is exhausted, so the worker forwards every read
    meanwhile. The data comes from our own main process over a private pipe, so it is
    trusted as to shape; a malformed message raises (KeyError, TypeError, ValueError) and
    the worker then answers nothing locally until the next full copy.
    """
    if tables["full"]:
        routes.topic_queue_table = {}
        routes.topic_queue_mapping_info_table = {}
    queue_table = routes.topic_queue_table
    done = 0
    for topic, queue_datas in tables["topics"].items():
        if queue_datas is None:
            queue_table.pop(topic, None)
        else:
            queue_table[topic] = {qd[0]: shared_queue_data(QueueData(*qd)) for qd in queue_datas}
        done += 1
        if done % step_topics == 0:
            yield
    mapping_table = routes.topic_queue_mapping_info_table
    for topic, by_broker in tables["mappings"].items():
        if by_broker is None:
            mapping_table.pop(topic, None)
        else:
            mapping_table[topic] = by_broker
    brokers = {}
    for name, cluster, zone, acting, addrs in tables["brokers"]:
        brokers[name] = BrokerData(cluster, name, {int(broker_id): addr for broker_id, addr in addrs}, zone,
                                   bool(acting))
    routes.broker_addr_table = brokers
    routes.cluster_addr_table = {cluster: set(names) for cluster, names in tables["clusters"].items()}
    routes.filter_server_table = {(cluster, addr): list(servers) for cluster, addr, servers in tables["filters"]}
    routes._init_caches()   # every cached answer body may be stale now
