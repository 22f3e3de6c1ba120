"""The route load generator: worker processes pipelining pre-encoded requests over raw sockets.

Each worker opens its share of ``connections`` and keeps up to ``depth`` requests in
flight on each (closed loop), or, with ``rate``, sends on a schedule (open loop, still at
most ``depth`` outstanding per connection). Answers are matched to requests by opaque;
a request's latency is from the ``send`` that carried it to the ``recv`` that completed
its answer (one clock reading per system call, so batching costs no precision we have).

Everything is bounded: a worker stops at the end of its window, after ``max_requests``
answers in the window, or when nothing arrives for ``stall_timeout`` seconds; the parent
gives up on a worker after the window plus a grace period.
"""

import array
import gc
import multiprocessing
import os
import random
import selectors
import socket
import struct
import time
from dataclasses import dataclass, field

from bench.lib.wire import OPAQUE_BASE, OPAQUES_PER_WORKER, percentile

_LENGTH = struct.Struct(">i")
_OPAQUE_KEY = b'"opaque":'
_KEY_LENGTH = len(_OPAQUE_KEY)
_SUCCESS_PREFIX = b'{"code":0,'
_SEQUENCE_MASK = (1 << 16) - 1


@dataclass
class LoadSpec:
    connections: int = 16
    depth: int = 8
    processes: int = 1
    warmup: float = 1.0
    duration: float = 5.0
    rate: float = 0.0          # requests/s for all workers together; 0 = as fast as answered
    max_requests: int = 5_000_000
    stall_timeout: float = 5.0
    seed: int = 7
    timeline: bool = False     # keep each answer's send time too (``LoadResult.sent``), to cut a window later

    def params(self):
        return {"connections": self.connections, "depth": self.depth, "processes": self.processes,
                "duration_s": self.duration, "warmup_s": self.warmup, "rate": self.rate or None}


@dataclass
class LoadResult:
    requests: int
    errors: int
    unmatched: int
    seconds: float
    latencies: list = field(repr=False)
    client_cpu: float = 0.0
    server_cpu: float = None
    answered: int = 0  # every answer, warm-up included
    stalled: bool = False
    worst_at: float = None   # wall-clock time (time.time()) the slowest answer in the window arrived
    sent: list = field(default=None, repr=False)   # with ``timeline``: (send time, latency) of every answer

    def between(self, began, ended):
        """The sorted latencies of the requests sent within [began, ended] (``time.perf_counter``
        values, comparable across processes on Linux); needs ``timeline``."""
        return sorted(latency for at, latency in self.sent if began <= at <= ended)

    @property
    def rps(self):
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    def latency_ms(self, fraction):
        value = percentile(self.latencies, fraction)
        return None if value is None else value * 1000.0

    def summary(self):
        return {"rps": self.rps, "p50_ms": self.latency_ms(0.50), "p99_ms": self.latency_ms(0.99),
                "p999_ms": self.latency_ms(0.999), "requests": self.requests, "errors": self.errors,
                "unmatched": self.unmatched, "server_cpu": self.server_cpu, "client_cpu": self.client_cpu,
                "stalled": self.stalled}

    def line(self, label):
        s = self.summary()
        cpu = "" if self.server_cpu is None else "  server cpu %.0f%%" % (100 * self.server_cpu)
        return ("%-28s %9.0f req/s  p50 %7.2f ms  p99 %7.2f ms  p999 %7.2f ms  (%d answers, %d errors%s)"
                % (label, s["rps"], s["p50_ms"] or 0, s["p99_ms"] or 0, s["p999_ms"] or 0,
                   self.requests, self.errors, cpu))


class _Connection:
    __slots__ = ("sock", "buffer", "pending", "outgoing", "watching_writes")

    def __init__(self, sock):
        self.sock = sock
        self.buffer = bytearray()
        self.pending = {}
        self.outgoing = b""
        self.watching_writes = False


