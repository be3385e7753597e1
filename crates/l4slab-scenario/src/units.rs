//! Units people write: rates `"20Mbit"`, durations `"25ms"`, sizes `"10MB"`,
//! buffers `"100pkt"` / `"150KB"` / `"50ms"`, and percentages `"1%"`.
//!
//! Every parser is a pure function from the text to an l4slab-core value.
//! Numbers are decimal (`1.5`, `1e6`, `2.5e-3`) and are converted *exactly*
//! (integer arithmetic on the decimal digits, rounded to the nearest unit of
//! the result, halves away from zero), so `"0.1s"` is exactly 100,000,000 ns
//! and `"1.1Mbit"` exactly 1,100,000 bit/s. Whitespace between the number and
//! the unit is allowed (`"20 Mbit/s"`). A number without a unit is rejected:
//! `20` could mean bits or megabits, seconds or milliseconds.
//!
//! Unit spellings (case matters where it carries meaning):
//!
//! * rate: `bit`, `bit/s`, `bps` are **bits** per second; `Bps`, `B/s` are
//!   **bytes** per second (x 8). Optional decimal prefix `k`/`K` (1e3),
//!   `M`/`m` (1e6), `G`/`g` (1e9), `T`/`t` (1e12). So `"20Mbps"` = `"20Mbit"`
//!   = 20,000,000 bit/s and `"2.5MBps"` = 20,000,000 bit/s. Unlike Linux `tc`,
//!   where `bps` means *bytes* per second, `bps` here means bits, as it does
//!   everywhere else.
//! * duration: `ns`, `us`, `µs`, `ms`, `s`, `min`, `h`.
//! * size: `B`; decimal `kB`/`KB` (1e3), `MB`, `GB`, `TB`; binary `KiB`
//!   (1024), `MiB`, `GiB`, `TiB`.
//! * buffer: a size, a duration, or packets: `pkt`, `pkts`, `packets`.
//! * fraction: `"1%"`, `"0.5%"` in [0 %, 100 %], or (as a TOML number,
//!   handled by the caller with [`fraction_from_number`]) a float in [0, 1].

use core::fmt;

use l4slab_core::{Dur, Rate};

/// Why a unit string did not parse. Display gives the part of the message
/// before the example: `"fast" is not a rate`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnitError {
    /// Not `<number><unit>` at all.
    NotA {
        text: String,
        what: &'static str,
    },
    /// A bare number (`"20"`): the unit is required.
    NoUnit {
        text: String,
    },
    /// A number followed by a unit this kind of value does not have.
    UnknownUnit {
        text: String,
        unit: String,
        what: &'static str,
        known: &'static str,
    },
    Negative {
        text: String,
    },
    TooLarge {
        text: String,
    },
    /// A fraction above 100 %.
    AboveOne {
        text: String,
    },
    /// A packet count that is not a whole number.
    NotWhole {
        text: String,
    },
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnitError::NotA { text, what } => write!(f, "{text:?} is not {what}"),
            UnitError::NoUnit { text } => write!(f, "{text:?} has no unit"),
            UnitError::UnknownUnit {
                text,
                unit,
                what,
                known,
            } => write!(
                f,
                "{text:?} has an unknown {what} unit '{unit}' (known: {known})"
            ),
            UnitError::Negative { text } => write!(f, "{text:?} is negative"),
            UnitError::TooLarge { text } => write!(f, "{text:?} is too large"),
            UnitError::AboveOne { text } => write!(f, "{text:?} is more than 100%"),
            UnitError::NotWhole { text } => write!(f, "{text:?} is not a whole number of packets"),
        }
    }
}

impl std::error::Error for UnitError {}

/// A buffer limit as written: packets, bytes, or time (converted to bytes
/// later, at the link rate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffer {
    Packets(u64),
    Bytes(u64),
    Time(Dur),
}

const RATE_UNITS: &str = "bit, bit/s, bps (bits) or Bps, B/s (bytes), with a prefix k, M, G or T";
const DURATION_UNITS: &str = "ns, us, µs, ms, s, min, h";
const SIZE_UNITS: &str = "B, kB, KB, MB, GB, TB, KiB, MiB, GiB, TiB";
const BUFFER_UNITS: &str = "pkt; B, KB, MB, KiB, MiB; ns, us, ms, s";

const DURATION_TABLE: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),  // µ MICRO SIGN
    ("\u{3bc}s", 1_000), // μ GREEK SMALL LETTER MU
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

