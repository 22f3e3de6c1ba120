"""``aclEnable`` on the controller port: the same trust policy as the name server's port. Everything a
broker sends (its ids, registration, heartbeats, in-sync sets, its own elections) needs a broker's
signature, or an address in brokerAllowedAddresses; mqadmin's writes (a designated election, the
configuration, a clean-up) need an admin's; reads need a reader's. Findings 1 and 2 of issue 54: an
unsigned client moved a live master, and brokerAllowedAddresses was not enforced here."""

import pytest
from twisted.internet import task

from namesrv.config import NamesrvConfig
from namesrv.controller.service import ControllerService
from namesrv.dispatch.classes import TABLE
from namesrv.observe.eventlog import NullEventLog
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.security.acl import AclStore
from namesrv.security.aclfile import parse_acl
from namesrv.security.signature import sign_request_ext
from tests.controller.harness import ControllerHarness, FakeBroker
from tests.controller.wire import controller_ports
from tests.fakes import FakeConnection

ACL = """accounts:
  - accessKey: opsAdmin
    secretKey: ops-admin-secret-123
    admin: true
  - accessKey: viewerKey
    secretKey: viewer-secret-1234
    admin: false
users:
  - {username: brokerUser, password: broker-secret-123}
acls:
  - subject: User:brokerUser
    policies:
      - entries:
          - {resource: "Broker:broker-*", actions: [BrokerControl, RouteRead]}
"""
ADMIN = ("opsAdmin", "ops-admin-secret-123")
VIEWER = ("viewerKey", "viewer-secret-1234")
BROKER = ("brokerUser", "broker-secret-123")
ATTACKER = FakeConnection("10.0.0.66:4000")


@pytest.fixture
def harness():
    return ControllerHarness(acl_store=AclStore("unused", parse_acl(ACL)), aclEnable="true")


def test_a_broker_signing_as_a_broker_runs_its_whole_start(harness):
    broker = FakeBroker(harness, credentials=BROKER)
    assert broker.start().code == ResponseCode.SUCCESS
    assert broker.elect().code == ResponseCode.SUCCESS


def test_an_unsigned_client_moves_no_master_and_no_address(harness):
    master = FakeBroker(harness, credentials=BROKER)
    master.start()
    assert master.elect().code == ResponseCode.SUCCESS
    group = harness.state.group("broker-a")
    before = (group.master_id, group.master_address, dict(group.brokers), set(group.sync_state_set),
              group.sync_state_set_epoch)
    # the attacker's heartbeat, registration with the master's id, in-sync shrink and id claim: all unsigned
    beat = {"clusterName": "DefaultCluster", "brokerAddr": master.address, "brokerName": "broker-a",
            "brokerId": master.broker_id, "heartbeatTimeoutMills": 10000}
    register = {"clusterName": "DefaultCluster", "brokerName": "broker-a", "brokerId": master.broker_id,
                "brokerAddress": "6.6.6.6:666"}
    alter = {"brokerName": "broker-a", "masterBrokerId": master.broker_id, "masterEpoch": group.master_epoch}
    apply_id = {"clusterName": "DefaultCluster", "brokerName": "broker-a", "appliedBrokerId": 9,
                "registerCheckCode": "6.6.6.6:666;1"}
    for code, ext in ((RequestCode.BROKER_HEARTBEAT, beat), (RequestCode.CONTROLLER_REGISTER_BROKER, register),
                      (RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, alter),
                      (RequestCode.CONTROLLER_APPLY_BROKER_ID, apply_id),
                      (RequestCode.CONTROLLER_ELECT_MASTER, {"clusterName": "DefaultCluster", "brokerName": "broker-a",
                                                             "brokerId": master.broker_id})):
        for credentials in (None, VIEWER):
            answer = harness.call(code, ext, connection=ATTACKER, credentials=credentials)
            assert answer.code == ResponseCode.NO_PERMISSION and "broker_control" in answer.remark, (code, answer)
    group = harness.state.group("broker-a")
    assert (group.master_id, group.master_address, dict(group.brokers), set(group.sync_state_set),
            group.sync_state_set_epoch) == before
    live = harness.controller.heartbeats.live_info("DefaultCluster", "broker-a", master.broker_id)
    assert live.connection is master.connection


ELECT = {"clusterName": "DefaultCluster", "brokerName": "broker-a", "brokerId": "1", "designateElect": "true"}
CLEAN = {"clusterName": "DefaultCluster", "brokerName": "broker-a", "isCleanLivingBroker": "true"}


@pytest.mark.parametrize("code, ext", [(RequestCode.CONTROLLER_ELECT_MASTER, ELECT),
                                       (RequestCode.CLEAN_BROKER_DATA, CLEAN),
                                       (RequestCode.UPDATE_CONTROLLER_CONFIG, {})])
def test_admin_writes_need_an_admins_signature(harness, code, ext):
    FakeBroker(harness, credentials=BROKER).start()
    unsigned = harness.call(code, ext, connection=FakeConnection("10.0.0.5:4000"))
    assert unsigned.code == ResponseCode.NO_PERMISSION and "must be signed" in unsigned.remark
    for who in (VIEWER, BROKER):
        refused = harness.call(code, ext, connection=FakeConnection("10.0.0.5:4000"), credentials=who)
        assert refused.code == ResponseCode.NO_PERMISSION and "admin_write" in refused.remark
    forged = harness.call(code, ext, connection=FakeConnection("10.0.0.5:1"),
                          credentials=("opsAdmin", "not-the-secret-000"))
    assert forged.code == ResponseCode.NO_PERMISSION and "Check signature failed" in forged.remark
    admin = harness.call(code, ext, connection=FakeConnection("10.0.0.5:4000"), credentials=ADMIN)
    assert admin.code != ResponseCode.NO_PERMISSION


