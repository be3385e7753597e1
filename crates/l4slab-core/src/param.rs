//! [`Param`]: the one declaration of a model parameter that a scenario can
//! set — a congestion control's option or a queue discipline's `tc` knob:
//! its name, kind and range, default with its source, and a one-line doc.
//! Everything else is derived from it:
//!
//! * the config's `Default` value of the field ([`Param::default`]),
//! * range checks ([`Param::check`], whose [`ParamError`] is the message),
//! * the scenario resolvers (`l4slab-scenario`'s `cc.rs` and `qdisc/`: which
//!   keys a kind accepts, how each is read, the example value in its errors),
//! * the Python `_native.cc_params(kind)` and `_native.qdisc_params(kind)`,
//! * the parameter tables of `docs/models/<name>.md` and `docs/scenarios.md`
//!   ([`markdown_table`], checked by [`check_docs_table`] in the
//!   `docs_params` test of each crate that declares parameters).
//!
//! The declarations live next to their configs (`l4slab_cc::dctcp::PARAMS`,
//! `l4slab_qdisc::pie::PARAMS`, ...); `l4slab_cc::param::params` and
//! `l4slab_qdisc::param::params` find them by name.
//!
//! Values are in scenario units — fractions, gains as factors or in Hz,
//! [`Dur`], packets, bytes — never Linux's fixed-point integers.

use core::fmt;

use crate::{Dur, Rate};

/// What values a parameter takes, and its range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// An integer in `min..=max`.
    Int { min: i64, max: i64 },
    /// A fraction (`0.7` or `"70%"`) in `[min, max]`, each end excluded when
    /// its `*_open` flag is set. `linux_scale`: Linux takes this parameter as
    /// an integer in `1/linux_scale` units, so a scenario's integer (other
    /// than 0) is ambiguous and refused.
    Fraction {
        min: f64,
        max: f64,
        min_open: bool,
        max_open: bool,
        linux_scale: Option<u32>,
    },
    /// A finite number above `above`.
    Number { above: f64 },
    /// A gain as a factor in `[1/scale, max]` (Linux keeps it in `1/scale`
    /// fixed point, so a smaller positive gain would be zero); `zero_ok`: 0
    /// is also allowed (it disables the mechanism).
    Gain { scale: u32, max: f64, zero_ok: bool },
    /// A gain in Hz: a finite number at least 0 (`zero_ok`) or above 0.
    /// `tc_scale`: tc takes it as an integer in `1/tc_scale` Hz, so a
    /// scenario's integer is ambiguous and refused.
    Hz {
        zero_ok: bool,
        tc_scale: Option<u32>,
    },
    /// A duration (`"25ms"`); zero allowed only with `zero_ok`.
    Duration { zero_ok: bool },
    /// A packet limit (tc `limit`): an integer number of packets in
    /// `1..=u32::MAX`, or a buffer string (`"100pkt"`, `"150KB"`, `"50ms"`
    /// at the link rate) converted at 1500 B per packet, at least 1.
    Limit,
    /// Bytes in `min..=max`: an integer or a size string (`"32MiB"`).
    Bytes { min: u64, max: u64 },
    /// Bytes in `min..=max`, written as a size with its unit only
    /// (`"1200B"`, `"10KB"`): an app's sizes, where a bare integer would not
    /// say whether it counts bytes or packets. `max = u64::MAX`: no bound.
    Size { min: u64, max: u64 },
    /// A rate above 0 (`"5Mbit"`).
    Rate,
    /// A whole percentage in `min..=max`: an integer (tc's form) or a
    /// string `"10%"`.
    Percent { min: u32, max: u32 },
    /// `true` or `false`.
    Flag,
    /// One of these names.
    Choice(&'static [&'static str]),
    /// Values no generic kind describes, read by the resolver's own code
    /// (DualPI2's `step_thresh` in time or packets, its flow-name lists);
    /// the text says what they are.
    Custom(&'static str),
}

/// A parameter's value, in scenario units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamValue {
    Int(i64),
    Num(f64),
    Dur(Dur),
    Flag(bool),
    Choice(&'static str),
    Rate(Rate),
    /// No value: the mechanism is off (codel's `ce_threshold`) or the
    /// setting is derived (dualpi2's `max_rtt`). Only a default;
    /// `example` is a valid value, as TOML, for messages and docs.
    Unset {
        example: &'static str,
    },
}

/// One parameter (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Param {
    /// The scenario key: the Linux module parameter without the module
    /// prefix (`dctcp_shift_g` → `shift_g`), the tc keyword (`tupdate`), or
    /// the constant's name where Linux has no parameter.
    pub name: &'static str,
    /// Other keys a scenario may write for it (tc's spelling, `c_protection`).
    pub aliases: &'static [&'static str],
    /// The Linux module parameter, constant or tc keyword (`dctcp_shift_g`,
    /// `bbr_high_gain`, `tupdate`), or the spec's name (`BBR.Beta`).
    pub linux: &'static str,
    pub kind: Kind,
    pub default: ParamValue,
    /// Where the default comes from: `Linux tcp_dctcp dctcp_shift_g = 4`.
    pub source: &'static str,
    /// One line: what it does.
    pub doc: &'static str,
}

