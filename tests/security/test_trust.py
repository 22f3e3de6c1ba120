"""The ACL check (TrustPolicy) and the broker address list, through the real processor registry: ACL 1.0
accounts as Java's plain_acl.yml has them, ACL 2.0 users and policies, and every step of the check."""

import pytest
from twisted.internet import task

from namesrv.dispatch.classes import RequestClassifier
from namesrv.dispatch.registry import ProcessorRegistry
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.security.acl import AclStore, BrokerAllowListPolicy
from namesrv.security.aclfile import parse_acl
from namesrv.security.filewatch import FileWatcher
from namesrv.security.refused import Refusals
from namesrv.security.signature import sign_request_ext
from namesrv.security.trust import TrustPolicy
from tests.config_for import make_config
from tests.fakes import FakeConnection, RecordingEventLog
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
users:
  - {username: brokerA1, password: brokerSecret1, userType: Normal}
  - {username: reader01, password: readerSecret1}
  - {username: superOps, password: superSecret1, userType: Super}
  - {username: retired1, password: retiredSecret, userStatus: disable}
acls:
  - subject: User:brokerA1
    policies:
      - entries:
          - {resource: "Broker:broker-a", actions: [BrokerControl, RouteRead], sourceIps: [10.0.1.0/24],
             decision: Allow}
          - {resource: "Topic:*", actions: [RouteRead], decision: Allow}
  - subject: User:reader01
    policies:
      - entries:
          - {resource: "*", actions: [Sub, Get, List], decision: Allow}
          - {resource: "Topic:secret-*", actions: [Sub], decision: Deny}
