"""Limits of a real `twistd namesrv`: frame size, connection count, slow readers, header/body sizes.

Java only has the 16 MiB frame limit; maxHeaderLength, maxExtFields, maxRequestBodyLength,
maxInflatedBodyLength and serverReadFrameTimeoutSeconds are ours (docs/robustness.md).
The idle and frame timers are proven on a task.Clock in test_server_timers.py.
"""

import socket
import struct
import time
import zlib

from namesrv.client import recv_exactly
from namesrv.protocol.codec import encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode, SerializeType
from namesrv.protocol.command import make_request
from tests.brokers import crc32, register_request
from tools import checks, peers
from tools.latency import LatencyProbe, RssSampler, answered_within, closed_by_peer

HOST = "127.0.0.1"


def raw_connection(server):
    return socket.create_connection((HOST, server.port), timeout=5)


def route_frame_of_size(total, topic="NoSuchTopic"):
    """A GET_ROUTEINFO_BY_TOPIC frame of exactly ``total`` bytes (length field included), padded with a body."""
    request = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, opaque=7)
    request.body = b"x" * (total - len(encode_frame(request)))
    data = encode_frame(request)
    assert len(data) == total
    return data


def assert_answered(sock, frame):
    sock.sendall(frame)
    (length,) = struct.unpack(">i", recv_exactly(sock, 4))
    assert recv_exactly(sock, length)


def test_frame_over_max_frame_length_is_refused_without_waiting_for_its_body(start_server):
    server = start_server({"maxFrameLength": "65536"})
    with raw_connection(server) as sock:
        sock.sendall(struct.pack(">i", 65536 - 4 + 1) + b"\0\0\0\x10")
        assert closed_by_peer(sock, 5)
    with raw_connection(server) as sock:
        assert_answered(sock, route_frame_of_size(65536))
    assert answered_within(HOST, server.port)


def register_frame_of_size(total):
    """A valid REGISTER_BROKER frame of exactly ``total`` bytes: its JSON body is padded with blanks.

    The CRC's decimal width depends on the padding, so try widths and blank characters until they agree."""
    request = register_request("Big", "big-broker", "127.0.0.1:10911", topics=["T1", "T2"])
    base = request.body
    for width in (10, 9, 8):
        for blank in (b" ", b"\n", b"\t", b"\r"):
            request.body = base
            request.ext["bodyCrc32"] = "0" * width
            request.body = base + blank * (total - len(encode_frame(request)))
            if len(str(crc32(request.body))) == width:
                request.ext["bodyCrc32"] = str(crc32(request.body))
                data = encode_frame(request)
                assert len(data) == total
                return data
    raise AssertionError("could not pad the registration to %d bytes" % total)


def test_default_frame_limit_is_javas_16_mib(start_server):
    server = start_server()
    with raw_connection(server) as sock:
        sock.sendall(struct.pack(">i", 16777213) + b"\0\0\0\x10")
        assert closed_by_peer(sock, 5)
    with server.client() as client:
        client.sock.settimeout(30)
        client.sock.sendall(register_frame_of_size(16 * 1024 * 1024))
        assert client.receive().code == ResponseCode.SUCCESS


def answered_connection(server):
    """A connection the server really serves (one request answered), or None if it was refused."""
    client = server.client()
    try:
        client.call(checks.route_request("Any"))
        return client
    except (OSError, ConnectionError):
        client.close()
        return None


def test_connections_above_server_max_connections_are_closed_at_once(start_server):
    server = start_server({"serverMaxConnections": "20"})
    held = []
    for _ in range(30):  # a closing connection may still count for a moment: retry, bounded
        client = answered_connection(server)
        if client is not None:
            held.append(client)
        if len(held) == 20:
            break
    try:
        assert len(held) == 20
        refused = [raw_connection(server) for _ in range(5)]
        assert all(closed_by_peer(s, 5) for s in refused), "a connection above the limit was kept open"
        for s in refused:
            s.close()
        for client in held[:5]:
            client.close()
        time.sleep(0.5)
        assert answered_within(HOST, server.port)
    finally:
        for client in held:
            client.close()
    server.stop()
    assert "Traceback" not in server.log()
    assert "refused: 20 connections open (serverMaxConnections)" in server.log()


