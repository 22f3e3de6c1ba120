"""The interfaces that hold the server together.

Processors are found as plugins: a dropin in ``twisted/plugins/`` provides an
``IRequestProcessorFactory``; at start the service builds one processor per factory with
the shared ``NamesrvContext`` and the registry maps each declared request code to it.
"""

from zope.interface import Attribute, Interface


class IRemotingConnection(Interface):
    """One client connection, as processors and the route tables see it.

    The route tables keep the connection a broker registered on (Java keeps the Netty
    channel) so that closing it, or expiring the broker, can find the other.
    """

    peer = Attribute("The peer's address as 'ip:port'.")
    connection_id = Attribute("A number unique to this connection within the process.")
    closing = Attribute("True once the connection is closing or closed: nothing it still sends is worth "
                        "acting on (the scheduler drops its queued heartbeats).")

    def close():
        """Close the connection (used when a broker expires)."""


class IRequestProcessor(Interface):
    """Answers the request codes it declares."""

    name = Attribute("Short name, used in logs and in duplicate-code errors.")
    codes = Attribute("frozenset of the request codes this processor answers.")

    def reject_request(request):
        """``None`` to accept; or ``(response_code, remark)`` to refuse it for now (busy, disabled)."""

    def process_request(request, connection):
        """Answer ``request`` (a RemotingCommand) from ``connection`` (an IRemotingConnection).

        Return a response RemotingCommand, ``None`` for no answer, or a Deferred of either.
        An exception (or failed Deferred) becomes a SYSTEM_ERROR answer; a
        ``HeaderFieldError`` keeps its message as the remark.
        """


class IReplicableProcessor(IRequestProcessor):
    """A processor some of whose answers a read worker may give from its replica.

    A replica holds the route tables, the ORDER_TOPIC_CONFIG KV namespace and the properties
    as of one generation, and the context's ``started``; a code is replicable when its answer
    depends on nothing else and changes nothing. Read workers build the processor through the
    same plugin factory (by its ``name``) and answer these codes themselves.
    """

    replicable_codes = Attribute("frozenset of the codes (a subset of ``codes``) a replica may answer.")


class IRequestProcessorFactory(Interface):
    """What a dropin provides: builds a processor for one running server."""

    name = Attribute("Short name of the processor it builds.")
    # Optional: ``port``, the listening port whose registry the processor joins: "namesrv" (the
    # default) or "controller" (the controller's own port; its context is a ControllerContext).

    def build(context):
        """Return an IRequestProcessor bound to ``context`` (a NamesrvContext)."""


class IRequestPolicy(Interface):
    """A check every request passes before its processor sees it (ACL, per-class limits).

    Policies run in order; the first refusal answers the request.
    """

    def check(request, connection):
        """``None`` to let the request through, or ``(response_code, remark)`` to refuse it."""

    def done(request, connection, response_code):
        """Called once for every request ``check`` let through, when its answer is ready."""

    # Optional: ``allows_cached_answer(code)`` -> True when an answer to ``code`` may be replayed
    # by the AnswerCache without calling ``check`` again. A policy without it turns caching off.


class IRequestObserver(Interface):
    """Sees every answered request (metrics, event log)."""

    def record_request(code, response_code, micros, peer):
        """``response_code`` is -1 when a oneway request got no answer."""

    # Optional: ``record_requests(code, response_code, count, micros, peer)``, ``count`` requests
    # at once (answers replayed by the AnswerCache); without it record_request is called ``count`` times.


class IEventLog(IRequestObserver):
    """The structured event log (``namesrv/observe/eventlog.py``) as the rest of the server uses it.

    Two implementations: ``EventLog`` writes JSON lines for the Spark reports, ``NullEventLog``
    drops everything (event logging switched off, tests, load generators). Java has no such
    log. Every method is safe to call on the reactor thread: none blocks, none raises for a
    bad event.
    """

    server_id = Attribute("'host:port' written into every event; the service sets it once the port is bound.")
    written = Attribute("Lines written to the file so far.")
    dropped = Attribute("Events lost so far (queue full, unencodable, write failed).")

    def emit(event, **fields):
        """Log ``event`` (a short name such as ``broker_expired``) with ``fields``; tell the listeners."""

    def record_requests(code, response_code, count, micros, peer):
        """``count`` requests at once, each taking ``micros`` (answers replayed by the AnswerCache)."""

    def add_listener(callback):
        """Call ``callback(event, fields)`` on every ``emit`` (metrics count expirations this way)."""

    def flush_aggregates(force=False):
        """Write the finished second's aggregated ``request`` events (``force``: the running one too)."""

    def start():
        """Begin writing (the service calls it when it starts)."""

    def stop():
        """Write what is pending and stop (the service calls it when it stops)."""


class IReplicatedLog(Interface):
    """Where the controller's events go to be applied on every controller (namesrv/controller/replication).

    The controller decides on the leader from the state as it is, proposes the events, and
    answers once they are applied. Implementations: one node with a file, or Raft.
    """

    self_id = Attribute("This controller's id in controllerDLegerPeers (n0, n1, ...).")
    group = Attribute("controllerDLegerGroup.")
    peers = Attribute("{id: 'host:port'}: every controller's address for brokers and admin tools.")
    is_leader = Attribute("True while this controller is the leader, has applied every earlier term's entries, "
                          "and is sure no newer leader exists (its lease): only then does it decide or read.")
    leader_id = Attribute("The id of the leader as last known, or None.")
    role_listeners = Attribute("Callbacks called with True/False when this controller starts/stops leading.")
    applies_at_once = Attribute("True when ``propose`` applies the events before it returns (only their "
                                "durability is still to come): the controller then decides the next request "
                                "at once. False when they are applied once committed (Raft).")

    def start():
        """Restore what is persisted and join the others."""

    def stop():
        """Leave; what was applied stays persisted."""

    def propose(events):
        """A Deferred firing once ``events`` (a list of event dicts) are applied here, or failing with
        NotLeader when they cannot be committed by this controller."""

    def status():
        """A dict for the status page and metrics: mode, role, term, applied, peers, leaderId, connectedPeers."""
