"""Both ends of a takeover for one NamesrvService: the control socket, and the hooks the
conversation (handing.py, taking.py) needs from the server."""

import gc
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, threads
from twisted.internet.error import ReactorNotRunning
from twisted.logger import Logger

from namesrv.handover import peers
from namesrv.handover.drain import ServerDrain
from namesrv.handover.handing import HandingFactory
from namesrv.handover.taking import OldProcessLeft, TakeoverClient
from namesrv.timing.scheduler import BULK
from namesrv.storage.instance import InstanceIdentity
from namesrv.readworkers.main.handoff import adopt_connection
from namesrv.readworkers.channel.unix import connect_unix
from namesrv.unixaddress import socket_address

log = Logger()

#: the old process died mid-takeover: how long its port may take to be free (its workers,
#: which share its socket, exit on its death)
PORT_FREE_WAIT = 5.0


def control_path(config):
    """``<instance id file>.handover.sock``: one per instance (per KV file), beside its id."""
    return config.instance_id_path() + ".handover.sock"


def answers(path):
    """Does a live process listen on the UNIX socket ``path``? (At start only: a local connect
    returns at once.)"""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def anonymous_file(pieces):
    """A descriptor of a file holding ``pieces`` that no directory names (memfd, else an unlinked temporary file):
    a takeover's first copy needs no name and no fsync, and goes with the process that holds it."""
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None:
        fd = memfd("namesrv-takeover-routes", os.MFD_CLOEXEC)
    else:
        import tempfile
        fd = os.dup(tempfile.TemporaryFile().fileno())
    try:
        for piece in pieces:
            view = memoryview(piece)
            while view:
                view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        raise
    return fd


class ChangedTopics(set):
    """Topics whose QueueData or mapping changed since the precopy; ``full`` if the tables were replaced."""

    full = False


class NothingToTakeOver(Exception):
    """No process of this instance answers on its control socket."""


@dataclass
class ServerParts:
    """What a takeover reads and drives of one server, by name (not the whole service).

    ``serving`` is the remoting port's side (namesrv/server/serving.py): its port exists only while the
    service listens, and it restores the route snapshot file once (a takeover that finds nothing to take
    over starts from it). ``scheduler`` runs a takeover's first copy a step at a time while serving.
    """

    reactor: Any
    config: Any
    routes: Any
    kv: Any
    factory: Any
    housekeeping: Any
    read_workers: Any
    serving: Any
    scheduler: Any

    @property
    def port(self):
        """The remoting port (a RemotingPort) while listening, else None."""
        return self.serving.port

    @property
    def listen_socket(self):
        return self.serving.listen_socket

    @property
    def running(self):
        return self.serving.running

    def restore_routes(self):
        self.serving.restore_routes()

    def cooperate(self, job):
        """A sliced job (a generator) run a step at a time across reactor turns: its CooperativeTask."""
        return self.scheduler.cooperate(job, BULK, "takeover copy")


