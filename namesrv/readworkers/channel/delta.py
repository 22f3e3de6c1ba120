"""What replica messages carry of the route tables: every topic once, then only changed ones.

The main process's tables change topic by topic (a broker's registration touches its
own topics), so after a worker's first, full copy, each publication carries the current
QueueData (by shape, rows.topic_shapes) and static-topic mappings of the topics changed since the previous one
(``None``: the topic is gone), in parts of ``PART_TOPICS`` topics, then one final message
with the broker-level tables whole (one entry per broker or cluster, not per topic). A
part states values, not differences, so applying one twice, or one that overlaps a full
copy, is harmless. Parts are small so that neither process holds its reactor for long:
the main process encodes one part per reactor turn, a worker decodes and applies one
part per message.
"""

from namesrv.routes import rows

#: topics per part of a publication of several (a mass disconnect's, a full copy): small enough to encode,
#: decode or apply in a fraction of a reactor turn, one a turn on each side (a worker sharing its core holds its
#: reads for the wall time of a part; figures: bench/results/design-figures.md#publication-parts)
PART_TOPICS = 500
#: up to this many topics a publication is one message (a registration of a few thousand topics, or two:
#: sent with its acknowledgement, applied in one turn)
ONE_MESSAGE_TOPICS = 10000


def encode_topics(routes, topics, moves=None):
    """The current QueueData of ``topics`` by shape (rows.topic_shapes, grouped; "gone" for topics that are
    gone) and the static-topic mappings those topics have (a topic of the part not named has none).
    ``moves``: (topics, map) naming each of ``topics`` once with its map now (rows.moved_shapes)."""
    mappings = routes.topic_queue_mapping_info_table
    shapes = rows.moved_shapes(moves) if moves is not None else rows.topic_shapes(routes, topics, grouped=True)
    return {"shapes": shapes,
            "mappings": {topic: mappings[topic] for topic in topics if topic in mappings} if mappings else {},
            "partTopics": True}


def encode_brokers(routes, names=None):
    """The broker-level tables: every broker's row (``names`` None), or the rows of the broker names given
    (those gone listed in "goneBrokers") with the clusters each of them is in ("memberships": a broker's cluster
    membership changes only with its name among those given), and the filter-server table whole (one row per
    filtered address: small). Not the cluster table whole: a fleet's 1,000 brokers registering one after
    another would each send (and a worker compare) every cluster's 1,000 names."""
    if names is None:
        return rows.broker_level_rows(routes)
    table, clusters = routes.broker_addr_table, routes.cluster_addr_table
    present = [table[name] for name in names if name in table]
    return {"brokers": rows.broker_rows(routes, present), "goneBrokers": [name for name in names if name not in table],
            "memberships": [[name, sorted(cluster for cluster, members in clusters.items() if name in members)]
                            for name in names],
            "filters": rows.filter_rows(routes)}


def apply_topics(routes, part, reset=False):
    """Apply one part to a worker's RouteInfoManager (``reset``: it replaces every topic).

    The data comes from our own main process over a private pipe, so it is trusted as
    to shape; a malformed part raises (KeyError, TypeError, ValueError).
    """
    mappings = part["mappings"]
    if reset:
        routes.replace_from_rows(shapes=part["shapes"], mappings={t: i for t, i in mappings.items() if i is not None})
        return
    if part.get("partTopics"):   # the part's topics without a mapping have none
        table = routes.topic_queue_mapping_info_table
        if table:
            shapes = part["shapes"]
            topics = shapes["gone"] + [t for group in shapes["groups"] for t in group] if "groups" in shapes \
                else list(shapes["topics"])
            mappings = dict(dict.fromkeys([t for t in topics if t in table and t not in mappings]), **mappings)
    routes.apply_topic_shapes(part["shapes"], mappings)


def apply_brokers(routes, tables):
    """Bring the broker-level tables to the main process's (the bodies of unchanged brokers' topics stay)."""
    routes.update_broker_rows(tables["brokers"], tables.get("clusters"), tables["filters"], tables.get("goneBrokers"),
                              tables.get("memberships"))
