"""The main process's read workers: spawn, feed with replicas, collect their request counts."""

import os
import select
import shutil
import sys
import tempfile

from twisted.internet import defer, protocol
from twisted.logger import Logger

import namesrv
from namesrv.interfaces import IReplicableProcessor
from namesrv.protocol.codes import RequestCode
from namesrv.readworkers.channel.delta import TopicTracker
from namesrv.readworkers.channel.feed import FeedError, MessageReader, pack_down, publication
from namesrv.readworkers.main.forwarded import ForwardedConnectionFactory
from namesrv.readworkers.worker.handoff import HandoffFactory, HandoffReceiver, adopt_connection
from namesrv.readworkers.channel.generation import SharedGeneration
from namesrv.dispatch.registry import record_requests

log = Logger()

#: publishing may take at most this share of the main process's time (a full copy of 100k
#: entries takes ~200 parts; during a burst of changes, reads are forwarded meanwhile)
PUBLISH_DUTY = 0.25
MIN_PUBLISH_INTERVAL = 0.005
RESPAWN_DELAY = 1.0
#: a REGISTER_BROKER body this large (about 7,000 topics) waits for fresh replicas before it runs
LARGE_REGISTRATION_BYTES = 1 << 20
#: ...for at most this long (seconds)
MAX_HOLD = 1.0
STOP_GRACE = 5.0


