//! Hierarchical explanatory variables: trees of codes whose every internal node is a marginal.
//!
//! Three sources, as in tau-Argus: code-width levels (`HIERLEVELS`: code `"1234"` with levels
//! `[2, 2]` has ancestor `"12"`), `.hrc` files (one code per line, one lead string such as `@` per
//! level, children after their parent, the grand total not listed) and `child,parent` mapping
//! CSVs. A variable without a hierarchy is flat: its codes sit directly under the total.
//!
//! Invariants of a [`Hierarchy`]: node 0 is the total, codes are unique within the variable (so a
//! code identifies a cell coordinate whatever the level it was aggregated at), parents precede
//! children in node order (a pre-order walk), and data codes are leaves.
//!
//! ```
//! use sdcflow::hierarchy::{Hierarchy, HierarchySpec};
//! let spec = HierarchySpec::Levels(vec![1, 2]);
//! let h = Hierarchy::resolve("geo", &spec, &["101".into(), "102".into(), "201".into()]).unwrap();
//! assert_eq!(h.len(), 6); // Total, 1, 101, 102, 2, 201
//! assert_eq!(h.depth(), 2);
//! assert_eq!(h.code(h.parent(h.index("102").unwrap()).unwrap()), "1");
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The code used for the grand total of every variable in outputs.
pub const TOTAL: &str = "Total";

/// How a variable's hierarchy is defined (the resolved form of a `[[hierarchy]]` entry).
#[derive(Debug, Clone, PartialEq)]
pub enum HierarchySpec {
    /// No hierarchy: codes directly under the total.
    Flat,
    /// Code-width levels (tau-Argus HIERLEVELS); leaf codes have the summed width.
    Levels(Vec<usize>),
    /// A tau-Argus `.hrc` file with the given lead string (default `@`).
    Hrc {
        /// File path.
        path: PathBuf,
        /// Repeated once per depth before the code.
        lead: String,
    },
    /// A CSV of `child,parent` pairs (an optional `child,parent` header line).
    Mapping(PathBuf),
}

/// One node of a hierarchy.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The code (the total is [`TOTAL`]).
    pub code: String,
    /// Parent node, `None` for the total.
    pub parent: Option<usize>,
    /// Depth: 0 for the total, 1 for its children, …
    pub depth: usize,
    /// Child nodes in order.
    pub children: Vec<usize>,
}

/// A resolved hierarchy over the codes present in the data.
#[derive(Debug, Clone, PartialEq)]
pub struct Hierarchy {
    variable: String,
    nodes: Vec<Node>,
    by_code: HashMap<String, usize>,
    /// Whether the spec is code-width levels (tabulation derives ancestors with `substr`).
    widths: Option<Vec<usize>>,
}

