"""A real fleet's size, not a time-compressed one: B brokers × their own topics, any name server.

    python -m bench bigfleet [--target HOST:PORT | --server default|one|workers=N[,shared]
                              | --java PEER_DIR [--java-heap 4g]] [--warm-up SECONDS]
                             [--brokers 1000] [--topics 100000] [--brokers-per-topic 10]
                             [--cycle 30] [--rate 0] [--seconds 20] [--read-connections 3] [--depth 32]
                             [--scenario steady|disconnect|takeover|wholetable|restart]
                             [--acl off|on|alternate [--rounds 3]]

The fleet (issue 21): B brokers in one cluster; broker b hosts ``topics × brokers-per-topic / B``
topics, ``Fleet%06d`` of ``(b × step + j) mod topics`` with ``step = topics / B``, so each topic is
on ``brokers-per-topic`` brokers. Each broker keeps its own connection and re-registers its full
plain REGISTER_BROKER body (unchanged data version, as a 4.9 broker does every 30 s), spread so
the whole fleet beats once per ``--cycle``. Route reads: ``--read-connections`` connections
pipelining ``--depth`` GET_ROUTEINFO_BY_TOPIC of random topics each (as fast as answered, or
``--rate`` reads/s offered). A prober on its own connection reads one random route at a time,
2 ms apart, and records latency.

Printed: reads/s, the prober's p50/p99/max, the registrations' p50/p99 and the RSS of every
process of the server (found by its listening port, so a Java NameServer given by ``--target``
is measured the same way), and the share of the CPUs' time the hypervisor stole meanwhile
(``tools.hoststeal``: on a shared virtual machine it is most of the prober's tail), with the guest
kernel's halt polling it ran under (``tools.guestidle``).

Scenarios: ``steady`` (the above); ``disconnect`` (halfway, every broker's connection closes at
once, as when a switch reboots: the prober's worst read around it, and how long until the server
answers GET_BROKER_CLUSTER_INFO without them); ``takeover`` (halfway, ``twistd namesrv --takeover``
starts a new process with the same properties: failed reads, the worst read, brokers moved);
``wholetable`` (halfway, every whole-table question once, bench.lib.wholetable: how long each took, its frame's
size, and whether a RocketMQ client would refuse it; ours gets a status page to ask too). ``--java``
starts a fresh Java NameServer of a peer built by ../shared/javapeers with the heap given
(bench.lib.javanamesrv) and measures it instead of ours, warm: one window right after registering is
reported as ``fresh``, then the same load runs ``--warm-up`` seconds (60 for Java) before the measured window,
as against a name server that has run for weeks. ``restart`` (halfway, SIGTERM, which writes the
route snapshot, then a new process on the same port and files: how long until it answers a route read
from the snapshot; the window's reads end at the stop); ``cold`` (the prober and the reads already run
while the fleet registers for the first time: the prober's figures over the registration).
The first registration of the whole fleet (``register_all_s``) is timed from the brokers' connections
to the last answer; their frames are built before (since issue 41: the earlier figures included
building them, about 8 s at a million topics).
Every phase is bounded in time; brokers use 127.x.y.z addresses that nobody connects to.

``--acl on`` starts ours with ``aclEnable=true`` (every class signed, deny by default): the reads and the
prober sign as a reading user (each frame signed once, when its template is made: the signature does
not cover the opaque), the 4.9-style fleet registers unsigned through ``brokerAllowedAddresses`` as 4.9
brokers must. ``--acl alternate`` measures ``--rounds`` pairs, ACL off then on, each on a fresh server,
and prints the ratio of the reads/s (issue 54's cost: at least 0.9).
"""

import json
import os
import shutil
import subprocess
import tempfile
import time

from tools import guestidle
from bench.lib import options, wholetable
from bench.lib.brokers import BrokerFleet, SpreadLayout
from tools.hoststeal import StealWindow
from bench.lib.javanamesrv import JavaNamesrv
from bench.lib.loadgen import LoadRun, LoadSpec
from bench.lib.servers import NamesrvServer, cpu_seconds, free_port
from bench.lib.serverprocs import listening_pids, server_rss_kib, tree_pids
from bench.lib.spysplit import Spies
from bench.lib.wire import percentile, route_templates
from namesrv.client import BlockingRemotingClient
from namesrv.protocol.codes import RequestCode, ResponseCode
from namesrv.protocol.command import make_request
from namesrv.security.signature import sign_request_ext

