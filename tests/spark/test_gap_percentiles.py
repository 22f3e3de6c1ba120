"""``liveness.rank_percentiles``: the value at rank ceil(q × n) of a broker's sorted gaps, at any count
(``percentile_approx`` at accuracy 10,000, which it replaces, was exact only up to about that many)."""

import random

from pyspark.sql import functions as F

from spark import liveness
from tests.spark import oracle


def _percentiles(spark, groups):
    rows = [(key, gap) for key, gaps in groups.items() for gap in gaps]
    df = spark.createDataFrame(rows, "key string, gap long")
    got = (df.groupBy("key").agg(F.array_sort(F.collect_list("gap")).alias("g"))
           .select("key", liveness.rank_percentiles(F.col("g")).alias("p")).collect())
    return {r["key"]: r["p"] for r in got}


def test_ranks_are_exact_below_and_far_above_ten_thousand_gaps(spark):
    rng = random.Random(7)
    groups = {"one": [30000], "hundred": [rng.randrange(1, 10 ** 6) for _ in range(100)],
              "many": [rng.randrange(1, 10 ** 9) for _ in range(25000)]}
    got = _percentiles(spark, groups)
    for key, gaps in groups.items():
        assert got[key] == [oracle.rank_percentile(gaps, 0.5), oracle.rank_percentile(gaps, 0.99)], key
    assert got["hundred"] == [sorted(groups["hundred"])[49], sorted(groups["hundred"])[98]]    # ranks 50, 99


def test_a_broker_without_gaps_has_no_percentiles(spark):
    assert _percentiles(spark, {"k": [None]})["k"] is None