impl Hierarchy {
    /// Builds the hierarchy of `variable` from `spec` and checks the codes found in the data:
    /// every data code must be a leaf of the hierarchy. Unknown codes are reported together
    /// (the first 20 and a count).
    pub fn resolve(variable: &str, spec: &HierarchySpec, data_codes: &[String]) -> Result<Self> {
        let herr = |path: Option<&Path>, line: Option<usize>, message: String| Error::Hierarchy {
            variable: variable.to_string(),
            path: path.map(Path::to_path_buf),
            line,
            message,
        };
        let mut b = Builder::new(variable);
        let mut widths = None;
        match spec {
            HierarchySpec::Flat => {
                let codes: BTreeSet<&String> = data_codes.iter().collect();
                for c in codes {
                    b.add(c, 0).map_err(|m| herr(None, None, m))?;
                }
            }
            HierarchySpec::Levels(w) => {
                if w.is_empty() || w.contains(&0) {
                    return Err(herr(None, None, format!("levels {w:?}: every level width must be ≥ 1")));
                }
                let total: usize = w.iter().sum();
                let bad: Vec<&String> = data_codes.iter().filter(|c| c.chars().count() != total).collect();
                if !bad.is_empty() {
                    return Err(herr(
                        None,
                        None,
                        format!(
                            "levels {w:?} need codes of exactly {total} characters; {} codes differ: {}",
                            bad.len(),
                            preview(bad.iter().map(|s| s.as_str()))
                        ),
                    ));
                }
                let mut prefixes: BTreeSet<(String, usize)> = BTreeSet::new();
                for c in data_codes {
                    let chars: Vec<char> = c.chars().collect();
                    let mut end = 0;
                    for (d, width) in w.iter().enumerate() {
                        end += width;
                        prefixes.insert((chars[..end].iter().collect(), d));
                    }
                }
                // BTreeSet order on the code string makes parents precede children (prefix order).
                for (code, d) in prefixes {
                    let parent = if d == 0 {
                        0
                    } else {
                        let plen: usize = w[..d].iter().sum();
                        let pcode: String = code.chars().take(plen).collect();
                        b.index(&pcode).ok_or_else(|| Error::Internal(format!("missing prefix {pcode}")))?
                    };
                    b.add(&code, parent).map_err(|m| herr(None, None, m))?;
                }
                widths = Some(w.clone());
            }
            HierarchySpec::Hrc { path, lead } => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| herr(Some(path), None, Error::unreadable_reason(&e)))?;
                parse_hrc(&mut b, &text, lead).map_err(|(line, m)| herr(Some(path), Some(line), m))?;
            }
            HierarchySpec::Mapping(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| herr(Some(path), None, Error::unreadable_reason(&e)))?;
                parse_mapping(&mut b, &text).map_err(|(line, m)| herr(Some(path), line, m))?;
            }
        }
        let h = b.finish(widths);
        h.check_data_codes(data_codes, spec)?;
        Ok(h)
    }

    fn check_data_codes(&self, data_codes: &[String], spec: &HierarchySpec) -> Result<()> {
        let mut unknown = Vec::new();
        let mut internal = Vec::new();
        for c in data_codes {
            match self.by_code.get(c) {
                None => unknown.push(c.as_str()),
                Some(&i) if !self.nodes[i].children.is_empty() => internal.push(c.as_str()),
                Some(_) => {}
            }
        }
        let path = match spec {
            HierarchySpec::Hrc { path, .. } | HierarchySpec::Mapping(path) => Some(path.clone()),
            _ => None,
        };
        let mut errs = Vec::new();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            errs.push(Error::Hierarchy {
                variable: self.variable.clone(),
                path: path.clone(),
                line: None,
                message: format!(
                    "{} codes in the data are not in the hierarchy: {}",
                    unknown.len(),
                    preview(unknown.into_iter())
                ),
            });
        }
        if !internal.is_empty() {
            internal.sort_unstable();
            errs.push(Error::Hierarchy {
                variable: self.variable.clone(),
                path,
                line: None,
                message: format!(
                    "{} codes in the data are internal nodes, not lowest-level codes: {}",
                    internal.len(),
                    preview(internal.into_iter())
                ),
            });
        }
        Error::collect(errs)
    }

    /// The variable name.
    pub fn variable(&self) -> &str {
        &self.variable
    }

    /// Number of nodes including the total.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Always false: a hierarchy has at least its total.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Maximum depth (number of levels below the total).
    pub fn depth(&self) -> usize {
        self.nodes.iter().map(|n| n.depth).max().unwrap_or(0)
    }

    /// All nodes, parents before children (pre-order).
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Rebuilds a hierarchy from the [`Self::nodes`] of a resolved one (a roll-up task on an
    /// executor gets the client's hierarchies this way, not their files).
    pub fn from_nodes(variable: &str, nodes: Vec<Node>) -> Self {
        let by_code = nodes.iter().enumerate().map(|(i, n)| (n.code.clone(), i)).collect();
        Hierarchy { variable: variable.to_string(), nodes, by_code, widths: None }
    }

    /// Node index of a code ([`TOTAL`] is 0).
    pub fn index(&self, code: &str) -> Option<usize> {
        self.by_code.get(code).copied()
    }

    /// Code of a node.
    pub fn code(&self, node: usize) -> &str {
        &self.nodes[node].code
    }

    /// Parent of a node.
    pub fn parent(&self, node: usize) -> Option<usize> {
        self.nodes[node].parent
    }

    /// Code-width levels when the hierarchy was defined that way.
    pub fn widths(&self) -> Option<&[usize]> {
        self.widths.as_deref()
    }

    /// Whether the variable is flat (all codes directly under the total).
    pub fn is_flat(&self) -> bool {
        self.depth() <= 1
    }

    /// Ancestor of `node` at `depth`; a node shallower than `depth` is its own ancestor there
    /// ("carry-down"), so every leaf has a code at every level.
    pub fn ancestor_at(&self, node: usize, depth: usize) -> usize {
        let mut n = node;
        while self.nodes[n].depth > depth {
            n = self.nodes[n].parent.expect("only the total has no parent");
        }
        n
    }

    /// Leaves (nodes without children), in pre-order.
    pub fn leaves(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(|&i| i != 0 && self.nodes[i].children.is_empty())
    }
}

