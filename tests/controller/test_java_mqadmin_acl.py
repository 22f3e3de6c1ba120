"""mqadmin 5.3.3 against our controller with ``aclEnable=true``: its controller writes are refused without
credentials and pass with an admin's (``conf/tools.yml`` under ROCKETMQ_HOME, as mqadmin reads them).

Runs where an Apache RocketMQ 5.3.3 installation is given in JAVAPEER5; skips, saying so, elsewhere.
"""

import subprocess

from tests.controller.test_java_controller_answers import wait_listening
from tests.controller.wire import controller_ports
from tests.integration.server import TWISTD
from tests.javapeers import mqadmin, peer

ACL = """accounts:
  - accessKey: opsAdmin
    secretKey: ops-admin-secret-123
    admin: true
"""


def _tools_home(tmp_path, name, access_key=None, secret_key=None):
    home = tmp_path / name
    (home / "conf").mkdir(parents=True)
    if access_key:
        (home / "conf" / "tools.yml").write_text("accessKey: %s\nsecretKey: %s\n" % (access_key, secret_key))
    return str(home)


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
        wait_listening(port, ours, "our controller")
        address = "127.0.0.1:%d" % port
        update = ("updateControllerConfig", "-a", address, "-k", "scanInactiveMasterInterval", "-v", "6000")

        monkeypatch.setenv("ROCKETMQ_HOME", _tools_home(tmp_path, "anonymous"))
        refused = mqadmin("5.3.3", *update, home=str(tmp_path))
        assert "must be signed" in refused.stdout + refused.stderr, refused.stdout + refused.stderr

        monkeypatch.setenv("ROCKETMQ_HOME", _tools_home(tmp_path, "admin", "opsAdmin", "ops-admin-secret-123"))
        accepted = mqadmin("5.3.3", *update, home=str(tmp_path))
        assert "success" in accepted.stdout.lower(), accepted.stdout + accepted.stderr
        shown = mqadmin("5.3.3", "getControllerConfig", "-a", address, home=str(tmp_path))
        assert "scanInactiveMasterInterval" in shown.stdout and "6000" in shown.stdout, shown.stdout
    finally:
        ours.terminate()
        ours.wait(30)
