"""A fleet of fake brokers re-registering on a (time-compressed) period, in its own process.

The process opens one connection per broker, registers each once (first registration),
reports ready, and then, while ``beating`` is set, sends every broker's full
REGISTER_BROKER again every ``interval`` seconds with an unchanged DataVersion — what a
Java broker does every 30 s (``forceRegister`` is true by default). Answers are read and
matched by opaque; their round trips are the heartbeat latencies. It stops on ``stop``
or after ``max_seconds``, whichever comes first.
"""

import array
import multiprocessing
import selectors
import time

from bench.lib.brokers import CLUSTER, FakeBroker, broker_addr, register_body, register_template, topic_names
from bench.lib.wire import OPAQUE_BASE, scan_frames

#: Opaques of the heartbeat process, apart from the load workers' ones.
HEARTBEAT_OPAQUE_BASE = OPAQUE_BASE + 1_000_000_000


def _fleet(port, brokers, topics, interval, first_index, max_seconds, ready, beating, stop, results):
    deadline = time.monotonic() + max_seconds
    fleet, templates = [], []
    try:
        for i in range(brokers):
            name = "bench-hb-broker-%03d" % i
            broker = FakeBroker(port, name, first_index + i)
            fleet.append(broker)
            body = register_body(topic_names("BenchHbTopic-%03d" % i, topics), False)
            answer, _ = broker.register(body, False)
            if answer.code != 0:
                raise RuntimeError("registration of %s refused: %s" % (name, answer.code))
            templates.append(register_template(name, broker_addr(first_index + i), body, False, cluster=CLUSTER))
    except Exception as e:
        ready.put("heartbeat fleet: %s" % e)
        for broker in fleet:
            broker.close()
        return
    ready.put(None)
    selector = selectors.DefaultSelector()
    buffers = {}
    for broker in fleet:
        broker.client.sock.settimeout(30)
        selector.register(broker.client.sock, selectors.EVENT_READ, broker)
        buffers[broker.client.sock] = bytearray()
    sent_at, rtts = {}, array.array("d")
    opaque = HEARTBEAT_OPAQUE_BASE
    rounds = late = 0
    next_round = None
    while not stop.is_set() and time.monotonic() < deadline:
        now = time.perf_counter()
        if beating.is_set() and (next_round is None or now >= next_round):
            for broker, template in zip(fleet, templates):
                opaque += 1
                sent_at[opaque] = time.perf_counter()
                broker.client.sock.sendall(template.frame(opaque))
            rounds += 1
            next_round = (next_round or now) + interval
            if time.perf_counter() > next_round:
                late += 1
                next_round = time.perf_counter()
        elif not beating.is_set():
            next_round = None
        wait = 0.05 if next_round is None else max(0.0, min(0.05, next_round - time.perf_counter()))
        for key, _ in selector.select(wait):
            sock = key.fileobj
            data = sock.recv(1 << 16)
            received = time.perf_counter()
            if not data:
                stop.set()
                break
            buffer = buffers[sock]
            buffer += data
            end = 0
            for answer_opaque, success, end in scan_frames(buffer):
                started = sent_at.pop(answer_opaque, None)
                if started is not None:
                    rtts.append(received - started)
            if end:
                del buffer[:end]
    for broker in fleet:
        broker.close()
    results.put({"rounds": rounds, "late": late, "sent": opaque - HEARTBEAT_OPAQUE_BASE,
                 "answered": len(rtts), "rtts": rtts.tobytes()})


class HeartbeatFleet:
    """``with HeartbeatFleet(port, 100, 1000, 1.0) as fleet: fleet.start_beating() ...``."""

    def __init__(self, port, brokers, topics, interval, first_index=1000, max_seconds=240.0):
        ctx = multiprocessing.get_context("fork")
        self._ready, self._results = ctx.Queue(), ctx.Queue()
        self._beating, self._stop = ctx.Event(), ctx.Event()
        self.interval = interval
        self.stats = None
        self._process = ctx.Process(target=_fleet, daemon=True, args=(
            port, brokers, topics, interval, first_index, max_seconds, self._ready, self._beating, self._stop,
            self._results))

    def __enter__(self):
        self._process.start()
        error = self._ready.get(timeout=300)
        if error:
            self._process.join(5)
            raise RuntimeError(error)
        return self

    def start_beating(self):
        self._beating.set()

    def stop_beating(self):
        self._beating.clear()

    def __exit__(self, *exc):
        self._stop.set()
        try:
            self.stats = self._results.get(timeout=60)
        finally:
            self._process.join(10)
            if self._process.is_alive():
                self._process.terminate()
                self._process.join(5)
        rtts = array.array("d")
        rtts.frombytes(self.stats.pop("rtts"))
        self.stats["rtts"] = sorted(rtts)
        return False
