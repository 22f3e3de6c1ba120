"""The leader asks its followers about the brokers it has not heard lately (apache/rocketmq#10812).

Java's controllers each keep the beats they hear, and only the leader's count: a broker whose beats
reach only followers is dead to the leader. In that bug (a broker that dropped the leader from the
addresses it beats to, which apache/rocketmq#9845's dying scan thread also causes) a slave could never
rejoin the in-sync set; a master whose beats reach only followers is replaced while it serves. Here such a
broker is kept alive, and the broker itself is not told anything (5.3.3 brokers send heartbeats
one-way and read no answer, so telling them where the leader is would change nothing).

Every ``RELAY_INTERVAL`` the leader sends each follower a note (the member link: authenticated, msgpack)
``{"want": [[cluster, brokerName, brokerId], ...]}`` naming the brokers of its groups it has not heard for
``WANT_AFTER`` seconds; each follower answers at once ``{"beats": [[cluster, brokerName, brokerId, ageMs,
timeoutMs, epoch, maxOffset, confirmOffset, electionPriority], ...], "gone": [[cluster, brokerName,
brokerId], ...]}``: what it hears of them itself (an age, never a time: no clocks compared), and those it
does not hear either. The leader keeps the beats (relayed.py). While the leader hears every broker, nothing
is sent: a healthy group costs no traffic. A note that does not fit this schema is dropped and counted.
"""

from typing import TYPE_CHECKING, Any

from twisted.logger import Logger

from namesrv.controller import limits
from namesrv.controller.heartbeats import BrokerHeartbeats
from namesrv.controller.relayed import BrokerKey
from namesrv.controller.state import ReplicaState
from namesrv.protocol.ratelimited import RateLimitedWarning

if TYPE_CHECKING:   # types only
    from namesrv.config.live import NamesrvConfig
    from namesrv.controller.replication.raft import RaftLog

#: a relayed beat: (cluster, brokerName, brokerId, ageMs, timeoutMs, epoch, maxOffset, confirmOffset, priority)
BeatRow = tuple[str, str, int, int, int, int, int, int, int]

#: seconds between the leader's questions
RELAY_INTERVAL = 0.5
#: a broker not heard for this long is asked about (brokers beat every second: two beats missed)
WANT_AFTER = 2.0
_INT_FIELDS = 6


class LivenessRelay:
    log = Logger()

    def __init__(self, heartbeats: BrokerHeartbeats, state: ReplicaState, replicated: "RaftLog",
                 config: "NamesrvConfig") -> None:
        self.heartbeats = heartbeats
        self.state = state
        self.replicated = replicated
        self.config = config
        self.asked = 0          # questions sent (one per follower per tick with something to ask)
        self.answered = 0       # answers sent
        self.relayed = 0        # beats taken from answers
        self.bad = 0            # notes refused
        self._warn = RateLimitedWarning(self.log, limit=5, window=60.0)
        replicated.note_listeners.append(self.received)
        replicated.role_listeners.append(self._role_changed)

    def tick(self) -> int:
        """The leader: ask every follower about the brokers it has not heard lately."""
        if not self.replicated.is_leader:
            return 0
        keys = [(group.cluster, name, broker_id) for name, group in sorted(self.state.groups.items())
                for broker_id in sorted(group.brokers)]
        want = self.heartbeats.stale_keys(keys, WANT_AFTER)[:self.config.controllerHeartbeatMaxBrokers]
        if not want:
            return 0
        note = {"want": [list(key) for key in want]}
        for peer in sorted(self.replicated.peers):
            if peer != self.replicated.self_id and self.replicated.send_note(peer, note):
                self.asked += 1
        return len(want)

    def received(self, peer: str, body: Any) -> None:
        """A note from ``peer`` (Any: decoded msgpack, checked here against the notes' schema)."""
        try:
            if not isinstance(body, dict):
                raise ValueError("a note is a map")
            if "want" in body:
                self._answer(peer, self._keys(body["want"]))
            else:
                self._take(peer, self._rows(body.get("beats", [])), self._keys(body.get("gone", [])))
        except (ValueError, TypeError, KeyError, limits.Refused) as e:
            self.bad += 1
            self._warn.warn("controller: a liveness note from member {peer} dropped: {why}", peer=peer, why=e)

    def _answer(self, peer: str, keys: list[BrokerKey]) -> None:
        if self.replicated.is_leader:
            return          # a deposed leader still asking: this one leads, nobody answers it
        rows, gone = self.heartbeats.heard(keys)
        if self.replicated.send_note(peer, {"beats": rows, "gone": gone}):
            self.answered += 1

    def _take(self, peer: str, rows: list[BeatRow], gone: list[BrokerKey]) -> None:
        if not self.replicated.is_leader:
            return
        for cluster, broker_name, broker_id, age, timeout, epoch, max_offset, confirm_offset, priority in rows:
            self.heartbeats.relayed_beat(peer, (cluster, broker_name, broker_id), age, timeout, epoch, max_offset,
                                         confirm_offset, priority)
            self.relayed += 1
        for key in gone:
            self.heartbeats.relayed_gone(peer, key)

    def _role_changed(self, leading: bool) -> None:
        if not leading:
            self.heartbeats.relayed.clear()

    # -- the notes' schema ----------------------------------------------------------------------------
    def _bounded(self, items: Any) -> list[Any]:
        if not isinstance(items, list) or len(items) > self.config.controllerHeartbeatMaxBrokers:
            raise ValueError("not a list of at most controllerHeartbeatMaxBrokers entries")
        return items

    def _keys(self, items: Any) -> list[BrokerKey]:
        return [self._key(item) for item in self._bounded(items)]

    def _key(self, item: Any) -> BrokerKey:
        if not isinstance(item, list) or len(item) != 3 or not _is_int(item[2]):
            raise ValueError("a broker is [cluster, brokerName, brokerId]")
        return (limits.check_cluster_name(item[0]), limits.check_broker_name(item[1]), item[2])

    def _rows(self, items: Any) -> list[BeatRow]:
        rows: list[BeatRow] = []
        for item in self._bounded(items):
            if not isinstance(item, list) or len(item) != 3 + _INT_FIELDS or not all(map(_is_int, item[3:])):
                raise ValueError("a beat is [cluster, brokerName, brokerId, ageMs, timeoutMs, epoch, maxOffset, "
                                 "confirmOffset, electionPriority]")
            rows.append(self._key(item[:3]) + tuple(item[3:]))
        return rows


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -2 ** 63 <= value < 2 ** 63
