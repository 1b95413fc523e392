#!/usr/bin/env python3
"""DuckDB baseline for `sdcflow bench tabulate`: the same table on the same Parquet.

The straightforward SQL tabulation with per-contributor statistics: GROUPING SETS over every
hierarchy-level combination *with the contributor in every set*, then count / sum / two largest
per cell. Prints cells, seconds and peak RSS. Usage:

    python3 benches/tabulate_duckdb.py DATA_DIR --dims 4 [--threads 2] [--memory-limit 8GB]
"""
import argparse
import itertools
import resource
import sys
import time

import duckdb

DIMS = {
    4: [("geo", [2, 2, 2]), ("nace", [1, 2]), ("sex", None), ("age_band", None)],
    7: [("geo", [2, 2, 2]), ("nace", [1, 2]), ("occupation", [1, 1]), ("education", [1, 1]),
        ("sex", None), ("age_band", None), ("contract", None)],
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--dims", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory-limit", default="8GB")
    a = ap.parse_args()
    cols, exprs, levels = [], [], []
    for var, widths in DIMS[a.dims]:
        lv = []
        if widths:
            end = 0
            for i, w in enumerate(widths):
                end += w
                name = f"{var}_{i + 1}"
                exprs.append(f"substr({var}, 1, {end}) AS {name}" if i + 1 < len(widths) else f"{var} AS {name}")
                lv.append(name)
        else:
            exprs.append(f"{var} AS {var}_1")
            lv.append(f"{var}_1")
        levels.append(lv)
        cols.extend(lv)
    sets = []
    for combo in itertools.product(*[[None] + lv for lv in levels]):
        sets.append("(" + ", ".join([c for c in combo if c] + ["ent_id"]) + ")")
    sql = f"""
    WITH m AS (SELECT {', '.join(exprs)}, ent_id, salary FROM read_parquet('{a.data}/*.parquet')),
    pc AS (SELECT {', '.join(cols)}, ent_id, SUM(salary) AS v FROM m GROUP BY GROUPING SETS ({', '.join(sets)}))
    SELECT {', '.join(cols)}, COUNT(*) AS freq, SUM(v) AS value, max(v, 2) AS top FROM pc GROUP BY ALL
    """
    con = duckdb.connect()
    con.execute(f"SET threads={a.threads}")
    con.execute(f"SET memory_limit='{a.memory_limit}'")
    start = time.time()
    try:
        n = con.execute(f"SELECT COUNT(*) FROM ({sql})").fetchone()[0]
        status = "ok"
    except Exception as e:  # out of memory / temp disk: the point of the comparison
        n, status = -1, f"failed: {str(e).splitlines()[0]}"
    secs = time.time() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"duckdb tabulate: dims={a.dims} threads={a.threads} grouping_sets={len(sets)} cells={n} "
          f"seconds={secs:.2f} peak_rss_mib={rss:.0f} status={status}")
    return 0 if status == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
