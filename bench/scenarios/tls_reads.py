"""Route reads over TLS, on one process and with a read worker: ``python -m bench tls_reads``.

bench/lib/loadgen.py drives raw non-blocking sockets; TLS needs the ssl module's buffering, so
this load is simpler: ``processes`` client processes, each with ``connections`` blocking TLS
connections, each keeping ``depth`` requests in flight in lock-step (send a batch, read its
answers, send the next). Every set-up serves the same fleet; brokers connect plain (the port
is permissive) and stay connected. Bounded: each run lasts ``warmup + duration`` seconds.

Prints one line per set-up: answers per second in the window, the server's CPU time (main
process and workers) per answer over the whole run, and errors (non-SUCCESS answers). On a
shared machine the CPU per answer moves less than the rate.
"""

import multiprocessing
import socket
import ssl
import struct
import time

from bench.lib import options
from bench.lib.brokers import FakeBroker, topic_names
from bench.lib.servers import NamesrvServer
from bench.lib.wire import route_request
from namesrv.protocol.codec import encode_frame

_LENGTH = struct.Struct(">i")
SETUPS = (
    ("plain, 1 process", "disabled", 0, False),
    ("plain, 1 worker exclusive", "disabled", 1, True),
    ("TLS, 1 process", "permissive", 0, False),
    ("TLS, main + 1 worker sharing the port", "permissive", 1, False),
    ("TLS, 1 worker exclusive", "permissive", 1, True),
)


def _with_opaque(command, opaque):
    command.opaque = opaque
    return command


def _connect(port, tls):
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if not tls:
        return sock
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context.wrap_socket(sock, server_hostname="localhost")


def _read_answers(sock, buffer, count):
    """Read ``count`` whole answer frames; returns (successes, leftover bytes)."""
    ok = 0
    while count:
        while len(buffer) < 4 or len(buffer) < 4 + _LENGTH.unpack_from(buffer)[0]:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed by the server")
            buffer += chunk
        end = 4 + _LENGTH.unpack_from(buffer)[0]
        ok += b'"code":0,' in buffer[8:end]
        buffer = buffer[end:]
        count -= 1
    return ok, buffer


def _client(port, tls, topics, connections, depth, warmup, duration, results):
    socks = [_connect(port, tls) for _ in range(connections)]
    batches = [b"".join(encode_frame(_with_opaque(route_request(topics[(i * depth + j) % len(topics)]), j + 1))
                        for j in range(depth)) for i in range(connections)]
    buffers = [b""] * connections
    start = time.monotonic()
    measure_from, stop_at = start + warmup, start + warmup + duration
    answers = errors = total = 0
    for sock, batch in zip(socks, batches):
        sock.sendall(batch)
    while True:
        now = time.monotonic()
        if now >= stop_at:
            break
        for i, sock in enumerate(socks):
            ok, buffers[i] = _read_answers(sock, buffers[i], depth)
            sock.sendall(batches[i])
            total += depth
            if now >= measure_from:
                answers += depth
                errors += depth - ok
    for sock in socks:
        sock.close()
    results.put((answers, errors, total))


def run_setup(name, mode, workers, exclusive, args):
    properties = {"tlsMode": mode, "tlsTestModeEnable": "true", "routeReadWorkers": str(workers),
                  "routeReadWorkersExclusive": "true" if exclusive else "false",
                  "answerCacheEnable": "false" if args.no_cache else "true"}
    server = NamesrvServer(properties=properties)
    server.start()
    brokers = []
    try:
        for index in range(workers):
            server.wait_for_log("read worker %d listening" % index)
        topics = topic_names("BenchTls", args.topics)
        broker = FakeBroker(server.port, "bench-tls-broker", 0)
        brokers.append(broker)
        broker.register_topics(topics)
        time.sleep(0.5)   # let the workers' replicas catch up before the clients connect
        results = multiprocessing.Queue()
        clients = [multiprocessing.Process(target=_client, args=(server.port, mode != "disabled", topics,
                                                                 args.connections, args.depth, args.warmup,
                                                                 args.duration, results))
                   for _ in range(args.processes)]
        cpu_before = server.cpu_seconds()
        for client in clients:
            client.start()
        totals = [results.get(timeout=args.warmup + args.duration + 30) for _ in clients]
        for client in clients:
            client.join(10)
        cpu = server.cpu_seconds() - cpu_before
        answers = sum(t[0] for t in totals)
        errors = sum(t[1] for t in totals)
        everything = sum(t[2] for t in totals)
        print("%-40s %9.0f req/s  %6.1f us server CPU/req  errors %d"
              % (name, answers / args.duration, cpu * 1e6 / max(1, everything), errors), flush=True)
        return answers / args.duration
    finally:
        for broker in brokers:
            broker.close()
        server.cleanup()


OPTIONS = (
    options.PROCESSES(2),
    options.CONNECTIONS(8, "per client process"),
    options.DEPTH(8),
    options.TOPICS(100, "of the one broker"),
    options.WARMUP(1.0),
    options.DURATION(3.0),
    options.Option("--no-cache", "answerCacheEnable=false: every answer built", action="store_true"),
    options.Option("--only", "run the set-ups whose name contains this", default=""),
)


def main(argv=None):
    args = options.parse("tls_reads", __doc__, OPTIONS, argv)
    print("%d client processes x %d connections x depth %d, %d topics, %.0f s each"
          % (args.processes, args.connections, args.depth, args.topics, args.duration))
    for name, mode, workers, exclusive in SETUPS:
        if args.only in name:
            run_setup(name, mode, workers, exclusive, args)


if __name__ == "__main__":
    main()
