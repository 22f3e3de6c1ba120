"""PySpark reports over NameServer event logs: ``python -m spark.report --input DIR --output OUT``.

Reads our JSON event logs (``namesrv-events.log*``, written by ``namesrv.observe.eventlog``) and the Java
NameServer's ``namesrv.log*`` (logback text) into one normalized event table, then writes one table per
report (Parquet + a single CSV) and ``report.html`` with PNG charts, in a handful of Spark jobs
(``report.run``). Modules, one job each:

- ``session``: the SparkSession (local[*] by default, the cluster's master under spark-submit);
- ``schema``: the normalized event columns and the JSON event schema;
- ``javalog``: Java ``namesrv.log`` line layout and message patterns (4.9 and 5.x) as Spark columns;
- ``ingest``: read, classify (event / ignored / continuation / malformed / blank), normalize, stage;
- ``liveness``: broker sessions, heartbeat gaps, expirations, flaps (report 1);
- ``heartbeat``: heartbeat interval distribution and drift (report 2);
- ``request_mix``: request mix, latency percentiles and error rates (report 3);
- ``topic_churn``: topic broker-set churn and vanished topics (report 4);
- ``disagreement``: brokers known to one name server but not another (report 5, on the driver from the
  collected sessions);
- ``failovers``: broker groups whose master the controller replaced, or could not (report 6, on the driver
  from the collected controller events);
- ``collect``: many small DataFrames to the driver in one Spark job;
- ``output``: Parquet/CSV writers and file moves through the Hadoop FileSystem API (hdfs://, s3a://);
- ``localfiles``: a collected table's CSV (as Spark writes it) and Parquet (pyarrow), made on the driver;
- ``digest``: the page's aggregates from the collected tables; ``headline``: "What happened", incidents first;
- ``charts`` and ``htmlreport``: matplotlib PNGs and the HTML summary (small aggregates only);
- ``incremental``: ``--incremental`` staging, one partition per input file, re-reading only changed files;
- ``progress``: the terminal progress line, the per-phase profile and the closing summary line;
- ``report``: the entry point; ``gen_logs``: synthetic logs with a ground-truth sidecar (``gen_controller``:
  the controller's failovers in them);
- ``package``: ``spark.zip`` and a launcher for ``spark-submit --py-files`` (``make spark-package``).

Nothing here imports the server: the jobs run on a cluster without it.
"""
