"""The embedded controller's metrics (RIP-44), built from ``Controller.status()`` at a scrape.

``ControllerCollector`` is the controller's collector (``NamesrvMetrics.add_collector``, added where
the controller is built): the status is read on the reactor thread (the controller's state and
heartbeat table are only changed there); these families are then built from that copy in the
thread that renders the text, as the route-table gauges are.

What an operator alerts on (conf/prometheus/controller-rules.yml): a group whose master is gone
and that the leader has not given a new one (``controller_group_has_master`` 0 on the leader), and
a controller group without a leader (no ``controller_is_leader`` 1 anywhere). Java's controller
exports ``rocketmq_controller_*`` over OpenTelemetry; these follow this server's prefix and
labels instead, so one scrape job covers both roles of the process. The election results are
Java's label values (``new_master_elected``, ``keep_current_master``, ``no_master_elected``).
"""

from collections.abc import Iterator, Mapping
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from namesrv.controller.core import Controller

PREFIX = "rocketmq_namesrv_controller_"
#: a status as ``Controller.status()`` and ``RaftLog.status()`` give it: plain data, read by key (Any: the
#: status dicts nest several shapes)
Status = Mapping[str, Any]


def group_has_master(group: Status) -> int:
    """1 when the group has a master and this controller hears it beat, else 0."""
    return 1 if group.get("masterBrokerId") is not None and group.get("masterAlive") else 0


def controller_families(status: Status) -> Iterator[Metric]:
    """The metric families of one ``Controller.status()``."""
    controller_group, controller_id = str(status.get("group") or ""), str(status.get("selfId") or "")
    leader = GaugeMetricFamily(PREFIX + "is_leader", "1 when this controller leads its controller group (elects, "
                               "answers brokers' registrations), 0 when it follows.",
                               labels=["controller_group", "controller_id"])
    leader.add_metric([controller_group, controller_id], 1 if status.get("isLeader") else 0)
    yield leader
    elections = CounterMetricFamily(PREFIX + "elections", "Master elections this controller ran, by result "
                                    "(new_master_elected, keep_current_master, no_master_elected).",
                                    labels=["result"])
    for result, count in sorted((status.get("elections") or {}).items()):
        elections.add_metric([result], count)
    yield elections
    yield GaugeMetricFamily(PREFIX + "live_brokers", "Brokers whose controller heartbeats this controller hears.",
                            value=status.get("liveBrokers") or 0)
    groups = status.get("groups") or []
    has_master = GaugeMetricFamily(PREFIX + "group_has_master", "1 when the broker group has a master that is "
                                   "alive, 0 when it has none (or a dead one not replaced yet).",
                                   labels=["cluster", "broker_name"])
    in_sync = GaugeMetricFamily(PREFIX + "sync_state_set_size", "Replicas in the group's in-sync set (those a "
                                "master may be elected from).", labels=["cluster", "broker_name"])
    alive = GaugeMetricFamily(PREFIX + "group_live_brokers", "Replicas of the group this controller hears beat.",
                              labels=["cluster", "broker_name"])
    for group in groups:
        labels = [str(group.get("cluster")), str(group.get("brokerName"))]
        has_master.add_metric(labels, group_has_master(group))
        in_sync.add_metric(labels, len(group.get("syncStateSet") or ()))
        alive.add_metric(labels, sum(1 for member in group.get("members") or () if member.get("alive")))
    yield has_master
    yield in_sync
    yield alive
    yield GaugeMetricFamily(PREFIX + "groups_without_master", "Broker groups with no live master.",
                            value=sum(1 - group_has_master(group) for group in groups))
    refused = CounterMetricFamily(PREFIX + "refused_requests", "Requests refused by the controller's bounds, by "
                                  "reason (bad_name, field_too_long, heartbeat_table_full, heartbeat_connection_full, "
                                  "too_many_groups, too_many_brokers_in_group).", labels=["reason"])
    for reason, count in sorted((status.get("refused") or {}).items()):
        refused.add_metric([reason], count)
    yield refused
    yield GaugeMetricFamily(PREFIX + "heartbeat_entries", "Entries in this controller's broker heartbeat table "
                            "(at most controllerHeartbeatMaxBrokers).", value=status.get("heartbeatEntries") or 0)
    expired = CounterMetricFamily(PREFIX + "expired_groups", "Broker groups forgotten because no master was ever "
                                  "elected in them and none of their brokers beat (controllerUnaliveGroupExpireMillis).")
    expired.add_metric([], status.get("expiredGroups") or 0)
    yield expired
    yield from raft_families(status.get("controller") or {})


