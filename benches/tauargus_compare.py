#!/usr/bin/env python3
"""Side-by-side secondary cell suppression: tau-Argus (pytauargus) vs sdcflow on the same data.

What it does, for each table (`SUITE`: census-shaped records from `sdcflow generate`;
`PUBLIC`: the public CASC EIA and Adult files of ../shared/data; `SIZES`: the historical
friendly tables from numpy):

1. writes the records as Parquet (one record per contributor and cell) and the tau-Argus `.hrc`
   files of the hierarchical variables;
2. runs sdcflow (`sdcflow run`, one job per method) and tau-Argus through pytauargus
   (`MOD(1)` modular, `OPT(1,M)` optimal with M minutes: sdcflow's `--time-limit`, rounded up;
   `OPT(1)` without a limit) on the same records and the table's rule (the friendly
   tables: `FREQ(3,10)`, primary when fewer than 3 contributors, protection level 10 % of the
   cell value), cost = cell value for both;
3. audits every result with `sdcflow audit` — for tau-Argus, its cell statuses are joined onto
   sdcflow's tabulation of the same table (codes, value, freq, top contributions, protection
   levels) and written as a `cells.parquet`;
4. prints one table: cells, primaries, secondaries, suppressed value share (Σ suppressed cell
   values / Σ all cell values, computed here the same way for both tools), lower bound (for
   tau-Argus OPT its own gap and nodes, from its `cspSCIP.sta`), wall time, audit.

`OPT(1)` runs tau-Argus's branch and cut with a zero time limit (its `FullJJ.log` says
`MAX_TIME = 0`): its heuristic's pattern and one node, not an optimum. Hence the limit above.

Usage (needs `pip install "pytauargus[parquet,dataframe]"` and a built sdcflow binary):

    python3 benches/tauargus_compare.py --sdcflow ~/.cache/sdcflow-target/ci/sdcflow \
        --work /tmp/tacmp --sizes mid,small --tau 'MOD;OPT;MOD(1,5,1,1,1)' \
        --methods fast,modular,tabu,optimal,fast-nosingleton

`--time-limit` is sdcflow's per-method budget (s). A `-nosingleton` suffix runs the method with
`secondary.singleton = false`, like tau-Argus's `MOD(1)`/`OPT(1)` defaults (pytauargus
`MOD(1)` has its singleton options off); `MOD(1,T,1,1,1)` turns them on. Every result is
audited with the singleton rule on, and the audit column says which check failed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

SIZES = {
    # Friendly tables from numpy (historical): (groups, children) per hierarchical variable
    # (levels [1, 1]), flat categories, density, mean contributors per nonempty leaf, seed.
    "mid": {"a": (5, 6), "b": (4, 5), "c": 12, "density": 0.9, "mean_freq": 7.0, "seed": 42},
    "small": {"a": (3, 3), "b": (2, 3), "c": 3, "density": 0.9, "mean_freq": 6.0, "seed": 7},
}
SAFETY = "FREQ(3,10)"

# The realistic suite (issue 11): `sdcflow generate --shape census` records (irregular geography
# of 13 regions x 2-12 departments of very unequal size, activity sections with 1-8 divisions,
# several single-division sections), tabulated by sdcflow's normal path. Variables:
#   geo2 = region/department (hierarchical, .hrc), nace2 = section/division (hierarchical),
#   region, section (flat), sex (2 categories), contract (3), size_class (4), age_band (10).
# `contributor`: None = each record (a person), "ent_id" = the enterprise (tau-Argus holding).
SUITE = {
    "c2-persons": {"rows": 50_000, "seed": 11, "dims": ["geo2", "nace2"], "contributor": None,
                   "safety": "NK(1,85)|FREQ(3,10)"},
    "c3-persons": {"rows": 50_000, "seed": 11, "dims": ["geo2", "nace2", "sex"], "contributor": None,
                   "safety": "NK(1,85)|FREQ(3,10)"},
    "c3-enterprises": {"rows": 50_000, "seed": 12, "dims": ["geo2", "nace2", "sex"], "contributor": "ent_id",
                       "safety": "P(10)|FREQ(3,10)"},
    "c4-persons": {"rows": 20_000, "seed": 13, "dims": ["region", "section", "sex", "contract"],
                   "contributor": None, "safety": "NK(2,90)|FREQ(3,10)"},
    "c3-small": {"rows": 4_000, "seed": 14, "dims": ["region", "section", "sex"], "contributor": None,
                 "safety": "NK(1,85)|FREQ(3,10)"},
    # The README example's `salary` table on census-shaped records: flat 3-dim, enterprises.
    "c3-ent-flat": {"rows": 200_000, "seed": 15, "dims": ["region", "section", "sex"], "contributor": "ent_id",
                    "safety": "NK(1,85)|FREQ(3,10)"},
    # The README example's `salary` table itself: `sdcflow generate`'s default shape, the
    # example's data (200 k rows, seed 1) and its view (`sql/prepare.sql`: salary > 0).
    "ex-salary": {"rows": 200_000, "seed": 1, "dims": ["region", "section", "sex"], "contributor": "ent_id",
                  "safety": "NK(1,85)|FREQ(3,10)", "shape": "regular", "with_salary": True},
    "c5-persons": {"rows": 50_000, "seed": 11, "dims": ["geo2", "nace2", "sex", "size_class", "contract"],
                   "contributor": None, "safety": "NK(1,85)|FREQ(3,10)"},
    # A second table between 20 k and 200 k cells (`auto` picks `fast` there; BENCHMARKS.md
    # session 46): 4 dimensions, both hierarchies at two levels.
    "c4-hier": {"rows": 50_000, "seed": 17, "dims": ["geo2", "nace2", "sex", "contract"],
                "contributor": None, "safety": "NK(1,85)|FREQ(3,10)"},
    # Its enterprise counterpart: contributors are enterprises, dominance by the p% rule.
    "c4-ent": {"rows": 50_000, "seed": 18, "dims": ["geo2", "nace2", "sex", "contract"],
               "contributor": "ent_id", "safety": "P(10)|FREQ(3,10)"},
    # A third table between 20 k and 50 k cells: c4-hier's shape on 80 k persons,
    # so more cells but a smaller share of them primary (BENCHMARKS.md session 49).
    "c4-large": {"rows": 80_000, "seed": 19, "dims": ["geo2", "nace2", "sex", "contract"],
                 "contributor": None, "safety": "NK(1,85)|FREQ(3,10)"},
    # The largest shape: 650 k persons, a 3-level geography (region / department /
    # ~2,800 communes) x activity x sex x age band, millions of cells (no tau-Argus run).
    "c4-geo3": {"rows": 650_000, "seed": 16, "dims": ["geo3", "nace2", "sex", "age_band"],
                "contributor": None, "safety": "NK(1,85)|FREQ(3,10)"},
    # The memory target: ~3.5 M cells, 2.3 M primaries (900 k persons; a fifth
    # variable makes up for this generator's concentrated communes).
    "c5-geo3": {"rows": 900_000, "seed": 16, "dims": ["geo3", "nace2", "sex", "age_band", "size_class"],
                "contributor": None, "safety": "NK(1,85)|FREQ(3,10)"},
}
HIERARCHICAL = {"geo2", "geo3", "nace2", "a", "b"}

# Tables on public microdata from ../shared/data (not from a generator): the CASC project's test
# files and the Adult census extract. Their variables are the records' own; `hier` names those
# with a hierarchy (written as .hrc files beside the data).
PUBLIC = {
    # EIA: 1996 monthly revenues of U.S. electric utilities (CASC `casc_eia.csv`). State within
    # census division within census region (3 levels, 3-9 states per division), month within
    # quarter, customer sector (residential, commercial, industrial, other); the utility is the
    # contributor (it reports every month and sector), records with a positive revenue.
    "eia": {"source": "eia", "dims": ["geo", "month", "sector"], "hier": ["geo", "month"],
            "contributor": "utility", "safety": "NK(1,85)|FREQ(3,10)"},
    # Adult: 30,162 persons of the 1994 U.S. census extract, counted (value 1 per person) by age
    # (single years within 5-, 10- and 20-year bands, the extract's own hierarchy: 4 levels with
    # single-child ones) x education (its 3-level hierarchy) x sex; the frequency rule.
    "adult": {"source": "adult", "dims": ["age", "education", "sex"], "hier": ["age", "education"],
              "contributor": None, "safety": "FREQ(3,10)"},
}
SUITE.update(PUBLIC)

# U.S. Census Bureau regions and divisions (codes R1-R4, D1-D9: state codes such as NE are taken).
CENSUS_DIVISIONS = {
    ("R1", "D1"): "CT ME MA NH RI VT", ("R1", "D2"): "NJ NY PA",
    ("R2", "D3"): "IL IN MI OH WI", ("R2", "D4"): "IA KS MN MO NE ND SD",
    ("R3", "D5"): "DE DC FL GA MD NC SC VA WV", ("R3", "D6"): "AL KY MS TN", ("R3", "D7"): "AR LA OK TX",
    ("R4", "D8"): "AZ CO ID MT NV NM UT WY", ("R4", "D9"): "AK CA HI OR WA",
}


def hierarchical(spec: dict) -> set[str]:
    """The table's variables that have a .hrc file."""
    return set(spec.get("hier", HIERARCHICAL))


