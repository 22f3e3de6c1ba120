"""What every processor of one running server shares."""

from dataclasses import dataclass, field
from typing import Any

from namesrv.timing.scheduler import TurnScheduler
from namesrv.observe.eventlog import NullEventLog


@dataclass
class NamesrvContext:
    """The shared state of one server.

    - ``config``: the NamesrvConfig (live: processors read it on every request);
    - ``routes``: the RouteInfoManager (the five route tables);
    - ``kv``: the KVConfigManager;
    - ``reactor``: for callLater / deferToThread;
    - ``events``: the structured event log (an IEventLog);
    - ``server_id``: ``host:port`` of this server, for the event log;
    - ``started``: when the server started (``reactor.seconds()``), for the start-up grace;
      a read worker's replica carries the main process's;
    - ``scheduler``: the process's one TurnScheduler (namesrv/timing/scheduler.py), for work
      that runs over several reactor turns (made from ``config`` and ``reactor`` when not given).
    """

    config: Any
    routes: Any
    kv: Any
    reactor: Any
    events: Any = field(default_factory=NullEventLog)
    server_id: str = "127.0.0.1:9876"
    started: Any = None
    scheduler: Any = None

    def __post_init__(self):
        if self.started is None:
            self.started = self.reactor.seconds()
        if self.scheduler is None:
            # the budget is read through the context: a read worker's replica may replace its config
            self.scheduler = TurnScheduler(self.reactor, lambda: max(0, self.config.schedulerTurnBudgetMillis) / 1000.0)
