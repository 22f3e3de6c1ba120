"""The values the route tables hold, named as in RocketMQ (TopicConfig, QueueData, BrokerData, ...).

Each class knows its fastjson shape (``to_json``: a dict with Java's field names, written
with sorted keys by ``namesrv.protocol.fastjson``). Classes use ``__slots__``: a NameServer holds
one QueueData per (topic, broker name), i.e. hundreds of thousands of them.
"""

import weakref

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


class _ValueEquality:
    """Equal when of the same class with equal ``_key()``; mutable, so unhashable."""

    __slots__ = ()

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None


class DataVersion:
    """A broker's topic-table version. Equality is 5.x's: stateVersion, timestamp and counter.

    4.x brokers send no stateVersion (read as 0), so they compare exactly as in 4.9.
    """

    __slots__ = ("timestamp", "counter", "state_version")

    def __init__(self, timestamp=0, counter=0, state_version=0):
        self.timestamp = timestamp
        self.counter = counter
        self.state_version = state_version

    def __eq__(self, other):
        if not isinstance(other, DataVersion):
            return NotImplemented
        return (self.state_version == other.state_version and self.timestamp == other.timestamp
                and self.counter == other.counter)

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    def __hash__(self):
        return hash((self.state_version, self.timestamp, self.counter))

    def __repr__(self):
        return "DataVersion(timestamp=%r, counter=%r, state_version=%r)" % (
            self.timestamp, self.counter, self.state_version)

    def to_json(self):
        return {"counter": self.counter, "stateVersion": self.state_version, "timestamp": self.timestamp}

    def as_event(self):
        """The shape the event log records."""
        return {"timestamp": self.timestamp, "counter": self.counter}


class TopicConfig:
    """One topic as a broker reports it (only the fields the NameServer uses are kept typed)."""

    __slots__ = ("topic_name", "read_queue_nums", "write_queue_nums", "perm", "topic_filter_type",
                 "topic_sys_flag", "order", "attributes")

    def __init__(self, topic_name, read_queue_nums=16, write_queue_nums=16, perm=PERM_READ | PERM_WRITE,
                 topic_filter_type="SINGLE_TAG", topic_sys_flag=0, order=False, attributes=None):
        self.topic_name = topic_name
        self.read_queue_nums = read_queue_nums
        self.write_queue_nums = write_queue_nums
        self.perm = perm
        self.topic_filter_type = topic_filter_type
        self.topic_sys_flag = topic_sys_flag
        self.order = order
        self.attributes = attributes

    def __repr__(self):
        return "TopicConfig(%r, %r, %r, perm=%r, sys_flag=%r)" % (
            self.topic_name, self.read_queue_nums, self.write_queue_nums, self.perm, self.topic_sys_flag)

    def to_json(self):
        return {"attributes": self.attributes, "order": self.order, "perm": self.perm,
                "readQueueNums": self.read_queue_nums, "topicFilterType": self.topic_filter_type,
                "topicName": self.topic_name, "topicSysFlag": self.topic_sys_flag,
                "writeQueueNums": self.write_queue_nums}


class QueueData(_ValueEquality):
    """One broker's queues of one topic.

    Stored instances are shared (``shared_queue_data``) and so never changed in place:
    a broker's topics mostly have identical queue settings, and one object for all of
    them is ~70 bytes less per (topic, broker) entry.
    """

    __slots__ = ("broker_name", "read_queue_nums", "write_queue_nums", "perm", "topic_sys_flag", "__weakref__")

    def __init__(self, broker_name, read_queue_nums=0, write_queue_nums=0, perm=0, topic_sys_flag=0):
        self.broker_name = broker_name
        self.read_queue_nums = read_queue_nums
        self.write_queue_nums = write_queue_nums
        self.perm = perm
        self.topic_sys_flag = topic_sys_flag

    @classmethod
    def from_topic_config(cls, broker_name, topic_config, perm=None):
        return cls(broker_name, topic_config.read_queue_nums, topic_config.write_queue_nums,
                   topic_config.perm if perm is None else perm, topic_config.topic_sys_flag)

    def copy(self):
        return QueueData(self.broker_name, self.read_queue_nums, self.write_queue_nums, self.perm,
                         self.topic_sys_flag)

    def _key(self):
        return (self.broker_name, self.read_queue_nums, self.write_queue_nums, self.perm, self.topic_sys_flag)

    def __repr__(self):
        return "QueueData(%r, read=%r, write=%r, perm=%r, sys_flag=%r)" % self._key()

    def to_json(self):
        return {"brokerName": self.broker_name, "perm": self.perm, "readQueueNums": self.read_queue_nums,
                "topicSysFlag": self.topic_sys_flag, "writeQueueNums": self.write_queue_nums}



