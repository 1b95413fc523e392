//! Macro-groups: cutting a large file into bounded, spatially compact parts.
//!
//! Why: MDAV is O(n²) over the records it works on, so the two-step method (step 1) first
//! cuts the data into macro-groups of at most `max_size` records by recursive bisection along
//! the principal axis (the direction of largest variance, found by power iteration on the
//! covariance matrix) at a median, then runs MDAV inside each part. The parts are independent,
//! which makes them the unit of parallel work (and of distribution to cluster executors).
//!
//! Invariants: every part has ≥ k records (cuts are placed at multiples of k, at least k from
//! either end) and at most `max(max_size, 4k)`; parts are listed in a deterministic order and
//! members in a deterministic order, independent of the number of threads (ties in the
//! projection are broken by record index).

use super::geometry::PointSet;

/// Splits `members` (indices into `points`) into macro-groups of at most `max_size` records.
pub fn macro_groups(points: &PointSet, members: Vec<usize>, k: usize, max_size: usize) -> Vec<Vec<usize>> {
    let max_size = max_size.max(4 * k);
    split(points, members, k, max_size)
}

fn split(points: &PointSet, mut members: Vec<usize>, k: usize, max_size: usize) -> Vec<Vec<usize>> {
    if members.len() <= max_size {
        return vec![members];
    }
    let axis = principal_axis(points, &members);
    let len = members.len();
    let cut = ((len / 2) / k * k).clamp(k, len - k);
    let mut keyed: Vec<(f64, usize)> =
        members.iter().map(|&i| (points.row(i).iter().zip(&axis).map(|(x, a)| x * a).sum(), i)).collect();
    keyed.select_nth_unstable_by(cut, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    members.clear();
    let right: Vec<usize> = keyed[cut..].iter().map(|p| p.1).collect();
    let left: Vec<usize> = keyed[..cut].iter().map(|p| p.1).collect();
    let (mut a, b) = rayon::join(|| split(points, left, k, max_size), || split(points, right, k, max_size));
    a.extend(b);
    a
}

/// Unit direction of largest variance of the points `members` (power iteration, fixed count).
pub fn principal_axis(points: &PointSet, members: &[usize]) -> Vec<f64> {
    let d = points.dim;
    let n = members.len() as f64;
    let mut mean = vec![0.0; d];
    for &i in members {
        for (m, x) in mean.iter_mut().zip(points.row(i)) {
            *m += x / n;
        }
    }
    let mut cov = vec![0.0; d * d];
    for &i in members {
        let r = points.row(i);
        for a in 0..d {
            let da = r[a] - mean[a];
            for b in a..d {
                cov[a * d + b] += da * (r[b] - mean[b]);
            }
        }
    }
    for a in 0..d {
        for b in 0..a {
            cov[a * d + b] = cov[b * d + a];
        }
    }
    // Start from the widest axis plus a small tilt so it is never orthogonal to the answer.
    let widest = (0..d).max_by(|&a, &b| cov[a * d + a].total_cmp(&cov[b * d + b]).then(b.cmp(&a))).unwrap_or(0);
    let mut v: Vec<f64> = (0..d).map(|a| if a == widest { 1.0 } else { 0.1 }).collect();
    for _ in 0..60 {
        let mut w = vec![0.0; d];
        for a in 0..d {
            w[a] = (0..d).map(|b| cov[a * d + b] * v[b]).sum();
        }
        let norm = w.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            let mut e = vec![0.0; d];
            e[widest] = 1.0;
            return e;
        }
        v = w.into_iter().map(|x| x / norm).collect();
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    #[test]
    fn parts_are_bounded_cover_everything_and_have_k() {
        let mut rng = Rng::new(3);
        let n = 1000;
        let coords: Vec<f64> = (0..2 * n).map(|_| rng.normal()).collect();
        let p = PointSet::new(2, &coords, None);
        let parts = macro_groups(&p, (0..n).collect(), 3, 100);
        let mut all: Vec<usize> = parts.iter().flatten().copied().collect();
        all.sort();
        assert_eq!(all, (0..n).collect::<Vec<_>>());
        assert!(
            parts.iter().all(|g| g.len() >= 3 && g.len() <= 100),
            "{:?}",
            parts.iter().map(|g| g.len()).collect::<Vec<_>>()
        );
        assert_eq!(parts, macro_groups(&p, (0..n).collect(), 3, 100));
    }

    #[test]
    fn principal_axis_of_a_diagonal_cloud() {
        let coords: Vec<f64> = (0..50).flat_map(|i| [i as f64, i as f64 + (i % 2) as f64 * 0.1]).collect();
        let p = PointSet::new(2, &coords, None);
        let v = principal_axis(&p, &(0..50).collect::<Vec<_>>());
        assert!(
            (v[0].abs() - std::f64::consts::FRAC_1_SQRT_2).abs() < 0.01
                && (v[1].abs() - std::f64::consts::FRAC_1_SQRT_2).abs() < 0.01
        );
    }
}
