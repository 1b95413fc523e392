//! `sdcflow generate`: census-like synthetic microdata for demos, tests and benchmarks.
//!
//! One row per employee, with the structure that makes disclosure control hard: hierarchical
//! codes (geography region/department/commune, activity section/division, occupation and
//! education groups), enterprises with heavy-tailed (Pareto) sizes as contributors — so a few
//! enterprises dominate many cells — and log-normal salaries. Most employees work in their
//! enterprise's home commune, some elsewhere, so some contributors span several cells.
//!
//! Rows are written as Parquet parts in parallel; each part has its own random stream derived
//! from the seed, so the output is identical whatever the thread count, and 100 M rows need
//! only one part's memory per thread.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::rng::Rng;

/// Generator settings.
#[derive(Debug, Clone)]
pub struct GenerateOptions {
    /// Number of rows.
    pub rows: u64,
    /// Seed.
    pub seed: u64,
    /// Rows per Parquet part.
    pub rows_per_part: u64,
    /// Average enterprise size (employees); the number of enterprises is `rows / this`.
    pub mean_enterprise_size: f64,
    /// Shape of the code lists.
    pub shape: Shape,
}

/// Shape of the generated code lists.
///
/// `Regular` keeps the original, fairly even lists (4–10 departments per region, 2–7
/// divisions per section). `Census` reproduces what makes real census tables hard to protect
/// (issue 11): very unequal region and department sizes, 2–12 departments per region, 1–8
/// divisions per section with several single-division sections (trivial hierarchy levels),
/// and a strongly skewed activity mix, so that many cells are sparse or dominated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// Even code lists (the benchmarks' historical shape).
    #[default]
    Regular,
    /// Irregular, census-like code lists.
    Census,
}

impl std::str::FromStr for Shape {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "regular" => Ok(Shape::Regular),
            "census" => Ok(Shape::Census),
            other => Err(format!("unknown shape `{other}` (valid: regular, census)")),
        }
    }
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self { rows: 100_000, seed: 1, rows_per_part: 1_000_000, mean_enterprise_size: 12.0, shape: Shape::Regular }
    }
}

/// Code lists of the synthetic population (deterministic for a seed).
#[derive(Debug, Clone)]
struct Universe {
    /// Communes as 6-character codes `RRDDCC`, with a population weight.
    communes: Vec<String>,
    commune_alias: Alias,
    /// Index of the first and one-past-last commune of each region.
    region_range: Vec<(usize, usize)>,
    region_of: Vec<usize>,
    nace: Vec<String>,
    nace_alias: Alias,
    enterprises: Vec<Enterprise>,
    ent_alias: Alias,
}

#[derive(Debug, Clone)]
struct Enterprise {
    commune: usize,
    nace: usize,
    size_class: &'static str,
    effect: f64,
}

/// Walker/Vose alias table for O(1) weighted sampling.
#[derive(Debug, Clone)]
struct Alias {
    prob: Vec<f64>,
    alias: Vec<u32>,
}

impl Alias {
    fn new(weights: &[f64]) -> Self {
        let n = weights.len();
        let sum: f64 = weights.iter().sum();
        let mut prob: Vec<f64> = weights.iter().map(|w| w * n as f64 / sum).collect();
        let mut alias = vec![0u32; n];
        let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| prob[i] < 1.0);
        while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
            alias[s] = l as u32;
            prob[l] -= 1.0 - prob[s];
            if prob[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        for i in large.into_iter().chain(small) {
            prob[i] = 1.0;
        }
        Self { prob, alias }
    }

    fn sample(&self, rng: &mut Rng) -> usize {
        let i = rng.index(self.prob.len());
        if rng.next_f64() < self.prob[i] {
            i
        } else {
            self.alias[i] as usize
        }
    }
}

const SECTIONS: &str = "ABCDEFGHIJKLMNOPQRSTU";
const AGE_BANDS: [&str; 10] =
    ["15-19", "20-24", "25-29", "30-34", "35-39", "40-44", "45-49", "50-54", "55-59", "60-64"];
const CONTRACTS: [&str; 3] = ["PERM", "TEMP", "APPR"];

