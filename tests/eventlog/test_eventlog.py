import json

from hypothesis import given, settings, strategies as st

from namesrv.observe.eventlog import EventLog, histogram_bucket
from tests.fakes import CallableClock


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_events_are_json_lines_with_ts_event_and_server(tmp_path):
    clock = CallableClock(1700000000.0)
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
    clock = CallableClock(1700000000.0)
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
    log = EventLog(str(path), "s:1", max_bytes=2000, backups=2, clock=CallableClock(1700000000.0))
    log.start()
    for i in range(300):
        log.emit("bad_frame", peer="127.0.0.1:%d" % i, reason="x" * 20)
    log.stop()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["e.log", "e.log.1", "e.log.2"]
    assert all(p.stat().st_size <= 2000 for p in tmp_path.iterdir())


def test_full_queue_drops_instead_of_blocking(tmp_path):
    log = EventLog(str(tmp_path / "e.log"), "s:1", queue_size=5, clock=CallableClock(1700000000.0))
    for i in range(10):  # writer not started: nothing drains the queue
        log.emit("bad_frame", peer="p", reason="r")
    assert log.dropped == 5


def test_histogram_buckets_are_powers_of_two():
    assert [histogram_bucket(v) for v in (0, 1, 2, 3, 4, 5, 1000)] == [1, 1, 2, 4, 4, 8, 1024]


# -- added: day rotation, lazy flush, robustness --------------------------------------------

def put_in_a_run(log, key):
    """One kv_changed event of ``key``, in a run of ``log`` of its own (started, then stopped: written)."""
    log.start()
    log.emit("kv_changed", op="put", namespace="n", key=key)
    log.stop()


def rotation(path, field):
    """``field`` of each event in the file at ``path`` and in the one rotated before it (``.1``)."""
    return [line[field] for line in read_lines(path)], [line[field] for line in read_lines(str(path) + ".1")]


def test_a_new_day_rotates_the_file(tmp_path):
    clock = CallableClock(1700000000.0)
    path = tmp_path / "e.log"
    log = EventLog(str(path), "s:1", clock=clock)
    put_in_a_run(log, "day1")
    clock.now += 86400
    put_in_a_run(log, "day2")
    assert rotation(path, "key") == (["day2"], ["day1"])


def test_a_file_left_from_an_earlier_day_is_rotated_first(tmp_path):
    import os
    path = tmp_path / "e.log"
    path.write_text('{"ts":1,"event":"old","server":"s:1"}\n')
    os.utime(path, (1600000000, 1600000000))
    log = EventLog(str(path), "s:1", clock=CallableClock(1700000000.0))
    put_in_a_run(log, "k")
    assert rotation(path, "event") == (["kv_changed"], ["old"])


def test_flush_aggregates_waits_for_the_second_to_end(tmp_path):
    clock = CallableClock(1700000000.2)
    log = EventLog(str(tmp_path / "e.log"), "s:1", clock=clock)
    log.record_request(105, 0, 7, "p")
    log.flush_aggregates()
    assert log._queue.qsize() == 0          # the second is still running
    clock.now += 1
    log.flush_aggregates()
    assert log._queue.qsize() == 1
    log.start()
    log.stop()
    (line,) = read_lines(tmp_path / "e.log")
    assert line == {"ts": 1700000000000, "event": "request", "server": "s:1", "code": 105,
                    "name": "GET_ROUTEINFO_BY_TOPIC", "resp": 0, "count": 1, "us": 7, "usSum": 7,
                    "usMax": 7, "hist": {"8": 1}, "peers": 1}


def test_an_event_in_a_later_second_flushes_the_aggregate_before_itself(tmp_path):
    clock = CallableClock(1700000000.0)
    log = EventLog(str(tmp_path / "e.log"), "s:1", clock=clock)
    log.start()
    log.record_request(99999, 1, 3, "p")
    clock.now += 2.5
    log.emit("bad_frame", peer="p", reason="r")
    log.stop()
    lines = read_lines(tmp_path / "e.log")
    assert [l["event"] for l in lines] == ["request", "bad_frame"]
    assert lines[0]["name"] == "UNKNOWN_99999" and lines[0]["ts"] == 1700000000000
    assert lines[1]["ts"] == 1700000002500


