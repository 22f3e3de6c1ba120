"""What each controller request means against the state: an answer, and the events to apply.

Java's ReplicasInfoManager request methods, as pure functions of a ``ReplicaState`` and the
liveness callbacks: nothing changes here. The leader applies ``Result.events`` through the
replicated log and answers only once they are applied, so a follower that takes over has seen
every change an answer announced.

Answers keep Java's codes, remarks and header fields (the headers are Java's response header
classes: a field that is null in Java is left out here).
"""

from dataclasses import dataclass, field
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, List, Optional

from namesrv.controller import bodies, election, limits
from namesrv.controller.state import (ALTER_SYNC_STATE_SET, APPLY_BROKER_ID, CLEAN_BROKER_DATA, ELECT_MASTER,
                                      FIRST_BROKER_ID, UPDATE_BROKER_ADDRESS)
from namesrv.controller.liveinfo import BrokerLiveInfo
from namesrv.controller.state import Event, ReplicaGroup, ReplicaState
from namesrv.protocol.codes import ResponseCode

if TYPE_CHECKING:   # types only
    from namesrv.config.live import NamesrvConfig
    from namesrv.controller.heartbeats import BrokerHeartbeats

#: an answer's header: Java's response header fields by name (ints and strings; Any: callers read them back by
#: name, as the processor writes them into the response's ext fields)
Header = dict[str, Any]


@dataclass
class Result:
    code: int = ResponseCode.SUCCESS
    remark: Optional[str] = None
    #: None: no header at all (CONTROLLER_NOT_LEADER, core.not_leader)
    header: Optional[Header] = field(default_factory=dict)
    body: Optional[bytes] = None
    events: List[Event] = field(default_factory=list)
    #: the bound that refused the request (limits.py), for the metrics
    refused: Optional[str] = None

    def fail(self, code: int, remark: str) -> "Result":
        self.code, self.remark = int(code), remark
        return self

    def refuse(self, refusal: limits.Refused) -> "Result":
        self.refused = refusal.reason
        return self.fail(refusal.code, str(refusal))


class Liveness:
    """The liveness questions decisions ask, bound to one heartbeat table."""

    def __init__(self, heartbeats: "BrokerHeartbeats") -> None:
        self.heartbeats = heartbeats

    def is_alive(self, cluster: Optional[str], broker_name: str, broker_id: int) -> bool:
        return self.heartbeats.is_alive(cluster, broker_name, broker_id)

    def live_info(self, cluster: Optional[str], broker_name: str, broker_id: int) -> Optional[BrokerLiveInfo]:
        return self.heartbeats.live_info(cluster, broker_name, broker_id)


def alter_sync_state_set(state: ReplicaState, liveness: Liveness, broker_name: str, master_id: Optional[int],
                         master_epoch: Optional[int], new_set: set[int], new_set_epoch: int) -> Result:
    # Java's response header holds a primitive int: 0 in every refusal
    result = Result(header={"newSyncStateSetEpoch": 0})
    group = state.group(broker_name)
    if group is None:
        return result.fail(ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED, "Broker metadata is not existed")
    if set(new_set) == group.sync_state_set:
        return result.fail(ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                           "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet")
    if group.master_id is None or group.master_id != master_id:
        return result.fail(ResponseCode.CONTROLLER_INVALID_MASTER,
                           "Rejecting alter syncStateSet request because the current leader is:{%s}, not {%s}"
                           % (_java(group.master_id), _java(master_id)))
    if master_epoch != group.master_epoch:
        return result.fail(ResponseCode.CONTROLLER_FENCED_MASTER_EPOCH,
                           "Rejecting alter syncStateSet request because the current master epoch is:{%d}, not {%s}"
                           % (group.master_epoch, _java(master_epoch)))
    if new_set_epoch != group.sync_state_set_epoch:
        return result.fail(ResponseCode.CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
                           "Rejecting alter syncStateSet request because the current syncStateSet epoch is:{%d}, "
                           "not {%d}" % (group.sync_state_set_epoch, new_set_epoch))
    for replica in sorted(new_set):
        if replica not in group.brokers:
            return result.fail(ResponseCode.CONTROLLER_INVALID_REPLICAS,
                               "Rejecting alter syncStateSet request because the replicas {%d} don't exist" % replica)
        if not liveness.is_alive(group.cluster, broker_name, replica):
            return result.fail(ResponseCode.CONTROLLER_BROKER_NOT_ALIVE,
                               "Rejecting alter syncStateSet request because the replicas {%d} don't alive" % replica)
    if group.master_id not in new_set:
        return result.fail(ResponseCode.CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                           "Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin "
                           "leader {%d}" % group.master_id)
    epoch = group.sync_state_set_epoch + 1
    result.header = {"newSyncStateSetEpoch": epoch}
    result.body = bodies.sync_state_set(new_set, epoch)
    result.events.append({"type": ALTER_SYNC_STATE_SET, "brokerName": broker_name,
                          "syncStateSet": sorted(new_set)})
    return result


