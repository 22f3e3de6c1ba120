"""The typed REGISTER_BROKER decoder (register_json) against the lenient one (bodies): same values, always.

Bodies are generated with every quirk the lenient reader takes (numbers and booleans as
strings, floats, nulls, missing fields, fastjson's bare integer keys, duplicate keys, lone
surrogates, invalid UTF-8, keys that differ from topic names, static-topic mappings...) and
decoded both ways; a Java-shaped body must go through the typed decoder.
"""

import json
import time
from unittest import mock

import pytest
from hypothesis import given, settings, strategies as st

from namesrv.protocol.codec import decode_frame
from namesrv.routes import register_json
from namesrv.routes.bodies import decode
from namesrv.routes.bodies.decode import BodyDecodeError
from tests.vectors import vector, vector_names


NOW = 1_700_000_000.0


class Pairs(list):
    """A JSON object written from its (key, value) pairs: keys may repeat."""


def dump(value, ascii_only, spaced):
    """JSON text the way a broker could write it: int keys bare (fastjson), repeated keys kept."""
    comma, colon = (", ", ": ") if spaced else (",", ":")
    if isinstance(value, dict):
        value = Pairs(value.items())
    if isinstance(value, Pairs):
        items = []
        for key, item in value:
            key = str(key) if isinstance(key, int) else json.dumps(key, ensure_ascii=ascii_only)
            items.append(key + colon + dump(item, ascii_only, spaced))
        return "{" + comma.join(items) + "}"
    if isinstance(value, list):
        return "[" + comma.join(dump(item, ascii_only, spaced) for item in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def canonical(decoded):
    """Everything a decoded body holds, with types (True is not 1, 1.0 is not 1)."""
    wrapper = decoded.topic_config_wrapper
    version = wrapper.data_version
    topics = [(key, type(c.topic_name), repr(c.topic_name), repr(c.read_queue_nums), repr(c.write_queue_nums),
               repr(c.perm), repr(c.topic_filter_type), repr(c.topic_sys_flag), repr(c.order), repr(c.attributes))
              for key, c in wrapper.topic_config_table.items()]
    return (repr((version.timestamp, version.counter, version.state_version)), topics,
            repr(wrapper.topic_queue_mapping_info_map), repr(decoded.filter_server_list))


def decode_both(body, version):
    """``(typed-or-lenient answer, lenient answer)``, each a canonical value or the error text."""
    def run(decode):
        with mock.patch.object(time, "time", return_value=NOW):
            try:
                return canonical(decode())
            except BodyDecodeError as e:
                return "error: %s" % e
    return (run(lambda: decode.decode_register_broker_body(body, False, version)),
            run(lambda: decode.decode_lenient_register_body(body, version)))


# -- generated bodies ------------------------------------------------------------------

names = st.text(st.characters(codec="utf-8", exclude_characters='\x00'), min_size=1, max_size=8) | \
    st.sampled_from(["TopicA", "%RETRY%g", "rmq_sys_TRACE", "主题"])
quirky_text = st.text(max_size=4) | st.just("\ud800") | st.just("a\udc00b") | st.just("")
ints = st.integers(-2**31, 2**31 - 1) | st.integers(-2**70, 2**70)
quirky_number = st.one_of(ints.map(str), st.floats(allow_nan=True), st.integers(0, 9).map(float), st.none(),
                          st.booleans(), st.just(" 7 "), st.just([1]))


def maybe_quirky(good, quirky, one_in=12):
    """Mostly ``good``: a body is decoded by the typed reader only when every part of it is.

    The quirky draw is a middle value: hypothesis draws the edges of a range often."""
    return st.integers(0, one_in).flatmap(lambda n: quirky if n == one_in // 2 else good)


def field_values(one_in=40):
    return {
        "topicName": maybe_quirky(names, st.one_of(quirky_text, st.none(), ints), one_in),
        "readQueueNums": maybe_quirky(ints, quirky_number, one_in),
        "writeQueueNums": maybe_quirky(ints, quirky_number, one_in),
        "perm": maybe_quirky(st.integers(0, 15), quirky_number, one_in),
        "topicSysFlag": maybe_quirky(st.integers(0, 3), quirky_number, one_in),
        "order": maybe_quirky(st.booleans(), st.one_of(st.sampled_from(["true", "FALSE", "yes", 1, 0, None])), one_in),
        "topicFilterType": maybe_quirky(st.sampled_from(["SINGLE_TAG", "MULTI_TAG"]),
                                        st.one_of(st.sampled_from(["", None, 3]), quirky_text), one_in),
        "attributes": maybe_quirky(st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
                                   st.one_of(st.none(), st.just([]), st.just({"+a": 1}), st.just({1: "bare"}),
                                             st.just({"a": None})), one_in),
        "unknownField": st.one_of(st.none(), st.just({"x": [1, 2.5, "y"]}), st.just(1e300)),
    }


@st.composite
def topic_config(draw):
    fields = draw(st.lists(st.sampled_from(sorted(field_values())), unique=True, min_size=6))
    config = Pairs((name, draw(field_values()[name])) for name in fields)
    if draw(st.integers(0, 19)) == 0 and config:
        config.append(config[0])   # a repeated field: the last one counts
    return config


@st.composite
def topic_table(draw):
    table = Pairs()
    for config in draw(st.lists(topic_config(), min_size=1, max_size=5)):
        name = dict(config).get("topicName")
        choice = draw(st.integers(0, 23))
        if choice == 0:
            key = draw(ints)   # fastjson's bare key
        elif choice == 1 or not isinstance(name, str):
            key = draw(names)
        else:
            key = name
        table.append((key, config))
    if draw(st.integers(0, 19)) == 0:
        table.append((draw(names), None))
    if draw(st.integers(0, 19)) == 0 and table:
        table.append(table[0])
    return table


data_versions = maybe_quirky(
    st.fixed_dictionaries({"counter": ints, "timestamp": ints}, optional={"stateVersion": ints}),
    st.one_of(st.fixed_dictionaries({}, optional={"counter": maybe_quirky(ints, quirky_number),
                                                  "timestamp": maybe_quirky(ints, quirky_number),
                                                  "stateVersion": maybe_quirky(ints, quirky_number)}),
              st.none(), st.just([]), st.just("1")))

mapping = {"bname": "broker-a", "currIdMap": {0: 0, 1: 1}, "epoch": 3, "scope": "__global__", "topic": "S",
           "totalQueues": 2}
mapping_maps = maybe_quirky(st.sampled_from([{}, None]),
                            st.sampled_from([{"S": mapping}, {"S": None}, {"S": {"bname": 1}}, []]))


@st.composite
def wrapper(draw):
    parts = {"dataVersion": data_versions,
             "topicConfigTable": maybe_quirky(topic_table(), st.one_of(st.none(), st.just([]))),
             "topicQueueMappingInfoMap": mapping_maps, "mappingDataVersion": data_versions}
    fields = draw(st.lists(st.sampled_from(sorted(parts)), unique=True))
    if "topicConfigTable" not in fields and draw(maybe_quirky(st.just(True), st.just(False))):
        fields.append("topicConfigTable")
    return Pairs((name, draw(parts[name])) for name in fields)


filter_lists = maybe_quirky(st.lists(st.sampled_from(["127.0.0.1:50001", "", "x"]), max_size=2),
                            st.one_of(st.none(), st.just([1]), st.just("127.0.0.1:1")))


@st.composite
def register_body_text(draw):
    """(body bytes, request version)."""
    version = draw(st.sampled_from([36, 37, 401, 479]))
    if version < decode.VERSION_REGISTER_BODY:
        value = draw(maybe_quirky(wrapper(), st.one_of(st.none(), st.just([]))))
    else:
        fields = {"topicConfigSerializeWrapper": maybe_quirky(wrapper(), st.one_of(st.none(), st.just(7))),
                  "filterServerList": filter_lists}
        chosen = draw(st.lists(st.sampled_from(sorted(fields)), unique=True))
        if "topicConfigSerializeWrapper" not in chosen and draw(maybe_quirky(st.just(True), st.just(False))):
            chosen.append("topicConfigSerializeWrapper")
        value = draw(maybe_quirky(st.just(Pairs((name, draw(fields[name])) for name in chosen)),
                                  st.sampled_from([None, [], "body"])))
    text = dump(value, draw(st.booleans()), draw(st.booleans()))
    tail = draw(maybe_quirky(st.sampled_from(["", "\n"]), st.sampled_from([" x", "}"])))
    return (text + tail).encode("utf-8", "surrogatepass"), version


@settings(max_examples=300, deadline=None)
@given(register_body_text())
def test_typed_and_lenient_decoders_agree_on_generated_bodies(case):
    body, version = case
    typed_or_lenient, lenient = decode_both(body, version)
    assert typed_or_lenient == lenient


# -- bodies as Java brokers write them: the typed decoder must take them -------------------

java_configs = st.builds(
    lambda name, read, write, perm, flag, order, attributes: {
        "order": order, "perm": perm, "readQueueNums": read, "topicFilterType": "SINGLE_TAG", "topicName": name,
        "topicSysFlag": flag, "writeQueueNums": write, **({} if attributes is None else {"attributes": attributes})},
    names, st.integers(0, 1024), st.integers(0, 1024), st.integers(0, 7), st.integers(0, 3), st.booleans(),
    st.one_of(st.none(), st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=2)))


@st.composite
def java_body(draw):
    configs = draw(st.lists(java_configs, max_size=6, unique_by=lambda c: c["topicName"]))
    wrapper_value = {"dataVersion": {"counter": draw(st.integers(0, 2**40)), "timestamp": draw(st.integers(0, 2**42))},
                     "topicConfigTable": {c["topicName"]: c for c in configs}}
    if draw(st.booleans()):   # 5.x: TopicConfigAndMappingSerializeWrapper's empty maps
        wrapper_value["dataVersion"]["stateVersion"] = draw(st.integers(0, 9))
        wrapper_value.update(mappingDataVersion={"counter": 0, "stateVersion": 0, "timestamp": 1},
                             topicQueueMappingDetailMap={}, topicQueueMappingInfoMap={})
    value = {"filterServerList": draw(st.lists(st.just("127.0.0.1:50001"), max_size=1)),
             "topicConfigSerializeWrapper": wrapper_value}
    return dump(value, draw(st.booleans()), False).encode("utf-8")


@settings(max_examples=200, deadline=None)
@given(java_body())
def test_java_shaped_bodies_take_the_typed_path_and_agree(body):
    assert register_json.decode_register_body(body) is not None
    typed_or_lenient, lenient = decode_both(body, 401)
    assert typed_or_lenient == lenient


def test_quirks_fall_back_to_the_lenient_reader():
    quirky = [
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{"topicName":"A","perm":"6"}}}}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{"topicName":"A","readQueueNums":8.0}}}}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{"readQueueNums":8}}}}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{"topicName":"B"}}}}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{"topicName":"A\\ud800"}}}}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":null}}}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{1:{"topicName":"A"}}}}',
        b'{"topicConfigSerializeWrapper":{"dataVersion":{"counter":"2"}}}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{"topicName":"A","topicFilterType":""}}}}',
    ]
    for body in quirky:
        assert register_json.decode_register_body(body) is None, body
        typed_or_lenient, lenient = decode_both(body, 401)
        assert typed_or_lenient == lenient and isinstance(typed_or_lenient, tuple), body
    decoded = decode.decode_register_broker_body(quirky[0])
    assert decoded.topic_config_wrapper.topic_config_table["A"].perm == 6
    decoded = decode.decode_register_broker_body(quirky[4])
    assert list(decoded.topic_config_wrapper.topic_config_table) == ["A?"]   # Java writes "?" for it
    decoded = decode.decode_register_broker_body(quirky[-1])
    assert decoded.topic_config_wrapper.topic_config_table["A"].topic_filter_type == "SINGLE_TAG"