class ReadWorkerPool:
    """``count`` worker processes on the main process's port, fed after every change."""

    def __init__(self, service, count, worker_arguments=()):
        self.service = service
        self.count = count
        self.worker_arguments = list(worker_arguments)   # guards.worker_arguments: TLS and ACL
        self.reactor = service.reactor
        self.workers = {}          # index -> WorkerProcess (running or starting)
        self.answered = {}         # index -> requests a worker answered itself
        self.rejected = {}         # (request class, reason) -> requests a worker refused
        self.publishes = 0
        self.running = False
        self.directory = None
        self.generation = None
        self.internal_port = None
        self.handoff_port = None
        self.handoffs = 0
        self.forwarded = None
        self.port = None
        self._publish_call = None
        self._next_publish = 0.0
        self._respawns = []
        self.tracker = None
        self._messages = None          # the running publication's remaining messages
        self._send_call = None
        self._publish_work = 0.0       # reactor time the running publication has taken so far
        self._published_generation = None
        self._unsettled = False        # tables changed since the shared counter was last bumped
        self._fresh_waiters = []       # (Deferred, timeout call) of large registrations held
        self.listen_socket = None      # the listening socket the workers inherit (sharedport.listening_socket)
        self.draining = False          # a takeover: workers hand everything over and are not respawned
        self.divert = None             # while draining: divert(descriptor, peer, unread) instead of adopting
        self.handoffs_open = 0         # handoff connections whose socket has not arrived in full yet
        self.on_listening = None       # called when a worker starts accepting

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, port, listen_socket=None):
        """Start the workers on TCP ``port``; with ``listen_socket`` they accept from that socket
        (inherited), else each binds the port itself (SO_REUSEPORT)."""
        self.port = port
        self.listen_socket = listen_socket
        self.running = True
        self.directory = tempfile.mkdtemp(prefix="namesrv-readers-")
        os.chmod(self.directory, 0o700)
        self.generation = SharedGeneration(os.path.join(self.directory, "generation"), writable=True)
        self.forwarded = ForwardedConnectionFactory(self.service.factory)
        self.internal_port = self.reactor.listenUNIX(self.socket_path, self.forwarded, mode=0o600, backlog=1024)
        self.handoff_port = self.reactor.listenUNIX(self.handoff_path, _CountingHandoffFactory(self), mode=0o600,
                                                    backlog=1024)
        service = self.service
        self.tracker = service.routes.track_topic_changes(TopicTracker())
        self.tracker.take()   # each worker's first message is a full copy anyway
        service.routes.add_change_listener(self.changed)
        service.kv.change_listeners.append(self.changed)
        service.config.add_listener(self.changed)
        service.registry.change_listeners.append(self.changed)
        service.registry.answer_hooks.append(self.settle)
        service.security.dispatcher.holds.append(self.hold_large_registration)
        for index in range(self.count):
            self._spawn(index)
        log.info("{n} route read worker(s) share port {port}", n=self.count, port=port)

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
        if adopt_connection(self.reactor, self.service.factory, descriptor, peer, unread) is not None:
            self.handoffs += 1

    # -- large registrations wait for fresh replicas -------------------------------------
    def hold_large_registration(self, request):
        """A Deferred a large REGISTER_BROKER waits for (the dispatcher's hold), or None.

        A registration of tens of thousands of topics holds the main process for a long time
        (hundreds of ms at 100,000 topics). If it starts while the workers' replicas are stale
        (a publication running or not yet applied), every read meanwhile is forwarded to the
        main process and waits for the whole registration. Started once the replicas are
        fresh, it runs while the workers answer every read themselves. The wait is bounded
        (``MAX_HOLD``): a worker that never catches up cannot hold brokers back.
        """
        if request.code != RequestCode.REGISTER_BROKER or len(request.body or b"") < LARGE_REGISTRATION_BYTES:
            return None
        if not self.running or self.draining or self.replicas_fresh():
            return None
        waiting = defer.Deferred()
        timeout = self.reactor.callLater(MAX_HOLD, self._release_one, waiting)
        self._fresh_waiters.append((waiting, timeout))
        return waiting

    def replicas_fresh(self):
        """Every running worker has applied the publication of the counter's current value."""
        if self._unsettled or self._messages is not None:
            return False
        value = self.generation.value
        return all(worker.applied_generation == value for worker in self.workers.values()
                   if not worker.ended)

    def worker_applied(self):
        if self._fresh_waiters and self.replicas_fresh():
            self._release_all()

    def _release_one(self, waiting):
        self._fresh_waiters = [(d, call) for d, call in self._fresh_waiters if d is not waiting]
        if not waiting.called:
            waiting.callback(None)

    def _release_all(self):
        waiters, self._fresh_waiters = self._fresh_waiters, []
        for waiting, timeout in waiters:
            if timeout.active():
                timeout.cancel()
            if not waiting.called:
                waiting.callback(None)

    def drain(self):
        """A takeover: every worker stops accepting, hands its connections to us and exits; none is
        respawned. ``drained()`` tells when all of them are gone and every handoff has arrived."""
        self.draining = True
        self._release_all()
        for call in [self._publish_call, self._send_call, *self._respawns]:
            if call is not None and call.active():
                call.cancel()
        self._messages = None
        message = pack_down({"kind": "drain"})
        for worker in self.workers.values():
            worker.send(message)

    def drained(self):
        """Every worker has exited and every connection it handed us has arrived. A draining worker
        exits only once each handoff is connected and sent, so a handoff not yet arrived is either
        open here or still waiting to be accepted (our handoff socket is then readable)."""
        if not self.draining or self.workers or self.handoffs_open:
            return False
        if self.handoff_port is None:
            return True
        readable, _, _ = select.select([self.handoff_port.fileno()], [], [], 0)
        return not readable

    def stop(self):
        """Stop feeding and close the workers' stdin (they then report their last counts, close
        their port and exit); the Deferred fires when every worker has ended."""
        self.running = False
        self._release_all()
        for call in [self._publish_call, self._send_call, *self._respawns]:
            if call is not None and call.active():
                call.cancel()
        self._publish_call = None
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

    def _stopped(self, ignored):
        log.info("route read workers stopped: {p} replica messages published, {a} requests answered by workers, "
                 "{h} broker connections handed over", p=self.publishes, a=sum(self.answered.values()),
                 h=self.handoffs)
        if self.generation is not None:
            self.generation.close()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _spawn(self, index):
        if not self.running:
            return
        if self.draining:
            return
        worker = WorkerProcess(self, index)
        config = self.service.config
        args = [sys.executable, "-m", "namesrv.readworkers.worker", "--index", str(index),
                "--port", str(self.port), "--interface", config.bindAddress,
                "--backlog", str(config.serverSocketBacklog or 50),
                "--upstream", self.socket_path, "--generation", self.generation.path,
                "--handoff", self.handoff_path, *self.worker_arguments]
        for processor in self.replicable_processors():
            args += ["--processor", processor.name]
        child_fds = {0: "w", 1: "r", 2: "r"}
        if self.listen_socket is not None:
            child_fds[3] = self.listen_socket.fileno()
            args += ["--listen-fd", "3"]
        env = dict(os.environ)
        source_root = os.path.dirname(os.path.dirname(os.path.abspath(namesrv.__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (source_root, env.get("PYTHONPATH")) if p)
        self.workers[index] = worker
        self.reactor.spawnProcess(worker, sys.executable, args, env=env, path=self.directory,
                                  childFDs=child_fds)

    def worker_ended(self, worker, reason):
        if self.workers.get(worker.index) is worker:
            del self.workers[worker.index]
        if self.running and not self.draining:
            log.warn("route read worker {i} exited ({why}); starting another in {s}s", i=worker.index,
                     why=reason.getErrorMessage(), s=RESPAWN_DELAY)
            self._respawns = [c for c in self._respawns if c.active()]
            self._respawns.append(self.reactor.callLater(RESPAWN_DELAY, self._spawn, worker.index))

    # -- replicas ----------------------------------------------------------------------------
    def changed(self, *ignored):
        """Something a read could see changed: publish soon; replicas are stale once settled."""
        if not self.running or self.draining:
            return
        self._unsettled = True
        self._schedule_publish()

    def settle(self):
        """Bump the shared counter if anything changed since the last bump: from then on workers
        forward every read until their replica catches up.

        Called just before the main process writes any answer, and when a publication begins.
        So a change is settled before its acknowledgement leaves (read-after-write holds), but
        not while the change's own work goes on: the grouping and logging of a 100,000-topic
        registration's route changes runs while the workers still answer from the replica
        (as they may: nobody has been told of the change yet).
        """
        if self._unsettled:
            self._unsettled = False
            self.generation.bump()

    def _schedule_publish(self):
        if self._messages is not None:
            return   # the running publication's end looks again
        if self._publish_call is None or not self._publish_call.active():
            delay = max(0.0, self._next_publish - self.reactor.seconds())
            self._publish_call = self.reactor.callLater(delay, self._publish)

    def replicable_processors(self):
        """The processors that declare codes a replica may answer (IReplicableProcessor): workers
        build the same ones through their plugin factories, by name."""
        return [processor for processor in self.service.registry.processors
                if IReplicableProcessor.providedBy(processor) and processor.replicable_codes]

    def local_codes(self):
        """The replicable codes every policy lets a worker answer: those that allow an answer from
        a copy, and those a worker checks itself (``checked_by_read_workers``: the ACL check,
        with the same file)."""
        registry = self.service.registry
        return [code for processor in self.replicable_processors() for code in sorted(processor.replicable_codes)
                if registry.processor_for(code) is processor
                and all(_worker_may_answer(policy, code) for policy in registry.policies)]

    def publication(self, topics=None):
        """The messages of one publication (feed.publication): ``topics`` changed, or all (None)."""
        service = self.service
        return publication(self.generation.value, service.routes, service.kv, service.config,
                           service.context.started, self.local_codes(), topics)

    def _publish(self):
        """Start a publication; its messages go out one per reactor turn (reads forwarded to us
        meanwhile are answered between them)."""
        self._publish_call = None
        if not self.running or self._messages is not None:
            return
        self.settle()
        full, topics = self.tracker.take()
        if any(worker.needs_full for worker in self.workers.values()):
            full = True
        for worker in self.workers.values():
            worker.needs_full = False
        self._published_generation = self.generation.value
        self._messages = self.publication(None if full else topics)
        self._publish_work = 0.0
        self._send_next()

    def _send_next(self):
        self._send_call = None
        if not self.running:
            return
        began = self.reactor.seconds()
        try:
            message = next(self._messages)
        except StopIteration:
            self._messages = None
            self._published()
            return
        except Exception:
            # Never expected; if it happens, workers stay stale (they forward every read, which the
            # main process answers) until a full copy made a little later succeeds.
            log.failure("route replica publication failed; read workers forward every read meanwhile")
            self._messages = None
            for worker in self.workers.values():
                worker.needs_full = True
            self._next_publish = self.reactor.seconds() + RESPAWN_DELAY
            self._schedule_publish()
            return
        for worker in self.workers.values():
            worker.send(message)
        self._publish_work += self.reactor.seconds() - began
        self._send_call = self.reactor.callLater(0, self._send_next)

    def _published(self):
        self.publishes += 1
        spent = self._publish_work
        self._next_publish = self.reactor.seconds() + max(MIN_PUBLISH_INTERVAL, spent / PUBLISH_DUTY - spent)
        if self.tracker or self.tracker.full or self._stale():
            self._schedule_publish()

    def _stale(self):
        """Did anything change since the publication that just ended began?"""
        return self._unsettled or self._published_generation != self.generation.value

    # -- counts from the workers -----------------------------------------------------------
    def record_counts(self, index, counts, connections=None, rejections=()):
        """A worker's answers since its last report, passed on to every observer (metrics, event log);
        its connections by kind and its refusals, added to the main process's own."""
        peer = "read-worker-%d" % index
        observers = self.service.registry.observers
        for code, response_code, count, micros in counts:
            self.answered[index] = self.answered.get(index, 0) + count
            record_requests(observers, code, response_code, count, micros, peer)
        security = self.service.security
        if connections and security.tls_factory is not None:
            security.tls_factory.add_counts(connections)
        for request_class, reason, count in rejections:
            self.rejected[(request_class, reason)] = self.rejected.get((request_class, reason), 0) + count
            if security.metrics is not None:
                for _ in range(count):
                    security.metrics.rejected(request_class, reason)


class _CountedReceiver(HandoffReceiver):
    def __init__(self, pool):
        HandoffReceiver.__init__(self, pool._adopt)
        self.pool = pool
        pool.handoffs_open += 1

    def connectionLost(self, reason=None):
        self.pool.handoffs_open -= 1
        HandoffReceiver.connectionLost(self, reason)


class _CountingHandoffFactory(HandoffFactory):
    """Handoffs, counted while their bytes arrive: a draining pool is done only when none is open."""

    def __init__(self, pool):
        HandoffFactory.__init__(self, pool._adopt)
        self.pool = pool

    def buildProtocol(self, addr):
        return _CountedReceiver(self.pool)


def _worker_may_answer(policy, code):
    if getattr(policy, "checked_by_read_workers", False):
        return True
    allows = getattr(policy, "allows_cached_answer", None)
    return allows is not None and allows(code)


class WorkerProcess(protocol.ProcessProtocol):
    """One worker: replicas down its stdin, counts up its stdout, its log on stderr."""

    def __init__(self, pool, index):
        self.pool = pool
        self.index = index
        self.reader = MessageReader()
        self.ended = False
        self.needs_full = False
        self.applied_generation = None    # the generation of the last publication it applied
        self.ended_deferred = defer.Deferred()
        self._kill_call = None
        self._log_tail = b""

    def connectionMade(self):
        self.needs_full = True
        self.pool.changed()

    def send(self, message):
        if not self.ended and self.transport is not None:
            self.transport.write(message)

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
                                            message.get("rejections", []))
                elif kind == "applied":
                    self.applied_generation = message.get("generation")
                    self.pool.worker_applied()
                elif kind == "listening":
                    if self.pool.on_listening is not None:
                        self.pool.on_listening()
                elif kind == "resync":
                    self.needs_full = True
                    self.pool.changed()
        elif fd == 2:
            lines = (self._log_tail + data).split(b"\n")
            self._log_tail = lines.pop()[-4096:]
            for line in lines:
                if line.strip():
                    log.info("[read-worker-{i}] {line}", i=self.index, line=line.decode("utf-8", "replace"))

    def stop(self):
        """Close stdin (the worker then exits), KILL after a grace; the Deferred fires at its end."""
        if self.ended:
            return defer.succeed(None)
        try:
            self.transport.closeStdin()
        except Exception:
            pass
        self._kill_call = self.pool.reactor.callLater(STOP_GRACE, self._kill)
        return self.ended_deferred

    def _kill(self):
        if not self.ended:
            try:
                self.transport.signalProcess("KILL")
            except Exception:
                pass

    def processEnded(self, reason):
        self.ended = True
        if self._kill_call is not None and self._kill_call.active():
            self._kill_call.cancel()
        self.pool.worker_ended(self, reason)
        self.ended_deferred.callback(None)
