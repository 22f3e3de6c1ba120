"""Every report on generated JSON logs, checked against plain-Python answers from the same events."""

import os
from collections import Counter

import pytest

from tests.spark import oracle


@pytest.fixture(scope="module")
def events(generated):
    return oracle.read_events(generated[0])


@pytest.fixture(scope="module")
def live(events):
    return oracle.liveness(events)


def test_every_line_is_an_event_and_every_server_is_seen(generated, generated_report, read_table, events):
    out, summary = generated_report
    assert summary["lines"] == {"json": len(events)} == {"json": generated[1]["events"]}
    servers = {r["server"]: r for r in read_table(out, "servers")}
    assert sorted(servers) == sorted(s["id"] for s in generated[1]["servers"])
    span = oracle.windows(events)
    assert {s: (r["firstTs"], r["lastTs"]) for s, r in servers.items()} == span


def test_the_injected_flaps_are_found_exactly(generated, generated_report, read_table, live):
    out, _ = generated_report
    found = {(r["server"], r["brokerAddr"], r["expiredAt"], r["reRegisteredAt"])
             for r in read_table(out, "broker_flaps")}
    truth = {(f["server"], f["brokerAddr"], f["expiredAt"], f["reRegisteredAt"]) for f in generated[1]["flaps"]}
    assert found == truth == live[1]
    injected = [i for i in generated[1]["injected"] if i["kind"] in ("flap", "partition")]
    assert len(injected) == 4
    for incident in injected:   # every server it was cut from saw exactly one flap of it
        servers = incident["servers"] or [s["id"] for s in generated[1]["servers"]]
        hits = [f for f in found if f[1] == incident["brokerAddr"] and incident["start"] < f[2] < incident["end"]]
        assert sorted(f[0] for f in hits) == sorted(servers)


def test_outages_are_expirations_but_not_flaps(generated, generated_report, read_table):
    out, _ = generated_report
    (outage,) = [i for i in generated[1]["injected"] if i["kind"] == "outage"]
    rows = [r for r in read_table(out, "broker_liveness") if r["brokerAddr"] == outage["brokerAddr"]]
    assert len(rows) == 3 and all(r["expirations"] >= 1 for r in rows)
    flapped = {(f["server"], f["brokerAddr"]) for f in generated[1]["flaps"]}
    assert all((r["flaps"] > 0) == ((r["server"], r["brokerAddr"]) in flapped) for r in rows)
    sessions = [s for s in read_table(out, "broker_sessions")
                if s["brokerAddr"] == outage["brokerAddr"] and s["endEvent"] == "broker_expired"
                and outage["start"] < s["end"] < outage["end"]]
    assert len(sessions) == 3


def test_liveness_counts_and_gap_percentiles_match(generated_report, read_table, live):
    out, _ = generated_report
    rows = read_table(out, "broker_liveness")
    assert len(rows) == len(live[0])
    for r in rows:
        want = live[0][(r["server"], r["brokerAddr"])]
        for field in ("registrations", "heartbeats", "expirations", "unregistrations", "sessions",
                      "gapP50Ms", "gapP99Ms", "gapMaxMs"):
            assert r[field] == want[field], (r["server"], r["brokerAddr"], field)
        assert r["gaps"] == len(want["gaps"])
    assert sum(r["flaps"] for r in rows) == len(live[1])


def test_sessions_match_and_clean_restarts_end_them(generated, generated_report, read_table, live):
    out, _ = generated_report
    span = oracle.windows(oracle.read_events(generated[0]))
    got = {(r["server"], r["brokerAddr"], r["start"], r["end"], r["endEvent"])
           for r in read_table(out, "broker_sessions")}
    want = {(k[0], k[1], s, e if e is not None else span[k[0]][1], why)
            for k, info in live[0].items() for s, e, why in info["session_list"]}
    assert got == want
    for incident in generated[1]["injected"]:
        if incident["kind"] in ("unregister", "close"):
            reason = "request" if incident["kind"] == "unregister" else "channel_closed"
            ended = [r for r in read_table(out, "broker_sessions")
                     if r["brokerAddr"] == incident["brokerAddr"] and r["endReason"] == reason]
            assert len(ended) == 3