/// A value outside its parameter's range (a config error's message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// The parameter's [`Param::name`].
    pub param: &'static str,
    /// The value as written: `0`, `1.5`, `"fast"`.
    pub value: String,
    /// What the value must be: `between 1 and 16`.
    pub requirement: String,
}

impl ParamError {
    /// The message without the parameter name: `0 is out of range; must be
    /// between 1 and 16`.
    pub fn message(&self) -> String {
        format!(
            "{} is out of range; must be {}",
            self.value, self.requirement
        )
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.param, self.message())
    }
}

impl std::error::Error for ParamError {}

/// A number for messages, examples and docs: at most 3 decimals, and a `.0`
/// on whole numbers so it reads as a float (`0.7`, `2.0`, `2.887`).
pub fn show_num(x: f64) -> String {
    let mut s = format!("{x:.3}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.push('0');
    }
    s
}

/// A duration exactly, in the largest whole unit: `25ms`, `10s`, `0s`.
pub fn show_dur(d: Dur) -> String {
    let ns = d.as_nanos();
    match ns {
        0 => "0s".into(),
        _ if ns.is_multiple_of(1_000_000_000) => format!("{}s", ns / 1_000_000_000),
        _ if ns.is_multiple_of(1_000_000) => format!("{}ms", ns / 1_000_000),
        _ if ns.is_multiple_of(1_000) => format!("{}us", ns / 1_000),
        _ => format!("{ns}ns"),
    }
}

/// A byte count as a size string when one is exact: `32MiB`, `2GiB`,
/// `30MB`; `None` otherwise (and for 0).
fn size_unit(n: u64) -> Option<String> {
    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;
    match n {
        0 => None,
        _ if n.is_multiple_of(GIB) => Some(format!("{}GiB", n / GIB)),
        _ if n.is_multiple_of(MIB) => Some(format!("{}MiB", n / MIB)),
        _ if n.is_multiple_of(1_000_000) => Some(format!("{}MB", n / 1_000_000)),
        _ => None,
    }
}

/// A byte count as a scenario size string: `10KB`, `1200B`, `32MiB`.
pub fn show_size(n: u64) -> String {
    match n {
        _ if n >= 1000 && n.is_multiple_of(1_000_000) => format!("{}MB", n / 1_000_000),
        _ if n >= 1000 && n.is_multiple_of(1000) => format!("{}KB", n / 1000),
        _ => size_unit(n).unwrap_or_else(|| format!("{n}B")),
    }
}

/// Bytes for messages and docs: `32MiB`, `30MB`, `1514 B`.
pub fn show_bytes(n: u64) -> String {
    size_unit(n).unwrap_or_else(|| format!("{n} B"))
}

impl ParamValue {
    /// As TOML: `4`, `0.7`, `"25ms"`, `true`, `"rate"`; an unset value's
    /// example.
    pub fn toml(&self) -> String {
        match *self {
            ParamValue::Int(i) => i.to_string(),
            ParamValue::Num(x) => show_num(x),
            ParamValue::Dur(d) => format!("{:?}", show_dur(d)),
            ParamValue::Flag(b) => b.to_string(),
            ParamValue::Choice(c) => format!("{c:?}"),
            ParamValue::Rate(r) => format!("\"{r}\""),
            ParamValue::Unset { example } => example.to_string(),
        }
    }

    /// The panic of an accessor called on a value of another kind (a
    /// declaration bug): `Num(0.5) is not an integer`.
    fn not_a(&self, what: &str) -> ! {
        panic!("{self:?} is not {what}")
    }

    /// The integer; panics on another kind (a declaration bug).
    pub fn int(&self) -> i64 {
        let ParamValue::Int(i) = *self else {
            self.not_a("an integer")
        };
        i
    }

    /// The number; panics on another kind (a declaration bug).
    pub fn num(&self) -> f64 {
        let ParamValue::Num(x) = *self else {
            self.not_a("a number")
        };
        x
    }

    /// The duration; panics on another kind (a declaration bug).
    pub fn dur(&self) -> Dur {
        let ParamValue::Dur(d) = *self else {
            self.not_a("a duration")
        };
        d
    }

    /// The duration, `None` when unset; panics on another kind.
    pub fn opt_dur(&self) -> Option<Dur> {
        match *self {
            ParamValue::Dur(d) => Some(d),
            ParamValue::Unset { .. } => None,
            _ => self.not_a("a duration"),
        }
    }

