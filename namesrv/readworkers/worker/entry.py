"""A read worker process: ``python -m namesrv.readworkers.worker`` (started by ReadWorkerPool).

It listens on the main process's port once its first replica has arrived (so no client
lands on it before it can answer), with PROXY headers, TLS and ACL as the main process has them
(guards.py), reports its request counts every second, and exits when its stdin closes
(the main process stopped or died) or when the main process is gone by any other sign
(lifeline.py: the parent-death signal, the pipe to it broken, a new parent); a worker whose
main process died removes the pool's private directory as it exits. It accepts from the listening socket the main process
made (``--listen-fd``, inherited), so its exit never resets connections still queued.

A ``drain`` message (a takeover, namesrv/handover) makes it stop accepting and hand every
connection to the main process once nothing is in flight on it; TLS connections, which
cannot move, are closed once their answers are out. Then it exits.
"""

import argparse
import collections
import gc
import os
import socket
import sys
import time

from twisted.internet import protocol, stdio, task
from twisted.internet.error import ReactorNotRunning
from twisted.internet.interfaces import IHalfCloseableProtocol
from twisted.logger import FilteringLogObserver, LogLevel, LogLevelFilterPredicate, Logger, formatEvent, globalLogBeginner

from zope.interface import implementer

from namesrv.timing.scheduler import CONTROL
from namesrv.timing.drainloop import WORKER_GRACE, DrainLoop
from namesrv.observe.stopwatch import SignalsOnTheReactor
from namesrv.readworkers.channel.feed import FeedError, counts_message, down_reader, pack, resync_message
from namesrv.readworkers.channel.generation import SharedGeneration
from namesrv.readworkers.channel.pipes import enlarge, read_in_large_chunks
from namesrv.readworkers.channel.scratch import remove_if_abandoned
from namesrv.readworkers.worker.baseline import restore_baseline
from namesrv.readworkers.worker.connections import WorkerConnectionFactory
from namesrv.routes.slicedsnapshot import SnapshotError
from namesrv.readworkers.worker.guards import RejectionCounts, WorkerAcl, WorkerGuards, add_arguments
from namesrv.readworkers.worker.handoff import hand_off_idle, movable, quiet, stop_reading
from namesrv.readworkers.worker.lifeline import Lifeline
from namesrv.readworkers.worker.replica import Replica
from namesrv.server.sharedport import close_listening

log = Logger()
COUNTS_INTERVAL = 1.0
#: after stdin ends, how long the last counts may take to leave before the worker exits anyway
LAST_WORDS = 0.5
#: a worker whose main process died waits this long at most for it to be gone (it may be
#: mid-exit when its pipes close) before it removes the private directory
OWNER_EXIT_WAIT = 0.5


