"""Are two report directories the same? ``python -m bench spark_compare OLD_OUT NEW_OUT``

For every ``<table>.parquet`` of OLD_OUT: the rows (read with pyarrow, compared as sorted lists) and the
``<table>.csv`` bytes (row order included). Prints one line per table and the first differing CSV line;
exits 1 if anything differs. Used to check that a faster report gives the same answers (no Spark needed).
"""

import os
import sys

from bench.lib import options

OPTIONS = (options.Option("old_out", "the first report's --output directory", metavar="OLD_OUT"),
           options.Option("new_out", "the second report's --output directory", metavar="NEW_OUT"))


def rows(path):
    import pyarrow.parquet as pq
    return sorted(repr(sorted(r.items())) for r in pq.read_table(path).to_pylist())


def compare(old, new):
    same = True
    for name in sorted(n[:-len(".parquet")] for n in os.listdir(old) if n.endswith(".parquet")):
        same_rows = rows(os.path.join(old, name + ".parquet")) == rows(os.path.join(new, name + ".parquet"))
        with open(os.path.join(old, name + ".csv"), "rb") as a, open(os.path.join(new, name + ".csv"), "rb") as b:
            csv_old, csv_new = a.read().decode("utf-8").splitlines(), b.read().decode("utf-8").splitlines()
        print("%-26s rows %-4s csv %s" % (name, "same" if same_rows else "DIFF", "same" if csv_old == csv_new
                                           else "DIFF"))
        if csv_old != csv_new:
            diff = next((i for i, (x, y) in enumerate(zip(csv_old, csv_new)) if x != y), min(len(csv_old),
                                                                                            len(csv_new)))
            print("  line %d:\n   old: %s\n   new: %s" % (diff, (csv_old + [""])[diff][:200],
                                                          (csv_new + [""])[diff][:200]))
        same = same and same_rows and csv_old == csv_new
    return same


def main(argv=None):
    args = options.parse("spark_compare", __doc__, OPTIONS, argv)
    return 0 if compare(args.old_out, args.new_out) else 1


if __name__ == "__main__":
    sys.exit(main())
