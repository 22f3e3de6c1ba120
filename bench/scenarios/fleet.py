"""Fleet capacity: the largest broker fleet one server holds while answering 50k route reads/s.

For each set-up (the one-process server, then the default configuration) and each broker
style (4.9: a full REGISTER_BROKER of 1,000 topics every 30 s; 5.x: BROKER_HEARTBEAT plus
QUERY_DATA_VERSION every 30 s after the first registration), the fleet size is stepped up
(doubling from ``start`` to ``cap``, then bisecting between the last pass and the first
failure). Each step holds a steady state while the load generator sends route reads at a
fixed rate, and passes when route p99 ≤ ``route_p99_ms`` at the asked rate with no error,
and the brokers' requests were all answered, successfully, with a round-trip p99 ≤
``register_p99_ms`` and the fleet never behind its schedule. The largest passing size is
the result. A step that fails is measured once more and counts as passed if either try
passed: on a shared machine a neighbour's burst then costs a retry, not the verdict. A
first step with no broker beating gives the route p99 of the reads alone, and a step of
beats alone (no reads) their cost in main-process CPU, hence the fleet size at which the
process that handles them would be busy all the time: a bound that ignores latency.

Time compression: a fleet of N brokers on a 30 s period sends N/30 beats per second. Only
``real_brokers`` brokers connect and register (a first registration of 1,000 topics costs
the server 5 to 15 times an unchanged one, so registering every size for real would take
most of the run); beyond that many, each beats every 30 × real/N seconds, so the
server sees the same beats per second as N brokers on 30 s: sizes are 30-s equivalents.
What this leaves out is the tables of N brokers (memory, and the size of the objects the
collector walks): bench.scenarios.memory measures bytes per entry for that.

CPU, as a share of one core over each step: the server's from /proc/<pid>/stat (its read
workers included; the main process also alone, as it handles every beat), the broker
fleet's from /proc/<pid>/stat, the load generator's from its workers' ``os.times`` (the
same kernel counters), and the whole machine's busy time from /proc/stat: what the
machine used beyond those three is the kernel's and other people's work.
"""

import os
import time
from dataclasses import dataclass, field

from bench.scenarios.cores import DEFAULT, resolved, start_server
from bench.lib.brokers import REGISTER_WINDOW, STYLES, BandLayout, BrokerFleet
from bench.lib.loadgen import run_load
from bench.scenarios.memory import tree_rss_kib
from tools.procstat import read_cpu_ticks
from bench.lib.servers import cpu_seconds
from bench.lib.wire import percentile, route_templates

SECTION = "Fleet capacity (brokers held while answering route reads)"
PERIOD = 30.0
CONFIGS = (("1proc", 0, False), ("default", DEFAULT, DEFAULT))
STYLE_KEYS = {"4.9": "49style", "5.x": "5xstyle"}
FIRST_INDEX = {"4.9": 100_000, "5.x": 200_000}
#: The beat cost is measured at this many times the first size.
COST_SIZE_FACTOR = 4
#: Halvings tried when the first size already fails.
MAX_HALVINGS = 4
NO_BEATS = {"sent": 0, "answered": 0, "errors": 0, "unanswered": 0, "beat_bytes": 0, "rtts": [],
            "late": []}
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def machine_busy_seconds():
    """CPU seconds the whole machine spent busy (all cores), from the first line of /proc/stat."""
    ticks = read_cpu_ticks()
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks[:8]) - idle) / _CLOCK_TICKS


