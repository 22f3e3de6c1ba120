"""SIGTERM at random moments of a loaded server, each stop timed: ``python -m tools.stopstress``.

    python -m tools.stopstress --stops 500 --seed 57              # the campaign of issue 57 (~40 min)
    python -m tools.stopstress --stops 20 --moments respawn,takeover
    python -m tools.stopstress --make-run 100                     # Ctrl-C of `make run` instead (makerun.py)

The server is ``twistd -n namesrv`` as shipped (read workers on: ``routeReadWorkers=auto``, at least one;
the embedded controller on, in a Raft group with two ``twistd controller`` processes kept for the whole
campaign; metrics and status pages on; a route snapshot every second), on one instance's port and files,
restarted for every stop as an operator's server is. Brokers register (one with 4,000 topics), clients put
KV pairs and read routes, a scraper reads the pages and a controller-mode broker beats on the group's
leader (load.py). Each stop falls on a moment drawn from the seed (moments.py): anywhere under load, a
route snapshot being written, a read worker's respawn after kill -9, a controller election, a takeover
(this one without the pages and the controller: a ``--takeover`` process cannot open the HTTP and controller
ports the old one holds, and exits with CannotListenError; not a stop question, left to its own issue).

A stop must end within ``--bound`` seconds (5) and leave no process behind. One that does not is a hang;
one still running at 30 s is killed. The server writes its own report of a stop past the bound
(namesrv/observe/stopwatch.py): the campaign keeps those, with the logs, under ``--keep``. Every stop is a
JSON line (``--jsonl``); the summary gives the counts and the stop times' distribution per moment.
"""

import os
import random
import shutil
import time

from tests.integration.server import free_port
from tools.stopstress.load import Load
from tools.stopstress.moments import MOMENTS, WEIGHTS
from tools.stopstress.procs import Group, Server, StartFailed


def default_workers():
    """What ``routeReadWorkers=auto`` gives here, but at least one (the campaign is about workers)."""
    return max(1, len(os.sched_getaffinity(0)) - 1)


class Campaign:
    def __init__(self, workdir, seed, bound=5.0, workers=None, keep=None, log=print, keep_slower=None):
        self.workdir = workdir
        self.seed = seed
        self.bound = bound
        self.workers = workers or default_workers()
        self.keep = keep
        self.keep_slower = keep_slower   # also keep the files of stops slower than this (seconds)
        self.log = log
        self.port = free_port()
        self.metrics_port = free_port()
        self.status_port = free_port()
        self.group = Group(workdir)
        self.records = []
        self.servers = []          # those of the stop under way
        self.start_failures = []   # moments whose server did not start (no stop to time)
        self._starts = 0
        self.load = None

    def properties(self, takeover=False):
        """As shipped, plus the metrics and status pages and the embedded controller; for a takeover neither
        (a new process cannot open the ports the old one holds: CannotListenError, reported in the notes)."""
        props = {"routeReadWorkers": str(self.workers), "routeSnapshotInterval": "1"}
        if not takeover:
            props.update(self.group.properties("n0"), enableControllerInNamesrv="true",
                         prometheusListenPort=str(self.metrics_port), statusListenPort=str(self.status_port))
        return props

    def server(self, takeover=False, suffix=""):
        """A Server of the campaign's instance, its log named after the start (``suffix``: a takeover's)."""
        self._starts += 1
        server = Server(self.workdir, self.properties(takeover), self.port,
                        log_name="twistd-%d%s.log" % (self._starts, suffix))
        self.servers.append(server)
        return server

    def start_server(self, takeover=False):
        self.group.ensure()
        return self.server(takeover).start()

    def run(self, stops, moments=None, max_seconds=None):
        rng = random.Random(self.seed)
        names = sorted(moments or MOMENTS)
        weights = [WEIGHTS[name] for name in names]
        self.load = Load(self.port, self.seed, metrics_port=self.metrics_port, status_port=self.status_port,
                         controllers=list(self.group.ports.values())).start()
        began = time.monotonic()
        try:
            for index in range(stops):
                if max_seconds is not None and time.monotonic() - began > max_seconds:
                    self.log("stopstress: --max-seconds reached after %d stops" % index)
                    break
                kind = rng.choices(names, weights)[0]
                moment_seed = rng.randrange(1 << 30)
                self.servers = []
                try:
                    records = MOMENTS[kind](self, random.Random(moment_seed))
                except StartFailed as e:
                    # not a stop: counted apart, its files kept (a start on a machine this busy may take long)
                    self.start_failures.append({"stop": index, "kind": kind, "seed": moment_seed, "why": str(e)[:2000]})
                    self.log("stop %d %s (seed %d): the server did not start: %s" % (index, kind, moment_seed,
                                                                                  str(e).splitlines()[0]))
                    records = []
                kept = not records
                for record in records:
                    record = dict({"stop": index, "kind": kind, "seed": moment_seed}, **record)
                    self.records.append(record)
                    kept = self._report(record) or kept
                for server in self.servers:
                    self._end(server)
                    if kept and self.keep:
                        self._keep(index, kind, server.log_files())
                    else:
                        server.remove_logs()
        finally:   # also on Ctrl-C or SIGTERM (__main__ turns it into SystemExit): nothing left running
            for server in self.servers:
                self._end(server)
            self.load.stop()
            self.group.close()
        return self.records

    def _report(self, record):
        """Log the stop; keep its files when it went wrong. True if kept."""
        bad = record["hung"] or record["orphans"] or not record["clean"] or record["tracebacks"] or (
            self.keep_slower is not None and (record["seconds"] or 0) > self.keep_slower)
        self.log("stop %(stop)d %(kind)s (seed %(seed)d, %(at)s): %(seconds)s s, exit %(exit)s, orphans %(orphans)d"
                 % record + (" <-- kept" if bad else ""))
        if not bad or not self.keep:
            return False
        record["kept"] = self._keep(record["stop"], record["kind"], record["reports"])
        return True

    def _keep(self, index, kind, paths):
        kept = os.path.join(self.keep, "stop-%d-%s" % (index, kind.replace(" ", "-")))
        os.makedirs(kept, exist_ok=True)
        for path in paths:
            if os.path.exists(path):
                shutil.copy(path, kept)
        return kept

    @staticmethod
    def _end(server):
        """A process a moment left running (a takeover's that gave up): ended, never left behind."""
        if server.process is not None and server.process.poll() is None:
            server.process.kill()
            server.process.wait()
