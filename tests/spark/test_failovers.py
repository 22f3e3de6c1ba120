"""Controller failovers (``spark.failovers``): episodes paired on the driver from collected rows, and the
whole report on a generated fleet whose controller lost masters (``gen_controller``), against its truth."""

from pyspark.sql import types as T

from spark import failovers
from spark.collect import LocalTable

_L, _S = T.LongType(), T.StringType()
EVENTS = T.StructType([T.StructField(name, _L if name in ("ts", "masterBrokerId", "masterEpoch", "masterlessMillis")
                                     else _S) for name in failovers.COLUMNS])
SERVERS = T.StructType([T.StructField("server", _S), T.StructField("firstTs", _L), T.StructField("lastTs", _L)])


def run(rows, last=100000):
    events = LocalTable(EVENTS, [tuple(r.get(c) for c in failovers.COLUMNS) for r in rows])
    servers = LocalTable(SERVERS, [("s1", 0, last), ("s2", 0, last + 5000)])
    lost, no_master = failovers.failovers(events, servers)
    return lost.dicts(), no_master.dicts()


def ev(ts, event, server="s1", name="broker-a", **fields):
    return dict(fields, ts=ts, event=event, server=server, brokerName=name)


def test_a_loss_seen_by_two_leaders_is_one_failover_ending_at_the_election():
    lost, no_master = run([
        ev(1000, failovers.INACTIVE, cluster="C", masterBrokerId=1, masterAddress="a1", masterEpoch=1),
        ev(3000, failovers.INACTIVE, server="s2", cluster="C", masterBrokerId=1, masterAddress="a1", masterEpoch=1),
        ev(4000, failovers.ELECTED, server="s2", cluster="C", masterBrokerId=2, masterAddress="a2", masterEpoch=2,
           trigger="controller", masterlessMillis=1000),
        ev(9000, failovers.ELECTED, cluster="C", masterBrokerId=1, masterAddress="a1", masterEpoch=3,
           trigger="admin")])                          # a switchover of a live master: not a failover
    assert no_master == []
    assert lost == [dict(cluster="C", brokerName="broker-a", lostAt=1000, oldMasterId=1, oldMasterAddress="a1",
                         oldEpoch=1, electedAt=4000, newMasterId=2, newMasterAddress="a2", newEpoch=2,
                         trigger="controller", masterlessMs=3000, recovered=True, failedElections=0,
                         lossInferred=False, servers=["s1", "s2"], routedAt=None, routedMs=None, routedVia=None,
                         lastRoutedAt=None, routedBy=None)]


def test_failed_elections_then_none_until_the_end_and_a_loss_before_the_input():
    lost, no_master = run([
        ev(10000, failovers.INACTIVE, name="b", cluster="C", masterBrokerId=2, masterAddress="b2", masterEpoch=4),
        ev(11000, failovers.UNAVAILABLE, name="b", trigger="controller"),
        ev(16000, failovers.UNAVAILABLE, name="b", trigger="controller"),
        ev(50000, failovers.ELECTED, name="c", cluster="D", masterBrokerId=1, masterAddress="c1", masterEpoch=7,
           trigger="broker", masterlessMillis=20000)], last=70000)
    by_name = {r["brokerName"]: r for r in lost}
    assert by_name["b"]["recovered"] is False and by_name["b"]["electedAt"] is None
    assert (by_name["b"]["cluster"], by_name["b"]["masterlessMs"], by_name["b"]["failedElections"]) == ("C", 60000, 2)
    assert (by_name["c"]["lostAt"], by_name["c"]["masterlessMs"], by_name["c"]["lossInferred"]) == (30000, 20000, True)
    assert by_name["c"]["oldMasterId"] is None and by_name["c"]["newMasterId"] == 1
    assert no_master == [dict(cluster="C", brokerName="b", firstAt=11000, lastAt=16000, attempts=2,
                              masterBackAt=None, servers=["s1"])]


def routed(ts, address, server="s1", trigger="registration", name="broker-a"):
    return ev(ts, failovers.ROUTED, server=server, name=name, cluster="C", masterBrokerId=0, masterAddress=address,
              masterEpoch=None, trigger=trigger)


