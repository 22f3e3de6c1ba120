"""What every processor of one running server shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Protocol

from namesrv.timing.scheduler import TurnScheduler
from namesrv.observe.eventlog import NullEventLog

if TYPE_CHECKING:   # types only
    from twisted.internet.interfaces import IReactorThreads, IReactorTime

    from namesrv.config.live import NamesrvConfig
    from namesrv.interfaces import IEventLog
    from namesrv.routes.manager import RouteInfoManager

    class IServerReactor(IReactorTime, IReactorThreads):
        """The reactor a server runs on: its time and timers, and its thread pool (``deferToThreadPool``).
        A make-believe interface for the type checker only, as Twisted's own ``twisted.internet._IReactorCommon``:
        every reactor provides both, none declares this."""


class KVReader(Protocol):
    """What every context's KV config answers: the KVConfigManager (namesrv/kvconfig/store.py) in the main
    process; a read worker's replica holds only the ORDER_TOPIC_CONFIG namespace, read-only
    (namesrv/readworkers/worker/replica.py)."""

    def get(self, namespace: str, key: str) -> Optional[str]: ...

    def kv_table_body(self, namespace: str) -> Optional[bytes]: ...


@dataclass
class NamesrvContext:
    """The shared state of one server.

    - ``config``: the NamesrvConfig (live: processors read it on every request);
    - ``routes``: the RouteInfoManager (the five route tables);
    - ``kv``: the KVConfigManager (a read worker's replica: its read-only copy, see ``KVReader``);
    - ``reactor``: for callLater / deferToThread;
    - ``events``: the structured event log (an IEventLog; a NullEventLog when not given);
    - ``server_id``: ``host:port`` of this server, for the event log;
    - ``started``: when the server started (``reactor.seconds()``, now when not given), for the start-up
      grace; a read worker's replica carries the main process's;
    - ``scheduler``: the process's one TurnScheduler (namesrv/timing/scheduler.py), for work
      that runs over several reactor turns (made from ``config`` and ``reactor`` when not given).
    """

    config: NamesrvConfig
    routes: RouteInfoManager
    kv: KVReader
    reactor: IServerReactor
    events: IEventLog
    server_id: str
    started: float
    scheduler: TurnScheduler

    def __init__(self, config: NamesrvConfig, routes: RouteInfoManager, kv: KVReader, reactor: IServerReactor,
                 events: Optional[IEventLog] = None, server_id: str = "127.0.0.1:9876",
                 started: Optional[float] = None, scheduler: Optional[TurnScheduler] = None) -> None:
        self.config = config
        self.routes = routes
        self.kv = kv
        self.reactor = reactor
        self.events = events if events is not None else NullEventLog()
        self.server_id = server_id
        self.started = started if started is not None else reactor.seconds()
        # the budget is read through the context: a read worker's replica may replace its config
        self.scheduler = scheduler if scheduler is not None else TurnScheduler(
            reactor, lambda: max(0, self.config.schedulerTurnBudgetMillis) / 1000.0)
