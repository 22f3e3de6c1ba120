"""Request bodies of the route requests (protocol bodies.md §3-§10), decoded.

Decoding is lenient where fastjson is (unknown fields ignored, missing fields take the
Java defaults, numbers given as strings accepted) and strict where Java fails (a body
that is not JSON, a truncated compressed stream): those raise ``BodyDecodeError``.
"""

from __future__ import annotations

import operator
import struct
import time
import zlib
from typing import Any, Optional, Union

from namesrv.codec import fastjson
from namesrv.routes import register_json
from namesrv.routes.model import (
    DEFAULT_ORDER, DEFAULT_PERM, DEFAULT_READ_QUEUE_NUMS, DEFAULT_TOPIC_FILTER_TYPE, DEFAULT_TOPIC_SYS_FLAG,
    DEFAULT_WRITE_QUEUE_NUMS, DataVersion, MappingInfo, QueueData, RegisterBrokerBody, TopicConfig,
    TopicConfigSerializeWrapper)

#: REGISTER_BROKER bodies switch from the bare wrapper to RegisterBrokerBody here (V3_0_11).
VERSION_REGISTER_BODY = 37
#: Compressed bodies carry the static-topic mapping section from V5_0_0 on.
VERSION_MAPPING_SECTION = 413
#: A compressed body may not inflate beyond this (a 16 MiB frame of deflated zeros would
#: otherwise become gigabytes).
MAX_INFLATED_BYTES = 256 * 1024 * 1024

FILTER_TYPES = frozenset(["SINGLE_TAG", "MULTI_TAG"])
_INT = struct.Struct(">i")


class BodyDecodeError(ValueError):
    """A request body that cannot be decoded; the request changes nothing."""


def crc32(body: Optional[bytes]) -> int:
    """RocketMQ's ``UtilAll.crc32``: zlib CRC32 with the top bit cleared; an absent body is 0."""
    if not body:
        return 0
    return zlib.crc32(body) & 0x7FFFFFFF


# -- small typed readers ------------------------------------------------------------

def _int(value: object, default: int, name: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool):
        raise BodyDecodeError("%s is not a number: %r" % (name, value))
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise BodyDecodeError("%s is not a number: %r" % (name, value))


def _bool(value: object, default: bool, name: str) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if isinstance(value, int):
        return value != 0
    raise BodyDecodeError("%s is not a boolean: %r" % (name, value))


def _str(value: object, name: str) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise BodyDecodeError("%s is not a string: %r" % (name, value))


def _object(value: object, name: str) -> Optional[dict[Any, Any]]:   # a decoded JSON object: free-form
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BodyDecodeError("%s is not an object" % name)
    return value


def _json(data: Union[bytes, str], what: str) -> Any:   # decoded JSON: every reader here checks its shape
    try:
        return fastjson.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise BodyDecodeError("%s is not valid JSON: %s" % (what, e))


# -- DataVersion --------------------------------------------------------------------

def data_version_from_json(value: object, name: str = "dataVersion") -> DataVersion:
    """A DataVersion from its JSON object; a missing one is Java's ``new DataVersion()`` (now, 0)."""
    value = _object(value, name)
    if value is None:
        return DataVersion(int(time.time() * 1000), 0, 0)
    return DataVersion(
        timestamp=_int(value.get("timestamp"), int(time.time() * 1000), name + ".timestamp"),
        counter=_int(value.get("counter"), 0, name + ".counter"),
        state_version=_int(value.get("stateVersion"), 0, name + ".stateVersion"))


def decode_data_version(body: Optional[bytes]) -> Optional[DataVersion]:
    """QUERY_DATA_VERSION's body; ``None`` when absent (5.x then answers changed=true)."""
    if not body:
        return None
    return data_version_from_json(_json(body, "DataVersion"))


# -- TopicConfig / wrapper ----------------------------------------------------------

