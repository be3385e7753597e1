//! [`Param`]: the one declaration of a congestion-control parameter that a
//! scenario can set — its name, kind and range, default with its source, and
//! a one-line doc. Everything else is derived from it:
//!
//! * the `<Algo>Config::default()` value of the field ([`Param::default`]),
//! * the range check of `<Algo>Config::validate` ([`Param::check`], whose
//!   [`ParamError`] is the config error's message),
//! * the scenario resolver (`l4slab-scenario`'s `cc.rs`: which keys a kind
//!   accepts, how each is read, the example value in its errors),
//! * the Python `_native.cc_params(kind)`,
//! * the parameter table of `docs/models/<name>.md` and `docs/scenarios.md`
//!   ([`markdown_table`], checked by `tests/docs_params.rs`).
//!
//! Each controller declares its parameters next to its config
//! (`dctcp::PARAMS`, ...); [`params`] finds them by Linux name.
//!
//! Values are in scenario units — fractions, gains as factors, [`Dur`] —
//! never Linux's fixed-point integers.

use core::fmt;

use l4slab_core::Dur;

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
    /// A duration (`"25ms"`); zero allowed only with `zero_ok`.
    Duration { zero_ok: bool },
    /// `true` or `false`.
    Flag,
    /// One of these names.
    Choice(&'static [&'static str]),
}

/// A parameter's value, in scenario units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamValue {
    Int(i64),
    Num(f64),
    Dur(Dur),
    Flag(bool),
    Choice(&'static str),
}

/// One congestion-control parameter (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Param {
    /// The scenario key: the Linux module parameter without the module
    /// prefix (`dctcp_shift_g` → `shift_g`), or the constant's name where
    /// Linux has no parameter.
    pub name: &'static str,
    /// The Linux module parameter or constant (`dctcp_shift_g`,
    /// `bbr_high_gain`), or the spec's name (`BBR.Beta`).
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

impl ParamValue {
    /// As TOML: `4`, `0.7`, `"25ms"`, `true`, `"rate"`.
    pub fn toml(&self) -> String {
        match *self {
            ParamValue::Int(i) => i.to_string(),
            ParamValue::Num(x) => show_num(x),
            ParamValue::Dur(d) => format!("{:?}", show_dur(d)),
            ParamValue::Flag(b) => b.to_string(),
            ParamValue::Choice(c) => format!("{c:?}"),
        }
    }

    /// The integer; panics on another kind (a declaration bug).
    pub fn int(&self) -> i64 {
        match *self {
            ParamValue::Int(i) => i,
            other => panic!("{other:?} is not an integer"),
        }
    }

    /// The number; panics on another kind (a declaration bug).
    pub fn num(&self) -> f64 {
        match *self {
            ParamValue::Num(x) => x,
            other => panic!("{other:?} is not a number"),
        }
    }

    /// The duration; panics on another kind (a declaration bug).
    pub fn dur(&self) -> Dur {
        match *self {
            ParamValue::Dur(d) => d,
            other => panic!("{other:?} is not a duration"),
        }
    }

    /// The flag; panics on another kind (a declaration bug).
    pub fn flag(&self) -> bool {
        match *self {
            ParamValue::Flag(b) => b,
            other => panic!("{other:?} is not a flag"),
        }
    }

    /// The choice; panics on another kind (a declaration bug).
    pub fn choice(&self) -> &'static str {
        match *self {
            ParamValue::Choice(c) => c,
            other => panic!("{other:?} is not a choice"),
        }
    }
}