PROBE_RATE = 500.0        # one read every 2 ms
#: seconds of the same load a Java NameServer serves before it is measured (--warm-up): a name server runs for
#: weeks, and a JVM compiled its hot paths long ago; against one just started, ours looked up to twice better
#: at one read per connection (issue 58: p99 20-27 ms fresh, 9-10 ms warm)
JAVA_WARM_UP = 60.0
COLD_BOUND = 600.0        # --scenario cold: the reads' window ends with the registration, or after this
SETTINGS = {
    "default": {},
    "one": {"routeReadWorkers": "0"},
}
#: --acl on: the load generator's user, and the file that lets it read (from this machine only)
READER = ("benchReader", "bench-reader-secret")
ACL_FILE = """users:
  - {username: benchReader, password: bench-reader-secret}
acls:
  - subject: User:benchReader
    policies:
      - entries:
          - {resource: "*", actions: [RouteRead, AdminRead], sourceIps: [127.0.0.1/32]}
"""


def acl_properties(directory):
    """The properties of ``--acl on`` (its file written in ``directory``)."""
    path = os.path.join(directory, "plain_acl.yml")
    with open(path, "w") as f:
        f.write(ACL_FILE)
    return {"aclEnable": "true", "aclFile": path, "brokerAllowedAddresses": "127.0.0.1"}


def request(code, ext=None, credentials=None):
    ext = dict(ext or {})
    if credentials is not None:
        ext = sign_request_ext(ext, None, *credentials)
    return make_request(code, ext)


def server_properties(setting):
    """``default``, ``one`` (one process) or ``workers=N`` / ``workers=N,shared``."""
    if setting in SETTINGS:
        return dict(SETTINGS[setting])
    if setting.startswith("workers="):
        count, _, mode = setting[len("workers="):].partition(",")
        props = {"routeReadWorkers": str(int(count))}
        if mode:
            if mode != "shared":
                raise ValueError("workers=N or workers=N,shared")
            props["routeReadWorkersExclusive"] = "false"
        return props
    raise ValueError("unknown server setting %r" % setting)


def ms(seconds):
    return None if seconds is None else seconds * 1000.0


def cluster_brokers(host, port, credentials=None):
    """How many broker names GET_BROKER_CLUSTER_INFO lists right now."""
    client = BlockingRemotingClient(host, port, timeout=10.0)
    try:
        answer = client.call(request(RequestCode.GET_BROKER_CLUSTER_INFO, credentials=credentials))
    finally:
        client.close()
    if answer.code != ResponseCode.SUCCESS or not answer.body:
        return 0
    return answer.body.count(b'"brokerName"')


