"""Fake brokers by the thousand in one process: non-blocking sockets, one selector, pre-encoded frames.

A ``BrokerFleet`` plays the brokers of a layout (``bench.lib.brokers.layouts``) in a style
(``bench.lib.brokers.frames``) from a child process, driven through a pipe: build the frames beforehand
(``prepare``, so that a timed ``resize`` times the server only), grow or shrink (connect and register the
new brokers, close the extra ones: the server then drops them), prime (every broker re-registers once, so
the next ones are the unchanged registrations of a steady state), beat for a bounded time, or drop every
connection at once (a switch reboots). Brokers of one topic group send one shared body object
(``sendmsg``, never copied per send).

Beats come on a period, spread evenly (one broker after the other) or in bursts (every broker at once,
a burst once the last one is written, as from a process writing on blocking sockets).
When the period is shortened to fit a short window, each connection stands for several brokers (with
their own phases), so it may have several beats in flight; a Java broker has at most one. A beat's
lateness is how long after its due time the fleet sent it (the fleet itself falling behind); its round
trip is from that send to the answer.
"""

import array
import collections
import multiprocessing
import selectors
import socket
import time

from bench.lib.brokers.bodies import register_body
from bench.lib.brokers.frames import STYLES, style_frames
from bench.lib.wire import OPAQUE_BASE, scan_frames

#: Registrations in flight across the fleet while growing or priming (the server takes them one by one).
REGISTER_WINDOW = 8
#: Opaques of the fleet process, apart from the load workers' ones.
FLEET_OPAQUE_BASE = OPAQUE_BASE + 1_100_000_000
#: Seconds between two looks at the parent's request to stop beating (and the longest sleep between bursts).
STOP_CHECK = 0.05


class _Broker:
    __slots__ = ("index", "sock", "frames", "outgoing", "buffer", "pending")

    def __init__(self, index, sock, frames):
        self.index = index
        self.sock = sock
        self.frames = frames          # {kind: [(FrameTemplate, shared tail bytes or b"")]}, sent in order
        self.outgoing = collections.deque()
        self.buffer = bytearray()
        self.pending = {}             # opaque of each answered request in flight -> when it was sent


