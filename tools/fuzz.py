"""Send N mutated frames to a NameServer over TCP and check, after every batch, that it still works.

    python -m tools.fuzz --frames 100000 --max-seconds 600            # spawns `twistd namesrv`
    python -m tools.fuzz --port 9876 --pid 1234 --frames 5000          # an already running server

Each connection carries a short plan of frames (``tools.fuzzframes``), written in random
pieces, then a sentinel route request whose answer must be the control broker's route. After
every batch of connections a fresh connection checks liveness and table consistency
(``tools.checks``). A crash is a dead process or no answer on a fresh connection within
``--timeout`` seconds. Everything is bounded: frames, seconds, bomb size; 127.0.0.1 only.
"""

import argparse
import collections
import json
import os
import random
import socket
import struct
import sys
import tempfile
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from namesrv.protocol.codec import FrameDecodeError, decode_frame, encode_frame  # noqa: E402
from namesrv.protocol.codes import ResponseCode  # noqa: E402
from tools import checks, fuzzframes  # noqa: E402

SENTINEL_OPAQUE = 1987654321
_LINGER_RST = struct.pack("ii", 1, 0)


def sentinel_frame():
    request = checks.route_request(checks.CONTROL_TOPICS[0])
    request.opaque = SENTINEL_OPAQUE
    return encode_frame(request)


def _drain(sock, buffer, seconds):
    """The answers already in ``buffer`` and those arriving within ``seconds``: route reads are
    answered at once, broker and admin requests a scheduler turn later (namesrv/dispatch/isolation.py)."""
    answers = []
    sock.settimeout(seconds)
    try:
        while True:
            while len(buffer) >= 4:
                (length,) = struct.unpack(">i", buffer[:4])
                if len(buffer) < 4 + length:
                    break
                answers.append(decode_frame(buffer[4:4 + length]))
                buffer = buffer[4 + length:]
            chunk = sock.recv(65536)
            if not chunk:
                break
            buffer += chunk
    except (OSError, FrameDecodeError):
        pass
    return answers


