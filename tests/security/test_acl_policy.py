"""The ACL and broker allow-list policies, through the real processor registry."""

import pytest
from twisted.internet import task

from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.dispatch.registry import ProcessorRegistry
from namesrv.security.acl import AclPolicy, AclStore, BrokerAllowListPolicy
from namesrv.security.aclfile import parse_acl
from namesrv.dispatch.classes import RequestClassifier
from namesrv.security.filewatch import FileWatcher
from namesrv.security.signature import sign_request_ext
from tests.config_for import make_config
from tests.fakes import FakeConnection
from tests.security.fakes import Echo

ACL = """
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: plainUser
    secretKey: plainSecret1
    admin: false
  - accessKey: adminUser
    secretKey: adminSecret1
    admin: true
  - accessKey: trustedHost
    secretKey: trustedSecret
    whiteRemoteAddress: 192.168.1.*
"""

PUT = RequestCode.PUT_KV_CONFIG


class Listener:
    def __init__(self):
        self.rejections = []

    def rejected(self, request_class, reason):
        self.rejections.append((request_class, reason))


def build(acl=ACL, **values):
    listener = Listener()
    store = AclStore("unused", parse_acl(acl))
    cfg = make_config(**values)
    policy = AclPolicy(store, RequestClassifier(), cfg, [listener])
    codes = [int(c) for c in RequestCode] + [4242]  # 4242: a plugin processor's own code
    registry = ProcessorRegistry([Echo(codes)], policies=[policy])
    return registry, listener, cfg


def put_kv(access_key=None, secret=None, body=None, **extra):
    ext = {"namespace": "ns", "key": "k", "value": "v", **extra}
    if access_key:
        ext = sign_request_ext(ext, body, access_key, secret)
    return make_request(PUT, ext, body=body, opaque=7)


def test_admin_write_signed_by_an_admin_passes():
    registry, listener, _ = build()
    answer = registry.dispatch(put_kv("adminUser", "adminSecret1"), FakeConnection())
    assert answer.code == ResponseCode.SUCCESS and answer.opaque == 7
    assert listener.rejections == []


@pytest.mark.parametrize("request_,remark", [
    (put_kv(), "No accessKey is configured: request code 100 (PUT_KV_CONFIG) is admin_write and must be signed"),
    (put_kv("stranger", "whatever1"), "No acl config for stranger"),
    (put_kv("adminUser", "wrongSecret"), "Check signature failed for accessKey=adminUser"),
    (put_kv("plainUser", "plainSecret1"), "Need admin permission for request code=100, but accessKey=plainUser is not"),
])
def test_refusals_answer_no_permission_with_a_clear_remark(request_, remark):
    registry, listener, _ = build()
    answer = registry.dispatch(request_, FakeConnection())
    assert answer.code == ResponseCode.NO_PERMISSION
    assert answer.remark.startswith(remark)
    assert listener.rejections == [("admin_write", "acl")]
    assert "adminSecret1" not in answer.remark and "plainSecret1" not in answer.remark


def test_tampered_value_after_signing_is_refused():
    registry, _, _ = build()
    request = put_kv("adminUser", "adminSecret1")
    request.ext["value"] = "evil"
    assert registry.dispatch(request, FakeConnection()).code == ResponseCode.NO_PERMISSION


def test_every_admin_write_code_is_guarded_and_reads_are_not_by_default():
    registry, _, _ = build()
    for code in (RequestCode.DELETE_KV_CONFIG, RequestCode.UPDATE_NAMESRV_CONFIG, RequestCode.WIPE_WRITE_PERM_OF_BROKER,
                 RequestCode.ADD_WRITE_PERM_OF_BROKER, RequestCode.DELETE_TOPIC_IN_NAMESRV,
                 RequestCode.REGISTER_TOPIC_IN_NAMESRV, 4242):
        assert registry.dispatch(make_request(code, {}), FakeConnection()).code == ResponseCode.NO_PERMISSION, code
    for code in (RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_KV_CONFIG, RequestCode.GET_BROKER_CLUSTER_INFO,
                 RequestCode.REGISTER_BROKER, RequestCode.GET_NAMESRV_CONFIG):
        assert registry.dispatch(make_request(code, {}), FakeConnection()).code == ResponseCode.SUCCESS, code
    # A code nobody declared never reaches a processor or a policy.
    assert registry.dispatch(make_request(4343, {}), FakeConnection()).code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


