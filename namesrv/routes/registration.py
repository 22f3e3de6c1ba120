"""Brokers joining and leaving: REGISTER_BROKER, UNREGISTER_BROKER, connection close and expiry.

Semantics are 5.x's (which reproduce 4.9's results for 4.x brokers), with these
deliberate differences, each noted where it happens:
- unregistration is synchronous (5.x queues it for a batch worker) and costs O(topics of
  the broker) thanks to a reverse index brokerName -> topics;
- a refused single-topic registration changes nothing (Java leaves the cluster entry and
  an empty BrokerData behind);
- connection close and expiry remove exactly the registration bound to that connection /
  that live entry (5.x searches BrokerDatas of the same cluster for the address, and leaves
  a live entry that no BrokerData lists in place forever, re-closing it on every scan);
- a broker name losing its last address leaves every cluster set (Java: only the
  request's cluster);
- a master's late registration as a slave, from an older master epoch (stateVersion) than
  the one it is master at here, is refused (Java unlists the master);
- a master the controller in this process committed is listed before its own registration
  (``route_committed_master``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from namesrv.routes.model import (
    DEFAULT_HEARTBEAT_TIMEOUT_MILLIS, MASTER_ID, PERM_WRITE, BrokerData, BrokerLiveInfo, DataVersion, LiveKey,
    MinBrokerIdChange, RegisterBrokerResult, RemovedBroker, TopicConfigSerializeWrapper)

if TYPE_CHECKING:   # types only
    from namesrv.interfaces import IRemotingConnection
    from namesrv.routes.changes import RouteChanges
    from namesrv.routes.tables import RouteTables
    from namesrv.timing.clock import Clock


class _Registration:
    """One REGISTER_BROKER request, as the steps of ``BrokerRegistrations.register_broker`` pass it on."""

    __slots__ = ("cluster", "broker_addr", "broker_name", "broker_id", "ha_server_addr", "wrapper",
                 "filter_server_list", "connection", "zone_name", "heartbeat_timeout_millis", "enable_acting_master",
                 "delete_topics", "key")

    def __init__(self, cluster: str, broker_addr: str, broker_name: str, broker_id: int,
                 ha_server_addr: Optional[str], wrapper: TopicConfigSerializeWrapper,
                 filter_server_list: Optional[list[str]], connection: Optional[IRemotingConnection],
                 zone_name: Optional[str], heartbeat_timeout_millis: Optional[int],
                 enable_acting_master: Optional[bool], delete_topics: bool) -> None:
        self.cluster = cluster
        self.broker_addr = broker_addr
        self.broker_name = broker_name
        self.broker_id = broker_id
        self.ha_server_addr = ha_server_addr
        self.wrapper = wrapper
        self.filter_server_list = filter_server_list
        self.connection = connection
        self.zone_name = zone_name
        self.heartbeat_timeout_millis = heartbeat_timeout_millis
        self.enable_acting_master = enable_acting_master
        self.delete_topics = delete_topics
        self.key = (cluster, broker_addr)


class BrokerRegistrations:
    """Registration, unregistration and expiry on ``tables`` (a RouteTables), reported to ``changes``."""

    def __init__(self, tables: RouteTables, changes: RouteChanges, clock: Clock,
                 default_heartbeat_timeout_millis: int = DEFAULT_HEARTBEAT_TIMEOUT_MILLIS,
                 master_hint: Optional[Callable[[str], Optional[str]]] = None) -> None:
        self.tables = tables
        self.changes = changes
        self.clock = clock
        #: ``callback(MinBrokerIdChange)`` when a group's lowest id changes as 5.x notifies it (inside the table
        #: operation: a listener only takes note, or starts something asynchronous)
        self.min_broker_id_listeners: list[Callable[[MinBrokerIdChange], object]] = []
        self.default_heartbeat_timeout_millis = default_heartbeat_timeout_millis
        #: ``master_hint(broker_name)``: the master's broker address a controller committed for the group, or
        #: None (given by the service when a controller runs in this process: routes never import it)
        self.master_hint = master_hint

    # -- REGISTER_BROKER --------------------------------------------------------------
    def register_broker(self, cluster: str, broker_addr: str, broker_name: str, broker_id: int,
                        ha_server_addr: Optional[str],
                        topic_config_wrapper: Optional[TopicConfigSerializeWrapper] = None,
                        filter_server_list: Optional[list[str]] = None,
                        connection: Optional[IRemotingConnection] = None, zone_name: Optional[str] = None,
                        heartbeat_timeout_millis: Optional[int] = None, enable_acting_master: Optional[bool] = None,
                        delete_topic_with_broker_registration: bool = False) -> Optional[RegisterBrokerResult]:
        """Register (or refresh) one broker (behaviour.md §3.2). ``None`` means refused.

        ``enable_acting_master`` None marks a pre-5.0 broker (no header). ``filter_server_list``
        None leaves the filter servers as they are (legacy bodies).
        """
        wrapper = topic_config_wrapper
        if wrapper is None:
            wrapper = TopicConfigSerializeWrapper(DataVersion(0, 0, 0))
        broker_data = self.tables.broker_addr_table.get(broker_name)
        known_id = broker_data is not None and broker_id in broker_data.broker_addrs
        if not known_id and len(wrapper.topic_config_table) == 1:
            # 5.x: a one-topic registration from an unregistered id is an incremental update
            # racing a restart (PITFALLS 4). Checked before any change: nothing half-applied.
            return None
        request = _Registration(cluster, broker_addr, broker_name, broker_id, ha_server_addr, wrapper,
                                filter_server_list, connection, zone_name, heartbeat_timeout_millis,
                                enable_acting_master, delete_topic_with_broker_registration)
        with self.changes.operation(self.tables):
            return self._register(request)

    def _register(self, request: _Registration) -> RegisterBrokerResult:
        previous = self.tables.broker_live_table.get(request.key)
        changed = previous is None or previous.data_version != request.wrapper.data_version
        result = RegisterBrokerResult(first=previous is None, changed=changed)
        self.tables.add_to_cluster(request.cluster, request.broker_name)
        broker_data, register_first = self._broker_data(request)
        addrs = broker_data.broker_addrs
        result.min_broker_id_changed = bool(addrs) and request.broker_id < min(addrs)
        master_before = addrs.get(MASTER_ID)
        placed = self._place_address(request, addrs)
        if placed is None:
            result.stale = True
            return result
        if request.broker_id == MASTER_ID and master_before != request.broker_addr:
            result.became_master, result.master_epoch = True, request.wrapper.data_version.state_version
        register_first = register_first or placed
        self._put_topics(request, broker_data, register_first or changed)
        self._refresh_live(request)
        self._tell_master(result, request.cluster, addrs, request.broker_id, request.broker_name, request.broker_addr)
        if result.min_broker_id_changed and addrs:
            # 5.x: every member but the new lowest one is told (it alone: itself), whatever enableActingMaster says
            lowest = min(addrs)
            others = tuple(a for i, a in sorted(addrs.items()) if i != lowest) or (addrs[lowest],)
            self._min_broker_id_changed(MinBrokerIdChange(request.broker_name, lowest, addrs[lowest], None,
                                                          request.ha_server_addr, others))
        return result

    def _min_broker_id_changed(self, change: MinBrokerIdChange) -> None:
        for listener in list(self.min_broker_id_listeners):
            listener(change)

    def _broker_data(self, request: _Registration) -> tuple[BrokerData, bool]:
        """The broker name's BrokerData, made if new and brought up to date; (it, whether it is new)."""
        tables = self.tables
        broker_data = tables.broker_addr_table.get(request.broker_name)
        new = broker_data is None
        if broker_data is None:   # new
            broker_data = tables.new_broker_data(request.cluster, request.broker_name)
        acting = request.enable_acting_master is True
        if broker_data.enable_acting_master != acting or broker_data.zone_name != request.zone_name:
            broker_data.enable_acting_master = acting
            broker_data.zone_name = request.zone_name
            tables.broker_data_changed(request.broker_name)
        return broker_data, new

    def _place_address(self, request: _Registration, addrs: dict[int, str]) -> Optional[bool]:
        """List the broker's address under its id. None: refused, as a registration from an older master
        epoch than the holder's (by the stale-address guard, its live entry is dropped); else True when the
        id had no address before."""
        tables, broker_id, broker_addr = self.tables, request.broker_id, request.broker_addr
        if broker_id != MASTER_ID and addrs.get(MASTER_ID) == broker_addr:
            live = tables.broker_live_table.get(request.key)
            if live is not None and live.data_version.state_version > request.wrapper.data_version.state_version:
                # A master's registration from before its election (an older master epoch) arriving late:
                # it would unlist the master (Java takes it). Its live entry stays as it is.
                return None
        # Role switch: one ip:port is listed under one id only.
        for other_id in [i for i, a in addrs.items() if a == broker_addr and i != broker_id]:
            del addrs[other_id]
            tables.broker_data_changed(request.broker_name)
        old_addr = addrs.get(broker_id)
        if old_addr is not None and old_addr != broker_addr:
            holder = tables.broker_live_table.get((request.cluster, old_addr))
            if holder is not None and \
                    holder.data_version.state_version > request.wrapper.data_version.state_version:
                # Stale-address guard (5.x): a newer member already holds this id.
                tables.drop_live(request.key)
                return None
        if old_addr != broker_addr:
            addrs[broker_id] = broker_addr
            tables.broker_data_changed(request.broker_name)
        return not old_addr

    def _put_topics(self, request: _Registration, broker_data: BrokerData, full: bool) -> None:
        """A master's (or prime slave's) topics become the group's QueueData; ``full`` (a first
        registration or a new DataVersion) also stores the static-topic mappings."""
        is_master = request.broker_id == MASTER_ID
        addrs = broker_data.broker_addrs
        is_prime_slave = request.enable_acting_master is not None and not is_master \
            and request.broker_id == min(addrs)
        if not (is_master or is_prime_slave):
            return
        tables, wrapper, broker_name = self.tables, request.wrapper, request.broker_name
        mappings = wrapper.topic_queue_mapping_info_map
        if request.delete_topics and not mappings:
            for topic in list(tables.topics_of(broker_name)):
                if topic not in wrapper.topic_config_table:
                    tables.remove_queue_data(topic, broker_name)
        wipe_write = is_prime_slave and broker_data.enable_acting_master
        # Per-topic test (5.x) when nothing changed: lets split registrations carrying one
        # DataVersion merge (only topics the broker is missing from are put).
        tables.put_broker_topics(broker_name, wrapper.topic_config_table, ~PERM_WRITE if wipe_write else -1,
                                 only_missing=not full)
        if full:
            tables.put_mappings(mappings)

    def _refresh_live(self, request: _Registration) -> None:
        timeout = self.default_heartbeat_timeout_millis if request.heartbeat_timeout_millis is None \
            else request.heartbeat_timeout_millis
        self.tables.bind_live(request.key, BrokerLiveInfo(
            self.clock.seconds(), timeout, request.wrapper.data_version, request.connection, request.ha_server_addr,
            request.broker_name, request.broker_id))
        if request.filter_server_list is not None:
            self.tables.set_filter_servers(request.key, request.filter_server_list)

    def _tell_master(self, result: RegisterBrokerResult, cluster: str, addrs: dict[int, str], broker_id: int,
                     broker_name: str, broker_addr: str) -> None:
        """A slave's answer names its live master (masterAddr, haServerAddr).

        Where no master has registered here, a group in controller mode may still have one: one that
        was elected while this name server could not hear it (a partition) registers here only at its
        next period. A 5.x slave takes its master's HA address from the first name server that answers
        its registration, so answering "no master" would leave it without one for that long. With a
        controller in this process, the master it committed is named, if this name server has a live
        entry for that address (its HA address comes from there) and it is not the asker itself.
        """
        if broker_id == MASTER_ID:
            return
        master_addr = addrs.get(MASTER_ID)
        if master_addr is None and self.master_hint is not None:
            master_addr = self.master_hint(broker_name)
            if master_addr == broker_addr:
                return
        if master_addr is not None:
            master = self.tables.broker_live_table.get((cluster, master_addr))
            if master is not None:
                result.master_addr = master_addr
                result.ha_server_addr = master.ha_server_addr

    # -- a master the controllers elected, before it registers as one --------------------
    def route_committed_master(self, broker_name: str, master_addr: str, master_epoch: int) -> bool:
        """List ``master_addr`` as the master (brokerId 0) of ``broker_name``: controllers committed it at
        ``master_epoch`` and it has not registered here as master yet. Returns True when the route changed.

        Why: a 5.x broker registers as brokerId 0 only once its role change has run to the end, and that
        waits on the broker's own lock, which a registration to an unreachable name server holds for up to
        registerBrokerTimeoutMills (24 s). Until then every route names the old master, cut off or dead,
        and producers get no SEND_OK.

        What decides is the master epoch, which a 5.x broker in controller mode writes into its
        DataVersion's stateVersion. It acts only when the elected broker is live here, listed as another
        member of the group, registered at an older epoch, and the current brokerId 0 (if any) too: a
        registration made at this epoch or later always wins. The elected broker's live entry takes the
        epoch, so that the old master's late registrations meet the stale-address guard, as they would
        after the new master's own registration; its changed DataVersion also makes its next registration
        a full one.
        """
        tables = self.tables
        broker_data = tables.broker_addr_table.get(broker_name)
        if broker_data is None:
            return False
        addrs = broker_data.broker_addrs
        if addrs.get(MASTER_ID) == master_addr:
            return False
        listed = [i for i, a in addrs.items() if a == master_addr]
        if not listed:
            return False
        key = (broker_data.cluster, master_addr)
        elected = tables.broker_live_table.get(key)
        if elected is None or elected.data_version.state_version >= master_epoch:
            return False
        holder_addr = addrs.get(MASTER_ID)
        if holder_addr is not None:
            holder = tables.broker_live_table.get((broker_data.cluster, holder_addr))
            if holder is not None and holder.data_version.state_version >= master_epoch:
                return False
        with self.changes.operation(tables):
            for broker_id in listed:
                del addrs[broker_id]
            addrs[MASTER_ID] = master_addr
            tables.broker_data_changed(broker_name)
            version = elected.data_version
            tables.bind_live(key, BrokerLiveInfo(
                elected.last_update, elected.heartbeat_timeout_millis,
                DataVersion(version.timestamp, version.counter, master_epoch), elected.connection,
                elected.ha_server_addr, broker_name, MASTER_ID))
        return True

    def refresh_unchanged_registration(self, cluster: str, broker_addr: str, token: tuple[int, Optional[int]],
                                       connection: Optional[IRemotingConnection] = None,
                                       heartbeat_timeout_millis: Optional[int] = None) \
            -> Optional[RegisterBrokerResult]:
        """Apply a registration identical (header and body) to the last one applied for this broker.

        Valid only while its ``registration_token`` is the one recorded right after that
        one was applied: re-applying it would then change nothing but the broker's
        liveness, which is all this does, without decoding the body. Other brokers'
        registrations do not matter. Returns the RegisterBrokerResult, or None when the
        caller must take the full path.
        """
        tables = self.tables
        key = (cluster, broker_addr)
        live = tables.broker_live_table.get(key)
        # A live entry restored without its name or id (a snapshot of an older version) looks up None below:
        # nothing is found and the caller takes the full path (no test for it here: this is a hot path).
        if live is None or token != tables.registration_token(live.broker_name):   # type: ignore[arg-type]
            return None
        broker_data = tables.broker_addr_table.get(live.broker_name)   # type: ignore[arg-type]
        if broker_data is None \
                or broker_data.broker_addrs.get(live.broker_id) != broker_addr:   # type: ignore[arg-type]
            return None
        timeout = self.default_heartbeat_timeout_millis if heartbeat_timeout_millis is None \
            else heartbeat_timeout_millis
        tables.bind_live(key, BrokerLiveInfo(self.clock.seconds(), timeout, live.data_version, connection,
                                             live.ha_server_addr, live.broker_name, live.broker_id))
        result = RegisterBrokerResult(first=False, changed=False)
        # both found above, so neither is None
        self._tell_master(result, cluster, broker_data.broker_addrs,
                          live.broker_id, live.broker_name, broker_addr)   # type: ignore[arg-type]
        return result

    # -- UNREGISTER_BROKER, connection close, expiry ------------------------------------
    def unregister_broker(self, cluster: str, broker_addr: str, broker_name: str, broker_id: Optional[int] = None,
                          expected: Optional[BrokerLiveInfo] = None) -> bool:
        """Remove one broker address (behaviour.md §4.2, run at once instead of batched).

        Returns True when a live entry or an address was removed. ``expected``: only act
        if the live entry of (cluster, brokerAddr) is that very object (PITFALLS 3: a
        removal decided earlier must not hit a broker that re-registered since).
        """
        key = (cluster, broker_addr)
        if expected is not None and self.tables.broker_live_table.get(key) is not expected:
            return False
        with self.changes.operation(self.tables):
            return self._unregister(cluster, broker_addr, broker_name)

    def _unregister(self, cluster: str, broker_addr: str, broker_name: str) -> bool:
        tables = self.tables
        removed = tables.drop_live((cluster, broker_addr)) is not None
        broker_data = tables.broker_addr_table.get(broker_name)
        if broker_data is None:
            return removed
        addrs = broker_data.broker_addrs
        gone = [i for i, a in addrs.items() if a == broker_addr]  # 5.x removes by address, not id
        lowest_gone = bool(gone) and min(addrs) in gone
        for broker_id in gone:
            del addrs[broker_id]
        if gone:
            removed = True
            tables.broker_data_changed(broker_name)
        if not addrs:
            tables.remove_broker_name(broker_name)
            return removed
        if broker_data.enable_acting_master and min(addrs) > MASTER_ID:
            # The master left a group that allows acting masters: its queues become read-only.
            tables.set_perms(broker_name, lambda perm: perm & ~PERM_WRITE)
        if lowest_gone and broker_data.enable_acting_master:
            lowest = min(addrs)
            self._min_broker_id_changed(MinBrokerIdChange(broker_name, lowest, addrs[lowest], broker_addr, None,
                                                          tuple(a for _, a in sorted(addrs.items()))))
        return removed

    def _remove_registration(self, key: LiveKey, live: BrokerLiveInfo) -> tuple[Optional[str], Optional[int]]:
        """Remove the registration ``live`` stands for; returns (brokerName, brokerId)."""
        cluster, broker_addr = key
        broker_name, broker_id = live.broker_name, live.broker_id
        broker_data = self.tables.broker_addr_table.get(broker_name) if broker_name is not None else None
        listed = [i for i, a in broker_data.broker_addrs.items() if a == broker_addr] if broker_data else []
        if listed:
            assert broker_name is not None   # it names a BrokerData
            broker_id = min(listed)
            self._unregister(cluster, broker_addr, broker_name)
        else:
            self.tables.drop_live(key)  # its address was taken over; only the live entry is left
        return broker_name, broker_id

    def on_connection_closed(self, connection: IRemotingConnection) -> list[RemovedBroker]:
        """Remove every registration bound to ``connection``; other connections change nothing.

        Returns the removed brokers as a list of RemovedBroker (``connection`` set).
        """
        return self.on_connections_closed([connection])

    def on_connections_closed(self, connections: list[IRemotingConnection]) -> list[RemovedBroker]:
        """``on_connection_closed`` for several connections in one operation: a switch that reboots
        drops a thousand brokers' connections at once, and their routes change once, not a thousand times."""
        tables = self.tables
        if not any(connection in tables.by_connection for connection in connections):
            return []
        removed = []
        with self.changes.operation(tables), tables.removals_together():
            for connection in connections:
                keys = tables.by_connection.get(connection)
                if not keys:
                    continue
                for key in sorted(keys):
                    live = tables.broker_live_table.get(key)
                    if live is None or live.connection is not connection:
                        continue
                    broker_name, broker_id = self._remove_registration(key, live)
                    removed.append(RemovedBroker(key[0], broker_name, broker_id, key[1], connection=connection))
                tables.by_connection.pop(connection, None)
        return removed

    def scan_not_active_brokers(self) -> list[RemovedBroker]:
        """Remove every registration whose heartbeat is older than its timeout.

        Returns a list of RemovedBroker with ``age_ms`` and the ``connection`` the caller
        should close (None after a warm restart). Cost: O(expired + refreshed) log n.
        """
        tables = self.tables
        now = self.clock.seconds()
        due = list(tables.deadlines.pop_expired(now, tables.broker_live_table.get))
        expired = []
        with self.changes.operation(tables), tables.removals_together():
            for key, live in due:
                if tables.broker_live_table.get(key) is not live:
                    continue
                broker_name, broker_id = self._remove_registration(key, live)
                age_ms = int(round((now - live.last_update) * 1000))
                expired.append(RemovedBroker(key[0], broker_name, broker_id, key[1], age_ms, live.connection))
        return expired