#: the fields a Java broker always writes, read in one C call
_TOPIC_FIELDS = operator.itemgetter("topicName", "readQueueNums", "writeQueueNums", "perm", "topicSysFlag", "order",
                                    "topicFilterType")


def topic_config_from_json(value: object, key: Optional[str] = None) -> TopicConfig:
    """One TopicConfig from its JSON object (10,000s per registration: the well-typed case is inlined)."""
    if type(value) is dict:
        try:
            name, read, write, perm, sys_flag, order, filter_type = _TOPIC_FIELDS(value)
        except KeyError:   # a field left out: Java's defaults
            get = value.get
            name = get("topicName")
            read, write = get("readQueueNums", DEFAULT_READ_QUEUE_NUMS), get("writeQueueNums", DEFAULT_WRITE_QUEUE_NUMS)
            perm, sys_flag = get("perm", DEFAULT_PERM), get("topicSysFlag", DEFAULT_TOPIC_SYS_FLAG)
            order, filter_type = get("order", DEFAULT_ORDER), get("topicFilterType", DEFAULT_TOPIC_FILTER_TYPE)
        attributes = value.get("attributes")
        if (type(name) is str and name and type(read) is int and type(write) is int and type(perm) is int
                and type(sys_flag) is int and type(order) is bool and type(filter_type) is str and filter_type
                and (attributes is None or type(attributes) is dict)):
            return TopicConfig(name, read, write, perm, filter_type, sys_flag, order, attributes)
    return _topic_config_checked(value, key)


def _topic_config_checked(value: object, key: Optional[str]) -> TopicConfig:
    """Any other shape: numbers as strings or floats, missing names, bad types (a clear error)."""
    value = _object(value, "topicConfig %r" % key)
    assert value is not None   # the callers skip null entries
    name = _str(value.get("topicName"), "topicName")
    if name is None:
        name = key  # Java would file it under a null topic; the table key is what was meant
    if not name:
        raise BodyDecodeError("topic config without a topic name")
    attributes = value.get("attributes")
    if attributes is not None and not isinstance(attributes, dict):
        attributes = None
    return TopicConfig(
        name,
        read_queue_nums=_int(value.get("readQueueNums"), DEFAULT_READ_QUEUE_NUMS, "readQueueNums"),
        write_queue_nums=_int(value.get("writeQueueNums"), DEFAULT_WRITE_QUEUE_NUMS, "writeQueueNums"),
        perm=_int(value.get("perm"), DEFAULT_PERM, "perm"),
        topic_filter_type=_str(value.get("topicFilterType"), "topicFilterType") or DEFAULT_TOPIC_FILTER_TYPE,
        topic_sys_flag=_int(value.get("topicSysFlag"), DEFAULT_TOPIC_SYS_FLAG, "topicSysFlag"),
        order=_bool(value.get("order"), DEFAULT_ORDER, "order"),
        attributes=attributes)


def topic_config_from_text(text: str) -> TopicConfig:
    """The compressed form ``"<name> <read> <write> <perm> <filterType>[ <attributes JSON>]"``.

    The text carries neither topicSysFlag nor order (both decode as 0/false). Like 5.x we
    accept 5 or more parts and ignore attributes that do not parse.
    """
    parts = text.split(" ")
    while parts and parts[-1] == "":
        parts.pop()  # Java's split drops trailing empty strings
    if len(parts) < 5:
        raise BodyDecodeError("bad topic config text %r" % text)
    name, read_text, write_text, perm_text, filter_type = parts[:5]
    if not name:
        raise BodyDecodeError("bad topic config text %r" % text)
    if filter_type not in FILTER_TYPES:
        raise BodyDecodeError("bad topicFilterType in %r" % text)
    try:
        read, write, perm = int(read_text), int(write_text), int(perm_text)
    except ValueError:
        raise BodyDecodeError("bad number in topic config text %r" % text)
    attributes = None
    if len(parts) >= 6:
        try:
            parsed = fastjson.loads(parts[5])
            attributes = parsed if isinstance(parsed, dict) else None
        except ValueError:
            attributes = None
    return TopicConfig(name, read, write, perm, filter_type, DEFAULT_TOPIC_SYS_FLAG, DEFAULT_ORDER, attributes)