impl Universe {
    fn new(opts: &GenerateOptions) -> Self {
        let mut rng = Rng::for_stream(opts.seed, 0);
        let census = opts.shape == Shape::Census;
        let mut communes = Vec::new();
        let mut cw = Vec::new();
        let mut region_range = Vec::new();
        let mut region_of = Vec::new();
        for r in 1..=13 {
            let start = communes.len();
            // Census: 2–12 departments; regions and departments of very unequal size.
            let depts = if census { 2 + rng.index(11) } else { 4 + rng.index(7) };
            let region_weight = if census { 1.0 / (r as f64).powf(0.9) } else { 1.0 };
            for d in 1..=depts {
                let n = if census { 3 + rng.index(58) } else { 10 + rng.index(31) };
                let dept_weight = if census { region_weight / (d as f64).powf(1.2) * n as f64 / 30.0 } else { 1.0 };
                for c in 1..=n {
                    communes.push(format!("{r:02}{d:02}{c:02}"));
                    // Zipf-like: a few large communes per department.
                    cw.push(dept_weight / (c as f64).powf(1.1) * (0.5 + rng.next_f64()));
                    region_of.push(region_range.len());
                }
            }
            region_range.push((start, communes.len()));
        }
        let mut nace = Vec::new();
        let mut nw = Vec::new();
        for (s, ch) in SECTIONS.chars().enumerate() {
            // Census: 1–8 divisions, a single division in about a quarter of the sections,
            // and sections of very different weight.
            let divisions = if census {
                if rng.next_f64() < 0.25 {
                    1
                } else {
                    2 + rng.index(7)
                }
            } else {
                2 + rng.index(6)
            };
            let section_weight = if census { 0.05 + 2.0 * rng.next_f64().powi(3) } else { 1.0 };
            for d in 0..divisions {
                nace.push(format!("{ch}{:02}", s * 4 + d + 1));
                nw.push(section_weight * (0.3 + rng.next_f64()) / (1.0 + d as f64));
            }
        }
        let commune_alias = Alias::new(&cw);
        let nace_alias = Alias::new(&nw);
        let n_ent = ((opts.rows as f64 / opts.mean_enterprise_size).ceil() as usize).max(1);
        let mut enterprises = Vec::with_capacity(n_ent);
        let mut sizes = Vec::with_capacity(n_ent);
        for _ in 0..n_ent {
            // Pareto(α = 1.1) sizes: heavy-tailed, a few very large enterprises.
            let u = 1.0 - rng.next_f64();
            let size = u.powf(-1.0 / 1.1);
            sizes.push(size);
            let size_class = match size {
                s if s < 2.0 => "S1",
                s if s < 5.0 => "S2",
                s if s < 20.0 => "S3",
                _ => "S4",
            };
            enterprises.push(Enterprise {
                commune: commune_alias.sample(&mut rng),
                nace: nace_alias.sample(&mut rng),
                size_class,
                effect: 0.25 * rng.normal(),
            });
        }
        let ent_alias = Alias::new(&sizes);
        Self { communes, commune_alias, region_range, region_of, nace, nace_alias, enterprises, ent_alias }
    }
}

/// Schema of the generated microdata.
pub fn schema() -> Arc<Schema> {
    let s = |n: &str| Field::new(n, DataType::Utf8, false);
    Arc::new(Schema::new(vec![
        Field::new("person_id", DataType::Int64, false),
        s("geo"),
        s("nace"),
        s("occupation"),
        s("education"),
        s("sex"),
        s("age_band"),
        s("contract"),
        s("size_class"),
        Field::new("ent_id", DataType::Int64, false),
        Field::new("salary", DataType::Float64, false),
        Field::new("w", DataType::Float64, false),
    ]))
}

