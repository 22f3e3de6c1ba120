"""A read worker's copy of what route reads are answered from, and how fresh it is.

**The invariant.** A read the worker answers from its replica (a route, the cluster info) gets what the main
process answered at one instant S, its tables, ORDER_TOPIC_CONFIG and properties as they stood then, where S is
no earlier than the last change the main process had acknowledged when the read arrived. So no read observes a
publication partly applied: a route answer and the cluster info given beside it are answers the main process
gave at one instant, and a read that follows an acknowledged write sees it. Why it holds:

- the main process changes its tables only by whole operations on its reactor thread, and bumps the shared
  counter (channel/generation.py) before the first answer that follows a change (main/publisher.py, ``settle``):
  a read that arrives after an acknowledgement finds the counter past the replica's generation unless the
  replica holds that change (``fresh``, ``holds``);
- a publication of several parts is applied a part per turn, and from its first part to its end
  (``in_publication``) nothing is answered here, quiet parts included: the main process applied that change
  whole, so its reads never saw half of it. A quiet publication's parts (changes nobody was told of, the
  counter not bumped) are held unapplied until it ends whole (``staging``, worker/staging.py): until then the
  replica is the state it was, which the main process could still answer, so it goes on answering;
- those parts are encoded a turn apart in the main process: a publication during which anything a read could
  see changed ends not ``whole``, and the replica, whose topics then come from different moments, answers
  nothing (``mixed``) until a whole publication has followed (the next one carries every topic changed since
  this one began, so it leaves one state again);
- a publication of one message is encoded in one turn and applied in one step: always whole.

tests/readworkers/test_interleavings.py explores interleavings of those steps against every state the main
process went through, and fails on an apply that breaks any of them.
"""

from zope.interface import implementer

from namesrv.config import NamesrvConfig
from namesrv.context import NamesrvContext
from namesrv.dispatch.chain import worker_chain
from namesrv.dispatch.registry import load_processor_factories
from namesrv.interfaces import IBulkRequestObserver
from namesrv.protocol.answercache import AnswerCache
from namesrv.readworkers.channel.delta import apply_brokers, apply_topics
from namesrv.readworkers.worker.connections import WorkerDispatcher
from namesrv.readworkers.worker.freshness import WAIT, WaitForFresh
from namesrv.readworkers.worker.staging import QuietStaging
from namesrv.routes import RouteInfoManager
from namesrv.routes.model import ORDER_TOPIC_CONFIG
from namesrv.timing.clock import MonotonicClock


class ReplicaKV:
    """The one KV namespace route answers read (ORDER_TOPIC_CONFIG), read-only."""

    def __init__(self, order_topic_config):
        self._table = {ORDER_TOPIC_CONFIG: dict(order_topic_config)} if order_topic_config is not None else {}

    def get(self, namespace, key):
        return self._table.get(namespace, {}).get(key)

    def kv_table_body(self, namespace):
        return None   # only used by REGISTER_BROKER, which workers forward


#: ``request_refused`` events kept between two reports at most (each is already once per peer and reason a
#: minute); past it they are counted, not kept
MAX_REFUSED_EVENTS = 100


@implementer(IBulkRequestObserver)
class RequestCounts:
    """An observer summing answers per (code, response code) until ``take()``, and the event sink of the
    worker's policies: its ``request_refused`` events wait for the next report (``take_refused()``)."""

    def __init__(self):
        self._counts = {}
        self._refused = []

    def record_request(self, code, response_code, micros, peer):
        self.record_requests(code, response_code, 1, micros, peer)

    def record_requests(self, code, response_code, count, micros, peer):
        entry = self._counts.get((code, response_code))
        if entry is None:
            self._counts[(code, response_code)] = [count, micros]
        else:
            entry[0] += count
            entry[1] += micros

    def emit(self, event, **fields):
        if event == "request_refused" and len(self._refused) < MAX_REFUSED_EVENTS:
            self._refused.append(fields)

    def take_refused(self):
        refused, self._refused = self._refused, []
        return refused

    def take(self):
        counts, self._counts = self._counts, {}
        return counts


class FreshAnswerCache(AnswerCache):
    """The answer cache, consulted only while the replica is fresh (a stale one forwards),
    and only when the main process's ``answerCacheEnable`` says so."""

    def __init__(self, registry, replica, **kwargs):
        AnswerCache.__init__(self, registry, **kwargs)
        self.replica = replica

    def usable(self):
        return self.replica.fresh()

    def remember(self, frame, request, response, peer=None):
        config = self.replica.config
        if not config.answerCacheEnable:
            return False
        if self.max_entries != config.answerCacheMaxEntries or self.max_bytes != config.answerCacheMaxBytes:
            self.set_limits(config.answerCacheMaxEntries, config.answerCacheMaxBytes)
        return AnswerCache.remember(self, frame, request, response, peer)


