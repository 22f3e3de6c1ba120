"""The unchanged-registration shortcut: a 4.9 broker's identical REGISTER_BROKER every 30 s.

4.9 brokers send their whole topic table every 30 s (``forceRegister`` is on by default),
almost always unchanged. When a registration's fingerprint (header and body, as the
processor computes it) equals the last one applied for that broker, and the broker's
``registration_token`` says nothing a re-application could change has changed since, only
its liveness is refreshed: no body decode, no table walk. Kept in one place with what it
remembers, so the processor only asks and the manager only answers. A takeover carries what
is still valid to the new process (``export``/``adopt``), so a thousand brokers' next
registrations do not all take the full path there at once.
"""


from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional

if TYPE_CHECKING:   # types only
    from namesrv.interfaces import IRemotingConnection
    from namesrv.routes.manager import RouteInfoManager
    from namesrv.routes.model import LiveKey, RegisterBrokerResult


class AppliedRegistration:
    """What the last full application of a broker's registration left: enough to answer again (the
    processor's digest of header and body, its topic count and its DataVersion as an event shows it)."""

    __slots__ = ("fingerprint", "token", "topics", "data_version")

    def __init__(self, fingerprint: bytes, token: tuple[int, Optional[int]], topics: int,
                 data_version: dict[str, int]) -> None:
        self.fingerprint = fingerprint
        self.token = token
        self.topics = topics
        self.data_version = data_version


class UnchangedRegistrations:
    """The last applied registration per (cluster, brokerAddr), and the refresh that skips the work."""

    def __init__(self, routes: RouteInfoManager) -> None:
        self.routes = routes
        self.applied: dict[LiveKey, AppliedRegistration] = {}
        self.skipped = 0

    def refresh(self, cluster: str, broker_addr: str, fingerprint: bytes, connection: Optional[IRemotingConnection],
                heartbeat_timeout_millis: Optional[int]) -> Optional[tuple[RegisterBrokerResult, AppliedRegistration]]:
        """``(RegisterBrokerResult, AppliedRegistration)`` when the shortcut applies, else None."""
        last = self.applied.get((cluster, broker_addr))
        if last is None or last.fingerprint != fingerprint:
            return None
        result = self.routes.refresh_unchanged_registration(cluster, broker_addr, last.token, connection,
                                                            heartbeat_timeout_millis)
        if result is None:
            return None
        self.skipped += 1
        return result, last

    def remember(self, cluster: str, broker_addr: str, broker_name: str, fingerprint: bytes, topics: int,
                 data_version: dict[str, int]) -> None:
        applied = self.applied
        live = self.routes.broker_live_table
        if len(applied) > 2 * len(live) + 1024:   # forget brokers that left
            for key in [k for k in applied if k not in live]:
                del applied[key]
        applied[(cluster, broker_addr)] = AppliedRegistration(
            fingerprint, self.routes.registration_token(broker_name), topics, data_version)

    def export(self) -> list[list[Any]]:   # rows of mixed plain values
        """The entries still valid (nothing of their broker changed since): [[cluster, addr, fingerprint,
        topics, dataVersion], ...], plain values for a takeover's last message."""
        rows: list[list[Any]]
        routes, rows = self.routes, []
        for (cluster, broker_addr), last in self.applied.items():
            live = routes.broker_live_table.get((cluster, broker_addr))
            # a live entry restored without its name (an older snapshot) asks for None's token: only the epoch
            if live is not None and isinstance(last.fingerprint, bytes) \
                    and last.token == routes.registration_token(live.broker_name):   # type: ignore[arg-type]
                rows.append([cluster, broker_addr, last.fingerprint, last.topics, last.data_version])
        return rows

    def adopt(self, rows: Optional[Iterable[Any]]) -> None:   # decoded from a message, checked here
        """Take ``export()``'s entries from the process taken over, once its tables are ours (their tokens are
        then this process's); entries of brokers we do not have, or malformed, are ignored."""
        routes = self.routes
        for row in rows or ():
            try:
                cluster, broker_addr, fingerprint, topics, data_version = row
            except (TypeError, ValueError):
                continue
            live = routes.broker_live_table.get((cluster, broker_addr))
            if live is None or not isinstance(fingerprint, bytes) or live.broker_name is None:
                continue
            self.applied[(cluster, broker_addr)] = AppliedRegistration(
                fingerprint, routes.registration_token(live.broker_name), topics, data_version)