@implementer(IHalfCloseableProtocol)
class ReadWorker(protocol.Protocol):
    """The worker's stdio: replicas in, counts out; listening and stopping follow from them.

    Half-closeable: when stdin ends (the main process stops) stdout stays open for the
    last counts.
    """

    def __init__(self, options, reactor, replica, guards, lifeline=None):
        self.options = options
        self.lifeline = lifeline
        self.reactor = reactor
        self.replica = replica
        self.guards = guards
        self.reader = down_reader()
        self.factory = WorkerConnectionFactory(replica, options.upstream, reactor, options.handoff)
        # a read on a stale replica waits a moment for the publication on its way (freshness.py)
        self.fresh_reads = replica.fresh_reads
        self.port = None
        self._pending = collections.deque()
        self._applies = replica.context.scheduler.job(self._apply_pending, CONTROL, "replica applies")
        self._stopped = False
        self._reactor_stopping = False
        self._counts = task.LoopingCall(self.send_counts)
        self._counts.clock = reactor
        self._drain = DrainLoop(self._sweep, self._drained, reactor, WORKER_GRACE)
        self._senders = []

    def dataReceived(self, data):
        try:
            messages = self.reader.feed(data)
        except FeedError as e:
            log.error("unreadable feed from the main process ({e}); exiting", e=e)
            return self.shut_down()
        if any(m.get("kind") == "drain" for m in messages):
            return self.drain()
        staging = self.replica.staging   # a quiet publication's parts wait for its end (staging.py)
        for message in messages:
            if message.get("kind") in ("topics", "replica"):
                self._pending.extend(staging.arrived(message))
        if self._pending:
            self._applies.wake()

    def _apply_pending(self):
        """The job: one message per step (a burst of parts read at once, a 100,000-topic publication
        is 200 of them, must not hold this worker's clients for all of them: the scheduler's turns
        give the reactor back between steps, and clients' reads go first)."""
        while self._pending and not self._stopped:
            self._apply(self._pending.popleft())
            yield

    def _apply(self, message):
        try:
            usable = self.replica.apply(message)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            log.error("unusable replica ({e}); forwarding every request until a full copy arrives", e=e)
            self.transport.write(resync_message())
            return
        if message["kind"] == "replica" and usable:
            self.transport.write(pack({"kind": "applied", "generation": self.replica.generation}))
            # The replica is long-lived: out of the collector's reach, a full collection of
            # a million entries (hundreds of ms) never runs while clients wait.
            gc.freeze()
            if self.port is None:
                self.listen()

    def listen(self):
        factory = self.guards.listen_factory(self.factory, self.replica.config)
        if self.options.listen_fd is None:
            raise SystemExit("a read worker accepts only from the socket it inherits (--listen-fd)")
        probe = socket.socket(fileno=os.dup(self.options.listen_fd))
        family = probe.family
        probe.close()
        self.port = self.reactor.adoptStreamPort(self.options.listen_fd, family, factory)
        os.close(self.options.listen_fd)   # the port holds its own duplicate
        self.options.listen_fd = None
        self.guards.startService()
        self.transport.write(pack({"kind": "listening"}))
        self._counts.start(COUNTS_INTERVAL, now=False)
        log.info("read worker {i} listening on {addr}:{port} (generation {g}, {n} topics)", i=self.options.index,
                 addr=self.options.interface, port=self.options.port, g=self.replica.generation,
                 n=len(self.replica.context.routes.topic_queue_table))

    # -- takeover ------------------------------------------------------------------------------
    def drain(self):
        """Stop accepting; move every connection to the main process at a frame boundary; exit."""
        if self._drain.running or self._stopped:
            return
        log.info("read worker {i} draining: handing its connections to the main process", i=self.options.index)
        self._pending.clear()
        if self.port is not None:
            close_listening(self.port)   # our descriptor only: the socket stays in the main process
            self.port = None
        self.factory.turns.stop()   # frames waiting for their turn travel with their connection, unread
        for connection in list(self.factory.connections.values()):
            stop_reading(connection)
        self.fresh_reads.flush()    # reads waiting for a fresh replica: answered or forwarded (awaited) now
        # Not now: we run inside an I/O batch, and a read event of this batch for a connection
        # stopped above is still delivered (Twisted reads on any reported event); detaching in
        # the same batch would drop those bytes. From a timer call, the next poll is fresh.
        self._drain.start(now=False)

    def _sweep(self, late):
        """Hand over (or close, for TLS) every connection whose answers are all out (``late``: every one);
        True once none is left and every handover has finished (or the drain is late)."""
        for connection in list(self.factory.connections.values()):
            if connection.closing:
                continue
            stop_reading(connection)   # a connection accepted just before the drain
            idle = connection.awaiting == 0 and quiet(connection)
            if late or (idle and not (movable(connection) and self.options.handoff)):
                connection.close()
            elif idle:
                self._senders.append(hand_off_idle(self.reactor, self.options.handoff, connection))
        self._senders = [s for s in self._senders if not s.finished]
        return not self.factory.connections and (not self._senders or late)

    def _drained(self, late):
        log.info("read worker {i} drained", i=self.options.index)
        if self.transport is not None:
            # said before exiting: an interpreter letting go of a million-entry replica takes
            # hundreds of ms, which the takeover (and every client, paused) need not wait for
            self.transport.write(pack({"kind": "drained"}))
        self.shut_down()

    def send_counts(self):
        counts = self.replica.counts.take()
        connections = self.guards.take_connection_counts()
        rejections = self.guards.rejections.take()
        refused = self.replica.counts.take_refused()
        proxy = self.guards.take_proxy_counts()
        if (counts or connections or rejections or refused or proxy) and self.transport is not None:
            self.transport.write(counts_message(counts, connections, rejections, refused, proxy))

    def readConnectionLost(self):
        """stdin ended: stop serving, write the last counts; connectionLost follows once they are out.
        If they cannot leave (the main process died: nobody reads them), exit after LAST_WORDS."""
        self.shut_down(stop_reactor=False)
        if self.transport is not None:
            self.transport.loseConnection()
        self.reactor.callLater(LAST_WORDS, self._stop_reactor)

    def writeConnectionLost(self):
        """Nobody reads our stdout any more: the main process is gone (it keeps reading until we end,
        also when it stops us). Without this, a worker whose stdout broke before its stdin ended
        would never hear its own end (StandardIO reports the whole loss only while closing)."""
        if self.lifeline is not None:
            self.lifeline.lost("the pipe to the main process broke")
        self.shut_down()

    def connectionLost(self, reason=None):
        self.shut_down()
        self._stop_reactor()

    def shut_down(self, stop_reactor=True):
        if self._stopped:
            return
        self._stopped = True
        if self._counts.running:
            self._counts.stop()
            self.send_counts()
        self._drain.stop()
        self._applies.stop()
        if self.port is not None:
            close_listening(self.port)
            self.port = None
        if self.guards.running:
            self.guards.stopService()
        self.factory.close_all()
        if stop_reactor:
            self._stop_reactor()

    def _stop_reactor(self):
        if self.reactor.running and not self._reactor_stopping:
            self._reactor_stopping = True
            self.reactor.callLater(0, self._stop_now)

    def _stop_now(self):
        try:
            self.reactor.stop()
        except ReactorNotRunning:   # a SIGTERM stopped it meanwhile
            pass