class Replica:
    """Route tables, ORDER_TOPIC_CONFIG and properties as of one generation of the main process.

    ``fresh()`` is true while the shared counter still holds that generation and no
    publication is half applied: only then may a read be answered here. Until a full
    copy has been applied (``complete``), nothing is answered, nor while ``held`` (the
    worker's ACL file, ``acl``, could not be read yet: the main process checks everything).

    Its request chain (namesrv/dispatch/chain.py ``worker_chain``): ``dispatcher``, a read waiting a
    moment for a fresh replica (``fresh_reads``), then answered here or sent to the main process
    (WorkerDispatcher), through the same policies as the main process's (the ACL check, against
    ``acl``; its refusals counted in ``rejections``).
    """

    def __init__(self, shared_generation, reactor, processor_names=("route",), plugin_package=None, acl=None,
                 rejections=None, fresh_wait=WAIT):
        self.shared = shared_generation
        self.generation = None
        self.local_codes = frozenset()
        self.loading = False
        self.complete = False
        self._reset_seen = False
        self._config_text = None
        # its topics' maps are only replaced whole by parts: topics with the same QueueData share one
        routes = RouteInfoManager(clock=MonotonicClock(), share_queue_maps=True)
        self.context = NamesrvContext(config=NamesrvConfig(), routes=routes, kv=ReplicaKV(None), reactor=reactor)
        factories = {factory.name: factory for factory in load_processor_factories(plugin_package)}
        missing = sorted(set(processor_names) - set(factories))
        if missing:
            raise ValueError("no processor plugin named %s for a replica" % ", ".join(missing))
        #: what arrives from the main process goes through this before ``apply`` (staging.py)
        self.staging = QuietStaging()
        self.counts = RequestCounts()
        self.acl = acl
        #: called after each message applied (the replica may be fresh again: freshness.py)
        self.applied_listeners = []
        self.fresh_reads = WaitForFresh(WorkerDispatcher(self), self, reactor, wait=fresh_wait)
        self.chain = worker_chain([factories[name].build(self.context) for name in processor_names], self.config,
                                  self.counts, lambda registry: self.fresh_reads, reactor,
                                  acl_store=acl.store if acl is not None else None,
                                  listeners=[rejections] if rejections is not None else [], events=self.counts)
        self.registry = self.chain.registry
        self.dispatcher = self.chain.entry
        self.answer_cache = FreshAnswerCache(self.registry, self)
        if acl is not None:
            acl.store.reload_listeners.append(self.answer_cache.invalidate)

    @property
    def held(self):
        """The worker's ACL file cannot be read now: every request goes to the main process."""
        return self.acl is not None and self.acl.unreadable

    @property
    def config(self):
        return self.context.config

    #: the last publication's topics come from different moments of the main process (it was not ``whole``)
    mixed = False

    def fresh(self):
        return (not self.loading and not self.in_publication and not self.mixed and not self.held
                and self.generation is not None and self.shared.read() == self.generation)

    def holds(self, needed):
        """Has every change acknowledged while the shared counter read ``needed`` or less, and no
        publication half applied: a read that arrived when the counter read ``needed`` may be answered
        from this, even if the main process has acknowledged more since (the answer is the state at a
        moment between the read's arrival and its answer). ``fresh()`` asks for the newest generation,
        which a fleet registering back to back moves again before each publication is applied."""
        generation = self.generation
        return (not self.loading and not self.in_publication and not self.mixed and not self.held
                and generation is not None and needed <= generation <= self.shared.read())

    def apply(self, message):
        """Apply one message of a publication (feed.publication). Returns False when the replica
        cannot be used until a full copy arrives; raises (and forgets everything) if it is malformed."""
        try:
            if message["kind"] == "topics":
                self._apply_part(message)
                return True
            if message.get("topics") is not None:   # a small publication in one message: its part first
                self._apply_part(message["topics"])
            return self._finish(message)
        except Exception:
            self.complete = False
            self.generation = None
            self.loading = self.in_publication = False
            raise
        finally:
            for listener in self.applied_listeners:
                listener()

    #: parts of a publication have come and its last message has not: staying stale (or quiet) a while
    in_publication = False

    def _apply_part(self, message):
        # A quiet part carries changes the shared counter was not bumped for (nobody has been told of them):
        # the counter stays, so the replica is fresh again as soon as their publication ends. Until it ends
        # nothing is answered (in_publication), quiet or not: the main process made that change whole.
        if not message.get("quiet"):
            self.loading = True
        if message["reset"]:
            self._reset_seen = True
        self.in_publication = message.get("kind") == "topics"
        apply_topics(self.context.routes, message, reset=message["reset"])

    def _finish(self, message):
        self.loading = False
        self.in_publication = False
        self.mixed = not message.get("whole", True)
        if message["full"]:
            if not self._reset_seen:
                raise ValueError("a full replica without its first part")
            self.complete = True
        self._reset_seen = False
        if not self.complete:
            self.generation = None
            return False
        config_text = message["config"]
        if config_text != self._config_text:
            # in place: the connections' factory and the scheduler hold this one object
            self.config.update(config_text, source="replica", announce=False)
            self._config_text = config_text
            self.context.routes.body_cache.set_max_bytes(self.config.routeBodyCacheMaxBytes)
        apply_brokers(self.context.routes, message)
        self.context.kv = ReplicaKV(message.get("orderTopicConfig"))
        self.context.started = float(message["started"])
        self.local_codes = frozenset(int(code) for code in message["localCodes"])
        self.generation = int(message["generation"])
        self.answer_cache.invalidate()
        return True
