"""KVConfigProcessor called directly, against the answers the Java 4.9.8 NameServer gave."""

import json

import pytest
import pytest_twisted
from twisted.internet import reactor
from zope.interface.verify import verifyObject

from namesrv.config import NamesrvConfig
from namesrv.context import NamesrvContext
from namesrv.interfaces import IRequestProcessor
from namesrv.kvconfig import KVConfigManager
from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode, SerializeType
from namesrv.protocol.command import HeaderFieldError, make_request
from processors.kvconfig import KVConfigProcessor
from tests.fakes import FakeConnection, RecordingEventLog
from tests.vectors import vector

CONN = FakeConnection("127.0.0.1:1")




@pytest.fixture
def context(tmp_path):
    config = NamesrvConfig()
    config.update({"kvConfigPath": str(tmp_path / "kv.json")})
    events = RecordingEventLog()
    kv = KVConfigManager(config.kvConfigPath, reactor=reactor, events=events)
    kv.load()
    return NamesrvContext(config=config, routes=None, kv=kv, reactor=reactor, events=events)


@pytest.fixture
def processor(context):
    return KVConfigProcessor(context)


def java(name):
    return decode_frame(vector(name)[4:])


def assert_same_answer(ours, theirs):
    """What a client sees: code, remark, ext, body (JSON compared as data), opaque, flag."""
    assert (ours.code, ours.remark, ours.ext, ours.opaque, ours.flag, ours.serialize_type) == \
        (theirs.code, theirs.remark, theirs.ext, theirs.opaque, theirs.flag, theirs.serialize_type)
    if theirs.body is None:
        assert ours.body is None
    else:
        assert json.loads(ours.body) == json.loads(theirs.body)


def request(code, **ext):
    return make_request(code, ext)


def test_provides_the_processor_interface(processor):
    assert verifyObject(IRequestProcessor, processor)
    assert processor.codes == {100, 101, 102, 219} and processor.reject_request(request(100)) is None


@pytest_twisted.inlineCallbacks
def test_captured_java_conversation(processor):
    answer = yield processor.process_request(java("req_put_kv_json"), CONN)
    assert_same_answer(answer, java("resp_put_kv_json"))
    assert_same_answer(processor.process_request(java("req_get_kv_missing_json"), CONN),
                       java("resp_get_kv_missing_json"))
    assert_same_answer(processor.process_request(java("req_kvlist_json"), CONN), java("resp_kvlist_json"))


def test_not_found_answer_carries_empty_ext_fields_on_the_wire(processor):
    answer = processor.process_request(java("req_get_kv_missing_json"), CONN)
    frame = encode_frame(answer)
    header = json.loads(frame[8:8 + (int.from_bytes(frame[4:8], "big") & 0xFFFFFF)])
    assert header["extFields"] == {} and header["code"] == ResponseCode.QUERY_NOT_FOUND


