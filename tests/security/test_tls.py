"""TLS modes on the remoting port: first-byte sniffing, both client kinds on one permissive port, reloads."""

import pytest
import pytest_twisted
from twisted.internet import defer, protocol, reactor, ssl, task
from twisted.internet.endpoints import SSL4ClientEndpoint, TCP4ClientEndpoint, connectProtocol
from twisted.internet.testing import StringTransport
from twisted.protocols.tls import TLSMemoryBIOFactory

from namesrv.client import RemotingClientProtocol
from namesrv.protocol.codec import encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.security.certs import ServerTlsMaterial, TlsConfigError
from namesrv.server import tlsmode
from tests.security import fakes
from tests.security.certs import write_pair, client_options


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return write_pair(tmp_path_factory.mktemp("tls"))


def material_for(pair):
    cert, key, _ = pair
    material = ServerTlsMaterial(cert_path=cert, key_path=key)
    material.load()
    return material


def sniffing(mode, pair, clock=None, **values):
    svc = fakes.service(clock or task.Clock(), **values)
    material = material_for(pair) if mode != tlsmode.DISABLED else None
    return tlsmode.TlsSniffingFactory(svc.factory, mode, material, reactor=clock), svc


# -- unit: the sniffer on a StringTransport ---------------------------------------
def test_plain_first_byte_goes_straight_to_the_remoting_protocol(pair):
    factory, svc = sniffing(tlsmode.PERMISSIVE, pair)
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    assert svc.factory.connections == {}  # not connected until the first byte
    frame = encode_frame(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "t"}, opaque=5))
    proto.dataReceived(frame[:3])
    proto.dataReceived(frame[3:])
    assert len(svc.factory.connections) == 1
    assert b"GET_ROUTEINFO_BY_TOPIC" in transport.value()
    assert factory.counts["plain"] == 1
    proto.connectionLost(protocol.connectionDone)
    assert svc.factory.connections == {}


@pytest.mark.parametrize("mode,first,refused", [
    (tlsmode.DISABLED, b"\x16\x03\x01", "refused_tls"),
    (tlsmode.ENFORCING, b"\x00\x00\x00\x10", "refused_plain"),
])
def test_wrong_kind_of_client_is_closed(pair, mode, first, refused):
    factory, svc = sniffing(mode, pair)
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    proto.dataReceived(first)
    assert transport.disconnecting and transport.value() == b""
    assert factory.counts[refused] == 1 and svc.factory.connections == {}


def test_tls_handshake_starts_tls(pair):
    factory, svc = sniffing(tlsmode.ENFORCING, pair)
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    proto.makeConnection(transport)
    # A real ClientHello, produced by an in-memory TLS client.
    client_factory = TLSMemoryBIOFactory(ssl.optionsForClientTLS("localhost"), True,
                                         protocol.Factory.forProtocol(protocol.Protocol))
    client = client_factory.buildProtocol(None)
    client_transport = StringTransport()
    client.makeConnection(client_transport)
    hello = client_transport.value()
    assert hello[:1] == b"\x16"
    proto.dataReceived(hello)
    assert factory.counts["tls"] == 1
    assert transport.value()[:1] == b"\x16"  # the ServerHello
    assert len(svc.factory.connections) == 1


def test_silent_peer_is_closed_after_the_idle_timeout(pair):
    clock = task.Clock()
    factory, _ = sniffing(tlsmode.PERMISSIVE, pair, clock=clock, serverChannelMaxIdleTimeSeconds=30)
    proto = factory.buildProtocol(None)
    transport = StringTransport()
    transport.abortConnection = lambda: setattr(transport, "aborted", True)
    proto.makeConnection(transport)
    clock.advance(29)
    assert not getattr(transport, "aborted", False)
    clock.advance(1)
    assert transport.aborted and factory.counts["silent"] == 1


def test_connection_limit_counts_connections_still_silent(pair):
    factory, svc = sniffing(tlsmode.PERMISSIVE, pair, serverMaxConnections=2)
    first = factory.buildProtocol(None)
    first.makeConnection(StringTransport())
    first.dataReceived(b"\x00")
    silent = factory.buildProtocol(None)
    silent.makeConnection(StringTransport())
    assert factory.buildProtocol(None) is None  # one connected + one silent
    silent.connectionLost(protocol.connectionDone)
    assert factory.buildProtocol(None) is not None


