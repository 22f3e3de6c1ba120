"""Which listed name servers the address service serves: a pure model, fed probe results and a clock reading.

The rule, for each listed name server:

- it leaves the served list when a probe fails and its last answer is ``down_after`` seconds old
  or older (so one lost probe does not drop it, and a dead one is gone within ``down_after``
  plus one probe interval and timeout);
- it comes back after ``up_after`` answers in a row (a server that is still starting, or
  flapping, is not handed to clients on its first answer);
- the list is never empty because of probing: when no listed name server is served, the whole
  configured list is, as if nothing were probed (``fallback``). Clients keep the list they
  had when an answer is empty or missing, so an empty answer would only hide every server
  from the next client that starts; a static file would have served them all too.

A static address file (what operators run today) has no such rule: a dead name server stays
listed until someone edits the file, and clients keep trying it.

Times are in seconds of a monotonic clock (a wall-clock jump must not drop every server).
"""

from namesrv.addressing.namesrvlist import java_list

REMOVED = "removed"
RESTORED = "restored"


class NamesrvProbeState:
    """What the probes have said of one listed name server."""

    __slots__ = ("address", "served", "last_answer", "answers_in_row", "last_failure")

    def __init__(self, address, now):
        self.address = address
        self.served = True
        self.last_answer = now          # listed servers are presumed up at start
        self.answers_in_row = 0
        self.last_failure = None


class AddressLiveness:
    """The listed name servers in their configured order, and the list served from them."""

    def __init__(self, addresses, now, down_after, up_after):
        self.down_after = float(down_after)
        self.up_after = max(1, int(up_after))
        self.states = {}
        self.replace(addresses, now)

    # -- the configured list ----------------------------------------------------
    def replace(self, addresses, now):
        """A new configured list; servers listed before keep what the probes said of them."""
        self.states = {address: self.states.get(address) or NamesrvProbeState(address, now)
                       for address in addresses}
        self._serve()

    def restart(self, now):
        """At start: every listed server is presumed up, with ``down_after`` to prove otherwise."""
        for address in self.states:
            self.states[address] = NamesrvProbeState(address, now)
        self._serve()

    @property
    def addresses(self):
        return tuple(self.states)

    # -- probe results ----------------------------------------------------------------
    def answered(self, address, now):
        """A probe of ``address`` was answered; RESTORED when that brings it back, else None."""
        state = self.states.get(address)
        if state is None:
            return None
        state.last_answer = now
        state.answers_in_row += 1
        if state.served or state.answers_in_row < self.up_after:
            return None
        state.served = True
        self._serve()
        return RESTORED

    def failed(self, address, now, reason):
        """A probe of ``address`` failed; REMOVED when that takes it out of the list, else None."""
        state = self.states.get(address)
        if state is None:
            return None
        state.answers_in_row = 0
        state.last_failure = reason
        if not state.served or now - state.last_answer < self.down_after:
            return None
        state.served = False
        self._serve()
        return REMOVED

    # -- the answer -------------------------------------------------------------------------
    def _serve(self):
        up = tuple(address for address, state in self.states.items() if state.served)
        self.fallback = not up and bool(self.states)
        self.served = self.addresses if self.fallback else up
        self.text = java_list(self.served)

    def silent_for(self, address, now):
        """Seconds since ``address`` last answered (or since start)."""
        return now - self.states[address].last_answer
