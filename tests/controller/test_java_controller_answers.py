"""The same request sequence against Java 5.3.3's controller and ours: the same answers.

Two fake broker groups (real frames over TCP, made-up broker addresses) go through what brokers and
admin tools send, good and bad: ids, registration, elections, in-sync sets, replica info, sync-state
data, clean-ups, and the errors (unknown brokers, stale epochs, wrong masters, garbage bodies, a
heartbeat without a broker id). Each answer's code, remark, header fields and body (parsed) must be
equal, the controller's own address in the metadata aside. Runs where the 5.3.3 peer is built
($JAVAPEER5) and skips, saying so, where it is not.
"""

import json
import os
import subprocess
import time

from namesrv.client import BlockingRemotingClient
from namesrv.codec.fastjson import loads
from namesrv.protocol.codes import RequestCode as C
from namesrv.protocol.command import make_request
from tests.controller.wire import controller_ports
from tests.integration.server import TWISTD
from tests.javapeers import peer

A1, A2, B1 = "127.0.0.1:30911", "127.0.0.1:30921", "127.0.0.1:31911"


def sequence():
    """(label, code, ext, body, oneway) in the order sent; ``{p}`` in values is the controller's port."""
    def ss(members, epoch):
        return json.dumps({"syncStateSet": members, "syncStateSetEpoch": epoch}).encode()
    beat = {"clusterName": "C", "brokerName": "broker-a", "heartbeatTimeoutMills": "10000"}
    return [
        ("metadata", C.CONTROLLER_GET_METADATA_INFO, None, None, False),
        ("next id, fresh group", C.CONTROLLER_GET_NEXT_BROKER_ID, {"clusterName": "C", "brokerName": "broker-a"},
         None, False),
        ("apply id 2 on a fresh group", C.CONTROLLER_APPLY_BROKER_ID, {
            "clusterName": "C", "brokerName": "broker-a", "appliedBrokerId": "2",
            "registerCheckCode": A1 + ";1"}, None, False),
        ("apply id 1", C.CONTROLLER_APPLY_BROKER_ID, {"clusterName": "C", "brokerName": "broker-a",
                                                      "appliedBrokerId": "1", "registerCheckCode": A1 + ";1"},
         None, False),
        ("apply id 1 again, same code", C.CONTROLLER_APPLY_BROKER_ID, {
            "clusterName": "C", "brokerName": "broker-a", "appliedBrokerId": "1", "registerCheckCode": A1 + ";1"},
         None, False),
        ("apply id 1, another broker", C.CONTROLLER_APPLY_BROKER_ID, {
            "clusterName": "C", "brokerName": "broker-a", "appliedBrokerId": "1", "registerCheckCode": A2 + ";2"},
         None, False),
        ("beat 1", C.BROKER_HEARTBEAT, dict(beat, brokerAddr=A1, brokerId="1"), None, False),
        ("register 1", C.CONTROLLER_REGISTER_BROKER, {"clusterName": "C", "brokerName": "broker-a",
                                                      "brokerId": "1", "brokerAddress": A1}, None, False),
        ("replica info, no master", C.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"}, None, False),
        ("elect 1", C.CONTROLLER_ELECT_MASTER, {"clusterName": "C", "brokerName": "broker-a", "brokerId": "1",
                                                "designateElect": "false"}, None, False),
        ("next id", C.CONTROLLER_GET_NEXT_BROKER_ID, {"clusterName": "C", "brokerName": "broker-a"}, None, False),
        ("apply id 2", C.CONTROLLER_APPLY_BROKER_ID, {"clusterName": "C", "brokerName": "broker-a",
                                                      "appliedBrokerId": "2", "registerCheckCode": A2 + ";2"},
         None, False),
        ("beat 2", C.BROKER_HEARTBEAT, dict(beat, brokerAddr=A2, brokerId="2"), None, False),
        ("register 2: names the master", C.CONTROLLER_REGISTER_BROKER, {
            "clusterName": "C", "brokerName": "broker-a", "brokerId": "2", "brokerAddress": A2}, None, False),
        ("elect 2 while 1 lives", C.CONTROLLER_ELECT_MASTER, {"clusterName": "C", "brokerName": "broker-a",
                                                              "brokerId": "2", "designateElect": "false"},
         None, False),
        ("alter: stale master epoch", C.CONTROLLER_ALTER_SYNC_STATE_SET, {
            "brokerName": "broker-a", "masterBrokerId": "1", "masterEpoch": "0"}, ss([1, 2], 1), False),
        ("alter: stale set epoch", C.CONTROLLER_ALTER_SYNC_STATE_SET, {
            "brokerName": "broker-a", "masterBrokerId": "1", "masterEpoch": "1"}, ss([1, 2], 0), False),
        ("alter: not the master", C.CONTROLLER_ALTER_SYNC_STATE_SET, {
            "brokerName": "broker-a", "masterBrokerId": "2", "masterEpoch": "1"}, ss([1, 2], 1), False),
        ("alter: unknown replica", C.CONTROLLER_ALTER_SYNC_STATE_SET, {
            "brokerName": "broker-a", "masterBrokerId": "1", "masterEpoch": "1"}, ss([1, 3], 1), False),
        ("alter: unchanged", C.CONTROLLER_ALTER_SYNC_STATE_SET, {
            "brokerName": "broker-a", "masterBrokerId": "1", "masterEpoch": "1"}, ss([1], 1), False),
        ("alter: grow", C.CONTROLLER_ALTER_SYNC_STATE_SET, {
            "brokerName": "broker-a", "masterBrokerId": "1", "masterEpoch": "1"}, ss([1, 2], 1), False),
        ("alter: unknown group", C.CONTROLLER_ALTER_SYNC_STATE_SET, {
            "brokerName": "nope", "masterBrokerId": "1", "masterEpoch": "1"}, ss([1], 1), False),
        ("alter: garbage body", C.CONTROLLER_ALTER_SYNC_STATE_SET, {
            "brokerName": "broker-a", "masterBrokerId": "1", "masterEpoch": "1"}, b"\x01\x02garbage", False),
        ("replica info", C.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"}, None, False),
        ("replica info, unknown", C.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "nope"}, None, False),
        ("elect, unknown group", C.CONTROLLER_ELECT_MASTER, {"clusterName": "C", "brokerName": "nope",
                                                             "brokerId": "1", "designateElect": "false"},
         None, False),
        ("heartbeat without brokerId", C.BROKER_HEARTBEAT, dict(beat, brokerAddr=A1), None, False),
        ("second group: ids", C.CONTROLLER_APPLY_BROKER_ID, {"clusterName": "C", "brokerName": "broker-b",
                                                             "appliedBrokerId": "1",
                                                             "registerCheckCode": B1 + ";3"}, None, False),
        ("second group: register", C.CONTROLLER_REGISTER_BROKER, {
            "clusterName": "C", "brokerName": "broker-b", "brokerId": "1", "brokerAddress": B1}, None, False),
        ("sync state data", C.CONTROLLER_GET_SYNC_STATE_DATA, None,
         json.dumps(["broker-a", "broker-b", "nope"]).encode(), False),
        ("clean a living group", C.CLEAN_BROKER_DATA, {"clusterName": "C", "brokerName": "broker-a"}, None, False),
        ("clean a dead id", C.CLEAN_BROKER_DATA, {"clusterName": "C", "brokerName": "broker-b",
                                                  "brokerControllerIdsToClean": "1"}, None, False),
        ("clean an unknown group", C.CLEAN_BROKER_DATA, {"clusterName": "C", "brokerName": "nope",
                                                         "isCleanLivingBroker": "true"}, None, False),
        ("register after the clean-up", C.CONTROLLER_REGISTER_BROKER, {
            "clusterName": "C", "brokerName": "broker-b", "brokerId": "1", "brokerAddress": B1}, None, False),
    ]


def answers(port):
    got = []
    with BlockingRemotingClient("127.0.0.1", port, timeout=10) as client:
        for label, code, ext, body, oneway in sequence():
            answer = client.call(make_request(code, ext=ext, body=body))
            remark = "<decode failure>" if "garbage" in label and answer.remark else answer.remark
            got.append((label, answer.code, remark, _ext(answer.ext), _body(answer.body)))
    return got


def _ext(ext):
    return {k: v for k, v in (ext or {}).items() if k not in ("controllerLeaderAddress", "peers")} or None


def _body(body):
    if not body:
        return None
    try:
        return loads(body)
    except ValueError:
        return body


def wait_listening(port, process, what):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert process.poll() is None, "%s exited" % what
        try:
            with BlockingRemotingClient("127.0.0.1", port, timeout=2) as client:
                answer = client.call(make_request(C.CONTROLLER_GET_METADATA_INFO))
            if answer.ext and answer.ext.get("isLeader") == "true":
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError("%s did not lead within 120 s" % what)


def test_java_s_controller_and_ours_answer_the_same_sequence_alike(tmp_path):
    home = peer("5.3.3")
    java_port, our_port = controller_ports(2)
    java = subprocess.Popen(["bash", os.path.join(home, "controller.sh"), str(java_port), str(tmp_path / "java")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    conf = tmp_path / "ours.properties"
    conf.write_text("controllerDLegerGroup=group1\ncontrollerDLegerPeers=n0-127.0.0.1:%d\ncontrollerDLegerSelfId=n0\n"
                    "controllerStorePath=%s\nlogDir=%s\n" % (our_port, tmp_path / "ours", tmp_path / "logs"))
    ours = subprocess.Popen([TWISTD, "-n", "--pidfile=", "--logfile", str(tmp_path / "ours.log"), "controller",
                             "-c", str(conf)], cwd=str(tmp_path))
    try:
        wait_listening(java_port, java, "Java's controller")
        wait_listening(our_port, ours, "our controller")
        theirs, mine = answers(java_port), answers(our_port)
        differences = [(t, m) for t, m in zip(theirs, mine) if t != m]
        assert differences == [], "\n".join("java: %r\nours: %r" % pair for pair in differences)
    finally:
        os.killpg(java.pid, 9)
        java.wait()
        ours.terminate()
        ours.wait(30)