@dataclass
class Step:
    size: int
    real: int
    period: float
    route: object = None
    beats: dict = None
    server_cpu: float = 0.0
    main_cpu: float = 0.0       # the main process alone: where beats are handled in every set-up
    fleet_cpu: float = 0.0
    machine_cpu: float = 0.0
    failures: list = field(default_factory=list)
    registered: tuple = None    # (brokers before, after, seconds) when the step resized the fleet

    @property
    def passed(self):
        return not self.failures

    @property
    def beats_per_s(self):
        return self.size / PERIOD

    def register_p99_ms(self):
        value = percentile(self.beats["rtts"], 0.99)
        return None if value is None else value * 1000

    def line(self, label):
        route, beats = self.route, self.beats
        if not self.size:
            return ("%s: no beats (%d brokers registered): route p99 %.2f ms at %.0f/s; cpu (cores) server %.2f "
                    "(main %.2f), load generator %.2f, machine %.2f"
                    % (label, self.real, route.latency_ms(0.99) or 0, route.rps, self.server_cpu, self.main_cpu,
                       route.client_cpu, self.machine_cpu))
        return ("%s: %s brokers (%d real, period %.2f s, %.0f beats/s): route p99 %.2f ms at %.0f/s; beats rtt "
                "p99 %.1f ms, %d/%d answered; cpu (cores) server %.2f (main %.2f), load generator %.2f, brokers %.2f, "
                "machine %.2f -> %s"
                % (label, "{:,}".format(self.size), self.real, self.period, self.beats_per_s,
                   route.latency_ms(0.99) or 0, route.rps, self.register_p99_ms() or 0, beats["answered"],
                   beats["sent"], self.server_cpu, self.main_cpu, route.client_cpu, self.fleet_cpu, self.machine_cpu,
                   "pass" if self.passed else "FAIL (%s)" % "; ".join(self.failures)))


def judge(step, spec):
    """The reasons ``step`` fails (none: it passes)."""
    route, beats, load = step.route, step.beats, spec.load
    failures = []
    p99 = route.latency_ms(0.99)
    if p99 is None or p99 > spec.route_p99_ms:
        failures.append("route p99 %.2f ms" % (p99 or 0))
    if route.rps < 0.95 * load.rate:
        failures.append("route reads %.0f/s" % route.rps)
    if route.errors or route.unmatched or route.stalled:
        failures.append("route errors %d, unmatched %d%s" % (route.errors, route.unmatched,
                                                             ", stalled" if route.stalled else ""))
    if beats["errors"] or beats["unanswered"]:
        failures.append("beats: %d errors, %d unanswered" % (beats["errors"], beats["unanswered"]))
    rtt = step.register_p99_ms()
    if rtt is not None and rtt > spec.register_p99_ms:
        failures.append("beat rtt p99 %.0f ms" % rtt)
    late = percentile(beats["late"], 0.99)
    if late is not None and late > 0.1:
        failures.append("fleet behind its schedule by %.0f ms (p99)" % (late * 1000))
    return failures


def measure(server, fleet, size, spec):
    """One step: ``size`` brokers' beats (none: the reads alone, with the first size registered)."""
    real = max(2, min(size or spec.start[fleet.style], spec.real_brokers))
    real -= real % 2
    registered = None
    if fleet.size != real:
        registered = (fleet.size, real, fleet.resize(real))
        fleet.prime()
    step = Step(size=size, real=real, period=PERIOD * real / size if size else 0.0, registered=registered)
    load = spec.load
    templates = route_templates(fleet.layout.sample_topics(real, spec.sample_topics))
    beat_seconds = load.warmup + load.duration + 0.5
    busy, clock = machine_busy_seconds(), time.perf_counter()
    main, brokers = cpu_seconds(server.pid, children=False), cpu_seconds(fleet.pid, children=False)
    if size:
        fleet.start_beating(step.period, beat_seconds, spec.grace)
    step.route = run_load(server.port, templates, load, server=server)
    step.beats = fleet.beat_result() if size else dict(NO_BEATS)
    elapsed = time.perf_counter() - clock
    step.machine_cpu = (machine_busy_seconds() - busy) / elapsed
    step.main_cpu = (cpu_seconds(server.pid, children=False) - main) / elapsed
    step.fleet_cpu = (cpu_seconds(fleet.pid, children=False) - brokers) / elapsed
    step.server_cpu = step.route.server_cpu or 0.0
    step.failures = judge(step, spec)
    return step


