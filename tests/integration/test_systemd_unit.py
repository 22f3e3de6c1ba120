"""The shipped systemd unit (conf/namesrv.service) as systemd reads it and as it starts the server.

``systemd-analyze verify`` (Debian's ``systemd`` package; the test skips, saying so, without it) reads
the unit with its paths pointed at this venv, as an operator adjusts them, and must have nothing to
say. Its ``ExecStartPost`` must wait on what the same ``-c`` file gives the server: the template sets
``prometheusListenPort=0``, so a wait on a metrics port would never end, and a fixed 127.0.0.1 would
miss a server bound to one address. Its ``Documentation=`` must name docs that ``pip install`` puts
in the venv (tests/packaging/test_wheel.py checks the wheel carries them).
"""

import configparser
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys

import pytest

from tests.integration.server import REPO, free_port

UNIT = os.path.join(REPO, "conf", "namesrv.service")
TEMPLATE = os.path.join(REPO, "conf", "namesrv.properties")
#: where the unit expects the venv (its comment says to adjust it)
VENV = "/opt/rocketmq-namesrv/venv"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed (Debian: apt-get install systemd)")


def unit_text():
    with open(UNIT) as f:
        return f.read()


def service(text=None):
    unit = configparser.ConfigParser(strict=False, interpolation=None)
    unit.optionxform = str
    unit.read_string(text or unit_text())
    return unit


def here(text):
    """The unit's text with its venv moved to the one running these tests (its twistd and python exist)."""
    return text.replace(VENV, sys.prefix)


def verify(tmp_path, text):
    path = tmp_path / "namesrv.service"
    path.write_text(text)
    done = subprocess.run([SYSTEMD_ANALYZE, "verify", str(path)], capture_output=True, text=True, timeout=120)
    return done.returncode, (done.stdout + done.stderr).strip()


@needs_systemd_analyze
def test_systemd_analyze_verify_has_nothing_to_say(tmp_path):
    assert verify(tmp_path, here(unit_text())) == (0, "")


@needs_systemd_analyze
def test_verify_would_say_it_of_a_misspelt_key_or_a_missing_program(tmp_path):
    """The check above can fail: systemd names an unknown key, and a program that is not there."""
    status, said = verify(tmp_path, here(unit_text()).replace("KillSignal=", "KillSignl="))
    assert "Unknown key 'KillSignl'" in said
    status, said = verify(tmp_path, unit_text().replace(VENV, "/nonexistent/venv"))
    assert status != 0 and "/nonexistent/venv/bin/twistd is not executable" in said


def test_the_wait_asks_what_the_servers_own_file_gives():
    unit = service()["Service"]
    start, post = shlex.split(unit["ExecStart"]), shlex.split(unit["ExecStartPost"])
    config_file = start[start.index("-c") + 1]
    assert post[1:4] == ["-m", "namesrv.observe.health", "--wait"] and post[post.index("-c") + 1] == config_file
    assert not re.search(r"https?://", unit["ExecStartPost"])    # no port of its own to get wrong


def test_the_documentation_is_where_pip_installs_the_guide():
    (url,) = service()["Unit"]["Documentation"].split()
    assert url.startswith("file://%s/share/doc/rocketmq-namesrv/" % VENV)
    assert os.path.exists(os.path.join(REPO, "docs", url.rsplit("/", 1)[1]))


def template(tmp_path, **values):
    """conf/namesrv.properties as an operator installs it: ``values`` changed, nothing else."""
    with open(TEMPLATE) as f:
        text = f.read()
    for key, value in values.items():
        text, found = re.subn(r"^%s=.*$" % key, "%s=%s" % (key, value), text, flags=re.M)
        assert found == 1, key
    path = tmp_path / "namesrv.properties"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.2"])
def test_the_wait_ends_once_the_server_of_the_template_answers(tmp_path, bind):
    port = free_port()
    config_file = template(tmp_path, listenPort=port, bindAddress=bind)
    unit = service(here(unit_text()).replace("/etc/rocketmq/namesrv.properties", config_file))["Service"]
    env = dict(os.environ, HOME=str(tmp_path))   # the template leaves every file to its default under HOME
    env.pop("PYTHONPATH", None)
    wait = shlex.split(unit["ExecStartPost"])
    early = subprocess.run(wait[:wait.index("--wait") + 1] + ["0"] + wait[wait.index("--wait") + 2:], env=env,
                           capture_output=True, text=True, timeout=60)
    assert early.returncode == 1 and early.stderr == (
        "namesrv not ready: no answer from the remoting port %s:%d: Connection refused\n" % (bind, port))
    with open(tmp_path / "server.log", "w") as log:
        server = subprocess.Popen(shlex.split(unit["ExecStart"]), cwd=str(tmp_path), env=env, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        waited = subprocess.run(wait, env=env, capture_output=True, text=True, timeout=120)
        assert waited.returncode == 0, (waited.stderr, (tmp_path / "server.log").read_text()[-3000:])
        assert waited.stdout.startswith('{"status": "UP", "remoting": "%s:%d"' % (bind, port))
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