def elect_master(state: ReplicaState, liveness: Liveness, broker_name: str, broker_id: Optional[int], designate: bool,
                 allow_unclean: bool) -> Result:
    """An election asked by a broker (its id), by an admin (``designate``) or by the controller
    itself after a master's death (``broker_id`` None or -1)."""
    result = Result()
    group = state.group(broker_name)
    if group is None:
        return result.fail(ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED, "Broker hasn't been registered")
    old_master = group.master_id
    new_master = broker_id if group.first_election else None
    if new_master is None or new_master == -1:
        new_master = election.elect(
            group.sync_state_set, set(group.brokers) if allow_unclean else None, old_master,
            broker_id if designate else None,
            lambda b: liveness.is_alive(group.cluster, broker_name, b),
            lambda b: liveness.live_info(group.cluster, broker_name, b))
    if new_master is not None and new_master == old_master:
        result.header = {"masterBrokerId": old_master, "masterAddress": group.address_of(old_master),
                         "masterEpoch": group.master_epoch, "syncStateSetEpoch": group.sync_state_set_epoch}
        result.header = {k: v for k, v in result.header.items() if v is not None}
        result.body = bodies.elect_master_body(None, group.sync_state_set)
        return result.fail(ResponseCode.CONTROLLER_MASTER_STILL_EXIST,
                           "The old master %s is still alive, not need to elect new master for broker %s"
                           % (old_master, broker_name))
    if new_master is not None:
        result.header = {"masterBrokerId": new_master, "masterAddress": group.address_of(new_master),
                         "masterEpoch": group.master_epoch + 1, "syncStateSetEpoch": group.sync_state_set_epoch + 1}
        result.header = {k: v for k, v in result.header.items() if v is not None}
        result.body = bodies.elect_master_body(group, {new_master})
        result.events.append({"type": ELECT_MASTER, "brokerName": broker_name, "newMasterId": new_master})
        return result
    if broker_id is None or broker_id == -1:
        # the controller asked after a death: record that the group has no master now
        result.events.append({"type": ELECT_MASTER, "brokerName": broker_name, "newMasterId": None})
        return result.fail(ResponseCode.CONTROLLER_MASTER_NOT_AVAILABLE,
                           "Old master has down and failed to elect a new broker master")
    return result.fail(ResponseCode.CONTROLLER_ELECT_MASTER_FAILED, "Failed to elect a new master")


def next_broker_id(state: ReplicaState, cluster: Optional[str], broker_name: str) -> Result:
    group = state.group(broker_name)
    return Result(header={"clusterName": cluster, "brokerName": broker_name,
                          "nextBrokerId": FIRST_BROKER_ID if group is None else group.next_broker_id})


