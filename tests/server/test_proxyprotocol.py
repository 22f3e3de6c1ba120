"""PROXY headers on a remoting port, on a StringTransport: who may send one, what the guards then see,
and what a connection that sends a bad one, a slow one or none gets."""

import types

import pytest
from twisted.internet import protocol, ssl, task
from twisted.internet.address import IPv4Address, IPv6Address
from twisted.internet.testing import StringTransport
from twisted.logger import formatEvent, globalLogPublisher
from twisted.protocols.tls import TLSMemoryBIOFactory

from namesrv.controller.replication.members import MAGIC
from namesrv.controller.replication.sniffing import MemberSniffingFactory
from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.server import proxyprotocol, tlsmode
from namesrv.server.proxyprotocol import HEADER_TIMEOUT, ProxyHeaderFactory, proxy_protocol_factory, trusted_proxies
from tests import proxyheaders
from tests.brokers import register_request
from tests.config_for import make_config
from tests.fakes import run_turns, written_frames
from tests.security import fakes
from tests.security.certs import write_pair

TRUSTED = "10.0.0.5,10.1.0.0/16,fd00::/8"
PROXY = IPv4Address("TCP", "10.0.0.5", 41000)
STRANGER = IPv4Address("TCP", "192.0.2.66", 41001)
CLIENT = ("203.0.113.7", 40001)
ROUTE = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"}, opaque=7)


def proxied(clock=None, trusted=TRUSTED, **values):
    clock = clock or task.Clock()
    svc = fakes.service(clock, **values)
    factory = ProxyHeaderFactory(svc.listen_factory, svc.factory, trusted_proxies(trusted), reactor=clock)
    return factory, svc, clock


def connect(factory, peer=PROXY):
    proto = factory.buildProtocol(peer)
    transport = StringTransport(peerAddress=peer)
    proto.makeConnection(transport)
    return proto, transport


def answers(transport, clock):
    run_turns(clock)
    return [decode_frame(frame[4:]) for frame in written_frames(transport)]


def only_connection(svc):
    (connection,) = svc.factory.connections.values()
    return connection


def closed(transport):
    return transport.disconnecting or transport.disconnected


@pytest.fixture
def warnings():
    seen = []

    def observe(event):
        if event.get("log_namespace") == "namesrv.server.proxyprotocol":
            seen.append(event)
    globalLogPublisher.addObserver(observe)
    yield seen
    globalLogPublisher.removeObserver(observe)


# -- a trusted proxy's header ------------------------------------------------------------------
@pytest.mark.parametrize("header,peer,kind", [
    (proxyheaders.v1(CLIENT), "203.0.113.7:40001", "v1"),
    (proxyheaders.v2(CLIENT), "203.0.113.7:40001", "v2"),
    (proxyheaders.v1(("2001:db8::7", 40002), ("2001:db8::1", 9876)), "2001:db8::7:40002", "v1"),
    (proxyheaders.v2(("2001:db8::7", 40002), ("2001:db8::1", 9876)), "2001:db8::7:40002", "v2"),
])
def test_a_trusted_proxys_header_is_the_connections_peer(header, peer, kind):
    factory, svc, clock = proxied()
    proto, transport = connect(factory)
    assert svc.factory.connections == {}        # nothing built before the header is in
    proto.dataReceived(header + encode_frame(ROUTE))
    connection = only_connection(svc)
    assert (connection.peer, connection.via) == (peer, "10.0.0.5:41000")
    assert connection.transport is transport    # the socket itself: no wrapper in between
    (answer,) = answers(transport, clock)
    assert answer.opaque == 7 and answer.remark == "GET_ROUTEINFO_BY_TOPIC"
    assert factory.counts[kind] == 1 and factory.counts["direct"] == 0


@pytest.mark.parametrize("header", [proxyheaders.v1(CLIENT), proxyheaders.v2(CLIENT)])
def test_a_header_and_a_frame_split_at_every_byte(header):
    factory, svc, clock = proxied()
    proto, transport = connect(factory)
    for byte in header + encode_frame(ROUTE):
        proto.dataReceived(bytes([byte]))
    assert only_connection(svc).peer == "203.0.113.7:40001"
    assert [a.opaque for a in answers(transport, clock)] == [7]


