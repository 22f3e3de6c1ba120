"""A refusal by a trust policy: NO_PERMISSION with its remark, told to the metrics every time, and to the log
and the event log once per peer and reason a minute (a client retrying in a loop must not fill the disk)."""

from twisted.logger import Logger

from namesrv.observe.eventlog import NullEventLog
from namesrv.protocol.codes import ResponseCode, request_name
from namesrv.security.addresses import peer_host

log = Logger()

#: a refusal of one kind to one peer is logged (and written to the event log) at most once per window
NOTE_WINDOW = 60.0
#: (peer, reason) pairs remembered at most; past it the oldest half is forgotten (a storm of sources)
MAX_NOTED = 10000


class RefusalNotes:
    """Says whether a refusal of ``reason`` to ``host`` is news: the first in ``window`` seconds."""

    def __init__(self, clock, window=NOTE_WINDOW, limit=MAX_NOTED):
        self.clock = clock
        self.window = window
        self.limit = limit
        self._last = {}          # (host, reason) -> [time noted, refusals since]

    def news(self, host, reason):
        """``None`` when it was noted less than a window ago; else how many went unsaid since."""
        now = self.clock.seconds()
        key = (host, reason)
        entry = self._last.get(key)
        if entry is not None and now - entry[0] < self.window:
            entry[1] += 1
            return None
        if entry is None and len(self._last) >= self.limit:
            for old in list(self._last)[:self.limit // 2]:
                del self._last[old]
        unsaid = entry[1] if entry is not None else 0
        self._last[key] = [now, 0]
        return unsaid


class Refusals:
    """``refuse(...)`` -> ``(NO_PERMISSION, remark)``, after telling the listeners, the log and the events."""

    def __init__(self, listeners=(), events=None, clock=None, port="namesrv"):
        self.listeners = list(listeners)
        self.events = events if events is not None else NullEventLog()
        if clock is None:
            from twisted.internet import reactor as clock   # the global reactor's clock, unless one is given
        self.notes = RefusalNotes(clock)
        self.port = port
        self.counts = {}          # reason -> refusals so far

    def refuse(self, request, connection, request_class, reason, account, remark):
        self.counts[reason] = self.counts.get(reason, 0) + 1
        for listener in self.listeners:
            listener.rejected(request_class, reason)
        host = peer_host(connection.peer)
        unsaid = self.notes.news(host, reason)
        if unsaid is not None:
            more = " (and %d more of this kind from %s in the last minute)" % (unsaid, host) if unsaid else ""
            log.warn("refused {code_name} ({code}) from {peer} on the {port} port: {remark}{more}",
                     code_name=request_name(request.code), code=request.code, peer=connection.peer, port=self.port,
                     remark=remark, more=more)
            self.events.emit("request_refused", peer=connection.peer, code=request.code, port=self.port,
                             request_class=request_class, reason=reason, account=account, unsaid=unsaid)
        return (ResponseCode.NO_PERMISSION, remark)