def spec_of(size: str) -> dict:
    """Dimensions, rule and contributor of a suite or friendly table."""
    if size in SUITE:
        return SUITE[size]
    return {"dims": ["a", "b", "c"], "contributor": None, "safety": SAFETY}


def hier_codes(groups: int, children: int) -> list[tuple[str, list[str]]]:
    return [(f"{g + 1}", [f"{g + 1}{c + 1}" for c in range(children)]) for g in range(groups)]


def write_hrc(path: Path, tree: dict[str, list[str]]) -> None:
    with open(path, "w") as f:
        for parent in sorted(tree):
            f.write(f"{parent}\n")
            for c in sorted(set(tree[parent])):
                f.write(f"@{c}\n")


def generate_suite(size: str, work: Path, sdcflow: str) -> Path:
    """`sdcflow generate` (the census shape unless the spec names another), then the derived
    variables and .hrc files."""
    spec = SUITE[size]
    d = work / size
    d.mkdir(parents=True, exist_ok=True)
    raw = d / "generated"
    shape = spec.get("shape", "census")
    subprocess.run([sdcflow, "-q", "generate", "--shape", shape, "--out", str(raw), "--rows",
                    str(spec["rows"]), "--seed", str(spec["seed"])], check=True)
    t = pq.read_table(raw)
    if spec.get("with_salary"):  # as the README example's view (`sql/prepare.sql`)
        t = t.filter(pc.greater(t["salary"], 0))
    t = t.to_pydict()
    cols = {
        "geo2": [g[:4] for g in t["geo"]],
        "geo3": list(t["geo"]),
        "nace2": list(t["nace"]),
        "region": [g[:2] for g in t["geo"]],
        "section": [n[0] for n in t["nace"]],
        "sex": list(t["sex"]),
        "contract": list(t["contract"]),
        "size_class": list(t["size_class"]),
        "age_band": list(t["age_band"]),
        "ent_id": [f"E{e}" for e in t["ent_id"]],
        "value": list(t["salary"]),
    }
    path = d / "micro.parquet"
    pq.write_table(pa.table(cols), path)
    geo: dict[str, list[str]] = {}
    for c in cols["geo2"]:
        geo.setdefault(c[:2], []).append(c)
    nace: dict[str, list[str]] = {}
    for c in cols["nace2"]:
        nace.setdefault(c[0], []).append(c)
    write_hrc(d / "geo2.hrc", geo)
    write_hrc(d / "nace2.hrc", nace)
    # geo3: region (2 characters) / department (4) / commune (6), tau-Argus's `@@` depth.
    communes: dict[str, set[str]] = {}
    for g in cols["geo3"]:
        communes.setdefault(g[:4], set()).add(g)
    with open(d / "geo3.hrc", "w") as f:
        for r in sorted(geo):
            f.write(f"{r}\n")
            for dep in sorted(set(geo[r])):
                f.write(f"@{dep}\n")
                for c in sorted(communes[dep]):
                    f.write(f"@@{c}\n")
    return path


