import json
import types

import pytest
import pytest_twisted
from twisted.internet import reactor

from namesrv.config import NamesrvConfig
from namesrv.context import NamesrvContext
from namesrv.kvconfig import KVConfigManager
from namesrv.protocol.codec import decode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import HeaderFieldError, make_request
from processors.default import DefaultProcessor
from processors.kvconfig import KVConfigProcessor
from tests.vectors import vector

CONN = types.SimpleNamespace(peer="127.0.0.1:1", connection_id=1, close=lambda: None)


class Events:
    def __init__(self):
        self.events = []

    def emit(self, event, **fields):
        self.events.append((event, fields))


@pytest.fixture
def context(tmp_path):
    config = NamesrvConfig()
    config.update({"kvConfigPath": str(tmp_path / "kv.json"), "configStorePath": str(tmp_path / "ns.properties")})
    events = Events()
    kv = KVConfigManager(config.kvConfigPath, reactor=reactor, events=events)
    kv.load()
    return NamesrvContext(config=config, routes=None, kv=kv, reactor=reactor, events=events)


def java(name):
    return decode_frame(vector(name)[4:])


def same_answer(ours, theirs):
    assert (ours.code, ours.remark, ours.ext, ours.body, ours.opaque, ours.flag) == \
        (theirs.code, theirs.remark, theirs.ext, theirs.body, theirs.opaque, theirs.flag)


@pytest_twisted.inlineCallbacks
def test_captured_kv_conversation(context):
    kv = KVConfigProcessor(context)
    answer = yield kv.process_request(java("req_put_kv_json"), CONN)
    same_answer(answer, java("resp_put_kv_json"))
    same_answer(kv.process_request(java("req_get_kv_missing_json"), CONN), java("resp_get_kv_missing_json"))
    same_answer(kv.process_request(java("req_kvlist_json"), CONN), java("resp_kvlist_json"))


@pytest_twisted.inlineCallbacks
def test_put_get_delete(context):
    kv = KVConfigProcessor(context)
    put = make_request(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"})
    assert (yield kv.process_request(put, CONN)).code == ResponseCode.SUCCESS
    got = kv.process_request(make_request(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"}), CONN)
    assert got.ext == {"value": "v"}
    delete = make_request(RequestCode.DELETE_KV_CONFIG, {"namespace": "ns", "key": "k"})
    assert (yield kv.process_request(delete, CONN)).code == ResponseCode.SUCCESS
    listed = kv.process_request(make_request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"}), CONN)
    assert listed.code == ResponseCode.SUCCESS and json.loads(listed.body) == {"table": {}}
    missing = kv.process_request(make_request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "zz"}), CONN)
    assert (missing.code, missing.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: zz")
    assert ("kv_changed", {"op": "put", "namespace": "ns", "key": "k"}) in context.events.events


@pytest.mark.parametrize("ext, field", [({"key": "k", "value": "v"}, "namespace"),
                                        ({"namespace": "n", "value": "v"}, "key"),
                                        ({"namespace": "n", "key": "k"}, "value")])
def test_put_missing_field_is_an_error_naming_it(context, ext, field):
    with pytest.raises(HeaderFieldError, match="<%s>" % field):
        KVConfigProcessor(context).process_request(make_request(RequestCode.PUT_KV_CONFIG, ext), CONN)
    assert context.kv.table == {}


def test_get_config_lists_every_property(context):
    answer = DefaultProcessor(context).process_request(make_request(RequestCode.GET_NAMESRV_CONFIG), CONN)
    lines = answer.body.decode().splitlines()
    assert "listenPort=9876" in lines and "orderMessageEnable=false" in lines


@pytest_twisted.inlineCallbacks
def test_update_applies_live_and_persists(context, tmp_path):
    request = make_request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\nenableTopicList=false\n")
    answer = yield DefaultProcessor(context).process_request(request, CONN)
    assert answer.code == ResponseCode.SUCCESS
    assert context.config.orderMessageEnable is True and context.config.enableTopicList is False
    persisted = (tmp_path / "ns.properties").read_text().splitlines()
    assert "orderMessageEnable=true" in persisted and "enableTopicList=false" in persisted
    assert ("config_changed", {"key": "orderMessageEnable", "old": "false", "new": "true"}) in context.events.events


@pytest.mark.parametrize("key", ["kvConfigPath", "configStorePath", "configBlackList", "rocketmqHome", "aclEnable"])
def test_black_listed_keys_are_refused_and_nothing_changes(context, key):
    body = ("orderMessageEnable=true\n%s=/tmp/x\n" % key).encode()
    answer = DefaultProcessor(context).process_request(
        make_request(RequestCode.UPDATE_NAMESRV_CONFIG, body=body), CONN)
    assert (answer.code, answer.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    assert context.config.orderMessageEnable is False


def test_bad_value_is_refused_and_nothing_changes(context):
    body = b"orderMessageEnable=true\nscanNotActiveBrokerInterval=often\n"
    answer = DefaultProcessor(context).process_request(
        make_request(RequestCode.UPDATE_NAMESRV_CONFIG, body=body), CONN)
    assert answer.code == ResponseCode.SYSTEM_ERROR and "scanNotActiveBrokerInterval" in answer.remark
    assert context.config.orderMessageEnable is False


def test_empty_update_is_success(context):
    answer = DefaultProcessor(context).process_request(make_request(RequestCode.UPDATE_NAMESRV_CONFIG), CONN)
    assert answer.code == ResponseCode.SUCCESS
