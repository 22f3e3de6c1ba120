"""What a fault-lab run must never show, read from what the agent and the brokers wrote down.

- ``one_master_per_epoch``: no master epoch of the group has two masters, in any controller's
  answer, any broker's own view, or any NOTIFY_BROKER_ROLE_CHANGED (RocketMQ #7017, #6662);
- ``epochs_never_go_back``: each observer (the agent reading the controllers, each broker) sees the
  master epoch and the in-sync set's epoch only grow (a stale leader's answer would turn them back);
- ``no_acknowledged_message_lost``: every message a master answered OK is in the log of the master
  at the end (RocketMQ #7689);
- ``routes_name_real_masters``: every broker a name server routes as brokerId 0 was made master by
  the controllers at some epoch;
- ``linearizable``: the id reads and claims (``linearizable.BrokerIdTable``);
- ``master_routed_after_heal``: after the last fault healed, a master is routed by every name server
  and takes messages again, within ``bound`` seconds.

Each returns a ``Check``: its name, whether it passed, and what it found.
"""

from dataclasses import dataclass, field

from tools.faultlab.linearizable import INDETERMINATE, BrokerIdTable, Op, check


@dataclass
class Check:
    name: str
    passed: bool
    details: list = field(default_factory=list)
    value: object = None

    def __bool__(self):
        return self.passed


def one_master_per_epoch(agent, brokers):
    masters = {}
    for record in agent:
        if record["kind"] == "replica_info" and record.get("masterEpoch") and record.get("masterId") is not None:
            masters.setdefault(record["masterEpoch"], set()).add(("controller %s" % record["controller"],
                                                                   record["masterId"]))
    for events in brokers.values():
        for event in events:
            if event["event"] == "role" and event["role"] == "master":
                masters.setdefault(event["epoch"], set()).add(("broker %s" % event["brokerId"], event["brokerId"]))
            elif event["event"] == "notified" and event["ext"].get("masterEpoch"):
                ext = event["ext"]
                masters.setdefault(int(ext["masterEpoch"]), set()).add(
                    ("notify to %s" % event["brokerId"], int(ext["masterBrokerId"])))
    bad = []
    for epoch, seen in sorted(masters.items()):
        ids = {master for _, master in seen}
        if len(ids) > 1:
            bad.append("epoch %d has masters %s (%s)" % (epoch, sorted(ids), sorted(who for who, _ in seen)))
    return Check("one master per epoch", not bad, bad, value=len(masters))


def epochs_never_go_back(agent, brokers):
    bad = []
    last = (0, 0)
    for record in sorted((r for r in agent if r["kind"] == "replica_info"), key=lambda r: r["t"]):
        now = (record.get("masterEpoch") or 0, record.get("syncStateSetEpoch") or 0)
        if now[0] < last[0] or (now[0] == last[0] and now[1] < last[1]):
            bad.append("the agent read epochs %s after %s (controller %s at %.3f)" % (now, last, record["controller"],
                                                                                    record["t"]))
        last = max(last, now)
    for name, events in brokers.items():
        seen = 0
        for event in events:
            if event["event"] == "role":
                if event["epoch"] < seen:
                    bad.append("broker %s learned epoch %d after %d" % (name, event["epoch"], seen))
                seen = max(seen, event["epoch"])
    return Check("epochs never go back", not bad, bad[:10])


def acknowledged(agent):
    return [r["key"] for r in agent if r["kind"] == "send" and r["ok"]]


def no_acknowledged_message_lost(agent):
    logs = [r for r in agent if r["kind"] == "log"]
    masters = [r for r in logs if r["role"] == "master" and r["keys"] is not None]
    acked = acknowledged(agent)
    if not logs:   # not "every message lost": nothing to compare with
        return Check("no acknowledged message lost", False,
                     ["the brokers' logs were never read back (the agent was ended before its read-back): %d "
                      "acknowledged messages cannot be checked" % len(acked)],
                     value={"acked": len(acked), "lost": 0, "unread": True})
    if not masters:
        held = max((r["keys"] for r in logs if r["keys"] is not None), key=len, default=[])
        where = "the longest broker log (no master at the end)"
    else:
        final = max(masters, key=lambda r: r["epoch"])
        held, where = final["keys"], "the final master's log (%s, epoch %d)" % (final["broker"], final["epoch"])
    lost = sorted(set(acked) - set(held), key=lambda k: int(k[1:]))
    details = ["%d of %d acknowledged messages are not in %s: %s" % (len(lost), len(acked), where, lost[:20])] \
        if lost else []
    unread = [queue for r in logs for queue in r.get("incomplete") or ()]
    if lost and unread:
        details.append("queues the reader could not read to their end (broker, id, first, end, read): %s" % unread)
    return Check("no acknowledged message lost", not lost, details, value={"acked": len(acked), "lost": len(lost)})


def routes_name_real_masters(agent, brokers):
    made = set()
    for events in brokers.values():
        for event in events:
            if event["event"] == "role" and event["role"] == "master":
                made.add(_address_of(events))
    bad = sorted({r["master"] for r in agent if r["kind"] == "route" and r.get("master") and r["master"] not in made})
    return Check("routes name real masters", not bad, ["routed but never master: %s" % bad] if bad else [])


def _address_of(events):
    for event in events:
        if event["event"] in ("started", "broker_id") and event.get("address"):
            return event["address"]
    return None