/// Formats the first 20 items and a count, for error messages.
pub fn preview<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let all: Vec<&str> = items.collect();
    let shown: Vec<String> = all.iter().take(20).map(|c| format!("{c:?}")).collect();
    if all.len() > 20 {
        format!("{} … and {} more", shown.join(", "), all.len() - 20)
    } else {
        shown.join(", ")
    }
}

struct Builder {
    nodes: Vec<Node>,
    by_code: HashMap<String, usize>,
    variable: String,
}

impl Builder {
    fn new(variable: &str) -> Self {
        let mut by_code = HashMap::new();
        by_code.insert(TOTAL.to_string(), 0);
        Self {
            nodes: vec![Node { code: TOTAL.into(), parent: None, depth: 0, children: vec![] }],
            by_code,
            variable: variable.to_string(),
        }
    }

    fn index(&self, code: &str) -> Option<usize> {
        self.by_code.get(code).copied()
    }

    fn add(&mut self, code: &str, parent: usize) -> std::result::Result<usize, String> {
        if code.is_empty() {
            return Err("empty code".into());
        }
        if self.by_code.contains_key(code) {
            return Err(if code == TOTAL {
                format!("the code {TOTAL:?} is reserved for the grand total")
            } else {
                format!("code {code:?} appears twice")
            });
        }
        let i = self.nodes.len();
        let depth = self.nodes[parent].depth + 1;
        self.nodes.push(Node { code: code.into(), parent: Some(parent), depth, children: vec![] });
        self.nodes[parent].children.push(i);
        self.by_code.insert(code.into(), i);
        Ok(i)
    }

    /// Renumbers nodes in pre-order so parents precede children whatever the input order.
    fn finish(self, widths: Option<Vec<usize>>) -> Hierarchy {
        let mut order = Vec::with_capacity(self.nodes.len());
        let mut stack = vec![0usize];
        while let Some(n) = stack.pop() {
            order.push(n);
            stack.extend(self.nodes[n].children.iter().rev());
        }
        let mut new_of = vec![0usize; self.nodes.len()];
        for (new, &old) in order.iter().enumerate() {
            new_of[old] = new;
        }
        let nodes: Vec<Node> = order
            .iter()
            .map(|&old| {
                let n = &self.nodes[old];
                Node {
                    code: n.code.clone(),
                    parent: n.parent.map(|p| new_of[p]),
                    depth: n.depth,
                    children: n.children.iter().map(|&c| new_of[c]).collect(),
                }
            })
            .collect();
        let by_code = nodes.iter().enumerate().map(|(i, n)| (n.code.clone(), i)).collect();
        Hierarchy { variable: self.variable, nodes, by_code, widths }
    }
}

fn parse_hrc(b: &mut Builder, text: &str, lead: &str) -> std::result::Result<(), (usize, String)> {
    if lead.is_empty() {
        return Err((0, "the lead string must not be empty".into()));
    }
    // stack[d] = node at depth d on the current path (stack[0] = total).
    let mut stack: Vec<usize> = vec![0];
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.trim().is_empty() {
            continue;
        }
        let mut rest = line;
        let mut depth = 0;
        while let Some(r) = rest.strip_prefix(lead) {
            rest = r;
            depth += 1;
        }
        if rest.is_empty() {
            return Err((line_no, format!("line {line:?} has lead strings but no code")));
        }
        if depth + 1 > stack.len() {
            return Err((
                line_no,
                format!(
                    "code {rest:?} is at depth {} but the previous code is at depth {}: a level was skipped",
                    depth + 1,
                    stack.len() - 1
                ),
            ));
        }
        stack.truncate(depth + 1);
        let parent = stack[depth];
        let node = b.add(rest, parent).map_err(|m| (line_no, m))?;
        stack.push(node);
    }
    if b.nodes.len() == 1 {
        return Err((0, "the file lists no codes".into()));
    }
    Ok(())
}

