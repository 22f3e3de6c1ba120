"""The controller at work: the leader's serial queue of operations, and what follows a master's death.

Java runs every controller request through one EventScheduler thread: decide from the state,
append the events to DLedger, wait for them, answer, and only then take the next request. Here
the same order is a DeferredLock on the reactor thread: an operation decides from the state as
it is, proposes its events and holds the lock until they are applied, so no decision is ever
made from a state an earlier answer has already changed.

A master is gone when its connection to this controller closes or its beats stop (the heartbeat
table tells); the leader then elects a new master from the in-sync set and tells every live
member of the group (NOTIFY_BROKER_ROLE_CHANGED). A scan (``scanInactiveMasterInterval``) catches
what those miss, and a new leader scans as soon as it serves: when the controller leader and
the broker master die together, the new leader acts at once instead of at its next scan.
"""

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Optional

from twisted.internet import defer
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure

from namesrv.controller import bodies, decisions
from namesrv.controller.decisions import Result
from namesrv.controller.heartbeats import BrokerHeartbeats
from namesrv.controller.limits import Refusals
from namesrv.controller.notifier import RoleChangeNotifier
from namesrv.controller.replication import NotLeader
from namesrv.controller.state import Event, ReplicaGroup, ReplicaState
from namesrv.interfaces import IEventLog, IReplicatedLog
from namesrv.protocol.codes import ResponseCode

if TYPE_CHECKING:   # types only
    from namesrv.config.live import NamesrvConfig

NOT_LEADER_REMARK = "The controller is not in leader state"
#: how long an operation waits for its events to be committed (Java: 5 s)
COMMIT_TIMEOUT = 5.0


class _Decision:
    """What the serial queue hands back once the next decision may start: the answer, when it may be sent."""

    __slots__ = ("answer",)

    def __init__(self, answer: "defer.Deferred[Result]") -> None:
        self.answer = answer


def not_leader() -> Result:
    """Java answers it with no header at all (``extFields`` absent)."""
    return Result(code=ResponseCode.CONTROLLER_NOT_LEADER, remark=NOT_LEADER_REMARK, header=None)