def wait_forgotten(host, port, limit, credentials=None):
    """Seconds until the cluster info lists no broker (None past ``limit``)."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        if cluster_brokers(host, port, credentials) == 0:
            return time.monotonic() - started
        time.sleep(0.05)
    return None


def rss_mib(pids):
    return server_rss_kib(pids) / 1024.0


class Run:
    """One measured run against ``host:port`` (``server``: our subprocess, or None for a target)."""

    def __init__(self, args, host, port, server=None, status_port=None, credentials=None, warm_up=0.0):
        self.args, self.host, self.port, self.server = args, host, port, server
        self.warm_up = warm_up   # seconds of the same load before the measured window (a JVM's JIT warms up)
        self.status_port = status_port
        self.credentials = credentials   # the reads sign with these (--acl on)
        self.event_at = None   # wall-clock time of the scenario's event (the drop, the takeover, the restart)
        self.layout = SpreadLayout(args.brokers, args.topics, args.brokers_per_topic, args.topic_prefix)
        self.figures = {"brokers": args.brokers, "topics": args.topics, "brokers_per_topic": args.brokers_per_topic,
                        "entries": args.brokers * self.layout.per_broker, "cycle_s": args.cycle,
                        "offered_rate": args.rate or None, "read_connections": args.read_connections,
                        "depth": args.depth, "scenario": args.scenario, "acl": credentials is not None}

    def log(self, text):
        print(text, flush=True)

    def server_pids(self):
        return listening_pids(self.port) or ([self.server.pid] if self.server else [])

    def measure(self):
        args = self.args
        with BrokerFleet(self.port, self.layout, host=self.host) as fleet:
            self.log("registering %d brokers × %d topics (%d topics, %d entries) ..."
                     % (args.brokers, self.layout.per_broker, args.topics, self.figures["entries"]))
            self.figures["fleet_frames_s"] = fleet.prepare(args.brokers)
            if args.scenario == "cold":
                self.register_cold(fleet)
            else:
                self.figures["register_all_s"] = fleet.resize(args.brokers)
            fleet.prime()
            self.figures["rss_idle_mib"] = rss_mib(self.server_pids())
            self.log("registered in %.1f s; RSS %.0f MiB" % (self.figures["register_all_s"],
                                                             self.figures["rss_idle_mib"]))
            templates = route_templates(self.layout.all_topics(), credentials=self.credentials)
            if self.warm_up:
                # a JVM that has served for a while: the window measured fresh, then the same load unmeasured
                fresh = self.window(fleet, templates, args.seconds, scenario=False)
                self.figures["fresh"] = self.summary(*fresh)
                self.log("fresh: %s; warming up for %.0f s under the same load ..."
                         % (self.figures["fresh"]["line"], self.warm_up))
                self.window(fleet, templates, self.warm_up, scenario=False)
                self.figures["warm_up_s"] = self.warm_up
            reads_result, probe_result, beats, event = self.window(fleet, templates, args.seconds)
        self.record(reads_result, probe_result, beats, event)
        return self.figures

    def window(self, fleet, templates, seconds, scenario=True):
        """One window of ``seconds``: the fleet beating, the reads and the prober running, the scenario's event
        halfway (``scenario``); (reads, prober, beats, event), and the CPU time, steal, guest idle and RSS in
        ``figures``."""
        args = self.args
        reads_spec = LoadSpec(connections=args.read_connections, depth=args.depth, processes=args.load_processes,
                              warmup=args.warmup, duration=seconds, rate=args.rate, stall_timeout=10.0)
        probe_spec = LoadSpec(connections=1, depth=1, processes=1, warmup=args.warmup, duration=seconds,
                              rate=PROBE_RATE, seed=11, stall_timeout=10.0)
        halfway = scenario and args.scenario in ("disconnect", "restart")
        beating = args.warmup + (seconds / 2 if halfway else seconds)
        fleet.start_beating(args.cycle, beating, grace=10.0)
        processes = self.named_processes()
        cpu_before = {name: cpu_seconds(pid, children=False) for name, pid in processes.items()}
        reads = LoadRun(self.port, templates, reads_spec, self.host).start()
        probe = LoadRun(self.port, templates, probe_spec, self.host).start()
        steal = StealWindow(time.monotonic).start()
        spies = Spies(processes, args.profile, args.warmup + seconds).start() if scenario and args.profile else None
        if scenario:
            event, beats = self.scenario_event(fleet)
        else:
            time.sleep(args.warmup + seconds)
            event, beats = {}, None
        rss_peak = rss_mib(self.server_pids())
        reads_result, probe_result = reads.result(), probe.result()
        steal.stop()
        answered = max(1, reads_result.answered + probe_result.answered)
        cpu = {name: cpu_seconds(pid, children=False) for name, pid in processes.items()}
        spent = {name: cpu[name] - cpu_before[name] for name in processes
                 if cpu[name] is not None and cpu_before[name] is not None}
        self.figures["cpu_us_per_read"] = {name: used / answered * 1e6 for name, used in spent.items()}
        if scenario and args.scenario == "steady" and self.server is not None and spent:
            # all of the server's processes, warm-up and the fleet's beats included (the same on every run):
            # steadier than reads/s on a shared machine, where a neighbour's burst takes cores, not CPU time
            self.figures["server_cpu_s"] = sum(spent.values())
            self.figures["server_cpu_us_per_read"] = sum(spent.values()) * 1e6 / answered
        if spies is not None:
            self.figures["profile"] = None if spies.missing else spies.splits()
        self.figures["host_steal_share"] = steal.share
        idle = guestidle.read()
        self.figures.update(guest_idle_driver=idle["driver"], guest_halt_poll_ns=idle["halt_poll_ns"],
                            guest_halt_poll_shrink=idle["shrink"])
        beats = beats or fleet.beat_result()
        self.figures["rss_mib"] = max(rss_peak, rss_mib(self.server_pids()))
        return reads_result, probe_result, beats, event

    @staticmethod
    def summary(reads, probe, beats, event):
        """A window's headline figures (the fresh window of a warmed-up run)."""
        figures = {"reads_per_s": reads.rps, "read_p99_ms": reads.latency_ms(0.99),
                   "probe_p50_ms": probe.latency_ms(0.5), "probe_p99_ms": probe.latency_ms(0.99),
                   "probe_max_ms": ms(probe.latencies[-1]) if probe.latencies else None,
                   "registration_p99_ms": ms(percentile(beats["rtts"], 0.99))}
        figures["line"] = ("%.0f reads/s, prober p50 %.2f / p99 %.2f / max %.2f ms, registration p99 %.2f ms"
                           % tuple(figures[k] or 0 for k in ("reads_per_s", "probe_p50_ms", "probe_p99_ms",
                                                              "probe_max_ms", "registration_p99_ms")))
        return figures

    def named_processes(self):
        """The server's processes by role: ``main`` (the one this benchmark started), ``worker-N`` (its
        read workers, by --index), ``server-PID`` (any other: a --target's, the JVM)."""
        named = {}
        for pid in sorted(set(p for top in self.server_pids() for p in tree_pids(top))):
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if self.server is not None and pid == self.server.pid:
                named["main"] = pid
            elif b"namesrv.readworkers.worker" in argv and b"--index" in argv:
                named["worker-%s" % argv[argv.index(b"--index") + 1].decode()] = pid
            else:
                named["server-%d" % pid] = pid
        return named

    def register_cold(self, fleet):
        """The fleet's first registration while the prober and the reads (``--rate``, or as fast as
        served) already run: how long it took, and the reads sent meanwhile (TOPIC_NOT_EXIST until a
        topic's first broker has registered, answered all the same)."""
        args = self.args
        templates = route_templates(self.layout.all_topics(), credentials=self.credentials)
        reads = LoadRun(self.port, templates, LoadSpec(
            connections=args.read_connections, depth=args.depth, processes=args.load_processes, warmup=0.0,
            duration=COLD_BOUND, rate=args.rate, stall_timeout=30.0, timeline=True), self.host).start()
        probe = LoadRun(self.port, templates, LoadSpec(
            connections=1, depth=1, processes=1, warmup=0.0, duration=COLD_BOUND, rate=PROBE_RATE, seed=13,
            stall_timeout=30.0, timeline=True), self.host).start()
        time.sleep(0.5)
        began = time.perf_counter()
        self.figures["register_all_s"] = fleet.resize(args.brokers)
        ended = time.perf_counter()
        reads.stop()
        probe.stop()
        reads, probe = reads.result(), probe.result()
        during = probe.between(began, ended)
        read_during = reads.between(began, ended)
        self.figures.update({
            "cold_probe_p50_ms": ms(percentile(during, 0.5)), "cold_probe_p99_ms": ms(percentile(during, 0.99)),
            "cold_probe_max_ms": ms(during[-1]) if during else None, "cold_probe_reads": len(during),
            "cold_reads_per_s": len(read_during) / max(1e-9, ended - began),
            "cold_read_p99_ms": ms(percentile(read_during, 0.99)),
            "cold_answers_not_success": reads.errors + probe.errors})

    def scenario_event(self, fleet):
        """Halfway through the window: drop every broker, or take the server over (or nothing)."""
        args = self.args
        if args.scenario == "disconnect":
            beats = fleet.beat_result()          # the fleet beat until halfway
            busy_before = self.main_cpu()
            self.event_at = time.time()
            fleet.drop()
            forgotten = wait_forgotten(self.host, self.port, args.seconds, self.credentials)
            return {"dropped_brokers_forgotten_s": forgotten,
                    "main_cpu_s_after_drop": None if busy_before is None else self.main_cpu() - busy_before}, beats
        time.sleep(args.warmup + args.seconds / 2)
        if args.scenario == "takeover":
            return self.take_over(fleet), None
        if args.scenario == "restart":
            beats = fleet.beat_result()          # the fleet beat until halfway
            return self.restart(fleet), beats
        if args.scenario == "wholetable":
            self.event_at = time.time()
            return {"wholetable": wholetable.ask_all(self.host, self.port, SpreadLayout.CLUSTER, self.status_port,
                                                     self.layout.topic_name(1))}, None
        return {}, None

    def main_cpu(self):
        if self.server is None:
            return None
        return cpu_seconds(self.server.pid, children=False)

    def take_over(self, fleet):
        if self.server is None:
            raise SystemExit("--scenario takeover needs a server this benchmark starts")
        old = self.server
        started = time.monotonic()
        self.event_at = time.time()
        new = TakingServer(old)
        new.start()
        try:
            old.process.wait(60)
        except subprocess.TimeoutExpired:
            raise RuntimeError("the old process did not exit within 60 s of --takeover:\n--- old\n%s\n--- new\n%s"
                               % (old.log(), new.log()))
        switched = time.monotonic() - started
        self.server = new
        return {"takeover_s": switched, "brokers_moved": cluster_brokers(self.host, self.port, self.credentials)}

    def restart(self, fleet):
        """SIGTERM (the route snapshot is written), then a new process on the same port and files: how
        long the stop took, and how long until the new one answered a route read from the snapshot."""
        if self.server is None:
            raise SystemExit("--scenario restart needs a server this benchmark starts")
        old, topic = self.server, self.layout.all_topics()[0]
        started = time.monotonic()
        self.event_at = time.time()
        old.stop(timeout=120)
        stopped = time.monotonic()
        fleet.drop()   # the old process closed them
        new = RestartedServer(old).spawn()
        self.server = new
        listening = answered = None
        while time.monotonic() - stopped < 120 and answered is None:
            try:
                with BlockingRemotingClient(self.host, self.port, timeout=5.0) as client:
                    listening = listening or time.monotonic()
                    answer = client.call(request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic},
                                                 self.credentials))
                    if answer.code == ResponseCode.SUCCESS:
                        answered = time.monotonic()
            except OSError:
                pass
            if answered is None:
                time.sleep(0.01)
        return {"restart_stop_s": stopped - started,
                "restart_listening_s": None if listening is None else listening - stopped,
                "restart_route_answered_s": None if answered is None else answered - stopped}

    def record(self, reads, probe, beats, event):
        f = self.figures
        f.update({
            "reads_per_s": reads.rps, "reads": reads.requests, "read_errors": reads.errors,
            "read_p50_ms": reads.latency_ms(0.5), "read_p99_ms": reads.latency_ms(0.99),
            "read_stalled": reads.stalled,
            "probe_p50_ms": probe.latency_ms(0.5), "probe_p99_ms": probe.latency_ms(0.99),
            "probe_max_ms": ms(probe.latencies[-1]) if probe.latencies else None,
            "probe_reads": probe.requests, "probe_errors": probe.errors,
            "probe_max_after_event_s": None if probe.worst_at is None or self.event_at is None
            else probe.worst_at - self.event_at,
            "registrations": beats["answered"], "registration_errors": beats["errors"],
            "registration_unanswered": beats["unanswered"],
            "registration_p50_ms": ms(percentile(beats["rtts"], 0.5)),
            "registration_p99_ms": ms(percentile(beats["rtts"], 0.99)),
            "client_cpu": reads.client_cpu,
        })
        f.update(event)
        f["bytes_per_entry"] = f["rss_mib"] * 1048576.0 / max(1, f["entries"])

    def report(self):
        f = self.figures
        lines = [
            "fleet: %(brokers)d brokers, %(topics)d topics × %(brokers_per_topic)d brokers (%(entries)d entries), "
            "cycle %(cycle_s)s s, scenario %(scenario)s" % f,
            "first registration of the fleet: %.2f s (its %d frames built beforehand in %.1f s)"
            % (f["register_all_s"], f["brokers"], f.get("fleet_frames_s") or 0),
            "route reads: %.0f/s%s (%d errors), p50 %.2f ms, p99 %.2f ms%s"
            % (f["reads_per_s"], " of %.0f offered" % f["offered_rate"] if f["offered_rate"] else "",
               f["read_errors"], f["read_p50_ms"] or 0, f["read_p99_ms"] or 0,
               "; server CPU %.1f us a read" % f["server_cpu_us_per_read"] if "server_cpu_us_per_read" in f else ""),
            "prober: p50 %.2f ms, p99 %.2f ms, max %.2f ms%s (%d reads, %d errors)"
            % (f["probe_p50_ms"] or 0, f["probe_p99_ms"] or 0, f["probe_max_ms"] or 0,
               "" if f.get("probe_max_after_event_s") is None else
               " (answered %+.2f s from the %s)" % (f["probe_max_after_event_s"], f["scenario"]),
               f["probe_reads"], f["probe_errors"]),
            "registrations: %d (%d errors, %d unanswered), p50 %.2f ms, p99 %.2f ms"
            % (f["registrations"], f["registration_errors"], f["registration_unanswered"],
               f["registration_p50_ms"] or 0, f["registration_p99_ms"] or 0),
            "RSS of all server processes: %.0f MiB (%.0f B/entry); idle after registering %.0f MiB"
            % (f["rss_mib"], f["bytes_per_entry"], f["rss_idle_mib"]),
            "host: the hypervisor took %s of the CPUs' time during the reads (steal)"
            % ("n/a" if f.get("host_steal_share") is None else "%.1f%%" % (100.0 * f["host_steal_share"])),
            guestidle.describe({"driver": f.get("guest_idle_driver"), "halt_poll_ns": f.get("guest_halt_poll_ns"),
                                "shrink": f.get("guest_halt_poll_shrink")}),
        ]
        if f.get("cpu_us_per_read"):
            lines.append("CPU per read (all answers of the window, prober's included): %s" % ", ".join(
                "%s %.1f µs" % item for item in sorted(f["cpu_us_per_read"].items())))
        if "profile" in f:
            if f["profile"] is None:
                lines.append("profile: py-spy is not installed (pip install py-spy)")
            for name, shares in sorted((f["profile"] or {}).items()):
                lines.append("profile of %s (share of the window's samples): %s" % (name, ", ".join(
                    "%s %.1f%%" % (category, 100 * share) for category, share in shares.items())))
        if "fresh" in f:
            lines.append("measured after %.0f s of the same load (warm); fresh, right after registering: %s"
                         % (f["warm_up_s"], f["fresh"]["line"]))
        if "dropped_brokers_forgotten_s" in f:
            lines.append("mass disconnect: brokers forgotten after %s s, main process CPU %s s"
                         % (_fmt(f["dropped_brokers_forgotten_s"]), _fmt(f["main_cpu_s_after_drop"])))
        if "wholetable" in f:
            lines.append("whole-table answers, asked halfway, one after the other:\n" + wholetable.describe(f["wholetable"]))
        if "cold_probe_p99_ms" in f:
            lines.append("cold: the fleet's first registration took %.2f s while %.0f reads/s ran (%d answers not "
                         "SUCCESS: topics not registered yet); prober meanwhile p50 %.2f ms, p99 %.2f ms, max %.2f ms "
                         "(%d reads), reads p99 %.2f ms"
                         % (f["register_all_s"], f["cold_reads_per_s"], f["cold_answers_not_success"],
                            f["cold_probe_p50_ms"] or 0, f["cold_probe_p99_ms"] or 0, f["cold_probe_max_ms"] or 0,
                            f["cold_probe_reads"], f["cold_read_p99_ms"] or 0))
        if "restart_stop_s" in f:
            lines.append("restart: stopped (snapshot written) in %s s; the new process answered a connection after %s s "
                         "and a route read from its snapshot after %s s"
                         % (_fmt(f["restart_stop_s"]), _fmt(f["restart_listening_s"]), _fmt(f["restart_route_answered_s"])))
        if "takeover_s" in f:
            lines.append("takeover: %.2f s, %d broker names listed by the new process"
                         % (f["takeover_s"], f["brokers_moved"]))
        return "\n".join(lines)


