"""The fault lab's checkers on records whose verdict is known: each catches what it is for."""

import json
import signal
import socket
import subprocess
import sys

from tests.integration.server import REPO, free_port
from tools import processes
from tools.faultlab import checkers


def info(t, epoch, master, sync_epoch=1, controller="10.0.0.1:9878"):
    return {"kind": "replica_info", "t": t, "controller": controller, "masterEpoch": epoch, "masterId": master,
            "masterAddress": "10.0.0.%d:20911" % (10 + master), "syncStateSet": [master],
            "syncStateSetEpoch": sync_epoch}


def role(t, broker_id, epoch, role_="master"):
    return {"event": "role", "t": t, "brokerId": broker_id, "epoch": epoch, "role": role_}


def test_two_masters_in_one_epoch_are_caught_wherever_they_show():
    assert checkers.one_master_per_epoch([info(1, 2, 1), info(2, 3, 2)], {})
    assert not checkers.one_master_per_epoch([info(1, 2, 1), info(2, 2, 2, controller="10.0.0.2:9878")], {})
    assert not checkers.one_master_per_epoch([info(1, 2, 1)], {"b1": [role(1.5, 2, 2)]})
    notified = {"event": "notified", "t": 2, "brokerId": 1, "ext": {"masterEpoch": "2", "masterBrokerId": "2"}}
    assert not checkers.one_master_per_epoch([info(1, 2, 1)], {"b0": [notified]})


def test_epochs_going_back_for_one_observer_are_caught():
    assert checkers.epochs_never_go_back([info(1, 2, 1), info(2, 3, 2)], {})
    assert not checkers.epochs_never_go_back([info(1, 3, 2), info(2, 2, 1)], {})
    assert not checkers.epochs_never_go_back([info(1, 3, 2, sync_epoch=4), info(2, 3, 2, sync_epoch=3)], {})
    assert not checkers.epochs_never_go_back([], {"b0": [role(1, 1, 3), role(2, 1, 2, "slave")]})


def send(key, ok=True):
    return {"kind": "send", "t": 0, "key": key, "ok": ok, "call": 0, "ret": 0}


def log(keys, role_="master", epoch=3, broker="10.0.0.11:20911"):
    return {"kind": "log", "t": 9, "broker": broker, "keys": keys, "role": role_, "epoch": epoch}


def test_an_acknowledged_message_missing_from_the_final_master_is_caught():
    assert checkers.no_acknowledged_message_lost([send("k1"), send("k2"), log(["k1", "k2"])])
    assert checkers.no_acknowledged_message_lost([send("k1"), send("k2", ok=False), log(["k1"])])
    lost = checkers.no_acknowledged_message_lost([send("k1"), send("k2"), log(["k1"]),
                                                  log(["k1", "k2"], "slave", 2, "10.0.0.12:20911")])
    assert not lost and "k2" in lost.details[0]


def test_logs_never_read_back_are_not_counted_as_lost_messages():
    """An agent ended before its read-back (a kill on a loaded machine) leaves nothing to compare: the check
    fails saying so, not as "178 of 178 acknowledged messages" lost."""
    unread = checkers.no_acknowledged_message_lost([send("k1"), send("k2")])
    assert not unread and unread.details == ["the brokers' logs were never read back (the agent was ended before "
                                             "its read-back): 2 acknowledged messages cannot be checked"]
    assert unread.value == {"acked": 2, "lost": 0, "unread": True}


