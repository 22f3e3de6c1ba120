"""mqadmin against our name server and controller with ``aclEnable=true``: refused without credentials, working
with an admin's (``conf/tools.yml`` under ROCKETMQ_HOME, as mqadmin reads them); a read-only account reads.

Runs where the Apache RocketMQ installations are given in JAVAPEER5 (5.3.3) and JAVAPEER (4.9.8); skips,
saying so, elsewhere.
"""

import subprocess

import pytest

from namesrv.client import signed_request
from tests.brokers import register_request
from tests.controller.wire import controller_ports, controller_properties
from tests.integration.server import TWISTD, NamesrvProcess
from tests.javapeers import mqadmin, peer, tools_home, wait_listening


ACL = """accounts:
  - accessKey: opsAdmin
    secretKey: ops-admin-secret-123
    admin: true
"""


def test_mqadmin_with_an_admins_credentials_may_change_the_controller_and_without_may_not(tmp_path, monkeypatch):
    peer("5.3.3")
    (port,) = controller_ports(1)
    (tmp_path / "plain_acl.yml").write_text(ACL)
    conf = tmp_path / "controller.properties"
    conf.write_text("controllerDLegerGroup=group1\ncontrollerDLegerPeers=n0-127.0.0.1:%d\ncontrollerDLegerSelfId=n0\n"
                    "controllerStorePath=%s\nlogDir=%s\naclEnable=true\naclFile=%s\n"
                    % (port, tmp_path / "store", tmp_path / "logs", tmp_path / "plain_acl.yml"))
    ours = subprocess.Popen([TWISTD, "-n", "--pidfile=", "--logfile", str(tmp_path / "ours.log"), "controller",
                             "-c", str(conf)], cwd=str(tmp_path))
    try:
        wait_listening(port, ours, "our controller", credentials=("opsAdmin", "ops-admin-secret-123"))
        address = "127.0.0.1:%d" % port
        # -n (any address here): without one, mqadmin asks an address server on the network for name servers
        update = ("updateControllerConfig", "-a", address, "-n", address, "-k", "scanInactiveMasterInterval", "-v",
                  "6000")

        monkeypatch.setenv("ROCKETMQ_HOME", tools_home(tmp_path, "anonymous"))
        refused = mqadmin("5.3.3", *update, home=str(tmp_path))
        assert "must be signed" in refused.stdout + refused.stderr, refused.stdout + refused.stderr

        monkeypatch.setenv("ROCKETMQ_HOME", tools_home(tmp_path, "admin", "opsAdmin", "ops-admin-secret-123"))
        accepted = mqadmin("5.3.3", *update, home=str(tmp_path))
        assert "success" in accepted.stdout.lower(), accepted.stdout + accepted.stderr
        shown = mqadmin("5.3.3", "getControllerConfig", "-a", address, "-n", address, home=str(tmp_path))
        assert "scanInactiveMasterInterval" in shown.stdout and "6000" in shown.stdout, shown.stdout
    finally:
        ours.terminate()
        ours.wait(30)


NAMESRV_ACL = ACL + """  - accessKey: readOnly1
    secretKey: read-only-secret-1
"""


def test_mqadmin_4_9_8_and_5_3_3_work_with_credentials_on_a_name_server_and_its_controller(tmp_path, monkeypatch):
    """Name-server commands with both releases, the controller's with 5.3.3: an admin's conf/tools.yml makes
    them work; without one they are refused (NO_PERMISSION), and a read-only account may read, not write."""
    versions = [version for version in ("4.9.8", "5.3.3") if _has(version)]
    if not versions:
        peer("5.3.3")   # skips, naming what to set
    (port,) = controller_ports(1)
    (tmp_path / "plain_acl.yml").write_text(NAMESRV_ACL)
    server = NamesrvProcess(tmp_path, dict(controller_properties(tmp_path, port), aclEnable="true",
                                           aclFile=str(tmp_path / "plain_acl.yml"))).start()
    broker = server.client()
    try:
        registration = register_request("ClusterM", "broker-m", "127.0.0.1:10941", topics=["AdminTopic", "Other"])
        registration = signed_request(registration.code, registration.ext, registration.body,
                                      ("opsAdmin", "ops-admin-secret-123"), version=registration.version)
        namesrv = "127.0.0.1:%d" % server.port
        controller = "127.0.0.1:%d" % port
        homes = {"admin": tools_home(tmp_path, "admin", "opsAdmin", "ops-admin-secret-123"),
                 "reader": tools_home(tmp_path, "reader", "readOnly1", "read-only-secret-1"),
                 "anonymous": tools_home(tmp_path, "anonymous")}
        reads = [(("clusterList", "-n", namesrv), "broker-m"),
                 (("topicRoute", "-n", namesrv, "-t", "AdminTopic"), "127.0.0.1:10941"),
                 (("getNamesrvConfig", "-n", namesrv), "listenPort")]
        writes = [(("updateKvConfig", "-n", namesrv, "-s", "NS", "-k", "key", "-v", "value"), "success")]
        # -n on the controller's commands too: without one, mqadmin asks an address server on the network
        controller_reads = [(("getControllerMetaData", "-a", controller, "-n", namesrv), "ControllerLeaderId"),
                            (("getControllerConfig", "-a", controller, "-n", namesrv), "scanInactiveMasterInterval")]
        controller_writes = [(("updateControllerConfig", "-a", controller, "-n", namesrv, "-k",
                               "scanInactiveMasterInterval", "-v", "6000"), "success")]
        wrong = []
        for version in versions:
            commands = [(reads, ("admin", "reader")), (writes, ("admin",))]
            if version == "5.3.3":
                commands += [(controller_reads, ("admin", "reader")), (controller_writes, ("admin",))]
            for group, allowed in commands:
                for args, shown in group:
                    for who in ("admin", "reader", "anonymous"):
                        # the broker registers again, as it does every 30 s (the commands take minutes)
                        answer = broker.call(registration.with_changes(opaque=0))
                        assert answer.code == 0, answer.remark
                        monkeypatch.setenv("ROCKETMQ_HOME", homes[who])
                        # what should work is tried up to 3 times (mqadmin's 3 s timeouts on a busy machine)
                        for _ in range(3 if who in allowed else 1):
                            output = _run(version, args, tmp_path)
                            worked = shown in output and not _refused(output)
                            if worked:
                                break
                        if worked != (who in allowed) or (who not in allowed and not _refused(output)):
                            wrong.append((version, args[0], who, output[-1500:]))
        assert not wrong, wrong
        assert "refused" in server.log()
    finally:
        broker.close()
        server.stop()


def _run(version, args, home):
    done = mqadmin(version, *args, home=str(home))
    return done.stdout + done.stderr


def _refused(output):
    """mqadmin's way of showing a NO_PERMISSION answer (CODE: 16 and the remark)."""
    return "CODE: 16" in output or "must be signed" in output or "no permission" in output


def _has(version):
    try:
        peer(version)
    except pytest.skip.Exception:
        return False
    return True