"""

PUT = RequestCode.PUT_KV_CONFIG


class Listener:
    def __init__(self):
        self.rejections = []

    def rejected(self, request_class, reason):
        self.rejections.append((request_class, reason))


def build(acl=ACL, **values):
    listener = Listener()
    events = RecordingEventLog()
    store = AclStore("unused", parse_acl(acl))
    cfg = make_config(aclEnable="true", **values)
    classifier = RequestClassifier({4242: "admin_read"})   # 4242: a plugin processor's own code, classified
    refusals = Refusals([listener], events, task.Clock())
    policies = [TrustPolicy(store, classifier, cfg, refusals), BrokerAllowListPolicy(classifier, cfg, refusals)]
    codes = [int(c) for c in RequestCode] + [4242, 4343]  # 4343: a plugin code in no class
    registry = ProcessorRegistry([Echo(codes)], policies=policies)
    return registry, listener, cfg, events


def signed(code, ext, account=None, secret=None, body=None, **kwargs):
    if account:
        ext = sign_request_ext(ext, body, account, secret)
    return make_request(code, ext, body=body, opaque=7, **kwargs)


def put_kv(account=None, secret=None, **extra):
    return signed(PUT, {"namespace": "ns", "key": "k", "value": "v", **extra}, account, secret)


def heartbeat(account=None, secret=None, broker="broker-a", code=RequestCode.BROKER_HEARTBEAT):
    return signed(code, {"clusterName": "c1", "brokerName": broker, "brokerAddr": "10.0.1.5:10911", "brokerId": "0"},
                  account, secret)


def route(topic, account=None, secret=None):
    return signed(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, account, secret)


def answer(registry, request, peer="10.0.1.5:40000"):
    return registry.dispatch(request, FakeConnection(peer))


def test_an_admin_write_signed_by_an_admin_passes():
    registry, listener, _, _ = build()
    response = answer(registry, put_kv("adminUser", "adminSecret1"))
    assert response.code == ResponseCode.SUCCESS and response.opaque == 7
    assert listener.rejections == []


@pytest.mark.parametrize("request_,remark,reason", [
    (put_kv(), "No accessKey is configured: request code 100 (PUT_KV_CONFIG) is admin_write and must be signed",
     "acl_unsigned"),
    (put_kv("stranger", "whatever1"), "No acl config for stranger", "acl_unknown_account"),
    (put_kv("adminUser", "wrongSecret"), "Check signature failed for accessKey=adminUser", "acl_bad_signature"),
    (put_kv("plainUser", "plainSecret1"), "accessKey plainUser has no permission for admin_write on * from 10.0.1.5",
     "acl_not_allowed"),
    (put_kv("retired1", "retiredSecret"), "User:retired1 is disabled", "acl_disabled_account"),
])
def test_refusals_answer_no_permission_naming_the_class_and_what_is_missing(request_, remark, reason):
    registry, listener, _, events = build()
    response = answer(registry, request_)
    assert response.code == ResponseCode.NO_PERMISSION
    assert response.remark.startswith(remark)
    assert "admin_write" in response.remark
    assert listener.rejections == [("admin_write", reason)]
    assert [e["reason"] for e in events.named("request_refused")] == [reason]
    assert "adminSecret1" not in response.remark and "plainSecret1" not in response.remark


def test_with_acl_on_every_class_is_signed_by_default_and_a_code_in_no_class_is_refused():
    registry, _, _, _ = build()
    for code in (RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_KV_CONFIG, RequestCode.GET_BROKER_CLUSTER_INFO,
                 RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER, RequestCode.GET_NAMESRV_CONFIG,
                 RequestCode.CONTROLLER_REGISTER_BROKER, RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET, 4242):
        assert answer(registry, make_request(code, {})).code == ResponseCode.NO_PERMISSION, code
    refused = answer(registry, signed(4343, {}, "adminUser", "adminSecret1"))
    assert refused.code == ResponseCode.NO_PERMISSION and "in no request class" in refused.remark
    # A code nobody declared never reaches a processor or a policy.
    assert answer(registry, make_request(5555, {})).code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


def test_unsigned_heartbeats_and_registrations_move_nothing():
    """Finding 1: with aclEnable an unsigned BROKER_HEARTBEAT, REGISTER_BROKER, UNREGISTER_BROKER or a controller
    broker request (1001, 1003, 1013) was accepted. Now every one is refused before its processor runs."""
    registry, _, _, _ = build()
    echo = registry.processors[0]
    for code in (RequestCode.BROKER_HEARTBEAT, RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER,
                 RequestCode.CONTROLLER_REGISTER_BROKER, RequestCode.CONTROLLER_ALTER_SYNC_STATE_SET,
                 RequestCode.CONTROLLER_APPLY_BROKER_ID, RequestCode.CONTROLLER_ELECT_MASTER):
        assert answer(registry, heartbeat(code=code)).code == ResponseCode.NO_PERMISSION, code
    assert echo.seen == []


def test_a_client_that_may_only_read_can_neither_heartbeat_nor_elect():
    registry, _, _, _ = build()
    for account, secret in (("reader01", "readerSecret1"), ("plainUser", "plainSecret1")):
        for code in (RequestCode.BROKER_HEARTBEAT, RequestCode.CONTROLLER_REGISTER_BROKER,
                     RequestCode.CONTROLLER_ELECT_MASTER):
            response = answer(registry, heartbeat(account, secret, code=code))
            assert response.code == ResponseCode.NO_PERMISSION and "broker_control" in response.remark


def test_a_broker_account_acts_for_its_own_group_from_its_own_network_only():
    registry, _, _, _ = build()
    assert answer(registry, heartbeat("brokerA1", "brokerSecret1")).code == ResponseCode.SUCCESS
    other = answer(registry, heartbeat("brokerA1", "brokerSecret1", broker="broker-b"))
    assert other.code == ResponseCode.NO_PERMISSION and "Broker:broker-b" in other.remark
    elsewhere = answer(registry, heartbeat("brokerA1", "brokerSecret1"), peer="10.0.2.5:40000")
    assert elsewhere.code == ResponseCode.NO_PERMISSION
    # a broker reads routes of any topic (Topic:*), but writes nothing
    assert answer(registry, route("orders", "brokerA1", "brokerSecret1")).code == ResponseCode.SUCCESS
    assert answer(registry, put_kv("brokerA1", "brokerSecret1")).code == ResponseCode.NO_PERMISSION


def test_designating_a_master_is_an_admin_write_even_for_a_broker_account():
    registry, _, _, _ = build()
    ext = {"clusterName": "c1", "brokerName": "broker-a", "brokerId": "1", "designateElect": "true"}
    refused = answer(registry, signed(RequestCode.CONTROLLER_ELECT_MASTER, ext, "brokerA1", "brokerSecret1"))
    assert refused.code == ResponseCode.NO_PERMISSION and "admin_write" in refused.remark
    assert answer(registry, signed(RequestCode.CONTROLLER_ELECT_MASTER, ext, "adminUser",
                                   "adminSecret1")).code == ResponseCode.SUCCESS
    ext["designateElect"] = "false"
    assert answer(registry, signed(RequestCode.CONTROLLER_ELECT_MASTER, ext, "brokerA1",
                                   "brokerSecret1")).code == ResponseCode.SUCCESS


def test_the_most_specific_entry_decides_and_a_deny_beats_an_allow_of_its_rank():
    registry, _, _, _ = build()
    assert answer(registry, route("orders", "reader01", "readerSecret1")).code == ResponseCode.SUCCESS
    denied = answer(registry, route("secret-plans", "reader01", "readerSecret1"))
    assert denied.code == ResponseCode.NO_PERMISSION and "denied by the policy on Topic:secret-*" in denied.remark
    # a request naming no resource needs a grant covering a whole kind: reader01 has "*"
    cluster_info = signed(RequestCode.GET_BROKER_CLUSTER_INFO, {}, "reader01", "readerSecret1")
    assert answer(registry, cluster_info).code == ResponseCode.SUCCESS
    assert answer(registry, signed(RequestCode.GET_BROKER_CLUSTER_INFO, {}, "brokerA1",
                                   "brokerSecret1")).code == ResponseCode.NO_PERMISSION


def test_a_super_user_may_do_everything_and_an_acl_1_account_without_admin_may_read():
    registry, _, _, _ = build()
    assert answer(registry, put_kv("superOps", "superSecret1")).code == ResponseCode.SUCCESS
    assert answer(registry, heartbeat("superOps", "superSecret1")).code == ResponseCode.SUCCESS
    assert answer(registry, route("t", "plainUser", "plainSecret1")).code == ResponseCode.SUCCESS
    assert answer(registry, heartbeat("plainUser", "plainSecret1")).code == ResponseCode.NO_PERMISSION


def test_a_4_9_broker_that_cannot_sign_passes_only_from_broker_allowed_addresses():
    registry, _, cfg, _ = build(brokerAllowedAddresses="10.0.1.0/24")
    assert answer(registry, heartbeat()).code == ResponseCode.SUCCESS
    assert answer(registry, heartbeat(), peer="10.0.9.9:1").code == ResponseCode.NO_PERMISSION
    # only broker-control: an unsigned admin write from there is still refused
    assert answer(registry, put_kv()).code == ResponseCode.NO_PERMISSION
    # and a signed broker request from outside the list is refused by the list
    outside = answer(registry, heartbeat("superOps", "superSecret1"), peer="10.0.9.9:1")
    assert outside.code == ResponseCode.NO_PERMISSION and "brokerAllowedAddresses" in outside.remark


def test_tampered_value_after_signing_is_refused():
    registry, _, _, _ = build()
    request = put_kv("adminUser", "adminSecret1")
    request.ext["value"] = "evil"
    assert answer(registry, request).code == ResponseCode.NO_PERMISSION


def test_signed_classes_follow_the_live_property():
    registry, _, cfg, _ = build(aclSignedClasses="adminWrite")
    read = make_request(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"})
    assert answer(registry, read).code == ResponseCode.SUCCESS
    cfg.update({"aclSignedClasses": "admin_read,admin_write"})
    assert answer(registry, read).code == ResponseCode.NO_PERMISSION
    cfg.update({"aclSignedClasses": "nonsense"})  # a bad runtime value keeps the previous one
    assert answer(registry, read).code == ResponseCode.NO_PERMISSION


def test_bad_signed_classes_at_start_is_an_error():
    with pytest.raises(ValueError, match="unknown request class"):
        build(aclSignedClasses="adminWrite,everything")


def test_white_lists_skip_the_signature_as_in_java():
    registry, _, _, _ = build()
    assert answer(registry, put_kv(), peer="10.10.103.9:4000").code == ResponseCode.SUCCESS
    named_route = signed(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "t", "AccessKey": "trustedHost"})
    assert answer(registry, named_route, peer="192.168.1.20:4000").code == ResponseCode.SUCCESS
    assert answer(registry, named_route, peer="192.168.2.20:4000").code == ResponseCode.NO_PERMISSION
    # the account's white list skips the signature, not its grants: trustedHost is no admin
    named_write = put_kv(AccessKey="trustedHost")
    assert answer(registry, named_write, peer="192.168.1.20:4000").code == ResponseCode.NO_PERMISSION


def test_a_refusal_is_logged_and_written_once_per_peer_and_reason_a_minute_and_counted_every_time():
    listener, events, clock = Listener(), RecordingEventLog(), task.Clock()
    store = AclStore("unused", parse_acl(ACL))
    cfg = make_config(aclEnable="true")
    registry = ProcessorRegistry([Echo()], policies=[TrustPolicy(store, RequestClassifier(), cfg,
                                                                 Refusals([listener], events, clock))])
    for _ in range(5):
        answer(registry, put_kv())
    answer(registry, put_kv(), peer="10.0.1.6:1")
    assert len(listener.rejections) == 6
    assert [(e["peer"], e["unsaid"]) for e in events.named("request_refused")] == [("10.0.1.5:40000", 0),
                                                                              ("10.0.1.6:1", 0)]
    clock.advance(61)
    answer(registry, put_kv())
    assert [e["unsaid"] for e in events.named("request_refused")] == [0, 0, 4]


def test_oneway_refusal_gets_no_answer():
    registry, listener, _, _ = build()
    assert answer(registry, make_request(PUT, {}, oneway=True)) is None
    assert listener.rejections == [("admin_write", "acl_unsigned")]


def test_credentials_reload_when_the_file_changes(tmp_path):
    path = tmp_path / "plain_acl.yml"
    path.write_text(ACL)
    store = AclStore(str(path))
    store.load()
    policy = TrustPolicy(store, RequestClassifier(), make_config(aclEnable="true"), Refusals([], None, task.Clock()))
    registry = ProcessorRegistry([Echo()], policies=[policy])
    clock = task.Clock()
    watcher = FileWatcher([str(path)], store.reload, 0.5, clock=clock)
    watcher.startService()
    assert answer(registry, put_kv("adminUser", "adminSecret1")).code == ResponseCode.SUCCESS

    path.write_text(ACL.replace("adminSecret1", "rotatedSecret"))
    clock.advance(0.5)
    assert store.reloads == 1
    assert answer(registry, put_kv("adminUser", "adminSecret1")).code == ResponseCode.NO_PERMISSION
    assert answer(registry, put_kv("adminUser", "rotatedSecret")).code == ResponseCode.SUCCESS

    path.write_text("accounts: [\n")  # a broken edit keeps the last good credentials
    clock.advance(0.5)
    assert store.reload_failures == 1
    assert answer(registry, put_kv("adminUser", "rotatedSecret")).code == ResponseCode.SUCCESS
    watcher.stopService()
    assert not clock.getDelayedCalls()


def test_broker_allow_list_checks_the_connection_address_not_the_header():
    listener = Listener()
    cfg = make_config(brokerAllowedAddresses="10.0.0.0/8, 192.168.1.{5,6}")
    registry = ProcessorRegistry([Echo()], policies=[BrokerAllowListPolicy(
        RequestClassifier(), cfg, Refusals([listener], None, task.Clock()))])
    register = make_request(RequestCode.REGISTER_BROKER, {"brokerAddr": "10.0.0.1:10911"})
    assert answer(registry, register, peer="10.3.3.3:50000").code == ResponseCode.SUCCESS
    assert answer(registry, register, peer="192.168.1.6:50000").code == ResponseCode.SUCCESS
    refused = answer(registry, register, peer="172.16.0.1:50000")
    assert refused.code == ResponseCode.NO_PERMISSION
    assert refused.remark == "REGISTER_BROKER (103) from 172.16.0.1 refused: the address is not in brokerAllowedAddresses"
    assert answer(registry, route("t"), peer="172.16.0.1:50000").code == ResponseCode.SUCCESS
    cfg.update({"brokerAllowedAddresses": ""})
    assert answer(registry, register, peer="172.16.0.1:50000").code == ResponseCode.SUCCESS
    assert listener.rejections == [("broker_control", "broker_allowlist")]


def test_broker_allow_list_leaves_an_admins_designated_election_to_the_acl():
    """mqadmin electMaster (1002 with designateElect) is an admin's write: it comes from an operator's host,
    which is not a broker's; a broker's own election request (no designateElect) is still held to the list."""
    cfg = make_config(brokerAllowedAddresses="10.0.0.0/8")
    registry = ProcessorRegistry([Echo()], policies=[BrokerAllowListPolicy(
        RequestClassifier(), cfg, Refusals([], None, task.Clock()))])
    ext = {"clusterName": "c", "brokerName": "broker-a", "brokerId": "1"}
    designated = make_request(RequestCode.CONTROLLER_ELECT_MASTER, dict(ext, designateElect="true"))
    own = make_request(RequestCode.CONTROLLER_ELECT_MASTER, dict(ext, designateElect="false"))
    assert answer(registry, designated, peer="172.16.0.1:50000").code == ResponseCode.SUCCESS
    assert answer(registry, own, peer="172.16.0.1:50000").code == ResponseCode.NO_PERMISSION
    assert answer(registry, own, peer="10.1.1.1:50000").code == ResponseCode.SUCCESS
