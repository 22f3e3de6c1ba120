"""The values the route tables hold, named as in RocketMQ (TopicConfig, QueueData, BrokerData, ...).

Each class knows its fastjson shape (``to_json``: a dict with Java's field names, written
with sorted keys by ``namesrv.codec.fastjson``). Classes are ``attrs`` classes with
slots (and no weak-reference slot, but for the shared QueueData): a NameServer holds one
QueueData per (topic, broker name), i.e. hundreds of thousands of them, and a registration
decodes one TopicConfig per topic. Values compared by value (DataVersion, QueueData, BrokerData) say so
(``eq=True``); the others are compared by identity, like the Java objects they stand for.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any, Mapping, Optional, Protocol

import attr

if TYPE_CHECKING:   # types only
    from namesrv.interfaces import IRemotingConnection

#: a live entry's key: (cluster, brokerAddr)
LiveKey = tuple[str, str]
#: a TopicQueueMappingInfo, kept as the decoded JSON object and re-emitted as is (free-form: Java's fields)
MappingInfo = dict[str, Any]

MASTER_ID = 0
PERM_PRIORITY = 8
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1
FLAG_UNIT = 1
FLAG_UNIT_SUB = 2
DEFAULT_HEARTBEAT_TIMEOUT_MILLIS = 120000
SYNC_BROKER_MEMBER_GROUP_PREFIX = "rmq_sys_SYNC_BROKER_MEMBER_"
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"

# Java's TopicConfig defaults: what a field a broker leaves out is read as (TopicConfig and
# every body decoder use these).
DEFAULT_READ_QUEUE_NUMS = 16
DEFAULT_WRITE_QUEUE_NUMS = 16
DEFAULT_PERM = PERM_READ | PERM_WRITE
DEFAULT_TOPIC_FILTER_TYPE = "SINGLE_TAG"
DEFAULT_TOPIC_SYS_FLAG = 0
DEFAULT_ORDER = False


@attr.s(slots=True, weakref_slot=False, unsafe_hash=True)
class DataVersion:
    """A broker's topic-table version. Equality is 5.x's: stateVersion, timestamp and counter.

    4.x brokers send no stateVersion (read as 0), so they compare exactly as in 4.9.
    """

    timestamp: int = attr.ib(default=0)
    counter: int = attr.ib(default=0)
    state_version: int = attr.ib(default=0)

    def to_json(self) -> dict[str, int]:
        return {"counter": self.counter, "stateVersion": self.state_version, "timestamp": self.timestamp}

    def as_event(self) -> dict[str, int]:
        """The shape the event log records."""
        return {"timestamp": self.timestamp, "counter": self.counter}


@attr.s(slots=True, weakref_slot=False, eq=False)
class TopicConfig:
    """One topic as a broker reports it (only the fields the NameServer uses are kept typed)."""

    topic_name: str = attr.ib()
    read_queue_nums: int = attr.ib(default=DEFAULT_READ_QUEUE_NUMS)
    write_queue_nums: int = attr.ib(default=DEFAULT_WRITE_QUEUE_NUMS)
    perm: int = attr.ib(default=DEFAULT_PERM)
    topic_filter_type: str = attr.ib(default=DEFAULT_TOPIC_FILTER_TYPE)
    topic_sys_flag: int = attr.ib(default=DEFAULT_TOPIC_SYS_FLAG)
    order: bool = attr.ib(default=DEFAULT_ORDER)
    attributes: Optional[dict[str, Any]] = attr.ib(default=None)   # decoded JSON, written back as is

    def to_json(self) -> dict[str, object]:
        return {"attributes": self.attributes, "order": self.order, "perm": self.perm,
                "readQueueNums": self.read_queue_nums, "topicFilterType": self.topic_filter_type,
                "topicName": self.topic_name, "topicSysFlag": self.topic_sys_flag,
                "writeQueueNums": self.write_queue_nums}


class TopicSettings(Protocol):
    """What the tables read of a broker's topic: a TopicConfig or a register_json.TopicConfigRecord."""

    @property
    def topic_name(self) -> str: ...
    @property
    def read_queue_nums(self) -> int: ...
    @property
    def write_queue_nums(self) -> int: ...
    @property
    def perm(self) -> int: ...
    @property
    def topic_sys_flag(self) -> int: ...


