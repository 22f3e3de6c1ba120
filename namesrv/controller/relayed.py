"""Beats other controllers heard and the leader did not (apache/rocketmq#10812), kept by the leader.

Each controller hears its brokers' beats for itself, as in Java. When a broker's beats reach only
followers (its link to the leader cut, or a broker that lost the leader from the addresses it beats
to: apache/rocketmq#9845's dead scan thread), Java's leader finds it dead: it re-elects a healthy master, and a
slave it does not hear can never join the in-sync set. Here the leader asks the followers about the
brokers it has not heard lately (relay.py) and keeps what they heard in this table: a broker is alive
when the leader hears it, or when a follower does. A relayed beat's time is the leader's receipt
minus the age the follower reports (no clocks compared).

Direct evidence wins where it is newer: a broker whose connection to the leader closes is dead at
once (so a kill -9 is acted on at once, as before) unless a follower heard it later than the leader
did; relayed beats from before that close are ignored. Bounded: at most ``controllerHeartbeatMaxBrokers``
keys, the timeouts clamped as a direct beat's.
"""

from collections.abc import Iterator
from typing import TYPE_CHECKING, Optional

from namesrv.controller import limits
from namesrv.controller.liveinfo import BrokerLiveInfo
from namesrv.timing.deadlines import DeadlineQueue

if TYPE_CHECKING:   # types only
    from namesrv.config.live import NamesrvConfig
    from namesrv.timing.clock import Clock

#: (cluster, broker name, broker id): a broker's key in the heartbeat tables
BrokerKey = tuple[str, str, int]

#: a follower's beat must be this much newer than the leader's own last one to outlive a close the leader saw
FRESHER_BY = 1.0


class RelayedBeats:
    def __init__(self, clock: "Clock", config: "Optional[NamesrvConfig]" = None) -> None:
        self.clock = clock
        self.config = config
        self.table: dict[BrokerKey, dict[str, BrokerLiveInfo]] = {}
        self.deadlines: DeadlineQueue[tuple[BrokerKey, str], BrokerLiveInfo] = DeadlineQueue()
        self.closed: dict[BrokerKey, float] = {}      # when a direct connection of it closed here
        self.accepted = 0
        self.ignored = 0

    def __len__(self) -> int:
        return len(self.table)

    def beat(self, member: str, key: BrokerKey, age_ms: int, timeout_millis: int, epoch: int, max_offset: int,
             confirm_offset: int, priority: int) -> bool:
        """Record what ``member`` heard of ``key`` ``age_ms`` ago; False when ignored (older than a close seen
        here, or one key too many)."""
        now = self.clock.seconds()
        last_beat = now - max(0, age_ms) / 1000.0
        closed = self.closed.get(key)
        if closed is not None:
            if last_beat <= closed:
                self.ignored += 1
                return False
            del self.closed[key]
        cap = self.config.controllerHeartbeatMaxBrokers if self.config is not None else None
        if key not in self.table and cap is not None and len(self.table) >= cap:
            self.ignored += 1
            return False
        timeout = limits.heartbeat_timeout(self.config, timeout_millis) if self.config is not None else timeout_millis
        cluster, broker_name, broker_id = key
        info = BrokerLiveInfo(cluster, broker_name, broker_id, "", last_beat, timeout, None, epoch, max_offset,
                              confirm_offset, priority, relayed_by=member)
        self.table.setdefault(key, {})[member] = info
        self.deadlines.push((key, member), info)
        self.accepted += 1
        return True

    def gone(self, member: str, key: BrokerKey) -> Optional[BrokerLiveInfo]:
        """``member`` no longer hears ``key``: its beat is forgotten; the entry removed, or None."""
        heard = self.table.get(key)
        info = heard.pop(member, None) if heard is not None else None
        if heard is not None and not heard:
            del self.table[key]
        return info

    def freshest(self, key: BrokerKey, now: float) -> Optional[BrokerLiveInfo]:
        """The newest relayed beat of ``key`` still alive at ``now``, or None."""
        best = None
        for info in (self.table.get(key) or {}).values():
            if info.alive_at(now) and (best is None or info.last_beat > best.last_beat):
                best = info
        return best

    def outlives_close(self, key: BrokerKey, direct_last_beat: float, now: float) -> bool:
        """A connection the leader heard ``key`` on closed. True when a follower heard it since (it lives, only
        that link died); else its relayed beats are forgotten and any from before now will be ignored."""
        best = self.freshest(key, now)
        if best is not None and best.last_beat > direct_last_beat + FRESHER_BY:
            return True
        self.table.pop(key, None)
        self.closed[key] = now
        if len(self.closed) > 4 * (len(self.table) + 64):     # closes of keys never relayed again: drop old ones
            horizon = now - (self.config.controllerHeartbeatTimeoutMaxMillis / 1000.0 if self.config else 120.0)
            self.closed = {k: t for k, t in self.closed.items() if t > horizon}
        return False

    def current(self, slot: tuple[BrokerKey, str]) -> Optional[BrokerLiveInfo]:
        key, member = slot
        return (self.table.get(key) or {}).get(member)

    def pop_expired(self, now: float) -> Iterator[tuple[BrokerKey, BrokerLiveInfo]]:
        """(key, BrokerLiveInfo) of every relayed beat past its timeout, forgotten."""
        for (key, member), info in list(self.deadlines.pop_expired(now, self.current)):
            self.gone(member, key)
            yield key, info

    def sweep(self, now: float) -> list[tuple[BrokerKey, BrokerLiveInfo]]:
        """Every relayed beat past its timeout, forgotten (the scan's backstop)."""
        expired = [(key, member, info) for key, heard in self.table.items() for member, info in heard.items()
                   if not info.alive_at(now)]
        for key, member, info in expired:
            self.gone(member, key)
        return [(key, info) for key, _, info in expired]

    def clear(self) -> None:
        """This controller stopped leading: what followers told it is no longer asked for."""
        self.table.clear()
        self.deadlines.clear()
        self.closed.clear()