def write_tree(path: Path, leaves: dict[str, list[str]]) -> None:
    """A .hrc file of the paths `leaf -> [top level, ..., leaf]` (tau-Argus's `@` per level)."""
    tree: dict = {}
    for p in leaves.values():
        node = tree
        for code in p:
            node = node.setdefault(code, {})

    def write(f, node: dict, depth: int) -> None:
        for code in sorted(node):
            f.write("@" * depth + code + "\n")
            write(f, node[code], depth + 1)

    with open(path, "w") as f:
        write(f, tree, 0)


def generate_public(size: str, work: Path) -> Path:
    """The records of a public table (`PUBLIC`) as Parquet, and its .hrc files. Missing data is an
    error, as the brief asks of everything that needs ../shared/data."""
    spec = SUITE[size]
    data = Path(__file__).resolve().parents[2] / "shared" / "data"
    d = work / size
    d.mkdir(parents=True, exist_ok=True)
    if spec["source"] == "eia":
        import pyarrow.csv as pcsv  # the utility names hold quoted commas

        t = pcsv.read_csv(data / "casc_eia.csv").to_pydict()
        division = {s: rd for rd, states in CENSUS_DIVISIONS.items() for s in states.split()}
        cols: dict[str, list] = {"geo": [], "month": [], "sector": [], "utility": [], "value": []}
        for i in range(len(t["STATE"])):
            for sector in ("RES", "COM", "IND", "OTH"):
                v = t[f"{sector}REVENUE"][i]
                if v > 0:  # adjustments are negative; dominance rules are for contributions
                    cols["geo"].append(t["STATE"][i])
                    cols["month"].append(f"{t['MONTH'][i]:02d}")
                    cols["sector"].append(sector)
                    cols["utility"].append(f"U{t['UTILITYID'][i]}")
                    cols["value"].append(float(v))
        write_tree(d / "geo.hrc", {s: [*division[s], s] for s in set(cols["geo"])})
        write_tree(d / "month.hrc", {m: [f"Q{(int(m) - 1) // 3 + 1}", m] for m in set(cols["month"])})
    elif spec["source"] == "adult":
        import csv

        # tau-Argus matches the codes of a hierarchy only when all have the variable's width, so
        # every code is 3 characters: a 5-, 10- or 20-year age band is B, C or D and its first
        # year, a single year A and the year ("0-4" -> B00, "10-19" -> C10, 39 -> A39); an
        # education is E and the extract's education number (Preschool E01 ... Doctorate E16)
        # within an abbreviated level (EHI = higher education, EUG = undergraduate, ...).
        def age_code(label: str, depth: int) -> str:
            return "DCBA"[depth] + f"{int(label.split('-')[0]):02d}"

        education_code = {
            "Preschool": "E01", "1st-4th": "E02", "5th-6th": "E03", "7th-8th": "E04", "9th": "E05",
            "10th": "E06", "11th": "E07", "12th": "E08", "HS-grad": "E09", "Some-college": "E10",
            "Assoc-voc": "E11", "Assoc-acdm": "E12", "Bachelors": "E13", "Masters": "E14",
            "Prof-school": "E15", "Doctorate": "E16",
            "Higher education": "EHI", "Secondary education": "ESE", "Primary education": "EPR",
            "Graduate": "EGR", "Professional Education": "EPF", "Undergraduate": "EUG",
            "High School": "EHS", "Primary School": "EPS",
        }

        def levels(name: str) -> dict[str, list[str]]:
            # `code;finest band;...;coarsest band;*` -> code: [coarsest parent, ..., code]
            out = {}
            with open(data / "adult" / f"adult_hierarchy_{name}.csv") as f:
                for line in f:
                    p = [c.strip() for c in line.strip().split(";")]
                    if p and p[0]:
                        path = [c for c in reversed(p[1:]) if c != "*"] + [p[0]]
                        if name == "age":
                            path = [age_code(c, d) for d, c in enumerate(path)]
                        else:
                            path = [education_code[c] for c in path]
                        out[p[0]] = path
            return out

        age, education = levels("age"), levels("education")
        cols = {"age": [], "education": [], "sex": [], "value": []}
        with open(data / "adult" / "adult.csv") as f:
            for r in csv.DictReader(f, delimiter=";"):
                cols["age"].append(age[r["age"]][-1])
                cols["education"].append(education[r["education"]][-1])
                cols["sex"].append(r["sex"])
                cols["value"].append(1.0)
        seen = set(cols["age"])
        write_tree(d / "age.hrc", {a[-1]: a for a in age.values() if a[-1] in seen})
        write_tree(d / "education.hrc", {e[-1]: e for e in education.values()})
    else:
        raise ValueError(f"unknown public source {spec['source']!r}")
    path = d / "micro.parquet"
    pq.write_table(pa.table(cols), path)
    return path


