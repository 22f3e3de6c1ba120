"""DefaultProcessor (GET/UPDATE_NAMESRV_CONFIG) called directly: the allow-list, the overlay, the events."""

import pytest
import pytest_twisted
from twisted.internet import defer, reactor
from twisted.logger import formatEvent, globalLogPublisher
from zope.interface.verify import verifyObject

from namesrv.config import PROPERTIES, NamesrvConfig
from namesrv.config.runtime import CONTROLLER_KEYS
from namesrv.context import NamesrvContext
from namesrv.interfaces import IRequestProcessor, IStoppableProcessor
from namesrv.config.properties import parse_properties
from namesrv.protocol.codec import decode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.security.signature import ACCESS_KEY
from processors.default import DefaultProcessor
from tests.fakes import FakeConnection, Reactor, RecordingEventLog
from tests.vectors import vector

CONN = FakeConnection("127.0.0.1:1")

#: The keys the captured 4.9.8 GET_NAMESRV_CONFIG answer listed (shared/vectors/README.md).
JAVA_4_9_8_KEYS = ("clusterTest configBlackList configStorePath kvConfigPath listenPort orderMessageEnable "
                   "productEnvName rocketmqHome serverAsyncSemaphoreValue serverCallbackExecutorThreads "
                   "serverChannelMaxIdleTimeSeconds serverOnewaySemaphoreValue serverPooledByteBufAllocatorEnable "
                   "serverSelectorThreads serverSocketBacklog serverSocketRcvBufSize serverSocketSndBufSize "
                   "serverWorkerThreads useEpollNativeSelector writeBufferHighWaterMark "
                   "writeBufferLowWaterMark").split()




#: every property the network may not change on the name server's port
NOT_RUNTIME = sorted(p.name for p in PROPERTIES if not p.runtime)
#: the controller's runtime keys: 1009's, on the controller's port
CONTROLLER_RUNTIME = sorted(p.name for p in PROPERTIES if p.runtime and p.name in CONTROLLER_KEYS)


@pytest.fixture
def cfile(tmp_path):
    """The operator's -c file: never written by the server."""
    path = tmp_path / "namesrv.properties"
    path.write_text("# the operator's own comment\nkvConfigPath=%s\nlistenPort=9876\n" % (tmp_path / "kv.json"))
    return path


@pytest.fixture
def context(tmp_path, cfile):
    config = NamesrvConfig()
    config.load_file(str(cfile))
    return NamesrvContext(config=config, routes=None, kv=None, reactor=reactor, events=RecordingEventLog())


@pytest.fixture
def overlay(tmp_path):
    """The runtime overlay's default: beside kvConfigPath."""
    return tmp_path / "namesrv-runtime.properties"


@pytest.fixture
def processor(context):
    return DefaultProcessor(context)


def update(processor, body, access_key=None):
    ext = {ACCESS_KEY: access_key} if access_key else None
    return processor.process_request(make_request(RequestCode.UPDATE_NAMESRV_CONFIG, ext=ext, body=body), CONN)


def test_provides_the_processor_interface(processor):
    assert verifyObject(IStoppableProcessor, processor) and IRequestProcessor.providedBy(processor)
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
def test_update_applies_live_keeps_it_in_the_overlay_never_in_the_c_file(processor, context, cfile, overlay):
    before = cfile.read_bytes()
    answer = yield update(processor, b"# from mqadmin\norderMessageEnable=true\nenableTopicList = false\n"
                                     b"waitSecondsForService=45\n", access_key="ops")
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)
    assert context.config.orderMessageEnable is True and context.config.enableTopicList is False
    assert cfile.read_bytes() == before
    assert parse_properties(overlay.read_text()) == {"enableTopicList": "false", "orderMessageEnable": "true",
                                                     "waitSecondsForService": "45"}
    assert context.events.named("config_changed") == [
        {"key": "enableTopicList", "old": "true", "new": "false", "peer": "127.0.0.1:1", "account": "ops",
         "request": "UPDATE_NAMESRV_CONFIG"},
        {"key": "orderMessageEnable", "old": "false", "new": "true", "peer": "127.0.0.1:1", "account": "ops",
         "request": "UPDATE_NAMESRV_CONFIG"},
    ]
    got = processor.process_request(make_request(RequestCode.GET_NAMESRV_CONFIG), CONN)
    assert "orderMessageEnable=true" in got.body.decode().splitlines()


