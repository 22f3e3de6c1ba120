"""The controller's JSON bodies, written as fastjson writes Java's classes (fields in alphabetical
order, ``Map<Long, String>`` keys unquoted), and the two bodies it reads."""

from collections.abc import Iterable, Mapping
from typing import Any, Optional

from namesrv.codec.fastjson import dumps_plain, loads
from namesrv.controller.state import ReplicaGroup


class BodyError(ValueError):
    """A request body that is not what the code expects; the message is the answer's remark."""


def sync_state_set(members: Iterable[int], epoch: int) -> bytes:
    """SyncStateSet: the in-sync broker ids and their epoch."""
    return dumps_plain({"syncStateSet": sorted(members), "syncStateSetEpoch": epoch}).encode("utf-8")


def member_group(group: ReplicaGroup) -> dict[str, object]:
    """BrokerMemberGroup: the group's ids and addresses (what a notified broker learns its peers from)."""
    return {"brokerAddrs": group.id_table(), "brokerName": group.broker_name, "cluster": group.cluster}


def elect_master_body(group: Optional[ReplicaGroup], members: Iterable[int]) -> bytes:
    """ElectMasterResponseBody: the member group (after a new election) and the in-sync set."""
    body: dict[str, object] = {"syncStateSet": sorted(members)}
    if group is not None:
        body["brokerMemberGroup"] = member_group(group)
    return dumps_plain(body).encode("utf-8")


def broker_replicas_info(groups: Iterable[tuple[ReplicaGroup, Mapping[int, bool]]]) -> bytes:
    """BrokerReplicasInfo for ``[(group, {broker_id: alive})]`` (CONTROLLER_GET_SYNC_STATE_DATA)."""
    table: dict[str, dict[str, object]] = {}
    for group, alive in groups:
        in_sync: list[dict[str, object]] = []
        not_in_sync: list[dict[str, object]] = []
        for broker_id, (address, _code) in sorted(group.brokers.items()):
            replica = {"alive": bool(alive.get(broker_id)), "brokerAddress": address, "brokerId": broker_id,
                       "brokerName": group.broker_name}
            (in_sync if broker_id in group.sync_state_set else not_in_sync).append(replica)
        info: dict[str, object] = {"inSyncReplicas": in_sync, "masterEpoch": group.master_epoch,
                                   "notInSyncReplicas": not_in_sync, "syncStateSetEpoch": group.sync_state_set_epoch}
        if group.master_id is not None:
            info["masterBrokerId"] = group.master_id
            if group.master_address is not None:
                info["masterAddress"] = group.master_address
        table[group.broker_name] = info
    return dumps_plain({"replicasInfoTable": table}).encode("utf-8")


def read_sync_state_set(body: Optional[bytes]) -> tuple[set[int], int]:
    """The SyncStateSet a master sends with CONTROLLER_ALTER_SYNC_STATE_SET: (ids, epoch)."""
    data = _json(body, "SyncStateSet")
    if not isinstance(data, dict):
        raise BodyError("body is not a SyncStateSet JSON object")
    members = data.get("syncStateSet")
    if members is None:
        members = []
    if not isinstance(members, list):
        raise BodyError("syncStateSet is not a list of broker ids")
    try:
        ids = {int(b) for b in members}
        epoch = int(data.get("syncStateSetEpoch", 0))
    except (TypeError, ValueError):
        raise BodyError("syncStateSet holds something that is not a broker id")
    return ids, epoch


def read_broker_names(body: Optional[bytes]) -> list[str]:
    """The JSON list of broker names CONTROLLER_GET_SYNC_STATE_DATA carries."""
    data = _json(body, "List")
    if not isinstance(data, list) or not all(isinstance(name, str) for name in data):
        raise BodyError("body is not a JSON list of broker names")
    return data


def _json(body: Optional[bytes], what: str) -> Any:
    """The body's JSON (Any: decoded JSON, which the reader checks)."""
    if not body:
        raise BodyError("no %s body" % what)
    try:
        return loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise BodyError("decode %s body failed: %s" % (what, e))
