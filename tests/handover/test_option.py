"""`twistd namesrv --takeover`: the option reaches the service, which asks before it listens."""

import os

import pytest_twisted

from namesrv import tap
from namesrv.handover.coordinator import control_path
from tests.fakes import result_of


def options(tmp_path, *extra):
    conf = tmp_path / "namesrv.properties"
    conf.write_text("kvConfigPath=%s\nlogDir=%s\nrouteSnapshotPath=%s\nrouteReadWorkers=0\nlistenPort=0\n"
                    % (tmp_path / "kv.json", tmp_path / "logs", tmp_path / "routes.snapshot"))
    opts = tap.Options()
    opts.parseOptions(["-c", str(conf), *extra])
    return opts


def test_the_flag_is_off_by_default_and_on_when_given(tmp_path):
    assert not tap.makeService(options(tmp_path)).handover.takeover
    assert tap.makeService(options(tmp_path, "--takeover")).handover.takeover


def test_the_control_socket_sits_beside_the_instance_id_file(tmp_path):
    service = tap.makeService(options(tmp_path))
    assert control_path(service.config) == str(tmp_path / "kv.json") + ".instance.handover.sock"


def test_with_nothing_running_a_takeover_starts_normally(tmp_path):
    service = tap.makeService(options(tmp_path, "--takeover"))
    assert result_of(service.handover.take_over()) is None
    assert not os.path.exists(service.handover.path)


@pytest_twisted.inlineCallbacks
def test_a_stale_control_socket_file_is_replaced_when_serving(tmp_path):
    import socket
    service = tap.makeService(options(tmp_path))
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(service.handover.path)
    stale.close()   # the file stays, nobody listens
    service.startService()
    try:
        assert service.handover.control_port is not None
        probe = socket.socket(socket.AF_UNIX)
        probe.connect(service.handover.path)
        probe.close()
    finally:
        yield service.stopService()
    assert not os.path.exists(service.handover.path)
