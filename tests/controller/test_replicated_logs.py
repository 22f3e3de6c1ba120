"""Every IReplicatedLog provides the whole interface, ``applies_at_once`` included (the controller's
serial queue reads it to know when the next decision may start)."""

from twisted.internet import task
from zope.interface.verify import verifyObject

from namesrv.controller.replication.disk import MemoryDisk
from namesrv.controller.replication.local import LocalLog
from namesrv.controller.replication.raft import RaftLog
from namesrv.controller.state import ReplicaState
from namesrv.interfaces import IReplicatedLog
from tests.controller.fakes import MemoryLog
from tests.controller.raftsim import SimMesh, SimNet


def test_every_replicated_log_provides_the_interface(tmp_path):
    clock = task.Clock()
    local = LocalLog(ReplicaState(), str(tmp_path / "local"), "n0", "127.0.0.1:9878", "g", clock)
    peers = {"n0": "10.0.0.1:9878", "n1": "10.0.0.2:9878", "n2": "10.0.0.3:9878"}
    raft = RaftLog(ReplicaState(), str(tmp_path / "raft"), "n0", peers, "g", clock,
                   mesh=SimMesh(SimNet(clock, None), "n0"), disk=MemoryDisk(clock), monotonic=clock.seconds)
    for log, at_once in ((local, True), (raft, False), (MemoryLog(ReplicaState()), False)):
        assert verifyObject(IReplicatedLog, log)
        assert log.applies_at_once is at_once
