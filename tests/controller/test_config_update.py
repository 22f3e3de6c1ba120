"""UPDATE_CONTROLLER_CONFIG (1009): the controller's runtime keys only, kept in the runtime overlay.

Finding 7 of issue 54: without ACL, ``serverMaxConnections=1`` and ``enableTopicList=false`` sent to the controller
port made the name server (whose configuration the embedded controller shares) refuse route reads.
"""

import pytest
from twisted.internet import task

from namesrv.config import PROPERTIES, NamesrvConfig
from namesrv.config.properties import parse_properties
from namesrv.config.runtime import CONTROLLER_KEYS
from namesrv.controller.service import ControllerService
from namesrv.observe.eventlog import NullEventLog
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.security.signature import ACCESS_KEY
from tests.controller.harness import ControllerHarness
from tests.controller.wire import controller_ports
from tests.fakes import FakeConnection, Reactor

NOT_RUNTIME = sorted(p.name for p in PROPERTIES if not p.runtime)
NAMESRV_RUNTIME = sorted(p.name for p in PROPERTIES if p.runtime and p.name not in CONTROLLER_KEYS)


@pytest.fixture
def overlay(tmp_path):
    return tmp_path / "controller-runtime.properties"


@pytest.fixture
def harness(overlay):
    return ControllerHarness(clock=Reactor(), runtimeConfigPath=str(overlay))


def update(harness, body, **ext):
    return harness.call(RequestCode.UPDATE_CONTROLLER_CONFIG, ext=ext or None, body=body,
                        connection=FakeConnection("10.0.0.9:4000"))


def snapshot(config):
    return {name: config.get(name) for name in config.names()}


def assert_refused_unchanged(harness, overlay, answer, key, why):
    assert answer.code == ResponseCode.NO_PERMISSION
    assert answer.remark.startswith("Can not update config in black list. Refused keys: ")
    assert "%s (%s)" % (key, why) in answer.remark
    assert harness.controller.config.enableElectUncleanMaster is False
    assert not overlay.exists() and harness.controller.events.named("config_changed") == []


@pytest.mark.parametrize("key", NOT_RUNTIME)
def test_no_key_that_is_not_runtime_is_accepted(harness, overlay, key):
    before = snapshot(harness.controller.config)
    answer = update(harness, ("enableElectUncleanMaster=true\n%s=1\n" % key).encode())
    why = "configBlackList" if key in harness.controller.config.black_list() | {"rocketmqHome"} \
        else "not changeable at run time"
    assert_refused_unchanged(harness, overlay, answer, key, why)
    assert snapshot(harness.controller.config) == before


@pytest.mark.parametrize("key", NAMESRV_RUNTIME)
def test_no_name_server_property_changes_from_the_controller_port(harness, overlay, key):
    before = snapshot(harness.controller.config)
    answer = update(harness, ("enableElectUncleanMaster=true\n%s=1\n" % key).encode())
    why = "configBlackList" if key in harness.controller.config.black_list() \
        else "a name server property: updateNamesrvConfig on the name server's port"
    assert_refused_unchanged(harness, overlay, answer, key, why)
    assert snapshot(harness.controller.config) == before


def test_finding_7_the_name_servers_limits_stay(harness, overlay):
    answer = update(harness, b"serverMaxConnections=1\nenableTopicList=false\n")
    assert answer.code == ResponseCode.NO_PERMISSION
    config = harness.controller.config
    assert config.serverMaxConnections == 10000 and config.enableTopicList is True and not overlay.exists()


def test_a_controller_key_applies_is_kept_and_written_to_the_event_log(harness, overlay):
    answer = update(harness, b"enableElectUncleanMaster=true\nscanInactiveMasterInterval=6000\n", **{ACCESS_KEY: "ops"})
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)
    config = harness.controller.config
    assert config.enableElectUncleanMaster is True and config.scanInactiveMasterInterval == 6000
    assert parse_properties(overlay.read_text()) == {"enableElectUncleanMaster": "true",
                                                     "scanInactiveMasterInterval": "6000"}
    assert harness.controller.events.named("config_changed") == [
        {"key": "enableElectUncleanMaster", "old": "false", "new": "true", "peer": "10.0.0.9:4000", "account": "ops",
         "request": "UPDATE_CONTROLLER_CONFIG"},
        {"key": "scanInactiveMasterInterval", "old": "5000", "new": "6000", "peer": "10.0.0.9:4000",
         "account": "ops", "request": "UPDATE_CONTROLLER_CONFIG"}]


def test_a_bad_value_is_a_system_error_naming_the_key(harness, overlay):
    bad = update(harness, b"scanInactiveMasterInterval=soon\n")
    assert bad.code == ResponseCode.SYSTEM_ERROR and "scanInactiveMasterInterval" in bad.remark
    assert harness.controller.config.scanInactiveMasterInterval == 5000 and not overlay.exists()


def test_an_empty_update_is_success_and_writes_nothing(harness, overlay):
    assert update(harness, None).code == ResponseCode.SUCCESS and not overlay.exists()


def test_the_inactive_master_scan_takes_a_new_period_at_once(tmp_path):
    config = NamesrvConfig()
    config.update({"controllerDLegerPeers": "n0-127.0.0.1:%d" % controller_ports(1)[0],
                   "controllerDLegerSelfId": "n0", "controllerStorePath": str(tmp_path / "store")}, announce=False)
    clock = task.Clock()
    scan = ControllerService(config, clock, NullEventLog()).inactive_master_scan
    scan.startService()
    clock.advance(5)
    assert scan.looping and scan.call.interval == 5.0
    config.update({"scanInactiveMasterInterval": "2000"})
    assert scan.call.interval == 2.0
    scan.stopService()
