"""Whole controllers on the simulated group (raftsim.py): each member's real Raft log under a real Controller,
heartbeat table and liveness relay, on the one clock, and brokers that beat to the members they choose.

What the Java bug scenarios (test_java_bugs.py) need beyond Raft: which broker each controller hears, what
the leader decides from it, and the notes members exchange about brokers (relay.py) through the simulated
network's codec. Deterministic: the seed of the SimGroup replays it.
"""

from twisted.internet import task

from namesrv.config import NamesrvConfig
from namesrv.controller.core import Controller
from namesrv.controller.heartbeats import BrokerHeartbeats
from namesrv.controller.relay import RELAY_INTERVAL, LivenessRelay
from tests.controller.fakes import RecordingNotifier
from tests.fakes import FakeConnection, RecordingEventLog

CLUSTER = "SimCluster"


class SimController:
    def __init__(self, group, member, relay=True, **properties):
        self.member = member
        log = group.logs[member]
        reactor = group.reactors[member]
        self.config = NamesrvConfig()
        self.config.update({k: str(v) for k, v in properties.items()})
        self.heartbeats = BrokerHeartbeats(group.clock, reactor, self.config)
        self.notifier = RecordingNotifier()
        self.events = RecordingEventLog()
        self.controller = Controller(self.config, log.state, log, self.heartbeats, reactor, self.notifier, self.events,
                                     started=group.clock.seconds() - 60)
        self.relay = None
        self._loops = []
        if relay:
            self.relay = LivenessRelay(self.heartbeats, log.state, log, self.config)
            self._loop(self.relay.tick, RELAY_INTERVAL, reactor)
        self._loop(self.controller.scan_inactive_masters, self.config.scanInactiveMasterInterval / 1000.0, reactor)

    def _loop(self, function, interval, reactor):
        loop = task.LoopingCall(function)
        loop.clock = reactor
        loop.start(interval, now=False)
        self._loops.append(loop)

    @property
    def state(self):
        return self.controller.state

    def stop(self):
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self.heartbeats.stop()


class SimBroker:
    """A 5.x broker of ``broker-a`` beating every second to the members in ``to`` (each on its own connection)."""

    def __init__(self, controllers, clock, broker_id, to, timeout=10000, epoch=1, max_offset=100):
        self.controllers = controllers
        self.clock = clock
        self.broker_id = broker_id
        self.address = "10.1.0.%d:10911" % broker_id
        self.to = set(to)
        self.timeout = timeout
        self.epoch = epoch
        self.max_offset = max_offset
        self.connections = {m: FakeConnection("10.1.0.%d:4%04d" % (broker_id, i))
                            for i, m in enumerate(sorted(controllers))}
        self.beating = True
        self._loop = task.LoopingCall(self.beat)
        self._loop.clock = clock
        self._loop.start(1.0, now=True)

    def beat(self):
        if not self.beating:
            return
        for member in sorted(self.to):
            self.controllers[member].heartbeats.beat(
                CLUSTER, "broker-a", self.address, self.broker_id, self.connections[member], self.timeout,
                self.epoch, self.max_offset, -1, None)

    def hang(self):
        """Alive to the kernel (its connections stay open), silent to the controllers: #10416's broker."""
        self.beating = False

    def die(self):
        """kill -9: every controller it was connected to sees its connection close."""
        self.beating = False
        if self._loop.running:
            self._loop.stop()
        for member in sorted(self.to):
            self.controllers[member].heartbeats.connection_closed(self.connections[member])

    def stop(self):
        self.beating = False
        if self._loop.running:
            self._loop.stop()


def controllers_on(group, relay=True, **properties):
    return {member: SimController(group, member, relay, **properties) for member in group.ids}


def group_events(*broker_ids, master=1):
    """The replicated events of broker-a with ``broker_ids``, ``master`` elected, all of them in sync."""
    events = [{"type": "apply_broker_id", "clusterName": CLUSTER, "brokerName": "broker-a", "brokerId": b,
               "brokerAddress": "10.1.0.%d:10911" % b, "registerCheckCode": "10.1.0.%d:10911;1" % b}
              for b in broker_ids]
    events.append({"type": "elect_master", "brokerName": "broker-a", "newMasterId": master})
    events.append({"type": "alter_sync_state_set", "brokerName": "broker-a", "syncStateSet": sorted(broker_ids)})
    return events