def ladder(passes, start, cap, bisections, halvings=MAX_HALVINGS):
    """The largest size ``passes`` accepts (None if none): halve from ``start`` while it fails,
    double up to ``cap`` while it passes, then bisect ``bisections`` times (sizes stay even)."""
    size, best, worst = start, None, None
    for _ in range(halvings + 1):
        if passes(size):
            best = size
            break
        worst, size = size, size // 2
        if size < 2:
            return None
    while best is not None and worst is None and size < cap:
        size = min(cap, size * 2)
        if passes(size):
            best = size
        else:
            worst = size
    for _ in range(bisections):
        if best is None or worst is None:
            break
        middle = (best + worst) // 2
        middle -= middle % 2
        if middle in (best, worst):
            break
        if passes(middle):
            best = middle
        else:
            worst = middle
    return best


def search(server, style, spec, log, label):
    """The reads alone, then the ladder of fleet sizes; returns every Step measured, in order,
    and the server's process tree RSS (KiB) with the first fleet registered."""
    steps = []
    with BrokerFleet(server.port, BandLayout(spec.topics, FIRST_INDEX[style]), style) as fleet:
        def at(size, attempts=2):
            for _ in range(attempts):
                steps.append(measure(server, fleet, size, spec))
                log("  " + steps[-1].line(label))
                if steps[-1].passed:
                    return True
            return False

        at(0, attempts=1)
        rss_kib = tree_rss_kib(server.pid)[0]
        cost = beat_cost(server, fleet, COST_SIZE_FACTOR * spec.start[style], spec)
        log("  %s: beats alone at %s brokers: %.3f ms of main-process CPU per beat"
            % (label, "{:,}".format(cost["size"]), 1000 * cost["per_beat"]))
        ladder(at, spec.start[style], spec.cap[style], spec.bisections)
    return steps, cost, rss_kib


def beat_cost(server, fleet, size, spec):
    """Main-process CPU seconds per beat, from beats alone (no reads to subtract)."""
    seconds = spec.load.warmup + spec.load.duration
    period = PERIOD * fleet.size / size
    main, clock = cpu_seconds(server.pid, children=False), time.perf_counter()
    fleet.start_beating(period, seconds, spec.grace)
    beats = fleet.beat_result()
    used = cpu_seconds(server.pid, children=False) - main
    per_s = beats["answered"] / (time.perf_counter() - clock)
    return {"size": size, "beats_per_s": per_s, "beat_bytes": beats["beat_bytes"],
            "per_beat": used / beats["answered"] if beats["answered"] and not beats["unanswered"] else 0.0}