def _fmt(value):
    return "n/a" if value is None else "%.3f" % value


class TakingServer(NamesrvServer):
    """A second ``twistd namesrv`` with the running one's properties file and ``--takeover``."""

    def __init__(self, old):
        self.name, self.own_workdir, self.workdir = "namesrv-takeover", False, old.workdir
        self.port, self.config_file, self.profile_file = old.port, old.config_file, old.profile_file + ".new"
        self.log_file = os.path.join(self.workdir, "namesrv-takeover.log")
        self.process = None

    def command(self):
        return NamesrvServer.command(self) + ["--takeover"]

    def start(self, timeout=60.0):
        return self.spawn()   # it listens on the socket it takes over: nothing to wait for here


class RestartedServer(TakingServer):
    """A new ``twistd namesrv`` on the stopped one's port, files and properties (its route snapshot)."""

    def __init__(self, old):
        TakingServer.__init__(self, old)
        self.name, self.log_file = "namesrv-restarted", os.path.join(self.workdir, "namesrv-restarted.log")

    def command(self):
        return NamesrvServer.command(self)


OPTIONS = (
    options.TARGET,
    options.Option("--server", "default, one, workers=N or workers=N,shared", default="default"),
    options.PROPERTY,
    options.BROKERS(1000),
    options.TOPICS(100_000, "in all"),
    options.BROKERS_PER_TOPIC(10),
    options.Option("--topic-prefix", "topic names are this and 6 digits (a longer one makes the topic list pass "
                   "16 MiB sooner: 22 characters at a million topics is 25 MB)", default="Fleet"),
    options.Option("--cycle", "seconds for the whole fleet to beat once", type=float, default=30.0),
    options.RATE(0.0),
    options.SECONDS(20.0),
    options.WARMUP(2.0),
    options.CONNECTIONS(3, flag="--read-connections"),
    options.DEPTH(32),
    options.PROCESSES(1, flag="--load-processes"),
    options.Option("--scenario", "what happens halfway (or, cold, from the start)", default="steady",
                   choices=("steady", "disconnect", "takeover", "wholetable", "restart", "cold")),
    options.JAVA,
    options.JAVA_HEAP("4g"),
    options.Option("--warm-up", "before the measured window, measure one window fresh, then run the same load this "
                   "long unmeasured (a JVM's JIT compiles what it runs): default %.0f s with --java, 0 otherwise "
                   "(CPython has no JIT)" % JAVA_WARM_UP, type=float, metavar="SECONDS"),
    options.Option("--profile", "py-spy (from PyPI, not installed with the project) records each server process over "
                   "the measured window into DIR; the split of its time is printed (bench.lib.spysplit)",
                   metavar="DIR"),
    options.Option("--acl", "ours with aclEnable=true and signed reads; alternate: --rounds pairs, off then on",
                   choices=("off", "on", "alternate"), default="off"),
    options.ROUNDS(3, "--acl alternate: pairs of runs"),
    options.JSON,
    options.Option("--keep-logs", "copy the servers' logs here before cleaning up", metavar="DIR"),
)


