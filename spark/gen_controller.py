"""The controller's part of the synthetic logs (``gen_logs --failovers N --no-master M``).

The controller (RIP-44) runs in the first JSON name server, which leads: only the leader writes the
master events, as ``namesrv/controller/core.py`` does. The broker groups with a slave (``gen_logs``
makes one for every other broker name) are its groups, with controller ids 1 (the master) and 2.

- ``failovers``: a group's master dies; the controller elects the other replica 2-20 s later
  (``trigger: controller``; ``masterlessMillis``); the old master, back, is a replica;
- ``no_master``: a group's master dies while its replica is not in sync: three failed elections
  (``controller_master_unavailable``) 5 s apart; every other one gets its master back when a broker
  returns 1-5 min later (``trigger: broker``), the others have none until the logs end.

Every JSON name server then routes the elected master (``route_master_changed``): the leader 5-300 ms
after the election through the controller in its process (``trigger: controller``), the others 0.5-3 s
after it through the master's registration (``trigger: registration``).

Draws come from their own ``random.Random(seed + 1000)``, so the rest of a fleet with the same seed is
the same with or without them. ``plan`` returns the events to write, (ms, JSON server index (0: the
leader), event, fields), for ``gen_logs.run`` to write in time order, and what the truth records of them.
"""

import random

INACTIVE, ELECTED, UNAVAILABLE = ("controller_master_inactive", "controller_master_elected",
                                  "controller_master_unavailable")
ROUTED = "route_master_changed"
#: how far apart two incidents of one group are, at least
PAD_MS = 5 * 60000


class Group:
    def __init__(self, name, cluster, addresses):
        self.name, self.cluster = name, cluster
        self.addresses = addresses      # controller id -> broker address
        self.master, self.epoch = 1, 1
        self.busy = []                  # (start, end) of this group's incidents


def controller_groups(fleet):
    """{brokerName: Group} of the broker names with a master and a slave."""
    by_name = {}
    for b in fleet:
        by_name.setdefault(b.name, []).append(b)
    return {name: Group(name, members[0].cluster, {b.broker_id + 1: b.addr for b in members})
            for name, members in sorted(by_name.items()) if len(members) > 1}


def _place(rng, groups, start, end, length, until_end=False):
    """A group and a start overlapping none of its incidents (``until_end``: it keeps the group to the end)."""
    for _ in range(200):
        group = groups[rng.choice(sorted(groups))]
        earliest, latest = start + 5 * 60000, end - length - 10 * 60000
        if latest <= earliest:
            return None, None
        t0 = rng.randrange(earliest, latest)
        t1 = end if until_end else t0 + length
        if all(t1 + PAD_MS <= s or t0 >= e + PAD_MS for s, e in group.busy):
            group.busy.append((t0, t1))
            return group, t0
    return None, None


def _lost(group, t0):
    return (t0, 0, INACTIVE, dict(brokerName=group.name, cluster=group.cluster, masterBrokerId=group.master,
                               masterAddress=group.addresses[group.master], masterEpoch=group.epoch))


def _elected(group, at, trigger, lost_at):
    group.master = 3 - group.master
    group.epoch += 1
    return (at, 0, ELECTED, dict(brokerName=group.name, cluster=group.cluster, masterBrokerId=group.master,
                              masterAddress=group.addresses[group.master], masterEpoch=group.epoch, trigger=trigger,
                              masterlessMillis=at - lost_at))


def _routes(rng, group, at, servers):
    """Each JSON name server's ``route_master_changed`` for the master ``group`` just elected at ``at``."""
    fields = dict(brokerName=group.name, cluster=group.cluster, masterBrokerId=0,
                  masterAddress=group.addresses[group.master], masterEpoch=group.epoch)
    return [(at + (rng.randint(5, 300) if k == 0 else rng.randint(500, 3000)), k, ROUTED,
             dict(fields, trigger="controller" if k == 0 else "registration")) for k in range(servers)]


def plan(fleet, seed, start, end, failovers=0, no_master=0, servers=1):
    """(events to write on the JSON name servers, truth rows): see the module's docstring."""
    rng = random.Random(seed + 1000)
    groups = controller_groups(fleet)
    if not groups or not (failovers or no_master):
        return [], []
    events = [(start + 1, 0, "controller_role_changed", dict(role="leader", controllerId="n0"))]
    specs = [("failover", True)] * failovers + [("no_master", i % 2 == 0) for i in range(no_master)]
    incidents = []
    for kind, recovers in sorted(specs, key=lambda spec: spec[1]):   # the groups kept to the end first
        length = rng.randint(2, 20) * 1000 if kind == "failover" else rng.randint(60, 300) * 1000
        group, t0 = _place(rng, groups, start, end, length, until_end=not recovers)
        if group is not None:
            incidents.append((t0, kind, group, length, recovers))
    truth = []
    for t0, kind, group, length, recovers in sorted(incidents, key=lambda item: item[0]):
        old = (group.master, group.addresses[group.master], group.epoch)
        events.append(_lost(group, t0))
        failed = 0 if kind == "failover" else 3
        for attempt in range(failed):
            events.append((t0 + 1000 + 5000 * attempt, 0, UNAVAILABLE,
                           dict(brokerName=group.name, trigger="controller")))
        row = {"kind": kind, "brokerName": group.name, "cluster": group.cluster, "lostAt": t0, "oldMasterId": old[0],
               "oldMasterAddress": old[1], "oldEpoch": old[2], "failedElections": failed, "recovered": recovers}
        if recovers:
            at = t0 + length
            events.append(_elected(group, at, "controller" if kind == "failover" else "broker", t0))
            routes = _routes(rng, group, at, servers)
            events.extend(routes)
            routed_at = [ms for ms, _, _, _ in routes]
            row.update(electedAt=at, masterlessMs=length, newMasterId=group.master,
                       newMasterAddress=group.addresses[group.master], newEpoch=group.epoch,
                       routedAt=min(routed_at), routedMs=min(routed_at) - t0, routedVia="controller",
                       lastRoutedAt=max(routed_at), routers=servers)
        truth.append(row)
    return events, truth
