"""The main process's read workers: spawn and respawn them, collect their request counts.

What they are sent, and when, is the Publisher's (publisher.py); this module manages the
processes and the two private UNIX sockets they reach the main process on.
"""

import os
import select
import shutil
import sys

from twisted.internet import defer, protocol
from twisted.internet.error import CannotListenError
from twisted.logger import Logger

import namesrv
from namesrv.protocol.framing import complete_frames
from namesrv.readworkers.channel.feed import FeedError, MessageReader, pack_down, refused_event
from namesrv.readworkers.channel import pipes
from namesrv.readworkers.channel.generation import SharedGeneration
from namesrv.readworkers.channel.scratch import make_directory
from namesrv.readworkers.main.forwarded import ForwardedConnectionFactory
from namesrv.readworkers.main.handoff import HandoffFactory, adopt_connection
from namesrv.readworkers.main.publisher import Publisher, replicable_processors
from namesrv.unixaddress import release, socket_address

log = Logger()

RESPAWN_DELAY = 1.0
#: a worker still there this long after its stdin closed prints its stacks (SIGUSR1: faulthandler, into
#: our log) and is killed ``DUMP_GRACE`` later: well within the whole stop's bound (observe/stopwatch.py)
STOP_GRACE = 3.0
DUMP_GRACE = 0.5


class ReadWorkerGauges:
    """The pool's families on the metrics port (NamesrvMetrics.add_collector): workers running and configured."""

    def __init__(self, pool):
        self.pool = pool

    def read(self):
        return len(self.pool.workers), self.pool.count

    def families(self, reading):
        from prometheus_client.core import GaugeMetricFamily
        from namesrv.observe.metrics import PREFIX
        running, configured = reading
        yield GaugeMetricFamily(PREFIX + "read_workers", "Route read worker processes running (or starting).",
                                value=running)
        yield GaugeMetricFamily(PREFIX + "read_workers_configured", "Route read workers the server keeps "
                                "(routeReadWorkers).", value=configured)


