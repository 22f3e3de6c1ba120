"""``aclEnable`` on the controller port: mqadmin's writes (a designated election, the configuration, a
clean-up) need an admin's signature from the aclFile; what brokers send and the reads pass unsigned."""

import pytest

from namesrv.dispatch.classes import RequestClassifier
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.security.acl import AclPolicy, AclStore, ControllerAdminAclPolicy
from namesrv.security.signature import sign_request_ext
from tests.fakes import FakeConnection
from tests.controller.harness import ControllerHarness, FakeBroker

ACL = """accounts:
  - accessKey: opsAdmin
    secretKey: ops-admin-secret-123
    admin: true
  - accessKey: viewerKey
    secretKey: viewer-secret-1234
    admin: false
"""


@pytest.fixture
def harness(tmp_path):
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL)
    h = ControllerHarness(aclEnable="true")
    store = AclStore(str(path))
    store.load()
    h.registry.add_policy(ControllerAdminAclPolicy(AclPolicy(store, RequestClassifier(), h.controller.config)))
    return h


def _signed(ext, access_key, secret_key):
    return sign_request_ext(ext, None, access_key, secret_key)


def test_a_brokers_own_requests_pass_unsigned(harness):
    broker = FakeBroker(harness)
    assert broker.start().code == ResponseCode.SUCCESS
    assert broker.elect().code == ResponseCode.SUCCESS


ELECT = {"clusterName": "DefaultCluster", "brokerName": "broker-a", "brokerId": "1", "designateElect": "true"}
CLEAN = {"clusterName": "DefaultCluster", "brokerName": "broker-a", "isCleanLivingBroker": "true"}


@pytest.mark.parametrize("code, ext", [(RequestCode.CONTROLLER_ELECT_MASTER, ELECT),
                                       (RequestCode.CLEAN_BROKER_DATA, CLEAN),
                                       (RequestCode.UPDATE_CONTROLLER_CONFIG, {})])
def test_admin_writes_need_an_admins_signature(harness, code, ext):
    FakeBroker(harness).start()
    unsigned = harness.call(code, ext, connection=FakeConnection("10.0.0.5:4000"))
    assert unsigned.code == ResponseCode.NO_PERMISSION and "must be signed" in unsigned.remark
    viewer = harness.call(code, _signed(ext, "viewerKey", "viewer-secret-1234"), connection=FakeConnection("10.0.0.5:4000"))
    assert viewer.code == ResponseCode.NO_PERMISSION and "Need admin permission" in viewer.remark
    forged = harness.call(code, _signed(ext, "opsAdmin", "not-the-secret-000"), connection=FakeConnection("10.0.0.5:1"))
    assert forged.code == ResponseCode.NO_PERMISSION and "Check signature failed" in forged.remark
    admin = harness.call(code, _signed(ext, "opsAdmin", "ops-admin-secret-123"),
                         connection=FakeConnection("10.0.0.5:4000"))
    assert admin.code != ResponseCode.NO_PERMISSION


def test_reads_pass_unsigned(harness):
    FakeBroker(harness).start()
    assert harness.call(RequestCode.CONTROLLER_GET_METADATA_INFO).code == ResponseCode.SUCCESS
    assert harness.call(RequestCode.CONTROLLER_GET_REPLICA_INFO, {"brokerName": "broker-a"}).code \
        == ResponseCode.SUCCESS
    assert harness.call(RequestCode.GET_CONTROLLER_CONFIG).code == ResponseCode.SUCCESS


def test_the_controller_service_guards_its_port_when_acl_is_on(tmp_path):
    from twisted.internet import task

    from namesrv.config import NamesrvConfig
    from namesrv.controller.service import ControllerService
    from namesrv.observe.eventlog import NullEventLog
    from namesrv.protocol.command import make_request
    from tests.controller.wire import controller_ports

    (tmp_path / "plain_acl.yml").write_text(ACL)
    config = NamesrvConfig()
    config.update({"aclEnable": "true", "aclFile": str(tmp_path / "plain_acl.yml"),
                   "controllerDLegerPeers": "n0-127.0.0.1:%d" % controller_ports(1)[0], "controllerDLegerSelfId": "n0",
                   "controllerStorePath": str(tmp_path / "store")}, announce=False)
    service = ControllerService(config, task.Clock(), NullEventLog())
    refused = service.registry.dispatch(make_request(RequestCode.CLEAN_BROKER_DATA, CLEAN),
                                        FakeConnection("10.0.0.5:4000"))
    assert refused.code == ResponseCode.NO_PERMISSION


@pytest.mark.parametrize("code, ext", [(RequestCode.CONTROLLER_ADD_MEMBER, {"controllerId": "n9",
                                                                           "controllerAddress": "10.0.0.9:9878"}),
                                       (RequestCode.CONTROLLER_PROMOTE_MEMBER, {"controllerId": "n9"}),
                                       (RequestCode.CONTROLLER_REMOVE_MEMBER, {"controllerId": "n1"}),
                                       (RequestCode.CONTROLLER_TRANSFER_LEADER, {"toControllerId": "any"})])
def test_the_groups_own_changes_are_admin_writes_and_its_listing_a_read(tmp_path, code, ext):
    from twisted.internet import task

    from namesrv.config import NamesrvConfig
    from namesrv.controller.service import ControllerService
    from namesrv.observe.eventlog import NullEventLog
    from namesrv.protocol.command import make_request
    from tests.controller.wire import controller_ports

    (tmp_path / "plain_acl.yml").write_text(ACL)
    config = NamesrvConfig()
    config.update({"aclEnable": "true", "aclFile": str(tmp_path / "plain_acl.yml"),
                   "controllerDLegerPeers": "n0-127.0.0.1:%d" % controller_ports(1)[0], "controllerDLegerSelfId": "n0",
                   "controllerStorePath": str(tmp_path / "store")}, announce=False)
    service = ControllerService(config, task.Clock(), NullEventLog())
    assert RequestClassifier().classify(code) == "admin_write"
    refused = service.registry.dispatch(make_request(code, ext), FakeConnection("10.0.0.5:4000"))
    assert refused.code == ResponseCode.NO_PERMISSION
    signed = service.registry.dispatch(make_request(code, _signed(ext, "opsAdmin", "ops-admin-secret-123")),
                                       FakeConnection("10.0.0.5:4000"))
    assert signed.code == ResponseCode.CONTROLLER_INVALID_REQUEST and "alone" in signed.remark
    listing = service.registry.dispatch(make_request(RequestCode.CONTROLLER_LIST_MEMBERS),
                                        FakeConnection("10.0.0.5:4000"))
    assert listing.code == ResponseCode.SUCCESS
    assert RequestClassifier().classify(RequestCode.CONTROLLER_LIST_MEMBERS) == "admin_read"
