//! The congestion controls' parameter declarations: the declaration type
//! lives in [`l4slab_core::param`] (shared with the queue disciplines) and
//! is re-exported here; this module finds each controller's [`Param`]s
//! ([`params`]) and renders the `cc` options table of `docs/scenarios.md`
//! ([`markdown_options_table`]).
//!
//! Each controller declares its parameters next to its config
//! (`dctcp::PARAMS`, ...) and registers them in [`crate::registry::KINDS`];
//! the config's `Default` and `validate` derive from them, as do the
//! scenario resolver (`l4slab-scenario`'s `cc.rs`), the
//! Python `_native.cc_params(kind)` and the docs tables (checked by
//! `tests/docs_params.rs`).

pub use l4slab_core::param::*;

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
    crate::registry::kind(name).map(|k| k.params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::Dur;

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
}