def _worker(index, host, port, templates, spec, connections, rate, ready, go, results, stop=None):
    """One load process; puts a dict with its counts and latencies (array bytes) on ``results``."""
    # Forked from a parent that may hold a big fleet's layout: out of the collector's reach, or
    # this process's own full collections (measured: 21-30 ms at 1,000 brokers) show up as the
    # server's latency.
    gc.freeze()
    pre = [t.pre for t in templates]
    post = [t.post for t in templates]
    rng = random.Random(spec.seed * 1000 + index)
    sequence = [rng.randrange(len(templates)) for _ in range(_SEQUENCE_MASK + 1)]
    state = {"k": 0, "opaque": OPAQUE_BASE + index * OPAQUES_PER_WORKER}
    latencies = array.array("d")
    sent_times = array.array("d") if spec.timeline else None
    worst = [0.0, None]   # the slowest answer in the window, and when it arrived (wall clock)
    counts = {"requests": 0, "errors": 0, "unmatched": 0, "sent": 0, "answered": 0}
    selector = selectors.DefaultSelector()
    conns = []
    try:
        for _ in range(connections):
            sock = socket.create_connection((host, port), timeout=10)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
            conn = _Connection(sock)
            conns.append(conn)
            selector.register(sock, selectors.EVENT_READ, conn)
    except OSError as e:
        ready.put((index, "connect failed: %s" % e))
        results.put({"index": index, "error": "connect failed: %s" % e})
        return
    ready.put((index, None))
    if not go.wait(60):
        results.put({"index": index, "error": "never told to go"})
        return
    cpu_started = sum(os.times()[:2])
    window_start = time.perf_counter() + spec.warmup
    window_end = window_start + spec.duration
    max_requests = spec.max_requests

    def send(conn, n, now):
        k, opaque = state["k"], state["opaque"]
        pending = conn.pending
        parts = []
        for _ in range(n):
            topic = sequence[k & _SEQUENCE_MASK]
            k += 1
            opaque += 1
            pending[opaque] = now
            parts.append(pre[topic])
            parts.append(b"%d" % opaque)
            parts.append(post[topic])
        state["k"], state["opaque"] = k, opaque
        counts["sent"] += n
        write(conn, b"".join(parts))

    def write(conn, data):
        if conn.outgoing:
            data = conn.outgoing + data
        try:
            written = conn.sock.send(data)
        except BlockingIOError:
            written = 0
        conn.outgoing = data[written:]
        if bool(conn.outgoing) != conn.watching_writes:   # a system call only when that changes
            conn.watching_writes = bool(conn.outgoing)
            selector.modify(conn.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.outgoing else 0), conn)

    started = time.perf_counter()
    if not rate:
        for conn in conns:
            send(conn, spec.depth, started)
    last_progress = started
    stalled = False
    timeout = 0.001 if rate else 0.2
    next_stop_check = started
    while True:
        now = time.perf_counter()
        if now >= window_end or counts["requests"] >= max_requests:
            break
        if stop is not None and now >= next_stop_check:
            next_stop_check = now + 0.05
            if stop.is_set():
                window_end = now
                break
        if now - last_progress > spec.stall_timeout and counts["sent"]:
            stalled = True
            break
        if rate:
            due = int((now - started) * rate) - counts["sent"]
            if due > 0:
                for conn in conns:
                    free = spec.depth - len(conn.pending)
                    if free > 0:
                        n = min(free, due)
                        send(conn, n, now)
                        due -= n
                        if due <= 0:
                            break
        for key, mask in selector.select(timeout):
            conn = key.data
            if mask & selectors.EVENT_WRITE and conn.outgoing:
                write(conn, b"")
            if not mask & selectors.EVENT_READ:
                continue
            try:
                data = conn.sock.recv(1 << 18)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            now = time.perf_counter()
            if not data:
                stalled = True
                window_end = now
                break
            last_progress = now
            buffer = conn.buffer
            buffer += data
            size = len(buffer)
            pos = 0
            answered = 0
            pending = conn.pending
            in_window = window_start <= now < window_end
            while size - pos >= 4:
                end = pos + 4 + _LENGTH.unpack_from(buffer, pos)[0]
                if end > size:
                    break
                at = buffer.find(_OPAQUE_KEY, pos + 8, end) + _KEY_LENGTH
                sent_at = pending.pop(int(buffer[at:at + 10]), None) if at >= _KEY_LENGTH else None
                if sent_at is None:
                    counts["unmatched"] += 1
                else:
                    answered += 1
                    if in_window:
                        counts["requests"] += 1
                        latency = now - sent_at
                        latencies.append(latency)
                        if sent_times is not None:
                            sent_times.append(sent_at)
                        if latency > worst[0]:
                            worst[0], worst[1] = latency, time.time()
                        if not buffer.startswith(_SUCCESS_PREFIX, pos + 8):
                            counts["errors"] += 1
                pos = end
            if pos:
                del buffer[:pos]
            counts["answered"] += answered
            if answered and not rate:
                send(conn, answered, now)
    ended = min(time.perf_counter(), window_end)
    for conn in conns:
        conn.sock.close()
    results.put({"index": index, "requests": counts["requests"], "errors": counts["errors"],
                 "unmatched": counts["unmatched"], "answered": counts["answered"],
                 "seconds": max(0.0, ended - window_start),
                 "latencies": latencies.tobytes(), "sent": sent_times.tobytes() if sent_times is not None else None,
                 "cpu": sum(os.times()[:2]) - cpu_started,
                 "stalled": stalled, "worst": worst[0], "worst_at": worst[1]})


