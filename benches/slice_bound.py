#!/usr/bin/env python3
"""Slice-decomposition lower bound of a table's secondary suppression cost (an experiment).

An attacker's move in the whole table, restricted to a slice (some variables fixed to one code
each, the others free), satisfies the slice's own relations, so a pattern that protects the
whole table protects every slice. Slices that fix the same variables partition the cells, so
the sum of the slices' optimal secondary costs is a lower bound of the whole table's. This script
writes one sdcflow job per slice (the microdata filtered to the slice's codes, `optimal`,
singleton rule off) and sums what the exact model proves (its `lower_bound`) and finds.

    python3 benches/slice_bound.py --sdcflow BIN --job c5-persons/job_auto-nosingleton.toml \
        --free geo2,nace2 --work /tmp/slices --limit 60

Measured on c5-persons in BENCHMARKS.md ("Session 45"): weaker than the bound sdcflow reports.
"""
import argparse, itertools, json, os, subprocess, tomllib
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sdcflow", required=True)
    ap.add_argument("--job", required=True, help="the whole table's job (first [[table]])")
    ap.add_argument("--free", required=True, help="comma-separated variables left free in a slice")
    ap.add_argument("--work", required=True)
    ap.add_argument("--limit", type=float, default=60.0, help="time_limit_s of each slice")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    job = tomllib.load(open(a.job, "rb"))
    table = job["table"][0]
    hier = {h["variable"]: h["file"] for h in job.get("hierarchy", [])}
    micro = pq.read_table(job["input"]["microdata"]).to_pandas()
    free = a.free.split(",")
    fixed = [v for v in table["explanatory"] if v not in free]
    codes = {v: ["Total"] + sorted(micro[v].astype(str).unique()) for v in fixed}
    for v in fixed:
        if v in hier:
            raise SystemExit(f"{v}: a fixed variable must be flat (it has a hierarchy)")
    dirs = []
    for combo in itertools.product(*[codes[v] for v in fixed]):
        rows = micro
        for v, c in zip(fixed, combo):
            if c != "Total":
                rows = rows[rows[v].astype(str) == c]
        d = os.path.abspath(os.path.join(a.work, "_".join(combo) or "all"))
        os.makedirs(d, exist_ok=True)
        pq.write_table(pa.Table.from_pandas(rows, preserve_index=False), f"{d}/micro.parquet")
        hs = "".join(f'[[hierarchy]]\nvariable = "{v}"\nfile = "{hier[v]}"\n\n' for v in free if v in hier)
        expl = ", ".join(f'"{v}"' for v in free)
        open(f"{d}/job.toml", "w").write(
            f'[input]\nmicrodata = "{d}/micro.parquet"\n\n{hs}[[table]]\nname = "t"\n'
            f'explanatory = [{expl}]\nresponse = "{table["response"]}"\nsafety = "{table["safety"]}"\n'
            f'secondary = {{ method = "optimal", seed = 1, time_limit_s = {a.limit}, singleton = false }}\n'
            f'[output]\ndir = "{d}/out"\n'
        )
        dirs.append(d)

    def run(d):
        # A slice that ends without a pattern (e.g. its time limit) adds nothing to the bound.
        r = subprocess.run([a.sdcflow, "run", f"{d}/job.toml"], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{d}: exit {r.returncode}, counted as 0: {r.stderr.strip().splitlines()[-1:]}")
            return None
        return json.load(open(f"{d}/out/report.json"))["tables"][0]

    with ThreadPoolExecutor(a.jobs) as ex:
        reports = list(ex.map(run, dirs))
    failed = sum(1 for r in reports if r is None)
    reports = [r for r in reports if r is not None]
    found = sum(r["secondary_cost"] for r in reports)
    bound = sum(r["lower_bound"] for r in reports)
    value = sum(r["total_value"] for r in reports)  # of the slices that ended: see `failed`
    open_ = sum(1 for r in reports if r["gap"] > 1e-6)
    print(f"{len(reports)} slices ({open_} not proven optimal, {failed} without a pattern): secondary cost found {found:.6g} "
          f"({100 * found / value:.2f} % of the value), proven bound {bound:.6g} ({100 * bound / value:.2f} %)")


if __name__ == "__main__":
    main()