@pytest.mark.parametrize("header", [proxyheaders.v1(), proxyheaders.v2(local=True), proxyheaders.v2(),
                                    proxyheaders.v2_unix()])
def test_a_header_naming_no_client_keeps_the_proxys_address(header):
    """v1 UNKNOWN, v2 LOCAL (HAProxy's health checks), an unspecified or UNIX family."""
    factory, svc, clock = proxied()
    proto, transport = connect(factory)
    proto.dataReceived(header + encode_frame(ROUTE))
    connection = only_connection(svc)
    assert (connection.peer, connection.via) == ("10.0.0.5:41000", None)
    assert len(answers(transport, clock)) == 1 and factory.counts["local"] == 1


def test_a_health_check_that_closes_after_its_header():
    factory, svc, clock = proxied()
    proto, transport = connect(factory, IPv4Address("TCP", "10.1.2.3", 5000))   # in 10.1.0.0/16
    proto.dataReceived(proxyheaders.v2(local=True))
    assert len(svc.factory.connections) == 1
    proto.connectionLost(protocol.connectionDone)
    assert svc.factory.connections == {} and factory.pending == set()
    assert svc.factory.housekeeping.closed and factory.counts["local"] == 1


def test_an_ipv6_proxy_is_trusted_by_its_network():
    factory, svc, clock = proxied()
    proto, transport = connect(factory, IPv6Address("TCP", "fd00::5", 41000))
    proto.dataReceived(proxyheaders.v2(CLIENT) + encode_frame(ROUTE))
    assert (only_connection(svc).peer, only_connection(svc).via) == ("203.0.113.7:40001", "fd00::5:41000")


# -- who may not send one ---------------------------------------------------------------------
@pytest.mark.parametrize("header", [proxyheaders.v1(CLIENT), proxyheaders.v2(CLIENT)])
def test_a_header_from_an_untrusted_address_closes_the_connection(header, warnings):
    factory, svc, clock = proxied()
    proto, transport = connect(factory, STRANGER)
    proto.dataReceived(header + encode_frame(ROUTE))
    assert closed(transport) and transport.value() == b""
    assert svc.factory.connections == {} and factory.pending == set()
    assert factory.counts["untrusted"] == 1
    assert ["192.0.2.66" in e["host"] and "not in proxyProtocolTrustedAddresses" in e["why"] for e in warnings] == [True]


def test_an_untrusted_header_is_refused_as_soon_as_its_signature_is_in():
    factory, svc, clock = proxied()
    proto, transport = connect(factory, STRANGER)
    for byte in b"PROXY":
        proto.dataReceived(bytes([byte]))
        assert not closed(transport)
    proto.dataReceived(b" TCP4")
    assert closed(transport) and factory.counts["untrusted"] == 1


def test_refusals_are_logged_once_per_peer_and_reason_a_minute(warnings):
    factory, svc, clock = proxied()
    for _ in range(3):
        connect(factory, STRANGER)[0].dataReceived(proxyheaders.v1(CLIENT))
    connect(factory, IPv4Address("TCP", "192.0.2.67", 1))[0].dataReceived(proxyheaders.v1(CLIENT))
    connect(factory, PROXY)[0].dataReceived(encode_frame(ROUTE))            # another reason: missing
    assert [(e["host"], e["kind"], e["n"]) for e in warnings] == [
        ("192.0.2.66", "untrusted", 1), ("192.0.2.67", "untrusted", 4), ("10.0.0.5", "missing", 1)]
    clock.advance(proxyprotocol.WARNING_WINDOW)
    connect(factory, STRANGER)[0].dataReceived(proxyheaders.v1(CLIENT))
    assert warnings[-1]["n"] == 5 and factory.counts["untrusted"] == 5