const SIZE_TABLE: &[(&str, u128)] = &[
    ("B", 1),
    ("kB", 1_000),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
];

const PACKET_UNITS: &[&str] = &["pkt", "pkts", "packets"];

/// Parse a rate: `"20Mbit"` -> 20,000,000 bit/s.
pub fn parse_rate(text: &str) -> Result<Rate, UnitError> {
    let (num, unit) = split(text, "a rate")?;
    let mult = rate_multiplier(unit).ok_or_else(|| unknown_unit(text, unit, "rate", RATE_UNITS))?;
    num.to_u64(mult, text).map(Rate::from_bps)
}

/// Parse a duration: `"25ms"` -> 25,000,000 ns.
pub fn parse_duration(text: &str) -> Result<Dur, UnitError> {
    let (num, unit) = split(text, "a duration")?;
    let mult = lookup(DURATION_TABLE, unit)
        .ok_or_else(|| unknown_unit(text, unit, "duration", DURATION_UNITS))?;
    num.to_u64(mult, text).map(Dur::from_nanos)
}

/// Parse a size in bytes: `"10MB"` -> 10,000,000, `"64KiB"` -> 65,536.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (num, unit) = split(text, "a size")?;
    let mult =
        lookup(SIZE_TABLE, unit).ok_or_else(|| unknown_unit(text, unit, "size", SIZE_UNITS))?;
    num.to_u64(mult, text)
}

/// Parse a buffer limit: `"100pkt"`, `"150KB"`, `"64KiB"` or `"50ms"`.
pub fn parse_buffer(text: &str) -> Result<Buffer, UnitError> {
    let (num, unit) = split(text, "a buffer size")?;
    if PACKET_UNITS.contains(&unit) {
        let n = num.to_u64(1, text)?;
        if !num.is_whole() {
            return Err(UnitError::NotWhole { text: text.into() });
        }
        return Ok(Buffer::Packets(n));
    }
    if let Some(mult) = lookup(SIZE_TABLE, unit) {
        return num.to_u64(mult, text).map(Buffer::Bytes);
    }
    if let Some(mult) = lookup(DURATION_TABLE, unit) {
        return num
            .to_u64(mult, text)
            .map(|ns| Buffer::Time(Dur::from_nanos(ns)));
    }
    Err(unknown_unit(text, unit, "buffer", BUFFER_UNITS))
}

/// Parse a percentage: `"1%"` -> 0.01, in [0, 1]. The result is the `f64`
/// nearest to the exact decimal value (`"0.5%"` is the double nearest 0.005).
pub fn parse_fraction(text: &str) -> Result<f64, UnitError> {
    let (num, unit) = split(text, "a percentage")?;
    if unit != "%" {
        return Err(unknown_unit(text, unit, "percentage", "%"));
    }
    // Shift the decimal exponent by -2 and let the standard library round
    // once, correctly.
    let v: f64 = format!("{}e{}", num.mantissa, i64::from(num.exp10) - 2)
        .parse()
        .map_err(|_| UnitError::NotA {
            text: text.into(),
            what: "a percentage",
        })?;
    if v > 1.0 {
        return Err(UnitError::AboveOne { text: text.into() });
    }
    Ok(v)
}

/// Check a fraction written as a TOML number (`0.01`): finite, in [0, 1].
pub fn fraction_from_number(v: f64) -> Result<f64, UnitError> {
    let text = v.to_string();
    if !v.is_finite() {
        Err(UnitError::NotA {
            text,
            what: "a fraction",
        })
    } else if v < 0.0 {
        Err(UnitError::Negative { text })
    } else if v > 1.0 {
        Err(UnitError::AboveOne { text })
    } else {
        Ok(v)
    }
}

fn lookup(table: &[(&str, u128)], unit: &str) -> Option<u128> {
    table.iter().find(|(u, _)| *u == unit).map(|(_, m)| *m)
}

/// Bits per second per unit; `None` if `unit` is not a rate unit.
fn rate_multiplier(unit: &str) -> Option<u128> {
    let base = |u: &str| match u {
        "bit" | "bit/s" | "bps" => Some(1),
        "Bps" | "B/s" => Some(8),
        _ => None,
    };
    if let Some(m) = base(unit) {
        return Some(m);
    }
    let mut chars = unit.chars();
    let prefix: u128 = match chars.next()? {
        'k' | 'K' => 1_000,
        'M' | 'm' => 1_000_000,
        'G' | 'g' => 1_000_000_000,
        'T' | 't' => 1_000_000_000_000,
        _ => return None,
    };
    base(chars.as_str()).map(|m| m * prefix)
}