class ReadWorkerPool:
    """``count`` worker processes on the main process's port, respawned when one exits; its
    ``publisher`` feeds them after every change.

    ``factory`` is the public RemotingServerFactory: forwarded and handed-over connections
    are served with its dispatcher and housekeeping. ``priority`` is the dispatcher that may hold a
    request until the workers are fresh (IQueueingDispatcher), ``started`` the server's start time; ``tls_factory``,
    ``proxy_factory`` and ``metrics`` (each may be None) take the connections, PROXY headers and refusals the workers count.
    """

    def __init__(self, count, routes, kv, config, registry, factory, priority, started, reactor, scheduler,
                 tls_factory=None, metrics=None, worker_arguments=(), proxy_factory=None):
        self.count = count
        self.config = config
        self.registry = registry
        self.factory = factory
        self.reactor = reactor
        self.tls_factory = tls_factory
        self.proxy_factory = proxy_factory
        self.metrics = metrics
        if metrics is not None:
            metrics.add_collector(ReadWorkerGauges(self))
        self.worker_arguments = list(worker_arguments)   # guards.worker_arguments: TLS and ACL
        self.workers = {}          # index -> WorkerProcess (running or starting)
        self.answered = {}         # index -> requests a worker answered itself
        self.rejected = {}         # (request class, reason) -> requests a worker refused
        self.running = False
        self.directory = None
        self.generation = None
        self.internal_port = None
        self.handoff_port = None
        self.handoff_factory = None
        self.handoffs = 0
        self.handoffs_at_header = 0
        self.forwarded = None
        self.port = None
        self._respawns = []
        self.listen_socket = None      # the listening socket the workers inherit (sharedport.listening_socket)
        self.draining = False          # a takeover: workers hand everything over and are not respawned
        self.divert = None             # while draining: divert(descriptor, peer, unread) instead of adopting
        self.on_listening = None       # called when a worker starts accepting
        self.on_uncovered = None       # called when no worker accepts any more (one died)
        #: the route snapshot file this process restored (an open file), for the workers it starts first: each
        #: restores it itself instead of receiving a full copy (its first publication has what changed since:
        #: ``since_baseline``, the topics a takeover's last copy changed)
        self.baseline = None
        self.since_baseline = None
        self.publisher = Publisher(routes, kv, config, registry, priority, started, reactor, scheduler,
                                   workers=lambda: self.workers.values(),
                                   active=lambda: self.running and not self.draining)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, port, listen_socket, on_listening=None, on_uncovered=None):
        """Start the workers on TCP ``port``, accepting from ``listen_socket`` (they inherit it).
        ``on_listening()`` is called each time a worker starts accepting, ``on_uncovered()`` when
        a worker ended and none accepts any more (the main process then accepts until one does)."""
        self.port = port
        self.listen_socket = listen_socket
        self.on_listening = on_listening
        self.on_uncovered = on_uncovered
        self.running = True
        self.directory = make_directory()   # also removes those left by servers killed before
        self.generation = SharedGeneration(os.path.join(self.directory, "generation"), writable=True)
        self.forwarded = ForwardedConnectionFactory(self.factory)
        self.handoff_factory = HandoffFactory(self._adopt)
        try:
            self.internal_port = self._listen(self.socket_path, self.forwarded)
            self.handoff_port = self._listen(self.handoff_path, self.handoff_factory)
        except Exception:   # no worker started: the server's stop still removes the directory
            self.running = False
            if self.internal_port is not None:
                self.internal_port.stopListening()
                self.internal_port = None
            raise
        self.publisher.start(self.generation, self.since_baseline if self.baseline is not None else None)
        self.since_baseline = None
        for index in range(self.count):
            self._spawn(index, self.baseline)
        self.release_baseline()   # the workers started have it (later ones get a full copy)
        log.info("{n} route read worker(s) share port {port}", n=self.count, port=port)

    def take_baseline(self, baseline):
        """The snapshot file this process restored (an open file, now ours to close), for the first workers."""
        self.release_baseline()
        self.baseline = baseline

    def release_baseline(self):
        baseline, self.baseline = self.baseline, None
        if baseline is not None:
            baseline.close()

    @property
    def handoffs_open(self):
        """Handoff connections whose socket has not arrived in full yet."""
        return self.handoff_factory.open if self.handoff_factory is not None else 0

    def _listen(self, path, factory):
        """Listen on ``path`` in the pool's directory, through a short alias when $TMPDIR makes it too long for a
        socket address (unixaddress.py); the workers reach it the same way."""
        address = socket_address(path)
        if address is None:
            raise CannotListenError(None, path, "no socket address can name it (%d bytes)" % len(os.fsencode(path)))
        return self.reactor.listenUNIX(address, factory, mode=0o600, backlog=1024)

    @property
    def socket_path(self):
        return os.path.join(self.directory, "forward.sock")

    @property
    def handoff_path(self):
        return os.path.join(self.directory, "handoff.sock")

    def _adopt(self, descriptor, peer, unread):
        """A worker handed us a broker's connection: serve it as if we had accepted it."""
        if self.divert is not None:
            return self.divert(descriptor, peer, unread)
        if not self.running:
            os.close(descriptor)
            return
        if adopt_connection(self.reactor, self.factory, descriptor, peer, unread) is not None:
            self.handoffs += 1
            if not complete_frames(unread, 1)[1]:
                self.handoffs_at_header += 1   # the rest of its first frame is read here, from the socket

    def drain(self):
        """A takeover: every worker stops accepting, hands its connections to us and exits; none is
        respawned. ``drained()`` tells when all of them are gone and every handoff has arrived."""
        self.draining = True
        self.publisher.stop()
        self._cancel_respawns()
        message = pack_down({"kind": "drain"})
        for worker in self.workers.values():
            worker.send(message)

    def drained(self):
        """Every worker has exited or said it drained, and every connection it handed us has arrived.
        A draining worker says so (then exits) only once each handoff is connected and sent, so a
        handoff not yet arrived is either open here or still waiting to be accepted (our handoff socket
        is then readable)."""
        if not self.draining or self.handoffs_open or not all(w.drained for w in self.workers.values()):
            return False
        if self.handoff_port is None:
            return True
        readable, _, _ = select.select([self.handoff_port.fileno()], [], [], 0)
        return not readable

    def stop(self):
        """Stop feeding and close the workers' stdin (they then report their last counts, close
        their port and exit); the Deferred fires when every worker has ended."""
        self.running = False
        self.release_baseline()
        self.publisher.stop()
        self._cancel_respawns()
        if self.internal_port is not None:
            self.internal_port.stopListening()
            self.internal_port = None
        if self.handoff_port is not None:
            self.handoff_port.stopListening()
            self.handoff_port = None
        if self.forwarded is not None:
            self.forwarded.close_all()
        ended = [worker.stop() for worker in list(self.workers.values())]
        return defer.DeferredList(ended).addCallback(self._stopped)

    def _cancel_respawns(self):
        for call in self._respawns:
            if call.active():
                call.cancel()

    def _stopped(self, ignored):
        log.info("route read workers stopped: {p} replica messages published, {a} requests answered by workers, "
                 "{h} broker connections handed over ({e} of them before their first frame was all read)",
                 p=self.publisher.publishes, a=sum(self.answered.values()), h=self.handoffs, e=self.handoffs_at_header)
        if self.generation is not None:
            self.generation.close()
        if self.directory is not None:
            release(self.directory)
            shutil.rmtree(self.directory, ignore_errors=True)

    def _spawn(self, index, baseline=None):
        if not self.running:
            return
        if self.draining:
            return
        worker = WorkerProcess(self, index)
        worker.from_snapshot = baseline is not None
        config = self.config
        args = [sys.executable, "-m", "namesrv.readworkers.worker", "--index", str(index),
                "--port", str(self.port), "--interface", config.bindAddress,
                "--backlog", str(config.serverSocketBacklog or 50),
                "--upstream", self.socket_path, "--generation", self.generation.path,
                "--handoff", self.handoff_path, "--parent-pid", str(os.getpid()), *self.worker_arguments]
        for processor in self.replicable_processors():
            args += ["--processor", processor.name]
        child_fds = {0: "w", 1: "r", 2: "r", 3: self.listen_socket.fileno()}
        args += ["--listen-fd", "3"]
        if baseline is not None:
            child_fds[4] = baseline.fileno()
            args += ["--snapshot-fd", "4"]
        env = dict(os.environ)
        source_root = os.path.dirname(os.path.dirname(os.path.abspath(namesrv.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH")) if p)
        self.workers[index] = worker
        # From the reactor thread, always: the worker's parent-death signal (worker/lifeline.py)
        # fires when the thread that forked it ends, and this one lives as long as the process.
        self.reactor.spawnProcess(worker, sys.executable, args, env=env, path=self.directory,
                                  childFDs=child_fds)

    def worker_ended(self, worker, reason):
        if self.workers.get(worker.index) is worker:
            del self.workers[worker.index]
        if self.running and not self.draining:
            if self.metrics is not None:
                self.metrics.read_worker_exited()
            log.warn("route read worker {i} exited ({why}); starting another in {s}s", i=worker.index,
                     why=reason.getErrorMessage(), s=RESPAWN_DELAY)
            self._respawns = [c for c in self._respawns if c.active()]
            self._respawns.append(self.reactor.callLater(RESPAWN_DELAY, self._spawn, worker.index))
            self.cover()

    def cover(self):
        """No worker accepts (the only one died, or a takeover was abandoned): let the main process
        accept until a worker listens again."""
        if (self.on_uncovered is not None and self.running and not self.draining
                and not any(w.listening for w in self.workers.values())):
            log.info("no route read worker accepts: the main process accepts until one does")
            self.on_uncovered()

    def replicable_processors(self):
        """The processors a worker builds (by name) for its replica."""
        return replicable_processors(self.registry)

    # -- counts from the workers -----------------------------------------------------------
    def record_counts(self, index, counts, connections=None, rejections=(), refused=(), proxy=None):
        """A worker's answers since its last report, passed on to every observer (metrics, event log);
        its connections by kind, its refusals and its PROXY header counts, added to the main process's own;
        the refusals it noted, written to the event log."""
        peer = "read-worker-%d" % index
        observers = self.registry.observers
        for code, response_code, count, micros in counts:
            self.answered[index] = self.answered.get(index, 0) + count
            observers.record_requests(code, response_code, count, micros, peer)
        if connections and self.tls_factory is not None:
            self.tls_factory.add_counts(connections)
        if isinstance(proxy, dict) and self.proxy_factory is not None:
            self.proxy_factory.add_counts(proxy)
        for request_class, reason, count in rejections:
            self.rejected[(request_class, reason)] = self.rejected.get((request_class, reason), 0) + count
            if self.metrics is not None:
                for _ in range(count):
                    self.metrics.rejected(request_class, reason)
        for fields in refused:
            checked = refused_event(fields)
            if checked is not None:
                self.registry.events.emit("request_refused", worker=index, **checked)


class WorkerProcess(protocol.ProcessProtocol):
    """One worker: replicas down its stdin, counts up its stdout, its log on stderr."""

    def __init__(self, pool, index):
        self.pool = pool
        self.index = index
        self.reader = MessageReader()
        self.ended = False
        self.drained = False       # it said it handed every connection over and is exiting (a takeover)
        self.listening = False
        self.needs_full = False
        self.applied_generation = None    # the generation of the last publication it applied
        self.ended_deferred = defer.Deferred()
        self._kill_call = None
        self._log_tail = b""

    from_snapshot = False   # it restores the snapshot file this process restored (pool.baseline)

    def connectionMade(self):
        self.needs_full = not self.from_snapshot
        self.pool.publisher.changed()

    def send(self, message):
        if not self.ended and self.transport is not None:
            pipes.write_now(self.transport, message)   # now, not on the next reactor turn

    def childDataReceived(self, fd, data):
        if fd == 1:
            try:
                messages = self.reader.feed(data)
            except FeedError as e:
                log.error("route read worker {i} sent garbage ({e}); stopping it", i=self.index, e=e)
                self.transport.signalProcess("KILL")
                return
            for message in messages:
                kind = message.get("kind")
                if kind == "counts":
                    self.pool.record_counts(self.index, message.get("counts", []), message.get("connections"),
                                            message.get("rejections", []), message.get("refused", []),
                                            message.get("proxy"))
                elif kind == "applied":
                    self.applied_generation = message.get("generation")
                    self.pool.publisher.worker_applied()
                elif kind == "listening":
                    self.listening = True
                    if self.pool.on_listening is not None:
                        self.pool.on_listening()
                elif kind == "drained":
                    self.drained = True
                elif kind == "resync":
                    self.needs_full = True
                    self.pool.publisher.changed()
        elif fd == 2:
            lines = (self._log_tail + data).split(b"\n")
            self._log_tail = lines.pop()[-4096:]
            for line in lines:
                if line.strip():
                    log.info("[read-worker-{i}] {line}", i=self.index, line=line.decode("utf-8", "replace"))

    def stop(self):
        """Close stdin (the worker then exits); after a grace, its stacks, then KILL; the Deferred fires at
        its end. One not listening yet (still importing, restoring its first copy: seconds on a busy machine)
        has no client and no count to report: SIGTERM ends it at once instead of when it first reads stdin."""
        if self.ended:
            return defer.succeed(None)
        try:
            self.transport.closeStdin()
        except Exception:
            pass
        if not self.listening:
            self._signal("TERM")
        self._kill_call = self.pool.reactor.callLater(STOP_GRACE, self._dump_and_kill)
        return self.ended_deferred

    def _dump_and_kill(self):
        if self.ended:
            return
        log.error("route read worker {i} has not exited {s} s after its stop: its stacks follow, then SIGKILL",
                  i=self.index, s=STOP_GRACE)
        self._signal("USR1")   # faulthandler in the worker (worker/__main__.py): to its stderr, our log
        self._kill_call = self.pool.reactor.callLater(DUMP_GRACE, self._kill)

    def _kill(self):
        if not self.ended:
            self._signal("KILL")

    def _signal(self, name):
        try:
            self.transport.signalProcess(name)
        except Exception:   # ProcessExitedAlready, or no transport yet
            pass

    def processEnded(self, reason):
        self.ended = True
        self.listening = False
        if self._kill_call is not None and self._kill_call.active():
            self._kill_call.cancel()
        self.pool.worker_ended(self, reason)
        self.ended_deferred.callback(None)
