"""Thousands of fake brokers in one process: non-blocking sockets, one selector, shared bodies.

A ``BrokerFleet`` is driven from the benchmark through a pipe: grow or shrink the fleet
(connect and register the new brokers, close the extra ones: the server then drops them),
prime it (every broker re-registers once, so the next ones are the unchanged heartbeats
of a steady state), and beat for a bounded time on a period, spread evenly.

Layout: brokers come in groups of two (master id 0, slave id 1) under one broker name;
four groups form a cluster ("band") and all eight brokers of a band serve the same
``topics`` topics, so each topic is served by four broker groups, as when a topic is
created on a cluster. The band's register body is built once and shared by its brokers'
frames (sent with ``sendmsg``, never copied per send).

Styles: ``4.9`` re-sends its full REGISTER_BROKER every period (``forceRegister`` is on by
default in 4.9.8, which then never asks QUERY_DATA_VERSION first); ``5.x`` registers once
and then sends BROKER_HEARTBEAT (oneway, no answer) plus QUERY_DATA_VERSION every period.
When the period is shortened to fit a short window, each connection stands for several
brokers (with their own phases), so it may have several beats in flight; a Java broker
has at most one. A beat's lateness is how long after its due time the fleet sent it
(the fleet itself falling behind); its round trip is from that send to the answer.
"""

import array
import collections
import json
import multiprocessing
import selectors
import socket
import time

from bench.lib.brokers import broker_addr, data_version, register_body, register_request, topic_names
from bench.lib.wire import FrameTemplate, OPAQUE_BASE, scan_frames
from namesrv.protocol.codes import RequestCode, Version
from namesrv.protocol.command import make_request

STYLES = ("4.9", "5.x")
GROUPS_PER_BAND = 4
BROKERS_PER_GROUP = 2
BROKERS_PER_BAND = GROUPS_PER_BAND * BROKERS_PER_GROUP
#: Registrations in flight across the fleet while growing or priming (the server takes them one by one).
REGISTER_WINDOW = 8
#: Opaques of the fleet process, apart from the load workers' and the heartbeat fleet's ones.
FLEET_OPAQUE_BASE = OPAQUE_BASE + 1_100_000_000


def band_cluster(band):
    return "FleetCluster-%04d" % band


def band_topics(band, topics):
    return topic_names("FleetB%04d" % band, topics)