    /// The flag; panics on another kind (a declaration bug).
    pub fn flag(&self) -> bool {
        let ParamValue::Flag(b) = *self else {
            self.not_a("a flag")
        };
        b
    }

    /// The choice; panics on another kind (a declaration bug).
    pub fn choice(&self) -> &'static str {
        let ParamValue::Choice(c) = *self else {
            self.not_a("a choice")
        };
        c
    }

    /// The rate; panics on another kind (a declaration bug).
    pub fn rate(&self) -> Rate {
        let ParamValue::Rate(r) = *self else {
            self.not_a("a rate")
        };
        r
    }
}

impl Kind {
    /// An integer from `min` up to `u32::MAX` (a knob Linux keeps in a `u32`).
    pub const fn up_to_u32(min: i64) -> Kind {
        Kind::Int {
            min,
            max: u32::MAX as i64,
        }
    }

    /// Bytes from `min` up to `u32::MAX` (a size Linux keeps in a `u32`).
    pub const fn bytes_up_to_u32(min: u64) -> Kind {
        Kind::Bytes {
            min,
            max: u32::MAX as u64,
        }
    }

    /// Short name of the kind: `integer`, `fraction`, `number`, `gain`,
    /// `Hz`, `duration`, `packets`, `bytes`, `percent`, `flag`, `choice`,
    /// `custom`.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Int { .. } => "integer",
            Kind::Fraction { .. } => "fraction",
            Kind::Number { .. } => "number",
            Kind::Gain { .. } => "gain",
            Kind::Hz { .. } => "Hz",
            Kind::Duration { .. } => "duration",
            Kind::Limit => "packets",
            Kind::Bytes { .. } | Kind::Size { .. } => "bytes",
            Kind::Rate => "rate",
            Kind::Percent { .. } => "percent",
            Kind::Flag => "flag",
            Kind::Choice(_) => "choice",
            Kind::Custom(_) => "custom",
        }
    }

    /// What a value must be, after "must be": `between 1 and 16`, `below 1`,
    /// `0 or between 1/256 and 100 (a factor)`.
    pub fn requirement(&self) -> String {
        match *self {
            Kind::Int { min, max } if max == i64::MAX => format!("at least {min}"),
            Kind::Int { min, max } => format!("between {min} and {max}"),
            Kind::Fraction {
                min,
                max,
                min_open,
                max_open,
                ..
            } => match (min_open, max_open) {
                (false, true) if min == 0.0 => format!("below {max}"),
                (false, true) => format!("at least {min} and below {max}"),
                (true, true) => format!("between {min} and {max} (exclusive)"),
                (false, false) => format!("between {min} and {max}"),
                (true, false) => format!("above {min} and at most {max}"),
            },
            Kind::Number { above } => format!("above {above}"),
            Kind::Gain {
                scale,
                max,
                zero_ok,
            } => {
                let zero = if zero_ok { "0 or " } else { "" };
                format!("{zero}between 1/{scale} and {max} (a factor)")
            }
            Kind::Hz { zero_ok: true, .. } => "at least 0".into(),
            Kind::Hz { zero_ok: false, .. } => "above 0".into(),
            Kind::Duration { zero_ok: true } => "a duration".into(),
            Kind::Duration { zero_ok: false } => "a duration above 0".into(),
            Kind::Limit => format!("between 1 and {}", u32::MAX),
            Kind::Bytes { min, max } => {
                format!("between {} and {}", show_bytes(min), show_bytes(max))
            }
            Kind::Size {
                min: 1,
                max: u64::MAX,
            } => "greater than zero".into(),
            Kind::Size { min, max: u64::MAX } => format!("at least {}", show_bytes(min)),
            Kind::Size { min, max } => {
                format!("between {} and {}", show_bytes(min), show_bytes(max))
            }
            Kind::Rate => "greater than zero".into(),
            Kind::Percent { min, max } => format!("between {min} and {max} (percent)"),
            Kind::Flag => "true or false".into(),
            Kind::Choice(names) => format!("one of {}", names.join(", ")),
            Kind::Custom(what) => what.into(),
        }
    }

    /// The range for docs: `1..=16`, `[0, 1)`, `> 0`, `0 or [1/256, 100]`,
    /// `≥ 0`; empty for flags.
    pub fn range(&self) -> String {
        match *self {
            Kind::Int { min, max } if max == i64::MAX => format!("≥ {min}"),
            Kind::Int { min, max } => format!("{min}..={max}"),
            Kind::Fraction {
                min,
                max,
                min_open,
                max_open,
                ..
            } => {
                let lo = if min_open { '(' } else { '[' };
                let hi = if max_open { ')' } else { ']' };
                format!("{lo}{min}, {max}{hi}")
            }
            Kind::Number { above } => format!("> {above}"),
            Kind::Gain {
                scale,
                max,
                zero_ok,
            } => {
                let zero = if zero_ok { "0 or " } else { "" };
                format!("{zero}[1/{scale}, {max}]")
            }
            Kind::Hz { zero_ok: true, .. } | Kind::Duration { zero_ok: true } => "≥ 0".into(),
            Kind::Hz { zero_ok: false, .. } | Kind::Duration { zero_ok: false } => "> 0".into(),
            Kind::Limit => format!(
                "1..={} or a buffer (`\"100pkt\"`, `\"150KB\"`, `\"50ms\"`; 1500 B per packet)",
                u32::MAX
            ),
            Kind::Bytes { min, max } => format!(
                "{}..={} (an integer or a size)",
                show_bytes(min),
                show_bytes(max)
            ),
            Kind::Size { min, max: u64::MAX } => {
                format!("≥ {} (a size: `\"10KB\"`)", show_bytes(min))
            }
            Kind::Size { min, max } => format!(
                "{}..={} (a size: `\"1200B\"`)",
                show_bytes(min),
                show_bytes(max)
            ),
            Kind::Rate => "> 0".into(),
            Kind::Percent { min, max } => format!("{min}..={max} (an integer or `\"10%\"`)"),
            Kind::Flag => String::new(),
            Kind::Choice(names) => names
                .iter()
                .map(|n| format!("`{n:?}`"))
                .collect::<Vec<_>>()
                .join(", "),
            Kind::Custom(what) => what.into(),
        }
    }
}

