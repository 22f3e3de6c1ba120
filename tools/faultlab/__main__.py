"""Run fault-lab schedules, ours and Java's controller side by side, and print what every checker found.

    python -m tools.faultlab                                   # every schedule once, ours, fake brokers
    python -m tools.faultlab --schedule mixed --seeds 1-30      # thirty seeded runs of one schedule
    python -m tools.faultlab --side both --peer $JAVAPEER5      # the same schedules against Java 5.3.3's
    python -m tools.faultlab --side both --brokers java --peer $JAVAPEER5   # with real 5.3.3 brokers

Needs root (network namespaces, iptables). A run's seed is printed first; ``--seeds N`` replays it.
Each run prints one line per checker; ``--json`` adds one JSON line per run, and the table at the
end gives, per schedule and side: runs, runs with a safety violation, acknowledged messages lost,
the longest time without an acknowledged message, and the seconds from a fault to the next one.
"""

import argparse
import json
import signal
import os
import statistics
import sys

from tools.faultlab.netns import available, sweep
from tools.faultlab.run import run
from tools.faultlab.schedules import JAVA_BUGS, SCHEDULES

SAFETY = ("one master per epoch", "epochs never go back", "linearizable", "no acknowledged message lost",
          "routes name real masters")


def _interrupted(signum, frame):
    raise KeyboardInterrupt("SIGTERM")


def seeds(text):
    if "-" in text:
        low, high = text.split("-", 1)
        return list(range(int(low), int(high) + 1))
    return [int(part) for part in text.split(",")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedule", default="all", help="a name, a comma list, all, or java-bugs (%s): %s"
                        % (", ".join(JAVA_BUGS), ", ".join(SCHEDULES)))
    parser.add_argument("--seeds", default="1", help="N, N-M or N,M,...")
    parser.add_argument("--side", choices=("ours", "java", "both"), default="ours")
    parser.add_argument("--brokers", choices=("fake", "java"), default="fake")
    parser.add_argument("--peer", default=os.environ.get("JAVAPEER5"), help="the 5.3.3 peer directory (java5peer)")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--fault", type=float, nargs=2, default=(4.0, 8.0), metavar=("MIN", "MAX"))
    parser.add_argument("--heal", type=float, nargs=2, default=(4.0, 8.0), metavar=("MIN", "MAX"))
    parser.add_argument("--settle", type=float, default=20.0,
                        help="seconds the run goes on after its last heal (at least 40 with Java brokers)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    reason = available()
    if reason:
        parser.error(reason)
    # SIGTERM ends the run through its cleanup (namespaces, processes), as Ctrl-C does
    signal.signal(signal.SIGTERM, _interrupted)
    if (args.side != "ours" or args.brokers == "java") and not (
            args.peer and os.path.isfile(os.path.join(args.peer, "lib", "rocketmq-5.3.3.jar"))):
        parser.error("--peer (or $JAVAPEER5): an Apache RocketMQ 5.3.3 installation (its lib/ holds "
                     "rocketmq-5.3.3.jar)")
    names = sorted(SCHEDULES) if args.schedule == "all" else (
        list(JAVA_BUGS) if args.schedule == "java-bugs" else args.schedule.split(","))
    sides = ("ours", "java") if args.side == "both" else (args.side,)
    sweep()
    rows = []
    for name in names:
        for seed in seeds(args.seeds):
            for side in sides:
                try:
                    result = run(name, seed, kind=side, size=args.members, cycles=args.cycles,
                                 fault_seconds=tuple(args.fault), heal_seconds=tuple(args.heal), settle=args.settle,
                                 peer_home=args.peer, brokers=args.brokers)
                except Exception as e:        # a run that could not even set up is reported, not hidden
                    result = {"schedule": name, "seed": seed, "side": side, "error": repr(e), "passed": False,
                              "checks": {}, "availability": {}}
                    print("  run failed: %r" % (e,), flush=True)
                rows.append(result)
                if args.json:
                    print(json.dumps(result, sort_keys=True), flush=True)
    print()
    print(table(rows))
    return 0 if all(r["passed"] for r in rows) else 1


def _median_max(values):
    values = [v for v in values if v is not None]
    return "%.2f / %.2f s" % (statistics.median(values), max(values)) if values else "-"


def table(rows):
    """Per schedule and side: runs, runs with a safety violation, acknowledged messages lost, and (median / max
    over the faults) the longest time without an acknowledged send, the time from a fault to the next one, and
    from a heal until both brokers are in the in-sync set again; the master epochs each fault moved through
    (median / max: an election each, or the group left without a master); and the longest write gap around
    each leadership transfer."""
    lines = ["%-34s %-5s %4s %6s %5s %20s %20s %20s %10s %24s" % ("schedule", "side", "runs", "unsafe", "lost",
                                                                 "no ack (longest)", "fault -> next ack",
                                                                 "heal -> both in sync", "elections",
                                                                 "no ack around transfers")]
    groups = {}
    for row in rows:
        groups.setdefault((row["schedule"], row["side"]), []).append(row)
    for (name, side), group in sorted(groups.items()):
        unsafe = sum(1 for r in group if r.get("error") or any(
            not r["checks"].get(c, {"passed": True})["passed"] for c in SAFETY))
        lost = sum((r["checks"].get("no acknowledged message lost", {}).get("value") or {}).get("lost", 0)
                   for r in group)
        faults = [f for r in group for f in r["availability"].get("faults", [])]
        elections = [f.get("elections") for f in faults if f.get("elections") is not None]
        transfers = [t for r in group for t in r.get("transfers") or []]
        lines.append("%-34s %-5s %4d %6d %5d %20s %20s %20s %10s %24s" % (
            name, side, len(group), unsafe, lost, _median_max(f.get("longest_gap") for f in faults),
            _median_max(f.get("seconds_to_next_ack") for f in faults),
            _median_max(f.get("in_sync_after_heal") for f in faults),
            "%g / %g" % (statistics.median(elections), max(elections)) if elections else "-",
            _median_max(t.get("gap") for t in transfers) if transfers else "-"))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