def test_errors_are_the_lenient_readers():
    for body, text in [(b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{"topicName":""}}}}',
                        "without a topic name"),
                       (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"":{"topicName":""}}}}',
                        "without a topic name"),
                       (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"A":{"perm":true}}}}',
                        "perm is not a number"),
                       (b"null", "RegisterBrokerBody is null"),
                       (b'{"filterServerList":[1]}', "filterServerList"),
                       (b"\xff{}", "not valid JSON")]:
        typed_or_lenient, lenient = decode_both(body, 401)
        assert typed_or_lenient == lenient
        assert isinstance(typed_or_lenient, str) and text in typed_or_lenient


def test_defaults_and_absent_parts_match_java():
    decoded = register_json.decode_register_body(b'{"topicConfigSerializeWrapper":{"topicConfigTable":'
                                                 b'{"A":{"topicName":"A"}}}}')
    config = decoded.topic_config_wrapper.topic_config_table["A"]
    assert config.to_json() == {"attributes": None, "order": False, "perm": 6, "readQueueNums": 16,
                                "topicFilterType": "SINGLE_TAG", "topicName": "A", "topicSysFlag": 0,
                                "writeQueueNums": 16}
    assert decoded.filter_server_list == []
    assert register_json.decode_register_body(b'{"filterServerList":null}').filter_server_list is None
    assert decode_both(b'{"filterServerList":null}', 401)[0] == decode_both(b'{"filterServerList":null}', 401)[1]