@attr.s(slots=True, weakref_slot=True)
class QueueData:
    """One broker's queues of one topic (equal by value; mutable, so unhashable).

    Stored instances are shared (``shared_queue_data``) and so never changed in place:
    a broker's topics mostly have identical queue settings, and one object for all of
    them is ~70 bytes less per (topic, broker) entry.
    """

    broker_name: str = attr.ib()
    read_queue_nums: int = attr.ib(default=0)
    write_queue_nums: int = attr.ib(default=0)
    perm: int = attr.ib(default=0)
    topic_sys_flag: int = attr.ib(default=0)

    @classmethod
    def from_topic_config(cls, broker_name: str, topic_config: TopicSettings, perm: Optional[int] = None) -> QueueData:
        return cls(broker_name, topic_config.read_queue_nums, topic_config.write_queue_nums,
                   topic_config.perm if perm is None else perm, topic_config.topic_sys_flag)

    def copy(self) -> QueueData:
        return QueueData(self.broker_name, self.read_queue_nums, self.write_queue_nums, self.perm,
                         self.topic_sys_flag)

    def _key(self) -> tuple[str, int, int, int, int]:
        return (self.broker_name, self.read_queue_nums, self.write_queue_nums, self.perm, self.topic_sys_flag)

    def to_json(self) -> dict[str, object]:
        return {"brokerName": self.broker_name, "perm": self.perm, "readQueueNums": self.read_queue_nums,
                "topicSysFlag": self.topic_sys_flag, "writeQueueNums": self.write_queue_nums}


_SHARED_QUEUE_DATA: weakref.WeakValueDictionary[tuple[str, int, int, int, int], QueueData] = \
    weakref.WeakValueDictionary()


def shared_queue_data(queue_data: QueueData) -> QueueData:
    """The one stored QueueData equal to ``queue_data`` (it, if none is stored yet)."""
    key = queue_data._key()
    found = _SHARED_QUEUE_DATA.get(key)
    if found is None:
        _SHARED_QUEUE_DATA[key] = found = queue_data
    return found


@attr.s(slots=True, weakref_slot=False)
class BrokerData:
    """A broker group: its name, cluster and ``broker_addrs`` (brokerId -> "ip:port"); equal by value,
    mutable, so unhashable.

    ``enable_acting_master`` is always written (5.x), ``zone_name`` only when set.
    """

    cluster: str = attr.ib()
    broker_name: str = attr.ib()
    broker_addrs: dict[int, str] = attr.ib(factory=dict)
    zone_name: Optional[str] = attr.ib(default=None)
    enable_acting_master: bool = attr.ib(default=False)

    def copy(self) -> BrokerData:
        return BrokerData(self.cluster, self.broker_name, dict(self.broker_addrs), self.zone_name,
                          self.enable_acting_master)

    def min_broker_id(self) -> Optional[int]:
        return min(self.broker_addrs) if self.broker_addrs else None

    def to_json(self) -> dict[str, object]:
        return {"brokerAddrs": self.broker_addrs, "brokerName": self.broker_name, "cluster": self.cluster,
                "enableActingMaster": self.enable_acting_master, "zoneName": self.zone_name}


@attr.s(slots=True, weakref_slot=False, eq=False)
class BrokerLiveInfo:
    """One registration's liveness: refreshed by registrations, QUERY_DATA_VERSION and heartbeats.

    ``last_update`` is in the manager clock's seconds. ``broker_name``/``broker_id`` remember
    which group member registered, so that closing the connection or expiry removes exactly
    that member (Java searches the tables for the address instead).
    """

    last_update: float = attr.ib()
    heartbeat_timeout_millis: int = attr.ib()
    data_version: DataVersion = attr.ib()
    connection: Optional[IRemotingConnection] = attr.ib(repr=False)
    ha_server_addr: Optional[str] = attr.ib()
    broker_name: Optional[str] = attr.ib(default=None)
    broker_id: Optional[int] = attr.ib(default=None)

    def deadline(self) -> float:
        return self.last_update + self.heartbeat_timeout_millis / 1000.0


@attr.s(slots=True, weakref_slot=False, eq=False, repr=False)
class TopicConfigSerializeWrapper:
    """The topic table of a registration (Java's TopicConfigAndMappingSerializeWrapper).

    ``topic_config_table`` maps topic name -> TopicConfig; ``topic_queue_mapping_info_map``
    maps topic -> TopicQueueMappingInfo (kept as the parsed dict, re-emitted as is).
    """

    data_version: DataVersion = attr.ib(factory=DataVersion)
    topic_config_table: Mapping[str, TopicSettings] = attr.ib(factory=dict)
    topic_queue_mapping_info_map: dict[str, MappingInfo] = attr.ib(factory=dict)