def _stderr_observer():
    """One line per event, without a time stamp: the main process logs each line with its own."""
    def write(event):
        text = formatEvent(event)
        failure = event.get("log_failure")
        if failure is not None:
            text += "\n" + failure.getTraceback()
        sys.stderr.write("%s %s\n" % (event.get("log_level", LogLevel.info).name, text))
        sys.stderr.flush()
    return FilteringLogObserver(write, [LogLevelFilterPredicate(LogLevel.info)])


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="namesrv.readworkers.worker")
    parser.add_argument("--index", type=int, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--interface", default="127.0.0.1")
    parser.add_argument("--backlog", type=int, default=1024)
    parser.add_argument("--upstream", required=True, help="the main process's UNIX socket")
    parser.add_argument("--generation", required=True, help="the shared generation file")
    parser.add_argument("--handoff", default=None, help="the main process's UNIX socket for brokers' connections")
    parser.add_argument("--processor", action="append", dest="processors", default=[],
                        help="a replicable processor to build through its plugin factory (repeatable)")
    parser.add_argument("--listen-fd", type=int, default=None,
                        help="the inherited listening socket to accept from (required to listen)")
    parser.add_argument("--snapshot-fd", type=int, default=None,
                        help="the route snapshot file the main process restored: the first replica comes from it")
    parser.add_argument("--parent-pid", type=int, default=None,
                        help="the main process's PID: the worker exits once it is no longer its parent")
    add_arguments(parser)
    return parser.parse_args(argv)


def main(argv=None):
    options = parse_args(sys.argv[1:] if argv is None else argv)
    from twisted.internet import reactor
    globalLogBeginner.beginLoggingTo([_stderr_observer()], redirectStandardIO=False)
    rejections = RejectionCounts()
    try:
        acl = WorkerAcl.for_options(options, reactor)
        replica = Replica(SharedGeneration(options.generation), reactor, processor_names=options.processors, acl=acl,
                          rejections=rejections)
        guards = WorkerGuards(options, reactor, rejections, acl)
    except ValueError as e:   # TlsConfigError, a bad aclSignedClasses: never serve unguarded
        log.error("read worker {i} cannot start: {e}", i=options.index, e=e)
        sys.exit(2)
    worker = ReadWorker(options, reactor, replica, guards)
    worker.lifeline = lifeline = Lifeline(options.parent_pid or os.getppid(), _orphaned(worker, options), reactor)
    lifeline.start()
    # SIGTERM (the parent-death signal, or an operator) stops the reactor: close every connection
    # and the port first, and say whether the main process is gone.
    reactor.addSystemEventTrigger("before", "shutdown", _before_shutdown, worker, lifeline)
    # ...handled on the reactor thread, not where the signal lands (observe/stopwatch.py: a deadlock otherwise)
    reactor.callWhenRunning(SignalsOnTheReactor(reactor).install)
    unrestored = _restore_baseline(replica, options)
    feed = stdio.StandardIO(worker, reactor=reactor)
    # a publication in one write and one read (channel/pipes.py)
    enlarge(0)
    read_in_large_chunks(feed._reader)
    if unrestored:
        feed.write(resync_message())   # a full copy instead
    reactor.run()
    if lifeline.orphaned is not None:
        _remove_private_directory(options)


def _restore_baseline(replica, options):
    """The first replica from the snapshot file the main process passed (baseline.py); True if it could
    not be restored (then a full copy is asked for)."""
    if options.snapshot_fd is None:
        return False
    try:
        topics, seconds = restore_baseline(replica, options.snapshot_fd)
    except (OSError, SnapshotError) as e:
        log.error("read worker {i}: the route snapshot could not be restored ({e}); asking for a full copy",
                  i=options.index, e=e)
        return True
    gc.freeze()
    log.info("read worker {i}: {n} topics restored from the route snapshot in {ms:.0f} ms", i=options.index,
             n=topics, ms=seconds * 1000)
    return False


def _orphaned(worker, options):
    def orphaned(why):
        log.warn("read worker {i}: {why}; exiting", i=options.index, why=why)
        worker.shut_down()
    return orphaned


def _before_shutdown(worker, lifeline):
    worker._reactor_stopping = True   # it is stopping already
    lifeline.check()
    lifeline.stop()
    worker.shut_down(stop_reactor=False)


def _remove_private_directory(options):
    """The main process died and cannot remove the pool's directory (sockets, counter file): we do,
    once it is really gone (it may still be exiting when its pipes close); another worker may have
    removed it already. The next pool's start removes it too, should every worker have been killed
    with it."""
    directory = os.path.dirname(os.path.abspath(options.upstream))
    deadline = time.monotonic() + OWNER_EXIT_WAIT
    while os.path.isdir(directory) and not remove_if_abandoned(directory) and time.monotonic() < deadline:
        time.sleep(0.02)   # the reactor has stopped: nothing else to serve

