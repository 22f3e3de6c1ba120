"""A quiet publication's parts wait here, unapplied, while the replica goes on answering from what it holds.

A quiet publication carries changes nobody has been told of (connections closed, brokers expired: the main
process has answered nothing since), so the shared counter was not bumped and the replica as it stands is
still an answer the main process could give (worker/replica.py's invariant). Applied as they arrive, its
parts would leave the replica half applied, answering nothing, for as long as the main process takes to
send them: a mass disconnect's hundreds of parts go out while that process forgets a thousand brokers, and
every read meanwhile went to it and waited behind that work (worst read 29-98 ms, against 14-22 ms when
replicas answered mid-publication: bench/results/many-connections.md, "The mass disconnect").

So a quiet publication's parts are held here and go to be applied, in the order they came, when it ends
whole; one that ends not whole (its topics are of different moments) is held too, until a whole end follows
(the next publication carries every topic changed since it began). Anything else (a part that is not quiet,
a publication of one message, a full copy) first lets everything held go, so the replica applies the same
messages in the same order as before, only later: from the first applied part of the held ones to their
end it answers nothing, as replica.py says, and by then the main process has sent them all.
"""

#: messages held at most (a million topics is 2,000 parts of PART_TOPICS); past it, all held go to be applied
MAX_HELD = 2000


class QuietStaging:
    """What arrives from the main process in, what the replica should apply now out (``arrived``)."""

    def __init__(self, max_held: int = MAX_HELD) -> None:
        self.max_held = max_held
        self._held: list[dict] = []

    @property
    def holding(self) -> int:
        """How many messages are held."""
        return len(self._held)

    def arrived(self, message: dict) -> list[dict]:
        """The messages to apply now, in order: none when ``message`` is held, else what was held and it."""
        held = self._held
        held.append(message)
        kind = message.get("kind")
        quiet_part = kind == "topics" and message.get("quiet")
        # the end of a quiet publication that is not whole: held too, until a whole one ends
        mixed_end = (kind == "replica" and len(held) > 1 and held[-2].get("kind") == "topics"
                     and not message.get("whole", True))
        if (quiet_part or mixed_end) and len(held) <= self.max_held:
            return []
        held, self._held = self._held, []
        return held