impl Param {
    /// A parameter in the common form: its scenario key is its Linux name
    /// (`linux` = `name`) and it has no aliases. [`Param::aka`] and
    /// [`Param::linux_name`] change those.
    pub const fn new(
        name: &'static str,
        kind: Kind,
        default: ParamValue,
        source: &'static str,
        doc: &'static str,
    ) -> Param {
        Param {
            name,
            aliases: &[],
            linux: name,
            kind,
            default,
            source,
            doc,
        }
    }

    /// The parameter with other keys a scenario may write for it.
    pub const fn aka(self, aliases: &'static [&'static str]) -> Param {
        Param { aliases, ..self }
    }

    /// The parameter with a Linux name other than its key (`MAX_BURST`).
    pub const fn linux_name(self, linux: &'static str) -> Param {
        Param { linux, ..self }
    }

    /// A valid value for error messages, as TOML: the default (for a byte
    /// count, as a size string where one is exact: `"32MiB"`), or an unset
    /// default's example.
    pub fn example(&self) -> String {
        match (self.kind, self.default) {
            (Kind::Bytes { .. }, ParamValue::Int(n)) => match size_unit(n as u64) {
                Some(s) => format!("{s:?}"),
                None => n.to_string(),
            },
            (Kind::Size { .. }, ParamValue::Int(n)) => format!("{:?}", show_size(n as u64)),
            (_, d) => d.toml(),
        }
    }

    /// The default for docs: `` `4` ``, or ``unset (e.g. `"1ms"`)``.
    pub fn default_text(&self) -> String {
        match self.default {
            ParamValue::Unset { example } => format!("unset (e.g. `{example}`)"),
            _ => format!("`{}`", self.example()),
        }
    }

    /// Whether `value` is of this parameter's kind and in its range. A
    /// [`Kind::Custom`] value is checked by its reader; an unset value is
    /// always valid.
    pub fn check(&self, value: ParamValue) -> Result<(), ParamError> {
        let ok = match (self.kind, value) {
            (_, ParamValue::Unset { .. }) | (Kind::Custom(_), _) => true,
            (Kind::Int { min, max }, ParamValue::Int(i)) => (min..=max).contains(&i),
            (
                Kind::Fraction {
                    min,
                    max,
                    min_open,
                    max_open,
                    ..
                },
                ParamValue::Num(x),
            ) => {
                let above = if min_open { x > min } else { x >= min };
                let below = if max_open { x < max } else { x <= max };
                above && below
            }
            (Kind::Number { above }, ParamValue::Num(x)) => x.is_finite() && x > above,
            (
                Kind::Gain {
                    scale,
                    max,
                    zero_ok,
                },
                ParamValue::Num(x),
            ) => (x == 0.0 && zero_ok) || (1.0 / f64::from(scale)..=max).contains(&x),
            (Kind::Hz { zero_ok, .. }, ParamValue::Num(x)) => {
                x.is_finite() && (x > 0.0 || (zero_ok && x == 0.0))
            }
            (Kind::Duration { zero_ok }, ParamValue::Dur(d)) => zero_ok || !d.is_zero(),
            (Kind::Limit, ParamValue::Int(i)) => (1..=i64::from(u32::MAX)).contains(&i),
            (Kind::Bytes { min, max } | Kind::Size { min, max }, ParamValue::Int(i)) => {
                u64::try_from(i).is_ok_and(|n| (min..=max).contains(&n))
            }
            (Kind::Rate, ParamValue::Rate(r)) => r.as_bps() > 0,
            (Kind::Percent { min, max }, ParamValue::Int(i)) => {
                (i64::from(min)..=i64::from(max)).contains(&i)
            }
            (Kind::Flag, ParamValue::Flag(_)) => true,
            (Kind::Choice(names), ParamValue::Choice(c)) => names.contains(&c),
            (kind, value) => panic!(
                "{}: {value:?} is not of kind {} (a declaration bug)",
                self.name,
                kind.name()
            ),
        };
        if ok {
            Ok(())
        } else {
            Err(ParamError {
                param: self.name,
                value: match (self.kind, value) {
                    (_, ParamValue::Dur(d)) => show_dur(d),
                    (_, ParamValue::Num(x)) => x.to_string(),
                    (Kind::Bytes { .. } | Kind::Size { .. }, ParamValue::Int(i)) => {
                        format!("{i} B")
                    }
                    (_, v) => v.toml(),
                },
                requirement: self.kind.requirement(),
            })
        }
    }

    /// For a [`Kind::Fraction`] with a `linux_scale` or a [`Kind::Hz`] with
    /// a `tc_scale`: why an integer is ambiguous, `Linux's beta is in 1/1024
    /// units (717 = 0.7)`, `tc's alpha is in 1/16 Hz (tc 2 = 0.125 Hz)`.
    pub fn linux_units(&self) -> Option<String> {
        match (self.kind, self.default) {
            (
                Kind::Fraction {
                    linux_scale: Some(scale),
                    ..
                },
                ParamValue::Num(d),
            ) => Some(format!(
                "Linux's {} is in 1/{scale} units ({} = {})",
                self.linux,
                (d * f64::from(scale)).round(),
                show_num(d)
            )),
            (
                Kind::Hz {
                    tc_scale: Some(scale),
                    ..
                },
                ParamValue::Num(d),
            ) => Some(format!(
                "tc's {} is in 1/{scale} Hz (tc {} = {} Hz)",
                self.linux,
                (d * f64::from(scale)).round(),
                show_num(d)
            )),
            _ => None,
        }
    }

    /// The kind and range for docs: `integer 1..=16`, `fraction [0, 1]`.
    pub fn kind_text(&self) -> String {
        let range = self.kind.range();
        let mut s = match self.kind {
            Kind::Custom(_) => range,
            _ if range.is_empty() => self.kind.name().to_string(),
            _ => format!("{} {range}", self.kind.name()),
        };
        match self.kind {
            Kind::Fraction {
                linux_scale: Some(scale),
                ..
            } => s.push_str(&format!(" (Linux's 1/{scale} integers are refused)")),
            Kind::Hz {
                tc_scale: Some(scale),
                ..
            } => s.push_str(&format!(" (tc's 1/{scale} Hz integers are refused)")),
            _ => {}
        }
        s
    }

    /// The name for docs: `` `max_burst` `` or `` `max_burst` (alias `burst`) ``.
    pub fn name_text(&self) -> String {
        if self.aliases.is_empty() {
            format!("`{}`", self.name)
        } else {
            let aliases: Vec<String> = self.aliases.iter().map(|a| format!("`{a}`")).collect();
            format!("`{}` (alias {})", self.name, aliases.join(", "))
        }
    }

    /// Whether `key` names this parameter (its name or an alias).
    pub fn is_named(&self, key: &str) -> bool {
        self.name == key || self.aliases.contains(&key)
    }
}