def linearizable(agent):
    history = {}
    for record in agent:
        if record["kind"] != "op":
            continue
        ret = record["ret"] if record.get("ret") is not None else INDETERMINATE
        history.setdefault(record["key"], []).append(
            Op(record["process"], record["op"], record.get("arg"), record["result"], record["call"], ret, record["key"]))
    bad, sizes = [], {}
    for key, ops in sorted(history.items()):
        sizes[key] = len(ops)
        try:
            verdict = check(ops, BrokerIdTable())
        except RuntimeError as e:
            bad.append("%s: inconclusive (%s; %d operations, %d of unknown outcome)"
                       % (key, e, len(ops), sum(1 for op in ops if not op.determinate)))
            continue
        if not verdict:
            bad.append("%s: %d operations not linearizable; the longest consistent prefix ends with %s"
                       % (key, len(ops), verdict.best[-3:]))
    return Check("linearizable", not bad, bad, value=sizes)


def master_routed_after_heal(agent, healed_at, namesrvs, bound):
    """Seconds from ``healed_at`` until every name server routes one master and a message is taken."""
    routes = {}
    first = None
    for record in sorted((r for r in agent if r["t"] >= healed_at), key=lambda r: r["t"]):
        if record["kind"] == "route":
            routes[record["namesrv"]] = record.get("master")
        if record["kind"] == "send" and record["ok"] and len(routes) == len(namesrvs) \
                and len(set(routes.values())) == 1 and None not in routes.values():
            first = record["ret"] - healed_at
            break
    passed = first is not None and first <= bound
    return Check("master routed after heal", passed,
                 [] if passed else ["no master routed everywhere and taking messages within %s s" % bound],
                 value=None if first is None else round(first, 2))


def availability(agent, faults):
    """The longest gap between two acknowledged sends; per fault, the longest gap from the fault to the next
    fault (``longest_gap``), the seconds from the fault to the next acknowledged send, and from the heal until
    both brokers are in the in-sync set again (as the controller leader answers)."""
    oks = sorted(r["ret"] for r in agent if r["kind"] == "send" and r["ok"])
    gaps = [b - a for a, b in zip(oks, oks[1:])]
    in_sync = sorted(r["t"] for r in agent if r["kind"] == "replica_info" and len(r.get("syncStateSet") or []) >= 2)
    epochs = sorted((r["t"], r["masterEpoch"]) for r in agent if r["kind"] == "replica_info"
                    and r.get("masterEpoch") is not None)
    per_fault = []
    for i, fault in enumerate(faults):
        end = faults[i + 1]["t"] if i + 1 < len(faults) else float("inf")
        window = [t for t in oks if fault["t"] <= t < end]
        before = [t for t in oks if t < fault["t"]]
        points = before[-1:] + window
        healed = fault.get("healed")
        back = [t for t in in_sync if healed is not None and t >= healed]
        epoch_before = max([e for t, e in epochs if t < fault["t"]], default=None)
        epoch_during = max([e for t, e in epochs if fault["t"] <= t < end], default=epoch_before)
        per_fault.append({"fault": fault["action"],
                          "seconds_to_next_ack": round(window[0] - fault["t"], 2) if window else None,
                          "longest_gap": round(max((b - a for a, b in zip(points, points[1:])), default=0.0), 2),
                          "in_sync_after_heal": round(back[0] - healed, 2) if back else None,
                          # master epochs moved through from the fault to the next one, as the controllers answer:
                          # each election, and each time the group was left without a master
                          "elections": (epoch_during - epoch_before) if None not in (epoch_before, epoch_during)
                          else None})
    return {"acknowledged": len(oks), "longest_gap": round(max(gaps), 2) if gaps else None, "faults": per_fault}


def transfer_gaps(agent, lab_records, baseline=10.0):
    """Per leadership transfer: the longest time without an acknowledged send around it (the gap between two
    acknowledged sends that spans any part of the leader's handover, bounded by the answer and its
    ``millis``), and for comparison the longest such gap in the ``baseline`` seconds before it."""
    oks = sorted(r["ret"] for r in agent if r["kind"] == "send" and r["ok"])
    figures = []
    for op in lab_records:
        if op.get("kind") != "group_op" or op.get("step") != "transferred" or op.get("millis") is None:
            continue
        end = op["ended"]
        start = end - op["millis"] / 1000.0 - 0.05
        spanning = [b - a for a, b in zip(oks, oks[1:]) if a < end and b > start]
        before = [b - a for a, b in zip(oks, oks[1:]) if start - baseline <= a and b < start]
        figures.append({"millis": op["millis"], "gap": round(max(spanning), 3) if spanning else None,
                        "baseline": round(max(before), 3) if before else None})
    return figures


def group_operations(lab_records, failed):
    """Every operator's step of a membership schedule was done: members added and promoted, removed, leadership
    handed over, a member caught up from a snapshot, old members fenced when they came back."""
    steps = [r for r in lab_records if r["kind"] == "group_op"]
    unfenced = [r["member"] for r in steps if r["step"] == "fenced" and not r.get("refused")]
    details = list(failed) + ["%s came back with its old store and was not fenced" % m for m in unfenced]
    counts = {}
    for record in steps:
        counts[record["step"]] = counts.get(record["step"], 0) + 1
    return Check("group operations done", not details, details, value=counts)


def run_all(agent, brokers, healed_at, namesrvs, bound=30.0, fake_brokers=True):
    checks = [one_master_per_epoch(agent, brokers), epochs_never_go_back(agent, brokers), linearizable(agent)]
    checks += [no_acknowledged_message_lost(agent), master_routed_after_heal(agent, healed_at, namesrvs, bound)]
    if fake_brokers:
        checks.append(routes_name_real_masters(agent, brokers))
    return checks
