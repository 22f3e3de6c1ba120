"""Rows per second of the Spark reports: ``python -m bench spark_bench [--shape fleet] [--sizes ...]``.

Two named input shapes, written by ``spark.gen_logs`` and cached under ``--data`` between runs:

- ``small`` (default): 3 servers x 50 brokers x 200 topics; ``--sizes`` are line counts, the duration is
  chosen to reach them;
- ``oncall``: the issue's "new user" input, 3 servers x 50 brokers x 500 topics, seed 3, with the generator's
  default incidents; ``--sizes`` are hours (default 6: 254,361 lines);
- ``samples``: a few hundred lines, the JSON and Java 4.9 samples of ``tests/data`` (one flapping broker);
  ``--sizes`` is ignored;
- ``fleet``: 10 name servers x 1,000 brokers heartbeating every 30 s x 2,000 topics, 20 route queries/s per
  server, with flaps, outages, partitions, restarts and drifts; ``--hours`` are the durations (the issue's
  figure is 24 h, about 29 M heartbeat lines; run a fraction of it and read the per-line figure).

For each size ``python -m spark.report --json`` runs on it in a fresh process on ``--master`` (default
``local[2]``; ``--submit``: through ``spark-submit`` with ``make spark-package``'s zip on a standalone master
and worker started on 127.0.0.1 for the run, as ``tests/spark/cluster.py`` does), so the wall time includes the JVM start and every table, chart and the HTML page. Prints
one JSON line per size (with the report's own profile: seconds and Spark jobs per phase, and the session
start, the JVM's CPU seconds and the load average before and after), a summary table and, with two sizes
or more, the marginal cost per line in wall time and in JVM CPU (the slope between the smallest and largest
run, which removes the fixed cost). ``--json FILE`` appends the JSON lines to FILE; ``--label`` names the code.

To compare with an older commit, ``--tree`` names that commit's worktree: the report process runs there
(``python -m spark.report`` finds that tree's report first), measured the same way; ``--submit`` packages
this tree's report.

Not part of the test suite: run it by hand.
"""

import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time

from bench.lib import options

GEN = dict(servers=3, brokers=50, topics=200, seed=42, flaps=10, outages=2, partitions=2, restarts=4, drifts=2)
ONCALL = dict(servers=3, brokers=50, topics=500, seed=3)
SAMPLES = ("eventlog", "java49")
FLEET = dict(servers=10, brokers=1000, topics=2000, seed=42, flaps=20, outages=3, partitions=3, restarts=6, drifts=5,
             route_qps=20)


def generate(data_dir, size, shape="small"):
    """(directory, lines, seconds spent generating); ``size``: lines (small) or hours (fleet, oncall)."""
    if shape == "samples":
        data = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests", "data")
        inputs = [os.path.join(data, name) for name in SAMPLES]
        lines = sum(1 for d in inputs for root, _, files in os.walk(d) for f in files if not f.endswith(".gz")
                    for _ in open(os.path.join(root, f), errors="replace"))
        return ",".join(inputs), lines, 0.0
    params = {"fleet": FLEET, "oncall": ONCALL}.get(shape, GEN)
    directory = os.path.join(data_dir, "%s-%s" % ({"fleet": "fleet", "oncall": "oncall"}.get(shape, "events"), size))
    truth = os.path.join(directory, "_truth.json")
    if os.path.exists(truth):
        with open(truth) as f:
            saved = json.load(f)
        if saved.get("params", {}).get("seed") == params["seed"]:
            return directory, saved["events"], 0.0
    shutil.rmtree(directory, ignore_errors=True)
    from spark import gen_logs
    started = time.time()
    if shape in ("fleet", "oncall"):
        result = gen_logs.generate(directory, hours=float(size), **params)
    else:
        result = gen_logs.generate(directory, events_target=int(size), **params)
    return directory, result["events"], time.time() - started


def _tree_cpu(pid, tick=os.sysconf("SC_CLK_TCK")):
    """{pid: CPU seconds} of ``pid``'s descendants (Linux /proc; empty elsewhere)."""
    children, cpu = {}, {}
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(name))
            cpu[int(name)] = (int(fields[11]) + int(fields[12])) / tick
    found, todo = {}, list(children.get(pid, []))
    while todo:
        p = todo.pop()
        found[p] = cpu.get(p, 0.0)
        todo.extend(children.get(p, []))
    return found


