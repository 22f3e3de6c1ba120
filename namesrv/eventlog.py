"""The structured event log: one JSON object per line, for the Spark reports in spark/.

``emit`` never blocks and never raises: it encodes the line and puts it on a bounded
queue that one writer thread appends to the file (flushing per batch, rotating by size
and at day change, keeping ``backups`` old files). When the queue is full the event is
counted in ``dropped`` instead of slowing the server down.

Requests are aggregated: ``record_request`` folds every request into a per-second
bucket per (code, response code), and one ``request`` event per bucket carries the
count, the latency sum and maximum, a log2 latency histogram (mergeable in Spark into
per-minute percentiles) and the number of distinct peers. Route queries at any rate
therefore cost at most a few lines per second.
"""

import json
import os
import queue
import threading
import time

from twisted.logger import Logger

from namesrv.protocol.codes import request_name

_STOP = object()


def histogram_bucket(micros):
    """Upper bound (µs, a power of two) of the log2 bucket ``micros`` falls in."""
    micros = max(1, int(micros))
    return 1 << (micros - 1).bit_length()


class EventLog:
    log = Logger()

    def __init__(self, path, server_id, max_bytes=100 * 1024 * 1024, backups=10, reactor=None,
                 clock=time.time, queue_size=100000):
        self.path = path
        self.server_id = server_id
        self.max_bytes = max_bytes
        self.backups = backups
        self.clock = clock
        self.written = 0
        self.dropped = 0
        self._queue = queue.Queue(queue_size)
        self._thread = None
        self._second = None
        self._buckets = {}

    # -- producers (reactor thread) ---------------------------------------------
    def emit(self, event, **fields):
        record = {"ts": int(self.clock() * 1000), "event": event, "server": self.server_id}
        record.update(fields)
        self._roll_second(record["ts"] // 1000)
        self._put(record)

    def _put(self, record):
        try:
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            self.dropped += 1
            return
        try:
            self._queue.put_nowait(line)
        except queue.Full:
            self.dropped += 1

    def record_request(self, code, response_code, micros, peer):
        second = int(self.clock())
        self._roll_second(second)
        bucket = self._buckets.get((code, response_code))
        if bucket is None:
            bucket = self._buckets[(code, response_code)] = [0, 0, 0, {}, set()]
        bucket[0] += 1
        bucket[1] += micros
        if micros > bucket[2]:
            bucket[2] = micros
        upper = histogram_bucket(micros)
        bucket[3][upper] = bucket[3].get(upper, 0) + 1
        if len(bucket[4]) < 10000:
            bucket[4].add(peer)

    def _roll_second(self, second):
        if self._second is None:
            self._second = second
        elif second != self._second:
            self.flush_aggregates(force=True)
            self._second = second

    def flush_aggregates(self, force=False):
        """Emit the finished second's ``request`` events (the service also calls this every second)."""
        if not self._buckets:
            return
        if not force and int(self.clock()) == self._second:
            return
        ts = self._second * 1000
        buckets, self._buckets = self._buckets, {}
        for (code, response_code), (count, us_sum, us_max, hist, peers) in buckets.items():
            self._put({"ts": ts, "event": "request", "server": self.server_id, "code": code,
                       "name": request_name(code), "resp": response_code, "count": count, "usSum": us_sum,
                       "usMax": us_max, "us": us_sum // count if count else 0,
                       "hist": {str(k): v for k, v in sorted(hist.items())}, "peers": len(peers)})

    # -- lifecycle ----------------------------------------------------------------
    def start(self):
        if self._thread is not None:
            return
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        self._thread = threading.Thread(target=self._run, name="namesrv-event-log", daemon=True)
        self._thread.start()

    def stop(self, timeout=10.0):
        self.flush_aggregates(force=True)
        if self._thread is None:
            return
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)
        self._thread = None

    # -- the writer thread ------------------------------------------------------------
    def _run(self):
        writer = _RotatingWriter(self.path, self.max_bytes, self.backups)
        try:
            while True:
                line = self._queue.get()
                batch = [line]
                while len(batch) < 1000:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                stop = _STOP in batch
                lines = [item for item in batch if item is not _STOP]
                try:
                    writer.write(lines)
                    self.written += len(lines)
                except OSError as e:
                    self.dropped += len(lines)
                    self.log.warn("event log {path} write failed: {err}", path=self.path, err=e)
                if stop:
                    return
        finally:
            writer.close()


class _RotatingWriter:
    """Appends lines; rotates to ``.1`` … ``.N`` by size and when the day changes."""

    def __init__(self, path, max_bytes, backups):
        self.path = path
        self.max_bytes = max_bytes
        self.backups = max(0, backups)
        self.file = None
        self.day = None

    def write(self, lines):
        today = time.strftime("%Y-%m-%d")
        if self.file is None:
            self._open()
            self.day = today
        if self.day != today:
            self._rotate()
            self.day = today
        chunk, size = [], self.file.tell()
        for line in lines:
            data = line.encode("utf-8") + b"\n"
            if self.max_bytes and size + len(data) > self.max_bytes and size > 0:
                self.file.write(b"".join(chunk))
                chunk, size = [], 0
                self._rotate()
            chunk.append(data)
            size += len(data)
        self.file.write(b"".join(chunk))
        self.file.flush()

    def _open(self):
        self.file = open(self.path, "ab")

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
            self.file.close()
            self.file = None