fn unknown_unit(text: &str, unit: &str, what: &'static str, known: &'static str) -> UnitError {
    UnitError::UnknownUnit {
        text: text.into(),
        unit: unit.into(),
        what,
        known,
    }
}

/// A non-negative decimal number `mantissa * 10^exp10`, exactly as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Decimal {
    mantissa: u128,
    exp10: i32,
}

/// Split `text` into a non-negative [`Decimal`] and a non-empty unit.
fn split<'a>(text: &'a str, what: &'static str) -> Result<(Decimal, &'a str), UnitError> {
    let t = text.trim();
    let not_a = || UnitError::NotA {
        text: text.into(),
        what,
    };
    let b = t.as_bytes();
    let mut i = 0;
    let negative = match b.first() {
        Some(b'-') => {
            i = 1;
            true
        }
        Some(b'+') => {
            i = 1;
            false
        }
        _ => false,
    };
    let mut mantissa: u128 = 0;
    let mut exp10: i64 = 0;
    let mut digits = 0;
    let mut seen_point = false;
    while i < b.len() {
        match b[i] {
            c @ b'0'..=b'9' => {
                digits += 1;
                if mantissa < u128::MAX / 100 {
                    mantissa = mantissa * 10 + u128::from(c - b'0');
                    if seen_point {
                        exp10 -= 1;
                    }
                } else if !seen_point {
                    // Beyond ~37 significant digits: keep the magnitude only.
                    exp10 += 1;
                }
            }
            b'.' if !seen_point => seen_point = true,
            _ => break,
        }
        i += 1;
    }
    if digits == 0 {
        return Err(not_a());
    }
    // Exponent: `e` or `E`, optional sign, at least one digit.
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        let exp_negative = match b.get(j) {
            Some(b'-') => {
                j += 1;
                true
            }
            Some(b'+') => {
                j += 1;
                false
            }
            _ => false,
        };
        let start = j;
        let mut e: i64 = 0;
        while j < b.len() && b[j].is_ascii_digit() {
            e = (e * 10 + i64::from(b[j] - b'0')).min(100_000);
            j += 1;
        }
        if j > start {
            exp10 += if exp_negative { -e } else { e };
            i = j;
        }
    }
    let unit = t[i..].trim_start();
    if negative && mantissa != 0 {
        return Err(UnitError::Negative { text: text.into() });
    }
    if unit.is_empty() {
        return Err(UnitError::NoUnit { text: text.into() });
    }
    let exp10 = i32::try_from(exp10.clamp(-100_000, 100_000)).expect("clamped");
    Ok((Decimal { mantissa, exp10 }, unit))
}

impl Decimal {
    /// `self * mult`, rounded to the nearest integer (halves away from zero).
    fn to_u64(self, mult: u128, text: &str) -> Result<u64, UnitError> {
        let too_large = || UnitError::TooLarge { text: text.into() };
        if self.mantissa == 0 {
            return Ok(0);
        }
        let (mut m, mut e) = (self.mantissa, self.exp10);
        // Drop digits we cannot carry (only below the decimal point matters).
        let num = loop {
            match m.checked_mul(mult) {
                Some(n) => break n,
                None if e < 0 => {
                    m = (m + 5) / 10;
                    e += 1;
                }
                None => return Err(too_large()),
            }
        };
        let value = if e >= 0 {
            let scale = 10u128.checked_pow(e as u32).ok_or_else(too_large)?;
            num.checked_mul(scale).ok_or_else(too_large)?
        } else {
            match 10u128.checked_pow(e.unsigned_abs()) {
                // num < 2^128 < 10^39 / 2: rounds to zero.
                None => 0,
                Some(div) => {
                    let (q, r) = (num / div, num % div);
                    if r >= div - r {
                        q + 1
                    } else {
                        q
                    }
                }
            }
        };
        u64::try_from(value).map_err(|_| too_large())
    }

