"""REGISTER_BROKER JSON bodies decoded straight into typed records (msgspec), for the common case.

A 10,000-topic body is more than a megabyte: ``json.loads`` builds tens of thousands of dicts, strings and
ints, and the lenient reader then walks them again. msgspec parses the bytes directly into one record
per topic with Java's defaults for missing fields, in a fraction of the time
(bench/results/design-figures.md#registration-decoding).

The schema is strict on purpose: whatever it does not take exactly as a Java broker writes
it (numbers or booleans given as strings, floats, explicit nulls, fastjson's unquoted keys,
lone surrogates, empty names, non-string attribute values, a topic filed under another
name, static-topic mappings...) makes ``decode`` answer ``None``, and the caller runs the
lenient reader of ``bodies/decode.py``, which decides (and answers errors) exactly as before. So a
body is never read two different ways: it is either read here to the very values the lenient
reader would produce, or not read here at all.
"""

import time
from operator import attrgetter, ne
from typing import Annotated, Any, Dict, List, Optional, Union

import msgspec

from namesrv.routes import model
from namesrv.routes.model import DataVersion, RegisterBrokerBody, TopicConfigSerializeWrapper

_Name = Annotated[str, msgspec.Meta(min_length=1)]


class TopicConfigRecord(msgspec.Struct, rename="camel", gc=False):
    """A TopicConfig as decoded here: the same attributes and JSON shape as ``model.TopicConfig``.

    Not tracked by the cycle collector (``gc=False``): it holds strings, ints and a dict of
    strings only, and a registration makes tens of thousands of them.
    """

    topic_name: _Name
    read_queue_nums: int = model.DEFAULT_READ_QUEUE_NUMS
    write_queue_nums: int = model.DEFAULT_WRITE_QUEUE_NUMS
    perm: int = model.DEFAULT_PERM
    topic_filter_type: _Name = model.DEFAULT_TOPIC_FILTER_TYPE
    topic_sys_flag: int = model.DEFAULT_TOPIC_SYS_FLAG
    order: bool = model.DEFAULT_ORDER
    attributes: Optional[Dict[str, str]] = None

    # the model's, so the two kinds of record print and serialize alike
    __repr__ = model.TopicConfig.__repr__
    to_json = model.TopicConfig.to_json


class _DataVersion(msgspec.Struct, rename="camel", gc=False):
    timestamp: Optional[int] = None
    counter: Optional[int] = None
    state_version: Optional[int] = None


class _Wrapper(msgspec.Struct, rename="camel", gc=False):
    data_version: Optional[_DataVersion] = None
    topic_config_table: Optional[Dict[str, TopicConfigRecord]] = None
    # Static-topic mappings are rare and carry fastjson's bare integer keys: the lenient reader's.
    topic_queue_mapping_info_map: Any = None


class _Body(msgspec.Struct, rename="camel", gc=False):
    topic_config_serialize_wrapper: Optional[_Wrapper] = None
    filter_server_list: Union[List[str], None, msgspec.UnsetType] = msgspec.UNSET


_BODY = msgspec.json.Decoder(_Body)
_WRAPPER = msgspec.json.Decoder(_Wrapper)
_names = attrgetter("topic_name")


def _data_version(value: Optional[_DataVersion]) -> DataVersion:
    """Java's ``new DataVersion()`` for what is missing (now, 0, 0), like ``bodies.decode.data_version_from_json``."""
    if value is None:
        return DataVersion(int(time.time() * 1000), 0, 0)
    timestamp = value.timestamp
    return DataVersion(int(time.time() * 1000) if timestamp is None else timestamp,
                       value.counter or 0, value.state_version or 0)


def _wrapper(value: Optional[_Wrapper]) -> Optional[TopicConfigSerializeWrapper]:
    if value is None:
        return TopicConfigSerializeWrapper(_data_version(None))
    mappings = value.topic_queue_mapping_info_map
    if mappings is not None and (type(mappings) is not dict or mappings):
        return None   # 5.x brokers send an empty one; anything else is for the lenient reader
    table = value.topic_config_table
    if table is None:
        table = {}
    elif any(map(ne, table, map(_names, table.values()))):
        return None   # a topic filed under another key: the lenient reader re-keys it
    return TopicConfigSerializeWrapper(_data_version(value.data_version), table)


def decode_register_body(body: bytes) -> Optional[RegisterBrokerBody]:
    """A RegisterBrokerBody (version >= V3_0_11), or None: the lenient reader must decide."""
    try:
        value = _BODY.decode(body)
    except (msgspec.MsgspecError, ValueError, RecursionError):   # UnicodeDecodeError too
        return None
    wrapper = _wrapper(value.topic_config_serialize_wrapper)
    if wrapper is None:
        return None
    filters = value.filter_server_list
    return RegisterBrokerBody(wrapper, [] if filters is msgspec.UNSET else filters)


def decode_wrapper_body(body: bytes) -> Optional[RegisterBrokerBody]:
    """A legacy (pre-V3_0_11) body: the bare TopicConfigSerializeWrapper, or None as above."""
    try:
        value = _WRAPPER.decode(body)
    except (msgspec.MsgspecError, ValueError, RecursionError):   # UnicodeDecodeError too
        return None
    wrapper = _wrapper(value)
    return None if wrapper is None else RegisterBrokerBody(wrapper, None)
