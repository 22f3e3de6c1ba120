"""Every answer that is not SUCCESS is logged once per peer and kind, and the log is rate-limited.

Java logs most refusals nowhere (a broker whose registration is refused sees a bare
SYSTEM_ERROR, and the name server's log says nothing). Here the operator sees each
kind of refusal a peer got, with its remark (which says what was wrong and what to do),
without a client that retries in a loop filling the disk: one line per (peer host,
request code, response code), at most ``limit`` lines per ``window`` seconds overall.
"""

import time
from typing import Callable, Optional

from twisted.logger import Logger

from namesrv.protocol.codes import ResponseCode, request_name
from namesrv.protocol.command import RemotingCommand
from namesrv.protocol.ratelimited import RateLimitedWarning

#: distinct (peer, request, answer) kinds remembered before starting over (bounds memory under a storm)
MAX_REMEMBERED = 10000


class RefusalLog:
    """``note(request, response, peer)`` after each answer; logs the first of each kind."""

    def __init__(self, log: Optional[Logger] = None, limit: int = 20, window: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.log = log or Logger()
        self.warning = RateLimitedWarning(self.log, limit=limit, window=window, clock=clock)
        self.seen: set[tuple[str, int, int]] = set()

    def note(self, request: RemotingCommand, response: Optional[RemotingCommand], peer: str) -> None:
        if response is None or response.code == ResponseCode.SUCCESS:
            return
        host = peer.rpartition(":")[0] if isinstance(peer, str) and ":" in peer else peer
        kind = (host, request.code, response.code)
        if kind in self.seen:
            return
        if len(self.seen) >= MAX_REMEMBERED:
            self.seen.clear()
        self.seen.add(kind)
        self.warning.warn("{peer} got {answer} to {request}: {remark}", peer=peer, answer=_answer_name(response.code),
                          request=request_name(request.code), remark=response.remark or "")


def _answer_name(code: int) -> str:
    try:
        return ResponseCode(code).name
    except ValueError:
        return str(code)