/// A config field's type from a [`ParamValue`] of its declared kind.
///
/// # Panics
/// On a value of another kind or out of the type's range: the caller (the
/// scenario resolver) reads values by their declaration, so that is a bug.
pub trait FromParam: Sized {
    fn from_param(v: ParamValue) -> Self;
}

impl FromParam for u32 {
    fn from_param(v: ParamValue) -> Self {
        u32::try_from(v.int()).expect("declared range fits u32")
    }
}

impl FromParam for u64 {
    fn from_param(v: ParamValue) -> Self {
        u64::try_from(v.int()).expect("declared range fits u64")
    }
}

impl FromParam for f64 {
    fn from_param(v: ParamValue) -> Self {
        v.num()
    }
}

impl FromParam for bool {
    fn from_param(v: ParamValue) -> Self {
        v.flag()
    }
}

impl FromParam for Dur {
    fn from_param(v: ParamValue) -> Self {
        v.dur()
    }
}

impl FromParam for Rate {
    fn from_param(v: ParamValue) -> Self {
        v.rate()
    }
}

/// A value that may be unset (CoDel's `ce_threshold`): `None` when unset.
impl<T: FromParam> FromParam for Option<T> {
    fn from_param(v: ParamValue) -> Self {
        match v {
            ParamValue::Unset { .. } => None,
            v => Some(T::from_param(v)),
        }
    }
}