def run_ours(args, acl, warm_up=0.0):
    """One run against a fresh server of ours (``acl``: with ``aclEnable=true`` and signed reads)."""
    props = server_properties(args.server)
    props.update(options.properties(args.property))
    if args.scenario == "restart":   # the route snapshot, written at stop, restored at start
        props.setdefault("routeSnapshotEnable", "true")
        props.setdefault("routeSnapshotPath", "routes.snapshot")
    if args.scenario == "wholetable" and "statusListenPort" not in props:
        props["statusListenPort"] = str(free_port())
    workdir = tempfile.mkdtemp(prefix="bench-namesrv-")
    if acl:
        props.update(acl_properties(workdir))
    server = NamesrvServer(props, workdir=workdir)
    try:
        server.start(timeout=60)
        if props.get("routeReadWorkers", "auto") != "0":
            server.wait_for_log("read worker 0 listening", timeout=60)
        status = int(props["statusListenPort"]) if props.get("statusListenPort") else None
        run = Run(args, "127.0.0.1", server.port, server, status, credentials=READER if acl else None,
                  warm_up=warm_up)
        try:
            run.measure()
        finally:
            if run.server is not server:
                run.server.stop()
    finally:
        server.stop()
        if args.keep_logs:
            os.makedirs(args.keep_logs, exist_ok=True)
            for name in os.listdir(server.workdir):
                if name.endswith(".log"):
                    shutil.copy(os.path.join(server.workdir, name), args.keep_logs)
        server.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)
    run.figures["server"] = args.server
    return run


