//! The auditor's witnesses (verified attacker moves) in one arena.
//!
//! Why: a million-cell census pattern holds millions of witnesses, most of them one hypercube
//! — every corner moved by the same step, up or down. Kept as one `Vec<(cell, value)>` each,
//! they took 16 bytes a corner plus a vector per witness (~1 GB of a 3.6 M-cell run). Here a
//! witness whose values all have one magnitude (*uniform*) keeps 4 bytes a corner — the cell,
//! its top bit the sign — and its step once; any other keeps its values beside. Reading one
//! back gives exactly the values recorded (a sign flip of a float is exact).

/// Top bit of a stored cell of a uniform witness: its value is `−step`.
const NEGATIVE: u32 = 1 << 31;

/// Marks a uniform witness in [`Witnesses::vstart`].
const UNIFORM: u64 = u64::MAX;

/// Append-only store of witnesses, each a list of `(cell, value)` moves, addressed by id.
#[derive(Debug, Clone, Default)]
pub(super) struct Witnesses {
    /// Per witness: its first corner in `cells`; one entry more at the end.
    start: Vec<u64>,
    /// Every witness's cells in recording order (uniform ones with the sign in the top bit).
    cells: Vec<u32>,
    /// Per witness: where its values start in `vals`, or [`UNIFORM`].
    vstart: Vec<u64>,
    /// Per witness: the step of a uniform witness (unused otherwise).
    step: Vec<f64>,
    /// The values of the non-uniform witnesses, one per corner.
    vals: Vec<f64>,
}

impl Witnesses {
    /// Number of witnesses recorded.
    pub fn len(&self) -> usize {
        self.vstart.len()
    }

    /// Records move `z` and returns its id.
    pub fn push(&mut self, z: &[(u32, f64)]) -> u32 {
        if self.start.is_empty() {
            self.start.push(0);
        }
        let id = self.vstart.len() as u32;
        let step = z.first().map_or(0.0, |&(_, v)| v.abs());
        let uniform = step.is_finite()
            && step > 0.0
            && z.iter().all(|&(c, v)| c & NEGATIVE == 0 && v.abs().to_bits() == step.to_bits());
        if uniform {
            self.cells.extend(z.iter().map(|&(c, v)| if v < 0.0 { c | NEGATIVE } else { c }));
            self.vstart.push(UNIFORM);
            self.step.push(step);
        } else {
            self.cells.extend(z.iter().map(|&(c, _)| c));
            self.vstart.push(self.vals.len() as u64);
            self.step.push(0.0);
            self.vals.extend(z.iter().map(|&(_, v)| v));
        }
        self.start.push(self.cells.len() as u64);
        id
    }

    /// The moves of witness `w`, in recording order.
    pub fn moves(&self, w: u32) -> Moves<'_> {
        let w = w as usize;
        let (lo, hi) = (self.start[w] as usize, self.start[w + 1] as usize);
        let vals = match self.vstart[w] {
            UNIFORM => None,
            v => Some(&self.vals[v as usize..v as usize + (hi - lo)]),
        };
        Moves { cells: &self.cells[lo..hi], vals, step: self.step[w], at: 0 }
    }

    /// The moves of witness `w` as a vector.
    pub fn to_vec(&self, w: u32) -> Vec<(u32, f64)> {
        self.moves(w).collect()
    }
}

/// Iterator over one witness's `(cell, value)` moves.
#[derive(Clone)]
pub(super) struct Moves<'a> {
    cells: &'a [u32],
    vals: Option<&'a [f64]>,
    step: f64,
    at: usize,
}

impl Iterator for Moves<'_> {
    type Item = (u32, f64);

    fn next(&mut self) -> Option<(u32, f64)> {
        let &c = self.cells.get(self.at)?;
        let out = match self.vals {
            Some(v) => (c, v[self.at]),
            None if c & NEGATIVE != 0 => (c & !NEGATIVE, -self.step),
            None => (c, self.step),
        };
        self.at += 1;
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every witness reads back bit for bit, uniform or not, in recording order (repeats and
    /// odd values included), and a uniform one keeps no value per corner.
    #[test]
    fn witnesses_read_back_exactly() {
        let third = 1.0 / 3.0;
        let ws: Vec<Vec<(u32, f64)>> = vec![
            vec![(7, third), (2, -third), (9, -third), (3, third)],
            vec![(1, 2.5), (4, -1.25)],
            vec![],
            vec![(5, 0.0), (6, 0.0)],
            vec![(8, f64::INFINITY), (9, -f64::INFINITY)],
            vec![(NEGATIVE | 3, 1.0), (4, -1.0)],
            vec![(11, -0.1), (11, 0.1)],
            vec![(12, 1e300), (13, -1e300), (14, 1e300)],
        ];
        let mut s = Witnesses::default();
        for (k, w) in ws.iter().enumerate() {
            assert_eq!(s.push(w), k as u32);
        }
        assert_eq!(s.len(), ws.len());
        for (k, w) in ws.iter().enumerate() {
            let got = s.to_vec(k as u32);
            assert_eq!(got.len(), w.len(), "witness {k}");
            for (a, b) in got.iter().zip(w) {
                assert!(a.0 == b.0 && a.1.to_bits() == b.1.to_bits(), "witness {k}: {a:?} != {b:?}");
            }
        }
        // Uniform: the first, the repeated cell and the large one; not the others.
        let uniform: Vec<bool> = (0..ws.len()).map(|w| s.vstart[w] == UNIFORM).collect();
        assert_eq!(uniform, [true, false, false, false, false, false, true, true]);
        assert_eq!(s.vals.len(), 2 + 2 + 2 + 2);
    }
}
