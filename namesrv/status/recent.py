"""The last events the page shows, fed by the same ``emit`` calls that write the event log.

Only the events an operator watches are kept (registrations, expirations, unregistrations,
connection closes, bad frames, configuration and KV changes), in a bounded ring with a
sequence number so that the page can ask "what is new since N". Members removed by the
expiry scan are remembered (bounded) so the broker table can still show them as expired.
"""

import collections
import itertools

SHOWN_EVENTS = frozenset(["broker_registered", "broker_expired", "broker_unregistered", "channel_closed",
                          "bad_frame", "config_changed", "kv_changed", "server_started",
                          # the controller's failovers (namesrv/controller/core.py)
                          "controller_master_inactive", "controller_master_elected", "controller_master_unavailable",
                          "controller_role_changed"])


class RecentEvents:
    """``wall``: the IReactorTime events are stamped with (a time a person reads)."""

    def __init__(self, wall, size=500, expired_size=200):
        self.wall = wall
        self.events = collections.deque(maxlen=size)
        self.expired = collections.OrderedDict()   # (cluster, brokerAddr) -> (time, fields)
        self.expired_size = expired_size
        self._seq = itertools.count(1)
        self.last_seq = 0

    def event(self, event, fields):
        """A listener for ``IEventLog.add_listener``: ``(event, fields)`` as emitted."""
        if event not in SHOWN_EVENTS:
            return
        now = self.wall.seconds()
        self.last_seq = next(self._seq)
        self.events.append((self.last_seq, now, event, dict(fields)))
        key = (fields.get("cluster"), fields.get("brokerAddr"))
        if event == "broker_expired":
            self.expired.pop(key, None)
            self.expired[key] = (now, dict(fields))
            while len(self.expired) > self.expired_size:
                self.expired.popitem(last=False)
        elif event == "broker_registered":
            self.expired.pop(key, None)

    def latest(self, count=50):
        """The newest ``count`` events, newest first."""
        return list(itertools.islice(reversed(self.events), count))