class TreeCpu(threading.Thread):
    """Samples, once a second, the CPU time of a process's descendants (the report's JVM): the last
    sample of each is kept, so the figure misses at most the last second of each."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.seen, self.stop = pid, {}, threading.Event()

    def run(self):
        while not self.stop.wait(1.0):
            self.seen.update(_tree_cpu(self.pid))

    def seconds(self):
        self.stop.set()
        self.join()
        return round(sum(self.seen.values()), 1)


def run_report(directory, out, master, driver_memory, submit=None, conf=(), tree=None):
    """(wall seconds, the report's JSON summary); ``submit``: (spark-submit, zip, launcher, environment);
    ``tree``: the checkout the report process runs in (None: this process's directory)."""
    if submit:
        spark_submit, archive, launcher, env = submit
        from spark.session import SUBMIT_DRIVER_JAVA_OPTIONS
        cmd = [spark_submit, "--master", master, "--driver-java-options", SUBMIT_DRIVER_JAVA_OPTIONS,
               "--py-files", archive, "--conf", "spark.driver.host=127.0.0.1",
               "--conf", "spark.driver.bindAddress=127.0.0.1", "--conf", "spark.driver.memory=%s" % driver_memory,
               launcher, "--input", directory, "--output", out, "--json"]
    else:
        cmd = [sys.executable, "-m", "spark.report", "--input", directory, "--output", out, "--master", master,
               "--conf", "spark.driver.memory=%s" % driver_memory, "--json"]
        env = None
    cmd[cmd.index("--json"):cmd.index("--json")] = [arg for item in conf for arg in ("--conf", item)]
    started = time.time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tree)
    sampler = TreeCpu(child.pid)
    sampler.start()
    stdout, stderr = child.communicate()
    elapsed = time.time() - started
    proc = subprocess.CompletedProcess(cmd, child.returncode, stdout, stderr)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit("report failed:\n" + proc.stderr[-4000:])
    summary = json.loads(proc.stdout[proc.stdout.index("{"):])
    # CPU of the report process and what it reaped (the JVM, if it waited for it)
    summary["child_cpu_seconds"] = round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)
    # ... and of the JVM it started (sampled: works for a report that does not tell its JVM's CPU)
    summary["jvm_tree_cpu_seconds"] = sampler.seconds()
    return elapsed, summary


OPTIONS = (
    options.Option("--shape", "the input (bench/scenarios/spark_bench.py describes each)",
                   choices=("small", "fleet", "oncall", "samples"), default="small"),
    options.Option("--submit", "spark-submit with dist/spark.zip on a standalone master + worker on 127.0.0.1",
                   action="store_true"),
    options.Option("--sizes", "line counts (small; default 1e6 1e7) or hours (fleet; default 0.25 0.5)",
                   type=float, nargs="+"),
    options.MASTER("local[2]"),
    options.Option("--data", "where the generated inputs are cached",
                   default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "namesrv-spark-bench")),
    options.Option("--driver-memory", "the report's spark.driver.memory", default="3g"),
    options.Option("--conf", "passed on to the report", action="append", default=[], metavar="KEY=VALUE"),
    options.Option("--json", "append the results (JSON lines) to this file", metavar="FILE"),
    options.Option("--label", "a name for the code measured (kept in the JSON, e.g. a commit)"),
    options.Option("--tree", "the checkout whose report is measured (default: the current directory)", metavar="DIR"),
)


def main(argv=None):
    args = options.parse("spark_bench", __doc__, OPTIONS, argv)
    defaults = {"fleet": [0.25, 0.5], "oncall": [6.0], "samples": [0]}
    sizes = args.sizes or defaults.get(args.shape, [1000000, 10000000])
    sizes = [int(x) if args.shape == "small" else x for x in sizes]
    results = []
    with _cluster(args) as submit:
        for size in sizes:
            results.append(_measure(args, size, submit))
    _print_table(results)
    return 0


class _NoCluster:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