def generate(size: str, work: Path, sdcflow: str = "") -> Path:
    """Seeded microdata: one record per contributor; returns the Parquet path."""
    if size in PUBLIC:
        return generate_public(size, work)
    if size in SUITE:
        return generate_suite(size, work, sdcflow)
    spec = SIZES[size]
    rng = np.random.default_rng(spec["seed"])
    a_leaves = [c for _, cs in hier_codes(*spec["a"]) for c in cs]
    b_leaves = [c for _, cs in hier_codes(*spec["b"]) for c in cs]
    c_codes = [f"{k + 1:02d}" for k in range(spec["c"])]
    cols: dict[str, list] = {"a": [], "b": [], "c": [], "value": []}
    for a in a_leaves:
        for b in b_leaves:
            for c in c_codes:
                if rng.random() > spec["density"]:
                    continue
                n = int(rng.geometric(1.0 / spec["mean_freq"]))  # mean mean_freq, P(n < 3) ≈ 27 %
                vals = np.round(rng.lognormal(mean=6.0, sigma=1.0, size=n), 2)
                cols["a"] += [a] * n
                cols["b"] += [b] * n
                cols["c"] += [c] * n
                cols["value"] += vals.tolist()
    d = work / size
    d.mkdir(parents=True, exist_ok=True)
    path = d / "micro.parquet"
    pq.write_table(pa.table(cols), path)
    for var in ("a", "b"):
        with open(d / f"{var}.hrc", "w") as f:
            for g, cs in hier_codes(*spec[var]):
                f.write(f"{g}\n")
                for c in cs:
                    f.write(f"@{c}\n")
    return path


