"""The last events the page shows, fed by the same ``emit`` calls that write the event log.

Only the events an operator watches are kept (registrations, expirations, unregistrations,
closes of brokers' connections, bad frames, configuration and KV changes, the controller's failovers and
the routes naming a new master), in a bounded ring with a sequence number so that the page can ask
"what is new since N". A connection that no
broker registered on (a client's, a tool's, a probe's) closing is not news: it is never kept,
so that it cannot push a broker's events off the list. Members removed because their heartbeats
expired or because their connection closed (a crashed broker) are remembered (bounded), with why
and when, so the broker table can still show them.
"""

import collections
import itertools

SHOWN_EVENTS = frozenset(["broker_registered", "broker_expired", "broker_unregistered", "channel_closed",
                          "bad_frame", "config_changed", "kv_changed", "server_started",
                          # the controller's failovers (namesrv/controller/core.py)
                          "controller_master_inactive", "controller_master_elected", "controller_master_unavailable",
                          "controller_role_changed",
                          # when this name server's routes named a new master (a registration, or the controller)
                          "route_master_changed"])


class RecentEvents:
    """``wall``: the IReactorTime events are stamped with (a time a person reads)."""

    def __init__(self, wall, size=500, expired_size=200):
        self.wall = wall
        self.events = collections.deque(maxlen=size)
        #: members removed lately: (cluster, brokerAddr) -> (time, fields, why), why "expired" or "connection closed"
        self.gone = collections.OrderedDict()
        self.expired_size = expired_size
        self._seq = itertools.count(1)
        self.last_seq = 0

    def event(self, event, fields):
        """A listener for ``IEventLog.add_listener``: ``(event, fields)`` as emitted."""
        if event not in SHOWN_EVENTS or (event == "channel_closed" and not fields.get("brokerAddr")):
            return
        now = self.wall.seconds()
        self.last_seq = next(self._seq)
        self.events.append((self.last_seq, now, event, dict(fields)))
        key = (fields.get("cluster"), fields.get("brokerAddr"))
        if event == "broker_expired":
            self._gone(key, now, fields, "expired")
        elif event == "broker_unregistered" and fields.get("reason") == "channel_closed":
            self._gone(key, now, fields, "connection closed")
        elif event == "broker_registered":
            self.gone.pop(key, None)

    def _gone(self, key, now, fields, why):
        self.gone.pop(key, None)
        self.gone[key] = (now, dict(fields), why)
        while len(self.gone) > self.expired_size:
            self.gone.popitem(last=False)

    def latest(self, count=50):
        """The newest ``count`` events, newest first."""
        return list(itertools.islice(reversed(self.events), count))