def test_the_peers_remembered_for_warnings_are_bounded(warnings, monkeypatch):
    monkeypatch.setattr(proxyprotocol, "WARNING_PEERS", 3)
    factory, svc, clock = proxied()
    for n in range(5):
        connect(factory, IPv4Address("TCP", "192.0.2.%d" % n, 1))[0].dataReceived(proxyheaders.v1(CLIENT))
    assert len(factory._warned) == 3 and len(warnings) == 3 and factory.counts["untrusted"] == 5


def test_a_storm_of_refused_peers_is_thinned_to_the_houses_rate(warnings):
    factory, svc, clock = proxied()
    for n in range(25):
        connect(factory, IPv4Address("TCP", "192.0.2.%d" % n, 1))[0].dataReceived(proxyheaders.v1(CLIENT))
    assert len(warnings) == 20 and factory.counts["untrusted"] == 25   # every one counted, 20 lines per 10 s
    clock.advance(10)
    connect(factory, IPv4Address("TCP", "192.0.2.99", 1))[0].dataReceived(proxyheaders.v1(CLIENT))
    assert "5 more such warnings" in formatEvent(warnings[-2]) and warnings[-1]["host"] == "192.0.2.99"


def test_an_untrusted_client_without_a_header_is_served_as_before():
    factory, svc, clock = proxied()
    proto, transport = connect(factory, STRANGER)
    frame = encode_frame(ROUTE)
    proto.dataReceived(frame[:1])   # one byte tells: no signature starts with 0x00
    assert len(svc.factory.connections) == 1
    proto.dataReceived(frame[1:])
    connection = only_connection(svc)
    assert (connection.peer, connection.via) == ("192.0.2.66:41001", None)
    assert [a.opaque for a in answers(transport, clock)] == [7] and factory.counts["direct"] == 1


def test_a_trusted_proxy_that_sends_no_header_is_closed(warnings):
    factory, svc, clock = proxied()
    proto, transport = connect(factory)
    proto.dataReceived(encode_frame(ROUTE))
    assert closed(transport) and transport.value() == b"" and svc.factory.connections == {}
    assert factory.counts["missing"] == 1 and "no PROXY header" in warnings[0]["why"]


@pytest.mark.parametrize("data", [
    b"PROXY TCP4 evil.example 127.0.0.1 1 2\r\n",
    b"PROXY " + b"x" * 120,                                         # no end within 107 bytes
    proxyheaders.V2_SIGNATURE + b"\x21\x11\xff\xff",                # claims 64 KiB: refused at once
])
def test_a_bad_or_oversized_header_closes_the_connection(data, warnings):
    factory, svc, clock = proxied()
    proto, transport = connect(factory)
    proto.dataReceived(data)
    assert closed(transport) and svc.factory.connections == {}
    assert factory.counts["bad"] == 1 and "bad PROXY header" in warnings[0]["why"]
    proto.dataReceived(encode_frame(ROUTE))   # what it sends after is dropped
    assert svc.factory.connections == {} and transport.value() == b""


def test_a_header_sent_slowly_is_closed_after_the_header_timeout():
    factory, svc, clock = proxied(serverChannelMaxIdleTimeSeconds=120)
    proto, transport = connect(factory)
    header = proxyheaders.v1(CLIENT)
    proto.dataReceived(header[:10])
    clock.advance(HEADER_TIMEOUT - 1)
    proto.dataReceived(header[10:20])          # trickling does not move the deadline
    assert not closed(transport)
    clock.advance(1)
    assert closed(transport) and factory.counts["timeout"] == 1 and factory.pending == set()


def test_a_silent_untrusted_peer_waits_as_long_as_any_connection_may_stay_silent():
    factory, svc, clock = proxied(serverChannelMaxIdleTimeSeconds=30)
    proto, transport = connect(factory, STRANGER)
    proto.dataReceived(b"PRO")                 # a prefix of a signature: undecided, at most 11 bytes kept
    clock.advance(29)
    assert not closed(transport)
    clock.advance(1)
    assert closed(transport) and factory.counts["silent"] == 1


def test_connections_waiting_for_their_header_count_towards_the_connection_limit():
    factory, svc, clock = proxied(serverMaxConnections=2)
    served, _ = connect(factory)
    served.dataReceived(proxyheaders.v1(CLIENT))
    waiting, _ = connect(factory)
    assert factory.buildProtocol(PROXY) is None and factory.counts["over_limit"] == 1
    waiting.connectionLost(protocol.connectionDone)
    assert factory.buildProtocol(PROXY) is not None


