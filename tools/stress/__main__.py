"""The whole suite (or part of it) run again and again, with CPU and disk load beside it: every test that
failed at least once, with the log of each run kept.

    python -m tools.stress --runs 20 --cpu 1 --disk                 # `make stress-test RUNS=20`
    python -m tools.stress --runs 30 --cpu 2 -- tests/packaging -q   # one module, 30 times

Each run is ``python -m pytest -rA --junitxml=...`` in a process group of its own, its output in
``KEEP/run-NN/output.txt`` and its results in ``KEEP/run-NN/junit.xml``; KEEP (``build/stress/<time>``
unless ``--keep`` says) ends with ``report.txt`` and ``report.json`` (tools/stress/report.py), also
written after every run, so a stopped series still says what it found. ``--results FILE`` copies the
report's text there as well (e.g. into bench/results/).

Ctrl-C or SIGTERM stop the series: the running suite gets SIGINT (pytest tears its fixtures down),
then SIGKILL after ``--grace`` seconds, with whatever its tests started; the load stops; the report
is written. A run that takes longer than ``--run-timeout`` is stopped the same way and counted as
failed. Tests that run longer than ``--dump-after`` seconds get every thread's stack in the output
(pytest's faulthandler_timeout): a hang names itself. Nothing is retried.
"""

import argparse
import datetime
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

from tests import leftovers
from tools.stress.load import Load
from tools.stress.report import Report

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: set in every run's environment (inherited by all it starts): what a stopped run left is found by it
RUN_MARKER = "NAMESRV_STRESS_RUN"


class Stopped(Exception):
    """Ctrl-C or SIGTERM: end the series."""


def _stop(signum, frame):
    raise Stopped(signal.Signals(signum).name)


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m tools.stress", description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="how many times to run the suite (default 5)")
    parser.add_argument("--cpu", type=int, default=0, help="busy processes beside the suite (default 0)")
    parser.add_argument("--disk", action="store_true", help="a process writing and syncing a file beside it")
    parser.add_argument("--keep", help="where the runs' logs and the report go (default build/stress/<time>)")
    parser.add_argument("--results", help="also copy the report's text to this file")
    parser.add_argument("--run-timeout", type=float, default=3600.0,
                        help="a run still going after this many seconds is stopped and failed (default 3600)")
    parser.add_argument("--dump-after", type=float, default=600.0,
                        help="a test running this long prints every thread's stack (default 600)")
    parser.add_argument("--grace", type=float, default=60.0,
                        help="seconds between SIGINT and SIGKILL when a run is stopped (default 60)")
    parser.add_argument("--stop-at-failure", action="store_true", help="end the series after the first failed run")
    parser.add_argument("pytest_args", nargs="*", help="after --: arguments for pytest (default: the whole suite)")
    return parser.parse_args(argv)


def pytest_command(run_dir, args):
    return [sys.executable, "-m", "pytest", "-rA", "--junitxml=%s" % os.path.join(run_dir, "junit.xml"),
            "-o", "junit_family=xunit1", "-o", "faulthandler_timeout=%d" % args.dump_after] + args.pytest_args


def machine_load():
    """The load averages (1, 5 and 15 minutes) as /proc/loadavg gives them, or None."""
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[:3]
    except OSError:
        return None


def end_group(process, grace):
    """SIGINT to the run's process group (pytest stops and tears down), SIGKILL to it after ``grace``."""
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGKILL, 30.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def end_marked(value):
    """End what a stopped run left running (anything carrying its marker); their command lines."""
    found = {pid: leftovers.command_line(pid) for pid in leftovers.live_pids()
             if leftovers.carries(pid, value, marker=RUN_MARKER)}
    leftovers.end(list(found))
    return found


def _sigint_at_its_default():
    """The suite must stop on the SIGINT ``end_group`` sends, even where this runner was started with SIGINT
    ignored (in the background by a shell without job control): children inherit an ignored signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_once(number, directory, args):
    """One run of the suite: ``(exit status, seconds, note)``; Stopped propagates once the run is ended."""
    run_dir = os.path.join(directory, "run-%02d" % number)
    os.makedirs(run_dir)
    marker = "%d-%s" % (number, uuid.uuid4().hex[:12])
    env = dict(os.environ, **{RUN_MARKER: marker})
    started = time.monotonic()
    note = ""
    with open(os.path.join(run_dir, "output.txt"), "w") as output:
        output.write("$ %s\n" % " ".join(pytest_command(run_dir, args)))
        output.flush()
        process = subprocess.Popen(pytest_command(run_dir, args), cwd=REPO, env=env, stdout=output,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                   preexec_fn=_sigint_at_its_default)
        try:
            process.wait(args.run_timeout)
        except subprocess.TimeoutExpired:
            note = "stopped after its time limit of %.0f s" % args.run_timeout
            end_group(process, args.grace)
        except Stopped:
            end_group(process, args.grace)
            raise
        finally:
            left = end_marked(marker)
            if left:
                output.write("\nstress: ended %d process(es) the run left running:\n%s\n"
                             % (len(left), leftovers.describe(left)))
    return process.returncode, time.monotonic() - started, note


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    directory = os.path.abspath(args.keep or os.path.join(REPO, "build", "stress", stamp))
    os.makedirs(directory, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="stress-load-")
    load = Load(cpu=args.cpu, disk=args.disk, seconds=args.runs * args.run_timeout + 60, directory=scratch)
    command = "pytest " + " ".join(args.pytest_args) if args.pytest_args else "pytest (the whole suite)"
    report = Report(directory, command, load.describe(), stamp)
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    stopped = None
    print("stress: %d run(s) of %s beside %s; logs in %s" % (args.runs, command, load.describe(), directory),
          flush=True)
    try:
        load.start()
        for number in range(1, args.runs + 1):
            try:
                status, seconds, note = run_once(number, directory, args)
            except Stopped as e:
                stopped = str(e)
                report.add_run(number, "stopped", 0.0, os.path.join(directory, "run-%02d" % number),
                               "stopped by %s" % stopped)
                break
            report.add_run(number, status, seconds, os.path.join(directory, "run-%02d" % number), note,
                           machine_load())
            report.write()
            last = report.runs[-1]
            print("stress: run %02d: exit %s in %.0f s, %d tests, %s" % (
                number, status, seconds, last["tests"],
                "%d failed: %s" % (len(last["failed"]), ", ".join(last["failed"])) if last["failed"] else "none failed"),
                flush=True)
            if args.stop_at_failure and last["failed"]:
                break
    except Stopped as e:
        stopped = str(e)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        load.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    report.write()
    text = report.text() + ("\nstopped by %s" % stopped if stopped else "")
    if args.results:
        os.makedirs(os.path.dirname(os.path.abspath(args.results)), exist_ok=True)
        with open(args.results, "w") as f:
            f.write(text + "\n")
    print(text, flush=True)
    if stopped:
        return 130
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