class _Cluster:
    """A standalone master + worker (``tests.spark.cluster``) and the package, for ``--submit``."""

    def __init__(self, args):
        self.args = args

    def __enter__(self):
        import tempfile
        from spark import package
        from tests.spark import cluster
        self.base = tempfile.mkdtemp(prefix="spark-bench-cluster-")
        self.cluster = cluster.StandaloneCluster(os.path.join(self.base, "cluster"), cores=2, memory="2g")
        self.cluster.start()
        self.args.master = self.cluster.url
        archive, launcher = package.build(os.path.join(self.base, "dist"))
        env = cluster.spark_env()
        env.pop("PYTHONPATH", None)
        return os.path.join(cluster.SPARK_HOME, "bin", "spark-submit"), archive, launcher, env

    def __exit__(self, *exc):
        self.cluster.stop()
        shutil.rmtree(self.base, ignore_errors=True)
        return False


def _cluster(args):
    return _Cluster(args) if args.submit else _NoCluster()


def _measure(args, size, submit):
    """One report run on one size: its figures (printed, appended to ``--json``)."""
    directory, lines, gen_seconds = generate(args.data, size, args.shape)
    out = os.path.join(args.data, "report-%s-%s%s" % (args.shape, size, "-" + args.label if args.label else ""))
    load_before = os.getloadavg()[0]
    elapsed, summary = run_report(directory, out, args.master, args.driver_memory, submit, args.conf, args.tree)
    bench = {"small": "spark_report", "fleet": "spark_report_fleet"}.get(args.shape, "spark_report_" + args.shape)
    result = {"bench": bench + ("_submit" if submit else ""), "target": size, "jobs": summary.get("jobs"),
              "rows": lines, "master": args.master, "phases": summary.get("phases"),
              "session_seconds": summary.get("session_seconds"),
              "jvm_cpu_seconds": summary.get("jvm_cpu_seconds"),
              "child_cpu_seconds": summary.get("child_cpu_seconds"),
              "jvm_tree_cpu_seconds": summary.get("jvm_tree_cpu_seconds"),
              "wall_seconds": round(elapsed, 1), "report_seconds": summary["seconds"],
              "rows_per_second": round(lines / elapsed),
              "rows_per_second_in_report": round(lines / summary["seconds"]),
              "generate_seconds": round(gen_seconds, 1), "input_mb": round(_size_mb(directory), 1),
              "cpus": os.cpu_count(), "loadavg": os.getloadavg()[0], "loadavg_before": load_before,
              "version": args.label, "conf": args.conf}
    print(json.dumps(result), flush=True)
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(result) + "\n")
    return result


def _print_table(results):
    print("\n%12s %12s %10s %14s %12s %6s" % ("rows", "seconds", "rows/s", "rows/s (jobs)", "jvm cpu s", "load"))
    for r in results:
        print("%12d %12.1f %10d %14d %12s %6.1f" % (r["rows"], r["wall_seconds"], r["rows_per_second"],
                                                   r["rows_per_second_in_report"], r["jvm_tree_cpu_seconds"],
                                                   r["loadavg"]))
    if len(results) >= 2:
        lo, hi = results[0], results[-1]
        slope = (hi["wall_seconds"] - lo["wall_seconds"]) / max(1, hi["rows"] - lo["rows"])
        fixed = lo["wall_seconds"] - slope * lo["rows"]
        print("\nmarginal: %.1f us/line = %d lines/s; fixed: %.1f s" % (slope * 1e6, 1 / slope if slope > 0 else 0,
                                                                       fixed))
        cpu_slope = (hi["jvm_tree_cpu_seconds"] - lo["jvm_tree_cpu_seconds"]) / max(1, hi["rows"] - lo["rows"])
        print("JVM CPU: %.1f us/line marginal; fixed: %.1f s" % (cpu_slope * 1e6,
                                                               lo["jvm_tree_cpu_seconds"] - cpu_slope * lo["rows"]))
    for r in results:
        print("\nprofile of %d rows (session start %.1f s, %s Spark jobs):" % (r["rows"], r["session_seconds"] or 0,
                                                                          r.get("jobs")))
        for phase in r["phases"] or []:
            print("  %-16s %8.1f s %5s jobs" % (phase["phase"], phase["seconds"], phase["jobs"]))
    return 0


def _size_mb(directories):
    total = 0
    for directory in directories.split(","):
        for root, _, files in os.walk(directory):
            total += sum(os.path.getsize(os.path.join(root, name)) for name in files)
    return total / 1e6


if __name__ == "__main__":
    sys.exit(main())