_SHARED_QUEUE_DATA = weakref.WeakValueDictionary()


def shared_queue_data(queue_data):
    """The one stored QueueData equal to ``queue_data`` (it, if none is stored yet)."""
    key = queue_data._key()
    found = _SHARED_QUEUE_DATA.get(key)
    if found is None:
        _SHARED_QUEUE_DATA[key] = found = queue_data
    return found


class BrokerData(_ValueEquality):
    """A broker group: its name, cluster and ``broker_addrs`` (brokerId -> "ip:port").

    ``enable_acting_master`` is always written (5.x), ``zone_name`` only when set.
    """

    __slots__ = ("cluster", "broker_name", "broker_addrs", "zone_name", "enable_acting_master")

    def __init__(self, cluster, broker_name, broker_addrs=None, zone_name=None, enable_acting_master=False):
        self.cluster = cluster
        self.broker_name = broker_name
        self.broker_addrs = {} if broker_addrs is None else broker_addrs
        self.zone_name = zone_name
        self.enable_acting_master = enable_acting_master

    def copy(self):
        return BrokerData(self.cluster, self.broker_name, dict(self.broker_addrs), self.zone_name,
                          self.enable_acting_master)

    def min_broker_id(self):
        return min(self.broker_addrs) if self.broker_addrs else None

    def _key(self):
        return (self.cluster, self.broker_name, self.broker_addrs, self.zone_name, self.enable_acting_master)

    def __repr__(self):
        return "BrokerData(%r, %r, %r, zone=%r, acting=%r)" % self._key()

    def to_json(self):
        return {"brokerAddrs": self.broker_addrs, "brokerName": self.broker_name, "cluster": self.cluster,
                "enableActingMaster": self.enable_acting_master, "zoneName": self.zone_name}


class BrokerLiveInfo:
    """One registration's liveness: refreshed by registrations, QUERY_DATA_VERSION and heartbeats.

    ``last_update`` is in the manager clock's seconds. ``broker_name``/``broker_id`` remember
    which group member registered, so that closing the connection or expiry removes exactly
    that member (Java searches the tables for the address instead).
    """

    __slots__ = ("last_update", "heartbeat_timeout_millis", "data_version", "connection", "ha_server_addr",
                 "broker_name", "broker_id")

    def __init__(self, last_update, heartbeat_timeout_millis, data_version, connection, ha_server_addr,
                 broker_name=None, broker_id=None):
        self.last_update = last_update
        self.heartbeat_timeout_millis = heartbeat_timeout_millis
        self.data_version = data_version
        self.connection = connection
        self.ha_server_addr = ha_server_addr
        self.broker_name = broker_name
        self.broker_id = broker_id

    def deadline(self):
        return self.last_update + self.heartbeat_timeout_millis / 1000.0

    def __repr__(self):
        return "BrokerLiveInfo(last_update=%r, timeout=%r, %r, ha=%r, %r/%r)" % (
            self.last_update, self.heartbeat_timeout_millis, self.data_version, self.ha_server_addr,
            self.broker_name, self.broker_id)