def mapping_info_from_json(value: object, name: str = "topicQueueMappingInfo") -> MappingInfo:
    """A TopicQueueMappingInfo kept as its dict, with ``currIdMap`` keys made ints (fastjson writes them bare)."""
    value = _object(value, name)
    if value is None:
        raise BodyDecodeError("%s is null" % name)
    info = dict(value)
    ids = info.get("currIdMap")
    if isinstance(ids, dict):
        try:
            info["currIdMap"] = {int(k): v for k, v in ids.items()}
        except (TypeError, ValueError):
            raise BodyDecodeError("%s.currIdMap has a non-numeric key" % name)
    if not isinstance(info.get("bname"), str):
        raise BodyDecodeError("%s has no bname" % name)
    return info


def wrapper_from_json(value: object) -> TopicConfigSerializeWrapper:
    value = _object(value, "topicConfigSerializeWrapper")
    if value is None:
        return TopicConfigSerializeWrapper(data_version_from_json(None))
    table = {}
    raw_table = _object(value.get("topicConfigTable"), "topicConfigTable") or {}
    for key, raw in raw_table.items():
        if raw is None:
            continue
        config = topic_config_from_json(raw, key if type(key) is str else str(key))
        table[config.topic_name] = config
    mappings = {}
    raw_mappings = _object(value.get("topicQueueMappingInfoMap"), "topicQueueMappingInfoMap") or {}
    for topic, raw in raw_mappings.items():
        if raw is not None:
            mappings[str(topic)] = mapping_info_from_json(raw)
    return TopicConfigSerializeWrapper(data_version_from_json(value.get("dataVersion")), table, mappings)


def _filter_servers(value: object) -> Optional[list[str]]:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BodyDecodeError("filterServerList is not a list of strings")
    return list(value)


# -- RegisterBrokerBody -------------------------------------------------------------

def decode_register_broker_body(body: Optional[bytes], compressed: bool = False, version: int = VERSION_REGISTER_BODY,
                                max_inflated: int = MAX_INFLATED_BYTES) -> RegisterBrokerBody:
    """Decode a REGISTER_BROKER body the way the request ``version`` says (requests.md 103).

    An absent body is an empty table with DataVersion (0, 0, 0). A JSON body is read by
    ``register_json`` when it is exactly as Java brokers write it, else by the lenient reader
    below (same values either way; only the lenient reader answers errors).
    """
    if version < VERSION_REGISTER_BODY:
        if not body:
            return RegisterBrokerBody(TopicConfigSerializeWrapper(DataVersion(0, 0, 0)), None)
        return register_json.decode_wrapper_body(body) or decode_lenient_register_body(body, version)
    if not body:
        return RegisterBrokerBody(TopicConfigSerializeWrapper(DataVersion(0, 0, 0)), [])
    if compressed:
        return decode_compressed_register_body(body, version >= VERSION_MAPPING_SECTION, max_inflated)
    return register_json.decode_register_body(body) or decode_lenient_register_body(body, version)