def apply_broker_id(state: ReplicaState, cluster: Optional[str], broker_name: str, broker_id: int, check_code: str,
                    config: "Optional[NamesrvConfig]" = None) -> Result:
    """Java's applyBrokerId; with ``config``, bounded as limits.py says: names a Java broker could have, a
    check code of ``controllerMaxFieldLength``, ``controllerMaxBrokerGroups`` groups and
    ``controllerMaxBrokersPerGroup`` ids in each (Java keeps every new name and id, for ever)."""
    result = Result(header={"clusterName": cluster, "brokerName": broker_name})
    group = state.group(broker_name)
    if config is not None:
        try:
            _check_apply(state, group, cluster, broker_name, broker_id, check_code, config)
        except limits.Refused as refusal:
            return result.refuse(refusal)
    event = {"type": APPLY_BROKER_ID, "clusterName": cluster, "brokerName": broker_name,
             "brokerAddress": check_code.split(";")[0], "brokerId": broker_id, "registerCheckCode": check_code}
    if group is None:
        if broker_id == FIRST_BROKER_ID:
            result.events.append(event)
            return result
        return result.fail(ResponseCode.CONTROLLER_BROKER_ID_INVALID,
                           "Broker-set: %s hasn't been registered in controller, but broker try to apply brokerId: %d"
                           % (broker_name, broker_id))
    if broker_id not in group.brokers or group.check_code_of(broker_id) == check_code:
        result.events.append(event)
        return result
    return result.fail(ResponseCode.CONTROLLER_BROKER_ID_INVALID,
                       "Fail to apply brokerId: %d in broker-set: %s" % (broker_id, broker_name))


def _check_apply(state: ReplicaState, group: Optional[ReplicaGroup], cluster: Optional[str], broker_name: str,
                 broker_id: int, check_code: str, config: "NamesrvConfig") -> None:
    limits.check_broker_name(broker_name)
    limits.check_field(config, "registerCheckCode", check_code)
    if group is None:
        limits.check_cluster_name(cluster)
        if len(state.groups) >= config.controllerMaxBrokerGroups:
            raise limits.Refused("too_many_groups", "the controllers already keep %d broker groups "
                                 "(controllerMaxBrokerGroups): %s is not added" % (len(state.groups), broker_name),
                                 ResponseCode.CONTROLLER_BROKER_ID_INVALID)
    elif broker_id not in group.brokers and len(group.brokers) >= config.controllerMaxBrokersPerGroup:
        raise limits.Refused("too_many_brokers_in_group", "broker-set %s already has %d broker ids "
                             "(controllerMaxBrokersPerGroup): forget gone ones with cleanBrokerMetadata"
                             % (broker_name, len(group.brokers)), ResponseCode.CONTROLLER_BROKER_ID_INVALID)


def register_broker(state: ReplicaState, liveness: Liveness, cluster: Optional[str], broker_name: str,
                    broker_id: Optional[int], address: Optional[str],
                    config: "Optional[NamesrvConfig]" = None) -> Result:
    header: Header = {"clusterName": cluster, "brokerName": broker_name}
    result = Result(header=header)
    if config is not None:
        try:
            limits.check_field(config, "brokerAddress", address)
        except limits.Refused as refusal:
            return result.refuse(refusal)
    group = state.group(broker_name)
    if group is None:
        return result.fail(ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                           "Broker-set: %s hasn't been registered in controller" % broker_name)
    if broker_id not in group.brokers:
        return result.fail(ResponseCode.CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                           "BrokerId: %s hasn't been registered in broker-set: %s" % (_java(broker_id), broker_name))
    if group.master_id is not None and liveness.is_alive(cluster, broker_name, group.master_id):
        header.update(masterBrokerId=group.master_id, masterAddress=group.master_address,
                      masterEpoch=group.master_epoch, syncStateSetEpoch=group.sync_state_set_epoch)
    result.body = bodies.sync_state_set(group.sync_state_set, group.sync_state_set_epoch)
    if address != group.address_of(broker_id):
        result.events.append({"type": UPDATE_BROKER_ADDRESS, "clusterName": cluster, "brokerName": broker_name,
                              "brokerAddress": address, "brokerId": broker_id})
    return result