    /// The value is an integer.
    fn is_whole(self) -> bool {
        if self.exp10 >= 0 || self.mantissa == 0 {
            return true;
        }
        match 10u128.checked_pow(self.exp10.unsigned_abs()) {
            Some(div) => self.mantissa.is_multiple_of(div),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(s: &str) -> u64 {
        parse_rate(s).unwrap().as_bps()
    }
    fn ns(s: &str) -> u64 {
        parse_duration(s).unwrap().as_nanos()
    }

    #[test]
    fn rates_in_bits_per_second() {
        assert_eq!(rate("20Mbit"), 20_000_000);
        assert_eq!(rate("20Mbps"), 20_000_000);
        assert_eq!(rate("20 Mbit/s"), 20_000_000);
        assert_eq!(rate("20mbit"), 20_000_000); // tc spelling
        assert_eq!(rate("1.5Gbit"), 1_500_000_000);
        assert_eq!(rate("500kbit"), 500_000);
        assert_eq!(rate("100Kbps"), 100_000);
        assert_eq!(rate("1e6bit"), 1_000_000);
        assert_eq!(rate("1.1Mbit"), 1_100_000); // exact, no binary float error
        assert_eq!(rate("12bps"), 12);
        assert_eq!(rate("2Tbit"), 2_000_000_000_000);
        assert_eq!(rate("0Mbit"), 0); // the caller rejects zero where it matters
    }

    #[test]
    fn byte_rates_are_times_eight() {
        // 2.5 MB/s = 2,500,000 B/s = 20,000,000 bit/s.
        assert_eq!(rate("2.5MBps"), 20_000_000);
        assert_eq!(rate("2.5MB/s"), 20_000_000);
        assert_eq!(rate("1Bps"), 8);
        assert_eq!(rate("1kB/s"), 8_000);
    }

    #[test]
    fn rates_need_a_known_unit() {
        assert_eq!(
            parse_rate("20"),
            Err(UnitError::NoUnit { text: "20".into() })
        );
        assert_eq!(
            parse_rate("fast").unwrap_err().to_string(),
            r#""fast" is not a rate"#
        );
        let e = parse_rate("20Mbyte").unwrap_err();
        assert!(
            matches!(e, UnitError::UnknownUnit { ref unit, .. } if unit == "Mbyte"),
            "{e}"
        );
        assert!(matches!(
            parse_rate("20Mb"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_rate("20Mibit"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert_eq!(
            parse_rate("-5Mbit"),
            Err(UnitError::Negative {
                text: "-5Mbit".into()
            })
        );
        assert!(matches!(
            parse_rate("1e30Gbit"),
            Err(UnitError::TooLarge { .. })
        ));
        assert!(matches!(parse_rate("infMbit"), Err(UnitError::NotA { .. })));
        assert!(matches!(parse_rate("NaN bit"), Err(UnitError::NotA { .. })));
    }

    #[test]
    fn durations_in_nanoseconds() {
        assert_eq!(ns("25ms"), 25_000_000);
        assert_eq!(ns("1.5s"), 1_500_000_000);
        assert_eq!(ns("250us"), 250_000);
        assert_eq!(ns("250µs"), 250_000);
        assert_eq!(ns("250μs"), 250_000); // Greek mu
        assert_eq!(ns("100ns"), 100);
        assert_eq!(ns("2min"), 120_000_000_000);
        assert_eq!(ns("1h"), 3_600_000_000_000);
        assert_eq!(ns("0.1s"), 100_000_000);
        assert_eq!(ns(" 30 s "), 30_000_000_000);
        assert_eq!(ns("0s"), 0);
        assert_eq!(ns("2.5e-3s"), 2_500_000);
        // Rounded to the nearest nanosecond, halves up.
        assert_eq!(ns("1.4ns"), 1);
        assert_eq!(ns("1.5ns"), 2);
        assert_eq!(ns("0.0000000001s"), 0);
    }

    #[test]
    fn durations_need_a_known_unit() {
        assert_eq!(
            parse_duration("30"),
            Err(UnitError::NoUnit { text: "30".into() })
        );
        assert!(matches!(
            parse_duration("30m"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_duration("30 sec"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(parse_duration("ms"), Err(UnitError::NotA { .. })));
        assert!(matches!(
            parse_duration("-1ms"),
            Err(UnitError::Negative { .. })
        ));
        assert!(matches!(
            parse_duration("1e300s"),
            Err(UnitError::TooLarge { .. })
        ));
        assert!(matches!(parse_duration(""), Err(UnitError::NotA { .. })));
    }

    #[test]
    fn sizes_in_bytes() {
        assert_eq!(parse_size("10MB"), Ok(10_000_000));
        assert_eq!(parse_size("10MiB"), Ok(10_485_760));
        assert_eq!(parse_size("1500B"), Ok(1500));
        assert_eq!(parse_size("64KB"), Ok(64_000));
        assert_eq!(parse_size("64kB"), Ok(64_000));
        assert_eq!(parse_size("64KiB"), Ok(65_536));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
        assert_eq!(parse_size("2GiB"), Ok(2_147_483_648));
        assert_eq!(parse_size("1TB"), Ok(1_000_000_000_000));
        assert!(matches!(
            parse_size("10Mb"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(
            parse_size("100pkt"),
            Err(UnitError::UnknownUnit { .. })
        ));
        assert!(matches!(parse_size("10"), Err(UnitError::NoUnit { .. })));
    }

    #[test]
    fn buffers_in_packets_bytes_or_time() {
        assert_eq!(parse_buffer("100pkt"), Ok(Buffer::Packets(100)));
        assert_eq!(parse_buffer("100 packets"), Ok(Buffer::Packets(100)));
        assert_eq!(parse_buffer("150KB"), Ok(Buffer::Bytes(150_000)));
        assert_eq!(parse_buffer("64KiB"), Ok(Buffer::Bytes(65_536)));
        assert_eq!(parse_buffer("50ms"), Ok(Buffer::Time(Dur::from_millis(50))));
        assert_eq!(parse_buffer("1e2pkt"), Ok(Buffer::Packets(100)));
        assert_eq!(
            parse_buffer("1.5pkt"),
            Err(UnitError::NotWhole {
                text: "1.5pkt".into()
            })
        );
        assert!(matches!(parse_buffer("100"), Err(UnitError::NoUnit { .. })));
        assert!(matches!(
            parse_buffer("100p"),
            Err(UnitError::UnknownUnit { .. })
        ));
    }

    #[test]
    fn percentages_are_fractions() {
        assert_eq!(parse_fraction("1%"), Ok(0.01));
        assert_eq!(parse_fraction("0.5%"), Ok(0.005));
        assert_eq!(parse_fraction("100%"), Ok(1.0));
        assert_eq!(parse_fraction("0%"), Ok(0.0));
        assert_eq!(parse_fraction("30 %"), Ok(0.3));
        assert_eq!(parse_fraction("1e-1%"), Ok(0.001));
        assert!(matches!(
            parse_fraction("150%"),
            Err(UnitError::AboveOne { .. })
        ));
        assert!(matches!(
            parse_fraction("-1%"),
            Err(UnitError::Negative { .. })
        ));
        assert!(matches!(
            parse_fraction("0.01"),
            Err(UnitError::NoUnit { .. })
        ));
        assert!(matches!(
            parse_fraction("1 percent"),
            Err(UnitError::UnknownUnit { .. })
        ));
    }

    #[test]
    fn fractions_as_numbers() {
        assert_eq!(fraction_from_number(0.01), Ok(0.01));
        assert_eq!(fraction_from_number(1.0), Ok(1.0));
        assert!(matches!(
            fraction_from_number(1.5),
            Err(UnitError::AboveOne { .. })
        ));
        assert!(matches!(
            fraction_from_number(-0.1),
            Err(UnitError::Negative { .. })
        ));
        assert!(matches!(
            fraction_from_number(f64::NAN),
            Err(UnitError::NotA { .. })
        ));
        assert!(matches!(
            fraction_from_number(f64::INFINITY),
            Err(UnitError::NotA { .. })
        ));
    }

    #[test]
    fn decimal_rounding_is_exact() {
        let d = |s: &str| split(s, "x").unwrap().0;
        assert_eq!(
            d("1.25s"),
            Decimal {
                mantissa: 125,
                exp10: -2
            }
        );
        assert_eq!(
            d("1e6bit"),
            Decimal {
                mantissa: 1,
                exp10: 6
            }
        );
        assert_eq!(
            d("2.5E-3s"),
            Decimal {
                mantissa: 25,
                exp10: -4
            }
        );
        assert_eq!(
            d(".5s"),
            Decimal {
                mantissa: 5,
                exp10: -1
            }
        );
        // 0.5 rounds away from zero, 0.49 down.
        assert_eq!(d("0.5x").to_u64(1, ""), Ok(1));
        assert_eq!(d("0.49x").to_u64(1, ""), Ok(0));
        assert_eq!(d("18446744073709551615x").to_u64(1, ""), Ok(u64::MAX));
        assert!(d("18446744073709551616x").to_u64(1, "").is_err());
    }
}
