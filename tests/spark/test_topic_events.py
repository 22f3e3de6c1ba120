"""A topic_route_changed event may name several topics (``topics``): each counts as its own change."""

import json

from spark import ingest, topic_churn


def line(**fields):
    return json.dumps(dict(ts=1700000000000, server="127.0.0.1:9876", event="topic_route_changed", **fields))


def test_grouped_events_are_expanded_per_topic(spark):
    rows = [(line(topics=["A", "B"], before=[], after=["b1"]), "file:/x/127.0.0.1_9876/namesrv-events.log"),
            (line(topic="C", before=["b1"], after=[]), "file:/x/127.0.0.1_9876/namesrv-events.log"),
            (line(before=[], after=["b1"]), "file:/x/127.0.0.1_9876/namesrv-events.log")]
    classified = ingest.classify(spark.createDataFrame(rows, ["value", "file"]))
    got = sorted((r["topic"], r["before"], r["after"], r["added"], r["removed"])
                 for r in topic_churn.topic_events(ingest.events_of(classified)).collect())
    assert got == [("A", [], ["b1"], ["b1"], []), ("B", [], ["b1"], ["b1"], []), ("C", ["b1"], [], [], ["b1"])]
