"""A publication sends the topics of one map side by side, so a worker applies a mass disconnect map by map.

A mass disconnect takes every topic away, a few at a time from each of the maps of topics that share their
brokers. Sent in the order a set happens to hold them, each part of 500 topics took a few from each of about
400 maps, and the worker planned one move per map per part: 0.3 s of its CPU for 100,000 topics, during which its
replica answered nothing (bench/results/many-connections.md, third round). The tables report a map's topics
together, and the publisher now keeps them in that order."""

from namesrv.readworkers.channel.feed import down_reader, publication
from namesrv.readworkers.main.publisher import TopicTracker
from processors.route import RouteProcessor
from tests.brokers import register_request
from tests.fakes import FakeConnection
from tests.readworkers.harness import Harness

BROKERS = 6
TOPICS = 60


def fleet(harness):
    """Six brokers on connections of their own; topic i is on brokers i, i+1 and i+2 (mod 6): six maps of ten."""
    connections = []
    for b in range(BROKERS):
        connection = FakeConnection("10.9.9.%d:1" % (b + 1))
        topics = ["Topic%03d" % i for i in range(TOPICS) if b in {i % BROKERS, (i + 1) % BROKERS, (i + 2) % BROKERS}]
        harness.service.registry.dispatch(
            register_request("C1", "broker-%d" % b, "10.0.0.%d:10911" % (b + 1), topics=topics), connection)
        connections.append(connection)
    return connections


def runs(names, group_of):
    """How many runs of neighbours from one group ``names`` makes."""
    return sum(1 for i, name in enumerate(names) if i == 0 or group_of[name] != group_of[names[i - 1]])


def test_a_mass_disconnect_is_published_map_by_map_and_the_replica_follows(tmp_path):
    harness = Harness(tmp_path)
    connections = fleet(harness)
    harness.publish(incremental=True)
    table = harness.service.routes.topic_queue_table
    group_of = {topic: frozenset(qmap.keys()) for topic, qmap in table.items()}
    assert len(group_of) == TOPICS and len(set(group_of.values())) == BROKERS
    for connection in connections:                    # all at once, as when a switch reboots
        harness.service.housekeeping.connection_closed(connection)
    harness.service.housekeeping.flush()
    assert not table
    full, topics = harness.tracker.take()
    assert not full and sorted(topics) == sorted(group_of)
    assert runs(list(topics), group_of) == BROKERS    # each map's ten topics side by side
    data = b"".join(publication(harness.shared.value, harness.service.routes, harness.service.kv,
                                harness.service.config, harness.service.context.started,
                                RouteProcessor.replicable_codes, topics, part_topics=10, quiet=True,
                                brokers=harness.tracker.take_brokers()))
    messages = down_reader().feed(data)
    parts = [m for m in messages if m["kind"] == "topics"]
    assert len(parts) == TOPICS // 10
    for part in parts:                                # a part is one map's topics: one move on the worker
        assert len({group_of[name] for name in part["shapes"]["gone"]}) == 1
    for message in messages:
        assert harness.replica.apply(message)
    assert not harness.replica.context.routes.topic_queue_table
    harness.assert_same_answers(["Topic000", "Topic001"])


def test_the_tracker_keeps_topics_in_the_order_they_were_first_reported():
    tracker = TopicTracker()
    tracker.take()
    tracker.update(["b", "a"])
    tracker.update(("c", "a"), ["d"])
    tracker.update({"e": None})
    assert len(tracker) == 5 and "a" in tracker and tracker
    full, topics = tracker.take()
    assert not full and list(topics) == ["b", "a", "c", "d", "e"] and not tracker
