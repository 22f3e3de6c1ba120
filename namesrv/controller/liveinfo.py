"""What a controller knows of one live broker (Java's BrokerLiveInfo), heard directly or relayed."""

from dataclasses import dataclass
from typing import Any, Optional

#: Java's defaults for fields a beat leaves out
NO_EPOCH = -1
NO_OFFSET = -1
LOWEST_PRIORITY = 2 ** 31 - 1


@dataclass
class BrokerLiveInfo:
    cluster: str
    broker_name: str
    broker_id: int
    address: str
    last_beat: float
    timeout_millis: int
    connection: Any             # the broker's connection (heartbeats.py closes it when it expires); None: relayed
    epoch: int = NO_EPOCH
    max_offset: int = NO_OFFSET
    confirm_offset: int = NO_OFFSET
    election_priority: int = LOWEST_PRIORITY
    #: the controller whose beat this is, when another one heard it (relayed.py); None: heard here
    relayed_by: Optional[str] = None

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.cluster, self.broker_name, self.broker_id)

    def alive_at(self, now: float) -> bool:
        return now - self.last_beat <= self.timeout_millis / 1000.0

    def deadline(self) -> float:
        return self.last_beat + self.timeout_millis / 1000.0