def test_a_stopping_agent_reads_back_every_broker_and_ends_by_itself(tmp_path):
    """Brokers that accept and never answer (the slowest read-back there is): the agent still ends by itself,
    each read-back recorded, every wait of its stop bounded by its own timeouts (``stop_bound`` adds them up;
    the lab waits that long before a kill). No wall-clock bound is asserted: the 10 minutes given here only
    keep a broken agent from hanging the suite."""
    # each fake broker answers READ on its port + 2: there, a socket that accepts and never answers
    readers = [socket.create_server(("127.0.0.1", 0)) for _ in range(2)]
    brokers = ",".join("127.0.0.1:%d" % (r.getsockname()[1] - 2) for r in readers)
    out = tmp_path / "agent.jsonl"
    closed = "127.0.0.1:%d" % free_port()
    agent = subprocess.Popen([sys.executable, "-m", "tools.faultlab.agent", "--controllers", closed, "--namesrv", closed,
                              "--brokers", brokers,
                              "--out", str(out), "--fake-brokers"], cwd=REPO)
    try:
        processes.wait_for(lambda: out.exists() and "agent_started" in out.read_text(), 600, "the agent's start")
        agent.send_signal(signal.SIGTERM)
        assert processes.stop(agent, timeout=600.0) == 0      # ended by itself, not killed
    finally:
        processes.stop(agent, sig=signal.SIGKILL)
        for sock in readers:
            sock.close()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["kind"] for r in records if r["kind"] in ("log", "agent_stopped")] == ["log", "log", "agent_stopped"]


def test_a_read_back_that_could_not_reach_a_queue_says_so_beside_the_missing_keys():
    read_back = dict(log(["k1"]), incomplete=["broker-a 3 0 12 0"])
    lost = checkers.no_acknowledged_message_lost([send("k1"), send("k2"), read_back])
    assert not lost and "k2" in lost.details[0] and "broker-a 3 0 12 0" in lost.details[1]
    assert checkers.no_acknowledged_message_lost([send("k1"), dict(log(["k1"]), incomplete=["broker-a 3 0 12 0"])])


def test_a_route_to_a_broker_never_made_master_is_caught():
    brokers = {"b0": [{"event": "started", "t": 0, "address": "10.0.0.11:20911"}, role(1, 1, 1)],
               "b1": [{"event": "started", "t": 0, "address": "10.0.0.12:20911"}, role(1, 2, 1, "slave")]}
    route = {"kind": "route", "t": 2, "namesrv": "n0", "master": "10.0.0.11:20911"}
    assert checkers.routes_name_real_masters([route], brokers)
    assert not checkers.routes_name_real_masters([dict(route, master="10.0.0.12:20911")], brokers)


def test_the_time_to_a_routed_master_after_the_heal():
    records = [{"kind": "route", "t": 11, "namesrv": "a", "master": "m"},
               {"kind": "route", "t": 11.5, "namesrv": "b", "master": "m"},
               {"kind": "send", "t": 12, "key": "k9", "ok": True, "call": 12, "ret": 12.5}]
    ok = checkers.master_routed_after_heal(records, 10.0, ["a", "b"], bound=30)
    assert ok and ok.value == 2.5
    split = [dict(records[0]), dict(records[1], master="other"), records[2]]
    assert not checkers.master_routed_after_heal(split, 10.0, ["a", "b"], bound=30)


def test_the_masters_elected_within_each_fault_are_counted():
    """What the bug schedules (slave-kill, leader-cut-from-master) are judged by: a fault that must elect nobody."""
    records = [info(1, 1, 1), info(5, 1, 1), info(12, 2, 2), info(13, 3, 1), info(25, 3, 1)]
    faults = [{"t": 2, "action": "cut", "healed": 8}, {"t": 10, "action": "kill", "healed": 20},
              {"t": 24, "action": "pause", "healed": 30}]
    per_fault = checkers.availability(records, faults)["faults"]
    assert [f["elections"] for f in per_fault] == [0, 2, 0]



def test_with_java_brokers_a_run_outlasts_a_registration_period_after_its_last_heal():
    """A name server that forgot a broker (started again with a new store, or the broker's connection closed while
    cut off) routes it only from its next REGISTER_BROKER, every 30 s for a Java broker: runs that stopped their
    traffic 20 s after the heal failed "master routed after heal" by their own timing (issue 56: quorum-lost-forced
    seed 8, leader-cut-from-slave-master-kill seeds 5 and 9)."""
    from tools.faultlab.run import REGISTRATION_PERIOD, timing_for
    settle, bound = timing_for("java", 20.0, 30.0)
    assert bound > REGISTRATION_PERIOD and settle > bound
    assert timing_for("fake", 12.0, 30.0) == (12.0, 30.0)   # the fake broker registers every second
    assert timing_for("java", 90.0, 60.0) == (90.0, 60.0)
