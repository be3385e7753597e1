//! The queue disciplines' parameter declarations: the declaration type
//! lives in [`l4slab_core::param`] (shared with the congestion controls);
//! the registry ([`crate::registry`]) finds each discipline's
//! [`Param`](l4slab_core::param::Param)s ([`params`]), and this module
//! renders the qdisc table of `docs/scenarios.md` ([`markdown_options_table`]).
//!
//! Each discipline declares its `tc` parameters next to its config
//! (`codel::PARAMS`, `dualpi2::config::PARAMS`, ...) with their Linux
//! names, ranges, defaults and sources; the config's `Default` derives from
//! them, as do the generic setter ([`crate::registry::QdiscKind::set`]),
//! the scenario resolver (`l4slab-scenario`'s `qdisc/`), the
//! Python `_native.qdisc_params(kind)` and the docs tables (checked by
//! `tests/docs_params.rs`).

pub use crate::registry::{params, QDISC_NAMES};

/// The qdisc table of `docs/scenarios.md`: every discipline of
/// [`QDISC_NAMES`] with its keys.
pub fn markdown_options_table() -> String {
    let mut s = String::from(
        "| `kind` | key | value | default | meaning (Linux name where it differs) |\n|---|---|---|---|---|\n",
    );
    for &name in QDISC_NAMES {
        for (i, p) in params(name).unwrap_or(&[]).iter().enumerate() {
            let kind = if i == 0 {
                format!(" `{name}` ")
            } else {
                " ".to_string()
            };
            let linux = if p.linux == p.name {
                String::new()
            } else {
                format!(" (`{}`)", p.linux)
            };
            s.push_str(&format!(
                "|{kind}| {} | {} | {} | {}{linux} |\n",
                p.name_text(),
                p.kind_text(),
                p.default_text(),
                p.doc,
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4slab_core::param::{Kind, ParamValue};
    use l4slab_core::Dur;

    #[test]
    fn every_default_is_valid_and_names_are_unique() {
        for &q in QDISC_NAMES {
            let ps = params(q).expect(q);
            assert!(!ps.is_empty(), "{q}");
            for (i, p) in ps.iter().enumerate() {
                assert_eq!(p.check(p.default), Ok(()), "{q}.{}", p.name);
                assert!(!p.doc.is_empty() && !p.source.is_empty(), "{q}.{}", p.name);
                for name in std::iter::once(p.name).chain(p.aliases.iter().copied()) {
                    assert!(
                        ps[..i].iter().all(|o| !o.is_named(name)),
                        "{q}.{name} twice"
                    );
                    assert_ne!(name, "kind", "{q}: `kind` chooses the qdisc");
                }
            }
        }
        assert!(params("sfq").is_none());
    }

    #[test]
    fn config_defaults_are_the_linux_values() {
        // The values the declarations must produce (as before they existed).
        let c = crate::CodelConfig::default();
        assert_eq!(
            (c.limit, c.target, c.ecn),
            (1000, Dur::from_millis(5), false)
        );
        assert_eq!((c.interval, c.ce_threshold), (Dur::from_millis(100), None));
        let f = crate::FqCodelConfig::default();
        assert_eq!(
            (f.limit, f.flows, f.quantum, f.ecn),
            (10240, 1024, 1514, true)
        );
        assert_eq!(
            (f.memory_limit, f.drop_batch, f.hash_seed),
            (32 << 20, 64, 0)
        );
        assert_eq!((f.ce_threshold, f.ce_threshold_selector), (None, None));
        let p = crate::PieConfig::default();
        assert_eq!(
            (p.limit, p.alpha, p.beta, p.ecn),
            (1000, 0.125, 1.25, false)
        );
        assert_eq!(
            (p.target, p.tupdate),
            (Dur::from_millis(15), Dur::from_millis(15))
        );
        assert_eq!(p.max_burst, Dur::from_millis(150));
        let q = crate::FqPieConfig::default();
        assert_eq!(
            (q.limit, q.flows, q.quantum, q.ecn_prob),
            (10240, 1024, 1514, 10)
        );
        assert_eq!((q.memory_limit, q.alpha, q.beta), (32 << 20, 0.125, 1.25));
        assert!(!crate::FifoConfig::default().head_drop);
    }

    #[test]
    fn kinds_carry_linux_ranges() {
        let quantum = crate::fq_codel::QUANTUM;
        assert_eq!(quantum.check(ParamValue::Int(256)), Ok(()));
        assert_eq!(
            quantum.check(ParamValue::Int(100)).unwrap_err().message(),
            "100 B is out of range; must be between 256 B and 1MiB"
        );
        assert_eq!(crate::fq_pie::QUANTUM.check(ParamValue::Int(1)), Ok(()));
        assert_eq!(crate::fq_pie::MEMORY_LIMIT.example(), r#""32MiB""#);
        assert_eq!(crate::dualpi2::config::MEMLIMIT.example(), r#""30MB""#);
        assert!(matches!(
            crate::pie::ALPHA.kind,
            Kind::Hz {
                tc_scale: Some(16),
                ..
            }
        ));
        assert!(crate::dualpi2::config::ALPHA
            .check(ParamValue::Num(0.0))
            .is_err());
        assert_eq!(crate::pie::MAX_BURST.aliases, ["burst"]);
    }
}
