"""Liveness refreshes and admin operations on the route tables.

QUERY_DATA_VERSION and BROKER_HEARTBEAT only move a live entry's ``last_update`` (the
deadline queue notices lazily); WIPE/ADD_WRITE_PERM, DELETE_TOPIC_IN_NAMESRV and
REGISTER_TOPIC_IN_NAMESRV are operations of the change tracker, so route caches and
topic_route_changed events follow them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from namesrv.routes.model import PERM_READ, PERM_WRITE, DataVersion, QueueData

if TYPE_CHECKING:   # types only
    from namesrv.routes.changes import RouteChanges
    from namesrv.routes.tables import RouteTables
    from namesrv.timing.clock import Clock


class RouteAdmin:
    """Changes to ``tables`` (a RouteTables) that are not registrations; ``clock`` dates liveness refreshes."""

    def __init__(self, tables: RouteTables, changes: RouteChanges, clock: Clock) -> None:
        self.tables = tables
        self.changes = changes
        self.clock = clock

    # -- QUERY_DATA_VERSION / BROKER_HEARTBEAT ------------------------------------------
    def query_data_version(self, cluster: str, broker_addr: str, data_version: Optional[DataVersion]) \
            -> tuple[bool, Optional[DataVersion]]:
        """5.x semantics: (changed, stored DataVersion or None); refreshes liveness if known."""
        live = self.tables.broker_live_table.get((cluster, broker_addr))
        changed = live is None or data_version is None or live.data_version != data_version
        if live is None:
            return changed, None
        live.last_update = self.clock.seconds()
        return changed, live.data_version

    def broker_heartbeat(self, cluster: str, broker_addr: str) -> bool:
        """Refresh the live entry of (cluster, brokerAddr); False when there is none."""
        live = self.tables.broker_live_table.get((cluster, broker_addr))
        if live is None:
            return False
        live.last_update = self.clock.seconds()
        return True

    def is_broker_topic_config_changed(self, cluster: str, broker_addr: str, data_version: DataVersion) -> bool:
        live = self.tables.broker_live_table.get((cluster, broker_addr))
        return live is None or live.data_version != data_version

    def query_broker_data_version(self, cluster: str, broker_addr: str) -> Optional[DataVersion]:
        live = self.tables.broker_live_table.get((cluster, broker_addr))
        return live.data_version if live is not None else None

    # -- admin operations --------------------------------------------------------------
    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        """Clear WRITE on every QueueData of the broker; returns how many topics it has."""
        return self._operate_write_perm(broker_name, lambda perm: perm & ~PERM_WRITE)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        """Set perm to READ|WRITE (not OR-ed, like Java) on every QueueData; returns the count."""
        return self._operate_write_perm(broker_name, lambda perm: PERM_READ | PERM_WRITE)

    def _operate_write_perm(self, broker_name: str, new_perm: Callable[[int], int]) -> int:
        return self.tables.set_perms(broker_name, new_perm)

    def delete_topic(self, topic: str, cluster: Optional[str] = None) -> None:
        """DELETE_TOPIC_IN_NAMESRV: the whole topic, or only the cluster's brokers' queues."""
        tables = self.tables
        with self.changes.operation(tables):
            if not cluster:
                tables.remove_topic(topic)
                return
            names = tables.cluster_addr_table.get(cluster)
            if not names:
                return
            for broker_name in list(names):
                tables.remove_queue_data(topic, broker_name)

    def register_topic(self, topic: str, queue_datas: list[QueueData]) -> int:
        """REGISTER_TOPIC_IN_NAMESRV (5.x); returns how many QueueData were stored."""
        if not queue_datas:
            return 0
        tables = self.tables
        with self.changes.operation(tables):
            if topic not in tables.topic_queue_table:
                if any(qd.broker_name not in tables.broker_addr_table for qd in queue_datas):
                    return 0
            stored = 0
            for queue_data in queue_datas:
                if queue_data.broker_name not in tables.broker_addr_table:
                    break  # Java stops here and keeps what it stored before
                tables.put_queue_data(topic, queue_data.copy())
                stored += 1
            return stored
