"""The small tables' CSV as Spark's CSV writer wrote it, and their Parquet, made on the driver."""

from pyspark.sql import types as T

from spark import localfiles
from spark.collect import LocalTable


def test_doubles_are_printed_as_java_does():
    cases = {0.5: "0.5", 1.0: "1.0", 1e-4: "1.0E-4", 0.001: "0.001", 12345678.0: "1.2345678E7", -2.5e-7: "-2.5E-7",
             0.0: "0.0", 1e7: "1.0E7", 9999999.5: "9999999.5"}
    assert {x: localfiles.java_double(x) for x in cases} == cases


def test_fields_are_quoted_and_trimmed_as_spark_writes_them():
    assert [localfiles.quoted(v) for v in (None, "", " a ", "json,java", 'say "hi"', "plain")] == [
        "", '""', "a", '"json,java"', '"say \\"hi\\""', "plain"]


def test_csv_rows_sorted_nulls_first_with_readable_time_twins():
    schema = T.StructType([T.StructField("server", T.StringType()), T.StructField("at", T.LongType()),
                           T.StructField("known", T.ArrayType(T.StringType())), T.StructField("ok", T.BooleanType())])
    table = LocalTable(schema, [("s2", 61001, ["a", "b"], True), (None, 0, [], False), ("s1", None, None, None)])
    assert localfiles.csv_text(table, ("at",), ("server",)).splitlines() == [
        "server,at,atUtc,known,ok", ',0,1970-01-01 00:00:00.000,"",false', "s1,,,,",
        "s2,61001,1970-01-01 00:01:01.001,a;b,true"]


def test_parquet_keeps_the_columns_and_their_types(tmp_path):
    import pyarrow.parquet as pq
    schema = T.StructType([T.StructField("n", T.LongType()), T.StructField("bucketS", T.IntegerType()),
                           T.StructField("rate", T.DoubleType()), T.StructField("known", T.ArrayType(T.StringType()))])
    part = localfiles.write_parquet(LocalTable(schema, [(1, 2, 0.5, ["x"]), (None, None, None, None)]), str(tmp_path))
    read = pq.read_table(part)
    assert [str(t) for t in read.schema.types] == ["int64", "int32", "double", "list<element: string>"]
    assert read.to_pylist() == [{"n": 1, "bucketS": 2, "rate": 0.5, "known": ["x"]},
                                {"n": None, "bucketS": None, "rate": None, "known": None}]
    empty = localfiles.write_parquet(LocalTable(schema, []), str(tmp_path / "empty"))
    assert pq.read_table(empty).num_rows == 0