def test_reads_need_a_readers_signature(harness):
    FakeBroker(harness, credentials=BROKER).start()
    assert harness.call(RequestCode.GET_CONTROLLER_CONFIG).code == ResponseCode.NO_PERMISSION
    assert harness.call(RequestCode.GET_CONTROLLER_CONFIG, credentials=VIEWER).code == ResponseCode.SUCCESS
    assert harness.call(RequestCode.CONTROLLER_GET_METADATA_INFO, credentials=VIEWER).code == ResponseCode.SUCCESS
    assert harness.call(RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"},
                        credentials=BROKER).code == ResponseCode.SUCCESS


def test_broker_allowed_addresses_hold_on_the_controller_port_too():
    """Finding 2: from a listed-out address the controller port answered 904 and apply-id with success."""
    harness = ControllerHarness(brokerAllowedAddresses="127.0.0.0/8")
    assert FakeBroker(harness).start().code == ResponseCode.SUCCESS   # fake brokers connect from 127.0.0.1
    outsider = FakeConnection("10.9.9.9:5000")
    for code, ext in ((RequestCode.BROKER_HEARTBEAT, {"clusterName": "DefaultCluster", "brokerName": "broker-a",
                                                      "brokerAddr": "10.9.9.9:10911", "brokerId": 1}),
                      (RequestCode.CONTROLLER_APPLY_BROKER_ID, {"clusterName": "DefaultCluster",
                                                                "brokerName": "broker-b", "appliedBrokerId": 1,
                                                                "registerCheckCode": "10.9.9.9:10911;1"})):
        answer = harness.call(code, ext, connection=outsider)
        assert answer.code == ResponseCode.NO_PERMISSION and "brokerAllowedAddresses" in answer.remark
    assert harness.state.group("broker-b") is None


def test_a_4_9_style_unsigned_broker_is_let_in_only_from_broker_allowed_addresses():
    harness = ControllerHarness(acl_store=AclStore("unused", parse_acl(ACL)), aclEnable="true",
                                brokerAllowedAddresses="127.0.0.1")
    assert FakeBroker(harness).start().code == ResponseCode.SUCCESS
    assert harness.call(RequestCode.BROKER_HEARTBEAT, {"clusterName": "DefaultCluster", "brokerName": "broker-a"},
                        connection=ATTACKER).code == ResponseCode.NO_PERMISSION


def acl_controller_service(tmp_path):
    """A controller alone with aclEnable=true and this module's ACL file, as twistd builds one."""
    (tmp_path / "plain_acl.yml").write_text(ACL)
    config = NamesrvConfig()
    config.update({"aclEnable": "true", "aclFile": str(tmp_path / "plain_acl.yml"),
                   "controllerDLegerPeers": "n0-127.0.0.1:%d" % controller_ports(1)[0], "controllerDLegerSelfId": "n0",
                   "controllerStorePath": str(tmp_path / "store")}, announce=False)
    service = ControllerService(config, task.Clock(), NullEventLog())
    return service


def test_the_controller_service_guards_its_port_when_acl_is_on(tmp_path):
    service = acl_controller_service(tmp_path)
    for code, ext in ((RequestCode.CLEAN_BROKER_DATA, CLEAN), (RequestCode.BROKER_HEARTBEAT, {})):
        refused = service.chain.entry.dispatch(make_request(code, ext), FakeConnection("10.0.0.5:4000"))
        assert refused.code == ResponseCode.NO_PERMISSION


@pytest.mark.parametrize("code, ext", [(RequestCode.CONTROLLER_ADD_MEMBER, {"controllerId": "n9",
                                                                           "controllerAddress": "10.0.0.9:9878"}),
                                       (RequestCode.CONTROLLER_PROMOTE_MEMBER, {"controllerId": "n9"}),
                                       (RequestCode.CONTROLLER_REMOVE_MEMBER, {"controllerId": "n1"}),
                                       (RequestCode.CONTROLLER_TRANSFER_LEADER, {"toControllerId": "any"})])
def test_the_groups_own_changes_are_admin_writes_and_its_listing_a_read(tmp_path, code, ext):
    service = acl_controller_service(tmp_path)
    assert TABLE[code].name == "admin_write" and TABLE[RequestCode.CONTROLLER_LIST_MEMBERS].name == "admin_read"
    here = FakeConnection("10.0.0.5:4000")
    refused = service.chain.entry.dispatch(make_request(code, ext), here)
    assert refused.code == ResponseCode.NO_PERMISSION
    signed = service.chain.entry.dispatch(make_request(code, sign_request_ext(ext, None, *ADMIN)), here)
    assert signed.code == ResponseCode.CONTROLLER_INVALID_REQUEST and "alone" in signed.remark
    listing = service.chain.entry.dispatch(make_request(RequestCode.CONTROLLER_LIST_MEMBERS,
                                                        sign_request_ext({}, None, *VIEWER)), here)
    assert listing.code == ResponseCode.SUCCESS
