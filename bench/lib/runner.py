"""``python -m bench [--quick] [--out DIR] [--only NAMES]``: run the benchmarks, record the figures."""

import copy
import os
import sys
import time

from bench.scenarios import cores, inprocess, memory, mixed, profiling, registration, route
from bench.lib import options, results
from bench.scenarios.fleet import run as run_fleet_capacity
from bench.lib.scales import SCALES
from bench.lib.servers import ONE_PROCESS, NamesrvServer

BENCHMARKS = ("inprocess", "route", "profile", "mixed", "register", "memory", "cores", "fleet")
#: A 1-minute load average above this before the run means someone else is using the CPUs.
BUSY_LOADAVG = 0.7
DEFAULT_OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")


OPTIONS = (
    options.Option("--quick", "smaller sizes (about a minute): --scale quick", action="store_true"),
    options.SCALE(None, "full unless --quick"),
    options.Option("--out", "directory for results.jsonl and latest.md", default=DEFAULT_OUT),
    options.Option("--only", "the benchmarks to run, comma-separated (default: %(default)s)",
                   default=",".join(BENCHMARKS)),
    options.CONNECTIONS(None, "route loads; overrides the scale"),
    options.DEPTH(None, "overrides the scale"),
    options.PROCESSES(None, "overrides the scale"),
)


def parse_args(argv):
    parser = options.parser(None, __doc__, OPTIONS)
    args = parser.parse_args(argv)
    args.scale = args.scale or ("quick" if args.quick else "full")
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(args.only) - set(BENCHMARKS)
    if unknown:
        parser.error("unknown benchmark(s): %s" % ", ".join(sorted(unknown)))
    return args


def _apply_overrides(scale, args):
    for spec in (scale.route_load, scale.profile_load, scale.mixed_load):
        if args.connections:
            spec.connections = args.connections
        if args.depth:
            spec.depth = args.depth
        if args.processes:
            spec.processes = args.processes
    return scale


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    scale = _apply_overrides(copy.deepcopy(SCALES[args.scale]), args)
    collector = results.Collector()
    started = time.monotonic()

    def log(text):
        print(text, flush=True)

    log("benchmarks %s at %s scale -> %s" % (", ".join(args.only), scale.name, args.out))
    load = os.getloadavg()[0]
    if load > BUSY_LOADAVG:
        log("warning: load average %.2f before starting on %d CPUs: other processes compete with the "
            "servers and the load generator; figures will be noisy (loadavg is recorded with each load run)"
            % (load, os.cpu_count() or 1))
    if "inprocess" in args.only:
        inprocess.run(collector, scale, log)
    needs_route_server = {"route", "profile", "mixed"} & set(args.only)
    if needs_route_server:
        # One process, as before read workers were the default: the profile can only see the
        # request path where it runs. The default configuration's figures are in bench.scenarios.cores.
        with NamesrvServer(properties=ONE_PROCESS) as server:
            fleet = None
            try:
                if "route" in args.only:
                    fleet = route.run(collector, server, scale, log)
                else:
                    fleet = route.RouteFleet(server, scale.route_brokers, scale.route_topics)
                if "profile" in args.only:
                    profiling.run(collector, server, fleet, scale, args.out, log)
                if "mixed" in args.only:
                    mixed.run(collector, server, fleet, scale, log)
            finally:
                if fleet is not None:
                    fleet.close()
    if "register" in args.only:
        registration.run(collector, scale, log)
    if "memory" in args.only:
        memory.run(collector, scale, log)
    if "cores" in args.only:
        cores.run(collector, scale, log)
    if "fleet" in args.only:
        run_fleet_capacity(collector, scale, log)
    elapsed = time.monotonic() - started
    text = results.write(collector, args.out, scale.name, elapsed, loadavg=load)
    log("")
    log(text)
    return 0
