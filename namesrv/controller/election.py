"""Which replica becomes master (Java's DefaultElectPolicy).

Among the candidates that are alive: the old master if it still is (and no one else was
designated); the designated broker if it is a candidate; otherwise the freshest replica, by
highest epoch, then highest max offset, then lowest election priority number, then lowest id
(Java's TreeSet leaves a full tie to its iteration order; we make it deterministic).
The in-sync set is tried first; all replicas only when unclean elections are allowed.
"""

from collections.abc import Callable, Collection
from typing import Optional

from namesrv.controller.liveinfo import BrokerLiveInfo


def elect(candidates_in_sync: Collection[int], all_replicas: Optional[Collection[int]], old_master: Optional[int],
          preferred: Optional[int], is_alive: Callable[[int], bool],
          live_info: Callable[[int], Optional[BrokerLiveInfo]]) -> Optional[int]:
    """The new master's id, or None. ``all_replicas`` is None unless unclean elections are on."""
    for candidates in (candidates_in_sync, all_replicas):
        if candidates is None:
            continue
        chosen = _try_elect(candidates, old_master, preferred, is_alive, live_info)
        if chosen is not None:
            return chosen
    return None


def _try_elect(candidates: Collection[int], old_master: Optional[int], preferred: Optional[int],
               is_alive: Callable[[int], bool], live_info: Callable[[int], Optional[BrokerLiveInfo]]) -> Optional[int]:
    alive = sorted(b for b in candidates if is_alive(b))
    if not alive:
        return None
    if old_master in alive and (preferred is None or preferred == old_master):
        return old_master
    if preferred is not None:
        return preferred if preferred in alive else None

    def freshness(broker_id: int) -> tuple[int, int, int, int, int]:
        info = live_info(broker_id)
        if info is None:
            return (1, 0, 0, 0, broker_id)
        return (0, -info.epoch, -info.max_offset, info.election_priority, broker_id)
    return min(alive, key=freshness)