fn part(u: &Universe, opts: &GenerateOptions, p: u64, first: u64, n: usize) -> Result<RecordBatch> {
    let mut rng = Rng::for_stream(opts.seed, p + 1);
    let mut id = Vec::with_capacity(n);
    let mut geo = Vec::with_capacity(n);
    let mut nace = Vec::with_capacity(n);
    let mut occ = Vec::with_capacity(n);
    let mut edu = Vec::with_capacity(n);
    let mut sex = Vec::with_capacity(n);
    let mut age = Vec::with_capacity(n);
    let mut contract = Vec::with_capacity(n);
    let mut size = Vec::with_capacity(n);
    let mut ent = Vec::with_capacity(n);
    let mut salary = Vec::with_capacity(n);
    let mut w = Vec::with_capacity(n);
    for i in 0..n {
        let e = u.ent_alias.sample(&mut rng);
        let ed = &u.enterprises[e];
        let x = rng.next_f64();
        let commune = if x < 0.85 {
            ed.commune
        } else if x < 0.95 {
            let (a, b) = u.region_range[u.region_of[ed.commune]];
            a + rng.index(b - a)
        } else {
            u.commune_alias.sample(&mut rng)
        };
        let major = 1 + rng.index(9);
        let sub = 1 + rng.index(5);
        let level = 1 + rng.index(4);
        let band = rng.index(AGE_BANDS.len());
        let female = rng.next_f64() < 0.48;
        let log_sal = 9.6 + 0.12 * (9 - major) as f64 + 0.03 * band as f64 + 0.08 * level as f64
            - if female { 0.12 } else { 0.0 }
            + ed.effect
            + 0.35 * rng.normal();
        id.push((first + i as u64) as i64);
        geo.push(u.communes[commune].as_str());
        nace.push(u.nace[ed.nace].as_str());
        occ.push(format!("{major}{sub}"));
        edu.push(format!("{level}{}", 1 + rng.index(3)));
        sex.push(if female { "2" } else { "1" });
        age.push(AGE_BANDS[band]);
        contract.push(
            CONTRACTS[match rng.next_f64() {
                v if v < 0.8 => 0,
                v if v < 0.95 => 1,
                _ => 2,
            }],
        );
        size.push(ed.size_class);
        ent.push(e as i64);
        salary.push((log_sal.exp() * 100.0).round() / 100.0);
        w.push(((1.0 + 4.0 * rng.next_f64()) * 100.0).round() / 100.0);
    }
    let _ = &u.nace_alias;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(id)),
        Arc::new(StringArray::from(geo)),
        Arc::new(StringArray::from(nace)),
        Arc::new(StringArray::from(occ)),
        Arc::new(StringArray::from(edu)),
        Arc::new(StringArray::from(sex)),
        Arc::new(StringArray::from(age)),
        Arc::new(StringArray::from(contract)),
        Arc::new(StringArray::from(size)),
        Arc::new(Int64Array::from(ent)),
        Arc::new(Float64Array::from(salary)),
        Arc::new(Float64Array::from(w)),
    ];
    Ok(RecordBatch::try_new(schema(), cols)?)
}

/// Writes `opts.rows` rows as `part-NNNNN.parquet` files into `dir` (created; existing parts
/// are replaced). Returns the part paths.
pub fn generate(dir: &Path, opts: &GenerateOptions) -> Result<Vec<PathBuf>> {
    if opts.rows == 0 {
        return Err(Error::data("generate", "--rows must be at least 1"));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with("part-") && name.ends_with(".parquet") {
            std::fs::remove_file(e.path()).map_err(|err| Error::io(e.path(), err))?;
        }
    }
    let u = Universe::new(opts);
    let per = opts.rows_per_part.max(1);
    let parts = opts.rows.div_ceil(per);
    (0..parts)
        .into_par_iter()
        .map(|p| {
            let first = p * per;
            let n = (opts.rows - first).min(per) as usize;
            let path = dir.join(format!("part-{p:05}.parquet"));
            let tmp = dir.join(format!(".part-{p:05}.parquet.tmp"));
            let file = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
            let props = WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_max_row_group_row_count(Some(256 * 1024))
                .build();
            let mut w = ArrowWriter::try_new(file, schema(), Some(props))?;
            // Build in slices to keep memory per thread bounded.
            let slice = 256 * 1024;
            let mut done = 0;
            while done < n {
                let m = (n - done).min(slice);
                let mut sub = opts.clone();
                sub.seed = opts.seed;
                let b = part(&u, &sub, p * 1_000_003 + done as u64, first + done as u64, m)?;
                w.write(&b)?;
                done += m;
            }
            w.close()?;
            std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
            Ok(path)
        })
        .collect()
}
