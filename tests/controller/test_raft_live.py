"""Three controllers on 127.0.0.1, in this process's reactor, over real sockets: Raft on each controller
port beside RocketMQ clients, members authenticated by the group's secret, strangers and hostile
bytes refused while the group goes on serving.

Waits are bounded loops on the reactor (never a sleep, never a timing assertion).
"""

import os
import pickle
import socket
import struct

import pytest
import pytest_twisted
from twisted.internet import defer, reactor, task

from namesrv.controller.service import ControllerConfigError, ControllerPortError, ControllerService
from namesrv.observe.eventlog import NullEventLog
from namesrv.protocol.codes import RequestCode, ResponseCode
from tests.controller.livegroup import ask, controller_config, until
from tests.controller.wire import controller_ports, group_credentials, member_keys, secret_file

MARKER = "/tmp/namesrv-controller-pickle-ran"


class Group:
    def __init__(self, tmp_path, size=3, **extra):
        self.ports = controller_ports(size)
        self.peers = ";".join("n%d-127.0.0.1:%d" % (i, port) for i, port in enumerate(self.ports))
        self.tmp_path = tmp_path
        self.extra = dict(extra)
        if "controllerPeerAuthDisabled" not in extra:
            for key, value in group_credentials(tmp_path, ["n%d" % i for i in range(size)]).items():
                self.extra.setdefault(key, value)
        self.services = {}

    def start(self, member):
        service = ControllerService(controller_config(self.tmp_path, self.peers, member, **self.extra), reactor, NullEventLog())
        service.startService()
        self.services[member] = service
        return service

    def start_all(self):
        for i in range(len(self.ports)):
            self.start("n%d" % i)
        return self

    def leaders(self):
        return [m for m, s in self.services.items() if s.replicated.is_leader]

    @defer.inlineCallbacks
    def stop(self, member):
        yield self.services.pop(member).stopService()

    @defer.inlineCallbacks
    def stop_all(self):
        for member in list(self.services):
            yield self.stop(member)


@pytest_twisted.inlineCallbacks
def test_three_controllers_elect_replicate_and_serve_clients_on_the_same_port(tmp_path):
    group = Group(tmp_path).start_all()
    try:
        yield until(lambda: len(group.leaders()) == 1, "one serving leader")
        leader = group.leaders()[0]
        port = group.ports[int(leader[1:])]
        answer = yield ask(port, RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
                            {"clusterName": "c", "brokerName": "broker-a"})
        assert answer.code == ResponseCode.SUCCESS and answer.ext["nextBrokerId"] == "1"
        answer = yield ask(port, RequestCode.CONTROLLER_APPLY_BROKER_ID,
                            {"clusterName": "c", "brokerName": "broker-a", "appliedBrokerId": "1",
                             "registerCheckCode": "127.0.0.1:30911;1"})
        assert answer.code == ResponseCode.SUCCESS
        yield until(lambda: all(s.state.applied == 1 for s in group.services.values()), "replicated to all")
        follower = next(m for m in group.services if m != leader)
        answer = yield ask(group.ports[int(follower[1:])], RequestCode.CONTROLLER_GET_REPLICA_INFO,
                            {"brokerName": "broker-a"})
        assert answer.code == ResponseCode.CONTROLLER_NOT_LEADER
        metadata = yield ask(group.ports[int(follower[1:])], RequestCode.CONTROLLER_GET_METADATA_INFO)
        assert metadata.ext["controllerLeaderId"] == leader and metadata.ext["isLeader"] == "false"
        status = group.services[leader].replicated.status()
        assert status["authenticated"] and sorted(status["connectedPeers"]) == sorted(
            m for m in group.services if m != leader)

        yield group.stop(leader)
        yield until(lambda: len(group.leaders()) == 1, "a new leader after the old one stopped")
        assert group.leaders()[0] != leader
        back = group.start(leader)
        yield until(lambda: back.state.applied == 1, "the restarted controller catches up from its journal")
    finally:
        yield group.stop_all()


@pytest_twisted.inlineCallbacks
def test_a_controller_with_another_secret_never_joins(tmp_path):
    group = Group(tmp_path)
    for member in ("n0", "n1"):
        group.start(member)
    (tmp_path / "other").mkdir()
    intruder_extra = dict(group.extra, controllerPeerSecretFile=secret_file(tmp_path / "other",
                                                                             b"not-the-group-secret-at-all-000000"))
    intruder = ControllerService(controller_config(tmp_path, group.peers, "n2", **intruder_extra), reactor, NullEventLog())
    intruder.startService()
    try:
        yield until(lambda: len(group.leaders()) == 1, "n0 and n1 elect a leader")
        yield task.deferLater(reactor, 2.0, lambda: None)       # n2 has tried to link several times
        assert intruder.replicated.status()["connectedPeers"] == []
        assert not intruder.replicated.is_leader
        assert all("n2" not in s.replicated.status()["connectedPeers"] for s in group.services.values())
        assert sum(s.replicated.mesh.refusals.count for s in group.services.values()) \
            + intruder.replicated.mesh.refusals.count > 0
    finally:
        yield intruder.stopService()
        yield group.stop_all()


def _send_raw(port, data, read=True):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        if not read:
            return b""
        s.settimeout(3)
        chunks = []
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except (socket.timeout, ConnectionResetError):
            pass
        return b"".join(chunks)


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch " + MARKER,))


