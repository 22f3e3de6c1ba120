"""The interfaces that hold the server together.

Processors are found as plugins: a dropin in ``twisted/plugins/`` provides an
``IRequestProcessorFactory``; at start the service builds one processor per factory with
the shared ``NamesrvContext`` and the registry maps each declared request code to it.

A request meets a chain of ``IDispatcher``s (namesrv/dispatch/chain.py builds it for every port);
the last one, the registry, runs the ``IRequestPolicy``s and the processor, and tells the
``IRequestObserver``s. What a part may do beyond its interface is a small interface of its own
(``ICachedAnswerPolicy``, ``IStoppableProcessor``...), asked with ``providedBy``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Union

from zope.interface import Attribute, Interface

if TYPE_CHECKING:   # types only
    from twisted.internet.defer import Deferred

    from namesrv.context import NamesrvContext
    from namesrv.controller.service import ControllerContext
    from namesrv.protocol.command import RemotingCommand

#: What a dispatcher or a processor gives for a request: the response, ``None`` (no answer: oneway, or
#: answered another way), or a Deferred of either
Answer = Union["RemotingCommand", None, "Deferred[Optional[RemotingCommand]]"]
#: A policy's or a processor's no: ``(response code, remark)``
Refusal = tuple[int, str]
#: ``hold(request)``: None, or a Deferred to wait for (its result is not used) before ``request`` runs
Hold = Callable[["RemotingCommand"], Optional["Deferred[Any]"]]


class IRemotingConnection(Interface):
    """One client connection, as processors and the route tables see it.

    The route tables keep the connection a broker registered on (Java keeps the Netty
    channel) so that closing it, or expiring the broker, can find the other.
    """

    peer: str = Attribute("The peer's address as 'ip:port'.")
    connection_id: int = Attribute("A number unique to this connection within the process.")
    closing: bool = Attribute("True once the connection is closing or closed: nothing it still sends is worth "
                              "acting on (the scheduler drops its queued heartbeats).")

    def close() -> None:
        """Close the connection (used when a broker expires)."""


class IDispatcher(Interface):
    """One link of the request path: answers a decoded request, itself or through the next link."""

    def dispatch(request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        """Answer ``request`` (a RemotingCommand) from ``connection`` (an IRemotingConnection): a response
        command, ``None`` (oneway, or answered another way: forwarded, handed over), or a Deferred of either."""


class IInFlightDispatcher(IDispatcher):
    """Counts the answers still to come (Deferred answers), so a takeover waits for them."""

    count: int = Attribute("Answers dispatched and not yet given.")


class IQueueingDispatcher(IDispatcher):
    """Queues some requests to run later (the isolation dispatcher), and can be told to wait."""

    def add_hold(hold: Hold) -> None:
        """``hold(request)`` -> None, or a Deferred to wait for before ``request`` (and its class) runs."""

    def pending() -> int:
        """Requests queued now."""

    def stop() -> None:
        """Forget the queued requests (shutdown): each is answered with nothing."""


class IRequestProcessor(Interface):
    """Answers the request codes it declares."""

    name: str = Attribute("Short name, used in logs and in duplicate-code errors.")
    codes: frozenset[int] = Attribute("frozenset of the request codes this processor answers.")

    def reject_request(request: RemotingCommand) -> Optional[Refusal]:
        """``None`` to accept; or ``(response_code, remark)`` to refuse it for now (busy, disabled)."""

    def process_request(request: RemotingCommand, connection: IRemotingConnection) -> Answer:
        """Answer ``request`` (a RemotingCommand) from ``connection`` (an IRemotingConnection).

        Return a response RemotingCommand, ``None`` for no answer, or a Deferred of either.
        An exception (or failed Deferred) becomes a SYSTEM_ERROR answer; a
        ``HeaderFieldError`` keeps its message as the remark.
        """


class IClassifiedProcessor(IRequestProcessor):
    """A processor whose own codes (a plugin's) belong to request classes it names; without it a
    code no table knows is ``admin_write`` (namesrv/dispatch/classes.py)."""

    code_classes: Mapping[int, str] = Attribute("{request code: request class name}.")


class IStoppableProcessor(IRequestProcessor):
    """A processor with state to flush when the server stops."""

    def stop() -> None:
        """Write what is pending (synchronously: the server is stopping)."""


class IReplicableProcessor(IRequestProcessor):
    """A processor some of whose answers a read worker may give from its replica.

    A replica holds the route tables, the ORDER_TOPIC_CONFIG KV namespace and the properties
    as of one generation, and the context's ``started``; a code is replicable when its answer
    depends on nothing else and changes nothing. Read workers build the processor through the
    same plugin factory (by its ``name``) and answer these codes themselves.
    """

    replicable_codes: frozenset[int] = Attribute("frozenset of the codes (a subset of ``codes``) a replica may answer.")


class IRequestProcessorFactory(Interface):
    """What a dropin provides: builds a processor for one running server's name-server port."""

    name: str = Attribute("Short name of the processor it builds.")

    def build(context: Union[NamesrvContext, ControllerContext]) -> IRequestProcessor:
        """Return an IRequestProcessor bound to ``context`` (a NamesrvContext; an IControllerProcessorFactory's
        is a ControllerContext)."""


class IControllerProcessorFactory(IRequestProcessorFactory):
    """A dropin whose processor joins the controller's port instead (its context is a ControllerContext)."""


class IRequestPolicy(Interface):
    """A check every request passes before its processor sees it (ACL, per-class limits).

    Policies run in order; the first refusal answers the request.
    """

    def check(request: RemotingCommand, connection: IRemotingConnection) -> Optional[Refusal]:
        """``None`` to let the request through, or ``(response_code, remark)`` to refuse it."""

    def done(request: RemotingCommand, connection: IRemotingConnection, response_code: int) -> None:
        """Called once for every request ``check`` let through, when its answer is ready."""


class ICachedAnswerPolicy(IRequestPolicy):
    """A policy that lets some answers be replayed by the AnswerCache without ``check`` running again;
    a policy that does not provide this turns caching off for every code."""

    def allows_cached_answer(code: int) -> bool:
        """True when an answer to ``code`` may be replayed without asking this policy."""


class IPeerScopedPolicy(ICachedAnswerPolicy):
    """A policy whose verdict depends on the peer's host as well as on the request's bytes (the ACL check:
    signatures, source addresses): an answer it let through is replayed only to the very same frame (but
    its opaque) from the same host, never to a frame that differs in one field (answershapes.py), which a
    signature would not cover."""


class IWorkerCheckedPolicy(IRequestPolicy):
    """A policy that read workers run themselves, the same way (the ACL check from the same file): a code
    it guards may still be answered by a worker."""


class IRequestObserver(Interface):
    """Sees every answered request (metrics, event log)."""

    def record_request(code: int, response_code: int, micros: int, peer: str) -> None:
        """``response_code`` is -1 when a oneway request got no answer."""


class IBulkRequestObserver(IRequestObserver):
    """An observer told of many answers at once (replayed by the AnswerCache, counted by a read worker);
    other observers hear of each (``record_request`` ``count`` times)."""

    def record_requests(code: int, response_code: int, count: int, micros: int, peer: str) -> None:
        """``count`` requests at once, taking ``micros`` in all."""


class IAnswerObserver(Interface):
    """Sees each request the registry answered, with its answer, just before it leaves (the status page's
    broker versions; the read workers' shared generation)."""

    def answered(request: RemotingCommand, response_code: int, connection: IRemotingConnection) -> None:
        """``response_code`` is -1 when a oneway request got no answer."""


class IReactorPasses(Interface):
    """A reactor that counts its passes (namesrv/server/eventloop.py): the process's scheduler tells a new
    pass from the count, without a timed call per pass."""

    passes = Attribute("passes over the ready sockets so far; moves after a pass's sockets were handled")


class IEventLog(IBulkRequestObserver):
    """The structured event log (``namesrv/observe/eventlog.py``) as the rest of the server uses it.

    Two implementations: ``EventLog`` writes JSON lines for the Spark reports, ``NullEventLog``
    drops everything (event logging switched off, tests, load generators). Java has no such
    log. Every method is safe to call on the reactor thread: none blocks, none raises for a
    bad event.
    """

    server_id: str = Attribute("'host:port' written into every event; the service sets it once the port is "
                               "bound.")
    written: int = Attribute("Lines written to the file so far.")
    dropped: int = Attribute("Events lost so far (queue full, unencodable, write failed).")

    def emit(event: str, **fields: object) -> None:
        """Log ``event`` (a short name such as ``broker_expired``) with ``fields``; tell the listeners."""

    def add_listener(callback: Callable[[str, dict[str, object]], object]) -> None:
        """Call ``callback(event, fields)`` on every ``emit`` (metrics count expirations this way)."""

    def flush_aggregates(force: bool = False) -> None:
        """Write the finished second's aggregated ``request`` events (``force``: the running one too)."""

    def start() -> None:
        """Begin writing (the service calls it when it starts)."""

    def stop() -> None:
        """Write what is pending and stop (the service calls it when it stops)."""


class IReplicatedLog(Interface):
    """Where the controller's events go to be applied on every controller (namesrv/controller/replication).

    The controller decides on the leader from the state as it is, proposes the events, and
    answers once they are applied. Implementations: one node with a file, or Raft.
    """

    self_id: str = Attribute("This controller's id in controllerDLegerPeers (n0, n1, ...).")
    group: str = Attribute("controllerDLegerGroup.")
    peers: Mapping[str, str] = Attribute("{id: 'host:port'}: every controller's address for brokers and admin tools.")
    is_leader: bool = Attribute("True while this controller is the leader, has applied every earlier term's entries, "
                          "and is sure no newer leader exists (its lease): only then does it decide or read.")
    leader_id: Optional[str] = Attribute("The id of the leader as last known, or None.")
    role_listeners: list[Callable[[bool], object]] = Attribute(
        "Callbacks called with True/False when this controller starts/stops leading.")
    applies_at_once: bool = Attribute("True when ``propose`` applies the events before it returns (only their "
                                "durability is still to come): the controller then decides the next request "
                                "at once. False when they are applied once committed (Raft).")

    def start() -> None:
        """Restore what is persisted and join the others."""

    def stop() -> Optional[Deferred[None]]:
        """Leave; what was applied stays persisted (None, or a Deferred firing once it is on disk)."""

    def propose(events: list[dict[str, Any]]) -> Deferred[object]:
        """A Deferred firing once ``events`` (a list of event dicts) are applied here, or failing with
        NotLeader when they cannot be committed by this controller."""

    def status() -> dict[str, object]:
        """A dict for the status page and metrics: mode, role, term, applied, peers, leaderId, connectedPeers."""
