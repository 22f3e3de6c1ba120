"""The request path, built in one place for every port.

From bytes to answer, on the name server's port (9876) in the main process::

    socket bytes
      namesrv/server/factory.py       RemotingServerFactory: one RemotingProtocol per connection, the
                                      connection limit, broker housekeeping when one closes
      namesrv/protocol/remoting.py    RemotingProtocol: framing.py cuts frames, codec.py decodes the header;
                                      answercache.py replays a repeated route read's answer at once
      --- the chain this module builds ---
      namesrv/dispatch/inflight.py    InFlightDispatcher: counts the answers still to come (a takeover waits)
      namesrv/dispatch/isolation.py   PriorityDispatcher: route reads now, the other classes in bounded turns
                                      of the process's scheduler (namesrv/timing/scheduler.py)
      namesrv/dispatch/registry.py    ProcessorRegistry: runs the policies, then the processor of the code;
                                      unknown codes, refusals and failures become answers here, observers
                                      (metrics, event log) hear of every answer
        policies, in order:
          namesrv/security/trust.py   TrustPolicy (aclEnable): the request's class (classes.py) and
                                      resources, signed by an account a policy allows, from an allowed source
          namesrv/security/acl.py     BrokerAllowListPolicy: broker-control only from brokerAllowedAddresses
          namesrv/dispatch/isolation.py  ClassLimitPolicy: at most so many in flight per class (SYSTEM_BUSY)
      processors/                     default.py (Java's DefaultRequestProcessor: registration, KV, topic
                                      lists, configuration), client.py (ClientRequestProcessor: routes)
      namesrv/routes/, namesrv/kvconfig/   the tables
    answer: RemotingCommand → codec.py → RemotingProtocol.send

On a read worker (namesrv/readworkers/worker/) the connection is a WorkerConnection taking turns with the
others (turns.py); its front, ``WaitForFresh`` then ``WorkerDispatcher``, answers a route read from the
replica when it is fresh (through the same policies and registry, built here by ``worker_chain``), and
otherwise forwards the frame, or hands the connection to the main process.

On the controller's port (namesrv/controller/service.py) the same policies and registry, with the
controller's processor (namesrv/controller/processor.py): ``controller_chain``.

Nothing here is assigned after it is built: a chain is made whole from its parts, and the parts hold
each other from their constructors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Optional, Protocol, Sequence

from twisted.internet.interfaces import IReactorTime
from zope.interface.verify import verifyObject

from namesrv.dispatch.classes import RequestClassifier
from namesrv.dispatch.inflight import InFlightDispatcher
from namesrv.dispatch.isolation import ClassLimitPolicy, GuardListener, PriorityDispatcher, RejectionListener
from namesrv.dispatch.registry import ProcessorRegistry
from namesrv.interfaces import IDispatcher, IEventLog, IRequestObserver, IRequestPolicy, IRequestProcessor
from namesrv.security.acl import AclStore, BrokerAllowListPolicy
from namesrv.security.refused import Refusals
from namesrv.security.trust import TrustPolicy
from namesrv.timing.scheduler import TurnScheduler

if TYPE_CHECKING:   # types only
    from namesrv.config.live import NamesrvConfig


class EventSink(Protocol):
    """Where the policies' refusals are told: the event log, or a read worker's RequestCounts (which reports
    them to the main process)."""

    def emit(self, event: str, **fields: object) -> None: ...


class DispatchChain:
    """One port's chain: ``entry`` is what its connections dispatch to; the others are its links, for
    whoever needs one (the takeover counts ``inflight``; the read workers hold ``priority``'s queues;
    metrics read ``classifier`` and ``limits``)."""

    def __init__(self, entry: IDispatcher, registry: ProcessorRegistry, classifier: RequestClassifier,
                 policies: Iterable[IRequestPolicy], limits: Optional[ClassLimitPolicy] = None,
                 priority: Optional[PriorityDispatcher] = None, inflight: Optional[InFlightDispatcher] = None) -> None:
        verifyObject(IDispatcher, entry)
        self.entry = entry
        self.registry = registry
        self.classifier = classifier
        self.policies = tuple(policies)
        self.limits = limits
        self.priority = priority
        self.inflight = inflight

    def stop(self) -> None:
        """Forget queued work (shutdown)."""
        if self.priority is not None:
            self.priority.stop()


def trust_policies(config: NamesrvConfig, classifier: RequestClassifier, acl_store: Optional[AclStore],
                   refusals: Refusals) -> list[IRequestPolicy]:
    """Who may ask what: the ACL check (when ``acl_store``, i.e. aclEnable) and the broker address list."""
    policies: list[IRequestPolicy] = []
    if acl_store is not None:
        policies.append(TrustPolicy(acl_store, classifier, config, refusals))
    policies.append(BrokerAllowListPolicy(classifier, config, refusals))
    return policies


def namesrv_chain(processors: Sequence[IRequestProcessor], config: NamesrvConfig, scheduler: TurnScheduler,
                  events: IEventLog, reactor: IReactorTime, acl_store: Optional[AclStore] = None,
                  listeners: Sequence[GuardListener] = (), observers: Iterable[IRequestObserver] = ()) -> DispatchChain:
    """The main process's chain on the name server's port: in-flight, priority, policies, registry."""
    classifier = RequestClassifier.for_processors(processors)
    limits = ClassLimitPolicy(classifier, config, listeners)
    refusals = Refusals(listeners, events, reactor, port="namesrv")
    policies = trust_policies(config, classifier, acl_store, refusals) + [limits]
    registry = ProcessorRegistry(processors, events=events, policies=policies, observers=observers)
    priority = PriorityDispatcher(registry, classifier, limits, config, scheduler, listeners=listeners)
    inflight = InFlightDispatcher(priority)
    return DispatchChain(inflight, registry, classifier, policies, limits=limits, priority=priority,
                         inflight=inflight)


def worker_chain(processors: Sequence[IRequestProcessor], config: NamesrvConfig, counts: IRequestObserver,
                 front: Callable[[ProcessorRegistry], IDispatcher], reactor: IReactorTime,
                 acl_store: Optional[AclStore] = None, listeners: Sequence[RejectionListener] = (),
                 events: Optional[EventSink] = None) -> DispatchChain:
    """A read worker's chain: ``front(registry)`` (its freshness and forwarding dispatchers, built by the
    worker) in front of the same policies as the main process's, checked against the replica's copy of
    the configuration, and the registry of the replica's processors. Everything the worker does not
    answer itself is checked again, whole, by the main process."""
    classifier = RequestClassifier.for_processors(processors)
    refusals = Refusals(listeners, events, reactor, port="namesrv")
    policies = trust_policies(config, classifier, acl_store, refusals)
    registry = ProcessorRegistry(processors, events=counts, policies=policies)
    return DispatchChain(front(registry), registry, classifier, policies)


def controller_chain(processors: Sequence[IRequestProcessor], config: NamesrvConfig, events: IEventLog,
                     reactor: IReactorTime, acl_store: Optional[AclStore] = None,
                     listeners: Sequence[GuardListener] = ()) -> DispatchChain:
    """The controller port's chain: the same policies (the request classes say which of the controller's
    codes are broker-control, admin reads or writes) and per-class limits, then its registry."""
    classifier = RequestClassifier.for_processors(processors)
    limits = ClassLimitPolicy(classifier, config, listeners)
    refusals = Refusals(listeners, events, reactor, port="controller")
    policies = trust_policies(config, classifier, acl_store, refusals) + [limits]
    registry = ProcessorRegistry(processors, events=events, policies=policies)
    return DispatchChain(registry, registry, classifier, policies, limits=limits)