def test_heartbeat_distribution_and_drift(generated, generated_report, read_table, live):
    out, _ = generated_report
    brokers = {b["brokerAddr"]: b for b in generated[1]["brokers"]}
    want = Counter()
    for (server, addr), info in live[0].items():
        for _, gap in info["gaps"]:
            want[(brokers[addr]["cluster"], min(gap // 1000, 300))] += 1
    got = {(r["cluster"], r["bucketS"]): r["intervals"] for r in read_table(out, "heartbeat_intervals")}
    assert got == dict(want)

    drift = {(r["server"], r["brokerAddr"]): r for r in read_table(out, "heartbeat_drift")}
    expected = {k: sum(1 for _, g in info["gaps"] if g > 35000) for k, info in live[0].items()}
    assert {k: r["lateIntervals"] for k, r in drift.items()} == {k: n for k, n in expected.items() if n}
    (injected,) = [i for i in generated[1]["injected"] if i["kind"] == "drift"]
    for server in [s["id"] for s in generated[1]["servers"]]:
        row = drift[(server, injected["brokerAddr"])]
        late = [g for t, g in live[0][(server, injected["brokerAddr"])]["gaps"]
                if injected["start"] < t <= injected["end"] + 45000 and g > 35000]
        assert len(late) >= (injected["end"] - injected["start"]) // 45000 - 1
        assert row["lateIntervals"] >= len(late) and row["thresholdMs"] == 35000


def test_request_mix_per_minute(generated_report, read_table, events):
    out, _ = generated_report
    want = oracle.requests_per_minute(events)
    rows = read_table(out, "request_minutely")
    assert len(rows) == len(want)
    for r in rows:
        w = want[(r["server"], r["minute"], r["code"])]
        assert (r["requests"], r["errors"], r["usSum"], r["usMax"], r["usP50"], r["usP99"]) == (
            w["requests"], w["errors"], w["usSum"], w["usMax"], w["usP50"], w["usP99"])
        assert r["errorRate"] == pytest.approx(w["errors"] / w["requests"], abs=1e-6)
        assert {int(k): v for k, v in r["hist"].items()} == dict(w["hist"])


def test_request_codes_and_responses(generated_report, read_table, events):
    out, _ = generated_report
    per_code, responses = {}, Counter()
    for e in events:
        if e["event"] == "request":
            c = per_code.setdefault(e["code"], {"requests": 0, "errors": 0, "hist": Counter()})
            c["requests"] += e["count"]
            c["errors"] += e["count"] if e["resp"] > 0 else 0
            c["hist"].update({int(k): v for k, v in e["hist"].items()})
            responses[(e["code"], e["resp"])] += e["count"]
    codes = {r["code"]: r for r in read_table(out, "request_codes")}
    assert sorted(codes) == sorted(per_code)
    for code, want in per_code.items():
        p50, p99 = oracle.hist_percentiles(want["hist"])
        got = codes[code]
        assert (got["requests"], got["errors"], got["usP50"], got["usP99"], got["servers"]) == (
            want["requests"], want["errors"], p50, p99, 3)
    assert codes[105]["name"] == "GET_ROUTEINFO_BY_TOPIC" and 0 < codes[105]["errorRate"] < 0.1
    got = {(r["code"], r["resp"]): r["requests"] for r in read_table(out, "request_responses")}
    assert got == dict(responses)


def test_topic_churn_and_vanished_topics(generated, generated_report, read_table, events):
    out, _ = generated_report
    changes = Counter()
    per_server = {}
    for e in events:
        if e["event"] == "topic_route_changed":
            per_server.setdefault((e["topic"], e["server"]), set()).add(e["ts"])
    for (topic, _), stamps in per_server.items():
        changes[topic] = max(changes[topic], len(stamps))
    churn = {r["topic"]: r for r in read_table(out, "topic_churn")}
    assert {t: r["changes"] for t, r in churn.items()} == dict(changes)

    gone = oracle.vanished(events)
    span = oracle.windows(events)
    rows = read_table(out, "topic_vanished")
    assert {(r["server"], r["topic"], r["vanishedAt"]): r["returnedAt"] for r in rows} == gone
    for r in rows:
        until = r["returnedAt"] if r["returnedAt"] is not None else span[r["server"]][1]
        assert r["vanishedMs"] == until - r["vanishedAt"] and r["returned"] == (r["returnedAt"] is not None)
    # a topic served only by a single-address broker name that went away for the outage vanished about
    # that long (expiry after 120-130 s of silence, back with the first registration after it)
    (outage,) = [i for i in generated[1]["injected"] if i["kind"] == "outage"]
    names = {b["brokerAddr"]: b["brokerName"] for b in generated[1]["brokers"]}
    name = names[outage["brokerAddr"]]
    alone = sum(1 for n in names.values() if n == name) == 1
    others = [i for i in generated[1]["injected"] if names[i["brokerAddr"]] == name and i is not outage]
    if alone and not others:
        lost = [r for r in rows if r["lastBrokers"] == [name] and outage["start"] < r["vanishedAt"] < outage["end"]]
        assert lost
        for r in lost:
            assert outage["end"] - outage["start"] - 160000 < r["vanishedMs"] < outage["end"] - outage["start"]


def test_disagreement_between_name_servers(generated, generated_report, read_table, events):
    out, _ = generated_report
    want = oracle.disagreements(events, min_ms=1000)
    rows = read_table(out, "ns_disagreement")
    got = {(r["brokerAddr"], r["start"], r["end"], tuple(r["knownBy"]), tuple(r["missingOn"])) for r in rows}
    assert got == want
    assert all(r["durationMs"] == r["end"] - r["start"] >= 1000 for r in rows)
    (partition,) = [i for i in generated[1]["injected"] if i["kind"] == "partition"]
    cut = [r for r in rows if r["brokerAddr"] == partition["brokerAddr"] and r["missingOn"] == partition["servers"]
           and r["durationMs"] > 20000]
    assert len(cut) == 1 and partition["start"] < cut[0]["start"] < partition["end"]

    minutes = read_table(out, "ns_disagreement_minutes")
    per_broker = Counter()
    for r in minutes:
        assert 0 < r["disagreeMs"] <= 60000 and r["minute"] % 60000 == 0
        per_broker[r["brokerAddr"]] += r["disagreeMs"]
    total = Counter()
    for r in rows:
        total[r["brokerAddr"]] += r["durationMs"]
    assert per_broker == total


def test_small_reports_are_interpreted_and_the_session_keeps_its_settings(spark, quiet_report, generated_report,
                                                                          tmp_path):
    from spark import ingest
    assert quiet_report[1]["codegen"] is False                  # 1 h of 2 servers: below 16 MB
    assert generated_report[1]["codegen"] is True               # asked for: both paths give the oracle's answers
    assert spark.conf.get("spark.sql.codegen.factoryMode", "FALLBACK") == "FALLBACK"
    (tmp_path / "a.log").write_bytes(b"x" * 100)
    assert ingest.input_bytes(spark, [str(tmp_path)], 50) > 50
    assert ingest.input_bytes(spark, ["file://" + str(tmp_path / "*.log")], 1000) == 100


def test_a_small_local_report_stages_its_lines_in_memory_and_lets_them_go(spark, quiet_report, formats_report,
                                                                          tmp_path):
    from spark import report
    assert quiet_report[1]["stage"] == "memory"
    assert formats_report[1]["stage"] == "parquet"          # --keep-work keeps the Parquet stage
    assert os.path.isdir(os.path.join(formats_report[0], "_work", "lines"))
    kept = spark.sparkContext._jsc.sc().getPersistentRDDs().size()
    logs = os.path.join(os.path.dirname(__file__), "..", "data", "eventlog")
    again = report.run(spark, [logs], str(tmp_path / "again"))
    assert again["stage"] == "memory" and again["tables"]["input_lines"] >= 1
    assert spark.sparkContext._jsc.sc().getPersistentRDDs().size() == kept
    assert not os.path.exists(str(tmp_path / "again" / "_work"))
