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


class AppliedRegistration:
    """What the last full application of a broker's registration left: enough to answer again."""

    __slots__ = ("fingerprint", "token", "topics", "data_version")

    def __init__(self, fingerprint, token, topics, data_version):
        self.fingerprint = fingerprint
        self.token = token
        self.topics = topics
        self.data_version = data_version


class UnchangedRegistrations:
    """The last applied registration per (cluster, brokerAddr), and the refresh that skips the work."""

    def __init__(self, routes):
        self.routes = routes
        self.applied = {}
        self.skipped = 0

    def refresh(self, cluster, broker_addr, fingerprint, connection, heartbeat_timeout_millis):
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

    def remember(self, cluster, broker_addr, broker_name, fingerprint, topics, data_version):
        applied = self.applied
        live = self.routes.broker_live_table
        if len(applied) > 2 * len(live) + 1024:   # forget brokers that left
            for key in [k for k in applied if k not in live]:
                del applied[key]
        applied[(cluster, broker_addr)] = AppliedRegistration(
            fingerprint, self.routes.registration_token(broker_name), topics, data_version)

    def export(self):
        """The entries still valid (nothing of their broker changed since): [[cluster, addr, fingerprint,
        topics, dataVersion], ...], plain values for a takeover's last message."""
        routes, rows = self.routes, []
        for (cluster, broker_addr), last in self.applied.items():
            live = routes.broker_live_table.get((cluster, broker_addr))
            if live is not None and isinstance(last.fingerprint, bytes) \
                    and last.token == routes.registration_token(live.broker_name):
                rows.append([cluster, broker_addr, last.fingerprint, last.topics, last.data_version])
        return rows

    def adopt(self, rows):
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
