"""The structured event log: one JSON object per line, for the Spark reports in spark/.

``emit`` never blocks and never raises: it encodes the line once and puts it on a bounded
queue that ONE writer thread appends to the file (flushing once per batch, rotating to
``.1`` … ``.N`` by size and when the day changes). When the queue is full the event is
counted in ``dropped`` instead of slowing the reactor down. The Java NameServer has no
such log; its ``namesrv.log`` (logback, size-rotated) is parsed by the Spark jobs instead.

Requests are aggregated: ``record_request`` folds every request into a per-second bucket
per (code, response code), and one ``request`` event per bucket carries ``count``,
``usSum``, ``usMax``, ``us`` (the mean), a log2 latency histogram ``hist``
(``{"<upper bound µs>": count}``, mergeable into per-minute percentiles in Spark), the
request ``name`` and ``peers`` (distinct peers, counted up to 10,000). Route queries at any
rate therefore cost at most a few lines per second. A second's buckets are written lazily by
the next ``record_request``/``emit`` after it ends, by ``flush_aggregates()`` (the service
calls it every second) and by ``stop()``.
"""

import json
import os
import queue
import threading
import time

import msgspec
from twisted.logger import Logger
from zope.interface import implementer

from namesrv.interfaces import IEventLog
from namesrv.protocol.codes import request_name

_STOP = object()
_MAX_PEERS = 10000
_BATCH = 1000


def histogram_bucket(micros):
    """Upper bound (µs, a power of two) of the log2 bucket ``micros`` falls in."""
    micros = max(1, int(micros))
    return 1 << (micros - 1).bit_length()


#: events made of strings, ints and lists of them only: msgspec writes them as ``json.dumps`` does, byte for byte,
#: several times faster (a fleet's first registration logs long topic lists per broker; figures:
#: bench/results/design-figures.md#event-log-encoder). Not for other events: a float is written otherwise.
_PLAIN_EVENTS = frozenset(["topic_route_changed"])
_PLAIN = msgspec.json.Encoder()


def encode_line(record):
    """The record as one line of UTF-8 JSON (unencodable text is escaped, never an error)."""
    if record.get("event") in _PLAIN_EVENTS:
        try:
            return _PLAIN.encode(record) + b"\n"
        except (TypeError, ValueError, OverflowError):   # a lone surrogate, an object: json.dumps's way below
            pass
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.encode("utf-8", "backslashreplace") + b"\n"


class _Bucket:
    __slots__ = ("count", "us_sum", "us_max", "hist", "peers")

    def __init__(self):
        self.count = 0
        self.us_sum = 0
        self.us_max = 0
        self.hist = {}
        self.peers = set()

    def add(self, micros, peer, count=1):
        """``count`` requests from ``peer`` that each took ``micros``."""
        self.count += count
        self.us_sum += micros * count
        if micros > self.us_max:
            self.us_max = micros
        upper = histogram_bucket(micros)
        self.hist[upper] = self.hist.get(upper, 0) + count
        if len(self.peers) < _MAX_PEERS:
            self.peers.add(peer)


