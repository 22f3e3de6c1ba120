"""The moments a SIGTERM falls on. Each takes the campaign (its servers, group and random numbers), starts
what it needs, signals at its moment and returns the stops it timed: one record a signalled process."""

import glob
import os
import signal
import time

from namesrv.client import ask
from namesrv.protocol.codes import RequestCode
from tools.stopstress.procs import timed_stop


def under_load(campaign, rng):
    """Anywhere while the load runs."""
    server = campaign.start_server()
    wait = rng.uniform(0.1, 2.0)
    time.sleep(wait)
    return [dict(timed_stop(server, bound=campaign.bound), at="%.2f s into the load" % wait)]


def snapshot_write(campaign, rng):
    """While a route snapshot is written (every second here): its file being written (the temporary file is
    there), or, every other time, around the moment the next one is due (its slices being encoded)."""
    server = campaign.start_server()
    path = server.properties["routeSnapshotPath"]
    time.sleep(rng.uniform(0.5, 1.0))   # let a few snapshots pass with the load on
    if rng.random() < 0.5:
        seen = _until(lambda: glob.glob(path + ".*.tmp"), 3.0)
        time.sleep(rng.uniform(0, 0.003))
        at = "writing (temporary file %s)" % ("seen" if seen else "not seen within 3 s")
    else:
        mtime = _mtime(path)
        _until(lambda: _mtime(path) != mtime, 3.0)
        offset = rng.uniform(0.9, 1.05)   # the next one is due 1 s after the last
        time.sleep(offset)
        at = "%.0f ms after the last snapshot was written" % (offset * 1000)
    return [dict(timed_stop(server, bound=campaign.bound), at=at)]


def worker_respawn(campaign, rng):
    """After a read worker was killed (-9): while no worker accepts, while the next one starts (1 s later),
    and while it takes its full copy."""
    server = campaign.start_server()
    time.sleep(rng.uniform(0.2, 0.8))
    workers = server.workers()
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    wait = rng.uniform(0, 1.6)
    time.sleep(wait)
    return [dict(timed_stop(server, bound=campaign.bound), at="%.2f s after kill -9 of %d worker(s)" % (wait, len(workers)))]


def controller_election(campaign, rng):
    """While the controllers elect a leader: the leader (one of the two others) is paused (SIGSTOP), so this
    server's controller and the third elect one (0.4-1.4 s timeouts); when this server's controller leads,
    both others are paused, and it steps down and stands again."""
    group = campaign.group
    server = campaign.start_server()
    time.sleep(rng.uniform(0.3, 1.0))
    leader = _leader(group)
    paused = [leader] if leader in ("n1", "n2") else ["n1", "n2"]
    for name in paused:
        group.pause(name)
    try:
        wait = rng.uniform(0.2, 1.8) if leader != "n0" else rng.uniform(1.5, 3.5)
        time.sleep(wait)
        status = _metadata(group.ports["n0"])
        record = timed_stop(server, bound=campaign.bound)
    finally:
        for name in paused:
            group.resume(name)
    return [dict(record, at="%.2f s after pausing %s (leader %s; n0 then saw leader %r)"
                 % (wait, "+".join(paused), leader, status))]


def takeover(campaign, rng):
    """During a takeover (``--takeover``): the old process or the new one is signalled at a random moment of
    it; the survivor, if any, is stopped after (timed too). Without the pages and the embedded controller
    (Campaign.properties says why)."""
    old = campaign.start_server(takeover=True)
    time.sleep(rng.uniform(0.2, 0.6))
    new = campaign.server(takeover=True, suffix="-takeover").spawn("--takeover")
    wait = rng.uniform(0, 2.0)
    time.sleep(wait)
    target, other = (old, new) if rng.random() < 0.5 else (new, old)
    which = "old" if target is old else "new"
    records = [dict(timed_stop(target, bound=campaign.bound), at="%s process, %.2f s into the takeover"
                    % (which, wait))]
    if other.process.poll() is None:
        # the survivor serves (or gives up) on its own; then it is stopped as any server is
        _until(lambda: other.process.poll() is not None or ask(campaign.port, RequestCode.GET_BROKER_CLUSTER_INFO,
                                                                 timeout=1.0) is not None, 20.0)
        if other.process.poll() is None:
            records.append(dict(timed_stop(other, bound=campaign.bound), at="the survivor (%s) of a takeover"
                                % ("new" if which == "old" else "old"), kind="after takeover"))
    return records


MOMENTS = {"load": under_load, "snapshot": snapshot_write, "respawn": worker_respawn,
           "election": controller_election, "takeover": takeover}
#: how often each is drawn
WEIGHTS = {"load": 3, "snapshot": 2, "respawn": 2, "election": 2, "takeover": 2}


def _until(predicate, timeout, step=0.001):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return None


def _mtime(path):
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _metadata(port):
    answer = ask(port, RequestCode.CONTROLLER_GET_METADATA_INFO, timeout=1.0)
    return answer.ext.get("controllerLeaderId") if answer is not None and answer.ext else None


def _leader(group):
    for name in ("n0", "n1", "n2"):
        leader = _metadata(group.ports[name])
        if leader:
            return leader
    return None
