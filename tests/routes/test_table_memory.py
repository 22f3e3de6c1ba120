"""What the route tables keep per entry: one string per topic, and no dict per topic nor set per broker
(routes/tables.py, routes/queuemaps.py)."""

from namesrv.routes.model import QueueData
from tests.routes.helpers import new_routes, register

TOPICS = ["Fleet%06d" % i for i in range(300)]


def fresh(name):
    """An equal string that is not the same object (as each decoded registration body has its own)."""
    return "".join(list(name))


def assert_one_string_per_topic(tables):
    keys = {key: key for key in tables.topic_queue_table}
    for qmap in tables.queue_maps:
        for topic in qmap.topics:
            assert topic is keys[topic], topic


def test_brokers_registering_the_same_topics_share_the_table_strings():
    routes = new_routes()
    for b in range(4):
        names = [fresh(t) for t in TOPICS[b * 25:b * 25 + 200]]
        register(routes, *names, name="broker-%d" % b, addr="127.0.0.%d:10911" % (b + 1), base_topic=False)
    tables = routes.tables
    assert_one_string_per_topic(tables)
    assert len(tables.topics_of("broker-3")) == 200 and tables.topic_count_of("broker-3") == 200


def test_a_replica_part_with_its_own_strings_shares_them_too():
    routes = new_routes()
    register(routes, *TOPICS[:100], name="a", addr="127.0.0.1:10911", base_topic=False)
    tables = routes.tables
    row = ("b", 8, 8, 6, 0)
    tables.apply_topic_rows({fresh(t): [(fresh("b"),) + row[1:]] for t in TOPICS[:150]})
    assert_one_string_per_topic(tables)
    assert tables.topic_queue_table[TOPICS[120]] == {"b": QueueData(*row)}
    names = {id(name) for topic in TOPICS[:150] for name in tables.topic_queue_table[topic] if name == "b"}
    assert len(names) == 1     # one brokerName string, not one per decoded row


def test_a_fleet_keeps_one_map_per_distinct_set_of_brokers_and_one_index_entry_per_topic():
    routes = new_routes()
    for b in range(10):   # each topic on up to 4 brokers, neighbours sharing most of theirs
        register(routes, *TOPICS[b * 25:b * 25 + 100], name="broker-%d" % b, addr="127.0.0.%d:10911" % (b + 1),
                 base_topic=False)
    tables = routes.tables
    assert len(tables.queue_maps) <= 2 * 10 + 4
    assert sum(len(qmap.topics) for qmap in tables.queue_maps) == len(tables.topic_queue_table)
    assert len({id(qmap) for qmap in tables.topic_queue_table.values()}) == len(tables.queue_maps)