def report(collector, config, workers, style, steps, cost, spec, rss_kib=None):
    """Figures and notes of one set-up's search (``rss_kib``: the server tree's RSS before and
    with the first fleet, when it started from empty tables); returns its verdict."""
    baseline, steps = steps[0], steps[1:]
    passed = [s for s in steps if s.passed]
    best = max(passed, key=lambda s: s.size) if passed else None
    failed = [s.size for s in steps if not s.passed and s.size not in {p.size for p in passed}]
    prefix = "fleet.%s.%s" % (config, STYLE_KEYS[style])
    params = {"style": style, "route_read_workers": resolved(workers), "topics_per_broker": spec.topics,
              "groups_per_topic": BandLayout.GROUPS_PER_BAND, "route_rate": spec.load.rate,
              "route_connections": spec.load.connections}
    collector.add(SECTION, prefix + ".no_beats.route_p99", baseline.route.latency_ms(0.99), "ms",
                  route_rps=round(baseline.route.rps), server_cpu=round(baseline.server_cpu, 2), **params)
    if baseline.registered:
        _, real, seconds = baseline.registered
        collector.add(SECTION, prefix + ".first_registration_ms", 1000 * seconds / real, "ms per broker",
                      brokers=real, in_flight=REGISTER_WINDOW, **params)
    if rss_kib:
        before, after = rss_kib
        entries = baseline.real // BandLayout.BROKERS_PER_GROUP * spec.topics
        collector.add(SECTION, prefix + ".rss_mib", after / 1024, "MiB", brokers=baseline.real,
                      entries=entries, **params)
        collector.add(SECTION, prefix + ".bytes_per_entry", (after - before) * 1024 / entries, "bytes",
                      entries=entries, **params)
    size = best.size if best else 0
    first_failure = min((s for s in failed if s > size), default=None)
    collector.add(SECTION, prefix + ".brokers", size, "brokers (30 s)", first_failing=first_failure,
                  capped=first_failure is None and best is not None and size >= spec.cap[style],
                  real_brokers=best.real if best else None, period_s=round(best.period, 3) if best else None,
                  **params)
    if best is not None:
        collector.add(SECTION, prefix + ".route_p99", best.route.latency_ms(0.99), "ms", **params)
        collector.add(SECTION, prefix + ".beat_rtt_p99", best.register_p99_ms(), "ms",
                      beats_per_s=round(best.beats_per_s, 1), **params)
        for name, value in (("server", best.server_cpu), ("loadgen", best.route.client_cpu),
                            ("brokers", best.fleet_cpu), ("machine", best.machine_cpu)):
            collector.add(SECTION, "%s.cpu_%s" % (prefix, name), value, "cores", **params)
    cpu_bound = None
    if cost["per_beat"] > 0:
        # beats are handled by the main process in both set-ups (workers hand brokers' connections over)
        cpu_bound = int(PERIOD * max(0.0, 1.0 - baseline.main_cpu) / cost["per_beat"])
        facts = dict(at_size=cost["size"], beats_per_s=round(cost["beats_per_s"], 1), beat_bytes=cost["beat_bytes"],
                     reads_main_cpu=round(baseline.main_cpu, 2), **params)
        collector.add(SECTION, prefix + ".main_cpu_ms_per_beat", 1000 * cost["per_beat"], "ms", **facts)
        collector.add(SECTION, prefix + ".cpu_bound_brokers", cpu_bound, "brokers (30 s)", **facts)
    collector.note(SECTION, "%s, %s-style brokers, steps in order:\n\n%s" % (config, style, "\n".join(
        "- " + s.line("%s %s" % (config, style)) for s in [baseline] + steps)))
    return verdict(config, style, best, first_failure, baseline, cpu_bound)


def verdict(config, style, best, first_failure, baseline, cpu_bound):
    context = "reads alone p99 %.1f ms; main process CPU-bound at %s" % (
        baseline.route.latency_ms(0.99) or 0, "?" if cpu_bound is None else "{:,}".format(cpu_bound))
    if best is None:
        return "%s holds no %s-style fleet: the smallest size failed (%s)" % (config, style, context)
    bound = "at least " if first_failure is None else ""
    return ("%s holds %s%s %s-style brokers (route p99 %.1f ms at %.0fk reads/s, beat rtt p99 %.1f ms%s; %s)"
            % (config, bound, "{:,}".format(best.size), style, best.route.latency_ms(0.99),
               best.route.rps / 1000, best.register_p99_ms() or 0,
               "" if first_failure is None else "; %s failed" % "{:,}".format(first_failure), context))


def run(collector, scale, log=print):
    spec = scale.fleet
    verdicts = {style: [] for style in STYLES}
    loadavg = os.getloadavg()[0]
    for config, workers, exclusive in CONFIGS:
        server = start_server(workers, exclusive)
        try:
            empty = tree_rss_kib(server.pid)[0]
            for style in STYLES:
                log("fleet, %s, %s-style brokers:" % (config, style))
                steps, cost, rss = search(server, style, spec, log, "%s %s" % (config, style))
                # only the first fleet starts from empty tables (memory once used is not given back)
                rss_kib = (empty, rss) if style == STYLES[0] else None
                verdicts[style].append(report(collector, config, workers, style, steps, cost, spec, rss_kib))
        finally:
            server.cleanup()
    for style in STYLES:
        line = "fleet: " + "; ".join(verdicts[style])
        log(line)
        collector.note(SECTION, line)
    collector.note(SECTION, "Load average %.2f at the start of the fleet runs on %d CPUs (a shared machine)."
                   % (loadavg, os.cpu_count() or 1))
