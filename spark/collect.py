"""Bring many small DataFrames to the driver in ONE Spark job.

Each frame becomes rows of (name, JSON of the row) and the frames are unioned (by position: their
two columns are the same), so one ``collect`` runs every query; the JSON is decoded on the driver with the frame's schema (known without a job).
A Spark job costs a fixed price (planning, scheduling, a barrier), whatever its size: a report made of
a hundred small jobs spent most of its time on that price, so the small tables, their CSV files and
the page's aggregates are all one job. Frames that share persisted parents read them once.
"""

import json
from functools import reduce

from pyspark.sql import functions as F
from pyspark.sql import types as T


class LocalTable:
    """A collected table: its Spark ``schema`` and ``rows`` (tuples in the schema's column order)."""

    def __init__(self, schema, rows):
        self.schema = schema
        self.columns = [f.name for f in schema.fields]
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def dicts(self):
        return [dict(zip(self.columns, row)) for row in self.rows]

    def column(self, name):
        i = self.columns.index(name)
        return [row[i] for row in self.rows]


# -- SQL's aggregates over collected values, for the joins the driver does (NULLs ignored, NULL if none) --
def sql_max(values):
    present = [v for v in values if v is not None]
    return max(present) if present else None


def sql_min(values):
    present = [v for v in values if v is not None]
    return min(present) if present else None


def last_events(servers):
    """{server: its last event's time} from the collected ``servers`` table (where an open session ends)."""
    return {r["server"]: r["lastTs"] for r in servers.dicts()}


def _decode(value, dtype):
    """A JSON value from ``to_json`` as the Python value Spark's ``collect`` would give."""
    if value is None:
        return None
    if isinstance(dtype, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return int(value)
    if isinstance(dtype, (T.DoubleType, T.FloatType)):
        return float(value)
    if isinstance(dtype, T.ArrayType):
        return [_decode(v, dtype.elementType) for v in value]
    if isinstance(dtype, T.MapType):
        return {k: _decode(v, dtype.valueType) for k, v in value.items()}
    if isinstance(dtype, T.StructType):
        return tuple(_decode(value.get(f.name), f.dataType) for f in dtype.fields)
    return value


#: Tasks of the collect's last stage per core. That stage holds the last step of every frame (a union's
#: partitions are its children's), and each task deserializes the whole union: 54 tasks of a 254 k-line
#: report spent 2.1 CPU seconds deserializing and 2.0 computing. A few tasks per core still share the work.
TASKS_PER_CORE = 2


def _tagged(name, df):
    """``df`` as rows of (name, JSON of the row): ONE expression string, not a py4j call per column."""
    return df.selectExpr("'%s' AS t" % name.replace("\\", "\\\\").replace("'", "\\'"), "to_json(struct(*)) AS j")


def collect(frames):
    """{name: LocalTable} of {name: DataFrame}, in one Spark job (none when ``frames`` is empty)."""
    if not frames:
        return {}
    union = reduce(lambda a, b: a.union(b), [_tagged(name, df) for name, df in frames.items()])
    spark = union.sparkSession
    tasks = TASKS_PER_CORE * max(1, spark.sparkContext.defaultParallelism)
    rows = {name: [] for name in frames}
    for row in union.coalesce(tasks).collect():
        rows[row["t"]].append(row["j"])
    tables = {}
    for name, df in frames.items():
        fields = df.schema.fields
        decoded = []
        for text in rows[name]:
            obj = json.loads(text)
            decoded.append(tuple(_decode(obj.get(f.name), f.dataType) for f in fields))
        tables[name] = LocalTable(df.schema, decoded)
    return tables