@pytest_twisted.inlineCallbacks
def test_an_unsigned_update_has_no_account_and_each_change_is_a_log_line(processor, context):
    lines = []
    observer = lambda event: lines.append(formatEvent(event))   # noqa: E731
    globalLogPublisher.addObserver(observer)
    try:
        yield update(processor, b"supportActingMaster=true\n")
    finally:
        globalLogPublisher.removeObserver(observer)
    assert context.events.named("config_changed")[0]["account"] is None
    assert "config supportActingMaster changed from False to True (UPDATE_NAMESRV_CONFIG from 127.0.0.1:1 " \
           "(account none))" in lines


@pytest_twisted.inlineCallbacks
def test_concurrent_updates_leave_the_latest_value_in_the_overlay(processor, overlay):
    answers = yield defer.gatherResults([update(processor, b"waitSecondsForService=%d\n" % n) for n in range(10)])
    assert {a.code for a in answers} == {ResponseCode.SUCCESS}
    assert parse_properties(overlay.read_text()) == {"waitSecondsForService": "9"}


def assert_refused_unchanged(answer, context, cfile, overlay, *keys):
    assert answer.code == ResponseCode.NO_PERMISSION
    assert answer.remark.startswith("Can not update config in black list. Refused keys: ")
    for key in keys:
        assert "%s (" % key in answer.remark
    assert context.config.orderMessageEnable is False and context.events.emitted == []
    assert not overlay.exists() and "orderMessageEnable" not in cfile.read_text()


@pytest.mark.parametrize("key", NOT_RUNTIME)
def test_no_key_that_is_not_runtime_is_accepted_from_the_network(processor, context, cfile, overlay, key):
    """Paths, ports, addresses, security switches, the controller's membership, what is read at start: refused,
    named, and the runtime key sent beside them is not applied either (all or nothing)."""
    before = context.config.get(key)
    answer = update(processor, ("orderMessageEnable=true\n%s=1\n" % key).encode())
    assert_refused_unchanged(answer, context, cfile, overlay, key)
    assert context.config.get(key) == before


def test_list_of_keys_never_runtime_covers_what_the_issue_names():
    for key in ("bindAddress", "listenPort", "statusListenPort", "prometheusListenPort", "eventLogPath", "logDir",
                "routeSnapshotPath", "kvConfigPath", "configStorePath", "runtimeConfigPath",
                "enableControllerInNamesrv", "controllerDLegerPeers", "controllerDLegerSelfId",
                "controllerDLegerGroup", "controllerStorePath", "controllerPeerSecretFile",
                "controllerPeerAuthDisabled", "aclEnable", "aclFile", "aclSignedClasses", "brokerAllowedAddresses",
                "tlsMode", "tlsServerKeyPath", "addressServiceNamesrvAddr", "routeReadWorkers", "rocketmqHome"):
        assert key in NOT_RUNTIME, key


def test_listen_port_is_refused_naming_it(processor, context, cfile, overlay):
    """issue 57: ``updateNamesrvConfig -k listenPort`` answered success and did nothing until a restart."""
    answer = update(processor, b"listenPort=9999\n")
    assert answer.remark == ("Can not update config in black list. Refused keys: listenPort (not changeable at run "
                             "time). Only the properties marked runtime (docs/properties.md) change over the network; "
                             "set the others in the -c properties file and restart.")
    assert context.config.listenPort == 9876 and not overlay.exists()


@pytest.mark.parametrize("key", CONTROLLER_RUNTIME)
def test_the_controllers_runtime_keys_go_to_the_controllers_port(processor, context, cfile, overlay, key):
    answer = update(processor, ("orderMessageEnable=true\n%s=true\n" % key).encode())
    assert_refused_unchanged(answer, context, cfile, overlay, key)
    assert "%s (a controller property: updateControllerConfig on the controller's port)" % key in answer.remark


@pytest.mark.parametrize("key", ["kvConfigPath", "configStorePath", "configBlackList", "rocketmqHome", "aclEnable"])
def test_black_listed_keys_are_refused_and_nothing_changes(processor, context, cfile, overlay, key):
    answer = update(processor, ("orderMessageEnable=true\n%s=/tmp/x\n" % key).encode())
    assert_refused_unchanged(answer, context, cfile, overlay, key)
    assert "%s (configBlackList)" % key in answer.remark


