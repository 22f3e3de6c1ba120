"""When the main process sends its workers a replica, and how much of its time that may take.

Changes are coalesced: one publication carries every topic changed since the previous one.
Its messages go out one per step of a job of the process's scheduler (``CONTROL``), so reads
forwarded meanwhile are answered between turns, and publishing takes at most ``PUBLISH_DUTY``
of the main process's time. The shared
counter is bumped (settled) just before the answer that follows a change leaves, so workers
stop answering from a replica that misses an acknowledged write. A large registration waits
(briefly) until the replicas are fresh, so the workers answer every read while it runs.
"""

from twisted.internet import defer
from twisted.logger import Logger
from zope.interface import implementer

from namesrv.timing.scheduler import CONTROL
from namesrv.interfaces import IAnswerObserver, ICachedAnswerPolicy, IReplicableProcessor, IWorkerCheckedPolicy
from namesrv.protocol.codes import RequestCode
from namesrv.readworkers.channel.delta import PART_TOPICS
from namesrv.readworkers.channel.feed import one_message_limit, publication

log = Logger()

#: publishing may take at most this share of the main process's time (a full copy of 100k
#: entries takes ~200 parts; during a burst of changes, reads are forwarded meanwhile)
PUBLISH_DUTY = 0.25
MIN_PUBLISH_INTERVAL = 0.005
#: after a publication that failed, a full copy is tried this much later (seconds)
RETRY_DELAY = 1.0
#: a REGISTER_BROKER body this large (about 7,000 topics) waits for fresh replicas before it runs
LARGE_REGISTRATION_BYTES = 1 << 20
#: ...for at most this long (seconds)
MAX_HOLD = 1.0


class TopicTracker(dict):
    """Topics changed since the last ``take()``, in the order they were first reported (a set that keeps
    order: the keys of a dict), and the broker names whose BrokerData or cluster membership changed
    (``brokers``); ``full`` when every topic and broker must be sent.

    The order is the tables': they report the topics of one map together, so a publication's parts carry
    whole maps, and a worker applies a mass disconnect of 100,000 topics a map at a time, not a few topics
    from each of hundreds of maps per part (bench/results/many-connections.md, fifth round)."""

    def __init__(self):
        dict.__init__(self)
        self.full = True
        self.brokers = set()
        self.brokers_full = False   # every broker's row next (the broker tables were replaced)
        self.moves = []             # (topics, their map now) of each move since the last take (routes.changes)
        self._batches = set()       # the batches of those moves (None: a move told without its batch)

    def update(self, *reported):
        """Add the topics of each collection in ``reported``; one already here keeps its place."""
        for topics in reported:
            dict.update(self, dict.fromkeys(topics))

    def moved(self, topics, qmap, batch=None):
        if len(self.moves) < 64:   # a publication's worth; past it, the topics are looked up again
            self.moves.append((list(topics), qmap))
            self._batches.add(batch)

    def take(self):
        """(full, topics) since the previous take, the topics in the order first reported, and start over
        (``take_moves``, ``take_brokers`` next)."""
        full, topics = self.full, list(self)
        self.full = False
        self.clear()
        return full, topics

    def take_moves(self, topics):
        """The moves since the previous take if they name each of ``topics`` (the last take's) exactly once:
        then nothing else changed them (a mapping, a second move) and their maps are the topics' maps now;
        else None (the topics are looked up)."""
        moves, self.moves = self.moves, []
        batches, self._batches = self._batches, set()
        if not moves or sum(len(names) for names, _ in moves) != len(topics):
            return None
        if len(batches) == 1 and None not in batches:
            return moves   # one batch of the tables' moves names each topic once (changes.moved)
        named = set()
        for names, _ in moves:
            named.update(names)
        return moves if len(named) == len(topics) else None   # no topic twice (so every one of them once)

    def take_brokers(self):
        """The broker names changed since the previous take (None: every broker's row)."""
        brokers, self.brokers = self.brokers, set()
        if self.brokers_full:
            self.brokers_full = False
            return None
        return brokers


def replicable_processors(registry):
    """The processors that declare codes a replica may answer (IReplicableProcessor): workers
    build the same ones through their plugin factories, by name."""
    return [processor for processor in registry.processors
            if IReplicableProcessor.providedBy(processor) and processor.replicable_codes]


def local_codes(registry):
    """The replicable codes every policy lets a worker answer: those that allow an answer from
    a copy (ICachedAnswerPolicy), and those a worker checks itself (IWorkerCheckedPolicy: the
    ACL check, with the same file)."""
    return [code for processor in replicable_processors(registry) for code in sorted(processor.replicable_codes)
            if registry.processor_for(code) is processor
            and all(_worker_may_answer(policy, code) for policy in registry.policies)]


