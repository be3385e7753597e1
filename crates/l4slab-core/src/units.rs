//! Simulation time and physical units.
//!
//! All time is integer nanoseconds since the start of the run (`u64`: 584 years).
//! Integer time keeps event ordering exact and results identical across
//! platforms; convert to `f64` only at the edges (analysis, plotting, control
//! laws that are specified in real numbers).

use core::fmt;
use core::ops::{Add, AddAssign, Mul, Sub, SubAssign};
use serde::{Deserialize, Serialize};

/// An instant on the simulation clock, in nanoseconds since the run started.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Time(u64);

/// A non-negative span of time, in nanoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Dur(u64);

/// A link or pacing rate, in bits per second.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Rate(u64);

/// A byte count (sizes, buffer limits).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Bytes(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    /// A time later than any simulation will reach; used as "never".
    pub const MAX: Time = Time(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        Time(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        Time(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Time(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        Time(s * 1_000_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    /// Time elapsed since `earlier`, or zero if `earlier` is in the future.
    pub fn saturating_since(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
    /// `self + d`, saturating at [`Time::MAX`].
    pub fn saturating_add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}

impl Dur {
    pub const ZERO: Dur = Dur(0);
    pub const MAX: Dur = Dur(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        Dur(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        Dur(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Dur(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        Dur(s * 1_000_000_000)
    }
    /// Rounds to the nearest nanosecond; negative or NaN inputs give zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            Dur(0)
        } else {
            Dur((s * 1e9).round().min(u64::MAX as f64) as u64)
        }
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    pub fn saturating_sub(self, o: Dur) -> Dur {
        Dur(self.0.saturating_sub(o.0))
    }
    pub fn saturating_mul(self, k: u64) -> Dur {
        Dur(self.0.saturating_mul(k))
    }
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl Rate {
    pub const ZERO: Rate = Rate(0);
    pub const fn from_bps(bps: u64) -> Self {
        Rate(bps)
    }
    pub const fn from_kbps(k: u64) -> Self {
        Rate(k * 1_000)
    }
    pub const fn from_mbps(m: u64) -> Self {
        Rate(m * 1_000_000)
    }
    pub const fn as_bps(self) -> u64 {
        self.0
    }
    pub fn as_mbps_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }

    /// Serialization time of `bytes` at this rate, rounded up to whole
    /// nanoseconds so that back-to-back packets never overlap.
    ///
    /// # Panics
    /// Panics if the rate is zero (a zero-rate link never finishes sending).
    pub fn tx_time(self, bytes: u64) -> Dur {
        assert!(self.0 > 0, "tx_time on a zero-rate link");
        let bits = u128::from(bytes) * 8 * 1_000_000_000;
        Dur(bits.div_ceil(u128::from(self.0)) as u64)
    }

    /// Bytes that this rate moves in `d` (rounded down).
    pub fn bytes_in(self, d: Dur) -> u64 {
        (u128::from(self.0) * u128::from(d.0) / 8 / 1_000_000_000) as u64
    }

    /// The rate that moves `bytes` in `d`; `None` for an empty interval.
    pub fn from_bytes_per(bytes: u64, d: Dur) -> Option<Rate> {
        (d.0 > 0).then(|| Rate((u128::from(bytes) * 8 * 1_000_000_000 / u128::from(d.0)) as u64))
    }

    /// This rate scaled by a factor (used for pacing gains).
    pub fn scale(self, k: f64) -> Rate {
        Rate((self.0 as f64 * k).max(0.0).round() as u64)
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    fn add(self, d: Dur) -> Time {
        Time(self.0.checked_add(d.0).expect("time overflow"))
    }
}
impl AddAssign<Dur> for Time {
    fn add_assign(&mut self, d: Dur) {
        *self = *self + d;
    }
}
impl Sub for Time {
    type Output = Dur;
    /// # Panics
    /// Panics if `rhs` is later than `self`: use [`Time::saturating_since`] when
    /// that can legitimately happen.
    fn sub(self, rhs: Time) -> Dur {
        Dur(self.0.checked_sub(rhs.0).expect("negative duration"))
    }
}
impl Sub<Dur> for Time {
    type Output = Time;
    fn sub(self, d: Dur) -> Time {
        Time(self.0.saturating_sub(d.0))
    }
}
impl Add for Dur {
    type Output = Dur;
    fn add(self, o: Dur) -> Dur {
        Dur(self.0 + o.0)
    }
}
impl AddAssign for Dur {
    fn add_assign(&mut self, o: Dur) {
        self.0 += o.0;
    }
}
impl Sub for Dur {
    type Output = Dur;
    fn sub(self, o: Dur) -> Dur {
        Dur(self.0.checked_sub(o.0).expect("negative duration"))
    }
}
impl SubAssign for Dur {
    fn sub_assign(&mut self, o: Dur) {
        *self = *self - o;
    }
}
impl Mul<u64> for Dur {
    type Output = Dur;
    fn mul(self, k: u64) -> Dur {
        Dur(self.0 * k)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}
impl fmt::Display for Dur {
    /// Exact decimal in the largest unit that keeps it >= 1: "30s", "1.5ms", "250us".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (unit, name) = match self.0 {
            n if n >= 1_000_000_000 => (1_000_000_000, "s"),
            n if n >= 1_000_000 => (1_000_000, "ms"),
            n if n >= 1_000 => (1_000, "us"),
            _ => (1, "ns"),
        };
        write_exact(f, self.0, unit)?;
        f.write_str(name)
    }
}

/// Writes `n / unit` as an exact decimal without trailing zeros.
fn write_exact(f: &mut fmt::Formatter<'_>, n: u64, unit: u64) -> fmt::Result {
    write!(f, "{}", n / unit)?;
    let mut frac = n % unit;
    if frac == 0 {
        return Ok(());
    }
    let mut digits = unit.ilog10() as usize;
    while frac.is_multiple_of(10) {
        frac /= 10;
        digits -= 1;
    }
    write!(f, ".{frac:0digits$}")
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (unit, name) = match self.0 {
            n if n >= 1_000_000_000 => (1_000_000_000, "Gbit"),
            n if n >= 1_000_000 => (1_000_000, "Mbit"),
            n if n >= 1_000 => (1_000, "kbit"),
            _ => (1, "bit"),
        };
        write_exact(f, self.0, unit)?;
        f.write_str(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_time_is_exact() {
        // 1500 B = 12,000 bit at 12 Mbit/s = 1 ms exactly.
        assert_eq!(Rate::from_mbps(12).tx_time(1500), Dur::from_millis(1));
        // 1500 B at 100 Mbit/s = 120 us.
        assert_eq!(Rate::from_mbps(100).tx_time(1500), Dur::from_micros(120));
        // 1 B at 3 bit/s = 2.666... s, rounded up to the next nanosecond.
        assert_eq!(Rate::from_bps(3).tx_time(1).as_nanos(), 2_666_666_667);
    }

    #[test]
    fn bytes_in_inverts_tx_time() {
        let r = Rate::from_mbps(20);
        // 20 Mbit/s for 25 ms = 500,000 bit = 62,500 B.
        assert_eq!(r.bytes_in(Dur::from_millis(25)), 62_500);
        assert_eq!(Rate::from_bytes_per(62_500, Dur::from_millis(25)), Some(r));
        assert_eq!(Rate::from_bytes_per(1, Dur::ZERO), None);
    }

    #[test]
    #[should_panic(expected = "negative duration")]
    fn negative_duration_is_a_bug() {
        let _ = Time::from_nanos(1) - Time::from_nanos(2);
    }

    #[test]
    fn display_uses_readable_units() {
        assert_eq!(Dur::from_millis(25).to_string(), "25ms");
        assert_eq!(Rate::from_mbps(20).to_string(), "20Mbit");
        assert_eq!(Dur::from_secs(30).to_string(), "30s");
        assert_eq!(Dur::from_micros(1500).to_string(), "1.5ms");
        assert_eq!(Dur::from_nanos(1_000_000_007).to_string(), "1.000000007s");
        assert_eq!(Rate::from_kbps(1500).to_string(), "1.5Mbit");
    }
}
