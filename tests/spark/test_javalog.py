"""Java namesrv.log parsing (4.9 and 5.x wording, logback layout) and server ids from paths."""

import os

import pytest
from pyspark.sql import functions as F

from spark import ingest, javalog
from tests.spark.conftest import DATA

GMT8 = 8 * 3600 * 1000


def classified(spark, path):
    lines, missing = ingest.read_lines(spark, [path])
    assert missing == []
    rows = [r.asDict() for r in ingest.classify(lines).collect()]
    return sorted(rows, key=lambda r: r["ts"] or 0)   # files may be read in any order; stable within one


def utc_ms(text):
    """Epoch ms of a GMT+8 wall-clock ``yyyy-mm-dd HH:MM:SS`` (what logback_namesrv.xml writes)."""
    import datetime
    wall = datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int(wall.timestamp() * 1000) - GMT8


@pytest.fixture(scope="module")
def java49(spark):
    return classified(spark, os.path.join(DATA, "java49"))


@pytest.fixture(scope="module")
def java5(spark):
    return classified(spark, os.path.join(DATA, "java5"))


def events(rows, event):
    return [r for r in rows if r["event"] == event and r["kind"] == "java"]


def test_java49_broker_lifecycle(java49):
    server = {r["server"] for r in java49 if r["kind"] == "java"}
    assert server == {"10.0.1.22:9876"}
    reg = events(java49, "broker_registered")
    assert [(r["brokerAddr"], r["ts"]) for r in reg] == [
        ("10.0.4.11:10911", utc_ms("2024-02-29 23:59:40")),      # from the rotated .gz of the day before
        ("10.0.4.11:10911", utc_ms("2024-03-01 08:00:04")), ("10.0.4.12:10911", utc_ms("2024-03-01 08:00:06")),
        ("10.0.4.13:10911", utc_ms("2024-03-01 08:00:09")), ("10.0.4.13:10911", utc_ms("2024-03-01 08:05:09"))]
    beats = events(java49, "broker_heartbeat")
    assert [(r["brokerAddr"], r["cluster"], r["brokerName"], r["brokerId"]) for r in beats[:2]] == [
        ("10.0.4.11:10911", "DefaultCluster", "broker-a", 0), ("10.0.4.13:10911", "DefaultCluster", "broker-b", 0)]
    assert len(beats) == 5        # "master address change from A to A": one per master registration
    (expired,) = events(java49, "broker_expired")
    assert (expired["brokerAddr"], expired["ts"], expired["ageMs"]) == (
        "10.0.4.13:10911", utc_ms("2024-03-01 08:03:20"), None)
    unreg = events(java49, "broker_unregistered")
    assert [(r["brokerAddr"], r["reason"]) for r in unreg] == [
        ("10.0.4.12:10911", "request"), ("10.0.4.11:10911", "channel_closed")]
    closed = events(java49, "channel_closed")
    assert [r["peer"] for r in closed] == ["10.0.4.13:40522", "10.0.4.11:51202"]
    ids = [(r["brokerAddr"], r["brokerId"]) for r in events(java49, "broker_identity")]
    assert ("10.0.4.13:10911", 0) in ids and ("10.0.4.11:10911", None) not in ids


def test_java49_topic_changes(java49):
    topics = [(r["topic"], r["before"], r["after"], r["added"], r["removed"])
              for r in events(java49, "topic_route_changed")]
    assert topics == [
        ("TopicTest", [], ["broker-a"], ["broker-a"], None), ("OrderTopic", [], ["broker-a"], ["broker-a"], None),
        ("PaymentTopic", [], ["broker-b"], ["broker-b"], None),
        ("PaymentTopic", None, None, None, ["broker-b"]), ("PaymentTopic", None, [], None, None),
        ("PaymentTopic", [], ["broker-b"], ["broker-b"], None),
        ("OrderTopic", None, None, None, ["broker-a"]), ("OrderTopic", None, [], None, None),
        ("TopicTest", None, None, None, ["broker-a"]), ("TopicTest", None, [], None, None),
        ("PaymentTopic", None, None, None, ["broker-b"]), ("PaymentTopic", None, [], None, None)]


def test_java49_other_lines_are_counted_not_events(java49):
    kinds = {}
    for r in java49:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    assert kinds["continuation"] == 5          # the exception's stack trace
    assert kinds.get("malformed", 0) == 0
    assert kinds["java_other"] >= 20           # boot, netty, printAllPeriodically, "remove topic[X null]", ...
    assert sum(kinds.values()) == 4 + sum(1 for _ in open(os.path.join(DATA, "java49", "10.0.1.22_9876",
                                                                           "namesrv.log")))


