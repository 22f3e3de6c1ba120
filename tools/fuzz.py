"""Send N mutated frames to a NameServer over TCP and check, after every batch, that it still works.

    python -m tools.fuzz --frames 100000 --max-seconds 600            # spawns `twistd namesrv`
    python -m tools.fuzz --plans 100000 --workers 1 --max-seconds 3600  # 100,000 connections, a read worker
    python -m tools.fuzz --port 9876 --pid 1234 --frames 5000          # an already running server

Each connection carries a short plan of frames (``tools.fuzzframes``), written in random
pieces, then a sentinel route request whose answer must be the control broker's route; every route answer a plan gets
must be whole (a BrokerData for each QueueData). After every batch of connections a fresh connection checks
liveness and table consistency (``tools.checks``): every fuzz topic's route against the cluster info read
before and after it. A crash is a dead process or no answer on a fresh connection within
``--timeout`` seconds. Everything is bounded: frames, seconds, bomb size; 127.0.0.1 only.
"""

import argparse
import collections
import json
import os
import random
import re
import socket
import struct
import sys
import tempfile
import threading
import time

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from namesrv.protocol.codec import FrameDecodeError, decode_frame, encode_frame  # noqa: E402
from namesrv.protocol.codes import ResponseCode  # noqa: E402
from tools import checks, fuzzframes  # noqa: E402
from tools.frames import FUZZ_TOPICS  # noqa: E402

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