@pytest_twisted.inlineCallbacks
def test_put_get_delete_list(processor, context, tmp_path):
    put = request(RequestCode.PUT_KV_CONFIG, namespace="ns", key="k", value="v")
    answer = yield processor.process_request(put, CONN)
    assert (answer.code, answer.remark, answer.ext, answer.body) == (ResponseCode.SUCCESS, None, None, None)
    assert json.loads((tmp_path / "kv.json").read_text()) == {"configTable": {"ns": {"k": "v"}}}

    got = processor.process_request(request(RequestCode.GET_KV_CONFIG, namespace="ns", key="k"), CONN)
    assert (got.code, got.ext, got.remark) == (ResponseCode.SUCCESS, {"value": "v"}, None)
    listed = processor.process_request(request(RequestCode.GET_KVLIST_BY_NAMESPACE, namespace="ns"), CONN)
    assert listed.code == ResponseCode.SUCCESS and json.loads(listed.body) == {"table": {"k": "v"}}

    delete = request(RequestCode.DELETE_KV_CONFIG, namespace="ns", key="k")
    assert (yield processor.process_request(delete, CONN)).code == ResponseCode.SUCCESS
    again = yield processor.process_request(delete, CONN)  # deleting nothing still succeeds
    assert again.code == ResponseCode.SUCCESS
    gone = processor.process_request(request(RequestCode.GET_KV_CONFIG, namespace="ns", key="k"), CONN)
    assert (gone.code, gone.remark, gone.ext) == (ResponseCode.QUERY_NOT_FOUND,
                                                  "No config item, Namespace: ns Key: k", {})
    listed = processor.process_request(request(RequestCode.GET_KVLIST_BY_NAMESPACE, namespace="ns"), CONN)
    assert listed.code == ResponseCode.SUCCESS and json.loads(listed.body) == {"table": {}}
    missing = processor.process_request(request(RequestCode.GET_KVLIST_BY_NAMESPACE, namespace="zz"), CONN)
    assert (missing.code, missing.remark, missing.ext, missing.body) == \
        (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: zz", None, None)
    assert context.events.emitted == [("kv_changed", {"op": "put", "namespace": "ns", "key": "k"}),
                                      ("kv_changed", {"op": "delete", "namespace": "ns", "key": "k"})]


@pytest_twisted.inlineCallbacks
def test_answers_keep_the_request_serialize_type_and_opaque(processor):
    put = make_request(RequestCode.PUT_KV_CONFIG, {"namespace": "n", "key": "k", "value": "é"}, opaque=77,
                       serialize_type=SerializeType.ROCKETMQ)
    answer = yield processor.process_request(put, CONN)
    assert (answer.opaque, answer.serialize_type, answer.is_response) == (77, SerializeType.ROCKETMQ, True)
    get = make_request(RequestCode.GET_KV_CONFIG, {"namespace": "n", "key": "k"}, opaque=78)
    assert processor.process_request(get, CONN).ext == {"value": "é"}


@pytest_twisted.inlineCallbacks
def test_empty_value_is_a_value(processor):
    yield processor.process_request(request(RequestCode.PUT_KV_CONFIG, namespace="n", key="k", value=""), CONN)
    got = processor.process_request(request(RequestCode.GET_KV_CONFIG, namespace="n", key="k"), CONN)
    assert (got.code, got.ext) == (ResponseCode.SUCCESS, {"value": ""})


@pytest.mark.parametrize("code, ext, field", [
    (RequestCode.PUT_KV_CONFIG, {"key": "k", "value": "v"}, "namespace"),
    (RequestCode.PUT_KV_CONFIG, {"namespace": "n", "value": "v"}, "key"),
    (RequestCode.PUT_KV_CONFIG, {"namespace": "n", "key": "k"}, "value"),
    (RequestCode.PUT_KV_CONFIG, {"namespace": "", "key": "k", "value": "v"}, "namespace"),
    (RequestCode.GET_KV_CONFIG, {"namespace": "n"}, "key"),
    (RequestCode.GET_KV_CONFIG, {"key": "k"}, "namespace"),
    (RequestCode.DELETE_KV_CONFIG, {"namespace": "n"}, "key"),
    (RequestCode.DELETE_KV_CONFIG, None, "namespace"),
    (RequestCode.GET_KVLIST_BY_NAMESPACE, {}, "namespace"),
])
def test_missing_field_is_an_error_naming_it(processor, context, code, ext, field):
    with pytest.raises(HeaderFieldError, match="<%s>" % field):
        processor.process_request(make_request(code, ext), CONN)
    assert context.kv.table == {} and not context.kv.pending


@pytest_twisted.inlineCallbacks
def test_failed_write_answers_system_error_and_keeps_the_value(processor, context, tmp_path):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    context.kv = KVConfigManager(str(blocker / "kv.json"), reactor=reactor)
    answer = yield processor.process_request(
        request(RequestCode.PUT_KV_CONFIG, namespace="n", key="k", value="v"), CONN)
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark.startswith("kv config persist failed: ") and "file-not-dir" in answer.remark
    got = processor.process_request(request(RequestCode.GET_KV_CONFIG, namespace="n", key="k"), CONN)
    assert got.ext == {"value": "v"}