class TopicConfigSerializeWrapper:
    """The topic table of a registration (Java's TopicConfigAndMappingSerializeWrapper).

    ``topic_config_table`` maps topic name -> TopicConfig; ``topic_queue_mapping_info_map``
    maps topic -> TopicQueueMappingInfo (kept as the parsed dict, re-emitted as is).
    """

    __slots__ = ("data_version", "topic_config_table", "topic_queue_mapping_info_map")

    def __init__(self, data_version=None, topic_config_table=None, topic_queue_mapping_info_map=None):
        self.data_version = DataVersion() if data_version is None else data_version
        self.topic_config_table = {} if topic_config_table is None else topic_config_table
        self.topic_queue_mapping_info_map = {} if topic_queue_mapping_info_map is None \
            else topic_queue_mapping_info_map


class RegisterBrokerBody:
    """A decoded REGISTER_BROKER body. ``filter_server_list`` None means "not given" (legacy body)."""

    __slots__ = ("topic_config_wrapper", "filter_server_list")

    def __init__(self, topic_config_wrapper=None, filter_server_list=None):
        self.topic_config_wrapper = TopicConfigSerializeWrapper() if topic_config_wrapper is None \
            else topic_config_wrapper
        self.filter_server_list = filter_server_list


class RegisterBrokerResult:
    """What register_broker tells the caller.

    - ``master_addr``/``ha_server_addr``: for a slave whose master is registered and live;
    - ``first``: no live entry existed for (cluster, brokerAddr) before (event ``broker_registered``);
    - ``changed``: the DataVersion differed from the stored one (or there was none);
    - ``stale``: refused by the stale-address guard (5.x answers SUCCESS, nothing stored);
    - ``min_broker_id_changed``: the group's smallest id went down (5.x NOTIFY_MIN_BROKER_ID_CHANGE).
    """

    __slots__ = ("master_addr", "ha_server_addr", "first", "changed", "stale", "min_broker_id_changed")

    def __init__(self, master_addr=None, ha_server_addr=None, first=False, changed=False, stale=False,
                 min_broker_id_changed=False):
        self.master_addr = master_addr
        self.ha_server_addr = ha_server_addr
        self.first = first
        self.changed = changed
        self.stale = stale
        self.min_broker_id_changed = min_broker_id_changed

    def __repr__(self):
        return "RegisterBrokerResult(master=%r, ha=%r, first=%r, changed=%r, stale=%r)" % (
            self.master_addr, self.ha_server_addr, self.first, self.changed, self.stale)


class RemovedBroker:
    """A broker registration removed because its connection closed or it expired.

    ``broker_name``/``broker_id`` are those it registered with. ``age_ms`` (expiry only) is
    the time since its last refresh; ``connection`` is what the caller should close.
    """

    __slots__ = ("cluster", "broker_name", "broker_id", "broker_addr", "age_ms", "connection")

    def __init__(self, cluster, broker_name, broker_id, broker_addr, age_ms=None, connection=None):
        self.cluster = cluster
        self.broker_name = broker_name
        self.broker_id = broker_id
        self.broker_addr = broker_addr
        self.age_ms = age_ms
        self.connection = connection

    def __repr__(self):
        return "RemovedBroker(%r, %r, %r, %r, age_ms=%r)" % (
            self.cluster, self.broker_name, self.broker_id, self.broker_addr, self.age_ms)


class TopicRouteData:
    """A route answer, built from copies: later table changes never alter it."""

    __slots__ = ("queue_datas", "broker_datas", "filter_server_table", "topic_queue_mapping_by_broker",
                 "order_topic_conf")

    def __init__(self, queue_datas=None, broker_datas=None, filter_server_table=None,
                 topic_queue_mapping_by_broker=None, order_topic_conf=None):
        self.queue_datas = [] if queue_datas is None else queue_datas
        self.broker_datas = [] if broker_datas is None else broker_datas
        self.filter_server_table = {} if filter_server_table is None else filter_server_table
        self.topic_queue_mapping_by_broker = topic_queue_mapping_by_broker
        self.order_topic_conf = order_topic_conf

    def broker_names(self):
        return sorted(bd.broker_name for bd in self.broker_datas)

    def to_json(self):
        return {"brokerDatas": self.broker_datas, "filterServerTable": self.filter_server_table,
                "orderTopicConf": self.order_topic_conf, "queueDatas": self.queue_datas,
                "topicQueueMappingByBroker": self.topic_queue_mapping_by_broker}