def test_signed_classes_follow_the_live_property():
    registry, _, cfg = build(aclSignedClasses="adminWrite")
    read = make_request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"})
    assert registry.dispatch(read, FakeConnection()).code == ResponseCode.SUCCESS
    cfg.update({"aclSignedClasses": "admin_read,admin_write"})
    assert registry.dispatch(read, FakeConnection()).code == ResponseCode.NO_PERMISSION
    signed = make_request(RequestCode.GET_KVLIST_BY_NAMESPACE,
                          sign_request_ext({"namespace": "ns"}, None, "plainUser", "plainSecret1"))
    assert registry.dispatch(signed, FakeConnection()).code == ResponseCode.SUCCESS  # reads need no admin flag
    cfg.update({"aclSignedClasses": "nonsense"})  # a bad runtime value keeps the previous one
    assert registry.dispatch(read, FakeConnection()).code == ResponseCode.NO_PERMISSION


def test_bad_signed_classes_at_start_is_an_error():
    with pytest.raises(ValueError, match="unknown request class"):
        build(aclSignedClasses="adminWrite,everything")


def test_white_lists_skip_the_signature_as_in_java():
    registry, _, _ = build()
    assert registry.dispatch(put_kv(), FakeConnection("10.10.103.9:4000")).code == ResponseCode.SUCCESS
    unsigned_but_named = put_kv(AccessKey="trustedHost")
    assert registry.dispatch(unsigned_but_named, FakeConnection("192.168.1.20:4000")).code == ResponseCode.SUCCESS
    assert registry.dispatch(unsigned_but_named, FakeConnection("192.168.2.20:4000")).code == ResponseCode.NO_PERMISSION


def test_oneway_refusal_gets_no_answer():
    registry, listener, _ = build()
    assert registry.dispatch(make_request(PUT, {}, oneway=True), FakeConnection()) is None
    assert listener.rejections == [("admin_write", "acl")]


def test_credentials_reload_when_the_file_changes(tmp_path):
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL)
    store = AclStore(str(path))
    store.load()
    policy = AclPolicy(store, RequestClassifier(), make_config())
    registry = ProcessorRegistry([Echo()], policies=[policy])
    clock = task.Clock()
    watcher = FileWatcher([str(path)], store.reload, 0.5, clock=clock)
    watcher.startService()
    request = put_kv("adminUser", "adminSecret1")
    assert registry.dispatch(request, FakeConnection()).code == ResponseCode.SUCCESS

    path.write_text(ACL.replace("adminSecret1", "rotatedSecret"))
    clock.advance(0.5)
    assert store.reloads == 1
    assert registry.dispatch(put_kv("adminUser", "adminSecret1"), FakeConnection()).code == ResponseCode.NO_PERMISSION
    assert registry.dispatch(put_kv("adminUser", "rotatedSecret"), FakeConnection()).code == ResponseCode.SUCCESS

    path.write_text("accounts: [\n")  # a broken edit keeps the last good credentials
    clock.advance(0.5)
    assert store.reload_failures == 1
    assert registry.dispatch(put_kv("adminUser", "rotatedSecret"), FakeConnection()).code == ResponseCode.SUCCESS
    watcher.stopService()
    assert not clock.getDelayedCalls()


def test_broker_allow_list_checks_the_connection_address_not_the_header():
    listener = Listener()
    cfg = make_config(brokerAllowedAddresses="10.0.0.0/8, 192.168.1.{5,6}")
    registry = ProcessorRegistry([Echo()], policies=[BrokerAllowListPolicy(RequestClassifier(), cfg, [listener])])
    register = make_request(RequestCode.REGISTER_BROKER, {"brokerAddr": "10.0.0.1:10911"})
    assert registry.dispatch(register, FakeConnection("10.3.3.3:50000")).code == ResponseCode.SUCCESS
    assert registry.dispatch(register, FakeConnection("192.168.1.6:50000")).code == ResponseCode.SUCCESS
    refused = registry.dispatch(register, FakeConnection("172.16.0.1:50000"))
    assert refused.code == ResponseCode.NO_PERMISSION
    assert refused.remark == "REGISTER_BROKER (103) from 172.16.0.1 refused: the address is not in brokerAllowedAddresses"
    route = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "t"})
    assert registry.dispatch(route, FakeConnection("172.16.0.1:50000")).code == ResponseCode.SUCCESS
    cfg.update({"brokerAllowedAddresses": ""})
    assert registry.dispatch(register, FakeConnection("172.16.0.1:50000")).code == ResponseCode.SUCCESS
    assert listener.rejections == [("broker_control", "broker_allowlist")]