/// The IP-ECN codepoints a sender may choose, by their scenario names (as
/// [`Ecn`](crate::Ecn) serializes): the [`Kind::Choice`] of an ECN key.
pub const ECN_CODEPOINTS: &[&str] = &["not_ect", "ect0", "ect1"];

impl FromParam for crate::Ecn {
    fn from_param(v: ParamValue) -> Self {
        match v.choice() {
            "not_ect" => crate::Ecn::NotEct,
            "ect0" => crate::Ecn::Ect0,
            "ect1" => crate::Ecn::Ect1,
            other => panic!("{other} is not a codepoint a sender chooses"),
        }
    }
}

/// A config whose declared parameters can be set by name: what the scenario
/// resolvers write a value read by its [`Param`] with. Implement it with
/// [`param_fields!`](crate::param_fields).
pub trait Configure {
    /// Set the field of the parameter `name` to `v` (of the kind its
    /// [`Param`] declares); false if the config has no such parameter.
    ///
    /// # Panics
    /// If `v` is not of the declared kind (see [`FromParam`]).
    fn set(&mut self, name: &str, v: ParamValue) -> bool;
}

/// `param_fields!(PingConfig { interval = INTERVAL, size = SIZE })`: the
/// [`Configure`] of a config whose fields each hold one declared parameter
/// ([`FromParam`] converts the value to the field's type).
#[macro_export]
macro_rules! param_fields {
    ($cfg:ty { $($field:ident = $param:expr),* $(,)? }) => {
        impl $crate::param::Configure for $cfg {
            fn set(&mut self, name: &str, v: $crate::param::ParamValue) -> bool {
                let _ = (name, v);
                $(
                    if name == $param.name {
                        self.$field = $crate::param::FromParam::from_param(v);
                        return true;
                    }
                )*
                false
            }
        }
    };
}

/// `param_config!(CodelConfig { limit = LIMIT, target = TARGET } + { mtu: 1514 })`:
/// the [`param_fields!`](crate::param_fields) [`Configure`] of a config, and
/// its `Default`: each declared field at its parameter's default (converted
/// by [`FromParam`]), the fields after `+` (if any) as written there. The
/// mapping of fields to parameters is written once for both.
#[macro_export]
macro_rules! param_config {
    ($cfg:ty { $($field:ident = $param:expr),* $(,)? }) => {
        $crate::param_config!($cfg { $($field = $param),* } + {});
    };
    ($cfg:ty { $($field:ident = $param:expr),* $(,)? } + { $($other:ident : $value:expr),* $(,)? }) => {
        impl Default for $cfg {
            fn default() -> Self {
                Self {
                    $($field: $crate::param::FromParam::from_param($param.default),)*
                    $($other: $value,)*
                }
            }
        }
        $crate::param_fields!($cfg { $($field = $param),* });
    };
}

/// The header of [`markdown_table`].
const TABLE_HEAD: &str = "| option | kind | default | source | meaning |\n|---|---|---|---|---|\n";

/// Why `text` (a docs page) does not hold `table` as a whole markdown table
/// — followed by a blank line or the end, so no extra rows — once: its
/// header and first row appear once (no second, stale copy; a page may hold
/// several tables under the same header); `None` when it does.
pub fn docs_table_problem(text: &str, table: &str) -> Option<String> {
    let table = table.trim_end();
    let trimmed = text.trim_end();
    let whole =
        text.contains(&format!("\n{table}\n\n")) || trimmed.ends_with(&format!("\n{table}"));
    if !whole {
        return Some(format!(
            "lacks the table its declarations render; it should read:\n\n{table}"
        ));
    }
    let head: Vec<&str> = table.lines().take(3).collect();
    let head = format!("\n{}\n", head.join("\n"));
    let copies = format!("\n{text}\n").matches(&head).count();
    (copies != 1).then(|| {
        format!(
            "the table's first rows {:?} appear {copies} times",
            head.trim()
        )
    })
}

/// How to regenerate a stale docs table: the end of [`check_docs_table`]'s
/// errors.
pub const REGENERATE_DOCS_TABLES: &str = "Paste the table above over the stale one; \
`L4SLAB_PRINT_PARAM_TABLES=DIR cargo test --workspace --test docs_params` writes every \
rendered table to DIR (`<page>.<table>.md`).";

/// A docs page that cannot be read or lacks its rendered table: the message
/// names the page (and the table). `Debug` shows the message as is, so a
/// test's `.unwrap()` prints it readably.
#[derive(Clone, PartialEq, Eq)]
pub struct DocsError(pub String);

impl fmt::Display for DocsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for DocsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DocsError {}

