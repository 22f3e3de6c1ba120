"""``bench.scenarios.spark_floor``'s passes (the benchmark itself is run by hand, its figures are never asserted)."""

import os

from spark import progress

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data")


def test_the_floor_s_passes_parse_or_classify_every_line_and_keep_nothing(spark):
    from bench.scenarios import spark_floor
    kept = spark.sparkContext._jsc.sc().getPersistentRDDs().size()
    inputs = [os.path.join(DATA, "eventlog"), os.path.join(DATA, "java49")]
    tracker = spark.sparkContext.statusTracker()
    for classify in (False, True):
        spark.sparkContext.setJobGroup("floor-%s" % classify, "bench.spark_floor")
        try:
            seconds = spark_floor.parse_seconds(spark, inputs, classify=classify)
        finally:
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
        assert isinstance(seconds, float) and seconds >= 0
        # the status tracker learns of a job from Spark's listener bus, after the action has returned
        progress.listener_bus_settler(spark, timeout_ms=60000)()
        jobs = tracker.getJobIdsForGroup("floor-%s" % classify)
        assert len(jobs) == 1                        # one pass: a job that writes nothing
        assert tracker.getJobInfo(jobs[0]).status == "SUCCEEDED"
    assert spark.sparkContext._jsc.sc().getPersistentRDDs().size() == kept
