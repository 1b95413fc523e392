//! Search budgets: deterministic work limits, and the wall-clock hard stop.
//!
//! Why: "same input + seed ⇒ byte-identical output" must hold on any machine and with any
//! number of executors. So every search stops after a number of *work units* fixed by the
//! options — cleanup drop trials, tabu iterations, cutting-plane rounds, master MIP solves,
//! branch-and-bound nodes, linked rounds — never after a number of seconds. The wall-clock
//! `time_limit_s` is only a hard stop ([`Deadline`]): when it is what ended a search, the pattern
//! depends on machine speed, and the deadline remembers it so the run reports
//! `stopped_by_time_limit` and warns.
//!
//! Searches that *improve* a clean pattern (cleanup, tabu, branch-and-bound, modular levels)
//! stop at the limit and keep their best audited pattern. Building the *first* clean pattern
//! (closure and audit-driven repair) cannot stop halfway with something publishable, so it may
//! run a short grace period past the limit ([`grace_s`]) and then fails (nothing published).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::SuppressError;

/// Drop trials of one cleanup pass when `ProtectOptions::cleanup_trials` is `None`: every
/// candidate secondary is tried once, whatever its number.
pub const EVERY_CANDIDATE: usize = usize::MAX;

/// Seconds past a limit of `limit_s` that building the first clean pattern may take: a
/// quarter of the limit, at least 1 s, at most 60 s (so a run never ends far past its limit).
pub fn grace_s(limit_s: f64) -> f64 {
    (limit_s / 4.0).clamp(1.0, 60.0)
}

/// `seconds` as a span a clock can add: NaN and negatives are 0, `+∞` and anything above 10⁹ s
/// (32 years) are 10⁹ s.
pub fn span_s(seconds: f64) -> f64 {
    if seconds.is_finite() {
        seconds.clamp(0.0, 1e9)
    } else if seconds > 0.0 {
        1e9
    } else {
        0.0
    }
}

/// Milliseconds since the UNIX epoch: the clock of a stop shared by the machines of a cluster
/// (a modular subtable's `stop_unix_ms`), where an [`Instant`] means nothing.
pub fn unix_ms_now() -> f64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    now.as_secs_f64() * 1e3
}

/// The wall-clock hard stop of a search, and whether a search was ended by it.
///
/// Shared by reference between the phases of one method; a phase asks [`Self::reached`] at
/// each work unit and stops when it says so.
#[derive(Debug)]
pub struct Deadline {
    from: Instant,
    at: Instant,
    wall: Instant,
    limit_s: f64,
    hit: AtomicBool,
    /// Milliseconds before `at` kept for the steps that must follow every search ([`Self::reserve`]).
    reserve_ms: AtomicU64,
}

impl Deadline {
    /// A hard stop `seconds` from now (negative or NaN: now).
    pub fn after(seconds: f64) -> Self {
        Self::left_of(seconds, seconds)
    }

    /// The hard stop of a step that starts with `left` seconds of a stated limit of `stated_s`
    /// (a task sent on, a linked table protected after others): its grace period and its
    /// error are the stated limit's, so the first clean pattern may end where the job's
    /// would (a quarter of 300 s past the stop, not of the 0.5 s left), and the error names
    /// the limit the user wrote.
    pub fn left_of(left: f64, stated_s: f64) -> Self {
        let s = span_s(left);
        let limit_s = stated_s.max(s).min(1e9);
        let now = Instant::now();
        Self {
            from: now,
            at: now + Duration::from_secs_f64(s),
            wall: now + Duration::from_secs_f64(s + grace_s(limit_s)),
            limit_s,
            hit: AtomicBool::new(false),
            reserve_ms: AtomicU64::new(0),
        }
    }

    /// The stop of a first pattern that is only an alternative to a clean one already in hand
    /// (`fast`'s closure after its cubes): no grace period, its wall is this stop (less the
    /// reserve) — past it, the attempt fails and the caller publishes what it has. Its hits are
    /// its own: the caller records them here ([`Self::record_hit`]).
    pub fn without_grace(&self) -> Self {
        let stop = self.stop();
        Self {
            from: self.from,
            at: stop,
            wall: stop,
            limit_s: self.limit_s,
            hit: AtomicBool::new(false),
            reserve_ms: AtomicU64::new(0),
        }
    }