def sample_topics(brokers, topics, count):
    """Up to ``count`` topic names spread over the bands ``brokers`` brokers serve."""
    bands = max(1, -(-brokers // BROKERS_PER_BAND))
    per_band = max(1, count // bands)
    step = max(1, topics // per_band)
    names = []
    for band in range(bands):
        names.extend(band_topics(band, topics)[::step][:per_band])
    return names[:max(count, bands)]


class _Broker:
    __slots__ = ("index", "sock", "frames", "outgoing", "buffer", "pending")

    def __init__(self, index, sock, frames):
        self.index = index
        self.sock = sock
        self.frames = frames          # [(FrameTemplate, shared tail bytes or b"")], sent in order
        self.outgoing = collections.deque()
        self.buffer = bytearray()
        self.pending = {}             # opaque of each answered request in flight -> when it was sent


class _Fleet:
    """The fleet process's state and loop (everything here runs in the child)."""

    host = "127.0.0.1"

    def __init__(self, port, style, topics, first_index):
        self.port, self.style, self.topics, self.first_index = port, style, topics, first_index
        self.brokers = []
        self.bodies = {}
        self.selector = selectors.DefaultSelector()
        self.opaque = FLEET_OPAQUE_BASE
        self.on_answer = None         # callable(success, seconds since sent)

    # -- frames ------------------------------------------------------------------------------
    def _identity(self, i):
        band, in_band = divmod(i, BROKERS_PER_BAND)
        group = self.first_index // BROKERS_PER_GROUP + i // BROKERS_PER_GROUP
        return ("fleet-g%06d" % group, in_band % BROKERS_PER_GROUP, broker_addr(self.first_index + i),
                band_cluster(band), band)

    def _body(self, band):
        body = self.bodies.get(band)
        if body is None:
            body = self.bodies[band] = register_body(band_topics(band, self.topics), False)
        return body

    def _frames(self, i):
        name, broker_id, addr, cluster, band = self._identity(i)
        body = self._body(band)
        register = _split(register_request(name, addr, body, False, broker_id, cluster), body)
        if self.style == "4.9":
            return {"register": [register], "beat": [register]}
        ext = {"brokerName": name, "brokerAddr": addr, "clusterName": cluster, "brokerId": str(broker_id)}
        heartbeat = make_request(RequestCode.BROKER_HEARTBEAT, ext, oneway=True, version=Version.V5_3_3)
        query = make_request(RequestCode.QUERY_DATA_VERSION, ext, version=Version.V5_3_3,
                             body=json.dumps(data_version(1), separators=(",", ":")).encode())
        return {"register": [register], "beat": [(FrameTemplate(heartbeat), b""), (FrameTemplate(query), b"")]}

    # -- sending and receiving ----------------------------------------------------------------
    def send(self, broker, kind, now):
        """Queue ``broker``'s ``kind`` frames; the last one is the answered request."""
        for template, tail in broker.frames[kind]:
            self.opaque += 1
            broker.outgoing.extend((template.pre, b"%d" % self.opaque, template.post))
            if tail:
                broker.outgoing.append(tail)
        broker.pending[self.opaque] = now
        self._write(broker)

    def _write(self, broker):
        out = broker.outgoing
        while out:
            try:
                sent = broker.sock.sendmsg(list(out)[:64])
            except (BlockingIOError, InterruptedError):
                break
            while sent:
                head = out[0]
                if sent >= len(head):
                    sent -= len(head)
                    out.popleft()
                else:
                    out[0] = memoryview(head)[sent:]
                    sent = 0
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if out else 0)
        self.selector.modify(broker.sock, events, broker)

    def pump(self, timeout):
        for key, mask in self.selector.select(timeout):
            broker = key.data
            if mask & selectors.EVENT_WRITE:
                self._write(broker)
            if not mask & selectors.EVENT_READ:
                continue
            try:
                data = broker.sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                continue
            if not data:
                raise RuntimeError("the server closed broker %d's connection" % broker.index)
            now = time.perf_counter()
            broker.buffer += data
            end = 0
            for opaque, success, end in scan_frames(broker.buffer):
                sent_at = broker.pending.pop(opaque, None)
                if sent_at is not None:
                    self.on_answer(success, now - sent_at)
            if end:
                del broker.buffer[:end]

    # -- commands -----------------------------------------------------------------------------
    def resize(self, count):
        """Grow (connect, register) or shrink (close) to ``count`` brokers; returns the seconds it took."""
        started = time.perf_counter()
        while len(self.brokers) > count:
            broker = self.brokers.pop()
            self.selector.unregister(broker.sock)
            broker.sock.close()
        new = []
        for i in range(len(self.brokers), count):
            sock = socket.create_connection((self.host, self.port), timeout=30)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
            broker = _Broker(i, sock, self._frames(i))
            self.selector.register(sock, selectors.EVENT_READ, broker)
            self.brokers.append(broker)
            new.append(broker)
        self._register_all(new)
        return time.perf_counter() - started

    def prime(self):
        """Every broker re-registers once (4.9 style): its next identical registration is a steady-state one."""
        started = time.perf_counter()
        if self.style == "4.9":
            self._register_all(self.brokers)
        return time.perf_counter() - started

    def _register_all(self, brokers, timeout=300.0):
        waiting = collections.deque(brokers)
        failures = []
        state = {"in_flight": 0}

        def answered(success, _):
            state["in_flight"] -= 1
            failures.extend(() if success else (1,))

        self.on_answer = answered
        deadline = time.monotonic() + timeout
        while waiting or state["in_flight"]:
            while waiting and state["in_flight"] < REGISTER_WINDOW:
                self.send(waiting.popleft(), "register", time.perf_counter())
                state["in_flight"] += 1
            self.pump(1.0)
            if time.monotonic() > deadline:
                raise RuntimeError("registrations unanswered after %.0f s" % timeout)
        if failures:
            raise RuntimeError("%d registrations refused" % len(failures))

    def beat(self, period, seconds, grace):
        """Beat every broker every ``period`` s (phases spread evenly) for ``seconds``, then wait up
        to ``grace`` s for the last answers. Returns counts, round trips and lateness."""
        count = len(self.brokers)
        rtts, late = array.array("d"), array.array("d")
        stats = {"sent": 0, "answered": 0, "errors": 0}

        def answered(success, rtt):
            rtts.append(rtt)
            stats["answered"] += 1
            stats["errors"] += 0 if success else 1

        self.on_answer = answered
        started = time.perf_counter()
        end = started + seconds
        step = period / count if count else seconds
        while True:
            now = time.perf_counter()
            if now >= end:
                break
            while count and started + stats["sent"] * step <= now:
                late.append(now - started - stats["sent"] * step)
                self.send(self.brokers[stats["sent"] % count], "beat", now)
                stats["sent"] += 1
            self.pump(max(0.0, min(0.005, started + stats["sent"] * step - now, end - now)))
        deadline = time.perf_counter() + grace
        while any(b.pending for b in self.brokers) and time.perf_counter() < deadline:
            self.pump(0.05)
        unanswered = sum(len(b.pending) for b in self.brokers)
        for broker in self.brokers:
            broker.pending.clear()
        beat_bytes = sum(len(t.pre) + 10 + len(t.post) + len(tail) for t, tail in self.brokers[0].frames["beat"]) \
            if self.brokers else 0
        stats.update(unanswered=unanswered, seconds=seconds, period=period, brokers=count, beat_bytes=beat_bytes,
                     rtts=rtts.tobytes(), late=late.tobytes())
        return stats

    def close(self):
        for broker in self.brokers:
            broker.sock.close()
        self.brokers = []


def _split(command, body):
    """A register frame as a template whose body is the shared ``body`` object (not a copy)."""
    template = FrameTemplate(command)
    if body:
        assert template.post.endswith(body)
        template.post = template.post[:-len(body)]
    return template, body


def _run(pipe, port, style, topics, first_index):
    serve_commands(pipe, _Fleet(port, style, topics, first_index))


def serve_commands(pipe, fleet):
    """The fleet process's loop: run each (command, args) the parent sends on ``fleet``, answer, until "stop"."""
    try:
        while True:
            command, args = pipe.recv()
            if command == "stop":
                break
            try:
                pipe.send(("ok", getattr(fleet, command)(*args)))
            except Exception as e:   # reported to the parent, which raises it there
                pipe.send(("error", "%s: %s" % (type(e).__name__, e)))
                break
    finally:
        fleet.close()


class BrokerFleet:
    """The parent's handle: ``with BrokerFleet(port, "4.9", 1000) as fleet: fleet.resize(800) ...``."""

    def __init__(self, port, style, topics, first_index=100_000):
        if style not in STYLES:
            raise ValueError("style is one of %s" % ", ".join(STYLES))
        self.style, self.topics, self.size = style, topics, 0
        ctx = multiprocessing.get_context("fork")
        self._pipe, child = ctx.Pipe()
        self._process = ctx.Process(target=_run, args=(child, port, style, topics, first_index), daemon=True)

    @property
    def pid(self):
        return self._process.pid

    def _call(self, command, *args, timeout=600.0):
        self._pipe.send((command, args))
        return self._result(timeout)

    def _result(self, timeout):
        if not self._pipe.poll(timeout):
            raise RuntimeError("the broker fleet did not answer within %.0f s" % timeout)
        status, value = self._pipe.recv()
        if status != "ok":
            raise RuntimeError("broker fleet: %s" % value)
        return value

    def resize(self, count):
        seconds = self._call("resize", count)
        self.size = count
        return seconds

    def prime(self):
        return self._call("prime")

    def start_beating(self, period, seconds, grace):
        """Beat in the background; ``beat_result`` collects the stats."""
        self._pipe.send(("beat", (period, seconds, grace)))
        self._beat_timeout = seconds + grace + 60

    def beat_result(self):
        stats = self._result(self._beat_timeout)
        for key in ("rtts", "late"):
            values = array.array("d")
            values.frombytes(stats[key])
            stats[key] = sorted(values)
        return stats

    def __enter__(self):
        self._process.start()
        return self

    def __exit__(self, *exc):
        try:
            self._pipe.send(("stop", ()))
        except OSError:
            pass
        self._process.join(10)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(5)
        return False