def test_slow_reader_is_paused_then_disconnected_and_memory_stays_bounded(start_server):
    server = start_server({"serverSlowReaderTimeoutSeconds": "2"})
    with checks.ControlBroker(HOST, server.port), peers.fill_topics(HOST, server.port, 2000):
        with RssSampler(server.process.pid) as rss, LatencyProbe(HOST, server.port) as probe:
            figures = peers.slow_readers(HOST, server.port, count=4, duration=10.0)
    assert figures["dropped_by_server"] == 4, figures
    assert figures["requests_sent"] > 100, figures  # answers really piled up: ~40 KiB each
    assert rss.peak_kib - rss.first_kib < 64 * 1024, (rss.first_kib, rss.peak_kib)
    assert probe.stats["errors"] == 0 and probe.stats["requests"] > 50, probe.stats


def test_register_body_may_use_the_whole_frame(start_server):
    """Per-code body limits must not refuse a big broker: 10,000 topics is ~1.5 MiB of JSON."""
    server = start_server({"maxRequestBodyLength": "65536"})
    with server.client() as broker:
        answer = broker.call(register_request("Big", "big-broker", "127.0.0.1:10911",
                                              topics=["T%05d" % i for i in range(10000)]))
        assert answer.code == ResponseCode.SUCCESS, answer.remark


def assert_bomb_refused(server, inflated_size):
    """A compressed REGISTER_BROKER body of ``inflated_size`` zero bytes is refused for what it inflates to."""
    body = zlib.compress(b"\0" * inflated_size, 9)
    ext = {"brokerName": "bomb", "brokerAddr": "127.0.0.1:1", "clusterName": "Bomb", "brokerId": "0",
           "haServerAddr": "127.0.0.1:1", "compressed": "true", "bodyCrc32": str(crc32(body))}
    with server.client() as client:
        answer = client.call(make_request(RequestCode.REGISTER_BROKER, ext, body=body, version=409))
    assert answer.code == ResponseCode.SYSTEM_ERROR and "inflates beyond" in answer.remark


def test_zlib_bomb_beyond_the_inflate_cap_is_refused(start_server):
    server = start_server()
    assert_bomb_refused(server, (260 << 20))
    assert answered_within(HOST, server.port)


# -- limits beyond Java's (proposed by the robustness work, implemented in 4a80480) -----------

LIMITS = {"maxHeaderLength": "1048576", "maxExtFields": "128", "maxRequestBodyLength": "1048576",
            "maxInflatedBodyLength": "67108864", "serverReadFrameTimeoutSeconds": "60"}


def test_limits_are_printed_with_their_defaults(tmp_path):
    import subprocess
    from tests.integration.server import NamesrvProcess

    server = NamesrvProcess(tmp_path)
    out = subprocess.run(server.command("-p"), env=server.env(), capture_output=True, text=True, timeout=60)
    printed = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert {key: printed.get(key) for key in LIMITS} == LIMITS


def test_header_longer_than_max_header_length_closes_the_connection(start_server):
    server = start_server({"maxHeaderLength": "4096"})
    request = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T", "pad": "p" * 8192})
    with raw_connection(server) as sock:
        sock.sendall(encode_frame(request))
        assert closed_by_peer(sock, 5)


def test_more_ext_fields_than_max_ext_fields_closes_the_connection(start_server):
    server = start_server({"maxExtFields": "64"})
    ext = {"topic": "T", **{"f%d" % i: "v" for i in range(100)}}
    request = make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, ext, serialize_type=SerializeType.ROCKETMQ)
    with raw_connection(server) as sock:
        sock.sendall(encode_frame(request))
        assert closed_by_peer(sock, 5)


def test_body_over_max_request_body_length_closes_the_connection(start_server):
    server = start_server({"maxRequestBodyLength": "65536"})
    with raw_connection(server) as sock:
        sock.sendall(route_frame_of_size(100 * 1024))
        assert closed_by_peer(sock, 5)


def test_oversized_body_is_refused_once_the_header_arrived(start_server):
    """The limit is checked as soon as the header is in, before the body is buffered."""
    server = start_server({"maxRequestBodyLength": "65536"})
    frame = route_frame_of_size(8 * 1024 * 1024)
    with raw_connection(server) as sock:
        sock.sendall(frame[:64 * 1024])
        assert closed_by_peer(sock, 5)


def test_inflated_body_over_max_inflated_body_length_is_refused(start_server):
    server = start_server({"maxInflatedBodyLength": "1048576"})
    assert_bomb_refused(server, (4 << 20))
