"""Hostile and broken peers, each bounded in count and time, each returning its figures as a dict.

- ``slow_readers``: pipeline big-answer requests and never read the answers;
- ``slowloris``: trickle one byte of a large frame per interval on many connections;
- ``half_open``: connect, send a few bytes of a frame, then stay silent;
- ``connection_storm``: open many connections at once, drop them (RST), repeat;
- ``register_then_cut``: register 10,000 topics, then cut a second registration mid-body;
- ``zlib_bombs``: compressed registrations that inflate to ``inflated`` bytes.
"""

import json
import selectors
import socket
import struct
import time
import zlib

from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codec import encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from tools import checks

_LINGER_RST = struct.pack("ii", 1, 0)


def _connect(host, port, rcvbuf=None, timeout=5.0):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(timeout)
    sock.connect((host, port))
    return sock


def _readable(socks, skip, timeout):
    """Indexes of the sockets (not in ``skip``) with data or EOF waiting; epoll, so no 1024-fd limit."""
    with selectors.DefaultSelector() as selector:
        for i, s in enumerate(socks):
            if i not in skip:
                selector.register(s, selectors.EVENT_READ, i)
        return [key.data for key, _ in selector.select(timeout)] if selector.get_map() else []


def _register(cluster, name, addr, topics, counter=1, compressed=False):
    from tests.brokers import register_request
    return register_request(cluster, name, addr, topics=topics, counter=counter, compressed=compressed)


def fill_topics(host, port, count=2000, name="hostile-filler", keepalive=None):
    """A broker with ``count`` topics, so topic-list answers are big; close it when done."""
    topics = ["HostileTopic-%05d" % i for i in range(count)]
    return checks.KeptBroker(host, port, lambda: _register("HostileCluster", name, "127.0.0.1:29999", topics),
                             keepalive=keepalive)


def big_registration(host, port, topics=100000, rounds=3):
    """One broker re-registers ``topics`` topics ``rounds`` times (DataVersion changes each time)."""
    names = ["BigTopic-%06d" % i for i in range(topics)]
    seconds = []
    with BlockingRemotingClient(host, port, timeout=120) as client:
        for r in range(rounds):
            request = _register("BigCluster", "big-broker", "127.0.0.1:26000", names, counter=r + 1)
            started = time.monotonic()
            answer = client.call(request)
            seconds.append(time.monotonic() - started)
            if answer.code != ResponseCode.SUCCESS:
                return {"topics": topics, "refused": "%s %s" % (answer.code, answer.remark)}
    return {"topics": topics, "body_bytes": len(request.body), "register_s_max": max(seconds)}