impl Kind {
    /// Short name of the kind: `integer`, `fraction`, `number`, `gain`,
    /// `duration`, `flag`, `choice`.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Int { .. } => "integer",
            Kind::Fraction { .. } => "fraction",
            Kind::Number { .. } => "number",
            Kind::Gain { .. } => "gain",
            Kind::Duration { .. } => "duration",
            Kind::Flag => "flag",
            Kind::Choice(_) => "choice",
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
            Kind::Duration { zero_ok: true } => "a duration".into(),
            Kind::Duration { zero_ok: false } => "a duration above 0".into(),
            Kind::Flag => "true or false".into(),
            Kind::Choice(names) => format!("one of {}", names.join(", ")),
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
            Kind::Duration { zero_ok: true } => "≥ 0".into(),
            Kind::Duration { zero_ok: false } => "> 0".into(),
            Kind::Flag => String::new(),
            Kind::Choice(names) => names
                .iter()
                .map(|n| format!("`{n:?}`"))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

impl Param {
    /// A valid value for error messages, as TOML: the default.
    pub fn example(&self) -> String {
        self.default.toml()
    }

    /// Whether `value` is of this parameter's kind and in its range.
    pub fn check(&self, value: ParamValue) -> Result<(), ParamError> {
        let ok = match (self.kind, value) {
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
            (Kind::Duration { zero_ok }, ParamValue::Dur(d)) => zero_ok || !d.is_zero(),
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
                value: match value {
                    ParamValue::Dur(d) => show_dur(d),
                    ParamValue::Num(x) => x.to_string(),
                    v => v.toml(),
                },
                requirement: self.kind.requirement(),
            })
        }
    }

    /// For a [`Kind::Fraction`] with a `linux_scale`: why an integer is
    /// ambiguous, `Linux's beta is in 1/1024 units (717 = 0.7)`.
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
            _ => None,
        }
    }

    /// The kind and range for docs: `integer 1..=16`, `fraction [0, 1]`.
    pub fn kind_text(&self) -> String {
        let range = self.kind.range();
        let mut s = if range.is_empty() {
            self.kind.name().to_string()
        } else {
            format!("{} {range}", self.kind.name())
        };
        if let Kind::Fraction {
            linux_scale: Some(scale),
            ..
        } = self.kind
        {
            s.push_str(&format!(" (Linux's 1/{scale} integers are refused)"));
        }
        s
    }
}

/// The header of [`markdown_table`].
const TABLE_HEAD: &str = "| option | kind | default | source | meaning |\n|---|---|---|---|---|\n";

/// The parameter table of `docs/models/<name>.md`: one row per parameter,
/// in declaration order.
pub fn markdown_table(params: &[Param]) -> String {
    let mut s = String::from(TABLE_HEAD);
    for p in params {
        s.push_str(&format!(
            "| `{}` | {} | `{}` | {} | {} |\n",
            p.name,
            p.kind_text(),
            p.example(),
            p.source,
            p.doc
        ));
    }
    s
}

/// The `cc` options table of `docs/scenarios.md`: every controller of
/// [`crate::CC_NAMES`] with its parameters.
pub fn markdown_options_table() -> String {
    let mut s = String::from(
        "| `kind` | option | value | default | meaning (Linux parameter) |\n|---|---|---|---|---|\n",
    );
    for &name in crate::CC_NAMES {
        let ps = params(name).unwrap_or(&[]);
        if ps.is_empty() {
            s.push_str(&format!("| `{name}` | — | | | no options |\n"));
        }
        for (i, p) in ps.iter().enumerate() {
            let kind = if i == 0 {
                format!(" `{name}` ")
            } else {
                " ".to_string()
            };
            s.push_str(&format!(
                "|{kind}| `{}` | {} | `{}` | {} (`{}`) |\n",
                p.name,
                p.kind_text(),
                p.example(),
                p.doc,
                p.linux
            ));
        }
    }
    s
}