    /// Keeps `seconds` before the hard stop for the steps that follow every search and cannot
    /// be skipped — the final re-verification of the pattern, the lower bound, the figures —
    /// so that a run stopped by its limit still ends near it: the searches see the stop that
    /// much earlier (a 3.6 M-cell table ended 140 s past a 1,200-s limit in those steps).
    /// The largest reserve asked for holds.
    pub fn reserve(&self, seconds: f64) {
        let ms = (seconds.max(0.0) * 1e3).min(1e12) as u64;
        self.reserve_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// The hard stop the searches see: the limit less the reserve.
    fn stop(&self) -> Instant {
        let reserve = Duration::from_millis(self.reserve_ms.load(Ordering::Relaxed));
        self.at.checked_sub(reserve).map_or(self.from, |t| t.max(self.from))
    }

    /// Whether the first clean pattern is still being built past the grace period: the caller
    /// fails with [`Self::error`].
    pub fn wall_reached(&self) -> bool {
        Instant::now() >= self.wall
    }

    /// The instant past which building the first clean pattern fails ([`Self::wall_reached`]).
    pub fn wall(&self) -> Instant {
        self.wall
    }

    /// The error of a phase that the hard stop ended before any pattern passed the audit
    /// (records the hit).
    pub fn error(&self, phase: &str) -> SuppressError {
        self.record_hit();
        SuppressError::TimeLimit { phase: phase.to_string(), limit_s: self.limit_s }
    }

    /// Whether the hard stop has passed; when it has, records that it ended a search (so ask
    /// only where a `true` makes the caller stop early).
    pub fn reached(&self) -> bool {
        let past = Instant::now() >= self.stop();
        if past {
            self.hit.store(true, Ordering::Relaxed);
        }
        past
    }

    /// Records that the hard stop ended a search (e.g. an LP solver stopped by its time limit).
    pub fn record_hit(&self) {
        self.hit.store(true, Ordering::Relaxed);
    }

    /// Whether some search was ended by the hard stop.
    pub fn was_hit(&self) -> bool {
        self.hit.load(Ordering::Relaxed)
    }

    /// The instant of the hard stop, less the reserve (for solvers given it as their own limit).
    pub fn at(&self) -> Instant {
        self.stop()
    }

    /// The stated limit in seconds (the job's, also for a step that starts with less left):
    /// the work budgets derived from the limit use it, so they do not depend on the machine.
    pub fn limit_s(&self) -> f64 {
        self.limit_s
    }

    /// Seconds left before the hard stop, less the reserve (0 when past; never records a hit).
    pub fn left_s(&self) -> f64 {
        self.stop().saturating_duration_since(Instant::now()).as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_is_recorded_only_when_the_stop_was_asked_after_it_passed() {
        let far = Deadline::after(3600.0);
        assert!(!far.reached());
        assert!(far.left_s() > 3000.0);
        assert!(!far.was_hit());
        let past = Deadline::after(0.0);
        assert_eq!(past.left_s(), 0.0);
        assert!(!past.was_hit(), "asking for the time left is not a stop");
        assert!(past.reached());
        assert!(past.was_hit());
        assert!(Deadline::after(f64::INFINITY).left_s() > 1e8);
        assert!(Deadline::after(f64::NAN).reached());
        assert!(!Deadline::after(0.0).wall_reached(), "a grace period to finish a first pattern");
        assert_eq!((grace_s(0.0), grace_s(40.0), grace_s(1e6)), (1.0, 10.0, 60.0));
    }

    /// A step that starts with little of a stated limit left (a modular completion sent on
    /// after the levels) keeps the stated limit's grace period and names it in its error.
    #[test]
    fn a_step_sent_on_keeps_the_stated_limits_grace_and_error() {
        let grace = |d: &Deadline| d.wall().duration_since(d.from).as_secs_f64();
        let sent = Deadline::left_of(0.0, 300.0);
        assert!(sent.reached());
        assert!((grace(&sent) - 60.0).abs() < 1e-6, "{}", grace(&sent));
        assert!((grace(&Deadline::after(0.0)) - 1.0).abs() < 1e-6);
        assert!((grace(&Deadline::left_of(2.0, 8.0)) - 4.0).abs() < 1e-6);
        match sent.error("the repair") {
            SuppressError::TimeLimit { limit_s, .. } => assert_eq!(limit_s, 300.0),
            e => panic!("{e}"),
        }
    }

    /// A reserve moves the stop the searches see earlier, by the largest amount asked for; the
    /// first pattern's grace period still counts from the limit itself.
    #[test]
    fn a_reserve_brings_the_searches_stop_forward() {
        let d = Deadline::after(100.0);
        d.reserve(30.0);
        d.reserve(10.0);
        let left = d.left_s();
        assert!(left > 60.0 && left <= 70.0, "{left}");
        assert!(!d.reached());
        d.reserve(200.0);
        assert!(d.reached() && d.was_hit());
        assert_eq!(d.left_s(), 0.0);
        assert!(!d.wall_reached(), "the grace period of the first pattern is not shortened");
    }

    /// An alternative first pattern has no grace period: its wall is the stop the searches
    /// see (less the reserve), and its hits do not reach the deadline it came from.
    #[test]
    fn an_alternative_first_pattern_ends_at_the_stop() {
        let d = Deadline::after(100.0);
        d.reserve(20.0);
        let alt = d.without_grace();
        assert!(alt.wall() <= d.at() && alt.wall() + Duration::from_millis(1) >= d.at());
        assert!(!alt.wall_reached() && !alt.reached());
        assert_eq!(alt.limit_s(), 100.0);
        let past = Deadline::left_of(0.0, 300.0).without_grace();
        assert!(past.wall_reached(), "no grace: a stop already passed ends it at once");
        let _ = past.error("the closure");
        assert!(past.was_hit());
        assert!(!d.was_hit());
    }
}