def run_plan(host, port, plan, rng, timeout=5.0, expected_sentinel=None, drain=0.002):
    """Send one plan on a new connection; returns (outcome, answers). Outcome is one of
    ``answered`` (the sentinel came back; answers arriving within ``drain`` seconds after it are
    collected too), ``closed`` (the server closed first), ``stalled``
    (no sentinel answer within ``timeout`` on an open connection), ``wrong`` (the sentinel
    answer differs from ``expected_sentinel``) or ``desync`` (the plan broke framing on purpose;
    we half-close and read until the server closes)."""
    desync = plan[-1].desync
    stream = b"".join(f.data for f in plan) + (b"" if desync else sentinel_frame())
    sock = socket.create_connection((host, port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)  # no TIME_WAIT pile-up
    answers = []
    try:
        pos = 0
        while pos < len(stream):
            step = rng.choice((1, 7, 64, 1500, 65536, len(stream)))
            sock.sendall(stream[pos:pos + step])
            pos += step
        if desync:
            sock.shutdown(socket.SHUT_WR)
        buffer = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return ("desync" if desync else "closed"), answers
            buffer += chunk
            while len(buffer) >= 4:
                (length,) = struct.unpack(">i", buffer[:4])
                if len(buffer) < 4 + length:
                    break
                answer = decode_frame(buffer[4:4 + length])
                buffer = buffer[4 + length:]
                if answer.opaque == SENTINEL_OPAQUE and not desync:
                    ok = answer.code == ResponseCode.SUCCESS and (
                        expected_sentinel is None or answer.body == expected_sentinel)
                    answers += _drain(sock, buffer, drain)
                    return ("answered" if ok else "wrong"), answers
                answers.append(answer)
    except socket.timeout:
        return "stalled", answers
    except (ConnectionError, OSError):
        return ("desync" if desync else "closed"), answers
    except FrameDecodeError:
        return "undecodable answer", answers
    finally:
        sock.close()


def _system_error_kind(answer):
    """SYSTEM_ERROR remarks that name a Python exception are bugs of validation, not answers."""
    remark = answer.remark or ""
    head = remark.split(":", 1)[0]
    if head.endswith(("Error", "Exception")) and " " not in head:
        return head
    return None


class FuzzReport:
    def __init__(self):
        self.frames = 0
        self.connections = 0
        self.outcomes = collections.Counter()
        self.answer_codes = collections.Counter()
        self.exceptions = collections.Counter()
        self.exception_examples = {}
        self.mutations = collections.Counter()
        self.crashes = 0
        self.inconsistencies = []
        self.checks = 0
        self.rss_before_kib = self.rss_after_kib = self.rss_peak_kib = None
        self.seconds = 0.0
        self.stopped_by = "frames"
        self.server_log_tracebacks = None
        self.leftover_brokers = None

    def as_dict(self):
        return {k: (dict(v) if isinstance(v, collections.Counter) else v) for k, v in vars(self).items()}

    def summary(self):
        mib = (lambda kib: "%.1f MiB" % (kib / 1024.0) if kib else "n/a")
        return "\n".join([
            "| figure | value |", "|---|---|",
            "| frames tried | %d |" % self.frames,
            "| connections | %d (%.0f frames/s) |" % (self.connections, self.frames / max(self.seconds, 1e-9)),
            "| crashes (dead process or no answer on a fresh connection) | %d |" % self.crashes,
            "| inconsistent table checks | %d of %d |" % (len(self.inconsistencies), self.checks),
            "| connections closed by the server (bad frame) | %d |" % self.outcomes["closed"],
            "| connections whose sentinel was answered | %d |" % self.outcomes["answered"],
            "| framing-breaking plans (half-closed) | %d |" % self.outcomes["desync"],
            "| stalled connections / wrong sentinel answers | %d / %d |" % (
                self.outcomes["stalled"], self.outcomes["wrong"]),
            "| answers by response code | %s |" % ", ".join(
                "%s: %d" % (k, v) for k, v in sorted(self.answer_codes.items())),
            "| SYSTEM_ERROR naming a Python exception | %s |" % (
                ", ".join("%s: %d" % kv for kv in self.exceptions.most_common()) or "none"),
            "| server RSS before / after / peak | %s / %s / %s |" % (
                mib(self.rss_before_kib), mib(self.rss_after_kib), mib(self.rss_peak_kib)),
            "| brokers left registered after every fuzz connection closed | %s |" % (
                "n/a" if self.leftover_brokers is None else len(self.leftover_brokers)),
            "| tracebacks in the server log | %s |" % (
                "n/a" if self.server_log_tracebacks is None else self.server_log_tracebacks),
            "| duration | %.0f s (stopped by %s) |" % (self.seconds, self.stopped_by),
        ])


def fuzz(host, port, frames=1000, max_seconds=60.0, seed=0, pid=None, process=None, batch=50,
         max_frames_per_connection=6, bomb_limit=1 << 20, timeout=5.0, crash_dir=None, log=None):
    """Run the fuzzer against a started server; returns a FuzzReport."""
    rng = random.Random(seed)
    vectors = fuzzframes.vector_drafts()
    report = FuzzReport()
    control = checks.ControlBroker(host, port)
    checker = checks.TableChecker(host, port, timeout=timeout)
    checker.record_expected()
    expected = checker.expected_routes[checks.CONTROL_TOPICS[0]]
    report.rss_before_kib = report.rss_peak_kib = checks.rss_kib(pid)
    started = time.monotonic()
    try:
        while report.frames < frames:
            if time.monotonic() - started >= max_seconds:
                report.stopped_by = "max-seconds"
                break
            plans = []
            for _ in range(batch):
                plan = fuzzframes.plan_connection(rng, max_frames_per_connection, bomb_limit=bomb_limit,
                                                  vectors=vectors)
                plans.append(plan)
                outcome, answers = run_plan(host, port, plan, rng, timeout, expected)
                report.connections += 1
                report.frames += len(plan)
                report.outcomes[outcome] += 1
                for f in plan:
                    report.mutations.update(f.mutations or ("valid",))
                for a in answers:
                    report.answer_codes[a.code] += 1
                    kind = a.code == ResponseCode.SYSTEM_ERROR and _system_error_kind(a)
                    if kind:
                        report.exceptions[kind] += 1
                        report.exception_examples.setdefault(kind, a.remark[:300])
                if outcome in ("stalled", "wrong", "undecodable answer"):
                    _dump(crash_dir, outcome, [plan], log)
                if report.frames >= frames:
                    break
            try:
                control.heartbeat()
                problems = checker.check()
            except RuntimeError as e:  # the server refused the control broker's re-registration
                problems = [str(e)]
            report.checks += 1
            dead = process is not None and process.poll() is not None
            if dead or (problems and problems[0].startswith("no answer")):
                report.crashes += 1
                report.stopped_by = "crash"
                _dump(crash_dir, "crash", plans, log, problems)
                break
            if problems:
                report.inconsistencies.append(problems[:5])
                _dump(crash_dir, "inconsistent", plans, log, problems)
            rss = checks.rss_kib(pid)
            if rss and rss > (report.rss_peak_kib or 0):
                report.rss_peak_kib = rss
            if log and report.checks % 20 == 0:
                log("%d frames, %d connections, %.0f s, RSS %s KiB" % (
                    report.frames, report.connections, time.monotonic() - started, rss))
        report.leftover_brokers = leftover_brokers(checker)
    finally:
        report.seconds = time.monotonic() - started
        report.rss_after_kib = checks.rss_kib(pid)
        peak = checks.rss_kib(pid, "VmHWM")
        if peak:
            report.rss_peak_kib = peak
        control.close()
    return report


def leftover_brokers(checker, settle=1.0):
    """Brokers still registered once every fuzz connection is closed: each was bound to a fuzz
    connection, so channel-close housekeeping should have removed it (a zombie otherwise)."""
    from namesrv.protocol.codes import RequestCode
    from namesrv.protocol.command import make_request

    time.sleep(settle)
    with checker._client() as client:
        info = checks.loads_fastjson(client.call(make_request(RequestCode.GET_BROKER_CLUSTER_INFO)).body)
    return sorted(name for name in info.get("brokerAddrTable") or {} if name != checks.CONTROL_BROKER)


def _dump(crash_dir, kind, plans, log, problems=()):
    if not crash_dir:
        return
    os.makedirs(crash_dir, exist_ok=True)
    path = os.path.join(crash_dir, "%s-%d.jsonl" % (kind, time.time_ns()))
    with open(path, "w") as f:
        f.write(json.dumps({"kind": kind, "problems": list(problems)}) + "\n")
        for plan in plans:
            f.write(json.dumps([{"hex": p.data.hex(), "mutations": p.mutations} for p in plan]) + "\n")
    if log:
        log("%s: frames written to %s %s" % (kind, path, list(problems)[:3]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=10000)
    parser.add_argument("--max-seconds", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--port", type=int, help="fuzz a server already listening on 127.0.0.1:PORT")
    parser.add_argument("--pid", type=int, help="its pid, for memory figures")
    parser.add_argument("--batch", type=int, default=50, help="connections between two table checks")
    parser.add_argument("--bomb-limit", type=int, default=1 << 20, help="largest inflated zlib body sent")
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--crash-dir", default=os.path.join(tempfile.gettempdir(), "namesrv-fuzz"))
    parser.add_argument("--json", help="also write the figures as JSON to this file")
    args = parser.parse_args(argv)

    def log(message):
        sys.stderr.write("fuzz: %s\n" % message)

    server = None
    if args.port is None:
        from tests.integration.server import NamesrvProcess
        workdir = tempfile.mkdtemp(prefix="namesrv-fuzz-")
        server = NamesrvProcess(workdir).start()
        port, pid, process = server.port, server.process.pid, server.process
        log("spawned twistd namesrv on 127.0.0.1:%d (pid %d, workdir %s)" % (port, pid, workdir))
    else:
        port, pid, process = args.port, args.pid, None
    report = None
    try:
        report = fuzz("127.0.0.1", port, args.frames, args.max_seconds, args.seed, pid, process, args.batch,
                      bomb_limit=args.bomb_limit, timeout=args.timeout, crash_dir=args.crash_dir, log=log)
    finally:
        if server is not None:
            code = server.stop()
            log("server stopped with exit code %s" % code)
            if report is not None:
                text = checks.server_log(server)
                report.server_log_tracebacks = text.count("Traceback") + text.count("Unhandled")
    print(report.summary())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report.as_dict(), f, indent=1, sort_keys=True, default=str)
    return 0 if report.crashes == 0 and not report.inconsistencies else 1


if __name__ == "__main__":
    sys.exit(main())