/// The parameters of the controller `name` (one of [`crate::CC_NAMES`]), in
/// the order the docs list them; `None` for an unknown name.
pub fn params(name: &str) -> Option<&'static [Param]> {
    Some(match name {
        "reno" => crate::reno::PARAMS,
        "cubic" => crate::cubic::PARAMS,
        "dctcp" => crate::dctcp::PARAMS,
        "prague" => crate::prague::PARAMS,
        "bbr" => crate::bbr::v1::PARAMS,
        "bbr3" => crate::bbr::v3::PARAMS,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_is_valid_and_names_are_unique() {
        for &cc in crate::CC_NAMES {
            let ps = params(cc).expect(cc);
            for (i, p) in ps.iter().enumerate() {
                assert_eq!(p.check(p.default), Ok(()), "{cc}.{}", p.name);
                assert!(!p.doc.is_empty() && !p.source.is_empty(), "{cc}.{}", p.name);
                assert!(
                    ps[..i].iter().all(|q| q.name != p.name),
                    "{cc}.{} twice",
                    p.name
                );
            }
        }
        assert!(params("vegas").is_none());
    }

    #[test]
    fn checks_follow_the_kind() {
        let g = crate::dctcp::SHIFT_G;
        assert_eq!(g.check(ParamValue::Int(16)), Ok(()));
        let e = g.check(ParamValue::Int(17)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "shift_g: 17 is out of range; must be between 1 and 16"
        );
        let beta = crate::cubic::BETA;
        assert!(beta.check(ParamValue::Num(1.0)).is_err());
        assert!(beta.check(ParamValue::Num(0.0)).is_err());
        assert_eq!(beta.check(ParamValue::Num(0.5)), Ok(()));
        assert_eq!(
            beta.linux_units().unwrap(),
            "Linux's beta is in 1/1024 units (717 = 0.7)"
        );
        let gain = crate::bbr::v1::EXTRA_ACKED_GAIN;
        assert_eq!(gain.check(ParamValue::Num(0.0)), Ok(()));
        assert!(gain.check(ParamValue::Num(1.0 / 512.0)).is_err());
        assert!(gain.check(ParamValue::Num(100.5)).is_err());
        let win = crate::bbr::v1::MIN_RTT_WIN;
        assert!(win.check(ParamValue::Dur(Dur::ZERO)).is_err());
    }

    #[test]
    #[should_panic(expected = "not of kind integer")]
    fn a_value_of_another_kind_is_a_bug() {
        let _ = crate::dctcp::SHIFT_G.check(ParamValue::Num(4.0));
    }

    #[test]
    fn config_defaults_are_linux_and_rfc_values() {
        // The values the declarations must produce (as before they existed).
        let b = crate::BbrConfig::default();
        assert_eq!(
            (b.high_gain, b.cwnd_gain, b.extra_acked_gain),
            (739, 512, 256)
        );
        assert_eq!(
            (b.min_rtt_win, b.probe_rtt_mode),
            (Dur::from_secs(10), Dur::from_millis(200))
        );
        let c = crate::CubicConfig::default();
        assert_eq!(
            (c.beta, c.c, c.fast_convergence, c.reno_friendly, c.hystart),
            (0.7, 0.4, true, true, true)
        );
        let d = crate::DctcpConfig::default();
        assert_eq!((d.shift_g, d.alpha_on_init, d.ect1), (4, 1.0, false));
        let p = crate::PragueConfig::default();
        assert_eq!((p.rtt_target, p.max_tso_segs), (Dur::from_millis(25), 0));
        let b3 = crate::Bbr3Config::default();
        assert_eq!((b3.loss_thresh, b3.beta, b3.headroom), (0.02, 0.7, 0.15));
        assert_eq!(b3.probe_rtt_interval, Dur::from_secs(5));
    }

    #[test]
    fn values_render_as_toml() {
        assert_eq!(ParamValue::Num(0.7).toml(), "0.7");
        assert_eq!(ParamValue::Num(2.0).toml(), "2.0");
        assert_eq!(ParamValue::Num(739.0 / 256.0).toml(), "2.887");
        assert_eq!(ParamValue::Dur(Dur::from_millis(25)).toml(), r#""25ms""#);
        assert_eq!(ParamValue::Choice("rate").toml(), r#""rate""#);
    }
}
