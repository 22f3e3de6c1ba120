"""What users install, not the checkout: the built wheel holds every module and serves from elsewhere.

The rest of the suite imports the source tree, which hides a module missing from the wheel
(``namesrv.readworkers`` once was). These tests build the wheel from a copy of the tree,
compare it with the sources, then install it into a fresh venv and run ``twistd namesrv``
from a directory outside the checkout, with the options that load the most modules.
"""

import os
import subprocess
import sys
import time
import urllib.request
import zipfile

import pytest

from tests.controller.wire import group_credentials
from tests.integration.server import REPO, NamesrvProcess, free_port, register_and_read_route
from tests.packaging.checkout import copy_checkout


PACKAGES = ("namesrv", "processors", "spark")
PLUGINS = os.path.join("twisted", "plugins")


def source_modules():
    found = set()
    for top in PACKAGES + (PLUGINS,):
        for folder, dirs, files in os.walk(os.path.join(REPO, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            rel = os.path.relpath(folder, REPO)
            found.update(os.path.join(rel, name).replace(os.sep, "/") for name in files if name.endswith(".py"))
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel as `pip install .` would build it, from a copy (the checkout stays clean)."""
    work, tree = copy_checkout(tmp_path_factory, "wheel", "src")
    out = work / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "-w", str(out), str(tree)], check=True, timeout=300)
    (path,) = out.glob("*.whl")
    return path


def test_wheel_holds_every_module_of_the_source_tree(wheel):
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name for name in archive.namelist() if name.endswith(".py")}
    missing = source_modules() - shipped
    assert not missing, "modules left out of the wheel: %s" % sorted(missing)
    assert "twisted/plugins/namesrv_plugin.py" in shipped
    assert not any(name == "twisted/__init__.py" or "/tests/" in name for name in shipped)


def test_wheel_installs_the_guide_where_the_systemd_unit_points(wheel):
    """conf/namesrv.service's Documentation= names <venv>/share/doc/rocketmq-namesrv/running.md: every page of
    docs/ is there once the wheel is installed (the wheel's data scheme is the venv's prefix)."""
    with zipfile.ZipFile(wheel) as archive:
        data = {name.split(".data/data/", 1)[1] for name in archive.namelist() if ".data/data/" in name}
    pages = {"share/doc/rocketmq-namesrv/" + name for name in os.listdir(os.path.join(REPO, "docs"))}
    assert pages and pages <= data
    with open(os.path.join(REPO, "conf", "namesrv.service")) as f:
        (url,) = [line.split("=", 1)[1].strip() for line in f if line.startswith("Documentation=")]
    assert url.replace("file:///opt/rocketmq-namesrv/venv/", "") in data


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory):
    """A fresh venv with the wheel and its dependencies, and nothing of the checkout."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
                   check=True, timeout=900)
    return venv


def test_installed_wheel_serves_routes_from_outside_the_checkout(installed, tmp_path):
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join([str(installed / "bin"), env.get("PATH", "")])
    help_text = subprocess.run([str(installed / "bin" / "twistd"), "--help"], cwd=workdir, env=env,
                               capture_output=True, text=True, timeout=120).stdout
    assert "namesrv" in help_text and "controller" in help_text

    status_port = free_port()
    # the controller among three (the others not running): pysyncobj's Raft and our hooks into it are loaded
    # from the venv, with the members' secret
    controller_port, *others = [free_port() for _ in range(3)]
    server = InstalledNamesrv(installed, workdir, env, {
        "routeReadWorkers": "1",
        "prometheusListenPort": str(free_port()),
        "statusListenPort": str(status_port),
        "enableControllerInNamesrv": "true",
        "controllerDLegerPeers": ";".join("n%d-127.0.0.1:%d" % item
                                          for item in enumerate([controller_port, *others])),
        "controllerDLegerSelfId": "n0", "controllerStorePath": str(workdir / "controller"),
        **group_credentials(workdir),
        **tls_properties(workdir),
    })
    server.start(timeout=60)
    try:
        wait_for_line(server, "read worker 0 listening")
        with server.client() as broker, server.client() as reader:
            data = register_and_read_route(broker, reader, "broker-w", ["Wheeled", "Wheeled2"])
            assert data["brokerDatas"][0]["brokerName"] == "broker-w"
        with urllib.request.urlopen("http://127.0.0.1:%d/" % status_port, timeout=10) as page:
            assert b"broker-w" in page.read()        # the status page's package is in the wheel too
        from namesrv.client import BlockingRemotingClient
        from namesrv.protocol.codes import RequestCode
        from namesrv.protocol.command import make_request
        with BlockingRemotingClient("127.0.0.1", controller_port) as admin:
            metadata = admin.call(make_request(RequestCode.CONTROLLER_GET_METADATA_INFO))
        assert metadata.ext["isLeader"] == "false" and metadata.ext["peers"].startswith("n0:127.0.0.1:")
        log = server.log()
        assert "Traceback" not in log and "ModuleNotFoundError" not in log
    finally:
        server.stop()


def wait_for_line(server, text, timeout=60.0):
    """Bounded wait for a line in the server's log (a worker listens once its first replica is in)."""
    deadline = time.monotonic() + timeout
    while text not in server.log():
        assert time.monotonic() < deadline, "no %r in the log:\n%s" % (text, server.log())
        time.sleep(0.1)


def tls_properties(workdir):
    """Permissive TLS with a certificate made here: plain clients still connect, the TLS modules load."""
    from tests.security.certs import write_pair
    cert, key, _ = write_pair(workdir)
    return {"tlsMode": "permissive", "tlsServerCertPath": cert, "tlsServerKeyPath": key}


class InstalledNamesrv(NamesrvProcess):
    """NamesrvProcess with the fresh venv's twistd, run from ``workdir`` with no PYTHONPATH."""

    def __init__(self, venv, workdir, env, properties):
        NamesrvProcess.__init__(self, workdir, properties)
        self.venv = venv
        self.clean_env = env

    def command(self, *extra):
        return [str(self.venv / "bin" / "twistd"), "-n", "--pidfile=", "--logfile", self.log_file, "namesrv",
                "-c", self.config_file, *extra]

    def env(self):
        return dict(self.clean_env)