def alternate(args):
    """``--rounds`` pairs of runs, ACL off then on: each run's report, then the ratios of the reads/s and of the
    server's CPU time a read."""
    rates, costs = {False: [], True: []}, {False: [], True: []}
    for round_ in range(args.rounds):
        for acl in (False, True):
            run = run_ours(args, acl)
            run.figures["round"] = round_ + 1
            print("--- round %d, ACL %s\n%s" % (round_ + 1, "on" if acl else "off", run.report()))
            if args.json:
                print(json.dumps(run.figures, sort_keys=True))
            rates[acl].append(run.figures["reads_per_s"])
            costs[acl].append(run.figures.get("server_cpu_us_per_read"))
    pairs = [on / off for off, on in zip(rates[False], rates[True]) if off]
    summary = {"acl_alternate_rounds": args.rounds, "reads_per_s_acl_off": rates[False],
               "reads_per_s_acl_on": rates[True], "ratio_per_pair": pairs,
               "ratio_of_medians": _ratio(_median(rates[True]), _median(rates[False])),
               "server_cpu_us_per_read_acl_off": costs[False], "server_cpu_us_per_read_acl_on": costs[True],
               "cpu_per_read_ratio_of_medians": _ratio(_median(costs[True]), _median(costs[False]))}
    print("ACL on / off, reads/s: %s against %s; per pair %s; medians' ratio %s"
          % (", ".join("%.0f" % r for r in rates[True]), ", ".join("%.0f" % r for r in rates[False]),
             ", ".join("%.3f" % r for r in pairs), _fmt(summary["ratio_of_medians"])))
    print("server CPU a read, us: ACL on %s, off %s; medians' ratio %s"
          % (", ".join(_fmt(c) for c in costs[True]), ", ".join(_fmt(c) for c in costs[False]),
             _fmt(summary["cpu_per_read_ratio_of_medians"])))
    if args.json:
        print(json.dumps(summary, sort_keys=True))


