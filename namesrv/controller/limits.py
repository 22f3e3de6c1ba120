"""What a client may make the controller keep: names Java would accept, bounded fields and counts.

Java's controller keeps whatever arrives: a heartbeat with a new key is a new entry for as long as
the sender's own timeout says, and an apply-broker-id with a new broker name is a new group in
the replicated, durable state of every member, for ever. Here every such input is checked first,
and a refusal is an answer (never a dropped connection) counted by reason (``Refusals``), for the
metrics (``rocketmq_namesrv_controller_refused_requests``).

Names follow Java's own rule for names that become topics (``TopicValidator``: ``[%|a-zA-Z0-9_-]``,
at most 127 characters): a 5.x broker makes a topic named after its cluster (``clusterTopicEnable``)
and one named ``rmq_sys_SYNC_BROKER_MEMBER_`` + its broker name, so a name that would not make a
valid topic belongs to no working broker. Addresses and check codes are bounded by
``controllerMaxFieldLength``; the counts and the heartbeat timeout by the properties read here at
each request (a runtime update takes effect at once).
"""

import re
from collections import Counter
from typing import TYPE_CHECKING, Optional

from namesrv.protocol.codes import ResponseCode

if TYPE_CHECKING:   # types only
    from twisted.internet.interfaces import IReactorTime
    from twisted.logger import Logger

    from namesrv.config.live import NamesrvConfig

#: Java TopicValidator.VALID_CHAR_BIT_MAP: ^[%|a-zA-Z0-9_-]+$
_NAME = re.compile(r"[%|a-zA-Z0-9_-]+\Z")
#: Java's DEFAULT_BROKER_CHANNEL_EXPIRED_TIME: a heartbeat without a timeout of its own (unbounded tables)
DEFAULT_TIMEOUT_MILLIS = 120000
#: TopicValidator.TOPIC_MAX_LENGTH: a cluster name is a topic of its own
MAX_CLUSTER_NAME = 127
#: the broker's topic rmq_sys_SYNC_BROKER_MEMBER_<brokerName> must stay a valid topic
MAX_BROKER_NAME = 127 - len("rmq_sys_SYNC_BROKER_MEMBER_")


class Refused(ValueError):
    """A request outside the controller's bounds: ``reason`` labels the metric, ``code`` and the message are
    the answer."""

    def __init__(self, reason: str, remark: str, code: int = ResponseCode.CONTROLLER_INVALID_REQUEST) -> None:
        ValueError.__init__(self, remark)
        self.reason = reason
        self.code = int(code)


class Refusals:
    """Requests refused by the bounds, by reason (a metric family), with a log line per reason and
    peer at most once a minute."""

    def __init__(self, clock: "IReactorTime", log: "Logger", every: float = 60.0) -> None:
        self.counts: Counter[str] = Counter()
        self.clock = clock
        self.log = log
        self.every = every
        self._logged: dict[tuple[str, Optional[str]], float] = {}

    def refused(self, refusal: Refused, peer: Optional[str] = None) -> None:
        self.counts[refusal.reason] += 1
        now = self.clock.seconds()
        key = (refusal.reason, peer)
        last = self._logged.get(key)
        if last is None or now - last >= self.every:
            if len(self._logged) > 4096:          # the log's own memory stays bounded too
                self._logged.clear()
            self._logged[key] = now
            self.log.warn("controller: request from {peer} refused ({reason}): {remark}", peer=peer,
                          reason=refusal.reason, remark=str(refusal)[:300])


def check_name(field: str, value: object, longest: int) -> str:
    """``value`` as a broker or cluster name Java's brokers could have, else Refused naming ``field``."""
    if not isinstance(value, str) or not value:
        raise Refused("bad_name", "%s is empty" % field)
    if len(value) > longest:
        raise Refused("bad_name", "%s is %d characters long; at most %d (it must stay a valid topic name)"
                      % (field, len(value), longest))
    if not _NAME.match(value):
        raise Refused("bad_name", "%s contains characters a topic name may not: allowing only ^[%%|a-zA-Z0-9_-]+$"
                      % field)
    return value


def check_broker_name(value: object) -> str:
    return check_name("brokerName", value, MAX_BROKER_NAME)


def check_cluster_name(value: object) -> str:
    return check_name("clusterName", value, MAX_CLUSTER_NAME)


def check_field(config: "NamesrvConfig", field: str, value: Optional[str]) -> Optional[str]:
    """An address or check code no longer than ``controllerMaxFieldLength``."""
    longest = config.controllerMaxFieldLength
    if value is not None and len(value) > longest:
        raise Refused("field_too_long", "%s is %d characters long; at most %d (controllerMaxFieldLength)"
                      % (field, len(value), longest))
    return value


def heartbeat_timeout(config: "NamesrvConfig", asked: Optional[int]) -> int:
    """The broker's heartbeat timeout in ms, clamped to [controllerHeartbeatTimeoutMinMillis,
    controllerHeartbeatTimeoutMaxMillis]; a beat without one gets the largest (Java's 120 s default)."""
    low, high = config.controllerHeartbeatTimeoutMinMillis, config.controllerHeartbeatTimeoutMaxMillis
    high = max(low, high)
    return high if asked is None else min(high, max(low, asked))
