"""DefaultProcessor (GET/UPDATE_NAMESRV_CONFIG) called directly."""


import pytest
import pytest_twisted
from twisted.internet import defer, reactor
from zope.interface.verify import verifyObject

from namesrv.config import NamesrvConfig
from namesrv.context import NamesrvContext
from namesrv.interfaces import IRequestProcessor
from namesrv.config.properties import parse_properties
from namesrv.protocol.codec import decode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from processors.default import DefaultProcessor
from tests.fakes import FakeConnection, RecordingEventLog
from tests.vectors import vector

CONN = FakeConnection("127.0.0.1:1")

#: The keys the captured 4.9.8 GET_NAMESRV_CONFIG answer listed (shared/vectors/README.md).
JAVA_4_9_8_KEYS = ("clusterTest configBlackList configStorePath kvConfigPath listenPort orderMessageEnable "
                   "productEnvName rocketmqHome serverAsyncSemaphoreValue serverCallbackExecutorThreads "
                   "serverChannelMaxIdleTimeSeconds serverOnewaySemaphoreValue serverPooledByteBufAllocatorEnable "
                   "serverSelectorThreads serverSocketBacklog serverSocketRcvBufSize serverSocketSndBufSize "
                   "serverWorkerThreads useEpollNativeSelector writeBufferHighWaterMark "
                   "writeBufferLowWaterMark").split()




@pytest.fixture
def store(tmp_path):
    return tmp_path / "namesrv.properties"


@pytest.fixture
def context(tmp_path, store):
    config = NamesrvConfig()
    config.update({"kvConfigPath": str(tmp_path / "kv.json"), "configStorePath": str(store)})
    return NamesrvContext(config=config, routes=None, kv=None, reactor=reactor, events=RecordingEventLog())


@pytest.fixture
def processor(context):
    return DefaultProcessor(context)


def update(processor, body):
    return processor.process_request(make_request(RequestCode.UPDATE_NAMESRV_CONFIG, body=body), CONN)


def test_provides_the_processor_interface(processor):
    assert verifyObject(IRequestProcessor, processor)
    assert processor.codes == {318, 319}


def test_get_config_lists_every_property_sorted(processor, context):
    request = decode_frame(vector("req_namesrv_config_json")[4:])
    answer = processor.process_request(request, CONN)
    assert (answer.code, answer.opaque, answer.flag, answer.remark) == (ResponseCode.SUCCESS, 4006, 1, None)
    text = answer.body.decode("utf-8")
    keys = [line.split("=", 1)[0] for line in text.splitlines()]
    assert keys == sorted(keys) and set(JAVA_4_9_8_KEYS) <= set(keys)
    listed = parse_properties(text)
    assert listed["listenPort"] == "9876" and listed["orderMessageEnable"] == "false"
    assert listed == parse_properties(context.config.to_properties_text())


@pytest_twisted.inlineCallbacks
def test_update_applies_live_persists_and_reports(processor, context, store):
    answer = yield update(processor, b"# from mqadmin\norderMessageEnable=true\nenableTopicList = false\n"
                                     b"waitSecondsForService=45\n")
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)
    assert context.config.orderMessageEnable is True and context.config.enableTopicList is False
    persisted = parse_properties(store.read_text())
    assert persisted == parse_properties(context.config.to_properties_text())
    assert persisted["orderMessageEnable"] == "true" and persisted["enableTopicList"] == "false"
    assert sorted(context.events.emitted, key=lambda e: e[1]["key"]) == [
        ("config_changed", {"key": "enableTopicList", "old": "true", "new": "false"}),
        ("config_changed", {"key": "orderMessageEnable", "old": "false", "new": "true"}),
    ]
    got = processor.process_request(make_request(RequestCode.GET_NAMESRV_CONFIG), CONN)
    assert "orderMessageEnable=true" in got.body.decode().splitlines()


@pytest_twisted.inlineCallbacks
def test_concurrent_updates_leave_the_latest_config_on_disk(processor, context, store):
    answers = yield defer.gatherResults([update(processor, b"waitSecondsForService=%d\n" % n) for n in range(10)])
    assert {a.code for a in answers} == {ResponseCode.SUCCESS}
    assert parse_properties(store.read_text())["waitSecondsForService"] == "9"


@pytest.mark.parametrize("key", ["kvConfigPath", "configStorePath", "configBlackList", "rocketmqHome", "aclEnable"])
def test_black_listed_keys_are_refused_and_nothing_changes(processor, context, store, key):
    answer = update(processor, ("orderMessageEnable=true\n%s=/tmp/x\n" % key).encode())
    assert answer.code == ResponseCode.NO_PERMISSION
    assert answer.remark.startswith("Can not update config in black list. Refused keys: %s " % key)
    assert answer.remark.endswith("(configBlackList); set them in the -c properties file and restart.")
    assert context.config.orderMessageEnable is False and not store.exists() and context.events.emitted == []


def test_configured_black_list_entries_are_refused(tmp_path):
    config = NamesrvConfig()
    config.update({"configBlackList": "listenPort", "configStorePath": str(tmp_path / "p")})
    answer = update(DefaultProcessor(NamesrvContext(config, None, None, reactor)), b"listenPort=1\n")
    assert answer.code == ResponseCode.NO_PERMISSION and config.listenPort == 9876


def test_bad_value_is_refused_naming_the_key_and_nothing_changes(processor, context, store):
    answer = update(processor, b"orderMessageEnable=true\nscanNotActiveBrokerInterval=often\n")
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert "scanNotActiveBrokerInterval" in answer.remark and "often" in answer.remark
    assert context.config.orderMessageEnable is False and not store.exists() and context.events.emitted == []


def test_unparseable_body_is_a_system_error(processor, context):
    answer = update(processor, b"productEnvName=\\u12\n")
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark.startswith("string2Properties error")
    answer = update(processor, b"productEnvName=\xff\n")
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark.startswith("string2Properties error")
    assert context.config.productEnvName == "center"


@pytest.mark.parametrize("body", [None, b"", b"# only a comment\n\n"])
def test_nothing_to_update_is_success_and_writes_nothing(processor, context, store, body):
    answer = update(processor, body)
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)
    assert not store.exists() and context.events.emitted == []


@pytest_twisted.inlineCallbacks
def test_unknown_keys_are_ignored_like_java_but_known_extras_update(tmp_path):
    config_file = tmp_path / "n.properties"
    config_file.write_text("myExtra=1\n")
    config = NamesrvConfig()
    config.load_file(str(config_file))
    events = RecordingEventLog()
    processor = DefaultProcessor(NamesrvContext(config, None, None, reactor, events))
    answer = yield update(processor, b"typoKey=1\nmyExtra=2\n")
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, "unknown keys ignored: typoKey")
    assert "typoKey" not in config and config.get("myExtra") == "2"
    persisted = parse_properties(config_file.read_text())  # the -c file is the configStorePath
    assert persisted["myExtra"] == "2" and "typoKey" not in persisted
    assert events.emitted == [("config_changed", {"key": "myExtra", "old": "1", "new": "2"})]


@pytest_twisted.inlineCallbacks
def test_failed_persist_keeps_the_change_and_says_so(tmp_path):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    config = NamesrvConfig()
    config.update({"configStorePath": str(blocker / "namesrv.properties")})
    answer = yield update(DefaultProcessor(NamesrvContext(config, None, None, reactor)), b"clusterTest=true\n")
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark.startswith("config applied but not persisted to %s" % (blocker / "namesrv.properties"))
    assert config.clusterTest is True