def test_a_wrapped_factory_that_refuses_after_the_header_closes_the_connection():
    """The wrapped factory checks its own limit when it builds (TLS sniffing, member sniffing)."""
    factory, svc, clock = proxied()
    factory.wrapped = types.SimpleNamespace(buildProtocol=lambda addr: None, pending=())
    proto, transport = connect(factory)
    proto.dataReceived(proxyheaders.v1(CLIENT))
    assert closed(transport) and factory.pending == set() and factory.counts["v1"] == 0
    proto.dataReceived(encode_frame(ROUTE))     # ignored, never parsed as a header
    assert transport.value() == b"" and factory.counts["missing"] == 0


# -- after the header: TLS, and the guards ------------------------------------------------------
def test_tls_starts_after_the_header(tmp_path):
    """HAProxy in TCP mode sends its header, then the client's ClientHello."""
    cert, key, _ = write_pair(tmp_path)
    factory, svc, clock = proxied(tlsMode=tlsmode.PERMISSIVE, tlsServerCertPath=cert, tlsServerKeyPath=key)
    proto, transport = connect(factory)
    client = TLSMemoryBIOFactory(ssl.optionsForClientTLS("localhost"), True,
                                 protocol.Factory.forProtocol(protocol.Protocol)).buildProtocol(None)
    client_transport = StringTransport()
    client.makeConnection(client_transport)
    proto.dataReceived(proxyheaders.v2(CLIENT) + client_transport.value())
    assert svc.tls.factory.counts["tls"] == 1 and transport.value()[:1] == b"\x16"   # the ServerHello
    assert only_connection(svc).peer == "203.0.113.7:40001"


def register_from(factory, svc, clock, source):
    proto, transport = connect(factory)
    proto.dataReceived(proxyheaders.v1(source) + encode_frame(register_request("C", "b1", "10.9.9.9:10911")))
    (answer,) = answers(transport, clock)
    proto.connectionLost(protocol.connectionDone)
    return answer


def test_broker_allowed_addresses_sees_the_headers_address():
    factory, svc, clock = proxied(brokerAllowedAddresses="203.0.113.0/24")
    assert register_from(factory, svc, clock, CLIENT).code == ResponseCode.SUCCESS
    refused = register_from(factory, svc, clock, ("198.51.100.9", 1))
    assert refused.code == ResponseCode.NO_PERMISSION and "from 198.51.100.9 refused" in refused.remark
    # the proxy's own address is not what is checked
    factory, svc, clock = proxied(brokerAllowedAddresses="10.0.0.5")
    assert register_from(factory, svc, clock, CLIENT).code == ResponseCode.NO_PERMISSION


def test_an_acl_white_list_sees_the_headers_address(tmp_path):
    acl = tmp_path / "plain_acl.yml"
    acl.write_text("globalWhiteRemoteAddresses:\n  - 203.0.113.*\naccounts:\n"
                   "  - accessKey: adminUser\n    secretKey: adminSecret1\n    admin: true\n")
    factory, svc, clock = proxied(aclEnable=True, aclFile=str(acl), aclSignedClasses="all")
    assert register_from(factory, svc, clock, CLIENT).code == ResponseCode.SUCCESS
    assert register_from(factory, svc, clock, ("198.51.100.9", 1)).code == ResponseCode.NO_PERMISSION


# -- configuration ------------------------------------------------------------------------------
def test_off_by_default_and_on_only_with_trusted_addresses():
    assert proxy_protocol_factory(make_config(), None, None) is None
    with pytest.raises(ValueError, match="needs proxyProtocolTrustedAddresses"):
        proxy_protocol_factory(make_config(proxyProtocolEnable=True), None, None)
    with pytest.raises(ValueError, match="proxyProtocolTrustedAddresses=10.0.0.0/33"):
        proxy_protocol_factory(make_config(proxyProtocolEnable=True, proxyProtocolTrustedAddresses="10.0.0.0/33"),
                               None, None)
    built = proxy_protocol_factory(make_config(proxyProtocolEnable=True, proxyProtocolTrustedAddresses="10.0.0.5"),
                                   "wrapped", "remoting")
    assert built.trusts(PROXY) and not built.trusts(STRANGER) and not built.trusts(None)


