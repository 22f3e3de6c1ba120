import json

from namesrv.eventlog import EventLog, histogram_bucket


class Clock:
    def __init__(self, now=1700000000.0):
        self.now = now

    def __call__(self):
        return self.now


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_events_are_json_lines_with_ts_event_and_server(tmp_path):
    clock = Clock()
    log = EventLog(str(tmp_path / "logs" / "namesrv-events.log"), "127.0.0.1:9876", clock=clock)
    log.start()
    log.emit("broker_registered", cluster="C", brokerName="b", brokerId=0, brokerAddr="127.0.0.1:10911")
    log.emit("kv_changed", op="put", namespace="ns", key="k")
    log.stop()
    lines = read_lines(tmp_path / "logs" / "namesrv-events.log")
    assert lines[0] == {"ts": 1700000000000, "event": "broker_registered", "server": "127.0.0.1:9876",
                        "cluster": "C", "brokerName": "b", "brokerId": 0, "brokerAddr": "127.0.0.1:10911"}
    assert lines[1]["event"] == "kv_changed" and log.written == 2 and log.dropped == 0


def test_requests_are_aggregated_per_second(tmp_path):
    clock = Clock()
    log = EventLog(str(tmp_path / "e.log"), "s:1", clock=clock)
    log.start()
    for i in range(1000):
        log.record_request(105, 0, 10 + i % 3, "127.0.0.1:%d" % (i % 7))
    log.record_request(105, 17, 40, "127.0.0.1:1")
    clock.now += 1
    log.record_request(106, 0, 5, "127.0.0.1:1")
    log.stop()
    lines = read_lines(tmp_path / "e.log")
    ok = [l for l in lines if l["code"] == 105 and l["resp"] == 0][0]
    assert ok["count"] == 1000 and ok["peers"] == 7 and ok["usMax"] == 12 and ok["name"] == "GET_ROUTEINFO_BY_TOPIC"
    assert ok["usSum"] == sum(10 + i % 3 for i in range(1000)) and sum(ok["hist"].values()) == 1000
    assert ok["ts"] == 1700000000000
    assert [l["count"] for l in lines if l["resp"] == 17] == [1]
    assert [l["ts"] for l in lines if l["code"] == 106] == [1700000001000]


def test_rotation_by_size_keeps_a_bounded_number_of_files(tmp_path):
    path = tmp_path / "e.log"
    log = EventLog(str(path), "s:1", max_bytes=2000, backups=2, clock=Clock())
    log.start()
    for i in range(300):
        log.emit("bad_frame", peer="127.0.0.1:%d" % i, reason="x" * 20)
    log.stop()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["e.log", "e.log.1", "e.log.2"]
    assert all(p.stat().st_size <= 2000 for p in tmp_path.iterdir())


def test_full_queue_drops_instead_of_blocking(tmp_path):
    log = EventLog(str(tmp_path / "e.log"), "s:1", queue_size=5, clock=Clock())
    for i in range(10):  # writer not started: nothing drains the queue
        log.emit("bad_frame", peer="p", reason="r")
    assert log.dropped == 5


def test_histogram_buckets_are_powers_of_two():
    assert [histogram_bucket(v) for v in (0, 1, 2, 3, 4, 5, 1000)] == [1, 1, 2, 4, 4, 8, 1024]