@pytest_twisted.inlineCallbacks
def test_hostile_bytes_on_the_controller_port_run_nothing_and_the_group_serves_on(tmp_path):
    if os.path.exists(MARKER):
        os.remove(MARKER)
    group = Group(tmp_path).start_all()
    try:
        yield until(lambda: len(group.leaders()) == 1, "one serving leader")
        bomb = pickle.dumps(_Boom())
        framed = struct.pack(">I", len(bomb)) + bomb
        member_hello = b"RMQCTRL\x02\x01" + b"n1".ljust(32, b"\0") + os.urandom(32 + 32) + b"\0" * 21
        attacks = [
            bomb,                                                        # a raw pickle
            struct.pack(">I", len(framed)) + framed,                     # a pickle framed as remoting
            b"RMQCTRL\x01" + bomb,                                       # a pickle after the member magic
            member_hello + os.urandom(96) + struct.pack(">I", len(bomb)) + os.urandom(32) + bomb,  # a forged proof
            b"RMQCTRL\x01\x01" + b"n1".ljust(32, b"\0") + os.urandom(32),  # a member-link version 1 hello
            struct.pack(">I", 0x7FFFFFFF) + b"\0" * 64,                  # an oversize length
            os.urandom(4096),                                            # garbage
            b"RMQCTRLX" + os.urandom(100),                               # almost the magic
        ]
        from twisted.internet import threads
        for port in group.ports:
            for attack in attacks:
                yield threads.deferToThread(_send_raw, port, attack)
        assert not os.path.exists(MARKER), "a pickle sent to a controller port ran"
        # The group serves on: a leader answers. Not "one leader 0.5 s later": on a starved machine (a run beside
        # two fault labs, load 20-30) the members can miss heartbeats while the attacks take the CPU and elect
        # again, as after any pause; that once left no leader at that instant. Waited for as the other tests do.
        yield until(lambda: len(group.leaders()) == 1, "one serving leader after the attacks")
        leader = group.leaders()[0]
        answer = yield ask(group.ports[int(leader[1:])], RequestCode.CONTROLLER_GET_NEXT_BROKER_ID,
                            {"clusterName": "c", "brokerName": "broker-z"})
        assert answer.code == ResponseCode.SUCCESS
        refused = sum(s.replicated.mesh.refusals.count for s in group.services.values())
        assert refused >= 2 * len(group.ports)
    finally:
        yield group.stop_all()


def test_several_controllers_without_a_secret_refuse_to_start_naming_the_property(tmp_path):
    ports = controller_ports(3)
    peers = ";".join("n%d-127.0.0.1:%d" % (i, port) for i, port in enumerate(ports))
    with pytest.raises(ControllerConfigError, match="controllerPeerSecretFile"):
        ControllerService(controller_config(tmp_path, peers, "n0"), reactor, NullEventLog())
    short = tmp_path / "short.secret"
    short.write_bytes(b"too-short")
    with pytest.raises(ControllerConfigError, match="at least 16"):
        ControllerService(controller_config(tmp_path, peers, "n0", controllerPeerSecretFile=str(short)), reactor,
                          NullEventLog())
    with pytest.raises(ControllerConfigError, match="cannot be read"):
        ControllerService(controller_config(tmp_path, peers, "n0", controllerPeerSecretFile=str(tmp_path / "missing")),
                          reactor, NullEventLog())
    with pytest.raises(ControllerConfigError, match="controllerMembersFile.*createControllerKey"):
        ControllerService(controller_config(tmp_path, peers, "n0", controllerPeerSecretFile=secret_file(tmp_path)), reactor,
                          NullEventLog())
    (tmp_path / "keys").mkdir()
    members = member_keys(tmp_path / "keys", ["n1", "n2"])
    with pytest.raises(ControllerConfigError, match="n0.key"):
        ControllerService(controller_config(tmp_path, peers, "n0", controllerPeerSecretFile=secret_file(tmp_path),
                                  controllerMembersFile=members), reactor, NullEventLog())


@pytest_twisted.inlineCallbacks
def test_the_opt_out_warns_at_start_and_still_links(tmp_path):
    from twisted.logger import globalLogPublisher
    seen = []
    globalLogPublisher.addObserver(seen.append)
    group = Group(tmp_path, controllerPeerAuthDisabled="true")
    try:
        group.start_all()
        yield until(lambda: len(group.leaders()) == 1, "one serving leader without authentication")
        texts = [e.get("log_format", "") + repr(e.get("auth", "")) for e in seen]
        assert sum("DISABLED" in t for t in texts) == 3
    finally:
        globalLogPublisher.removeObserver(seen.append)
        yield group.stop_all()


def test_a_taken_controller_port_is_one_line_naming_it(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        other = controller_ports(1)[0]
        peers = "n0-127.0.0.1:%d;n1-127.0.0.1:%d" % (port, other)
        service = ControllerService(controller_config(tmp_path, peers, "n0", **group_credentials(tmp_path, ["n0", "n1"])),
                                    reactor, NullEventLog())
        with pytest.raises(ControllerPortError) as raised:
            service.privilegedStartService()
        message = str(raised.value)
        assert "127.0.0.1:%d" % port in message and "controllerDLegerPeers" in message and "\n" not in message
        assert service.replicated._syncobj is None, "Raft started although the port could not be bound"