def raft_families(raft: Status) -> Iterator[Metric]:
    """Raft among several controllers (``RaftLog.status()``): the term, the members linked, the leader's
    lease, and what was refused or held back (a member without the secret, a stale acknowledgement)."""
    if raft.get("mode") != "raft":
        return
    yield GaugeMetricFamily(PREFIX + "raft_term", "This controller's Raft term.", value=raft.get("term") or 0)
    yield GaugeMetricFamily(PREFIX + "raft_linked_members", "Other controllers this one holds an "
                            "authenticated link with.", value=len(raft.get("connectedPeers") or ()))
    yield GaugeMetricFamily(PREFIX + "raft_lease_seconds", "Seconds left of the leader's read lease (0 on a "
                            "follower, or a leader a majority has not heard lately).",
                            value=raft.get("leaseSeconds") or 0)
    yield GaugeMetricFamily(PREFIX + "raft_member_authentication", "1 when members prove the group's secret, "
                            "0 when controllerPeerAuthDisabled lets anyone join.",
                            value=1 if raft.get("authenticated") else 0)
    refused = CounterMetricFamily(PREFIX + "raft_refused_connections", "Connections to the controller port "
                                  "that started as a member and were refused (wrong secret, stranger, bad frame).")
    refused.add_metric([], raft.get("refusedLinks") or 0)
    yield refused
    held = CounterMetricFamily(PREFIX + "raft_dropped_messages", "Member messages not given to Raft, by reason "
                               "(stale_ack, vote_while_led, forwarded_command, bad, newer_term).", labels=["reason"])
    for reason, count in sorted((raft.get("dropped") or {}).items()):
        held.add_metric([reason], count)
    yield held
    yield from member_families(raft)
    yield from store_families(raft)


def member_families(raft: Status) -> Iterator[Metric]:
    """The group's configuration as this controller has it in force: every member's role, and on the leader
    how far each one's log is behind and when it was last heard from."""
    members = raft.get("members") or []
    role = GaugeMetricFamily(PREFIX + "raft_member", "1 for each member of the group's configuration in force, by "
                             "role (voter: counts for majorities; learner: catching up, counts for nothing).",
                             labels=["member", "role"])
    lag = GaugeMetricFamily(PREFIX + "raft_member_lag_entries", "Log entries a member is behind the leader (on the "
                            "leader only).", labels=["member"])
    contact = GaugeMetricFamily(PREFIX + "raft_member_last_contact_seconds", "Seconds since this controller last "
                                "heard from the member.", labels=["member"])
    for member in members:
        role.add_metric([member["id"], member["role"]], 1)
        if member.get("lag") is not None:
            lag.add_metric([member["id"]], member["lag"])
        if member.get("lastContactSeconds") is not None:
            contact.add_metric([member["id"]], member["lastContactSeconds"])
    yield role
    yield lag
    yield contact
    configuration = raft.get("configuration") or {}
    yield GaugeMetricFamily(PREFIX + "raft_group_epoch", "The group's epoch: raised by one each time a survivor was "
                            "forced into a new group (--force-new-controller-group).",
                            value=configuration.get("epoch") or 0)
    yield GaugeMetricFamily(PREFIX + "raft_fenced", "1 when this controller was fenced by a forced new group and "
                            "takes no part any more (move its store aside, add it again).",
                            value=1 if raft.get("role") == "fenced" else 0)
    yield GaugeMetricFamily(PREFIX + "raft_leader_transfer", "1 while this leader hands leadership over.",
                            value=1 if raft.get("transfer") else 0)


def store_families(raft: Status) -> Iterator[Metric]:
    """The Raft store's size against its bound (controllerStoreMaxBytes), and its snapshots."""
    store = raft.get("store")
    if not store:
        return
    size = GaugeMetricFamily(PREFIX + "raft_store_bytes", "Bytes of this controller's Raft store, by part.",
                             labels=["part"])
    size.add_metric(["journal"], store.get("journalBytes") or 0)
    size.add_metric(["snapshot"], store.get("snapshotBytes") or 0)
    yield size
    yield GaugeMetricFamily(PREFIX + "raft_store_max_bytes", "controllerStoreMaxBytes: the bound on the store.",
                            value=store.get("maxBytes") or 0)
    snapshots = CounterMetricFamily(PREFIX + "raft_snapshots", "Snapshots written here (the log compacted) and "
                                    "installed from the leader (this member was behind its log).", labels=["kind"])
    snapshots.add_metric(["written"], store.get("snapshotsWritten") or 0)
    snapshots.add_metric(["installed"], store.get("snapshotsInstalled") or 0)
    yield snapshots


class ControllerCollector:
    """The families of one Controller, for ``NamesrvMetrics.add_collector``."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller

    def read(self) -> dict[str, Any]:
        return self.controller.status()

    def families(self, status: Status) -> Iterator[Metric]:
        return controller_families(status)
