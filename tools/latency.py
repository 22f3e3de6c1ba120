"""Route latency seen by one good client, measured in a separate process while the server is under attack.

The probe runs in its own process so the hostile peers (threads, busy loops) in the
measuring process do not distort it: what it sees is the server's reactor. It asks
GET_ROUTEINFO_BY_TOPIC on one long-lived connection every ``interval`` seconds, as a
producer does, and reconnects after an error (counted).
"""

import multiprocessing
import socket
import threading
import time

from tools import checks


def _probe(host, port, topic, interval, timeout, stop, results):
    from namesrv.client import BlockingRemotingClient
    from namesrv.protocol.codes import ResponseCode

    samples, errors, client = [], 0, None
    while not stop.is_set():
        started = time.perf_counter()
        try:
            if client is None:
                client = BlockingRemotingClient(host, port, timeout=timeout)
            answer = client.call(checks.route_request(topic))
            if answer.code != ResponseCode.SUCCESS:
                errors += 1
            samples.append(time.perf_counter() - started)
        except (OSError, ConnectionError):
            errors += 1
            if client is not None:
                client.close()
            client = None
        stop.wait(interval)
    results.put({"samples": samples, "errors": errors})


def summarize(samples, errors):
    ordered = sorted(samples)

    def pct(p):
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1000.0 if ordered else None

    return {"requests": len(ordered), "errors": errors, "p50_ms": pct(0.50), "p99_ms": pct(0.99),
            "max_ms": ordered[-1] * 1000.0 if ordered else None}


class LatencyProbe:
    """``with LatencyProbe(host, port, topic) as probe: ...``; then ``probe.stats``."""

    def __init__(self, host, port, topic=checks.CONTROL_TOPICS[0], interval=0.01, timeout=10.0):
        ctx = multiprocessing.get_context("fork")
        self._stop = ctx.Event()
        self._results = ctx.Queue()
        self._process = ctx.Process(target=_probe, args=(host, port, topic, interval, timeout, self._stop,
                                                         self._results), daemon=True)
        self.stats = None

    def __enter__(self):
        self._process.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        result = self._results.get(timeout=60)
        self._process.join(10)
        self.stats = summarize(result["samples"], result["errors"])
        return False


class RssSampler:
    """Samples a process's VmRSS every ``interval`` seconds in a thread; ``peak_kib`` and ``last_kib``."""

    def __init__(self, pid, interval=0.1):
        self.pid, self.interval = pid, interval
        self.first_kib = self.peak_kib = self.last_kib = checks.rss_kib(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(self.interval):
            rss = checks.rss_kib(self.pid)
            if rss:
                self.last_kib = rss
                self.peak_kib = max(self.peak_kib or 0, rss)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.last_kib = checks.rss_kib(self.pid) or self.last_kib
        return False


def answered_within(host, port, timeout=5.0):
    """One good route request on a fresh connection, answered within ``timeout`` seconds."""
    return checks.TableChecker(host, port, timeout=timeout).alive()


def closed_by_peer(sock, timeout):
    """True when the server closed ``sock`` (EOF or reset) within ``timeout`` seconds; data is discarded."""
    deadline = time.monotonic() + timeout
    sock.settimeout(0.2)
    while time.monotonic() < deadline:
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            continue
        except (ConnectionError, OSError):
            return True
    return False