class Controller:
    log = Logger()

    def __init__(self, config: "NamesrvConfig", state: ReplicaState, replicated: IReplicatedLog,
                 heartbeats: BrokerHeartbeats, reactor: IReactorTime, notifier: RoleChangeNotifier, events: IEventLog,
                 started: Optional[float] = None) -> None:
        self.config = config
        self.state = state
        self.replicated = replicated
        self.heartbeats = heartbeats
        self.liveness = decisions.Liveness(heartbeats)
        self.reactor = reactor
        self.notifier = notifier
        self.events = events
        self.started = reactor.seconds() if started is None else started
        self._lock = defer.DeferredLock()
        self._takeover_scan: Optional[IDelayedCall] = None
        #: {"new_master_elected"|"keep_current_master"|"no_master_elected": count}, as Java's metric
        self.elections = {"new_master_elected": 0, "keep_current_master": 0, "no_master_elected": 0}
        #: brokerName -> reactor time its master was found gone (cleared by the next election)
        self.masterless_since: dict[str, float] = {}
        #: requests refused by the bounds (limits.py), by reason
        self.refusals = Refusals(reactor, self.log)
        #: brokerName -> reactor time this leader first found the group never alive (expire_unalive_groups)
        self._unalive_since: dict[str, float] = {}
        #: groups forgotten because they never came alive
        self.expired_groups = 0
        heartbeats.listeners.append(self.broker_inactive)
        state.listeners.append(self._applied)
        #: brokerName -> the call telling its brokers of an election applied here
        self._telling: dict[str, IDelayedCall] = {}
        replicated.role_listeners.append(self._role_changed)

    @property
    def is_leader(self) -> bool:
        return self.replicated.is_leader

    # -- the serial queue -------------------------------------------------------------------------
    def run(self, decide: Callable[[], Result], write: bool = True) -> "defer.Deferred[Result]":
        """A Deferred of the Result of ``decide()`` (a function of the state), its events applied first.

        On a follower, or when this controller stops leading before the events are committed:
        CONTROLLER_NOT_LEADER, as Java's scheduler answers.
        """
        if not self.is_leader:
            return defer.succeed(not_leader())
        decided = self._lock.run(self._decide_and_commit, decide, write)
        return decided.addCallback(lambda decision: decision.answer).addCallback(self._count_refusal)

    def _count_refusal(self, result: Result) -> Result:
        refused = getattr(result, "refused", None)
        if refused is not None:
            self.refusals.counts[refused] += 1
        return result

    def _decide_and_commit(self, decide: Callable[[], Result], write: bool) -> "defer.Deferred[_Decision]":
        """Under the lock, which is held until the returned Deferred fires: decide from the state and
        propose the events; the next decision waits until they are applied here. A log that applies at
        once (one controller: ``applies_at_once``) lets it go on while this answer waits for the disk,
        since every later write holds these events too. With ``isProcessReadEvent`` a read first commits
        an empty entry, as Java's controller does."""
        if not self.is_leader:
            return defer.succeed(_Decision(defer.succeed(not_leader())))
        if not write and self.config.isProcessReadEvent and not self.replicated.applies_at_once:
            barrier = self.replicated.propose([])
            barrier.addTimeout(COMMIT_TIMEOUT, self.reactor)
            return barrier.addCallbacks(lambda _: _Decision(defer.succeed(decide())),
                                        lambda failure: _Decision(defer.succeed(self._not_committed(failure))))
        result = decide()
        if not write or not result.events:
            return defer.succeed(_Decision(defer.succeed(result)))
        proposed = self.replicated.propose(result.events)
        proposed.addTimeout(COMMIT_TIMEOUT, self.reactor)
        answer = proposed.addCallbacks(lambda _: result, self._not_committed)     # the same Deferred, as a Result
        if self.replicated.applies_at_once:
            return defer.succeed(_Decision(answer))
        return answer.addCallback(lambda settled: _Decision(defer.succeed(settled)))

    def _not_committed(self, failure: Failure) -> Result:
        if failure.check(NotLeader):
            self.log.warn("controller: events not committed: {why}", why=failure.getErrorMessage())
            return not_leader()
        self.log.error("controller: events not committed: {why}", why=failure.getErrorMessage())
        return Result(code=ResponseCode.SYSTEM_ERROR,
                      remark="the change was not committed by the controllers: %s" % failure.getErrorMessage())

    # -- elections ---------------------------------------------------------------------------------
    def elect(self, broker_name: str, broker_id: Optional[int] = None, designate: bool = False,
              trigger: str = "controller") -> "defer.Deferred[Result]":
        """Elect (CONTROLLER_ELECT_MASTER, or the controller's own after a death); a new master is told."""
        def decide() -> Result:
            return decisions.elect_master(self.state, self.liveness, broker_name, broker_id, designate,
                                          self.config.enableElectUncleanMaster)
        d = self.run(decide)
        d.addCallback(self._elected, broker_name, trigger)
        return d

    def _elected(self, result: Result, broker_name: str, trigger: str) -> Result:
        if result.code == ResponseCode.SUCCESS:
            self.elections["new_master_elected"] += 1
            header = result.header
            assert header is not None       # only CONTROLLER_NOT_LEADER answers without a header
            lost = self.masterless_since.pop(broker_name, None)
            group = self.state.group(broker_name)
            self.events.emit(
                "controller_master_elected", brokerName=broker_name,
                cluster=group.cluster if group is not None else None,
                masterBrokerId=header.get("masterBrokerId"), masterAddress=header.get("masterAddress"),
                masterEpoch=header.get("masterEpoch"), trigger=trigger,
                masterlessMillis=None if lost is None else int((self.reactor.seconds() - lost) * 1000))
            self.log.info("controller: {name} elected broker {id} ({addr}) master, epoch {epoch} ({trigger})",
                          name=broker_name, id=header.get("masterBrokerId"),
                          addr=header.get("masterAddress"), epoch=header.get("masterEpoch"),
                          trigger=trigger)
            if self.config.notifyBrokerRoleChanged:
                self.notify_role_changed(broker_name, result)
        elif result.code == ResponseCode.CONTROLLER_MASTER_STILL_EXIST:
            self.elections["keep_current_master"] += 1
        elif result.code in (ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE, ResponseCode.CONTROLLER_ELECT_MASTER_FAILED):
            self.elections["no_master_elected"] += 1
            if result.code == ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE:
                self.events.emit("controller_master_unavailable", brokerName=broker_name, trigger=trigger)
        return result

    def notify_role_changed(self, broker_name: str, result: Result) -> int:
        """NOTIFY_BROKER_ROLE_CHANGED to every live member of the group, as Java's NotifyService."""
        group = self.state.group(broker_name)
        if group is None:
            return 0
        elected = result.header
        assert elected is not None          # an election's answer (only CONTROLLER_NOT_LEADER has no header)
        header = {k: elected[k] for k in ("masterAddress", "masterEpoch", "syncStateSetEpoch", "masterBrokerId")
                  if elected.get(k) is not None}
        body = bodies.sync_state_set(group.sync_state_set, group.sync_state_set_epoch)
        sent = 0
        for broker_id, address in sorted(group.id_table().items()):
            if self.heartbeats.is_alive(group.cluster, broker_name, broker_id):
                self.notifier.notify(address, header, body, elected.get("masterEpoch", 0))
                sent += 1
        return sent

    def _applied(self, event: Event, group: Optional[ReplicaGroup]) -> None:
        """A follower that applies an election tells the brokers it hears, as the leader does: what it tells is
        committed (the same on every member), and a 5.x broker ignores an epoch it already has, so the only
        difference is reach. A broker cut off from the leader but not from this member (apache/rocketmq#10812:
        its beats reach only followers; the relay kept it alive and it was elected) learns at once that it is
        master, not when its link to the leader heals. Only a member that heard the leader lately (not one
        replaying its log at a restart) tells; in a call of its own, after the whole batch is applied."""
        if event.get("type") != "elect_master" or group is None or self.is_leader \
                or not self.config.notifyBrokerRoleChanged or self.replicated.leader_id is None:
            return
        if group.broker_name not in self._telling:
            self._telling[group.broker_name] = self.reactor.callLater(0, self._tell_as_follower, group.broker_name)

    def _tell_as_follower(self, broker_name: str) -> None:
        self._telling.pop(broker_name, None)
        group = self.state.group(broker_name)
        if self.is_leader or group is None or group.master_id is None:
            return
        header = {"masterAddress": group.master_address, "masterEpoch": group.master_epoch,
                  "syncStateSetEpoch": group.sync_state_set_epoch, "masterBrokerId": group.master_id}
        self.notify_role_changed(broker_name, Result(header={k: v for k, v in header.items() if v is not None}))

    # -- a master's death ----------------------------------------------------------------------------
    def broker_inactive(self, cluster: Optional[str], broker_name: str,
                        broker_id: Optional[int]) -> "Optional[defer.Deferred[Result]]":
        """The heartbeat table lost a broker: if it was its group's master, elect another (leader only)."""
        group = self.state.group(broker_name)
        if group is None or group.master_id is None or (broker_id is not None and broker_id != group.master_id):
            return None
        if not self.is_leader:
            self.log.info("controller: master {id} of {name} is inactive; the leader elects", id=broker_id,
                          name=broker_name)
            return None
        self._master_gone(broker_name, group)
        return self.elect(broker_name)

    def _master_gone(self, broker_name: str, group: ReplicaGroup) -> None:
        if broker_name not in self.masterless_since:
            self.masterless_since[broker_name] = self.reactor.seconds()
            self.events.emit("controller_master_inactive", brokerName=broker_name, cluster=group.cluster,
                             masterBrokerId=group.master_id, masterAddress=group.master_address,
                             masterEpoch=group.master_epoch)

    def scan_inactive_masters(self) -> list[str]:
        """Elect in every group whose master is gone while a replica lives (leader only); then forget the groups
        that never came alive for ``controllerUnaliveGroupExpireMillis``."""
        if not self.is_leader:
            return []
        names = decisions.groups_needing_election(self.state, self.liveness)
        for name in names:
            group = self.state.group(name)
            assert group is not None            # the names are the state's own groups
            self._master_gone(name, group)
            self.elect(name)
        self.expire_unalive_groups()
        return names

    def expire_unalive_groups(self) -> list[str]:
        """Leader only. A group is timed from when this leader first finds it never alive (a new leader starts
        again: it cannot know how long its predecessor saw it so); its expiry is a replicated clean_broker_data
        event, so every controller forgets it. Returns the names proposed."""
        expire = self.config.controllerUnaliveGroupExpireMillis / 1000.0
        if not self.is_leader or expire <= 0:
            self._unalive_since.clear()
            return []
        now = self.reactor.seconds()
        unalive = decisions.groups_never_alive(self.state, self.liveness)
        self._unalive_since = {name: self._unalive_since.get(name, now) for name in unalive}
        due = [name for name, since in sorted(self._unalive_since.items()) if now - since >= expire]
        for name in due:
            del self._unalive_since[name]
            d = self.run(partial(decisions.expire_group, self.state, self.liveness, name))
            d.addCallback(self._expired, name)
        return due

    def _expired(self, result: Result, broker_name: str) -> Result:
        if result.code == ResponseCode.SUCCESS:
            self.expired_groups += 1
            self.events.emit("controller_group_expired", brokerName=broker_name)
            self.log.info("controller: broker-set {name} forgotten: no master was ever elected in it and none of "
                          "its brokers beats (controllerUnaliveGroupExpireMillis)", name=broker_name)
        return result

    def _role_changed(self, leading: bool) -> None:
        self.events.emit("controller_role_changed", role="leader" if leading else "follower",
                         controllerId=self.replicated.self_id)
        if self._takeover_scan is not None and self._takeover_scan.active():
            self._takeover_scan.cancel()
        self._takeover_scan = None
        if not leading:
            self.masterless_since.clear()
            self._unalive_since.clear()
            return
        # Scan at once, unless this controller has not been up long enough to have heard every live
        # broker beat: then a master not heard from yet is not a dead one.
        grace = self.config.scanInactiveMasterInterval / 1000.0
        wait = max(0.0, self.started + grace - self.reactor.seconds())
        self._takeover_scan = self.reactor.callLater(wait, self.scan_inactive_masters)

    def stop(self) -> None:
        if self._takeover_scan is not None and self._takeover_scan.active():
            self._takeover_scan.cancel()
        for call in self._telling.values():
            if call.active():
                call.cancel()
        self._telling.clear()

    # -- what the status page and metrics read ----------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Role, peers and every group with its master, epochs, in-sync set and members' liveness."""
        groups = []
        now = self.reactor.seconds()
        for name, group in sorted(self.state.groups.items()):
            members = []
            for broker_id, (address, _code) in sorted(group.brokers.items()):
                info = self.heartbeats.live_info(group.cluster, name, broker_id)
                members.append({"brokerId": broker_id, "address": address, "alive": info is not None,
                                "inSync": broker_id in group.sync_state_set,
                                "epoch": info.epoch if info is not None else None,
                                "maxOffset": info.max_offset if info is not None else None})
            lost = self.masterless_since.get(name)
            groups.append({"cluster": group.cluster, "brokerName": name, "masterBrokerId": group.master_id,
                           "masterAddress": group.master_address, "masterEpoch": group.master_epoch,
                           "syncStateSet": sorted(group.sync_state_set),
                           "syncStateSetEpoch": group.sync_state_set_epoch, "members": members,
                           "masterAlive": group.master_id is not None and self.liveness.is_alive(
                               group.cluster, name, group.master_id),
                           "masterlessSeconds": None if lost is None else round(now - lost, 3)})
        return {"controller": self.replicated.status(), "group": self.replicated.group,
                "selfId": self.replicated.self_id, "isLeader": self.is_leader, "groups": groups,
                "elections": dict(self.elections), "liveBrokers": self.heartbeats.alive_count(),
                "refused": dict(self.refusals.counts), "expiredGroups": self.expired_groups,
                "heartbeatEntries": len(self.heartbeats.table)}
