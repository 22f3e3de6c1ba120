"""Which brokers are alive, as this controller sees them (BROKER_HEARTBEAT, 904).

Not replicated, as in Java's DefaultBrokerHeartbeatManager: a broker in controller mode beats to
every controller (one-way, every second), so each controller knows for itself. A broker is
forgotten when its connection closes or its last beat is older than its own timeout; either way
the listeners hear ``(cluster, broker_name, broker_id)`` so the leader can elect a new master.
Unlike Java, the leader also counts the beats its followers hear and it does not (apache/rocketmq#10812:
a broker whose beats reach only followers is kept alive; relay.py asks, relayed.py keeps).

Java notices an expired broker at its next scan (``scanNotActiveBrokerInterval``, 5 s), so a
master cut off from the controllers is replaced up to 5 s after its timeout. Here each entry sits
in a deadline queue (namesrv/timing/deadlines.py) and a timer wakes at the earliest deadline, within
``EXPIRY_GRANULARITY``: the master is replaced a tenth of a second after its timeout. ``scan``
stays, on the ``scanNotActiveBrokerInterval`` timer, as a backstop.

Time is a monotonic clock (``seconds()``), never the wall clock: a clock step neither expires
nor keeps alive any broker (Java compares ``System.currentTimeMillis()``).

Bounded (namesrv/controller/limits.py), where Java keeps whatever arrives: names as Java's topic rule
allows, addresses of ``controllerMaxFieldLength``, at most ``controllerHeartbeatMaxBrokers`` entries
and ``controllerHeartbeatMaxBrokersPerConnection`` per connection, and the sender's timeout clamped
to [``controllerHeartbeatTimeoutMinMillis``, ``controllerHeartbeatTimeoutMaxMillis``]. A closed
connection takes its entries with it, queued deadlines included.
"""

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Optional

from twisted.logger import Logger

from namesrv.controller import limits
from namesrv.controller.liveinfo import LOWEST_PRIORITY, NO_EPOCH, NO_OFFSET, BrokerLiveInfo
from namesrv.controller.relayed import BrokerKey, RelayedBeats
from namesrv.timing.deadlines import DeadlineQueue

if TYPE_CHECKING:   # types only
    from twisted.internet.interfaces import IDelayedCall, IReactorTime

    from namesrv.config.live import NamesrvConfig
    from namesrv.timing.clock import Clock

__all__ = ["BrokerHeartbeats", "BrokerLiveInfo", "EXPIRY_GRANULARITY", "LOWEST_PRIORITY", "NO_EPOCH", "NO_OFFSET"]

#: how much later than its deadline an expired broker may be noticed (the expiry timer's step)
EXPIRY_GRANULARITY = 0.1


