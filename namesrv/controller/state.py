"""The controller's replicated state, changed only by applying events.

Java's ReplicasInfoManager holds two tables per broker name (BrokerReplicaInfo and
SyncStateInfo); here one ``ReplicaGroup`` holds both, and a group exists exactly when Java has
both entries. Every controller applies the same events in the same order (the replicated log),
so every controller holds the same state; nothing here reads a clock or touches a socket.

Events are plain dicts (``{"type": ..., ...}``) so that any log can carry them: msgpack, JSON
or pickle. The five types are Java's: apply_broker_id, elect_master, alter_sync_state_set,
update_broker_address, clean_broker_data. The number of events applied (``applied``) lets the
status page and a restarted controller say how far they are.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Set, Tuple

#: the first id the controller hands out in a group (Java MixAll.FIRST_BROKER_CONTROLLER_ID);
#: 0 (MASTER_ID) exists only in the name server, where a master registers as 0
FIRST_BROKER_ID = 1

APPLY_BROKER_ID = "apply_broker_id"
ELECT_MASTER = "elect_master"
ALTER_SYNC_STATE_SET = "alter_sync_state_set"
UPDATE_BROKER_ADDRESS = "update_broker_address"
CLEAN_BROKER_DATA = "clean_broker_data"
#: an event as the log carries it: decoded msgpack (Any: ``apply`` checks it, ValueError when it cannot)
Event = Dict[str, Any]
EVENT_TYPES = frozenset([APPLY_BROKER_ID, ELECT_MASTER, ALTER_SYNC_STATE_SET, UPDATE_BROKER_ADDRESS,
                         CLEAN_BROKER_DATA])


@dataclass
class ReplicaGroup:
    """One broker group (a broker name): its replicas, master and in-sync set."""

    cluster: str
    broker_name: str
    next_broker_id: int = FIRST_BROKER_ID
    #: broker id -> (address, register check code ``addr;timestamp``)
    brokers: Dict[int, Tuple[str, str]] = field(default_factory=dict)
    master_id: Optional[int] = None
    master_epoch: int = 0
    sync_state_set: Set[int] = field(default_factory=set)
    sync_state_set_epoch: int = 0

    def address_of(self, broker_id: Optional[int]) -> Optional[str]:
        entry = self.brokers.get(broker_id) if broker_id is not None else None
        return entry[0] if entry is not None else None

    def check_code_of(self, broker_id: int) -> Optional[str]:
        entry = self.brokers.get(broker_id)
        return entry[1] if entry is not None else None

    @property
    def master_address(self) -> Optional[str]:
        return self.address_of(self.master_id)

    @property
    def first_election(self) -> bool:
        """No master was ever elected here (Java: masterEpoch == 0): the first asker becomes master."""
        return self.master_epoch == 0

    def id_table(self) -> Dict[int, str]:
        """broker id -> address, as BrokerMemberGroup and the admin tools show it."""
        return {broker_id: entry[0] for broker_id, entry in self.brokers.items()}

    def to_dict(self) -> Dict[str, Any]:
        return {
            "cluster": self.cluster, "brokerName": self.broker_name, "nextBrokerId": self.next_broker_id,
            "brokers": [[broker_id, address, code] for broker_id, (address, code) in sorted(self.brokers.items())],
            "masterId": self.master_id, "masterEpoch": self.master_epoch,
            "syncStateSet": sorted(self.sync_state_set), "syncStateSetEpoch": self.sync_state_set_epoch,
        }

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "ReplicaGroup":
        return cls(cluster=data["cluster"], broker_name=data["brokerName"], next_broker_id=int(data["nextBrokerId"]),
                   brokers={int(b): (a, c) for b, a, c in data["brokers"]},
                   master_id=None if data["masterId"] is None else int(data["masterId"]),
                   master_epoch=int(data["masterEpoch"]), sync_state_set={int(b) for b in data["syncStateSet"]},
                   sync_state_set_epoch=int(data["syncStateSetEpoch"]))


class ReplicaState:
    """Every broker group the controller knows, by broker name."""

    def __init__(self) -> None:
        self.groups: Dict[str, ReplicaGroup] = {}
        #: events applied since the state was empty (restored with it)
        self.applied = 0
        #: ``callback(event, group_or_None)`` after each applied event (metrics, event log, status)
        self.listeners: list[Callable[[Event, Optional[ReplicaGroup]], object]] = []

    def group(self, broker_name: Optional[str]) -> Optional[ReplicaGroup]:
        return self.groups.get(broker_name) if broker_name is not None else None

    def apply(self, event: Event) -> Optional[ReplicaGroup]:
        """Apply one event; an unknown type or a malformed event raises ValueError, changing nothing."""
        kind = event.get("type") if isinstance(event, dict) else None
        if kind not in EVENT_TYPES:
            raise ValueError("unknown controller event %r" % (event,))
        handler = getattr(self, "_apply_" + kind)
        try:
            group = handler(event)
        except (KeyError, TypeError) as e:
            raise ValueError("malformed controller event %r: %s" % (event, e))
        self.applied += 1
        for listener in list(self.listeners):
            listener(event, group)
        return group

    # -- the five events (Java ReplicasInfoManager.handle*) -------------------------------------
    def _apply_apply_broker_id(self, event: Event) -> ReplicaGroup:
        name, broker_id = event["brokerName"], int(event["brokerId"])
        group = self.groups.get(name)
        if group is None:
            group = self.groups[name] = ReplicaGroup(cluster=event["clusterName"], broker_name=name)
        if broker_id not in group.brokers:
            group.brokers[broker_id] = (event["brokerAddress"], event["registerCheckCode"])
            # Java counts ids handed out, not the largest one: ids are applied in order 1, 2, ...
            group.next_broker_id += 1
        return group

    def _apply_elect_master(self, event: Event) -> Optional[ReplicaGroup]:
        group = self.groups.get(event["brokerName"])
        if group is None:
            return None
        new_master = event.get("newMasterId")
        group.master_epoch += 1
        if new_master is None:
            # no replica could take over: the master is gone, the in-sync set is kept
            group.master_id = None
        else:
            group.master_id = int(new_master)
            group.sync_state_set = {int(new_master)}
            group.sync_state_set_epoch += 1
        return group

    def _apply_alter_sync_state_set(self, event: Event) -> Optional[ReplicaGroup]:
        group = self.groups.get(event["brokerName"])
        if group is not None:
            group.sync_state_set = {int(b) for b in event["syncStateSet"]}
            group.sync_state_set_epoch += 1
        return group

    def _apply_update_broker_address(self, event: Event) -> Optional[ReplicaGroup]:
        group = self.groups.get(event["brokerName"])
        broker_id = int(event["brokerId"])
        if group is not None and broker_id in group.brokers:
            group.brokers[broker_id] = (event["brokerAddress"], group.brokers[broker_id][1])
        return group

    def _apply_clean_broker_data(self, event: Event) -> Optional[ReplicaGroup]:
        name = event["brokerName"]
        ids = event.get("brokerIds")
        if not ids:
            return self.groups.pop(name, None)
        group = self.groups.get(name)
        if group is None:
            return None
        for broker_id in ids:
            group.brokers.pop(int(broker_id), None)
            group.sync_state_set.discard(int(broker_id))
        if not group.brokers or not group.sync_state_set:
            # Java drops each of its two tables when it empties; a group is both or nothing here
            del self.groups[name]
        return group

    # -- persistence ------------------------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        return {"applied": self.applied, "groups": [g.to_dict() for _, g in sorted(self.groups.items())]}

    def load_dict(self, data: Dict[str, Any]) -> None:
        """Replace everything with ``data`` (a snapshot); listeners are not told, the caller is."""
        groups = {}
        for item in data.get("groups", ()):
            group = ReplicaGroup.from_dict(item)
            groups[group.broker_name] = group
        self.groups = groups
        self.applied = int(data.get("applied", 0))
