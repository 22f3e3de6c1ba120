"""Split registration (5.x ``enableSplitRegistration``) as a 5.3.3 broker sends it, frame for frame.

A 5.3.3 broker with more than ``splitRegistrationSize`` (800) topics sends its topic table in parts
of 800, then one part with the rest, every ``registerNameServerPeriod``: one REGISTER_BROKER per
part, each with the same header and the next DataVersion counter (``buildSerializeWrapper`` steps
the broker's DataVersion for every part). The frames here have the shape captured from a real
5.3.3 broker (tests/integration/test_split_registration.py runs one): header fields in its order,
version 479, and a body with ``mappingDataVersion`` and the two static-topic maps.
"""

import json

import pytest

from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.routes.bodies import decode
from tests.fakes import FakeConnection, topic_changes
from tests.processors.world import world  # noqa: F401  (fixture)


V5_3_3 = 479
SPLIT_SIZE = 800
BROKER = {"brokerId": "0", "clusterName": "SplitCluster", "brokerAddr": "127.0.0.1:19911",
          "enableActingMaster": "false", "haServerAddr": "192.0.2.2:19912", "brokerName": "split-a"}


def _topic(name, perm=6):
    return {"attributes": {}, "order": False, "perm": perm, "readQueueNums": 4, "topicFilterType": "SINGLE_TAG",
            "topicName": name, "topicSysFlag": 0, "writeQueueNums": 4}


def split_frames(topics, counter, timestamp=1795690584758):
    """The REGISTER_BROKER requests of one registration round of a 5.3.3 broker with split registration."""
    parts = [topics[i:i + SPLIT_SIZE] for i in range(0, len(topics) - len(topics) % SPLIT_SIZE, SPLIT_SIZE)]
    parts.append(topics[len(parts) * SPLIT_SIZE:])   # the rest, even when empty
    frames = []
    for n, part in enumerate(parts):
        version = {"counter": counter + n, "stateVersion": 0, "timestamp": timestamp + 10 * n}
        wrapper = {"dataVersion": version,
                   "mappingDataVersion": {"counter": 0, "stateVersion": 0, "timestamp": timestamp},
                   "topicConfigTable": {t["topicName"]: t for t in part},
                   "topicQueueMappingDetailMap": {}, "topicQueueMappingInfoMap": {}}
        body = json.dumps({"filterServerList": [], "topicConfigSerializeWrapper": wrapper},
                          separators=(",", ":")).encode()
        ext = dict(BROKER, bodyCrc32=str(decode.crc32(body)), compressed="false")
        frames.append(make_request(RequestCode.REGISTER_BROKER, ext, body=body, version=V5_3_3))
    return frames


TOPICS = [_topic("T%05d" % i) for i in range(3 * SPLIT_SIZE + 13)]


def _round(world, frames, conn):
    return [world.call(frame, conn) for frame in frames]


def test_every_part_adds_its_topics_and_none_wipes_another(world):
    conn = FakeConnection()
    frames = split_frames(TOPICS, counter=8)
    assert [len(json.loads(f.body)["topicConfigSerializeWrapper"]["topicConfigTable"]) for f in frames] == \
        [800, 800, 800, 13]
    for n, frame in enumerate(frames):
        assert world.call(frame, conn).code == ResponseCode.SUCCESS
        present = sum(1 for t in TOPICS if t["topicName"] in world.routes.topic_queue_table)
        assert present == min(len(TOPICS), (n + 1) * SPLIT_SIZE)
    for topic in ("T00000", "T00799", "T00800", "T02412"):
        route = json.loads(world.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})).body)
        assert route["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:19911"}
        assert [q["brokerName"] for q in route["queueDatas"]] == ["split-a"]


def test_an_unchanged_round_changes_nothing(world):
    conn = FakeConnection()
    _round(world, split_frames(TOPICS, counter=8), conn)
    before = world.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T01234"})).body
    generation, events = world.routes.changes.generation, len(topic_changes(world.events.named("topic_route_changed")))
    # the next round: same topics, the next counters, and the broker's own order of parts may differ
    frames = split_frames(list(reversed(TOPICS)), counter=8 + 4)
    assert all(a.code == ResponseCode.SUCCESS for a in _round(world, frames, conn))
    assert world.routes.changes.generation == generation   # nothing a read could see: no cache dropped
    assert len(topic_changes(world.events.named("topic_route_changed"))) == events
    assert world.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T01234"})).body is before
    assert len(world.routes.topic_queue_table) == len(TOPICS)


def test_a_changed_topic_in_one_part_changes_that_topic_only(world):
    conn = FakeConnection()
    _round(world, split_frames(TOPICS, counter=8), conn)
    changed = [dict(t, perm=4) if t["topicName"] == "T00900" else t for t in TOPICS]
    # Java's test for a part whose DataVersion moved is per topic: a new perm is applied
    _round(world, split_frames(changed, counter=12), conn)
    route = json.loads(world.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T00900"})).body)
    assert route["queueDatas"][0]["perm"] == 4
    other = json.loads(world.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T00901"})).body)
    assert other["queueDatas"][0]["perm"] == 6
    assert len(world.routes.topic_queue_table) == len(TOPICS)


@pytest.mark.parametrize("missing_part", [0, 2])
def test_a_name_server_that_missed_parts_gets_them_in_the_next_round(world, missing_part):
    conn = FakeConnection()
    frames = split_frames(TOPICS, counter=8)
    _round(world, frames[:missing_part] + frames[missing_part + 1:], conn)
    assert len(world.routes.topic_queue_table) == len(TOPICS) - SPLIT_SIZE
    _round(world, split_frames(TOPICS, counter=12), conn)
    assert len(world.routes.topic_queue_table) == len(TOPICS)
