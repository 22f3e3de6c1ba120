"""The name server's routes follow the master elections the controller in its process applies.

A 5.x broker elected master registers with the name servers as brokerId 0 only when its role
change is complete, and that can wait 24 s on the broker's own lock (a registration to a name
server it cannot reach holds it). Meanwhile producers are routed to the old master, cut off or
dead. So when this member applies an election, the route tables here list the elected broker as
master at once (``RouteInfoManager.route_committed_master``, which lets any registration made at
that master epoch or later win).

Only a member sure that its state is current acts: the leader within its lease, or a follower that
heard the leader within the election timeout. A member replaying its log at a restart, or cut off
from the others, applies nothing to the routes; it asks again for a few seconds (``RETRY_FOR``), and
then leaves those elections to the brokers' registrations. The tables are changed as a
registration changes them, so the route bodies cached, the answer cache and the read workers'
replicas follow as usual.
"""

from typing import Optional, Protocol

from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger

from namesrv.controller.state import Event, ReplicaGroup, ReplicaState
from namesrv.interfaces import IEventLog, IReplicatedLog

log = Logger()

#: a member not sure of its state when an election is applied asks again this often, for this long: a
#: leader applies the election it was elected to make a moment before it serves, and a member that catches
#: up hears the leader a moment after
RETRY_EVERY = 0.2
RETRY_FOR = 10.0


class CommittedMasterRoutes(Protocol):
    """What this needs of the name server's route tables (RouteInfoManager), named here and not imported: the
    controller and the route tables know nothing of each other (tests/test_layers.py)."""

    def route_committed_master(self, broker_name: str, master_addr: str, master_epoch: int) -> bool: ...


class CommittedMasterRouting:
    """Listens to ``state`` (a ReplicaState) and routes each elected master through ``routes``."""

    def __init__(self, state: ReplicaState, replicated: IReplicatedLog, routes: CommittedMasterRoutes,
                 events: IEventLog, reactor: IReactorTime) -> None:
        self.state = state
        self.replicated = replicated
        self.routes = routes
        self.events = events
        self.reactor = reactor
        self.routed = 0            # masters listed here before their own registration
        self._due: set[str] = set()          # broker names whose election was applied since the last pass
        self._call: Optional[IDelayedCall] = None
        self._unsure_since: Optional[float] = None  # reactor time of the first pass that found this member not sure
        state.listeners.append(self._applied)

    def _applied(self, event: Event, group: Optional[ReplicaGroup]) -> None:
        """A state listener: runs inside the log's apply, so it only notes the group; the routes change
        in a call of its own, after the whole batch of entries is applied (the latest master counts)."""
        if group is None or event.get("type") != "elect_master":
            return
        self._due.add(group.broker_name)
        if self._call is None:
            self._call = self.reactor.callLater(0, self._route_due)

    def sure(self) -> bool:
        """This member's state is current: it leads within its lease, or a leader was heard lately."""
        replicated = self.replicated
        return bool(replicated.is_leader or replicated.leader_id is not None)

    def _route_due(self) -> None:
        self._call = None
        if not self.sure():
            now = self.reactor.seconds()
            if self._unsure_since is None:
                self._unsure_since = now
            if now - self._unsure_since < RETRY_FOR:
                self._call = self.reactor.callLater(RETRY_EVERY, self._route_due)
                return
            log.info("controller: {count} election(s) applied while this member was not sure its state is "
                     "current for {seconds:.0f} s; routes wait for the brokers' registrations",
                     count=len(self._due), seconds=RETRY_FOR)
            self._due.clear()
            self._unsure_since = None
            return
        self._unsure_since = None
        due, self._due = self._due, set()
        for broker_name in sorted(due):
            group = self.state.group(broker_name)
            address = group.master_address if group is not None else None   # None: no master
            if group is None or address is None:
                continue
            if self.routes.route_committed_master(broker_name, address, group.master_epoch):
                self.routed += 1
                self.events.emit("route_master_changed", cluster=group.cluster, brokerName=broker_name,
                                 masterAddress=address, masterBrokerId=group.master_id,
                                 masterEpoch=group.master_epoch, trigger="controller")
                log.info("routes: {name}'s master is {addr} (brokerId {id}, epoch {epoch}), as the controllers "
                         "committed, before its own registration", name=broker_name, addr=address,
                         id=group.master_id, epoch=group.master_epoch)

    def stop(self) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        self._due.clear()
        self._unsure_since = None
