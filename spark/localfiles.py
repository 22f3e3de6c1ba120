"""A collected table's CSV and Parquet files, written on the driver (no Spark job).

The CSV is what ``output.csv_frame`` and Spark's CSV writer made of the same table: arrays of strings
joined with ';', a readable UTC twin ``<column>Utc`` after each epoch-ms column, doubles as Java prints
them (``1.0E-4``), ``true``/``false``, an empty string as ``""`` and NULL as nothing, rows sorted by the
table's order with NULLs first. The Parquet file is written with pyarrow in a driver-local directory
and copied up like the charts (``OutputDir.put_dir``), so Spark reads it back with the same columns.
"""

import datetime
import decimal
import io
import math
import os

from pyspark.sql import types as T

PARQUET_PART = "part-00000-driver.snappy.parquet"
_TRIM = "".join(chr(c) for c in range(33))   # what Spark's CSV writer trims from both ends of a value


def java_double(x):
    """``x`` as Java's ``Double.toString`` writes it (what Spark's CSV writer prints for a double)."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = repr(x)
        return text if "." in text else text + ".0"
    sign, digits, exponent = decimal.Decimal(repr(x)).as_tuple()
    digits = "".join(str(d) for d in digits)
    power = len(digits) - 1 + exponent
    digits = digits.rstrip("0") or "0"
    return "%s%s.%sE%d" % ("-" if sign else "", digits[0], digits[1:] or "0", power)


def utc_text(ms):
    """Epoch ms as ``yyyy-MM-dd HH:mm:ss.SSS`` in UTC (the CSV's ``<column>Utc`` twin)."""
    when = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return when.strftime("%Y-%m-%d %H:%M:%S.") + "%03d" % (ms % 1000)


def text(value, dtype):
    """One value as CSV text before quoting (None stays None: written as nothing)."""
    if value is None:
        return None
    if isinstance(dtype, T.ArrayType):
        return ";".join(v for v in value if v is not None)
    if isinstance(dtype, T.BooleanType):
        return "true" if value else "false"
    if isinstance(dtype, (T.DoubleType, T.FloatType)):
        return java_double(value)
    return str(value)


def quoted(value):
    """A field as Spark's CSV writer quotes it (escape character ``\\``)."""
    if value is None:
        return ""
    value = value.strip(_TRIM)
    if value == "":
        return '""'
    if '"' in value:
        return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"')
    if any(c in value for c in ",\n\r"):
        return '"%s"' % value
    return value


def sort_key(order, columns):
    """Ascending with NULLs first, as ``sortWithinPartitions`` ordered the CSV rows; then the whole row."""
    idx = [columns.index(name) for name in order]

    def key(row):
        return tuple((row[i] is not None, row[i] if row[i] is not None else 0) for i in idx), \
            tuple((v is not None, repr(v)) for v in row)
    return key


def csv_text(table, time_columns=(), order=()):
    """The table's CSV (header row first) as one string."""
    header, makers = [], []
    for i, field in enumerate(table.schema.fields):
        header.append(field.name)
        makers.append(lambda row, i=i, t=field.dataType: text(row[i], t))
        if field.name in time_columns:
            header.append(field.name + "Utc")
            makers.append(lambda row, i=i: None if row[i] is None else utc_text(row[i]))
    out = io.StringIO()
    out.write(",".join(quoted(h) for h in header) + "\n")
    for row in sorted(table.rows, key=sort_key(order, table.columns)):
        out.write(",".join(quoted(make(row)) for make in makers) + "\n")
    return out.getvalue()


def _arrow_type(dtype):
    import pyarrow as pa
    simple = {T.LongType: pa.int64(), T.IntegerType: pa.int32(), T.ShortType: pa.int16(), T.ByteType: pa.int8(),
              T.DoubleType: pa.float64(), T.FloatType: pa.float32(), T.StringType: pa.string(),
              T.BooleanType: pa.bool_()}
    for spark_type, arrow_type in simple.items():
        if isinstance(dtype, spark_type):
            return arrow_type
    if isinstance(dtype, T.ArrayType):
        return pa.list_(_arrow_type(dtype.elementType))
    if isinstance(dtype, T.MapType):
        return pa.map_(_arrow_type(dtype.keyType), _arrow_type(dtype.valueType))
    raise TypeError("no Parquet column for %s" % dtype)


def write_parquet(table, directory):
    """``directory/PARQUET_PART``: the table as one Parquet file Spark reads back with the same schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    os.makedirs(directory, exist_ok=True)
    schema = pa.schema([pa.field(f.name, _arrow_type(f.dataType)) for f in table.schema.fields])
    columns = list(zip(*table.rows)) if table.rows else [[] for _ in table.schema.fields]
    arrays = [pa.array(list(values), type=field.type) for values, field in zip(columns, schema)]
    pq.write_table(pa.Table.from_arrays(arrays, schema=schema), os.path.join(directory, PARQUET_PART),
                   compression="snappy")
    return os.path.join(directory, PARQUET_PART)
