"""The command line of tools.stopstress (see its docstring)."""

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

import tools.stopstress as package
from tools.stopstress import Campaign
from tools.stopstress.moments import MOMENTS
from tools.stopstress.summary import summary


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m tools.stopstress", description=package.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stops", type=int, default=20, help="SIGTERMs to send (default 20)")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000, help="printed; replays the campaign")
    parser.add_argument("--bound", type=float, default=5.0, help="seconds a stop may take (default 5)")
    parser.add_argument("--moments", help="comma-separated, of: %s (default: all)" % ", ".join(sorted(MOMENTS)))
    parser.add_argument("--workers", type=int, help="routeReadWorkers (default: auto, at least 1)")
    parser.add_argument("--max-seconds", type=float, help="stop the campaign after this long")
    parser.add_argument("--keep", help="where the files of stops that went wrong are kept (default: under --workdir)")
    parser.add_argument("--keep-slower", type=float, metavar="SECONDS",
                        help="also keep the files of stops slower than this")
    parser.add_argument("--workdir", help="the instance's directory (default: a new temporary one)")
    parser.add_argument("--jsonl", help="append every stop as a JSON line to this file")
    parser.add_argument("--make-run", type=int, metavar="N", help="instead: N Ctrl-C stops of `make run` (makerun.py)")
    args = parser.parse_args(argv)
    # SIGTERM ends the campaign as Ctrl-C does: through its cleanup (servers, controllers, load)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    command = "python -m tools.stopstress " + " ".join(shlex.quote(a) for a in argv)
    if args.make_run:
        from tools.stopstress.makerun import campaign as make_run_campaign
        records = make_run_campaign(args.make_run, args.bound, seed=args.seed, log=_log, keep=args.keep)
    else:
        workdir = args.workdir or tempfile.mkdtemp(prefix="namesrv-stopstress-")
        os.makedirs(workdir, exist_ok=True)
        keep = args.keep or os.path.join(workdir, "kept")
        moments = args.moments.split(",") if args.moments else None
        unknown = set(moments or ()) - set(MOMENTS)
        if unknown:
            parser.error("no moment %s (known: %s)" % (", ".join(sorted(unknown)), ", ".join(sorted(MOMENTS))))
        _log("stopstress: seed %d, %d stops, bound %.1f s, workdir %s" % (args.seed, args.stops, args.bound, workdir))
        campaign = Campaign(workdir, args.seed, bound=args.bound, workers=args.workers, keep=keep, log=_log,
                            keep_slower=args.keep_slower)
        records = campaign.run(args.stops, moments, args.max_seconds)
    figures = summary(records, args.bound)
    if not args.make_run:
        figures["load"] = dict(campaign.load.counts)
        figures["start_failures"] = campaign.start_failures
        if campaign.start_failures:
            _log("stopstress: %d moments had no stop: their server did not start" % len(campaign.start_failures))
        _log("stopstress: load %s" % ", ".join("%s %d" % kv for kv in sorted(figures["load"].items())))
    figures.update(command=command, seed=args.seed, commit=_commit(),
                   load_before=os.getloadavg())
    print(figures["table"])
    if args.jsonl:
        with open(args.jsonl, "a") as f:
            f.write(json.dumps({k: v for k, v in figures.items() if k != "table"}, sort_keys=True) + "\n")
    return 0 if figures["hangs"] == 0 and figures["orphans"] == 0 and figures["unclean"] == 0 else 1


def _log(message):
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or None
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main())