def replica_info(state: ReplicaState, broker_name: str) -> Result:
    result = Result()
    group = state.group(broker_name)
    if group is None:
        return result.fail(ResponseCode.CONTROLLER_BROKER_METADATA_NOT_EXIST, "Broker metadata is not existed")
    header = {"masterBrokerId": group.master_id, "masterAddress": group.master_address,
              "masterEpoch": group.master_epoch}
    result.header = {k: v for k, v in header.items() if v is not None}
    result.body = bodies.sync_state_set(group.sync_state_set, group.sync_state_set_epoch)
    return result


def sync_state_data(state: ReplicaState, liveness: Liveness, broker_names: Iterable[str]) -> Result:
    groups: list[tuple[ReplicaGroup, dict[int, bool]]] = []
    for name in broker_names:
        group = state.group(name)
        if group is not None:
            groups.append((group, {b: liveness.is_alive(group.cluster, name, b) for b in group.brokers}))
    return Result(body=bodies.broker_replicas_info(groups))


def clean_broker_data(state: ReplicaState, liveness: Liveness, cluster: Optional[str], broker_name: str,
                      ids_text: Optional[str], clean_living: bool) -> Result:
    """Forget a group, or some of its ids. Unlike Java, ids given with ``clean_living`` are honoured
    (Java then ignores them and forgets the whole group)."""
    result = Result()
    ids = None
    ids_text = ids_text or ""
    if ids_text.strip():
        try:
            ids = sorted({int(part) for part in ids_text.split(";")})
        except ValueError as e:
            return result.fail(ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                               "Please set the option <brokerControllerIdsToClean> according to the format, "
                               "exception: java.lang.NumberFormatException: %s" % e)
    if not clean_living:
        group = state.group(broker_name)
        if ids is None and group is not None and group.master_id is not None:
            return result.fail(ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                               "Broker %s is still alive, clean up failure" % broker_name)
        for broker_id in ids or ():
            if liveness.is_alive(cluster, broker_name, broker_id):
                return result.fail(ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                                   "Broker [%s,  %s] is still alive, clean up failure" % (broker_name, broker_id))
    if state.group(broker_name) is not None:
        result.events.append({"type": CLEAN_BROKER_DATA, "brokerName": broker_name, "brokerIds": ids})
        return result
    return result.fail(ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                       "Broker %s is not existed,clean broker data failure." % broker_name)


def groups_needing_election(state: ReplicaState, liveness: Liveness) -> list[str]:
    """Groups whose master is not alive while another replica is (Java scanNeedReelectBrokerSets)."""
    names = []
    for name, group in sorted(state.groups.items()):
        if group.master_id is None or liveness.is_alive(group.cluster, name, group.master_id):
            continue
        if any(liveness.is_alive(group.cluster, name, b) for b in group.brokers):
            names.append(name)
    return names


def groups_never_alive(state: ReplicaState, liveness: Liveness) -> list[str]:
    """Groups no master was ever elected in (master epoch 0) none of whose brokers beats now: what an apply-broker-id
    left that no broker went on with (a real 5.x broker elects at once after applying)."""
    return [name for name, group in sorted(state.groups.items())
            if group.first_election and not any(liveness.is_alive(group.cluster, name, b) for b in group.brokers)]


def expire_group(state: ReplicaState, liveness: Liveness, broker_name: str) -> Result:
    """Forget a group that never came alive (limits.py), as one replicated clean_broker_data event, so that every
    controller forgets it; nothing when it came alive meanwhile."""
    result = Result()
    if broker_name not in groups_never_alive(state, liveness):
        return result.fail(ResponseCode.CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                           "broker-set %s came alive: not expired" % broker_name)
    result.events.append({"type": CLEAN_BROKER_DATA, "brokerName": broker_name, "brokerIds": None})
    return result


def _java(value: object) -> str:
    return "null" if value is None else str(value)
