"""`twistd namesrv --takeover`: the option reaches the service, which asks before it listens."""

import os
import stat

import pytest
import pytest_twisted

from namesrv import tap
from namesrv.handover.coordinator import control_path
from namesrv.unixaddress import MAX_SOCKET_PATH, socket_address
from tests.fakes import result_of


def options(tmp_path, *extra, kv="kv.json"):
    conf = tmp_path / "namesrv.properties"
    conf.write_text("kvConfigPath=%s\nlogDir=%s\nrouteSnapshotPath=%s\nrouteReadWorkers=0\nlistenPort=0\n"
                    % (tmp_path / kv, tmp_path / "logs", tmp_path / "routes.snapshot"))
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


def deep(tmp_path):
    """A directory whose control socket path is longer than a UNIX socket's address holds."""
    directory = tmp_path / ("deep-" * 16) / ("deeper-" * 4)
    directory.mkdir(parents=True)
    return directory


@pytest_twisted.inlineCallbacks
@pytest.mark.parametrize("where", ["short", "deep"])
def test_a_stale_control_socket_file_is_replaced_when_serving(tmp_path, where):
    """Also where the path is too long for a socket address (a deep kvConfigPath): the same file is bound through
    its directory, so such a process can be taken over too (it could not before)."""
    import socket
    directory = tmp_path if where == "short" else deep(tmp_path)
    service = tap.makeService(options(directory))
    path = service.handover.path
    assert path == control_path(service.config)
    assert (len(os.fsencode(path)) > MAX_SOCKET_PATH) == (where == "deep")
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(service.handover.address)
    stale.close()   # the file stays, nobody listens
    service.startService()
    try:
        assert service.handover.control_port is not None
        assert stat.S_ISSOCK(os.stat(path).st_mode) and stat.S_IMODE(os.stat(path).st_mode) == 0o600
        probe = socket.socket(socket.AF_UNIX)
        probe.connect(socket_address(path))
        probe.close()
    finally:
        yield service.stopService()
    assert not os.path.exists(path)


def test_a_socket_name_no_address_can_hold_gives_no_takeover(tmp_path):
    """The file name alone too long (about 90 bytes and more): no address at all, and the service says so."""
    long_name = "n" * 100 + ".json"
    assert socket_address(str(tmp_path / long_name) + ".instance.handover.sock") is None
    service = tap.makeService(options(tmp_path, "--takeover", kv=long_name))
    assert service.handover.path is None and service.handover.address is None
    assert result_of(service.handover.take_over()) is None