class Churn:
    """Brokers that keep the fuzz topics' routes moving while the plans run and the checks read: each registers
    a random few of the fuzz topics (random perms and queue counts) on its own connection every few ms, and
    now and then drops its connection (its routes go, unanswered: a quiet change) and comes back. So route
    reads meet publications to the read workers under way, and the checks have live routes to compare with
    the cluster info. Names of its own; everything it registered leaves when it stops."""

    def __init__(self, host, port, seed, brokers=3, pause=0.01):
        self.host, self.port, self.pause = host, port, pause
        self.registrations = self.drops = self.refused = 0
        self.refusals = collections.Counter()   # (code, remark) of refused registrations
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._run, args=("fuzz-churn-%d" % i, random.Random(seed * 10 + i)),
                                          daemon=True) for i in range(brokers)]

    def start(self):
        for thread in self._threads:
            thread.start()
        return self

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(10)

    def _run(self, name, rng):
        from namesrv.client import BlockingRemotingClient
        from tests.brokers import register_request, topic_config
        address = "127.0.0.1:%d" % (20900 + int(name.rsplit("-", 1)[1]))
        while not self._stop.is_set():
            try:
                with BlockingRemotingClient(self.host, self.port, timeout=10) as client:
                    for counter in range(1, rng.randint(2, 200)):
                        if self._stop.is_set():
                            return
                        topics = [topic_config(t, rng.choice((1, 4, 8)), rng.choice((2, 4, 6)))
                                  for t in rng.sample(FUZZ_TOPICS, rng.randint(2, 6))]   # one alone: a 5.x refusal
                        answer = client.call(register_request("FuzzChurnCluster", name, address, topics=topics,
                                                              counter=counter))
                        self.registrations += 1
                        if answer.code != ResponseCode.SUCCESS:
                            self.refused += 1
                            self.refusals[answer.code, (answer.remark or "")[:120]] += 1
                        self._stop.wait(self.pause * rng.random())
                self.drops += 1   # the connection closes: its broker leaves, nobody is answered about it
            except (OSError, ConnectionError):
                self._stop.wait(0.1)


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
        self.read_workers = None
        self.churn = None                 # Churn's counts, when it ran
        self.plan_routes_checked = 0      # route answers the plans got, each checked whole
        self.plan_route_problems = []
        self.routes_cross_checked = 0     # the checks' route answers compared with cluster info
        self.transient_disagreements = 0  # seen once, gone at the second look
        self.unstable_checks = 0          # the cluster info moved during a check (looked at again)

    def as_dict(self):
        return {k: (dict(v) if isinstance(v, collections.Counter) else v) for k, v in vars(self).items()}

    def summary(self):
        mib = (lambda kib: "%.1f MiB" % (kib / 1024.0) if kib else "n/a")
        return "\n".join([
            "| figure | value |", "|---|---|",
            "| frames tried | %d |" % self.frames,
            "| connections (plans) | %d (%.0f frames/s) |" % (self.connections, self.frames / max(self.seconds, 1e-9)),
            "| read workers | %s |" % ("n/a" if self.read_workers is None else self.read_workers),
            "| routes kept moving (Churn) | %s |" % ("no" if not self.churn else
                                                     "%(registrations)d registrations, %(drops)d dropped "
                                                     "connections, %(refused)d refused" % self.churn),
            "| crashes (dead process or no answer on a fresh connection) | %d |" % self.crashes,
            "| inconsistent table checks | %d of %d |" % (len(self.inconsistencies), self.checks),
            "| route answers cross-checked against cluster info (checks) | %d |" % self.routes_cross_checked,
            "| disagreements gone at a second look / checks looked at again (cluster info moved) | %d / %d |" % (
                self.transient_disagreements, self.unstable_checks),
            "| route answers the plans got, each checked whole / not whole | %d / %d |" % (
                self.plan_routes_checked, len(self.plan_route_problems)),
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
         max_frames_per_connection=6, bomb_limit=1 << 20, timeout=5.0, crash_dir=None, log=None, plans=None,
         churn=0):
    """Run the fuzzer against a started server, until ``frames`` frames (or ``plans`` connections) were
    sent, with ``churn`` Churn brokers moving the fuzz topics' routes meanwhile; returns a FuzzReport."""
    rng = random.Random(seed)
    vectors = fuzzframes.vector_drafts()
    report = FuzzReport()
    control = checks.ControlBroker(host, port)
    checker = checks.TableChecker(host, port, timeout=timeout)
    checker.record_expected()
    expected = checker.expected_routes[checks.CONTROL_TOPICS[0]]
    report.rss_before_kib = report.rss_peak_kib = checks.rss_kib(pid)
    moving = Churn(host, port, seed, brokers=churn).start() if churn else None
    started = time.monotonic()
    try:
        plan_limit = plans   # (the batch's list of plans below takes the name)

        def done():
            return report.connections >= plan_limit if plan_limit is not None else report.frames >= frames

        while not done():
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
                    _check_route_answer(report, a)
                    kind = a.code == ResponseCode.SYSTEM_ERROR and _system_error_kind(a)
                    if kind:
                        report.exceptions[kind] += 1
                        report.exception_examples.setdefault(kind, a.remark[:300])
                if outcome in ("stalled", "wrong", "undecodable answer"):
                    _dump(crash_dir, outcome, [plan], log)
                if done():
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
        if moving is not None:
            moving.stop()   # its brokers leave with their connections: none may be left over
        report.leftover_brokers = leftover_brokers(checker)
    finally:
        if moving is not None:
            moving.stop()
            report.churn = {"registrations": moving.registrations, "refused": moving.refused, "drops": moving.drops,
                            "refusals": ["%s %s: %d" % (code, remark, n) for (code, remark), n in moving.refusals.items()]}
        report.routes_cross_checked = checker.routes_cross_checked
        report.transient_disagreements, report.unstable_checks = checker.transient, checker.unstable
        report.seconds = time.monotonic() - started
        report.rss_after_kib = checks.rss_kib(pid)
        peak = checks.rss_kib(pid, "VmHWM")
        if peak:
            report.rss_peak_kib = peak
        control.close()
    return report


def _check_route_answer(report, answer):
    """A SUCCESS answer that is a TopicRouteData must be whole: a BrokerData with addresses for each QueueData."""
    if answer.code != ResponseCode.SUCCESS or not answer.body or b'"queueDatas"' not in answer.body:
        return
    try:
        route = checks.loads_fastjson(answer.body)
    except (ValueError, UnicodeDecodeError):
        return   # not a route (a KV value or a remark that merely names the key)
    if not isinstance(route, dict) or "brokerDatas" not in route:
        return
    report.plan_routes_checked += 1
    problems = checks.route_problems("(a plan's read)", route, None)
    if problems and len(report.plan_route_problems) < 20:
        report.plan_route_problems.append(problems[:3])


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
    parser.add_argument("--plans", type=int, help="stop after this many connections (plans) instead of frames")
    parser.add_argument("--workers", help="routeReadWorkers of the server spawned (default: its own, auto)")
    parser.add_argument("--churn", type=int, default=0, metavar="N",
                        help="N brokers keep the fuzz topics' routes moving meanwhile (default 0)")
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
        server = NamesrvProcess(workdir, {"routeReadWorkers": args.workers} if args.workers else None).start()
        port, pid, process = server.port, server.process.pid, server.process
        log("spawned twistd namesrv on 127.0.0.1:%d (pid %d, workdir %s)" % (port, pid, workdir))
    else:
        port, pid, process = args.port, args.pid, None
    report = None
    try:
        report = fuzz("127.0.0.1", port, args.frames, args.max_seconds, args.seed, pid, process, args.batch,
                      bomb_limit=args.bomb_limit, timeout=args.timeout, crash_dir=args.crash_dir, log=log,
                      plans=args.plans, churn=args.churn)
    finally:
        if server is not None:
            code = server.stop()
            log("server stopped with exit code %s" % code)
            if report is not None:
                text = checks.server_log(server)
                report.server_log_tracebacks = text.count("Traceback") + text.count("Unhandled")
                started = re.search(r"(\d+) route read worker\(s\) share port", text)
                report.read_workers = int(started.group(1)) if started else 0
    print(report.summary())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report.as_dict(), f, indent=1, sort_keys=True, default=str)
    return 0 if report.crashes == 0 and not report.inconsistencies and not report.plan_route_problems else 1


if __name__ == "__main__":
    sys.exit(main())
