"""Rows per second of the Spark reports: ``python -m bench.spark_bench [--sizes 1000000 10000000]``.

For each size, ``spark.gen_logs`` writes about that many event lines (3 servers x 50 brokers x 200
topics, the duration chosen to reach the size; cached under ``--data`` between runs), then
``python -m spark.report`` runs on them in a fresh process on ``--master`` (default ``local[2]``),
so the figure includes the JVM start and every table, chart and the HTML page. Prints one JSON line per
size and a summary table; ``--json FILE`` appends the JSON lines to FILE.

Not part of the test suite (10M events take a while): run it by hand.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

GEN = dict(servers=3, brokers=50, topics=200, seed=42, flaps=10, outages=2, partitions=2, restarts=4, drifts=2)


def generate(data_dir, size):
    directory = os.path.join(data_dir, "events-%d" % size)
    truth = os.path.join(directory, "_truth.json")
    if os.path.exists(truth):
        with open(truth) as f:
            saved = json.load(f)
        if saved.get("params", {}).get("seed") == GEN["seed"]:
            return directory, saved["events"], 0.0
    shutil.rmtree(directory, ignore_errors=True)
    from spark import gen_logs
    started = time.time()
    result = gen_logs.generate(directory, events_target=size, **GEN)
    return directory, result["events"], time.time() - started


def run_report(directory, out, master, driver_memory):
    cmd = [sys.executable, "-m", "spark.report", "--input", directory, "--output", out, "--master", master,
           "--conf", "spark.driver.memory=%s" % driver_memory, "--json"]
    started = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.time() - started
    if proc.returncode != 0:
        raise SystemExit("report failed:\n" + proc.stderr[-4000:])
    summary = json.loads(proc.stdout[proc.stdout.index("{"):])
    return elapsed, summary


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.spark_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000000, 10000000])
    p.add_argument("--master", default="local[2]")
    p.add_argument("--data", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "namesrv-spark-bench"))
    p.add_argument("--driver-memory", default="3g")
    p.add_argument("--json", default=None, help="append the results (JSON lines) to this file")
    args = p.parse_args(argv)
    results = []
    for size in args.sizes:
        directory, lines, gen_seconds = generate(args.data, size)
        out = os.path.join(args.data, "report-%d" % size)
        elapsed, summary = run_report(directory, out, args.master, args.driver_memory)
        result = {"bench": "spark_report", "target": size, "rows": lines, "master": args.master,
                  "wall_seconds": round(elapsed, 1), "report_seconds": summary["seconds"],
                  "rows_per_second": round(lines / elapsed),
                  "rows_per_second_in_report": round(lines / summary["seconds"]),
                  "generate_seconds": round(gen_seconds, 1), "input_mb": round(_size_mb(directory), 1),
                  "cpus": os.cpu_count(), "loadavg": os.getloadavg()[0]}
        results.append(result)
        print(json.dumps(result), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(result) + "\n")
    print("\n%12s %12s %10s %14s" % ("rows", "seconds", "rows/s", "rows/s (jobs)"))
    for r in results:
        print("%12d %12.1f %10d %14d" % (r["rows"], r["wall_seconds"], r["rows_per_second"],
                                          r["rows_per_second_in_report"]))
    return 0


def _size_mb(directory):
    total = 0
    for root, _, files in os.walk(directory):
        total += sum(os.path.getsize(os.path.join(root, name)) for name in files)
    return total / 1e6


if __name__ == "__main__":
    sys.exit(main())