def test_a_failover_is_routed_when_the_first_name_server_names_the_elected_master():
    lost, _ = run([
        routed(100, "a1"), routed(120, "a1", server="s2"),           # the first master's registrations
        ev(1000, failovers.INACTIVE, cluster="C", masterBrokerId=1, masterAddress="a1", masterEpoch=1),
        ev(4000, failovers.ELECTED, cluster="C", masterBrokerId=2, masterAddress="a2", masterEpoch=2,
           trigger="controller", masterlessMillis=3000),
        routed(4000, "a2", trigger="controller"),                     # the leader's controller, same ms
        routed(5500, "a2", server="s2"), routed(7000, "a2"),          # s2 by registration; s1's own later
        routed(8000, "a1", server="s2"),                              # the old master, not elected: ignored
        ev(20000, failovers.INACTIVE, cluster="C", masterBrokerId=2, masterAddress="a2", masterEpoch=2),
        ev(21000, failovers.ELECTED, cluster="C", masterBrokerId=1, masterAddress="a1", masterEpoch=3,
           trigger="controller", masterlessMillis=1000),
        routed(21500, "a1", server="s2"),
        ev(40000, failovers.INACTIVE, name="b", cluster="C", masterBrokerId=1, masterAddress="b1", masterEpoch=1),
        ev(41000, failovers.ELECTED, name="b", cluster="C", masterBrokerId=2, masterAddress="b2", masterEpoch=2,
           trigger="controller", masterlessMillis=1000),
        routed(60000, "a2", name="b")])                               # another group's address: no route
    first, second, other = sorted(lost, key=lambda r: r["lostAt"])
    assert (first["routedAt"], first["routedMs"], first["routedVia"], first["lastRoutedAt"], first["routedBy"]) == (
        4000, 3000, "controller", 5500, ["s1", "s2"])
    assert (second["routedAt"], second["routedMs"], second["routedVia"], second["lastRoutedAt"],
            second["routedBy"]) == (21500, 1500, "registration", 21500, ["s2"])
    assert other["recovered"] and other["routedAt"] is None and other["routedBy"] is None


def test_routes_alone_are_no_controller_events():
    rows = [routed(100, "a1"), routed(200, "a1", server="s2")]
    lost, no_master = run(rows)
    assert lost == [] and no_master == []
    assert failovers.controller_event_count(LocalTable(EVENTS, [tuple(r.get(c) for c in failovers.COLUMNS)
                                                                for r in rows])) == 0


def test_the_report_finds_every_injected_failover(failover_report, read_table):
    out, summary, truth = failover_report
    assert summary["tables"]["controller_failovers"] == len(truth["controller"]) == 5
    got = sorted(read_table(out, "controller_failovers"), key=lambda r: r["lostAt"])
    for row, want in zip(got, sorted(truth["controller"], key=lambda r: r["lostAt"])):
        assert (row["brokerName"], row["cluster"], row["lostAt"], row["oldMasterId"], row["oldMasterAddress"],
                row["oldEpoch"], row["recovered"], row["failedElections"]) == (
            want["brokerName"], want["cluster"], want["lostAt"], want["oldMasterId"], want["oldMasterAddress"],
            want["oldEpoch"], want["recovered"], want["failedElections"])
        if want["recovered"]:
            assert (row["electedAt"], row["masterlessMs"], row["newMasterId"], row["newMasterAddress"],
                    row["newEpoch"]) == (want["electedAt"], want["masterlessMs"], want["newMasterId"],
                                         want["newMasterAddress"], want["newEpoch"])
            assert (row["routedAt"], row["routedMs"], row["routedVia"], row["lastRoutedAt"], len(row["routedBy"])) \
                == (want["routedAt"], want["routedMs"], want["routedVia"], want["lastRoutedAt"], want["routers"])
        else:   # until the leader's last event: its server_stopped at the end
            assert (row["electedAt"], row["masterlessMs"]) == (None, truth["end"] - want["lostAt"])
            assert row["routedAt"] is None
    no_master = read_table(out, "controller_no_master")
    assert sorted((r["brokerName"], r["attempts"], r["masterBackAt"] is None) for r in no_master) == sorted(
        (w["brokerName"], 3, not w["recovered"]) for w in truth["controller"] if w["kind"] == "no_master")
    assert summary["healthy"] is False


def test_the_headline_says_when_clients_were_routed_in_milliseconds():
    from spark.htmlreport import failover_text
    row = dict(cluster="C", brokerName="broker-a", lostAt=1795815467357, oldMasterId=1, oldMasterAddress="a1",
               newMasterId=2, newMasterAddress="a2", newEpoch=2, trigger="controller", masterlessMs=10,
               recovered=True, failedElections=0, routedMs=14, routedVia="controller")
    assert failover_text(row).endswith("broker 2 (a2) elected after 10 ms, epoch 2 (controller); routed after 14 ms "
                                       "(via controller)")
    row.update(routedMs=None, routedVia=None, masterlessMs=61500)
    assert failover_text(row).endswith("elected after 1 min 2 s, epoch 2 (controller); no name server logged its "
                                       "route")