class Handover:
    """Created by the service with its ServerParts; ``inflight`` (the InFlightDispatcher in front of the
    connections) counts the deferred answers a takeover waits for."""

    def __init__(self, server, inflight, takeover=False):
        self.server = server
        self.reactor = server.reactor
        self.takeover = takeover
        self._path = False   # computed at first use (control_path)
        self._address = None  # what the control socket is bound and reached at (address.socket_address)
        self._identity = None
        self.inflight = inflight
        self.drain = ServerDrain(server, self.inflight)
        self.busy = False
        self.handed_over = False
        self.control_port = None
        self.handing = None         # the control socket's factory (its open conversations), once listening
        self.client = None
        self._tracker = None
        self._drain_began = None
        self._baseline = None       # new side, version 3: the first copy's file, for the read workers
        self._writing = None        # old side, version 3: the first copy being written (a Deferred)

    @property
    def path(self):
        if self._path is False:
            self._path = control_path(self.server.config)
            self._address = socket_address(self._path)
            if self._address is None:
                log.warn("takeover control socket {path} cannot be a UNIX socket's address, even through its "
                         "directory: this process cannot be taken over (use a shorter kvConfigPath)", path=self._path)
                self._path = None
        return self._path

    @property
    def address(self):
        """The control socket's address: its path, or the same file through its directory when the path is
        longer than a UNIX socket's address holds. None with ``path``."""
        return self._address if self.path is not None else None

    @property
    def identity(self):
        if self._identity is None:
            self._identity = InstanceIdentity.for_config(self.server.config)
        return self._identity

    # -- the new process ---------------------------------------------------------------------
    def will_take_over(self):
        """A takeover was asked for and a process of this instance may be there to take over from: its tables
        will be ours (the route snapshot file is not restored, unless the takeover finds nothing)."""
        return bool(self.takeover and self.path is not None and os.path.exists(self.path))

    def take_over(self):
        """A Deferred firing with the old process's listening socket once its tables are ours
        (None when no process of this instance runs: start as usual). Fails with TakeoverRefused."""
        if self.path is None or not os.path.exists(self.path):
            log.info("takeover: no running process of this instance ({path}); starting normally", path=self.path)
            return defer.succeed(None)
        self.client = TakeoverClient(self.identity, self._adopt, self._precopied, self._precopied_file)
        connect_unix(self.reactor, self.address, self.client, self._connect_failed)
        return self.client.state.addCallbacks(self._adopt_state, self._nothing_running)

    def _nothing_running(self, failure):
        if failure.check(OldProcessLeft):
            return self._old_process_left(failure)
        failure.trap(NothingToTakeOver)
        self.server.restore_routes()   # a normal start: our own snapshot file
        return None

    def _old_process_left(self, failure):
        """The old process closed the conversation before the state: if it died, this one is the
        survivor and starts normally once the port is free; if it lives, the takeover failed."""
        pid = failure.value.pid

        def decide(gone):
            if not gone:
                return failure
            log.warn("takeover: the old process {pid} died before handing over; starting normally", pid=pid)
            self.client = None   # nothing will move here: serving() starts as a fresh start does
            self.server.restore_routes()
            config = self.server.config
            return peers.bindable_within(self.reactor, config.bindAddress, config.listenPort, PORT_FREE_WAIT)
        return peers.gone_within(self.reactor, pid).addCallback(decide)

    def _connect_failed(self, reason):
        log.info("takeover: nothing answers on {path} ({why}); starting normally", path=self.path,
                 why=reason.getErrorMessage())
        client, self.client = self.client, None
        client.state.errback(NothingToTakeOver())

    def _precopied(self, routes):
        """Version 2: the first copy, restored while the old process still serves."""
        from namesrv.routes.snapshot import restore_snapshot
        began = time.monotonic()
        restore_snapshot(self.server.routes, routes)
        gc.freeze()   # a million new long-lived objects: no full collection may scan them while clients wait
        log.info("takeover: first copy of the tables restored in {ms:.0f} ms ({n} topics)",
                 ms=(time.monotonic() - began) * 1000, n=len(self.server.routes.topic_queue_table))

    def _precopied_file(self, descriptor):
        """Version 3: the first copy is a snapshot file (its descriptor), restored while the old process still
        serves; kept open for this process's read workers, which restore it too."""
        from namesrv.routes.snapshot import restore_snapshot
        from namesrv.storage.snapshotfile import read_whole
        began = time.monotonic()
        baseline = os.fdopen(descriptor, "rb")
        try:
            restore_snapshot(self.server.routes, read_whole(baseline.fileno()))
        except BaseException:
            baseline.close()
            raise
        self._baseline = baseline
        gc.freeze()
        log.info("takeover: first copy of the tables restored from its file in {ms:.0f} ms ({n} topics)",
                 ms=(time.monotonic() - began) * 1000, n=len(self.server.routes.topic_queue_table))

    def _adopt_state(self, state):
        from namesrv.routes.snapshot import apply_snapshot_delta, restore_snapshot
        baseline, self._baseline = self._baseline, None
        if state.delta is not None:
            began = time.monotonic()
            changed = apply_snapshot_delta(self.server.routes, state.delta)   # what changed since the first copy
            log.info("takeover: changes since the first copy applied in {ms:.0f} ms",
                     ms=(time.monotonic() - began) * 1000)
            pool = self.server.read_workers
            if baseline is not None and pool is not None:
                # the new workers restore the first copy's file and get what changed since: the last copy's
                # topics, and whatever changes until they start (after the connections have moved here)
                since = self.server.routes.track_topic_changes(ChangedTopics(changed))
                pool.baseline, pool.since_baseline, baseline = baseline, since, None
        else:
            restore_snapshot(self.server.routes, state.routes)   # the old process's tables, brokers as restored
        if baseline is not None:
            baseline.close()
        self.server.routes.unchanged.adopt(state.registrations)
        self.server.kv.load()                                # flushed by the old process before it answered
        log.info("takeover: tables taken over ({n} topics)", n=len(self.server.routes.topic_queue_table))
        return state.listening

    def _adopt(self, descriptor, peer, unread):
        adopt_connection(self.reactor, self.server.factory, descriptor, peer, unread)

    def serving(self):
        """The service listens: tell the old process (which then sends its connections), or open our
        control socket at once. Returns a Deferred that fires once the connections have moved here
        (or the move ended early), None when nothing was taken over."""
        if self.client is None:
            self._listen_control()
            return None
        moved = defer.Deferred()
        self.client.ready()
        self.client.done.addCallback(self._taken_over).addErrback(
            lambda failure: log.warn("takeover ended early: {why}", why=failure.getErrorMessage()))
        self.client.done.addBoth(lambda _: self._listen_control())
        self.client.done.addBoth(lambda _: moved.callback(None))
        return moved

    def _taken_over(self, counts):
        moved, closed = counts
        log.info("takeover complete: {m} connections moved here, {c} closed by the old process", m=moved, c=closed)

    def _listen_control(self):
        if self.path is None or self.control_port is not None or not self.server.running:
            return
        if os.path.exists(self.path):
            if answers(self.address):
                log.warn("takeover control socket {path} belongs to another live process of this instance; "
                         "this one cannot be taken over", path=self.path)
                return
            os.unlink(self.path)
        self.handing = HandingFactory(self, self.reactor)
        self.control_port = self.reactor.listenUNIX(self.address, self.handing, mode=0o600)

    def stop(self):
        """No more takeover: the control socket closes (a takeover under way keeps its conversation)."""
        if self.control_port is not None:
            port, self.control_port = self.control_port, None
            return port.stopListening()

    def stop_serving(self):
        """The service stops: the control socket closes and a takeover under way ends there (HandingSession.stop)."""
        if self.handing is not None:
            self.handing.stop()
        return self.stop()

    # -- the old process (HandingSession's server) -----------------------------------------------
    def precopy(self):
        """The tables as a snapshot, taken while everything is still served; every topic that changes
        from now on is tracked, for ``changes()``."""
        from namesrv.routes.snapshot import encode_snapshot
        self.busy = True
        self.server.routes.finish_restore()
        self.server.housekeeping.flush()
        self._tracker = self.server.routes.track_topic_changes(ChangedTopics())
        began = time.monotonic()
        data = encode_snapshot(self.server.routes, self.identity.as_record())
        log.info("takeover: first copy of the tables encoded in {ms:.0f} ms ({kib} KiB), still serving",
                 ms=(time.monotonic() - began) * 1000, kib=len(data) // 1024)
        self._drain_began = None
        return data

    def precopy_file(self):
        """Version 3: the tables as a snapshot file, written a chunk per reactor turn while everything is still
        served (the old process never stops for it); a Deferred firing with an open descriptor of it (its
        name is gone by then). Every topic that changes from the moment it stands for is tracked, for
        ``changes()``."""
        from namesrv.routes.slicedsnapshot import write_steps
        self.busy = True
        routes = self.server.routes
        routes.finish_restore()   # a snapshot of our own still being restored: the copy is of whole tables
        self.server.housekeeping.flush()
        began = time.monotonic()
        pieces = []

        def write():
            pieces[:] = yield from write_steps(routes, self.identity.as_record())
            if self._writing is not None:   # the moment the file stands for: track from here, in this turn
                self._tracker = routes.track_topic_changes(ChangedTopics())

        writing = self._writing = self.server.cooperate(write()).whenDone()

        def written(descriptor):
            log.info("takeover: first copy of the tables written in {ms:.0f} ms ({kib} KiB), still serving",
                     ms=(time.monotonic() - began) * 1000, kib=sum(map(len, pieces)) // 1024)
            return descriptor

        def saved(ignored):
            return threads.deferToThreadPool(self.reactor, self.reactor.getThreadPool(), anonymous_file, pieces)

        writing.addCallback(saved)
        writing.addCallback(written)
        return writing

    def changes(self):
        """The fields of the last copy, once drained (nothing changes any more): what changed since
        ``precopy()`` ({"delta": bytes}, or {"routes": a whole snapshot} if the tables were replaced
        meanwhile), and the registrations an unchanged re-registration may skip ({"registrations": rows})."""
        fields = dict([self._tables_since_precopy()])
        fields["registrations"] = self.server.routes.unchanged.export()
        return fields

    def _tables_since_precopy(self):
        from namesrv.routes.snapshot import encode_snapshot_delta
        tracker = self._stop_tracking()
        if tracker is None or tracker.full:
            return "routes", self.tables()
        began = time.monotonic()
        self.server.kv.flush_sync()
        self.server.housekeeping.flush()   # brokers whose connections closed are not handed on
        data = encode_snapshot_delta(self.server.routes, tracker)
        log.info("takeover: drained in {drain:.0f} ms; {n} topics changed since the first copy, sent in {ms:.0f} ms",
                 drain=(began - (self._drain_began or began)) * 1000, n=len(tracker),
                 ms=(time.monotonic() - began) * 1000)
        return "delta", data

    def abandon(self, why):
        """The new process left before it restored the first copy: nothing was stopped, just stop tracking."""
        log.warn("takeover abandoned ({why})", why=why)
        self._writing = None   # a first copy still being written starts no tracker
        self._stop_tracking()
        self.busy = False

    def _stop_tracking(self):
        """The tracker of the changes since the first copy (None if none), no longer fed."""
        tracker, self._tracker = self._tracker, None
        if tracker is not None:
            self.server.routes.untrack_topic_changes(tracker)
        return tracker

    def begin(self):
        self._drain_began = time.monotonic()
        self.busy = True
        self.stop()   # one takeover at a time; the new process listens here once it is done
        self.drain.begin()

    def settled(self):
        return self.drain.settled()

    def listen_fd(self):
        return self.server.listen_socket.fileno()

    def tables(self):
        from namesrv.routes.snapshot import encode_snapshot
        self.server.routes.finish_restore()
        self.server.kv.flush_sync()
        self.server.housekeeping.flush()   # brokers whose connections closed are not handed on
        return encode_snapshot(self.server.routes, self.identity.as_record())

    def detach_clients(self):
        return self.drain.detach_clients()

    def detach_brokers(self):
        return self.drain.detach_brokers()

    def release(self, sockets):
        self.drain.release(sockets)

    def resume(self, why):
        log.warn("takeover abandoned ({why}): serving again", why=why)
        self._stop_tracking()
        self.busy = False
        self.handed_over = False
        self.drain.resume()
        self._listen_control()

    def finished(self, moved, closed):
        self.handed_over = True

    def exit(self):
        log.info("handed over: exiting")
        self.reactor.callLater(0, self._stop_reactor)

    def _stop_reactor(self):
        try:
            self.reactor.stop()
        except ReactorNotRunning:   # a SIGTERM stopped it meanwhile
            pass
