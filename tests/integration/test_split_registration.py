"""A real 5.3.3 broker with 20,000 topics and ``enableSplitRegistration=true`` registers through ours.

It sends its topic table in parts of 800 (``splitRegistrationSize``) every ``registerNameServerPeriod``
(10 s here, the least it takes): every topic gets a route, no part wipes another, and the second round,
which only repeats the first with new DataVersion counters, changes no route. Runs where the 5.3.3
peer is built (``JAVAPEER5``, tests/javapeers.py) and skips, saying why, elsewhere; the same
frame shapes run everywhere in tests/processors/test_split_registration.py.
"""

import glob
import json
import os
import time

from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tests.javapeers import JavaBroker, peer

TOPICS = 20000
SPLIT_SIZE = 800
ROUND_GAP = 3.0   # seconds between two rounds' parts (10 s apart; a round's parts are ms apart)


def _topics_file(store):
    table = {"T%05d" % i: {"attributes": {}, "order": False, "perm": 6, "readQueueNums": 4,
                           "topicFilterType": "SINGLE_TAG", "topicName": "T%05d" % i, "topicSysFlag": 0,
                           "writeQueueNums": 4} for i in range(TOPICS)}
    os.makedirs(os.path.join(store, "config"), exist_ok=True)
    with open(os.path.join(store, "config", "topics.json"), "w") as f:
        json.dump({"dataVersion": {"counter": 7, "stateVersion": 0, "timestamp": 1700000000000},
                   "topicConfigTable": table}, f)


def _events(server):
    out = []
    for path in sorted(glob.glob(os.path.join(server.workdir, "logs", "namesrv-events*.log"))):
        with open(path) as f:
            out.extend(json.loads(line) for line in f if line.strip())
    return out


def _rounds(events, broker_name):
    """The broker's registrations grouped into rounds (parts closer than ROUND_GAP)."""
    regs = [e for e in events if e["event"] in ("broker_registered", "broker_heartbeat")
            and e.get("brokerName") == broker_name]
    rounds = []
    for event in regs:
        if rounds and event["ts"] - rounds[-1][-1]["ts"] < ROUND_GAP * 1000:
            rounds[-1].append(event)
        else:
            rounds.append([event])
    return rounds


def _whole(rounds):
    """The closed rounds (a later one has begun) that carried the broker's whole table, in order. A 5.3.3 broker
    sends each part only to the name servers its client already found available (BrokerOuterAPI.registerBrokerAll,
    getAvailableNameSrvList): on a busy machine its first round's first parts went nowhere (7 of 26, their
    DataVersion counters skipped; the broker logged 19 registrations, we saw 19)."""
    closed = rounds[:-1]
    sizes = [sum(e["topics"] for e in r) for r in closed]
    most = max(sizes, default=0)
    return [r for r, size in zip(closed, sizes) if size == most and size >= TOPICS]


def test_split_registration_of_a_real_5_3_3_broker(make_namesrv, tmp_path):
    peer("5.3.3")
    server = make_namesrv().start()
    store = tmp_path / "broker"
    _topics_file(str(store))
    broker = JavaBroker("5.3.3", store, "split-a", "SplitCluster", {
        "namesrvAddr": "127.0.0.1:%d" % server.port, "enableSplitRegistration": "true",
        "registerNameServerPeriod": "10000"}).start()
    try:
        deadline = time.monotonic() + 120
        rounds = []
        while time.monotonic() < deadline:
            rounds = _rounds(_events(server), "split-a")
            if len(_whole(rounds)) >= 2:
                break
            assert broker.process.poll() is None, broker.log()[-3000:]
            time.sleep(0.5)
        assert len(_whole(rounds)) >= 2, "rounds seen: %s\n%s" % ([len(r) for r in rounds], broker.log()[-3000:])
        first, second = _whole(rounds)[:2]
        parts = TOPICS // SPLIT_SIZE + 1
        assert len(first) >= parts and len(second) == len(first)    # several requests per round
        assert max(e["topics"] for e in first) == SPLIT_SIZE
        assert sum(e["topics"] for e in first) == sum(e["topics"] for e in second) >= TOPICS

        with server.client() as client:
            answer = client.call(make_request(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "SplitCluster"}))
            assert answer.code == ResponseCode.SUCCESS
            listed = set(json.loads(answer.body)["topicList"])
            assert {"T%05d" % i for i in range(TOPICS)} <= listed    # every part's topics: none wiped
            assert len(listed) == sum(e["topics"] for e in first)
            for topic in ("T00000", "T09999", "T19999"):
                route = client.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
                assert route.code == ResponseCode.SUCCESS
                assert [q["brokerName"] for q in json.loads(route.body)["queueDatas"]] == ["split-a"]

        changes = [e for e in _events(server) if e["event"] == "topic_route_changed"]
        assert changes and all(e["ts"] <= first[-1]["ts"] for e in changes)   # the second round changed nothing
    finally:
        broker.stop()