def job_text(size_dir: Path, method: str, time_limit: float, singleton: bool = True) -> str:
    name = method if singleton else f"{method}-nosingleton"
    spec = spec_of(size_dir.name)
    hier = "".join(f'''
[[hierarchy]]
variable = "{v}"
file = "{size_dir / (v + '.hrc')}"
''' for v in spec["dims"] if v in hierarchical(spec))
    contributor = f'contributor = "{spec["contributor"]}"\n' if spec["contributor"] else ""
    explanatory = ", ".join(f'"{v}"' for v in spec["dims"])
    limit = f", time_limit_s = {time_limit}" if time_limit > 0 else ""
    sec = "none" if method == "none" else method
    return f"""
[input]
microdata = "{size_dir / 'micro.parquet'}"
{hier}
[[table]]
name = "t"
explanatory = [{explanatory}]
response = "value"
{contributor}safety = "{spec['safety']}"
secondary = {{ method = "{sec}", seed = 1{limit}, singleton = {str(singleton).lower()} }}
[output]
dir = "{size_dir / ('out_' + name)}"
"""


def cells_of(out: Path) -> Path:
    """A run's confidential cells: `cells.parquet` for a protected table, the `cells/` folder of
    parts (read in name order = key order) for a primaries-only one."""
    one = out / "confidential" / "t" / "cells.parquet"
    return one if one.exists() else out / "confidential" / "t" / "cells"