def test_a_black_listed_runtime_key_is_refused_too(tmp_path):
    config = NamesrvConfig()
    config.update({"configBlackList": "orderMessageEnable", "kvConfigPath": str(tmp_path / "kv.json")})
    answer = update(DefaultProcessor(NamesrvContext(config, None, None, reactor)), b"orderMessageEnable=true\n")
    assert answer.code == ResponseCode.NO_PERMISSION and "orderMessageEnable (configBlackList)" in answer.remark
    assert config.orderMessageEnable is False and not (tmp_path / "namesrv-runtime.properties").exists()


def test_every_refused_key_is_named_once(processor, context, cfile, overlay):
    answer = update(processor, b"typoKey=1\nlistenPort=1\nkvConfigPath=/x\norderMessageEnable=true\n")
    assert answer.remark.startswith("Can not update config in black list. Refused keys: kvConfigPath "
                                    "(configBlackList), listenPort (not changeable at run time), typoKey "
                                    "(not a property). ")
    assert_refused_unchanged(answer, context, cfile, overlay)


def test_bad_value_is_refused_naming_the_key_and_nothing_changes(processor, context, cfile, overlay):
    answer = update(processor, b"orderMessageEnable=true\nscanNotActiveBrokerInterval=often\n")
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert "scanNotActiveBrokerInterval" in answer.remark and "often" in answer.remark
    assert context.config.orderMessageEnable is False and not overlay.exists() and context.events.emitted == []


def test_a_timer_period_below_one_is_refused(processor, context):
    answer = update(processor, b"routeSnapshotInterval=0\n")
    assert answer.code == ResponseCode.SYSTEM_ERROR and "routeSnapshotInterval" in answer.remark
    assert context.config.routeSnapshotInterval == 30


def test_unparseable_body_is_a_system_error(processor, context):
    answer = update(processor, b"productEnvName=\\u12\n")
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark.startswith("string2Properties error")
    answer = update(processor, b"productEnvName=\xff\n")
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.remark.startswith("string2Properties error")
    assert context.config.productEnvName == "center"


@pytest.mark.parametrize("body", [None, b"", b"# only a comment\n\n"])
def test_nothing_to_update_is_success_and_writes_nothing(processor, context, overlay, body):
    answer = update(processor, body)
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)
    assert not overlay.exists() and context.events.emitted == []


def test_keys_of_the_c_file_that_are_not_properties_are_refused(tmp_path):
    """Java updates such a key (Configuration.mergeIfExist) and ignores one it does not have: both change
    nothing here, so both are refused rather than answered SUCCESS."""
    config_file = tmp_path / "n.properties"
    config_file.write_text("myExtra=1\nkvConfigPath=%s\n" % (tmp_path / "kv.json"))
    config = NamesrvConfig()
    config.load_file(str(config_file))
    answer = update(DefaultProcessor(NamesrvContext(config, None, None, reactor)), b"myExtra=2\n")
    assert answer.code == ResponseCode.NO_PERMISSION and "myExtra (not a property)" in answer.remark
    assert config.get("myExtra") == "1"


@pytest_twisted.inlineCallbacks
def test_failed_persist_keeps_the_change_and_says_so(tmp_path):
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("")
    config = NamesrvConfig()
    config.update({"runtimeConfigPath": str(blocker / "runtime.properties")})
    answer = yield update(DefaultProcessor(NamesrvContext(config, None, None, reactor)), b"supportActingMaster=true\n")
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark.startswith("config applied but not persisted to %s" % (blocker / "runtime.properties"))
    assert config.supportActingMaster is True


def test_stop_writes_a_queued_overlay_write_at_once(tmp_path, context, overlay):
    class Stalled(Reactor):
        def getThreadPool(self):   # a thread pool that never runs the write
            return type("Pool", (), {"callInThreadWithCallback": lambda *args, **kwargs: None})()

    context.reactor = Stalled()
    processor = DefaultProcessor(context)
    update(processor, b"enableAllTopicList=false\n")
    assert not overlay.exists()
    processor.stop()
    assert parse_properties(overlay.read_text()) == {"enableAllTopicList": "false"}
    assert context.config.enableAllTopicList is False