class _Fleet:
    """The fleet process's state and loop (everything here runs in the child)."""

    def __init__(self, port, host, layout, style, stop):
        self.port, self.host, self.layout, self.style, self.stop = port, host, layout, style, stop
        self.brokers = []
        self.frames = {}              # broker index -> its frames, kept: a fleet grown again reuses them
        self.bodies = {}              # topic group -> its register body, shared by the group's brokers
        self.selector = selectors.DefaultSelector()
        self.opaque = FLEET_OPAQUE_BASE
        self.on_answer = None         # callable(success, seconds since sent)

    def frames_of(self, i):
        frames = self.frames.get(i)
        if frames is None:
            group = self.layout.topic_group(i)
            body = self.bodies.get(group)
            if body is None:
                body = self.bodies[group] = register_body(self.layout.group_topics(group), False)
            frames = self.frames[i] = style_frames(self.layout.broker(i), body, self.style)
        return frames

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
    def prepare(self, count):
        """Build the frames of brokers 0..count-1 now (8 ms per 600 KB body); returns the seconds it took."""
        started = time.perf_counter()
        for i in range(count):
            self.frames_of(i)
        return time.perf_counter() - started

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
            broker = _Broker(i, sock, self.frames_of(i))
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

    def beat(self, period, seconds, grace, burst=False):
        """Beat every broker every ``period`` s for ``seconds`` (or until the parent says stop), then wait up
        to ``grace`` s for the last answers. Returns counts, round trips, lateness, and ``rounds`` (bursts,
        or passes over the fleet) with, in bursts, ``late_rounds``."""
        rtts, late = array.array("d"), array.array("d")
        stats = {"sent": 0, "answered": 0, "errors": 0, "rounds": 0, "late_rounds": 0}

        def answered(success, rtt):
            rtts.append(rtt)
            stats["answered"] += 1
            stats["errors"] += 0 if success else 1

        self.on_answer = answered
        started = time.perf_counter()
        end = started + seconds
        (self._beat_in_bursts if burst else self._beat_spread)(period, started, end, stats, late)
        ended = min(time.perf_counter(), end)
        deadline = time.perf_counter() + grace
        while any(b.pending for b in self.brokers) and time.perf_counter() < deadline:
            self.pump(0.05)
        unanswered = sum(len(b.pending) for b in self.brokers)
        for broker in self.brokers:
            broker.pending.clear()
        beat_bytes = sum(len(t.pre) + 10 + len(t.post) + len(tail) for t, tail in self.brokers[0].frames["beat"]) \
            if self.brokers else 0
        stats.update(unanswered=unanswered, seconds=ended - started, period=period, brokers=len(self.brokers),
                     beat_bytes=beat_bytes, rtts=rtts.tobytes(), late=late.tobytes())
        return stats

    def _beat_spread(self, period, started, end, stats, late):
        """Broker k's beat is due k × period / N after ``started``: one broker after the other."""
        count = len(self.brokers)
        step = period / count if count else period
        for now in self._ticks(end):
            while count and started + stats["sent"] * step <= now:
                late.append(now - started - stats["sent"] * step)
                self.send(self.brokers[stats["sent"] % count], "beat", now)
                stats["sent"] += 1
            self.pump(max(0.0, min(0.005, started + stats["sent"] * step - now, end - now)))
        stats["rounds"] = -(-stats["sent"] // count) if count else 0

    def _beat_in_bursts(self, period, started, end, stats, late):
        """Every broker at once each period, as a process that writes each broker's beat in turn on blocking
        sockets: the next burst waits until the last one is written, and a burst written after the next was
        due is late (the next one then goes at once, and the period counts from there)."""
        due, writing = started, False
        for now in self._ticks(end):
            if writing and not any(broker.outgoing for broker in self.brokers):
                writing = False
                if now > due:
                    stats["late_rounds"] += 1
                    due = now
            if not writing and self.brokers and now >= due:
                for broker in self.brokers:
                    late.append(now - due)
                    self.send(broker, "beat", now)
                stats["sent"] += len(self.brokers)
                stats["rounds"] += 1
                due += period
                writing = True
            self.pump(max(0.0, min(end - now, 0.005 if writing else min(STOP_CHECK, due - now))))

    def _ticks(self, end):
        """``time.perf_counter()`` readings until ``end``, or until the parent says stop (looked at every
        ``STOP_CHECK`` s)."""
        look = 0.0
        while True:
            now = time.perf_counter()
            if now >= end:
                return
            if now >= look:
                look = now + STOP_CHECK
                if self.stop.is_set():
                    return
            yield now

    def drop(self):
        """Close every broker's connection at once; returns how many there were."""
        for broker in self.brokers:
            self.selector.unregister(broker.sock)
            broker.sock.close()
        count, self.brokers = len(self.brokers), []
        return count

    def close(self):
        for broker in self.brokers:
            broker.sock.close()
        self.brokers = []


def _serve(pipe, port, host, layout, style, stop):
    """The fleet process's loop: run each (command, args) the parent sends, answer, until "stop"."""
    fleet = _Fleet(port, host, layout, style, stop)
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
    """The parent's handle: ``with BrokerFleet(port, BandLayout(1000), "4.9") as fleet: fleet.resize(800) ...``."""

    def __init__(self, port, layout, style="4.9", host="127.0.0.1"):
        if style not in STYLES:
            raise ValueError("style is one of %s" % ", ".join(STYLES))
        self.layout, self.style, self.size = layout, style, 0
        ctx = multiprocessing.get_context("fork")
        self._pipe, child = ctx.Pipe()
        self._stop = ctx.Event()
        self._process = ctx.Process(target=_serve, args=(child, port, host, layout, style, self._stop), daemon=True)
        self._beat_timeout = None

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

    def prepare(self, count):
        return self._call("prepare", count)

    def resize(self, count):
        seconds = self._call("resize", count)
        self.size = count
        return seconds

    def prime(self):
        return self._call("prime")

    def drop(self):
        count = self._call("drop")
        self.size = 0
        return count

    def start_beating(self, period, seconds, grace, burst=False):
        """Beat in the background for at most ``seconds``; ``stop_beating`` ends it sooner, ``beat_result``
        collects the stats."""
        self._stop.clear()
        self._pipe.send(("beat", (period, seconds, grace, burst)))
        self._beat_timeout = seconds + grace + 60

    def stop_beating(self):
        self._stop.set()

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