def run_load(port, templates, spec, server=None, host="127.0.0.1"):
    """Run ``spec`` against ``host:port`` and return a LoadResult (``server``: a servers._Subprocess
    whose CPU use over the window is reported as a fraction of one core)."""
    return LoadRun(port, templates, spec, host).start().result(server)


class LoadRun:
    """One load in the background: ``start()`` connects its processes and lets them go,
    ``result()`` waits for their window to end. Two runs (a load and a prober) may overlap."""

    def __init__(self, port, templates, spec, host="127.0.0.1"):
        self.spec = spec
        ctx = multiprocessing.get_context("fork")
        self._ready, self._results, self._go, self._stop = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Event()
        processes = max(1, spec.processes)
        shares = [spec.connections // processes + (1 if i < spec.connections % processes else 0)
                  for i in range(processes)]
        rate = spec.rate / processes if spec.rate else 0.0
        self.workers = [ctx.Process(target=_worker, args=(i, host, port, templates, spec, max(1, share), rate,
                                                          self._ready, self._go, self._results, self._stop),
                                   daemon=True)
                        for i, share in enumerate(shares)]

    @property
    def pids(self):
        return [worker.pid for worker in self.workers]

    def start(self):
        for worker in self.workers:
            worker.start()
        try:
            for _ in self.workers:
                index, error = self._ready.get(timeout=30)
                if error:
                    raise RuntimeError("load worker %d: %s" % (index, error))
        except BaseException:
            self._end_workers()
            raise
        self._go.set()
        return self

    def stop(self):
        """End the window now (within 50 ms), before its ``duration``: ``result()`` then returns."""
        self._stop.set()

    def _end_workers(self):
        for worker in self.workers:
            worker.join(5)
            if worker.is_alive():
                worker.terminate()
                worker.join(5)

    def result(self, server=None):
        spec, workers = self.spec, self.workers
        try:
            server_cpu = None
            if server is not None:
                time.sleep(spec.warmup)
                cpu_before, clock_before = server.cpu_seconds(), time.perf_counter()
            collected = []
            deadline = time.monotonic() + spec.warmup + spec.duration + spec.stall_timeout + 30
            while len(collected) < len(workers):
                collected.append(self._results.get(timeout=max(1.0, deadline - time.monotonic())))
                if server is not None and server_cpu is None:
                    server_cpu = (server.cpu_seconds() - cpu_before) / max(1e-9, time.perf_counter() - clock_before)
        finally:
            self._end_workers()
        return _combine(collected, server_cpu)


def _combine(collected, server_cpu):
    errors = [r["error"] for r in collected if "error" in r]
    if errors:
        raise RuntimeError("load workers failed: %s" % "; ".join(errors))
    latencies = array.array("d")
    sent = None
    for r in collected:
        latencies.frombytes(r["latencies"])
        if r.get("sent") is not None:
            times = array.array("d")
            times.frombytes(r["sent"])
            answered = array.array("d")
            answered.frombytes(r["latencies"])
            sent = (sent or []) + list(zip(times, answered))
    requests = sum(r["requests"] for r in collected)
    seconds = max(r["seconds"] for r in collected)
    rps_seconds = requests / sum(r["requests"] / r["seconds"] for r in collected if r["seconds"] > 0) \
        if requests else seconds
    return LoadResult(requests=requests, errors=sum(r["errors"] for r in collected),
                      unmatched=sum(r["unmatched"] for r in collected), seconds=rps_seconds,
                      latencies=sorted(latencies), client_cpu=sum(r["cpu"] for r in collected) / max(seconds, 1e-9),
                      server_cpu=server_cpu, stalled=any(r["stalled"] for r in collected),
                      answered=sum(r["answered"] for r in collected), sent=sent,
                      worst_at=max(collected, key=lambda r: r.get("worst", 0.0)).get("worst_at") if collected else None)
