"""``headline``: the incidents "What happened" lists, from collected rows (no Spark job)."""

from pyspark.sql import types as T

from spark import headline
from spark.collect import LocalTable


def _table(columns, rows):
    types = {"minute": T.LongType(), "code": T.IntegerType(), "requests": T.LongType(), "errors": T.LongType()}
    return LocalTable(T.StructType([T.StructField(c, types.get(c, T.StringType())) for c in columns]), rows)


def test_a_steady_error_rate_is_not_a_spike_and_a_burst_is():
    minute = 60000
    rows = [(i * minute, 105, "GET_ROUTEINFO_BY_TOPIC", 1200, 100 + i % 7) for i in range(60)]   # steady ~100
    rows += [(i * minute, 101, "REGISTER_BROKER", 40, 3) for i in range(60)]
    rows[30] = (30 * minute, 105, "GET_ROUTEINFO_BY_TOPIC", 4200, 3100)                       # a burst
    rows[61] = (1 * minute, 101, "REGISTER_BROKER", 40, 19)                                     # small: under 20
    spikes = headline.error_spikes(_table(["minute", "code", "name", "requests", "errors"], rows))
    assert [(s["minute"], s["code"], s["errors"]) for s in spikes] == [(30 * minute, 105, 3100)]
    assert spikes[0]["baseline"] == 103


def test_brokers_are_summed_over_servers_worst_first():
    columns = ["brokerAddr", "brokerName", "server", "expirations", "flaps", "gapMaxMs"]
    types = {"expirations": T.LongType(), "flaps": T.LongType(), "gapMaxMs": T.LongType()}
    schema = T.StructType([T.StructField(c, types.get(c, T.StringType())) for c in columns])
    rows = [("b1", "a", "s1", 1, 0, 300000), ("b1", "a", "s2", 1, 0, 310000),
            ("b2", "b", "s1", 1, 1, 200000), ("b3", "c", "s1", 0, 0, 31000), ("b4", "d", "s2", 0, 0, 90000)]
    liveness = LocalTable(schema, rows)
    brokers = headline.troubled_brokers(liveness)
    assert [(b["brokerAddr"], b["flaps"], b["expirations"], b["servers"]) for b in brokers] == [
        ("b2", 1, 1, ["s1"]), ("b1", 0, 2, ["s1", "s2"])]
    assert [(g["brokerAddr"], g["server"]) for g in headline.longest_gaps(liveness, 35000)] == [
        ("b1", "s2"), ("b1", "s1"), ("b2", "s1"), ("b4", "s2")]