@attr.s(slots=True, weakref_slot=False, eq=False, repr=False)
class RegisterBrokerBody:
    """A decoded REGISTER_BROKER body. ``filter_server_list`` None means "not given" (legacy body)."""

    topic_config_wrapper: TopicConfigSerializeWrapper = attr.ib(factory=TopicConfigSerializeWrapper)
    filter_server_list: Optional[list[str]] = attr.ib(default=None)


@attr.s(slots=True, weakref_slot=False, eq=False)
class RegisterBrokerResult:
    """What register_broker tells the caller.

    - ``master_addr``/``ha_server_addr``: for a slave whose master is registered and live;
    - ``first``: no live entry existed for (cluster, brokerAddr) before (event ``broker_registered``);
    - ``changed``: the DataVersion differed from the stored one (or there was none);
    - ``stale``: refused by the stale-address guard (5.x answers SUCCESS, nothing stored);
    - ``min_broker_id_changed``: the group's smallest id went down (5.x NOTIFY_MIN_BROKER_ID_CHANGE);
    - ``became_master``: this registration made its address the group's brokerId 0 here (none or another
      address was before), at the master epoch ``master_epoch`` (its stateVersion): event ``route_master_changed``.
    """

    master_addr: Optional[str] = attr.ib(default=None)
    ha_server_addr: Optional[str] = attr.ib(default=None)
    first: bool = attr.ib(default=False)
    changed: bool = attr.ib(default=False)
    stale: bool = attr.ib(default=False)
    min_broker_id_changed: bool = attr.ib(default=False)
    became_master: bool = attr.ib(default=False)
    master_epoch: Optional[int] = attr.ib(default=None)


@attr.s(slots=True, frozen=True)
class MinBrokerIdChange:
    """A group's lowest registered id changed: what 5.x's RouteInfoManager tells the group's brokers with
    NOTIFY_MIN_BROKER_ID_CHANGE (905) when ``notifyMinBrokerIdChanged`` is on, and whom (``notify``).

    A registration with a lower id than the group had: ``ha_broker_addr`` is its HA address, and every
    other member is told (the one registering too when it is alone). A removal of the lowest id from a
    group that allows acting masters (``enableActingMaster``) and keeps members: ``offline_broker_addr``
    is the removed address, and every remaining member is told."""

    broker_name: str = attr.ib()
    min_broker_id: int = attr.ib()
    min_broker_addr: str = attr.ib()
    offline_broker_addr: Optional[str] = attr.ib(default=None)
    ha_broker_addr: Optional[str] = attr.ib(default=None)
    notify: tuple[str, ...] = attr.ib(factory=tuple)


@attr.s(slots=True, weakref_slot=False, eq=False)
class RemovedBroker:
    """A broker registration removed because its connection closed or it expired.

    ``broker_name``/``broker_id`` are those it registered with. ``age_ms`` (expiry only) is
    the time since its last refresh; ``connection`` is what the caller should close.
    """

    cluster: str = attr.ib()
    broker_name: Optional[str] = attr.ib()
    broker_id: Optional[int] = attr.ib()
    broker_addr: str = attr.ib()
    age_ms: Optional[int] = attr.ib(default=None)
    connection: Optional[IRemotingConnection] = attr.ib(default=None, repr=False)


@attr.s(slots=True, weakref_slot=False, eq=False, repr=False)
class TopicRouteData:
    """A route answer, built from copies: later table changes never alter it."""

    queue_datas: list[QueueData] = attr.ib(factory=list)
    broker_datas: list[BrokerData] = attr.ib(factory=list)
    filter_server_table: dict[str, list[str]] = attr.ib(factory=dict)
    topic_queue_mapping_by_broker: Optional[dict[str, MappingInfo]] = attr.ib(default=None)
    order_topic_conf: Optional[str] = attr.ib(default=None)

    def broker_names(self) -> list[str]:
        return sorted(bd.broker_name for bd in self.broker_datas)

    def to_json(self) -> dict[str, object]:
        return {"brokerDatas": self.broker_datas, "filterServerTable": self.filter_server_table,
                "orderTopicConf": self.order_topic_conf, "queueDatas": self.queue_datas,
                "topicQueueMappingByBroker": self.topic_queue_mapping_by_broker}