def share(values: list[float], suppressed: list[bool]) -> float:
    total = sum(abs(v) for v in values)
    return sum(abs(v) for v, s in zip(values, suppressed) if s) / total if total else 0.0


def audit(sdcflow: str, cells: Path, job: Path) -> str:
    """`sdcflow audit` with the singleton rule on; the counts of each kind of finding."""
    r = subprocess.run([sdcflow, "-q", "audit", str(cells), "--job", str(job), "--table", "t",
                        "--levels-only"], capture_output=True, text=True)
    if r.returncode == 0:
        return "clean"
    msg = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
    if "audit failed:" not in msg:
        return f"ERROR (exit {r.returncode}): {msg[:200]}"
    # keep the counts, not the cell lists
    parts = [p.split(":")[0].strip() for p in msg.split("audit failed:")[-1].split(";")]
    intervals = "" if "under-protected" in msg else "intervals ok, "
    return f"FAILED (exit {r.returncode}): {intervals}" + "; ".join(parts)


def run_sdcflow(sdcflow: str, size_dir: Path, name: str, time_limit: float) -> dict:
    """`name` is a method, optionally with `-nosingleton` (singleton rule off)."""
    method = name.removesuffix("-nosingleton")
    job = size_dir / f"job_{name}.toml"
    job.write_text(job_text(size_dir, method, time_limit, singleton=not name.endswith("-nosingleton")))
    out = size_dir / f"out_{name}"
    subprocess.run(["rm", "-rf", str(out)], check=True)
    t0 = time.perf_counter()
    r = subprocess.run([sdcflow, "-q", "run", str(job)], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        return {"tool": "sdcflow", "method": name, "error": r.stderr.strip()[-300:], "time": wall}
    rep = json.loads((out / "report.json").read_text())["tables"][0]
    cells = cells_of(out)
    t = pq.read_table(cells).to_pydict()
    sup = [s in ("U", "M") for s in t["status"]]
    # The lower bound is on the secondary cost (cost = value here): as a share of the table.
    total = sum(abs(v) for v in t["value"])
    prim = sum(abs(v) for v, s in zip(t["value"], t["status"]) if s == "U")
    lb = rep.get("lower_bound")
    return {
        "tool": "sdcflow",
        "method": name + (f" → {rep['method']}" if rep.get("method") and rep["method"] != method else ""),
        "cells": len(sup),
        "primaries": rep["primaries"],
        "secondaries": rep["secondaries"],
        "share": share(t["value"], sup),
        "bound": (prim + lb) / total if lb is not None and total else None,
        "gap": rep.get("gap"),
        "stopped": rep.get("stopped_by_time_limit"),
        "time": wall,
        "secondary_time": rep["timings_s"].get("secondary"),
        "audit": audit(sdcflow, cells, size_dir / "job_none.toml") if method != "none" else "-",
    }


def tau_safety(spec: dict) -> str:
    """tau-Argus's spelling of a suite rule. Rules on a holding (the enterprise as contributor)
    are tau-Argus's second set: NK and P rules 3-4, FREQ rule 2, so the individual-level slots
    are filled with disabled rules first (otherwise tau-Argus applies them to the records)."""
    # tau-Argus's p% rule always names its n (sdcflow's P(p) means P(p,1)).
    rules = [r if not r.startswith("P(") or "," in r else r[:-1] + ",1)" for r in spec["safety"].split("|")]
    if not spec["contributor"]:
        return "|".join(rules)
    pad = {"NK": ["NK(0,0)", "NK(0,0)"], "P": ["P(0,1)", "P(0,1)"], "FREQ": ["FREQ(0,0)"]}
    out: list[str] = []
    for kind in ("NK", "P", "FREQ"):
        mine = [r for r in rules if r.split("(")[0] == kind]
        if mine:
            out += pad[kind] + mine
    return "|".join(out)


def opt_bound(sta: Path) -> dict | None:
    """tau-Argus OPT's own result from its statistics file (`cspSCIP.sta`, one header line and
    one line of figures per solve): the pattern's cost `opt`, the best lower bound `lb` its
    branch and cut proved, in the same (integer-scaled) cost units, and its `nodes`: how far
    from an optimum its pattern is (see the module doc on `OPT(1)`)."""
    try:
        lines = [ln.split() for ln in sta.read_text().splitlines() if ln.strip()]
    except OSError:
        return None
    if len(lines) < 2 or len(lines[0]) != len(lines[-1]):
        return None
    head, last = lines[0], lines[-1]
    try:
        return {"opt": float(last[head.index("opt")]), "lb": float(last[head.index("BestLB")]),
                "nodes": int(last[head.index("nodes")])}
    except (ValueError, IndexError):
        return None


def tau_method(spec: str, time_limit: float) -> str:
    """The tau-Argus suppression of harness spec `spec`: `MOD` → `MOD(1)`; `OPT` → `OPT(1,M)`, M
    the minutes of sdcflow's `time_limit` rounded up (`OPT(1)` when there is none); a full
    tau-Argus spec such as `MOD(1,5,1,1,1)` (singleton options on) as it is."""
    if "(" in spec:
        return spec
    if spec == "OPT" and time_limit > 0:
        return f"OPT(1,{math.ceil(time_limit / 60)})"
    return f"{spec}(1)"


def run_tauargus(sdcflow: str, size_dir: Path, spec: str, time_limit: float = 0.0) -> dict:
    """Runs pytauargus with suppression `spec` (`tau_method`) and audits its statuses on
    sdcflow's tabulation."""
    method = tau_method(spec, time_limit)
    try:
        from pytauargus import protect
    except ImportError as e:  # pragma: no cover - reported in the table
        return {"tool": "tau-Argus", "method": method, "error": f"pytauargus not importable: {e}"}
    import pandas as pd

    size_dir = size_dir.resolve()
    micro = pd.read_parquet(size_dir / "micro.parquet")
    spec = spec_of(size_dir.name)
    if spec["contributor"]:
        # tau-Argus reads the records of one holding as consecutive records.
        micro = micro.sort_values(spec["contributor"], kind="stable").reset_index(drop=True)
    dims = spec["dims"]
    wd = size_dir / ("tau_" + "".join(ch if ch.isalnum() else "_" for ch in method))
    subprocess.run(["rm", "-rf", str(wd)], check=True)
    wd.mkdir(parents=True)
    cwd = os.getcwd()
    os.chdir(wd)  # the engine also writes its logs (HiTaS.log, cspSCIP.*) to the current directory
    t0 = time.perf_counter()
    try:
        res = protect(micro, dims, response="value", safety_rules=tau_safety(spec),
                      suppress=method, hrc={v: str(size_dir / f"{v}.hrc") for v in dims if v in hierarchical(spec)},
                      holding_var=spec["contributor"], hierleadstring="@", totcode="Total", workdir=str(wd))
    except Exception as e:  # noqa: BLE001 - any engine failure is a result to report
        return {"tool": "tau-Argus", "method": method, "error": f"{type(e).__name__}: {e}",
                "time": time.perf_counter() - t0}
    finally:
        os.chdir(cwd)
    wall = time.perf_counter() - t0
    rows = res.tables[0].rows
    # tau-Argus pads codes shorter than the variable's width with blanks ("  Male").
    tau = {tuple(str(r[v]).strip() for v in dims): r["status"] for r in rows}
    # Join onto sdcflow's own tabulation of the same table (method none = primaries only).
    base = pq.read_table(cells_of(size_dir / "out_none"))
    d = base.to_pydict()
    status, missing = [], 0
    for i in range(base.num_rows):
        k = tuple(d[v][i] for v in dims)
        s = tau.get(k)
        if s is None:
            missing += 1
            s = "S"
        status.append({"U": "U", "M": "M"}.get(s, "Z" if d["value"][i] == 0 else "S"))
    d["status"] = status
    cells = wd / "confidential" / "t" / "cells.parquet"
    cells.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(d, schema=base.schema), cells)
    sup = [s in ("U", "M") for s in status]
    own = opt_bound(wd / "cspSCIP.sta") if method.startswith("OPT") else None
    return {
        "tool": "tau-Argus",
        "method": method,
        "cells": len(sup),
        "primaries": status.count("U"),
        "secondaries": status.count("M"),
        "share": share(d["value"], sup),
        "bound": None,
        "gap": None,
        # Its own gap, on its total cost (primaries included) in its own cost units: these are
        # integer-scaled and not always proportional to the cell values, so it is not turned
        # into a share of the value.
        "own_gap": (own["opt"] - own["lb"]) / own["opt"] if own and own["opt"] > 0 else None,
        "nodes": own["nodes"] if own else None,
        "stopped": None,
        "time": wall,
        "audit": audit(sdcflow, cells, size_dir / "job_none.toml")
        + (f" ({missing} sdcflow cells missing in tau-Argus output)" if missing else ""),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sdcflow", default=os.path.expanduser("~/.cache/sdcflow-target/ci/sdcflow"))
    ap.add_argument("--work", default="/tmp/tauargus_compare")
    ap.add_argument("--sizes", default="mid,small")
    ap.add_argument("--methods", default="fast,modular,tabu,optimal")
    ap.add_argument("--tau", default="MOD;OPT", help="`;`-separated tau-Argus specs")
    ap.add_argument("--time-limit", type=float, default=0.0, help="sdcflow time_limit_s (0: none)")
    ap.add_argument("--tau-max-cells", type=int, default=60_000,
                    help="skip tau-Argus on larger tables (it gives no result on them)")
    args = ap.parse_args()
    work = Path(args.work).resolve()
    results = []
    for size in [s for s in args.sizes.split(",") if s]:
        size_dir = generate(size, work, args.sdcflow).parent
        base = run_sdcflow(args.sdcflow, size_dir, "none", 0)
        if "error" in base:
            print(f"{size}: sdcflow tabulation failed: {base['error']}", file=sys.stderr)
            return 1
        for m in [m for m in args.methods.split(",") if m]:
            r = run_sdcflow(args.sdcflow, size_dir, m, args.time_limit)
            results.append((size, r))
            print(size, json.dumps(r), flush=True)
        for m in [m for m in args.tau.split(";") if m and base["cells"] <= args.tau_max_cells]:
            r = run_tauargus(args.sdcflow, size_dir, m, args.time_limit)
            results.append((size, r))
            print(size, json.dumps(r), flush=True)
    print()
    print("| table | tool | method | cells | primaries | secondaries | suppressed value | lower bound | time | audit |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for size, r in results:
        if "error" in r:
            print(f"| {size} | {r['tool']} | {r['method']} | – | – | – | – | – | {r.get('time', 0):.1f} s | "
                  f"ERROR: {r['error'][:200]} |")
            continue
        bound = f"{100 * r['bound']:.2f} %" if r.get("bound") is not None else "–"
        if r.get("own_gap") is not None:
            bound += f" (own gap {100 * r['own_gap']:.1f} % of its total cost, {r['nodes']} nodes)"
        stop = " (time limit)" if r.get("stopped") else ""
        print(f"| {size} | {r['tool']} | {r['method']} | {r['cells']} | {r['primaries']} | {r['secondaries']} | "
              f"{100 * r['share']:.2f} % | {bound} | {r['time']:.1f} s{stop} | {r['audit']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
