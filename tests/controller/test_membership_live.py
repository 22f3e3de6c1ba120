"""The controller group changed while it serves, over real sockets and through ``namesrv-admin``: a member
added as a learner catches up and is promoted, leadership is handed over, the old leader is removed and
refused when it comes back with its old key, and a member cannot take another member's id.

Waits are bounded loops on the reactor (never a sleep, never a timing assertion).
"""

import io
import json
import os

import pytest_twisted
from twisted.internet import reactor, threads

from namesrv.admin import cli
from namesrv.controller.replication.identity import MemberIdentity
from namesrv.controller.replication.raft import RaftLog
from namesrv.controller.service import ControllerService
from namesrv.controller.state import ReplicaState
from namesrv.observe.eventlog import NullEventLog
from namesrv.protocol.codes import RequestCode, ResponseCode
from tests.controller.livegroup import ask, controller_config, members_only, until
from tests.controller.wire import controller_ports, group_credentials


class Members:
    """Controllers n0..n{size-1} on 127.0.0.1, with keys for ``spare`` more ids (members to add later)."""

    def __init__(self, tmp_path, size=3, spare=1):
        ids = ["n%d" % i for i in range(size + spare)]
        self.ports = dict(zip(ids, controller_ports(len(ids))))
        self.tmp_path = tmp_path
        self.credentials = group_credentials(tmp_path, ids)
        self.initial = ids[:size]
        self.services = {}

    def address(self, member):
        return "127.0.0.1:%d" % self.ports[member]

    def peers(self, members):
        return ";".join("%s-%s" % (m, self.address(m)) for m in members)

    def start(self, member, peers=None, **extra):
        config = controller_config(self.tmp_path, self.peers(peers or self.initial), member, **dict(self.credentials, **extra))
        service = ControllerService(config, reactor, NullEventLog())
        service.startService()
        self.services[member] = service
        return service

    def leaders(self):
        return [m for m, s in self.services.items() if s.replicated.is_leader]

    def leader(self):
        return self.leaders()[0]

    def stop(self, member):
        return self.services.pop(member).stopService()

    def stop_all(self):
        return [self.stop(m) for m in list(self.services)]

    def admin(self, *argv):
        """``namesrv-admin`` in a thread: (exit status, stdout, stderr)."""
        def run():
            out, err = io.StringIO(), io.StringIO()
            status = cli.main(list(argv), stdout=out, stderr=err, environ={})
            return status, out.getvalue(), err.getvalue()
        return threads.deferToThread(run)

    def all_addresses(self):
        return ";".join(self.address(m) for m in self.services)


@pytest_twisted.inlineCallbacks
def test_a_learner_is_added_promoted_and_takes_over_and_the_old_leader_is_removed(tmp_path):
    group = Members(tmp_path)
    for member in group.initial:
        group.start(member)
    try:
        yield until(lambda: len(group.leaders()) == 1, "one serving leader")
        leader = group.leader()
        port = group.ports[leader]
        for broker_id in (1, 2):
            answer = yield ask(port, RequestCode.CONTROLLER_APPLY_BROKER_ID, {
                "clusterName": "c", "brokerName": "broker-a", "appliedBrokerId": str(broker_id),
                "registerCheckCode": "127.0.0.1:3091%d;1" % broker_id})
            assert answer.code == ResponseCode.SUCCESS
        # n3 joins: no vote until the group's configuration says so
        group.start("n3", peers=group.initial + ["n3"], controllerJoin="true")
        status, out, err = yield group.admin("promoteController", "-a", group.all_addresses(), "-i", "n3")
        assert status == 1 and "not a member of the group" in err
        status, out, err = yield group.admin("addController", "-a", group.all_addresses(), "-i", "n3",
                                             "-r", group.address("n3"))
        assert status == 0, err
        assert "n3=%s (learner)" % group.address("n3") in out
        yield until(lambda: group.services["n3"].state.applied == 2, "the learner has the log")
        status, out, err = yield group.admin("--json", "listControllers", "-a", group.all_addresses())
        listing = json.loads(out)
        roles = {m["id"]: m["role"] for m in listing["members"]}
        assert roles == {"n0": "voter", "n1": "voter", "n2": "voter", "n3": "learner"}
        assert listing["leaderId"] == leader
        yield until(lambda: _lag(group, leader, "n3") == 0, "the leader sees the learner caught up")
        status, out, err = yield group.admin("promoteController", "-a", group.all_addresses(), "-i", "n3")
        assert status == 0, err
        assert group.services[leader].replicated.configuration.voters() == ["n0", "n1", "n2", "n3"]
        # the leader cannot be removed; handed over, it can
        status, out, err = yield group.admin("removeController", "-a", group.all_addresses(), "-i", leader)
        assert status == 1 and "transferControllerLeader" in err
        status, out, err = yield group.admin("transferControllerLeader", "-a", group.all_addresses(), "--to", "n3")
        assert status == 0, err
        assert "handed over to n3" in out
        yield until(lambda: group.leaders() == ["n3"], "n3 serves as leader")
        status, out, err = yield group.admin("removeController", "-a", group.all_addresses(), "-i", leader)
        assert status == 0, err
        yield until(lambda: all(leader not in s.replicated.configuration.members
                                for m, s in group.services.items() if m != leader), "every member without it")
        answer = yield ask(group.ports["n3"], RequestCode.CONTROLLER_APPLY_BROKER_ID, {
            "clusterName": "c", "brokerName": "broker-a", "appliedBrokerId": "3",
            "registerCheckCode": "127.0.0.1:30913;1"})
        assert answer.code == ResponseCode.SUCCESS
        # the removed member comes back with its old key and store: nobody links with it
        yield group.stop(leader)
        back = group.start(leader)
        refused_before = sum(s.replicated.mesh.refusals.count for m, s in group.services.items() if m != leader)
        yield until(lambda: sum(s.replicated.mesh.refusals.count for m, s in group.services.items()
                                if m != leader) > refused_before, "the removed member is refused")
        assert back.replicated.status()["connectedPeers"] == []
        assert group.leaders() == ["n3"]
    finally:
        for d in group.stop_all():
            yield d


