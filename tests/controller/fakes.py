"""Stand-ins for the controller's edges: a replicated log that applies at once, a notifier that
records, and a controller built from them on a task.Clock (its connections and event log are
tests.fakes')."""

from twisted.internet import defer, task
from zope.interface import implementer

from namesrv.config import NamesrvConfig
from namesrv.controller.core import Controller
from namesrv.controller.heartbeats import BrokerHeartbeats
from namesrv.controller.replication import NotLeader
from namesrv.controller.state import ReplicaState
from namesrv.interfaces import IReplicatedLog
from tests.fakes import RecordingEventLog


@implementer(IReplicatedLog)
class MemoryLog:
    """Applies proposals when their Deferred fires (at once unless ``hold``); ``leading`` plays a follower."""

    applies_at_once = False

    def __init__(self, state, self_id="n0", peers=None, group="group1", leading=True):
        self.state = state
        self.self_id = self_id
        self.group = group
        self.peers = peers or {"n0": "127.0.0.1:9878"}
        self.role_listeners = []
        self.leading = leading
        self.proposed = []
        self.hold = None          # a Deferred to hold the next proposal on (a slow commit)

    @property
    def is_leader(self):
        return self.leading

    @property
    def leader_id(self):
        return self.self_id if self.leading else None

    def set_leading(self, leading):
        self.leading = leading
        for listener in list(self.role_listeners):
            listener(leading)

    def start(self):
        pass

    def stop(self):
        pass

    def propose(self, events):
        if not self.leading:
            return defer.fail(NotLeader("follower"))
        self.proposed.append(list(events))
        if self.hold is not None:
            hold, self.hold = self.hold, None
            return hold.addCallback(lambda _: [self.state.apply(e) for e in events])
        for event in events:
            self.state.apply(event)
        return defer.succeed(self.state.applied)

    def status(self):
        return {"mode": "memory", "role": "leader" if self.leading else "follower", "term": 0,
                "applied": self.state.applied, "peers": dict(self.peers), "leaderId": self.leader_id,
                "connectedPeers": []}


class RecordingNotifier:
    def __init__(self):
        self.sent = []

    def notify(self, address, header, body, master_epoch):
        self.sent.append((address, dict(header), body, master_epoch))
        return defer.succeed(True)


def make_controller(clock=None, leading=True, **properties):
    clock = clock or task.Clock()
    config = NamesrvConfig()
    if properties:
        config.update({k: str(v) for k, v in properties.items()})
    state = ReplicaState()
    log = MemoryLog(state, leading=leading)
    heartbeats = BrokerHeartbeats(clock, config=config)
    notifier = RecordingNotifier()
    events = RecordingEventLog()
    controller = Controller(config, state, log, heartbeats, clock, notifier, events)
    return controller, clock
