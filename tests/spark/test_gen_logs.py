"""The synthetic log generator (no Spark): deterministic, consistent with its ground truth."""

import json
import os

from spark import gen_logs
from tests.spark import oracle


def test_same_seed_same_logs(tmp_path):
    a = gen_logs.generate(str(tmp_path / "a"), servers=2, brokers=3, topics=4, hours=1, seed=5, flaps=1,
                          outages=0, partitions=0, restarts=0, drifts=0)
    b = gen_logs.generate(str(tmp_path / "b"), servers=2, brokers=3, topics=4, hours=1, seed=5, flaps=1,
                          outages=0, partitions=0, restarts=0, drifts=0)
    assert a["events"] == b["events"] and a["flaps"] == b["flaps"]
    for server in a["servers"]:
        name = server["id"].replace(":", "_")
        logs = [tmp_path / run / name / "namesrv-events.log" for run in ("a", "b")]
        assert logs[0].read_text() == logs[1].read_text()


def test_truth_matches_the_written_events(tmp_path):
    truth = gen_logs.generate(str(tmp_path), servers=3, brokers=4, topics=6, hours=1.5, seed=9, flaps=2,
                              outages=0, partitions=1, restarts=0, drifts=0)
    events = oracle.read_events(str(tmp_path))
    assert len(events) == truth["events"]
    _, flaps = oracle.liveness(events)
    assert flaps == {(f["server"], f["brokerAddr"], f["expiredAt"], f["reRegisteredAt"]) for f in truth["flaps"]}
    assert len(flaps) == 2 * 3 + 1
    expired = [e for e in events if e["event"] == "broker_expired"]
    assert all(e["ageMs"] > gen_logs.EXPIRE_MS for e in expired)
    requests = [e for e in events if e["event"] == "request"]
    assert requests and all(sum(e["hist"].values()) == e["count"] for e in requests)
    assert json.load(open(os.path.join(str(tmp_path), "_truth.json")))["events"] == truth["events"]


def test_java_servers_write_the_logback_layout(tmp_path):
    gen_logs.generate(str(tmp_path), servers=1, brokers=2, topics=2, hours=0.5, seed=1, flaps=0, outages=0,
                      partitions=0, restarts=0, drifts=0, java_servers=1)
    with open(tmp_path / "10.0.1.10_9876" / "namesrv.log") as f:
        lines = f.read().splitlines()
    assert lines[0].endswith(" INFO main - Server is running in TLS disabled mode")
    assert any(" - new broker registered, 10.0.2.10:10911 HAServer: 10.0.2.10:10912" in l for l in lines)
    assert lines[1][:19] == "2024-03-01 08:00:00"      # 00:00 UTC in GMT+8


def test_events_target_sets_the_duration(tmp_path):
    truth = gen_logs.generate(str(tmp_path), servers=2, brokers=4, topics=4, seed=2, events_target=20000,
                              flaps=0, outages=0, partitions=0, restarts=0, drifts=0)
    assert 0.8 * 20000 < truth["events"] < 1.2 * 20000


def test_cli(tmp_path, capsys):
    assert gen_logs.main(["--out", str(tmp_path), "--servers", "1", "--brokers", "2", "--topics", "2",
                          "--hours", "0.3", "--flaps", "0", "--outages", "0", "--partitions", "0",
                          "--restarts", "0", "--drifts", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["lines"] > 0


def test_an_error_spike_is_in_the_logs_and_the_truth(tmp_path):
    truth = gen_logs.generate(str(tmp_path), servers=2, brokers=3, topics=4, hours=1, seed=5, flaps=0, outages=0,
                              partitions=0, restarts=0, drifts=0, error_spikes=1)
    (spike,) = [i for i in truth["injected"] if i["kind"] == "errors"]
    errors = {}
    for e in oracle.read_events(str(tmp_path)):
        if e["event"] == "request" and e.get("resp") == 17:
            inside = spike["start"] <= e["ts"] < spike["end"] and e["server"] == spike["servers"][0]
            errors[inside] = errors.get(inside, 0) + e["count"]
    seconds = (spike["end"] - spike["start"]) // 1000
    assert errors[True] >= seconds * gen_logs.SPIKE_ERRORS_PER_S
    assert errors[True] > 10 * errors[False] * seconds / 3600.0     # far above the steady rate