/// The repository's docs page `page` (a path under `docs/`:
/// `models/loss.md`), for the docs tests. The one file this crate reads.
pub fn docs_page(page: &str) -> Result<String, DocsError> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs")
        .join(page);
    std::fs::read_to_string(&path)
        .map_err(|e| DocsError(format!("docs/{page}: {e} ({})", path.display())))
}

/// Check that the docs page `page` (under `docs/`) holds `table` (rendered
/// from declarations: [`markdown_table`] or a crate's own) whole and once
/// ([`docs_table_problem`]); `what` names the table (`gemodel keys`). The
/// error names the page and the table, shows the table as it should read
/// and how to regenerate it ([`REGENERATE_DOCS_TABLES`]). With
/// `L4SLAB_PRINT_PARAM_TABLES=DIR` set, the table is first written to
/// `DIR/<page>.<what>.md` (`models.loss.gemodel-keys.md`).
///
/// The `docs_params` test of each crate that declares parameters calls it.
pub fn check_docs_table(page: &str, what: &str, table: &str) -> Result<(), DocsError> {
    if let Some(dir) = std::env::var_os("L4SLAB_PRINT_PARAM_TABLES") {
        let slug = |s: &str| -> String {
            s.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect()
        };
        let stem = page.trim_end_matches(".md").replace('/', ".");
        let path = std::path::Path::new(&dir).join(format!("{stem}.{}.md", slug(what)));
        std::fs::write(&path, table).map_err(|e| DocsError(format!("{}: {e}", path.display())))?;
    }
    match docs_table_problem(&docs_page(page)?, table) {
        None => Ok(()),
        Some(problem) => Err(DocsError(format!(
            "docs/{page} ({what}) {problem}\n\n{REGENERATE_DOCS_TABLES}"
        ))),
    }
}