fn parse_mapping(b: &mut Builder, text: &str) -> std::result::Result<(), (Option<usize>, String)> {
    let mut parent_of: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != 2 {
            return Err((Some(line_no), format!("expected `child,parent`, found {} fields in {line:?}", fields.len())));
        }
        let (child, parent) = (fields[0].trim(), fields[1].trim());
        if i == 0 && child.eq_ignore_ascii_case("child") && parent.eq_ignore_ascii_case("parent") {
            continue;
        }
        if child.is_empty() || parent.is_empty() {
            return Err((Some(line_no), "empty code".into()));
        }
        if child == parent {
            return Err((Some(line_no), format!("code {child:?} is its own parent")));
        }
        if let Some((p, l)) = parent_of.get(child) {
            return Err((Some(line_no), format!("code {child:?} already has parent {p:?} (line {l})")));
        }
        parent_of.insert(child.to_string(), (parent.to_string(), line_no));
        order.push(child.to_string());
    }
    if parent_of.is_empty() {
        return Err((None, "the file lists no pairs".into()));
    }
    // Roots: parents that are nobody's child, in order of first appearance; children in file order.
    let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut roots: Vec<&str> = Vec::new();
    for c in &order {
        let p = parent_of[c].0.as_str();
        children.entry(p).or_default().push(c.as_str());
        if !parent_of.contains_key(p) && !roots.contains(&p) {
            roots.push(p);
        }
    }
    let mut stack: Vec<(&str, usize)> = roots.iter().rev().map(|r| (*r, 0usize)).collect();
    let mut placed = 0usize;
    while let Some((code, parent)) = stack.pop() {
        let node = b.add(code, parent).map_err(|m| (None, m))?;
        placed += 1;
        if let Some(cs) = children.get(code) {
            stack.extend(cs.iter().rev().map(|c| (*c, node)));
        }
    }
    if placed != parent_of.len() + roots.len() {
        let cyclic: Vec<&str> = order.iter().filter(|c| b.index(c).is_none()).map(|s| s.as_str()).collect();
        return Err((None, format!("the child,parent pairs contain a cycle through: {}", preview(cyclic.into_iter()))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn levels_build_prefix_tree() {
        let h =
            Hierarchy::resolve("geo", &HierarchySpec::Levels(vec![2, 2]), &codes(&["1101", "1102", "1201"])).unwrap();
        let c: Vec<&str> = h.nodes().iter().map(|n| n.code.as_str()).collect();
        assert_eq!(c, ["Total", "11", "1101", "1102", "12", "1201"]);
        assert_eq!(h.ancestor_at(h.index("1102").unwrap(), 1), h.index("11").unwrap());
        let e = Hierarchy::resolve("geo", &HierarchySpec::Levels(vec![2, 2]), &codes(&["110"])).unwrap_err();
        assert!(e.to_string().contains("exactly 4 characters"), "{e}");
    }

    #[test]
    fn hrc_with_trivial_level_and_unbalanced_leaves() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "a.hrc", "A\n@A1\n@@A11\n@A2\nB\n@B1\n");
        let spec = HierarchySpec::Hrc { path: p, lead: "@".into() };
        let h = Hierarchy::resolve("x", &spec, &codes(&["A11", "A2", "B1"])).unwrap();
        assert_eq!(h.depth(), 3);
        let a1 = h.index("A1").unwrap();
        assert_eq!(h.nodes()[a1].children.len(), 1); // a trivial level
        assert_eq!(h.ancestor_at(h.index("A2").unwrap(), 3), h.index("A2").unwrap());
    }

    #[test]
    fn hrc_errors_name_line() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "bad.hrc", "A\n@@A11\n");
        let spec = HierarchySpec::Hrc { path: p, lead: "@".into() };
        let e = Hierarchy::resolve("x", &spec, &[]).unwrap_err().to_string();
        assert!(e.contains("bad.hrc:2") && e.contains("skipped"), "{e}");
        let p = write(&d, "dup.hrc", "A\n@A1\nB\n@A1\n");
        let spec = HierarchySpec::Hrc { path: p, lead: "@".into() };
        let e = Hierarchy::resolve("x", &spec, &[]).unwrap_err().to_string();
        assert!(e.contains("dup.hrc:4") && e.contains("twice"), "{e}");
    }

    #[test]
    fn unknown_and_internal_codes_are_listed() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "m.csv", "child,parent\nA1,A\nA2,A\nB1,B\n");
        let spec = HierarchySpec::Mapping(p);
        let mut data = codes(&["A1", "A", "B1"]);
        data.extend((0..25).map(|i| format!("Z{i:02}")));
        let e = Hierarchy::resolve("x", &spec, &data).unwrap_err().to_string();
        assert!(e.contains("25 codes in the data are not in the hierarchy"), "{e}");
        assert!(e.contains("and 5 more"), "{e}");
        assert!(e.contains("internal nodes") && e.contains("\"A\""), "{e}");
    }

    #[test]
    fn mapping_cycle_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "c.csv", "A,B\nB,A\nC,R\n");
        let e = Hierarchy::resolve("x", &HierarchySpec::Mapping(p), &[]).unwrap_err().to_string();
        assert!(e.contains("cycle"), "{e}");
    }
}