def test_the_properties_cannot_be_changed_from_the_network():
    black_list = make_config().configBlackList.split(";")
    assert "proxyProtocolEnable" in black_list and "proxyProtocolTrustedAddresses" in black_list


# -- the controller port: members' handshakes share it ---------------------------------------------
class Members:
    """Stands for the controller's mesh: the links it accepts, recording what they read."""

    def __init__(self):
        self.links = []
        self.refusals = types.SimpleNamespace(refused=lambda host, reason: None)

    def accept(self):
        link = Recorder()
        self.links.append(link)
        return link


class Recorder(protocol.Protocol):
    def __init__(self):
        self.data = b""

    def dataReceived(self, data):
        self.data += data


def controller_port(clock=None):
    clock = clock or task.Clock()
    svc = fakes.service(clock)
    members = Members()
    sniffing = MemberSniffingFactory(svc.factory, members, clock)
    return ProxyHeaderFactory(sniffing, svc.factory, trusted_proxies(TRUSTED), reactor=clock), svc, members


def test_a_controller_member_that_connects_directly_still_links():
    factory, svc, members = controller_port()
    proto, transport = connect(factory, STRANGER)
    hello = MAGIC + b"\x01" + b"n1".ljust(32, b"\0") + bytes(32)
    proto.dataReceived(hello[:3])
    proto.dataReceived(hello[3:])
    assert [link.data for link in members.links] == [hello] and factory.counts["direct"] == 1


@pytest.mark.parametrize("then,member", [(MAGIC + b"\x01", True), (encode_frame(ROUTE), False)])
def test_behind_a_proxy_the_controller_port_sniffs_what_follows_the_header(then, member):
    factory, svc, members = controller_port()
    proto, transport = connect(factory)
    proto.dataReceived(proxyheaders.v2(CLIENT) + then)
    if member:
        assert [link.data for link in members.links] == [then] and svc.factory.connections == {}
    else:
        assert members.links == [] and only_connection(svc).peer == "203.0.113.7:40001"


# -- wiring: what make_service and the controller listen with ------------------------------------
def test_the_name_server_listens_behind_proxy_headers_and_exports_their_counts(tmp_path):
    from namesrv.service import make_service
    from tests.config_for import service_config
    from tests.fakes import Reactor
    off = make_service(service_config(tmp_path / "off"), clock=task.Clock(), reactor=Reactor())
    assert off.proxy is None and off.listen_factory is off.factory
    svc = make_service(service_config(tmp_path / "on", proxyProtocolEnable=True, proxyProtocolTrustedAddresses="10.0.0.5",
                                      prometheusListenPort=1), clock=task.Clock(), reactor=Reactor())
    assert svc.listen_factory is svc.proxy and svc.proxy.wrapped is svc.factory and svc.proxy.remoting is svc.factory
    svc.proxy.counts["v2"] += 1
    text = svc.namedServices["prometheus"].metrics.exposition().decode()
    assert 'rocketmq_namesrv_proxy_protocol_connections_total{kind="v2",port="namesrv"} 1.0' in text


def test_the_controller_port_listens_behind_proxy_headers(tmp_path):
    from namesrv.config import NamesrvConfig
    from namesrv.controller.service import ControllerService
    from namesrv.observe.eventlog import NullEventLog
    config = NamesrvConfig()
    config.update({"controllerDLegerPeers": "n0-127.0.0.1:1", "controllerDLegerSelfId": "n0",
                   "controllerStorePath": str(tmp_path / "store"), "proxyProtocolEnable": "true",
                   "proxyProtocolTrustedAddresses": "10.0.0.5"}, announce=False)
    service = ControllerService(config, task.Clock(), NullEventLog())
    assert service.port_service.args[1] is service.proxy and service.proxy.remoting is service.factory
