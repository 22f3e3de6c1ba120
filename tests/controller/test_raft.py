"""Three controllers replicated by pysyncobj's Raft on 127.0.0.1, in this process's reactor.

Waits are bounded loops on the reactor (never a sleep, never a timing assertion): each condition
is polled until it holds or a generous deadline passes.
"""

import socket

import pytest
import pytest_twisted
from twisted.internet import defer, reactor, task

from namesrv.controller.replication import NotLeader
from namesrv.controller.replication.raft import RaftLog
from namesrv.controller.state import ReplicaState

DEADLINE = 30.0


def controller_ports(count):
    """Ports p with p+1 (Raft) free too."""
    ports = []
    while len(ports) < count:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
        except OSError:
            continue
        if port not in ports and port + 1 not in ports and port - 1 not in ports:
            ports.append(port)
    return ports


@defer.inlineCallbacks
def until(condition, what):
    waited = 0.0
    while not condition():
        if waited > DEADLINE:
            raise AssertionError("not within %s s: %s" % (DEADLINE, what))
        yield task.deferLater(reactor, 0.05, lambda: None)
        waited += 0.05


def apply_id(name, broker_id):
    return {"type": "apply_broker_id", "clusterName": "c", "brokerName": name, "brokerId": broker_id,
            "brokerAddress": "127.0.0.1:%d" % (30000 + broker_id), "registerCheckCode": "x;%d" % broker_id}


class Cluster:
    def __init__(self, tmp_path, size=3):
        ports = controller_ports(size)
        self.peers = {"n%d" % i: "127.0.0.1:%d" % port for i, port in enumerate(ports)}
        self.tmp_path = tmp_path
        self.logs = {}
        for peer_id in self.peers:
            self.start(peer_id)

    def start(self, peer_id):
        log = RaftLog(ReplicaState(), str(self.tmp_path / peer_id), peer_id, self.peers, "g", 1, reactor)
        log.roles = []
        log.role_listeners.append(log.roles.append)
        log.start()
        self.logs[peer_id] = log
        return log

    def leaders(self):
        return [log for log in self.logs.values() if log.is_leader]

    def stop(self, peer_id):
        self.logs.pop(peer_id).stop()

    def stop_all(self):
        for peer_id in list(self.logs):
            self.stop(peer_id)


@pytest_twisted.inlineCallbacks
def test_three_controllers_elect_one_leader_replicate_and_survive_its_death(tmp_path):
    cluster = Cluster(tmp_path)
    try:
        yield until(lambda: len(cluster.leaders()) == 1, "one serving leader")
        leader = cluster.leaders()[0]
        followers = [log for log in cluster.logs.values() if log is not leader]
        yield until(lambda: all(f.leader_id == leader.self_id for f in followers), "followers know the leader")
        with pytest.raises(NotLeader):
            yield followers[0].propose([apply_id("broker-a", 1)])
        yield leader.propose([apply_id("broker-a", 1), apply_id("broker-a", 2)])
        assert leader.state.group("broker-a").next_broker_id == 3     # applied before the answer
        yield until(lambda: all(log.state.applied == 2 for log in cluster.logs.values()), "replicated to all")
        assert all(log.state.to_dict() == leader.state.to_dict() for log in cluster.logs.values())

        old_leader = leader.self_id
        cluster.stop(old_leader)
        yield until(lambda: len(cluster.leaders()) == 1, "a new leader after the old one died")
        leader = cluster.leaders()[0]
        assert leader.self_id != old_leader and leader.state.group("broker-a").next_broker_id == 3
        yield leader.propose([apply_id("broker-b", 1)])
        assert sorted(leader.state.groups) == ["broker-a", "broker-b"]

        # the dead one restarts from its journal and catches up
        back = cluster.start(old_leader)
        yield until(lambda: back.state.applied == 3, "the restarted controller catches up")
        assert back.state.to_dict() == leader.state.to_dict()
        assert not back.is_leader and back.leader_id == leader.self_id
        status = leader.status()
        assert status["role"] == "leader" and status["mode"] == "raft" and status["leaderId"] == leader.self_id
    finally:
        cluster.stop_all()


@pytest_twisted.inlineCallbacks
def test_a_controller_alone_of_three_never_leads(tmp_path):
    cluster = Cluster(tmp_path)
    try:
        for peer_id in ("n1", "n2"):
            cluster.stop(peer_id)
        alone = cluster.logs["n0"]
        yield task.deferLater(reactor, 3.0, lambda: None)    # several election timeouts
        assert not alone.is_leader and alone.roles in ([], [True, False])
        with pytest.raises(NotLeader):
            yield alone.propose([apply_id("broker-a", 1)])
    finally:
        cluster.stop_all()