/// The parameter table of `docs/models/<name>.md`: one row per parameter,
/// in declaration order.
pub fn markdown_table(params: &[Param]) -> String {
    let mut s = String::from(TABLE_HEAD);
    for p in params {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            p.name_text(),
            p.kind_text(),
            p.default_text(),
            p.source,
            p.doc
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_docs_page_must_hold_the_table_whole_and_once() {
        let table = "| key | default |\n|---|---|\n| `a` | `1` |";
        assert_eq!(
            docs_table_problem(&format!("# P\n\n{table}\n\nmore"), table),
            None
        );
        assert_eq!(docs_table_problem(&format!("# P\n{table}"), table), None);
        // A stale cell, an extra row, a second copy.
        let stale = table.replace("`1`", "`2`");
        assert!(docs_table_problem(&format!("# P\n{stale}\n"), table).is_some());
        let extra = format!("# P\n{table}\n| `b` | `2` |\n");
        assert!(docs_table_problem(&extra, table).is_some());
        let twice = format!("# P\n{table}\n\n{table}\n| `b` | `2` |\n");
        assert!(docs_table_problem(&twice, table)
            .unwrap()
            .contains("2 times"));
        // Another table under the same header is not a copy.
        let other = table.replace("`a`", "`b`");
        assert_eq!(
            docs_table_problem(&format!("# P\n{table}\n\n{other}\n"), table),
            None
        );
    }

    #[test]
    fn a_docs_check_names_the_page_the_table_and_the_way_to_regenerate() {
        let e = check_docs_table("models/loss.md", "no such keys", "| a |\n|---|\n| `x` |")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("docs/models/loss.md (no such keys) lacks the table"),
            "{e}"
        );
        assert!(e.ends_with(REGENERATE_DOCS_TABLES), "{e}");
        let e = docs_page("no/such/page.md").unwrap_err();
        assert!(e.0.starts_with("docs/no/such/page.md: "), "{e}");
    }

    const LIMIT: Param = Param {
        name: "limit",
        aliases: &[],
        linux: "limit",
        kind: Kind::Limit,
        default: ParamValue::Int(1000),
        source: "test",
        doc: "test",
    };

    #[test]
    fn the_constructor_fills_the_common_form() {
        let p = Param::new("limit", Kind::Limit, ParamValue::Int(1000), "test", "test");
        assert_eq!(p, LIMIT);
        let q = Param::new(
            "max_burst",
            Kind::up_to_u32(1),
            ParamValue::Int(1),
            "s",
            "d",
        )
        .aka(&["burst"])
        .linux_name("MAX_BURST");
        assert_eq!(
            (q.name, q.aliases, q.linux),
            ("max_burst", &["burst"][..], "MAX_BURST")
        );
        assert_eq!(q.kind.requirement(), "between 1 and 4294967295");
        assert_eq!(
            Kind::bytes_up_to_u32(1).range(),
            "1 B..=4294967295 B (an integer or a size)"
        );
    }

    #[derive(Debug, PartialEq)]
    struct Cfg {
        limit: u32,
        burst: Option<Dur>,
        mtu: u32,
    }

    const BURST: Param = Param::new(
        "burst",
        Kind::Duration { zero_ok: true },
        ParamValue::Unset { example: "\"1ms\"" },
        "test",
        "test",
    );

    crate::param_config!(Cfg { limit = LIMIT, burst = BURST } + { mtu: 1514 });

    #[test]
    fn a_param_config_defaults_to_its_declarations_and_sets_by_name() {
        let mut c = Cfg::default();
        assert_eq!(
            c,
            Cfg {
                limit: 1000,
                burst: None,
                mtu: 1514
            }
        );
        assert!(c.set("burst", ParamValue::Dur(Dur::from_millis(2))));
        assert!(!c.set("mtu", ParamValue::Int(9000)));
        assert_eq!(c.burst, Some(Dur::from_millis(2)));
    }

    #[test]
    fn values_render_as_toml() {
        assert_eq!(ParamValue::Num(0.7).toml(), "0.7");
        assert_eq!(ParamValue::Num(2.0).toml(), "2.0");
        assert_eq!(ParamValue::Num(739.0 / 256.0).toml(), "2.887");
        assert_eq!(ParamValue::Dur(Dur::from_millis(25)).toml(), r#""25ms""#);
        assert_eq!(ParamValue::Choice("rate").toml(), r#""rate""#);
        assert_eq!(ParamValue::Unset { example: "\"1ms\"" }.toml(), r#""1ms""#);
    }

    #[test]
    fn byte_counts_show_as_sizes_where_exact() {
        assert_eq!(show_bytes(32 << 20), "32MiB");
        assert_eq!(show_bytes(1 << 31), "2GiB");
        assert_eq!(show_bytes(30_000_000), "30MB");
        assert_eq!(show_bytes(1514), "1514 B");
        let q = Param {
            name: "memory_limit",
            kind: Kind::Bytes {
                min: 1,
                max: 1 << 31,
            },
            default: ParamValue::Int(32 << 20),
            ..LIMIT
        };
        assert_eq!(q.example(), r#""32MiB""#);
        assert_eq!(
            q.check(ParamValue::Int(1 << 32)).unwrap_err().to_string(),
            "memory_limit: 4294967296 B is out of range; must be between 1 B and 2GiB"
        );
        assert!(q.check(ParamValue::Int(-1)).is_err());
        let quantum = Param {
            default: ParamValue::Int(1514),
            ..q
        };
        assert_eq!(quantum.example(), "1514");
    }

    #[test]
    fn limits_percents_and_hz_have_their_ranges() {
        assert_eq!(LIMIT.check(ParamValue::Int(1)), Ok(()));
        assert_eq!(
            LIMIT.check(ParamValue::Int(0)).unwrap_err().message(),
            "0 is out of range; must be between 1 and 4294967295"
        );
        assert!(LIMIT.check(ParamValue::Int(1 << 32)).is_err());
        let pct = Param {
            kind: Kind::Percent { min: 0, max: 100 },
            default: ParamValue::Int(10),
            ..LIMIT
        };
        assert!(
            pct.check(ParamValue::Int(100)).is_ok() && pct.check(ParamValue::Int(101)).is_err()
        );
        let hz = Param {
            linux: "alpha",
            kind: Kind::Hz {
                zero_ok: true,
                tc_scale: Some(16),
            },
            default: ParamValue::Num(0.125),
            ..LIMIT
        };
        assert_eq!(hz.check(ParamValue::Num(0.0)), Ok(()));
        assert_eq!(
            hz.check(ParamValue::Num(-0.1)).unwrap_err().message(),
            "-0.1 is out of range; must be at least 0"
        );
        assert_eq!(
            hz.linux_units().unwrap(),
            "tc's alpha is in 1/16 Hz (tc 2 = 0.125 Hz)"
        );
        let strict = Param {
            kind: Kind::Hz {
                zero_ok: false,
                tc_scale: None,
            },
            ..hz
        };
        assert!(strict.check(ParamValue::Num(0.0)).is_err());
        assert_eq!(strict.linux_units(), None);
    }

    #[test]
    fn unset_defaults_and_aliases_render_in_the_table() {
        let p = Param {
            name: "max_burst",
            aliases: &["burst"],
            kind: Kind::Duration { zero_ok: true },
            default: ParamValue::Unset { example: "\"1ms\"" },
            ..LIMIT
        };
        assert!(p.is_named("burst") && p.is_named("max_burst") && !p.is_named("b"));
        assert_eq!(p.check(p.default), Ok(()));
        assert_eq!(p.example(), r#""1ms""#);
        let t = markdown_table(&[p]);
        assert!(
            t.ends_with(
                "| `max_burst` (alias `burst`) | duration ≥ 0 | unset (e.g. `\"1ms\"`) | test | test |\n"
            ),
            "{t}"
        );
    }
}