def test_histograms_of_the_same_second_merge_into_percentiles(tmp_path):
    clock = CallableClock(1700000000.0)
    log = EventLog(str(tmp_path / "e.log"), "s:1", clock=clock)
    log.start()
    for micros in [1, 2, 3, 4, 5, 900, 1025]:
        log.record_request(105, 0, micros, "p")
    log.stop()
    (line,) = read_lines(tmp_path / "e.log")
    assert line["hist"] == {"1": 1, "2": 1, "4": 2, "8": 1, "1024": 1, "2048": 1}
    assert line["usMax"] == 1025 and line["us"] == sum([1, 2, 3, 4, 5, 900, 1025]) // 7


def test_emit_never_raises_and_counts_what_it_cannot_encode(tmp_path):
    log = EventLog(str(tmp_path / "e.log"), "s:1", clock=CallableClock(1700000000.0))
    cyclic = []
    cyclic.append(cyclic)
    log.emit("config_changed", key="k", old=cyclic, new=1)
    log.emit("config_changed", key="k", old=b"\xff", new="\udc80")   # bytes and a lone surrogate
    log.start()
    log.stop()
    assert log.dropped == 1 and log.written == 1
    (line,) = read_lines(tmp_path / "e.log")
    assert line["old"] == "b'\\xff'" and line["new"] == "\udc80"   # escaped in the file: valid UTF-8
    (tmp_path / "e.log").read_bytes().decode("utf-8")


def test_listeners_see_every_event_and_their_failures_are_contained(tmp_path):
    seen = []
    log = EventLog(str(tmp_path / "e.log"), "s:1", clock=CallableClock(1700000000.0))
    log.add_listener(lambda event, fields: 1 / 0)
    log.add_listener(lambda event, fields: seen.append((event, fields)))
    log.emit("broker_expired", brokerAddr="a", ageMs=1)
    assert seen == [("broker_expired", {"brokerAddr": "a", "ageMs": 1})]


def test_a_write_error_is_counted_and_the_writer_survives(tmp_path):
    target = tmp_path / "dir-not-file"
    target.mkdir()                           # open("dir", "ab") fails: IsADirectoryError
    log = EventLog(str(target), "s:1", clock=CallableClock(1700000000.0))
    log.start()
    log.emit("bad_frame", peer="p", reason="r")
    log.stop()
    assert log.dropped == 1 and log.written == 0
    target.rmdir()
    log.start()
    log.emit("bad_frame", peer="p", reason="r")
    log.stop()
    assert log.written == 1 and len(read_lines(target)) == 1


def test_stop_is_bounded_and_idempotent(tmp_path):
    log = EventLog(str(tmp_path / "e.log"), "s:1", clock=CallableClock(1700000000.0), queue_size=2)
    log.stop()                               # never started
    log.start()
    for _ in range(50):
        log.emit("bad_frame", peer="p", reason="r")
    log.stop(timeout=1.0)
    log.stop()
    assert log.written + log.dropped == 50


@settings(max_examples=300, deadline=None)
@given(topics=st.lists(st.text(), max_size=8), brokers=st.lists(st.text(max_size=5), max_size=3),
       lone=st.booleans(), ts=st.integers(0, 1 << 70))
def test_a_route_change_line_is_written_as_json_dumps_writes_it(topics, brokers, lone, ts):
    """topic_route_changed lines (msgspec) are byte for byte json.dumps's: control characters, any plane,
    a lone surrogate (escaped the json way), an int past 64 bits."""
    import json
    from namesrv.observe.eventlog import encode_line
    if lone:
        topics = topics + ["x\udc80"]
    for fields in ({"topics": topics}, {"topic": "".join(topics)}):
        record = dict({"ts": ts, "event": "topic_route_changed", "server": "127.0.0.1:9876"}, before=brokers,
                      after=brokers[:1], **fields)
        expected = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
        assert encode_line(record) == expected.encode("utf-8", "backslashreplace") + b"\n"