def _lag(group, leader, member):
    rows = {row["id"]: row for row in group.services[leader].replicated.status()["members"]}
    return rows[member]["lag"]


@pytest_twisted.inlineCallbacks
def test_changes_sent_to_a_follower_go_to_the_leader_and_one_change_at_a_time(tmp_path):
    group = Members(tmp_path, spare=2)
    for member in group.initial:
        group.start(member)
    try:
        yield until(lambda: len(group.leaders()) == 1, "one serving leader")
        follower = next(m for m in group.initial if m != group.leader())
        answer = yield ask(group.ports[follower], RequestCode.CONTROLLER_ADD_MEMBER,
                            {"controllerId": "n3", "controllerAddress": group.address("n3")})
        assert answer.code == ResponseCode.CONTROLLER_NOT_LEADER
        leader = group.services[group.leader()].replicated
        first = leader.changes.add("n3", group.address("n3"))
        try:
            leader.changes.add("n4", group.address("n4"))
            raise AssertionError("a second change was accepted while the first was pending")
        except Exception as e:
            assert "one change at a time" in str(e)
        yield first
        assert leader.configuration.learners() == ["n3"]
    finally:
        for d in group.stop_all():
            yield d


class _SignsWith:
    """A member identity that signs with another member's key file (a removed member, or one holding the
    group's secret, claiming an id that is not its own)."""

    def __init__(self, actual, key_path, members_path):
        self._members = MemberIdentity(actual, key_path, members_path)

    def sign(self, data):
        return self._members.sign(data)

    def verify(self, member, data, signature):
        return self._members.verify(member, data, signature)

    def refresh(self):
        return False

    def accepts(self, member, raw):
        return True


@pytest_twisted.inlineCallbacks
def test_a_member_with_the_secret_and_its_own_key_cannot_take_another_members_id(tmp_path):
    """n2 is down; something holding the group's secret and n2's key starts as n1 (n1 being down too): the
    live members refuse it, and the group of n0 alone cannot be led by it."""
    group = Members(tmp_path, spare=0)
    group.start("n0")
    impostor_store = str(tmp_path / "impostor")
    secret = open(group.credentials["controllerPeerSecretFile"], "rb").read().strip()
    peers = {m: group.address(m) for m in group.initial}
    identity = _SignsWith("n2", os.path.join(str(tmp_path), "n2.key"), group.credentials["controllerMembersFile"])
    impostor = RaftLog(ReplicaState(), impostor_store, "n1", peers, "g", reactor, secrets=[secret], identity=identity)
    listening = reactor.listenTCP(group.ports["n1"], _sniffing(impostor), interface="127.0.0.1")
    impostor.start()
    try:
        real = group.services["n0"].replicated
        yield until(lambda: real.mesh.refusals.count > 0, "n0 refuses the impostor")
        reasons = " ".join(reason for _, reason in real.mesh.refusals.seen)
        assert "could not prove it is n1" in reasons
        assert real.mesh.links == {} and impostor.mesh.links == {}
        assert not real.is_leader and not impostor.is_leader        # no majority was ever formed with it
    finally:
        yield impostor.stop()
        yield listening.stopListening()
        for d in group.stop_all():
            yield d


def _sniffing(raftlog):
    return members_only(raftlog.mesh)