def test_captured_java_registrations_take_the_typed_path():
    checked = 0
    for name in vector_names():
        if not name.startswith("req_register"):
            continue
        request = decode_frame(vector(name)[4:])
        if request.get_bool("compressed", False) or request.serialize_type != 0:
            continue
        assert register_json.decode_register_body(request.body) is not None, name
        typed_or_lenient, lenient = decode_both(request.body, request.version)
        assert typed_or_lenient == lenient, name
        checked += 1
    if checked == 0:
        vector("req_register_plain_json")   # skips when the vectors are absent
    assert checked >= 1


# -- end to end through the route processor: the same answers, byte for byte ---------------------

def _processor():
    from tests.processors.world import route_world

    world = route_world(timer=lambda: 0.0)
    return world.processor, world.conn, world.events


def test_typed_and_lenient_registrations_answer_the_same_bytes():
    from namesrv.protocol.codec import encode_frame
    from namesrv.protocol.codes import RequestCode, Version
    from namesrv.protocol.command import make_request
    from tests.brokers import crc32, route_request

    configs = {"T%04d" % i: {"order": i % 5 == 0, "perm": 6 if i % 3 else 4, "readQueueNums": 4 + i % 2,
                             "topicFilterType": "SINGLE_TAG", "topicName": "T%04d" % i, "topicSysFlag": i % 2,
                             "writeQueueNums": 4, "attributes": {"+message.type": "NORMAL"}}
               for i in range(300)}
    typed = json.dumps({"filterServerList": ["127.0.0.1:50001"],
                        "topicConfigSerializeWrapper": {"dataVersion": {"counter": 3, "timestamp": 1700000000000},
                                                        "topicConfigTable": configs}}).encode()
    # the same registration with fastjson-era quirks: numbers as strings, a bare integer key
    quirky = typed.replace(b'"readQueueNums": 4,', b'"readQueueNums": "4",').replace(
        b'"counter": 3', b'"counter": "3"').replace(b'"filterServerList"', b'"x":{1:2},"filterServerList"')
    assert register_json.decode_register_body(typed) is not None
    assert register_json.decode_register_body(quirky) is None
    answers, emitted = [], []
    for body in (typed, quirky):
        processor, conn, events = _processor()
        ext = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "c1",
               "haServerAddr": "127.0.0.1:10912", "brokerId": "0", "compressed": "false", "bodyCrc32": str(crc32(body))}
        requests = [make_request(RequestCode.REGISTER_BROKER, ext, body=body, version=Version.V4_9_8)]
        requests += [route_request(t, version=v) for t in ("T0000", "T0001", "T0299") for v in (Version.V4_9_8, 401)]
        requests += [make_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}),
                     make_request(RequestCode.GET_BROKER_CLUSTER_INFO, {})]
        answers.append([encode_frame(processor.process_request(r, conn)) for r in requests])
        emitted.append([(name, {k: v for k, v in fields.items() if k != "bodyBytes"})
                        for name, fields in events.emitted])
    assert answers[0] == answers[1]
    assert emitted[0] == emitted[1]   # the bodies' sizes differ, nothing else
    assert len(answers[0]) == 9 and b"T0299" in answers[0][-2]


def test_a_body_nested_too_deep_is_left_to_the_lenient_reader():
    body = b'{"topicConfigSerializeWrapper":{"topicQueueMappingInfoMap":' + b"[" * 5000 + b"]" * 5000 + b"}}"
    assert register_json.decode_register_body(body) is None
    with pytest.raises(RecursionError):   # as before: the registry answers SYSTEM_ERROR
        decode.decode_lenient_register_body(body, 401)
