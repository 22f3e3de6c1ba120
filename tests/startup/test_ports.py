"""The ports a server will open are tried before twistd daemonizes (namesrv/startup/ports.py)."""

import socket

import pytest

from namesrv.startup import StartupError
from namesrv.startup.ports import Listen, check_ports


def test_a_busy_port_names_the_property_the_port_and_what_to_do():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(StartupError) as caught:
            check_ports([Listen("listenPort", "127.0.0.1", port)])
    assert str(caught.value) == ("listenPort %d on 127.0.0.1 is already in use (another name server? `ss -ltnp "
                                 "'sport = :%d'` shows which process): stop it, or change listenPort" % (port, port))


def test_a_free_port_and_port_0_pass_and_stay_free():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    check_ports([Listen("listenPort", "127.0.0.1", port), Listen("statusListenPort", "127.0.0.1", 0)])
    with socket.socket() as again:   # the check let go of it
        again.bind(("127.0.0.1", port))


def test_two_properties_on_one_port_are_refused():
    with pytest.raises(StartupError, match="listenPort and statusListenPort are both port 9876: give each its own"):
        check_ports([Listen("listenPort", "127.0.0.1", 9876), Listen("statusListenPort", "127.0.0.1", 9876)])


def test_an_address_that_is_not_this_hosts_is_named():
    # 192.0.2.1 (TEST-NET-1, never assigned): the bind fails at once, nothing is sent
    with pytest.raises(StartupError, match="192.0.2.1 is not an address of this host"):
        check_ports([Listen("listenPort", "192.0.2.1", 9876, "bindAddress")])