class BrokerHeartbeats:
    log = Logger()

    def __init__(self, clock: "Clock", reactor: "Optional[IReactorTime]" = None,
                 config: "Optional[NamesrvConfig]" = None) -> None:
        self.clock = clock
        self.reactor = reactor  # for the expiry timer; without one, only ``scan`` expires brokers
        self.config = config    # the bounds (limits.py); None: unbounded (unit tests of the table alone)
        self.table: dict[BrokerKey, BrokerLiveInfo] = {}
        #: callback(cluster, broker_name, broker_id) when a broker becomes inactive
        self.listeners: list[Callable[[str, str, int], object]] = []
        self.deadlines: DeadlineQueue[BrokerKey, BrokerLiveInfo] = DeadlineQueue()
        self.by_connection: dict[Any, set[BrokerKey]] = {}     # connection -> {keys of the entries bound to it}
        self.relayed = RelayedBeats(clock, config)   # what other controllers heard (the leader's, relay.py)
        self._timer: "Optional[IDelayedCall]" = None

    def _check_new(self, config: "NamesrvConfig", cluster: str, broker_name: str, address: str,
                   connection: Any) -> None:
        """Refused (limits.py) when a beat for a key not held yet would pass a bound (``config``: the bounds,
        a parameter so that its type is not Optional)."""
        limits.check_cluster_name(cluster)
        limits.check_broker_name(broker_name)
        if len(self.table) >= config.controllerHeartbeatMaxBrokers:
            raise limits.Refused("heartbeat_table_full", "this controller already hears %d brokers "
                                 "(controllerHeartbeatMaxBrokers)" % len(self.table))
        if len(self.by_connection.get(connection, ())) >= config.controllerHeartbeatMaxBrokersPerConnection:
            raise limits.Refused("heartbeat_connection_full", "this connection already beats for %d brokers "
                                 "(controllerHeartbeatMaxBrokersPerConnection)"
                                 % config.controllerHeartbeatMaxBrokersPerConnection)

    def beat(self, cluster: str, broker_name: str, address: str, broker_id: int, connection: Any,
             timeout_millis: Optional[int] = None, epoch: Optional[int] = None, max_offset: Optional[int] = None,
             confirm_offset: Optional[int] = None, election_priority: Optional[int] = None) -> None:
        """Record a beat. Epoch and offsets only move forward (a late beat must not make a stale
        replica look fresher than it is): as Java, they change when the epoch grows, or the offset
        grows within the same epoch. Outside the bounds: limits.Refused, and nothing is kept.

        A beat on another connection than the entry's moves the entry to it (Java keeps the first
        one, apache/rocketmq#11045: the old connection's late close then evicts a live master)."""
        key = (cluster, broker_name, broker_id)
        now = self.clock.seconds()
        info = self.table.get(key)
        if self.config is not None:
            limits.check_field(self.config, "brokerAddr", address)
            if info is None:
                self._check_new(self.config, cluster, broker_name, address, connection)
            timeout = limits.heartbeat_timeout(self.config, timeout_millis)
        else:
            timeout = limits.DEFAULT_TIMEOUT_MILLIS if timeout_millis is None else timeout_millis
        priority = LOWEST_PRIORITY if election_priority is None else election_priority
        epoch = NO_EPOCH if epoch is None else epoch
        max_offset = NO_OFFSET if max_offset is None else max_offset
        if info is None:
            info = self.table[key] = BrokerLiveInfo(
                cluster, broker_name, broker_id, address, now, timeout, connection, epoch, max_offset,
                NO_OFFSET if confirm_offset is None else confirm_offset, priority)
            self._bind(key, connection)
            self.deadlines.push(key, info)
            self._arm()
            self.log.info("controller: broker {name} id {id} at {addr} beats ({cluster})", name=broker_name,
                          id=broker_id, addr=address, cluster=cluster)
            return
        info.last_beat = now
        shorter = timeout < info.timeout_millis
        info.timeout_millis = timeout
        if shorter:
            self.deadlines.push(key, info)        # a deadline earlier than the one queued
            self._arm()
        info.election_priority = priority
        info.address = address
        if info.connection is not connection:
            self._unbind(key, info.connection)
            self._bind(key, connection)
            info.connection = connection
        if epoch > info.epoch or (epoch == info.epoch and max_offset > info.max_offset):
            info.epoch = epoch
            info.max_offset = max_offset
            info.confirm_offset = NO_OFFSET if confirm_offset is None else confirm_offset

    def _bind(self, key: BrokerKey, connection: Any) -> None:
        self.by_connection.setdefault(connection, set()).add(key)

    def _unbind(self, key: BrokerKey, connection: Any) -> None:
        keys = self.by_connection.get(connection)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self.by_connection[connection]

    def _forget(self, key: BrokerKey, info: BrokerLiveInfo) -> None:
        """Remove an entry; when most of the deadline queue is for entries gone, rebuild it, so that a closed
        connection's entries are given back now, not when their deadlines come."""
        del self.table[key]
        self._unbind(key, info.connection)
        if len(self.deadlines) > 2 * len(self.table) + 64:
            queue: DeadlineQueue[BrokerKey, BrokerLiveInfo] = DeadlineQueue()
            for live_key, live in self.table.items():
                queue.push(live_key, live)
            self.deadlines = queue

    def is_alive(self, cluster: Optional[str], broker_name: str, broker_id: int) -> bool:
        """Java's isBrokerActive, or a follower heard it lately (relayed.py). The cluster name is part of the
        key, as in Java; a controller-made request (an election after a death) carries none, so
        ``cluster=None`` matches any."""
        return self.live_info(cluster, broker_name, broker_id) is not None

    def live_info(self, cluster: Optional[str], broker_name: str, broker_id: int) -> Optional[BrokerLiveInfo]:
        """The broker's live entry (heard here first, else the freshest a follower relayed), or None."""
        now = self.clock.seconds()
        keys: Iterable[BrokerKey]
        if cluster is None:
            keys = {key for key in self.table if key[1:] == (broker_name, broker_id)}
            keys.update(key for key in self.relayed.table if key[1:] == (broker_name, broker_id))
        else:
            keys = ((cluster, broker_name, broker_id),)
        for key in sorted(keys):
            info = self._alive(key, now)
            if info is not None:
                return info
        return None

    def _alive(self, key: BrokerKey, now: float) -> Optional[BrokerLiveInfo]:
        info = self.table.get(key)
        if info is not None and info.alive_at(now):
            return info
        return self.relayed.freshest(key, now)

    def connection_closed(self, connection: Any) -> None:
        """The broker whose beats came on ``connection`` is gone (Java: onBrokerChannelClose), unless a follower
        heard it after this controller last did (only this link died: relayed.py)."""
        now = self.clock.seconds()
        for key in sorted(self.by_connection.get(connection, ()), key=repr):
            info = self.table.get(key)
            if info is not None and info.connection is connection:
                self._forget(key, info)
                if self.relayed.outlives_close(key, info.last_beat, now):
                    self.log.info("controller: connection of broker {name} id {id} ({addr}) closed; another "
                                  "controller hears it", name=info.broker_name, id=info.broker_id, addr=info.address)
                    continue
                self.log.info("controller: connection of broker {name} id {id} ({addr}) closed",
                              name=info.broker_name, id=info.broker_id, addr=info.address)
                self._inactive(info)

    def scan(self) -> int:
        """Forget brokers whose last beat is older than their timeout, closing their connections."""
        now = self.clock.seconds()
        expired = [(key, info) for key, info in self.table.items() if not info.alive_at(now)]
        return self._expire(expired) + self._relays_expired(self.relayed.sweep(now))

    def _expire_due(self) -> None:
        self._timer = None
        now = self.clock.seconds()
        self._expire(list(self.deadlines.pop_expired(now, self.table.get)))
        self._relays_expired(list(self.relayed.pop_expired(now)))
        self._arm()

    def _arm(self) -> None:
        """The timer at the earliest deadline queued (a little after, so that one wake-up takes several)."""
        if self.reactor is None:
            return
        heads = [h for h in (self.deadlines.next_deadline(), self.relayed.deadlines.next_deadline()) if h is not None]
        if not heads:
            return
        delay = max(0.0, min(heads) - self.clock.seconds()) + EXPIRY_GRANULARITY
        if self._timer is not None and self._timer.active():
            if self._timer.getTime() - self.reactor.seconds() <= delay:
                return
            self._timer.cancel()
        self._timer = self.reactor.callLater(delay, self._expire_due)

    def stop(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def _expire(self, expired: list[tuple[BrokerKey, BrokerLiveInfo]]) -> int:
        now = self.clock.seconds()
        for key, info in expired:
            if self.table.get(key) is not info:
                continue
            self._forget(key, info)
            self.log.warn("controller: broker {name} id {id} ({addr}) expired: no beat for {ms} ms",
                          name=info.broker_name, id=info.broker_id, addr=info.address, ms=info.timeout_millis)
            close = getattr(info.connection, "close", None)
            if close is not None:
                close()
            if self.relayed.freshest(key, now) is None:
                self._inactive(info)
        return len(expired)

    # -- beats other controllers heard (relay.py asks them, relayed.py keeps them) ----------------------
    def relayed_beat(self, member: str, key: BrokerKey, age_ms: int, timeout_millis: int, epoch: int, max_offset: int,
                     confirm_offset: int, priority: int) -> None:
        if self.relayed.beat(member, key, age_ms, timeout_millis, epoch, max_offset, confirm_offset, priority):
            self._arm()

    def relayed_gone(self, member: str, key: BrokerKey) -> None:
        """``member`` no longer hears ``key``: dead now, unless heard here or by another member."""
        info = self.relayed.gone(member, key)
        if info is not None and self._alive(key, self.clock.seconds()) is None:
            self._inactive(info)

    def _relays_expired(self, expired: list[tuple[BrokerKey, BrokerLiveInfo]]) -> int:
        now = self.clock.seconds()
        for key, info in expired:
            if self._alive(key, now) is None:
                self.log.warn("controller: broker {name} id {id} expired: no beat relayed by {member} for {ms} ms",
                              name=info.broker_name, id=info.broker_id, member=info.relayed_by,
                              ms=info.timeout_millis)
                self._inactive(info)
        return len(expired)

    def stale_keys(self, keys: Iterable[BrokerKey], after: float) -> list[BrokerKey]:
        """Those of ``keys`` not heard here for ``after`` seconds (what the leader asks its followers about)."""
        now = self.clock.seconds()
        return [key for key in keys if key not in self.table or now - self.table[key].last_beat > after]

    def heard(self, keys: Iterable[BrokerKey]) -> tuple[list[list[object]], list[list[object]]]:
        """(rows of beats heard here, keys not heard here) for ``keys``: what a follower answers the leader."""
        now = self.clock.seconds()
        rows: list[list[object]] = []
        gone: list[list[object]] = []
        for key in keys:
            info = self.table.get(key)
            if info is not None and info.alive_at(now):
                rows.append([key[0], key[1], key[2], int((now - info.last_beat) * 1000), info.timeout_millis,
                             info.epoch, info.max_offset, info.confirm_offset, info.election_priority])
            else:
                gone.append(list(key))
        return rows, gone

    def _inactive(self, info: BrokerLiveInfo) -> None:
        for listener in list(self.listeners):
            listener(info.cluster, info.broker_name, info.broker_id)

    def alive_count(self) -> int:
        now = self.clock.seconds()
        keys = set(self.table) | set(self.relayed.table)
        return sum(1 for key in keys if self._alive(key, now) is not None)