def _worker_may_answer(policy, code):
    if IWorkerCheckedPolicy.providedBy(policy):
        return True
    return ICachedAnswerPolicy.providedBy(policy) and policy.allows_cached_answer(code)


@implementer(IAnswerObserver)
class Publisher:
    """Replicas of ``routes``, ``kv`` and ``config`` for ``workers()``, while ``active()``.

    A worker here is anything with ``send(message)``, ``needs_full`` (send it a full copy
    next), ``applied_generation`` and ``ended``. ``priority`` is the dispatcher that holds a
    large registration until the replicas are fresh; ``started`` the server's start time,
    which replicas answer with. It hears of every answer (IAnswerObserver) to settle the counter.
    """

    #: topics per part of a publication of several (tests make it tiny, to have publications of several parts)
    part_topics = PART_TOPICS

    def __init__(self, routes, kv, config, registry, priority, started, reactor, scheduler, workers, active):
        self.routes = routes
        self.kv = kv
        self.config = config
        self.registry = registry
        self.priority = priority
        self.started = started
        self.reactor = reactor
        self.workers = workers
        self.active = active
        self.generation = None         # the shared counter (channel.generation.SharedGeneration)
        self.tracker = None
        self.publishes = 0
        self._publish_call = None
        self._next_publish = 0.0
        self._messages = None          # the running publication's remaining messages
        self._sending = scheduler.job(self._send_all, CONTROL, "replica publication")
        self._publish_work = 0.0       # reactor time the running publication has taken so far
        self._published_generation = None
        self._changes = 0              # changes a read could see, ever (a publication's ``whole`` compares)
        self._unsettled = False        # tables changed since the shared counter was last bumped
        self._quiet = False            # the running publication carries changes the counter was not bumped for
        self._fresh_waiters = []       # (Deferred, timeout call) of large registrations held

    def start(self, generation, since_baseline=None):
        """Follow every change a read could see, bumping ``generation`` as they are answered.
        ``since_baseline``: the topics that changed since the snapshot file the first workers restore
        (pool.baseline) was taken (a tracker of the tables' changes, followed until now; ``full`` if the
        tables were replaced since); their first publication carries them, and every broker's row."""
        self.generation = generation
        self.tracker = self.routes.track_topic_changes(TopicTracker())
        self.tracker.take()   # each worker's first message is a full copy, or has what changed since its file
        if since_baseline is not None:
            self.routes.untrack_topic_changes(since_baseline)
            self.tracker.update(since_baseline)
            self.tracker.full = bool(getattr(since_baseline, "full", False))
            self.tracker.brokers_full = True
        self.routes.add_change_listener(self.changed)
        self.kv.change_listeners.append(self.changed)
        self.config.add_listener(self.changed)
        self.registry.answer_observers.add(self)
        self.priority.add_hold(self.hold_large_registration)

    def stop(self):
        """Publish nothing more (the workers stop or drain); let every held registration run."""
        self._release_all()
        if self._publish_call is not None and self._publish_call.active():
            self._publish_call.cancel()
        self._publish_call = None
        self._sending.stop()
        self._messages = None

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
        if not self.active() or self.replicas_fresh():
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
        return all(worker.applied_generation == value for worker in self.workers() if not worker.ended)

    def worker_applied(self):
        """A worker reported the generation it applied."""
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

    # -- publications ------------------------------------------------------------------------
    def changed(self, *ignored):
        """Something a read could see changed: publish soon; replicas are stale once settled."""
        if not self.active():
            return
        self._changes += 1
        self._unsettled = True
        self._schedule_publish()

    def answered(self, request, response_code, connection):
        """Just before an answer leaves: one that shows a change is never followed by a read that does not."""
        self.settle()

    def settle(self, publish=True):
        """Bump the shared counter if anything changed since the last bump: from then on workers
        forward every read until their replica catches up.

        Called just before the main process writes any answer, and when a publication begins.
        So a change is settled before its acknowledgement leaves (read-after-write holds), but
        not while the change's own work goes on: the grouping and logging of a 100,000-topic
        registration's route changes runs while the workers still answer from the replica
        (as they may: nobody has been told of the change yet). A change that fits one message goes to
        the workers right here (``_publish_now``), unless a publication is running or carries it
        (``publish`` False).
        """
        if self._unsettled or self._quiet:
            self._unsettled = self._quiet = False
            self.generation.bump()
            if publish and self._messages is None and self.active() and self._one_message():
                # the workers get the change right behind its acknowledgement, before this process runs
                # anything else (the next registration): they are stale for the time they take to apply it
                if self._publish_call is not None and self._publish_call.active():
                    self._publish_call.cancel()
                self._publish_call = None
                self._publish_now()

    def _publish_now(self):
        """A publication of one message (``_one_message``), sent and ended at once: no reactor turn between
        its message and its end, in which another change would have to wait for the next one."""
        full, topics = self.tracker.take()
        moves = self.tracker.take_moves(topics)
        brokers = self.tracker.take_brokers()
        self._published_generation = self.generation.value
        began = self.reactor.seconds()
        workers = list(self.workers())
        for message in self.publication(topics, False, brokers, moves):
            for worker in workers:
                worker.send(message)
        self._publish_work = self.reactor.seconds() - began
        self._published()

    def _schedule_publish(self):
        if self._messages is not None:
            return   # the running publication's end looks again
        if self._publish_call is None or not self._publish_call.active():
            delay = 0.0 if self._one_message() else max(0.0, self._next_publish - self.reactor.seconds())
            self._publish_call = self.reactor.callLater(delay, self._publish)

    def _one_message(self):
        """The next publication is one message (a registration's changes, feed.publication): it goes out at
        once, unpaced (about a ms of work), so the workers are fresh again before the next registration runs
        and go on answering reads instead of forwarding them to this busy process."""
        tracker = self.tracker
        return not tracker.full and 0 < len(tracker) <= one_message_limit(self.part_topics) \
            and not any(worker.needs_full for worker in self.workers())

    def local_codes(self):
        return local_codes(self.registry)

    def publication(self, topics=None, quiet=False, brokers=None, moves=None):
        """The messages of one publication (feed.publication): ``topics`` and ``brokers`` changed, or all (None);
        ``moves``: the tracker's moves naming those topics (their maps, without a look at each topic). Its parts
        are encoded a turn apart: its end says whether anything changed meanwhile (``whole``), for then the
        replica holds topics of different moments until the next publication (replica.py)."""
        began = self._changes
        return publication(self.generation.value, self.routes, self.kv, self.config, self.started,
                           self.local_codes(), topics, part_topics=self.part_topics, quiet=quiet, brokers=brokers,
                           moves=moves, unchanged=lambda: self._changes == began)

    def _publish(self):
        """Start a publication; its messages go out one per step of the scheduler (reads forwarded to
        us meanwhile are answered between turns)."""
        self._publish_call = None
        if not self.active() or self._messages is not None:
            return
        full, topics = self.tracker.take()
        moves = self.tracker.take_moves(topics)
        brokers = self.tracker.take_brokers()
        workers = list(self.workers())
        if any(worker.needs_full for worker in workers):
            full = True
        for worker in workers:
            worker.needs_full = False
        # Changes nobody has been told of yet (no answer left since: a connection closed, a broker
        # expired) go out quietly: the counter stays, so the workers answer from their replica until the
        # publication's message (or first part) arrives and again as soon as its end is applied (never in
        # between: worker/replica.py). The first answer to leave before the publication ends settles them
        # (settle), as for any change.
        quiet = self._unsettled and not full and all(worker.applied_generation == self.generation.value
                                                     for worker in workers if not worker.ended)
        if quiet:
            self._unsettled, self._quiet = False, True
        else:
            self.settle(publish=False)   # this publication carries it
        self._published_generation = self.generation.value
        self._messages = self.publication(None if full else topics, quiet, None if full else brokers,
                                          None if full else moves)
        self._publish_work = 0.0
        self._send_next()
        if self._messages is not None:
            self._sending.wake()

    def _send_all(self):
        """The job: the running publication's next message per step, to its end."""
        while self._messages is not None and self.active():
            yield
            self._send_next()

    def _send_next(self):
        """Send the publication's next message to every worker (or end it)."""
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
            for worker in self.workers():
                worker.needs_full = True
            self._next_publish = self.reactor.seconds() + RETRY_DELAY
            self._schedule_publish()
            return
        for worker in self.workers():
            worker.send(message)
        self._publish_work += self.reactor.seconds() - began

    def _published(self):
        self._quiet = False
        self.publishes += 1
        spent = self._publish_work
        self._next_publish = self.reactor.seconds() + max(MIN_PUBLISH_INTERVAL, spent / PUBLISH_DUTY - spent)
        if self.tracker or self.tracker.full or self.tracker.brokers or self.tracker.brokers_full or self._stale():
            self._schedule_publish()

    def _stale(self):
        """Did anything change since the publication that just ended began?"""
        return self._unsettled or self._published_generation != self.generation.value