def test_mode_names():
    assert tlsmode.parse_mode(" Permissive ") == "permissive"
    assert tlsmode.parse_mode("") == "disabled"
    with pytest.raises(ValueError, match="tlsMode"):
        tlsmode.parse_mode("strict")


# -- material ----------------------------------------------------------------------
def test_material_errors(tmp_path, pair):
    cert, key, _ = pair
    _, other_key, _ = write_pair(tmp_path, "other")
    with pytest.raises(TlsConfigError, match="does not belong"):
        ServerTlsMaterial(cert_path=cert, key_path=other_key).load()
    with pytest.raises(TlsConfigError, match="not set"):
        ServerTlsMaterial().load()
    with pytest.raises(TlsConfigError, match="only one"):
        ServerTlsMaterial(cert_path=cert).load()
    with pytest.raises(TlsConfigError, match="needs tlsServerTrustCertPath"):
        ServerTlsMaterial(cert_path=cert, key_path=key, client_auth="require").load()
    assert ServerTlsMaterial(test_mode=True).load() is not None


def test_encrypted_key_needs_its_password(tmp_path):
    cert, key, _ = write_pair(tmp_path, "enc", password="pass-word")
    assert ServerTlsMaterial(cert_path=cert, key_path=key, key_password="pass-word").load() is not None
    with pytest.raises(TlsConfigError, match="password"):
        ServerTlsMaterial(cert_path=cert, key_path=key).load()
    password_file = tmp_path / "key.pass"
    password_file.write_text("pass-word\n")
    material = ServerTlsMaterial(cert_path=cert, key_path=key, key_password_path=str(password_file))
    assert material.load() is not None and str(password_file) in material.watched_paths


@pytest_twisted.inlineCallbacks
def test_permissive_port_serves_tls_and_plain_clients(pair):
    factory, svc = sniffing(tlsmode.PERMISSIVE, pair, clock=reactor)
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    try:
        number = port.getHost().port
        tls_client = yield connectProtocol(SSL4ClientEndpoint(reactor, "127.0.0.1", number, client_options(pair[2])),
                                           RemotingClientProtocol())
        plain_client = yield connectProtocol(TCP4ClientEndpoint(reactor, "127.0.0.1", number), RemotingClientProtocol())
        tls_answer = yield tls_client.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "t"}))
        plain_answer = yield plain_client.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "t"}))
        assert tls_answer.code == plain_answer.code == ResponseCode.SUCCESS
        assert tls_answer.remark == "GET_ROUTEINFO_BY_TOPIC"
        assert factory.counts["tls"] == 1 and factory.counts["plain"] == 1
        assert tls_client.transport.getPeerCertificate() is not None
        tls_client.transport.loseConnection()
        plain_client.transport.loseConnection()
        yield defer.DeferredList([tls_client.closed, plain_client.closed])
    finally:
        yield port.stopListening()


@pytest_twisted.inlineCallbacks
def test_enforcing_port_closes_plain_clients(pair):
    factory, _ = sniffing(tlsmode.ENFORCING, pair, clock=reactor)
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    try:
        plain_client = yield connectProtocol(TCP4ClientEndpoint(reactor, "127.0.0.1", port.getHost().port),
                                             RemotingClientProtocol())
        answer = plain_client.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "t"}))
        yield plain_client.closed
        failures = []
        answer.addErrback(failures.append)
        assert failures and factory.counts["refused_plain"] == 1
    finally:
        yield port.stopListening()


@pytest_twisted.inlineCallbacks
def test_new_certificate_serves_new_connections_after_reload(tmp_path):
    cert, key, first_leaf = write_pair(tmp_path)
    material = ServerTlsMaterial(cert_path=cert, key_path=key)
    material.load()
    svc = fakes.service(reactor)
    factory = tlsmode.TlsSniffingFactory(svc.factory, tlsmode.PERMISSIVE, material, reactor=reactor)
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    try:
        number = port.getHost().port
        _, _, second_leaf = write_pair(tmp_path)  # same paths, new pair
        assert material.reload()
        client = yield connectProtocol(SSL4ClientEndpoint(reactor, "127.0.0.1", number, client_options(second_leaf)),
                                       RemotingClientProtocol())
        answer = yield client.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "t"}))
        assert answer.code == ResponseCode.SUCCESS
        served = client.transport.getPeerCertificate().to_cryptography()
        assert served == second_leaf and served != first_leaf
        client.transport.loseConnection()
        yield client.closed
    finally:
        yield port.stopListening()
