#!/usr/bin/env python3
"""Writes the tau-Argus batch fixtures of `sdcflow import-argus`'s tests and tau-Argus's own
results on them (`expected/*.csv`), so the tests compare sdcflow's translation with tau-Argus
without needing tau-Argus at test time.

Needs `pip install "pytauargus[parquet,dataframe]"` (the tau-Argus engine on HiGHS); run from
this directory: `python3 make_fixtures.py`. The data are seeded: re-running writes the same
files. The `.arb`/`.rda` text comes from pytauargus's ports of rtauargus's writers
(`micro_arb`, `rda_text`), i.e. the files a tau-Argus user's R or Python scripts produce.
"""

import os
import random

import subprocess
import sys
import tempfile
from pytauargus.arb import micro_arb
from pytauargus.rda import rda_text

HERE = os.path.dirname(os.path.abspath(__file__))
os.chdir(HERE)
rng = random.Random(7)

# Microdata: 600 employees. geo = region (1 digit) + department (1 digit), with an irregular
# hierarchy (region 3 has a single department); nace from an .hrc file (section / division,
# section C with a single division); sex with 2 categories; salary; a sampling weight;
# an enterprise id as holding.
depts = {"1": "123", "2": "12345", "3": "1", "4": "12"}
nace = {"A": ["A01", "A02"], "C": ["C10"], "G": ["G45", "G46", "G47"]}
rows = []
for i in range(600):
    r = rng.choice("1112223344")
    g = r + rng.choice(depts[r])
    s = rng.choice(list(nace))
    n = rng.choice(nace[s])
    sex = rng.choice("12")
    ent = rng.randrange(1, 120)
    sal = round(rng.lognormvariate(10, 0.8), 2)
    if rng.random() < 0.03:
        sal = round(sal * 40, 2)  # a few dominant contributions
    w = round(1 + 3 * rng.random(), 2)
    rows.append((g, n, sex, ent, sal, w))

# Fixed-width .asc: geo 1-2, nace 3-5, sex 6, ent 7-9, salary 10-21, w 22-27.
with open("persons.asc", "w") as f:
    for g, n, sex, ent, sal, w in rows:
        f.write(f"{g:>2}{n:>3}{sex:>1}{ent:>3}{sal:>12.2f}{w:>6.2f}\n")
with open("nace.hrc", "w") as f:
    for s, divs in nace.items():
        f.write(s + "\n")
        for d in divs:
            f.write("@" + d + "\n")
variables = [
    dict(colname="geo", position=1, width=2, digits=0, type_var="RECODEABLE", totcode="Total",
         hierarchical="1 1"),
    dict(colname="nace", position=3, width=3, digits=0, type_var="RECODEABLE", totcode="Total",
         hierarchical="nace.hrc", hierleadstring="@"),
    dict(colname="sex", position=6, width=1, digits=0, type_var="RECODEABLE", totcode="Total"),
    dict(colname="ent", position=7, width=3, digits=0, type_var="HOLDING"),
    dict(colname="salary", position=10, width=12, digits=2, type_var="NUMERIC"),
    dict(colname="w", position=22, width=6, digits=2, type_var="WEIGHT"),
]
text = rda_text(variables).replace(os.path.join(HERE, ""), "")
with open("persons.rda", "w") as f:
    f.write(text)

# A-priori file: one cell published whatever the rules say, one cell suppressed.
with open("salary.hst", "w") as f:
    f.write("11,A01,1,u\n")

os.makedirs("expected", exist_ok=True)
# Batch 1: a magnitude table (dominance + frequency rules), a-priori file, modular.
micro_arb(arb_filename="salary.arb", asc_filename="persons.asc", rda_filename="persons.rda",
          explanatory_vars=[["geo", "nace", "sex"]], response_var="salary",
          safety_rules="NK(1,85)|FREQ(3,10)|P(10,1)", suppress="MOD(1,5,1,0,0)",
          output_names=["expected/salary.csv"], output_type="2", output_options="AS+",
          apriori=["salary.hst"])
# Batch 2: two magnitude tables, p% and dominance rules, optimal and hypercube, and a command
# sdcflow has no counterpart for.
micro_arb(arb_filename="counts.arb", asc_filename="persons.asc", rda_filename="persons.rda",
          explanatory_vars=[["geo", "sex"], ["nace", "sex"]], response_var="salary",
          safety_rules=["P(15,1)|FREQ(25,20)", "NK(2,80)|FREQ(30,10)"],
          suppress=["OPT(1,5)", "OPT(2,5)"], output_names=["expected/counts.csv", "expected/nace.csv"],
          output_type="2", output_options="AS+", gointeractive=True)
# Batch 3: a weighted frequency table (translated only: pytauargus's engine cannot tabulate
# `<freq>` from microdata, so there is no tau-Argus result for it).
micro_arb(arb_filename="freq.arb", asc_filename="persons.asc", rda_filename="persons.rda",
          explanatory_vars=[["geo", "nace"]], response_var="<freq>", safety_rules="FREQ(3,20)",
          weighted=True, suppress="GH(1,100)", output_names=["expected/freq.csv"],
          output_type="2", output_options="AS+")
for arb in ("salary.arb", "counts.arb", "freq.arb"):
    text = open(arb).read().replace(os.path.join(HERE, ""), "")
    # The timestamp line changes on every run; keep the files stable.
    text = "\n".join(l for l in text.splitlines() if not l.startswith("// (")) + "\n"
    open(arb, "w").write(text)
# One process per batch: the engine's native state does not survive a second batch.
for arb in ("salary.arb", "counts.arb"):  # not freq.arb: see above
    # In a scratch directory: the engine writes its log files into the current one.
    with tempfile.TemporaryDirectory() as scratch:
        code = f"from pytauargus.engine import run_batch; run_batch({os.path.join(HERE, arb)!r})"
        subprocess.run([sys.executable, "-c", code], check=True, cwd=scratch)
print("fixtures written:", sorted(os.listdir(".")), sorted(os.listdir("expected")))
