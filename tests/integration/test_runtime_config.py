"""Runtime configuration end to end: a real ``twistd namesrv -c`` on a copy of the shipped template, updated over a
real socket with namesrv-admin, never rewrites its ``-c`` file; the change is in the instance's runtime overlay and
survives a restart (issue 54, finding 6: one documented update cut the template from 333 to 108 lines, wrote the
per-instance paths in as fixed values, and a second copy of the template was then refused)."""

import os
import subprocess
import time

from namesrv.config.properties import parse_properties
from tests.admin.cli import admin
from tests.controller.wire import controller_ports
from tests.integration.server import REPO, TWISTD, NamesrvProcess, free_port

TEMPLATE = os.path.join(REPO, "conf", "namesrv.properties")


class TemplateCopy(NamesrvProcess):
    """``twistd namesrv -c`` on a copy of conf/namesrv.properties with only listenPort changed, as running.md's
    "a copy of the template is an instance of its own"; every default path under ``home`` (its HOME)."""

    def __init__(self, home, workdir, port):
        os.makedirs(workdir, exist_ok=True)
        NamesrvProcess.__init__(self, workdir, port=port)
        with open(TEMPLATE) as f:
            text = f.read()
        assert "\nlistenPort=9876\n" in text
        with open(self.config_file, "w") as f:
            f.write(text.replace("\nlistenPort=9876\n", "\nlistenPort=%d\n" % port))
        self.home = str(home)

    def env(self):
        return dict(NamesrvProcess.env(self), HOME=self.home)

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port


def test_an_update_never_rewrites_the_c_file_and_the_overlay_survives_a_restart(tmp_path):
    home = tmp_path / "home"
    a = TemplateCopy(home, tmp_path / "a", free_port())
    original = open(a.config_file, "rb").read()
    a.start(timeout=60)
    b = None
    try:
        status, out, err = admin("updateNamesrvConfig", "-n", a.address, "-k", "orderMessageEnable", "-v", "true")
        assert (status, err) == (0, ""), out
        status, _, err = admin("updateNamesrvConfig", "-n", a.address, "-k", "listenPort", "-v", "19999")
        assert status == 1 and "Refused keys: listenPort (not changeable at run time)" in err
        assert open(a.config_file, "rb").read() == original
        overlay = home / "namesrv" / ("namesrv-runtime-%d.properties" % a.port)
        assert parse_properties(overlay.read_text()) == {"orderMessageEnable": "true"}

        # the recipe still works while the first copy runs: a second copy is an instance of its own
        b = TemplateCopy(home, tmp_path / "b", free_port()).start(timeout=60)
        status, out, _ = admin("--json", "getNamesrvConfig", "-n", b.address)
        assert status == 0 and '"orderMessageEnable": "false"' in out
    finally:
        a.stop()
        if b is not None:
            b.stop()
    assert open(a.config_file, "rb").read() == original and open(TEMPLATE, "rb").read() == \
        original.replace(b"\nlistenPort=%d\n" % a.port, b"\nlistenPort=9876\n")

    printed = subprocess.run(a.command("-p"), env=a.env(), capture_output=True, text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    assert "# from the runtime overlay %s:\n#   orderMessageEnable (over the -c file's value)\n" % overlay \
        in printed.stdout
    assert "\norderMessageEnable=true\n" in printed.stdout

    a.start(timeout=60)
    try:
        status, out, _ = admin("--json", "getNamesrvConfig", "-n", a.address)
        assert status == 0 and '"orderMessageEnable": "true"' in out
    finally:
        a.stop()
    assert "runtime overlay %s outranks the -c file for orderMessageEnable" % overlay in a.log()


def test_a_hand_edited_overlay_with_a_port_refuses_the_start_in_one_line(tmp_path):
    home = tmp_path / "home"
    server = TemplateCopy(home, tmp_path / "s", free_port())
    overlay = home / "namesrv" / ("namesrv-runtime-%d.properties" % server.port)
    os.makedirs(str(overlay.parent))
    overlay.write_text("orderMessageEnable=true\nbindAddress=0.0.0.0\n")
    done = subprocess.run(server.command(), env=server.env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == ("namesrv: refusing to start: runtimeConfigPath %s: bindAddress is not changeable "
                                   "at run time, so it cannot be in the runtime overlay: set it in the -c file and "
                                   "delete its line here" % overlay)


def test_a_controller_alone_keeps_its_updates_beside_its_store(tmp_path):
    (port,) = controller_ports(1)
    conf = tmp_path / "controller.properties"
    conf.write_text("controllerDLegerGroup=alone\ncontrollerDLegerPeers=n0-127.0.0.1:%d\ncontrollerDLegerSelfId=n0\n"
                    "controllerStorePath=%s\nlogDir=%s\n" % (port, tmp_path / "store", tmp_path / "logs"))
    original = conf.read_bytes()
    command = [TWISTD, "-n", "--pidfile=", "--logfile", str(tmp_path / "c.log"), "controller", "-c", str(conf)]
    env = dict(os.environ, PYTHONPATH=REPO)
    process = subprocess.Popen(command, cwd=str(tmp_path), env=env)
    try:
        address = "127.0.0.1:%d" % port
        deadline = time.monotonic() + 60
        while admin("getControllerMetaData", "-a", address)[0] != 0:
            assert time.monotonic() < deadline and process.poll() is None, "the controller did not start"
            time.sleep(0.2)
        status, _, err = admin("updateControllerConfig", "-a", address, "-k", "enableElectUncleanMaster", "-v", "true")
        assert (status, err) == (0, "")
        status, _, err = admin("updateControllerConfig", "-a", address, "-k", "controllerStorePath", "-v", "/tmp/x")
        assert status == 1 and "controllerStorePath (not changeable at run time)" in err
    finally:
        process.terminate()
        process.wait(60)
    overlay = tmp_path / "store-runtime.properties"
    assert parse_properties(overlay.read_text()) == {"enableElectUncleanMaster": "true"}
    assert conf.read_bytes() == original
    printed = subprocess.run(command[:3] + ["controller", "-c", str(conf), "-p"], env=env, capture_output=True,
                             text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    assert "# from the runtime overlay %s:\n#   enableElectUncleanMaster\n" % overlay in printed.stdout
    assert "\nenableElectUncleanMaster=true\n" in printed.stdout
