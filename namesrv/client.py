"""Small remoting clients, for tests, benchmarks, fuzzers and operators' scripts.

``BlockingRemotingClient`` talks over a plain socket (for use outside the reactor:
against a `twistd namesrv` subprocess); ``RemotingClientProtocol`` is the Twisted
twin, matching answers to requests by opaque as Java clients do.
"""

import itertools
import socket
import struct
import threading
import time

from twisted.internet import defer
from twisted.internet.endpoints import TCP4ClientEndpoint
from twisted.internet.protocol import Factory
from twisted.protocols.basic import Int32StringReceiver

from namesrv.codec.fastjson import loads
from namesrv.protocol.codec import decode_frame, encode_frame
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.security.signature import sign_request_ext

_opaques = itertools.count(1)


def recv_exactly(sock, n):
    """``n`` bytes from a blocking socket; ConnectionError when the server closes first."""
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("connection closed by the server")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_until_closed(sock, chunk_size=65536):
    """Everything a blocking socket receives until the peer closes it or a read fails (its timeout)."""
    chunks = []
    try:
        while True:
            chunk = sock.recv(chunk_size)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        pass
    return b"".join(chunks)


class BlockingRemotingClient:
    def __init__(self, host="127.0.0.1", port=9876, timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def send(self, command):
        if not command.opaque:
            command.opaque = next(_opaques)
        self.sock.sendall(encode_frame(command))
        return command.opaque

    def call(self, command):
        """Send ``command`` and return the answer with the same opaque."""
        opaque = self.send(command)
        while True:
            answer = self.receive()
            if answer.opaque == opaque:
                return answer

    def receive(self):
        (length,) = struct.unpack(">i", self._read(4))
        return decode_frame(self._read(length))

    def _read(self, n):
        return recv_exactly(self.sock, n)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def signed_request(code, ext=None, body=None, credentials=None, **kwargs):
    """A request, signed as ``AclClientRPCHook`` signs it when ``credentials`` ((accessKey, secretKey))
    are given: for a server with ``aclEnable=true``."""
    request = make_request(code, ext=ext, body=body, **kwargs)
    if credentials is None:
        return request
    return request.with_changes(ext=sign_request_ext(request.ext, body, *credentials))


def ask(port, code, ext=None, host="127.0.0.1", timeout=2.0, credentials=None):
    """One request on a connection of its own (signed with ``credentials`` when given): the answer, or
    None where the server is not there (yet, or any more): what a script polls while a server starts,
    fails over or restarts."""
    try:
        with BlockingRemotingClient(host, port, timeout=timeout) as client:
            return client.call(signed_request(code, ext, credentials=credentials))
    except OSError:
        return None


def answers(port, code=RequestCode.GET_BROKER_CLUSTER_INFO, host="127.0.0.1", timeout=2.0, credentials=None):
    """Whether the server on ``port`` answers ``code`` with success."""
    answer = ask(port, code, host=host, timeout=timeout, credentials=credentials)
    return answer is not None and answer.code == 0


def routed_master(namesrv_port, broker_name="broker-a", credentials=None):
    """The address a name server routes as ``broker_name``'s master (brokerId 0), or None."""
    answer = ask(namesrv_port, RequestCode.GET_BROKER_CLUSTER_INFO, credentials=credentials)
    if answer is None or answer.code != 0 or not answer.body:
        return None
    addrs = loads(answer.body).get("brokerAddrTable", {}).get(broker_name, {}).get("brokerAddrs", {})
    return addrs.get(0) or addrs.get("0")


def leader_port(controller_ports, credentials=None):
    """The port of the controller that the first answering controller names as its leader, or None."""
    for port in controller_ports:
        answer = ask(port, RequestCode.CONTROLLER_GET_METADATA_INFO, credentials=credentials)
        if answer is not None and answer.ext and answer.ext.get("controllerLeaderAddress"):
            return int(answer.ext["controllerLeaderAddress"].rpartition(":")[2])
    return None


class RouteReadLoop(threading.Thread):
    """Reads one topic's route again and again, in a thread of its own, until ``stop_event`` is set or a
    limit is reached: what a client sees while a server restarts, takes over or crashes. ``fresh``: a new
    connection per request (through the accept queue), else one kept open as a Java client keeps it.
    Every request is handed to ``record(began, seconds, code, error)`` (``code`` None when the connection
    failed); by default ``samples`` keeps them and ``errors`` what went wrong."""

    def __init__(self, port, topic, fresh=False, max_seconds=60.0, max_requests=None, host="127.0.0.1"):
        threading.Thread.__init__(self, daemon=True)
        self.port, self.topic, self.fresh, self.host = port, topic, fresh, host
        self.max_seconds, self.max_requests = max_seconds, max_requests
        self.stop_event = threading.Event()
        self.samples, self.errors = [], []

    def record(self, began, seconds, code, error):
        self.samples.append((began, seconds, code))
        if error is not None:
            self.errors.append(error)

    def run(self):
        client, sent = None, 0
        deadline = time.monotonic() + self.max_seconds
        while not self.stop_event.is_set() and time.monotonic() < deadline and (
                self.max_requests is None or sent < self.max_requests):
            sent += 1
            began, code, error = time.monotonic(), None, None
            try:
                if client is None:
                    client = BlockingRemotingClient(self.host, self.port, timeout=10.0)
                answer = client.call(make_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": self.topic}))
                code = answer.code
                if code not in (ResponseCode.SUCCESS, ResponseCode.TOPIC_NOT_EXIST):
                    error = "code %s %s" % (answer.code, answer.remark)
            except OSError as e:
                error = repr(e)
                if client is not None:
                    client.close()
                client = None
            self.record(began, time.monotonic() - began, code, error)
            if self.fresh and client is not None:
                client.close()
                client = None
        if client is not None:
            client.close()


class RemotingClientProtocol(Int32StringReceiver):
    """Twisted client: ``call(command)`` returns a Deferred firing with the answer."""

    MAX_LENGTH = 16 * 1024 * 1024

    def __init__(self):
        self.pending = {}
        self.unsolicited = []
        self.closed = defer.Deferred()

    def call(self, command):
        if not command.opaque:
            command.opaque = next(_opaques)
        d = defer.Deferred()
        if not command.is_oneway:
            self.pending[command.opaque] = d
        self.transport.write(encode_frame(command))
        if command.is_oneway:
            d.callback(None)
        return d

    def stringReceived(self, frame):
        answer = decode_frame(frame)
        d = self.pending.pop(answer.opaque, None)
        if d is None:
            self.unsolicited.append(answer)
        else:
            d.callback(answer)

    def connectionLost(self, reason):
        pending, self.pending = self.pending, {}
        for d in pending.values():
            d.errback(reason)
        if not self.closed.called:
            self.closed.callback(None)


def connect(reactor, host, port):
    """A Deferred firing with a connected RemotingClientProtocol.

    Its factory is quiet: the address service probes its peers every few seconds (``/health``
    on demand), and "Starting factory" twice a probe would bury the log."""
    return TCP4ClientEndpoint(reactor, host, port).connect(_QuietClientFactory())


class _QuietClientFactory(Factory):
    noisy = False

    def buildProtocol(self, addr):
        return RemotingClientProtocol()