@implementer(IEventLog)
class EventLog:
    """``<logDir>/namesrv-events.log``: see the module docstring.

    ``clock`` (seconds since the epoch) stamps events and decides the day for rotation;
    ``reactor``, when given, receives the writer thread's warnings through ``callFromThread``.
    ``written`` and ``dropped`` are counters for metrics.
    """

    log = Logger()

    def __init__(self, path, server_id, max_bytes=100 * 1024 * 1024, backups=10, reactor=None,
                 clock=time.time, queue_size=100000):
        self.path = path
        self.server_id = server_id
        self.max_bytes = max_bytes
        self.backups = backups
        self.reactor = reactor
        self.clock = clock
        self.written = 0
        self._dropped_queue = 0   # only the producer (reactor) thread changes it
        self._dropped_io = 0      # only the writer thread changes it
        self._queue = queue.Queue(queue_size)
        self._thread = None
        self._second = None
        self._buckets = {}
        self._listeners = []

    @property
    def dropped(self):
        return self._dropped_queue + self._dropped_io

    def add_listener(self, callback):
        """Call ``callback(event, fields)`` on every ``emit`` (metrics); its failures are logged."""
        self._listeners.append(callback)

    # -- producers (reactor thread) ---------------------------------------------
    def emit(self, event, **fields):
        try:
            now_ms = int(self.clock() * 1000)
            self._roll_second(now_ms // 1000)
            record = {"ts": now_ms, "event": event, "server": self.server_id}
            record.update(fields)
            self._put(record)
        except Exception:
            self._dropped_queue += 1
            self.log.failure("event {event} not logged", event=event)
        for listener in self._listeners:
            try:
                listener(event, fields)
            except Exception:
                self.log.failure("event listener failed on {event}", event=event)

    def _put(self, record):
        try:
            line = encode_line(record)
        except (TypeError, ValueError):
            self._dropped_queue += 1
            return
        try:
            self._queue.put_nowait(line)
        except queue.Full:
            self._dropped_queue += 1

    def record_request(self, code, response_code, micros, peer):
        self.record_requests(code, response_code, 1, micros, peer)

    def record_requests(self, code, response_code, count, micros, peer):
        """``count`` requests at once (the AnswerCache reports each batch of replayed answers so)."""
        second = int(self.clock())
        self._roll_second(second)
        key = (code, response_code)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket()
        bucket.add(int(micros), peer, count)

    def _roll_second(self, second):
        if self._second is None:
            self._second = second
        elif second != self._second:
            self.flush_aggregates(force=True)
            self._second = second

    def flush_aggregates(self, force=False):
        """Emit the finished second's ``request`` events (``force``: the running second too)."""
        if not self._buckets:
            return
        if not force and int(self.clock()) == self._second:
            return
        ts = self._second * 1000
        buckets, self._buckets = self._buckets, {}
        for (code, response_code), b in buckets.items():
            self._put({"ts": ts, "event": "request", "server": self.server_id, "code": code,
                       "name": request_name(code), "resp": response_code, "count": b.count,
                       "us": b.us_sum // b.count, "usSum": b.us_sum, "usMax": b.us_max,
                       "hist": {str(k): v for k, v in sorted(b.hist.items())}, "peers": len(b.peers)})

    # -- lifecycle ----------------------------------------------------------------
    def start(self):
        if self._thread is not None:
            return
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        self._thread = threading.Thread(target=self._run, name="namesrv-event-log", daemon=True)
        self._thread.start()

    def stop(self, timeout=5.0):
        """Write the pending aggregates and every queued line; waits at most about ``2 * timeout``."""
        self.flush_aggregates(force=True)
        thread, self._thread = self._thread, None
        if thread is None:
            return
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            self.log.warn("event log {path}: queue still full at stop", path=self.path)
            return
        thread.join(timeout)
        if thread.is_alive():
            self.log.warn("event log {path}: writer still busy at stop; lines may be lost", path=self.path)

    # -- the writer thread ------------------------------------------------------------
    def _run(self):
        writer = _RotatingWriter(self.path, self.max_bytes, self.backups, self.clock)
        try:
            stop = False
            while not stop:
                batch = [self._queue.get()]
                while len(batch) < _BATCH:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                if _STOP in batch:
                    stop = True
                    batch = [line for line in batch if line is not _STOP]
                try:
                    writer.write(batch)
                    self.written += len(batch)
                except Exception as e:  # a full disk must not kill the writer
                    self._dropped_io += len(batch)
                    writer.close()
                    self._warn("event log {path} write failed: {err}", path=self.path, err=e)
        finally:
            writer.close()

    def _warn(self, fmt, **kw):
        if self.reactor is not None:
            self.reactor.callFromThread(self.log.warn, fmt, **kw)
        else:
            self.log.warn(fmt, **kw)


@implementer(IEventLog)
class NullEventLog:
    """An event log that writes nothing (``eventLogEnable=false``, tests, load generators).

    Listeners still hear every ``emit``: the Prometheus counters of expirations and
    unregistrations must not depend on whether events are written to a file.
    """

    written = 0
    dropped = 0
    @property
    def drops_route_changes(self):
        """Nothing would see a topic_route_changed (no file, no listener, ``emit`` not overridden): the
        route tables need not group them."""
        return not self._listeners and type(self).emit is NullEventLog.emit

    def __init__(self, server_id="127.0.0.1:9876"):
        self.server_id = server_id
        self._listeners = []

    def emit(self, event, **fields):
        for listener in self._listeners:
            try:
                listener(event, fields)
            except Exception:
                EventLog.log.failure("event listener failed on {event}", event=event)

    def record_request(self, code, response_code, micros, peer):
        pass

    def record_requests(self, code, response_code, count, micros, peer):
        pass

    def add_listener(self, callback):
        self._listeners.append(callback)

    def flush_aggregates(self, force=False):
        pass

    def start(self):
        pass

    def stop(self):
        pass


def event_log_for(config, reactor):
    """The event log a server (or a controller alone) writes, as ``config`` says: an EventLog at
    ``config.event_log_path()``, or a NullEventLog with ``eventLogEnable=false``."""
    server_id = "%s:%s" % (config.bindAddress, config.listenPort)
    if not config.eventLogEnable:
        return NullEventLog(server_id)
    return EventLog(config.event_log_path(), server_id=server_id, max_bytes=config.eventLogMaxBytes,
                    backups=config.eventLogBackups, reactor=reactor)


class _RotatingWriter:
    """Appends lines; rotates to ``.1`` … ``.N`` by size and when the (local) day changes."""

    def __init__(self, path, max_bytes, backups, clock):
        self.path = path
        self.max_bytes = max_bytes
        self.backups = max(0, backups)
        self.clock = clock
        self.file = None
        self.day = None
        self.size = 0

    def _today(self):
        return time.strftime("%Y-%m-%d", time.localtime(self.clock()))

    def write(self, lines):
        today = self._today()
        if self.file is None:
            self._open()
            # A file left by an earlier run on an earlier day is rotated before today's lines.
            if self.size and self.day != today:
                self._rotate()
        elif self.day != today:
            self._rotate()
        self.day = today
        chunk = []
        for data in lines:
            if self.max_bytes and self.size and self.size + len(data) > self.max_bytes:
                self.file.write(b"".join(chunk))
                chunk = []
                self._rotate()
            chunk.append(data)
            self.size += len(data)
        self.file.write(b"".join(chunk))
        self.file.flush()

    def _open(self):
        self.file = open(self.path, "ab")
        self.size = self.file.tell()
        if self.size:
            self.day = time.strftime("%Y-%m-%d", time.localtime(os.path.getmtime(self.path)))

    def _rotate(self):
        self.file.close()
        if self.backups == 0:
            os.unlink(self.path)
        else:
            for i in range(self.backups - 1, 0, -1):
                older = "%s.%d" % (self.path, i)
                if os.path.exists(older):
                    os.replace(older, "%s.%d" % (self.path, i + 1))
            os.replace(self.path, self.path + ".1")
        self._open()

    def close(self):
        if self.file is not None:
            try:
                self.file.close()
            finally:
                self.file = None
