"""What a Spark report cannot go below on this machine: ``python -m bench spark_floor --input DIR``.

A report must start a session and parse every JSON line once; this measures those two alone, with the
report's own session settings (its JIT options and class archive) and its own parse (``from_json`` with
``schema.JSON_READ_SCHEMA`` over ``spark.read.text``, every row read, nothing kept):

- ``session``: from the call to the SparkSession's existence (the JVM start included);
- ``parse cold``: the first parse, in a JVM that has compiled nothing of it yet (what a report pays);
- ``parse warm``: the same parse again, ``--repeat`` times (the best), once the JIT has compiled it;
- ``classify warm``: the report's whole staging expression (``ingest.classify``), warm (the best of
  ``--repeat`` after one run that compiles it).

``--jit c2`` measures with the JVM's default tiers instead of the report's choice (C1 for inputs below
``session.SMALL_INPUT_BYTES``, C2 for the hot loops past it). With ``--extrapolate LINES`` the warm parse and
staging expression are scaled to an input of LINES lines: what they alone would take on these cores, warm,
with no table computed.

Spark's other ways to read JSON were measured against ``from_json`` on 254,361 lines (C1, 2 cores, warm):
``json_tuple`` 4.0-4.8 s and ``parse_json`` + ``variant_get`` (7 fields) 6.4-7.3 s against 3.7-4.2 s.

Run it by hand: its figures are never part of the test suite.
"""

import json
import sys
import time

from bench.lib import options


def parse_seconds(spark, inputs, classify=False):
    """Seconds to read and parse (or classify) every line once: a job that writes nothing."""
    from pyspark.sql import functions as F
    from spark import ingest
    from spark.schema import JSON_READ_SCHEMA
    started = time.time()
    lines, _ = ingest.read_lines(spark, inputs)
    frame = ingest.classify(lines) if classify else lines.select(F.from_json("value", JSON_READ_SCHEMA).alias("j"))
    with ingest.split_over_cores(spark):
        frame.write.format("noop").mode("overwrite").save()
    return round(time.time() - started, 2)


def measure(inputs, master="local[2]", jit="report", repeat=2):
    from spark import ingest, session
    from spark.classcache import ClassCache
    conf = session.quick_jit_conf(ingest.split_inputs(inputs)) if jit == "report" else {}
    cache = ClassCache() if jit == "report" else None
    started = time.time()
    spark = session.launch(master, conf, cache)
    result = {"master": master, "jit": jit, "session_s": round(time.time() - started, 2)}
    try:
        result["parse_cold_s"] = parse_seconds(spark, inputs)
        result["lines"] = ingest.read_lines(spark, inputs)[0].count()
        result["parse_warm_s"] = min(parse_seconds(spark, inputs) for _ in range(max(1, repeat)))
        parse_seconds(spark, inputs, classify=True)   # its own expressions compiled
        result["classify_warm_s"] = min(parse_seconds(spark, inputs, classify=True) for _ in range(max(1, repeat)))
    finally:
        spark.stop()
        code = session.shutdown_jvm()
        if cache is not None:   # a JVM writing the class archive does it on its way out
            cache.finish(code)
    return result


OPTIONS = (
    options.Option("--input", "the report's --input (files or directories, comma-separated)", required=True),
    options.MASTER("local[2]"),
    options.Option("--jit", "the report's JIT choice, or the JVM's default tiers", choices=("report", "c2"),
                   default="report"),
    options.REPEAT(2, "warm parses; the best is kept"),
    options.Option("--extrapolate", "also print the warm parse's and staging expression's times scaled to LINES "
                   "lines", type=int, metavar="LINES"),
)


def main(argv=None):
    args = options.parse("spark_floor", __doc__, OPTIONS, argv)
    result = measure(args.input, args.master, args.jit, args.repeat)
    if args.extrapolate and result["lines"]:
        result["parse_warm_extrapolated_s"] = round(result["parse_warm_s"] * args.extrapolate / result["lines"], 1)
        result["classify_warm_extrapolated_s"] = round(result["classify_warm_s"] * args.extrapolate / result["lines"], 1)
        result["extrapolated_lines"] = args.extrapolate
    print(json.dumps(result), flush=True)
    print("%(lines)d lines on %(master)s (%(jit)s JIT): session %(session_s)s s, parse cold %(parse_cold_s)s s, "
          "warm %(parse_warm_s)s s, classify warm %(classify_warm_s)s s" % result, flush=True)
    if "parse_warm_extrapolated_s" in result:
        print("at %(extrapolated_lines)d lines, warm: the parse alone %(parse_warm_extrapolated_s)s s, the staging "
              "expression %(classify_warm_extrapolated_s)s s" % result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