def slow_readers(host, port, count=20, duration=10.0, rcvbuf=4096):
    """Peers that keep asking for the full topic list and never read; the server should pause, then drop them."""
    request = encode_frame(make_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
    socks = [_connect(host, port, rcvbuf) for _ in range(count)]
    for s in socks:
        s.setblocking(False)
    opened = time.monotonic()
    dropped_after = {}
    sent = 0
    while time.monotonic() - opened < duration and len(dropped_after) < count:
        for i, s in enumerate(socks):
            if i in dropped_after:
                continue
            try:
                sent += s.send(request)
            except BlockingIOError:
                pass
            except OSError:
                dropped_after[i] = time.monotonic() - opened
        time.sleep(0.01)
    for s in socks:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
        s.close()
    times = sorted(dropped_after.values())
    return {"peers": count, "requests_sent": sent // len(request), "dropped_by_server": len(times),
            "first_drop_s": times[0] if times else None, "last_drop_s": times[-1] if times else None}


def _big_frame_prefix(body_length=1 << 20):
    """The first bytes of a REGISTER_BROKER frame announcing a ``body_length`` body."""
    header = json.dumps({"code": 103, "extFields": {"brokerName": "slow", "brokerAddr": "127.0.0.1:1",
                                                    "clusterName": "Slow", "brokerId": "0"},
                         "flag": 0, "language": "JAVA", "opaque": 1, "version": 409}).encode()
    return struct.pack(">ii", 4 + len(header) + body_length, len(header)) + header + b"{" * 4096


def slowloris(host, port, count=200, duration=10.0, interval=1.0):
    """Each peer sends one more byte of a large frame every ``interval`` seconds."""
    payload = _big_frame_prefix()
    socks, refused = [], 0
    for _ in range(count):
        try:
            socks.append(_connect(host, port))
        except OSError:
            refused += 1
    opened = time.monotonic()
    position = 0
    closed = set()
    while time.monotonic() - opened < duration:
        for i, s in enumerate(socks):
            if i in closed:
                continue
            try:
                s.send(payload[position:position + 1])
            except OSError:
                closed.add(i)
        closed.update(_readable(socks, closed, 0))
        position += 1
        time.sleep(interval)
    for s in socks:
        s.close()
    return {"peers": count, "refused_at_connect": refused, "bytes_per_peer": position,
            "closed_by_server": len(closed)}


def half_open(host, port, count=500, hold=5.0, partial=b"\x00\x00\x01"):
    """Connections that send ``partial`` (part of a length field) and then nothing; returns how many the
    server closed within ``hold`` seconds and how long the last one took."""
    socks, refused = [], 0
    for _ in range(count):
        try:
            s = _connect(host, port)
            if partial:
                s.sendall(partial)
            socks.append(s)
        except OSError:
            refused += 1
    opened = time.monotonic()
    closed = set()
    closed_at = []
    while len(closed) < len(socks) and time.monotonic() - opened < hold:
        for i in _readable(socks, closed, 0.2):
            try:
                data = socks[i].recv(1024)
            except OSError:
                data = b""
            if not data:
                closed_at.append(time.monotonic() - opened)
                closed.add(i)
    for s in socks:
        s.close()
    return {"connections": count, "refused_at_connect": refused, "closed_by_server": len(closed_at),
            "last_closed_s": max(closed_at) if closed_at else None}


def connection_storm(host, port, concurrent=5000, rounds=3, max_seconds=60.0):
    """Open ``concurrent`` connections as fast as possible, drop them all with RST, ``rounds`` times."""
    opened = failed = 0
    started = time.monotonic()
    for _ in range(rounds):
        socks = []
        for _ in range(concurrent):
            try:
                s = socket.create_connection((host, port), timeout=5)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
                socks.append(s)
                opened += 1
            except OSError:
                failed += 1
        for s in socks:
            s.close()
        if time.monotonic() - started > max_seconds:
            break
    seconds = time.monotonic() - started
    return {"connections_opened": opened, "connect_failures": failed, "seconds": seconds,
            "connections_per_s": opened / seconds if seconds else None}


def register_then_cut(host, port, topics=10000, rounds=3, settle=5.0):
    """Register ``topics`` topics, then send a second registration and disconnect in the middle of its body.

    Returns how many rounds registered fine and how many left the server consistent: the cut
    frame changed nothing, and the broker (whose connection is gone) vanished from routes
    within ``settle`` seconds."""
    names = ["CutTopic-%05d" % i for i in range(topics)]
    registered = gone = 0
    for r in range(rounds):
        name, addr = "cut-broker-%d" % r, "127.0.0.1:%d" % (28000 + r)
        broker = BlockingRemotingClient(host, port, timeout=30)
        if broker.call(_register("CutCluster", name, addr, names, counter=1)).code == ResponseCode.SUCCESS:
            registered += 1
        second = encode_frame(_register("CutCluster", name, addr, names, counter=2))
        broker.sock.sendall(second[:len(second) // 2])
        broker.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
        broker.close()
        deadline = time.monotonic() + settle
        with BlockingRemotingClient(host, port) as client:
            while time.monotonic() < deadline:
                if client.call(checks.route_request(names[-1])).code == ResponseCode.TOPIC_NOT_EXIST:
                    gone += 1
                    break
                time.sleep(0.05)
    return {"topics": topics, "rounds": rounds, "body_bytes": len(second), "registered": registered,
            "broker_gone_after_cut": gone}


def zlib_bombs(host, port, count=3, inflated=64 << 20):
    """Compressed REGISTER_BROKER bodies of zeros inflating to ``inflated`` bytes each."""
    from tests.brokers import crc32

    body = zlib.compress(b"\0" * inflated, 9)
    answers = []
    with BlockingRemotingClient(host, port, timeout=60) as client:
        for i in range(count):
            ext = {"brokerName": "bomb-%d" % i, "brokerAddr": "127.0.0.1:2700%d" % i, "clusterName": "Bomb",
                   "brokerId": "0", "haServerAddr": "127.0.0.1:27000", "compressed": "true",
                   "bodyCrc32": str(crc32(body))}
            answer = client.call(make_request(RequestCode.REGISTER_BROKER, ext, body=body, version=409))
            answers.append((answer.code, (answer.remark or "")[:120]))
    return {"bombs": count, "compressed_bytes": len(body), "inflated_bytes": inflated, "answers": answers}
