//! Genetic algorithm for microaggregation of a small set of records.
//!
//! Why: Solanas, Martínez-Ballesté, Domingo-Ferrer & Mateo-Sanz's GA (`papers/microaggregation-
//! genetic-two-step.txt`, §3) is the per-macro-group optimiser of the two-step method. As in
//! the paper: a chromosome gives each record a group label from an alphabet of G = ⌊m/k⌋
//! symbols; the initial population is built by Algorithm 2 (random labels, never more than
//! 2k − 1 per group) with repair of groups below k; fitness is 1/(SSE + 1) and chromosomes
//! whose groups fall outside k..2k − 1 are penalised rather than removed; roulette-wheel
//! selection, one-point crossover, mutation (rate 0.1). The seed partition is one chromosome
//! of the initial population and the best chromosome is always kept (elitism), so the result
//! is never worse than the seed (the paper's Lemma 1).
//!
//! Invariants: deterministic for a given `Rng` state; returns a partition with every group of
//! size ≥ k (the seed if nothing better and valid was found).

use serde::{Deserialize, Serialize};

use super::geometry::{groups_from_labels, PointSet};
use crate::rng::Rng;

/// GA settings (defaults follow the paper's recommendations).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GaParams {
    /// Chromosomes per generation (default 40).
    pub population: usize,
    /// Generations (default 150).
    pub generations: usize,
    /// Probability that two selected parents are crossed (default 0.9).
    pub crossover_rate: f64,
    /// Probability that a child has one gene changed (default 0.1, as in the paper).
    pub mutation_rate: f64,
}

impl Default for GaParams {
    fn default() -> Self {
        Self { population: 40, generations: 150, crossover_rate: 0.9, mutation_rate: 0.1 }
    }
}

/// Penalised SSE of a chromosome: SSE plus, per group of invalid size, a large constant.
fn penalised_sse(points: &PointSet, k: usize, labels: &[usize], g: usize, penalty: f64) -> f64 {
    let d = points.dim;
    let mut sum = vec![0.0; g * d];
    let mut wsum = vec![0.0; g];
    let mut sq = vec![0.0; g];
    let mut count = vec![0usize; g];
    for (i, &l) in labels.iter().enumerate() {
        let w = points.weight(i);
        for (s, x) in sum[l * d..(l + 1) * d].iter_mut().zip(points.row(i)) {
            *s += w * x;
        }
        wsum[l] += w;
        count[l] += 1;
        sq[l] += w * points.row(i).iter().map(|x| x * x).sum::<f64>();
    }
    let mut total = 0.0;
    for l in 0..g {
        if count[l] == 0 {
            continue;
        }
        let s2: f64 = sum[l * d..(l + 1) * d].iter().map(|x| x * x).sum();
        total += (sq[l] - s2 / wsum[l]).max(0.0);
        if count[l] < k || count[l] > 2 * k - 1 {
            total += penalty;
        }
    }
    total
}

/// Algorithm 2 of the paper plus its repair: random labels with at most 2k − 1 per group,
/// then records moved from the largest groups into groups with fewer than k (a group left
/// empty is allowed).
fn random_chromosome(m: usize, k: usize, g: usize, rng: &mut Rng) -> Vec<usize> {
    let mut labels = vec![0usize; m];
    let mut count = vec![0usize; g];
    for l in labels.iter_mut() {
        loop {
            let c = rng.index(g);
            if count[c] < 2 * k - 1 {
                *l = c;
                count[c] += 1;
                break;
            }
        }
    }
    // repair: fill or empty groups below k
    for c in 0..g {
        if count[c] == 0 || count[c] >= k {
            continue;
        }
        while count[c] < k {
            let donor = (0..g).filter(|&o| o != c && count[o] > k).max_by_key(|&o| (count[o], std::cmp::Reverse(o)));
            let Some(donor) = donor else { break };
            let idx: Vec<usize> = (0..m).filter(|&i| labels[i] == donor).collect();
            let i = idx[rng.index(idx.len())];
            labels[i] = c;
            count[donor] -= 1;
            count[c] += 1;
        }
    }
    labels
}

/// Runs the GA on `points` with minimum group size `k`, seeded with the partition `seed`.
pub fn genetic(points: &PointSet, k: usize, seed: &[Vec<usize>], params: &GaParams, rng: &mut Rng) -> Vec<Vec<usize>> {
    let m = points.len();
    let g = (m / k).max(1);
    if g <= 1 || seed.len() > g {
        return seed.to_vec();
    }
    let mut seed_labels = vec![0usize; m];
    for (l, grp) in seed.iter().enumerate() {
        for &i in grp {
            seed_labels[i] = l;
        }
    }
    let all: Vec<usize> = (0..m).collect();
    let penalty = points.group_sse(&all) + 1.0;
    let pop_size = params.population.max(2);
    let mut pop: Vec<Vec<usize>> = vec![seed_labels];
    while pop.len() < pop_size {
        pop.push(random_chromosome(m, k, g, rng));
    }
    let mut fit: Vec<f64> = pop.iter().map(|c| penalised_sse(points, k, c, g, penalty)).collect();
    let best_of = |fit: &[f64]| {
        (0..fit.len()).min_by(|&a, &b| fit[a].total_cmp(&fit[b]).then(a.cmp(&b))).expect("non-empty population")
    };
    for _ in 0..params.generations {
        let weights: Vec<f64> = fit.iter().map(|s| 1.0 / (s + 1.0)).collect();
        let total: f64 = weights.iter().sum();
        let spin = |rng: &mut Rng| {
            let mut t = rng.next_f64() * total;
            for (i, w) in weights.iter().enumerate() {
                t -= w;
                if t <= 0.0 {
                    return i;
                }
            }
            weights.len() - 1
        };
        let elite = best_of(&fit);
        let mut next = vec![pop[elite].clone()];
        let mut next_fit = vec![fit[elite]];
        while next.len() < pop_size {
            let (a, b) = (spin(rng), spin(rng));
            let (mut c1, mut c2) = (pop[a].clone(), pop[b].clone());
            if rng.next_f64() < params.crossover_rate && m > 1 {
                let cut = 1 + rng.index(m - 1);
                c1[cut..].copy_from_slice(&pop[b][cut..]);
                c2[cut..].copy_from_slice(&pop[a][cut..]);
            }
            for c in [c1, c2] {
                let mut c = c;
                if rng.next_f64() < params.mutation_rate {
                    let i = rng.index(m);
                    c[i] = rng.index(g);
                }
                if next.len() < pop_size {
                    next_fit.push(penalised_sse(points, k, &c, g, penalty));
                    next.push(c);
                }
            }
        }
        pop = next;
        fit = next_fit;
    }
    let best = &pop[best_of(&fit)];
    let groups = groups_from_labels(best);
    if groups.iter().all(|grp| grp.len() >= k) && points.partition_sse(&groups) <= points.partition_sse(seed) {
        groups
    } else {
        seed.to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::microagg::mdav::mdav;

    #[test]
    fn never_worse_than_seed_and_deterministic() {
        let mut rng = Rng::new(4);
        let coords: Vec<f64> = (0..48).map(|_| rng.normal()).collect();
        let p = PointSet::new(2, &coords, None);
        let seed = mdav(&p, 3);
        let a = genetic(&p, 3, &seed, &GaParams::default(), &mut Rng::new(1));
        let b = genetic(&p, 3, &seed, &GaParams::default(), &mut Rng::new(1));
        assert_eq!(a, b);
        assert!(p.partition_sse(&a) <= p.partition_sse(&seed) + 1e-12);
        assert!(a.iter().all(|g| g.len() >= 3));
    }
}