def decode_lenient_register_body(body: bytes, version: int = VERSION_REGISTER_BODY) -> RegisterBrokerBody:
    """A non-empty JSON REGISTER_BROKER body through ``fastjson.loads``: every quirk fastjson accepts."""
    if version < VERSION_REGISTER_BODY:
        return RegisterBrokerBody(wrapper_from_json(_json(body, "TopicConfigSerializeWrapper")), None)
    value = _object(_json(body, "RegisterBrokerBody"), "RegisterBrokerBody")
    if value is None:
        raise BodyDecodeError("RegisterBrokerBody is null")
    filters = value["filterServerList"] if "filterServerList" in value else []  # explicit null: "not given"
    return RegisterBrokerBody(wrapper_from_json(value.get("topicConfigSerializeWrapper")), _filter_servers(filters))


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def int32(self, what: str) -> int:
        if self.pos + 4 > len(self.data):
            raise BodyDecodeError("compressed body truncated reading %s" % what)
        (value,) = _INT.unpack_from(self.data, self.pos)
        self.pos += 4
        return value

    def chunk(self, what: str) -> bytes:
        length = self.int32(what + " length")
        if length < 0 or self.pos + length > len(self.data):
            raise BodyDecodeError("compressed body truncated reading %s" % what)
        value = self.data[self.pos:self.pos + length]
        self.pos += length
        return value


def _inflate(body: bytes, limit: int = MAX_INFLATED_BYTES) -> bytes:
    """Inflate at most ``limit`` bytes: a small "zip bomb" body must not take the server's memory."""
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(body, limit)
    except zlib.error as e:
        raise BodyDecodeError("compressed body is not a zlib stream: %s" % e)
    if inflater.unconsumed_tail:
        raise BodyDecodeError("compressed body inflates beyond %d bytes" % limit)
    return data  # a truncated stream yields what it holds; the reader then reports what is missing


def decode_compressed_register_body(body: bytes, with_mapping_section: bool = False,
                                    max_inflated: int = MAX_INFLATED_BYTES) -> RegisterBrokerBody:
    """bodies.md §4.2: a zlib stream of int32-length-prefixed parts."""
    reader = _Reader(_inflate(body, max_inflated))
    data_version = data_version_from_json(_json(reader.chunk("DataVersion"), "DataVersion"))
    count = reader.int32("topic count")
    if count < 0:
        raise BodyDecodeError("negative topic count %d" % count)
    table = {}
    for _ in range(count):
        raw = reader.chunk("topic config")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BodyDecodeError("topic config text is not UTF-8")
        config = topic_config_from_text(text)
        table[config.topic_name] = config
    raw_filters = reader.chunk("filterServerList")
    try:
        filters = _filter_servers(fastjson.loads(raw_filters))
    except (ValueError, BodyDecodeError):
        filters = []  # Java logs and goes on with an empty list
    if filters is None:
        filters = []
    mappings: dict[str, MappingInfo] = {}
    if with_mapping_section:
        for _ in range(max(0, reader.int32("mapping count"))):
            info = mapping_info_from_json(_json(reader.chunk("mapping"), "TopicQueueMappingInfo"))
            mappings[info.get("topic")] = info   # type: ignore[index]   # no "topic": filed under None, as read
    return RegisterBrokerBody(TopicConfigSerializeWrapper(data_version, table, mappings), filters)


# -- REGISTER_TOPIC_IN_NAMESRV --------------------------------------------------------

def decode_queue_datas(body: bytes) -> list[QueueData]:
    """REGISTER_TOPIC_IN_NAMESRV's TopicRouteData body; only ``queueDatas`` is used."""
    value = _object(_json(body, "TopicRouteData"), "TopicRouteData")
    if value is None:
        return []
    raw = value.get("queueDatas")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BodyDecodeError("queueDatas is not a list")
    result = []
    for item in raw:
        item = _object(item, "queueData")
        if item is None:
            continue
        # a queueData without brokerName keeps None there: register_topic then stores nothing (no BrokerData has it)
        result.append(QueueData(
            _str(item.get("brokerName"), "brokerName"),   # type: ignore[arg-type]
            _int(item.get("readQueueNums"), 0, "readQueueNums"),
            _int(item.get("writeQueueNums"), 0, "writeQueueNums"),
            _int(item.get("perm"), 0, "perm"),
            _int(item.get("topicSysFlag"), 0, "topicSysFlag")))
    return result
