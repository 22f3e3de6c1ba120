"""A Java NameServer's properties file started here without bindAddress is warned about once at start:
ours binds 127.0.0.1, Java's every interface (namesrv/startup/javastyle.py says what "Java-style" is)."""

import pytest
from twisted.logger import formatEvent, globalLogPublisher

from namesrv.controller.tap import Options as ControllerOptions
from namesrv.startup import configure
from namesrv.startup.javastyle import is_java_style
from tests.integration.server import NamesrvProcess, free_port

JAVA_FILE = "listenPort={port}\nkvConfigPath={dir}/kvConfig.json\nserverWorkerThreads=8\nclientWorkerThreads=4\n"


def warnings_of(path, overrides=None):
    seen = []
    globalLogPublisher.addObserver(seen.append)
    try:
        configure("namesrv", str(path), overrides)
    finally:
        globalLogPublisher.removeObserver(seen.append)
    return [formatEvent(e) for e in seen if "bindAddress=0.0.0.0" in formatEvent(e)]


@pytest.mark.parametrize("text, warned", [
    (JAVA_FILE, True),                                                   # Java's keys only
    ("listenPort=9876\nsomethingElse=1\n", True),                        # unknown keys say nothing either way
    (JAVA_FILE + "bindAddress=127.0.0.1\n", False),                      # the operator chose
    (JAVA_FILE + "routeReadWorkers=1\n", False),                         # one of ours: written for this server
    ("# nothing set\n", False),
])
def test_a_java_style_file_without_bind_address_is_warned_about(tmp_path, text, warned):
    path = tmp_path / "namesrv.properties"
    path.write_text(text.format(port=9876, dir=tmp_path))
    lines = warnings_of(path)
    assert len(lines) == (1 if warned else 0), lines
    if warned:
        assert lines[0].startswith("%s reads like a Java NameServer's file (only Java's keys) and sets no "
                                   "bindAddress: this server listens on 127.0.0.1 only" % path)


def test_host_on_the_command_line_is_a_choice_too(tmp_path):
    path = tmp_path / "namesrv.properties"
    path.write_text(JAVA_FILE.format(port=9876, dir=tmp_path))
    assert warnings_of(path, {"bindAddress": "127.0.0.1"}) == []


def test_java_style_is_decided_by_the_keys_both_servers_know():
    assert is_java_style(["listenPort", "rocketmqHome", "useTLS", "controllerDLegerPeers"])
    assert not is_java_style(["listenPort", "statusListenPort"]) and not is_java_style([])
    assert not is_java_style(["notAKeyOfAnyone"])


def test_twistd_with_a_java_file_logs_the_warning_once(tmp_path):
    port = free_port()
    server = NamesrvProcess(tmp_path, port=port)
    server.properties = {}
    with open(server.config_file, "w") as f:   # the Java file as it is: no bindAddress, no key of ours
        f.write(JAVA_FILE.format(port=port, dir=tmp_path))
    server.env = lambda: dict(NamesrvProcess.env(server), HOME=str(tmp_path))
    server.start()
    server.stop()
    assert server.log().count("sets no bindAddress: this server listens on 127.0.0.1 only") == 1


def test_twistd_controller_is_not_warned_its_port_is_its_peers_address(tmp_path):
    """A standalone controller listens where controllerDLegerPeers says, not on bindAddress: its file (Java's
    ControllerConfig keys only) is no reason for the warning."""
    path = tmp_path / "controller.properties"
    path.write_text("controllerDLegerGroup=group1\ncontrollerDLegerPeers=n0-127.0.0.1:9878\ncontrollerDLegerSelfId=n0\n"
                    "controllerStorePath=%s\n" % (tmp_path / "store"))
    seen = []
    globalLogPublisher.addObserver(seen.append)
    try:
        ControllerOptions().parseOptions(["-c", str(path)])
    finally:
        globalLogPublisher.removeObserver(seen.append)
    assert not [e for e in seen if "bindAddress=0.0.0.0" in formatEvent(e)]
    assert is_java_style(["controllerDLegerGroup", "controllerDLegerPeers", "controllerDLegerSelfId"])