def test_java5_wording(java5):
    reg = events(java5, "broker_registered")
    assert [(r["brokerAddr"], r["cluster"]) for r in reg] == [
        ("10.0.4.31:10911", "ProdCluster"), ("10.0.4.32:10911", "ProdCluster"), ("10.0.4.32:10911", "ProdCluster")]
    (expired,) = events(java5, "broker_expired")
    assert (expired["brokerAddr"], expired["cluster"]) == ("10.0.4.32:10911", "ProdCluster")
    (unreg,) = events(java5, "broker_unregistered")
    assert (unreg["brokerAddr"], unreg["reason"]) == ("10.0.4.32:10911", "unknown")
    topics = [(r["topic"], r["before"], r["after"], r["removed"]) for r in events(java5, "topic_route_changed")]
    assert topics == [("TopicTest", [], ["broker-c"], None),
                      ("%RETRY%GroupA", [], ["broker-c", "broker-d"], None),
                      ("%RETRY%GroupA", None, None, ["broker-c"]), ("%RETRY%GroupA", None, [], None)]
    assert not events(java5, "broker_heartbeat")    # 5.x logs no registration after the first


def test_millisecond_layout_and_time_zone(spark):
    rows = spark.createDataFrame([
        ("2024-03-01 08:00:35,123 INFO RemotingExecutorThread_2 - cluster [C] brokerName [b] master address change "
         "from 10.0.0.1:10911 to 10.0.0.1:10911", "file:/x/10.9.9.9_9876/namesrv.log"),
        ("2024-03-01 08:00:35 INFO t - new broker registered, 10.0.0.1:10911 HAServer: 10.0.0.1:10912",
         "file:/x/ns1:9876/namesrv.log"),
        ("2024-13-01 08:00:35 INFO t - new broker registered, 10.0.0.1:10911 HAServer: 10.0.0.1:10912",
         "file:/x/ns1:9876/namesrv.log")], ["value", "file"])
    got = ingest.classify(rows, java_tz="UTC").select("ts", "event", "server", "kind").collect()
    base = utc_ms("2024-03-01 08:00:35") + GMT8
    assert [tuple(r) for r in got] == [(base + 123, "broker_heartbeat", "10.9.9.9:9876", "java"),
                                       (base, "broker_registered", "ns1:9876", "java"),
                                       (None, None, "ns1:9876", "malformed")]


@pytest.mark.parametrize("path, server", [
    ("file:/logs/10.0.0.1_9876/namesrv.log", "10.0.0.1:9876"),
    ("hdfs://namenode:8020/logs/10.0.0.2_9876/otherdays/namesrv.3.log.gz", "10.0.0.2:9876"),
    ("s3a://bucket/rocketmq/namesrv_10.0.0.3_9876.log", "10.0.0.3:9876"),
    ("file:/logs/ns-a.example.com_9876/namesrv-events.log.2", "ns-a.example.com:9876"),
    ("file:/logs/nameserver-east/namesrv.log", "nameserver-east"),
    ("file:/logs/east-1.log", "east-1"),
    ("file:/logs/2024-03-01/namesrv_default.log", "2024-03-01"),
])
def test_server_id_from_the_path(spark, path, server):
    df = spark.createDataFrame([(path,)], ["file"])
    assert df.select(javalog.server_from_path(F.col("file"))).collect()[0][0] == server


def test_mixed_java_and_json_servers_report_the_same_flaps(mixed, formats_report, read_table):
    """Two servers write the Java 4.9 log, one our JSON: every format finds its flaps and expirations."""
    out, summary = formats_report
    truth = mixed[1]
    ours = {s["id"] for s in truth["servers"]}
    java_ids = {s["id"] for s in truth["servers"] if s["format"] == "java"}

    def rows(name):
        return [r for r in read_table(out, name) if r["server"] in ours]

    lines = {}
    for r in rows("input_lines"):
        lines[r["kind"]] = lines.get(r["kind"], 0) + r["lines"]
    assert lines["java"] > 0 and lines["json"] > 0 and "malformed" not in lines

    def second(server, ms):                # Java lines have whole seconds
        return ms // 1000 * 1000 if server in java_ids else ms

    flaps = {(r["server"], r["brokerAddr"], r["expiredAt"], r["reRegisteredAt"]) for r in rows("broker_flaps")}
    assert flaps == {(f["server"], f["brokerAddr"], second(f["server"], f["expiredAt"]),
                      second(f["server"], f["reRegisteredAt"])) for f in truth["flaps"]}
    expirations = {(r["server"], r["brokerAddr"]): r["expirations"] for r in rows("broker_liveness")
                   if r["expirations"]}
    want = {}
    for e in truth["expirations"]:
        want[(e["server"], e["brokerAddr"])] = want.get((e["server"], e["brokerAddr"]), 0) + 1
    assert expirations == want
    brokers = {b["brokerAddr"]: b for b in truth["brokers"]}
    for r in rows("broker_liveness"):   # Java rows get cluster/brokerName from other lines
        assert (r["cluster"], r["brokerName"]) == (brokers[r["brokerAddr"]]["cluster"],
                                                   brokers[r["brokerAddr"]]["brokerName"])
        if r["server"] in java_ids and brokers[r["brokerAddr"]]["brokerId"] != 0:
            assert r["heartbeats"] == 0            # Java logs no registration of a slave after the first
    assert {r["server"] for r in rows("topic_vanished")} >= java_ids
