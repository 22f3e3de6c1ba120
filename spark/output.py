"""Writing the report directory on any Hadoop file system (local, hdfs://, s3a://).

Every table is ``<out>/<name>.parquet/`` and ONE CSV file with a header row, ``<out>/<name>.csv``.
A large table is written by Spark's writers: the CSV with ``coalesce(1)`` into a temporary directory,
its single part file renamed with the Hadoop ``FileSystem`` API through the JVM (on s3a a rename is a
copy). A small table, already collected to the driver, is written there (``localfiles``) and copied
up with ``copyFromLocalFile``, like the charts and ``report.html``. Nothing assumes the output is on
the driver's disk.
"""

import os
import shutil
import tempfile

from pyspark.sql import functions as F
from pyspark.sql import types as T

from spark import localfiles


def csv_frame(df, time_columns=()):
    """``df`` with what CSV cannot hold turned into text: arrays joined with ';', maps/structs as JSON.

    Each epoch-millisecond column named in ``time_columns`` gets a readable UTC twin ``<name>Utc``.
    """
    columns = []
    for field in df.schema.fields:
        col = F.col(field.name)
        if isinstance(field.dataType, T.ArrayType) and isinstance(field.dataType.elementType, T.StringType):
            col = F.concat_ws(";", col)
        elif isinstance(field.dataType, (T.ArrayType, T.MapType, T.StructType)):
            col = F.to_json(col)
        columns.append(col.alias(field.name))
        if field.name in time_columns:
            readable = F.date_format(F.timestamp_millis(F.col(field.name)), "yyyy-MM-dd HH:mm:ss.SSS")
            columns.append(readable.alias(field.name + "Utc"))
    return df.select(*columns)


class OutputDir:
    """The report directory ``root`` on its own file system."""

    def __init__(self, spark, root):
        self.spark = spark
        self.root = root.rstrip("/") or "/"
        jvm = spark._jvm
        self._Path = jvm.org.apache.hadoop.fs.Path
        self._root_path = self._Path(self.root)
        self.fs = self._root_path.getFileSystem(spark._jsc.hadoopConfiguration())
        self.fs.mkdirs(self._root_path)

    def path(self, relative):
        return self.root + "/" + relative

    def _p(self, relative):
        return self._Path(self.path(relative))

    def exists(self, relative):
        return self.fs.exists(self._p(relative))

    def delete(self, relative):
        p = self._p(relative)
        if self.fs.exists(p):
            self.fs.delete(p, True)

    def write_table(self, name, df, time_columns=(), order=()):
        """Parquet + single-file CSV (rows sorted by ``order``); returns the table read back from Parquet."""
        parquet = self.path(name + ".parquet")
        df.write.mode("overwrite").parquet(parquet)
        # read back with the schema just written: inferring it from the files is one more Spark job per table
        written = self.spark.read.schema(df.schema).parquet(parquet)
        self.write_csv(name + ".csv", csv_frame(written, time_columns), order)
        return written

    def write_csv(self, relative, df, order=()):
        tmp = relative + "._tmp"
        self.delete(tmp)
        single = df.coalesce(1)
        if order:  # one partition: a local sort in that task, no range-partitioning job
            single = single.sortWithinPartitions(*order)
        single.write.mode("overwrite").option("header", "true").csv(self.path(tmp))
        parts = [s.getPath() for s in (self.fs.globStatus(self._p(tmp + "/part-*")) or [])]
        target = self._p(relative)
        if self.fs.exists(target):
            self.fs.delete(target, False)
        if parts:
            if not self.fs.rename(parts[0], target):
                raise IOError("cannot move %s to %s" % (parts[0], target))
        else:  # no part file at all: still leave a CSV with its header
            stream = self.fs.create(target, True)
            stream.write(bytearray((",".join(df.columns) + "\n").encode("utf-8")))
            stream.close()
        self.delete(tmp)

    def put_file(self, local_path, relative):
        """Copy a file made on the driver into the report directory."""
        local = self._Path("file://" + os.path.abspath(local_path))
        self.fs.copyFromLocalFile(False, True, local, self._p(relative))

    def put_local_table(self, name, table, time_columns=(), order=()):
        """A table collected to the driver (``collect.LocalTable``) as ``<name>.parquet/`` and ``<name>.csv``,
        written on the driver (``localfiles``) and copied up: no Spark job."""
        with LocalStaging() as base:
            part = localfiles.write_parquet(table, os.path.join(base, name + ".parquet"))
            self.delete(name + ".parquet")
            self.put_file(part, name + ".parquet/" + os.path.basename(part))
            page = os.path.join(base, name + ".csv")
            with open(page, "w", encoding="utf-8", newline="") as f:
                f.write(localfiles.csv_text(table, time_columns, order))
            self.put_file(page, name + ".csv")


class LocalStaging:
    """A driver-local temporary directory for charts and HTML, removed on exit."""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="namesrv-report-")
        return self.dir

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)
        return False