def _ratio(numerator, denominator):
    return numerator / denominator if numerator is not None and denominator else None


def _median(values):
    ordered = sorted(value for value in values if value is not None)
    if not ordered:
        return None
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2.0


def main(argv=None):
    args = options.parse("bigfleet", __doc__, OPTIONS, argv)
    if args.acl != "off" and (args.target or args.java):
        raise SystemExit("--acl is for a server of ours that this benchmark starts")
    if args.acl == "alternate":
        return alternate(args)
    warm_up = args.warm_up if args.warm_up is not None else (JAVA_WARM_UP if args.java else 0.0)
    if args.target:
        host, _, port = args.target.rpartition(":")
        run = Run(args, host or "127.0.0.1", int(port), warm_up=warm_up)
        run.measure()
    elif args.java:
        java = JavaNamesrv(args.java, args.java_heap)
        try:
            java.start(timeout=120)
            run = Run(args, "127.0.0.1", java.port, warm_up=warm_up)
            run.measure()
        finally:
            java.cleanup()
        run.figures["server"] = "java %s -Xmx%s" % (os.path.basename(args.java.rstrip("/")), args.java_heap)
    else:
        run = run_ours(args, args.acl == "on", warm_up)
    print(run.report())
    if args.json:
        print(json.dumps(run.figures, sort_keys=True))


if __name__ == "__main__":
    main()
