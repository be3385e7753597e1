//! What a path does to the IP-ECN field before the bottleneck queue: pass
//! it, bleach it, re-mark ECT(1) as ECT(0), drop ECN-capable packets, or
//! CE-mark every ECN-capable packet — the middlebox behaviours ECN
//! validation must survive (REFERENCES §2.6 test matrix; RFC 9000 §13.4.2,
//! RFC 9768 §3.1.5 and §3.2.2.3, RFC 3168 §6.1.1.1, RFC 9331 §4.3).
//!
//! Sans-IO: a pure map from the codepoint that arrives to the one that
//! leaves, or a drop ([`l4slab_core::DropReason::EcnBlackhole`]), applied by
//! [`crate::Link::enqueue`] **before the qdisc** sees the packet. It stands
//! for a device upstream of the bottleneck, so the queue discipline
//! classifies (and marks or drops) the rewritten codepoint: a re-marked
//! ECT(1) packet goes to DualPI2's classic queue, a bleached one is dropped
//! instead of marked, and a black-holed one uses no capacity.

use serde::{Deserialize, Serialize};

use l4slab_core::Ecn;

/// A path's treatment of the ECN field. Serialized (and written in
/// scenarios) as [`EcnRewrite::name`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum EcnRewrite {
    /// ECN passes unchanged.
    #[default]
    #[serde(rename = "none")]
    None,
    /// Every packet leaves Not-ECT (a router clearing the old ToS byte):
    /// bleaching.
    #[serde(rename = "bleach")]
    Bleach,
    /// ECT(1) leaves as ECT(0), hiding L4S from every queue after it.
    #[serde(rename = "remark")]
    RemarkEct1ToEct0,
    /// ECN-capable packets (ECT(0), ECT(1), CE) are dropped: an ECN black hole.
    #[serde(rename = "drop_ect")]
    DropEct,
    /// Every ECN-capable packet leaves CE: a classic-ECN bottleneck that
    /// marks everything (the test of RFC 9331 §4.3's classic-bottleneck
    /// detection, REFERENCES §2.6 case 4).
    #[serde(rename = "ce_all")]
    MarkAllCe,
}

/// The outcome of [`EcnRewrite::apply`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rewritten {
    /// The packet goes on with this codepoint.
    Keep(Ecn),
    /// The path drops the packet.
    Drop,
}

impl EcnRewrite {
    /// Every rewrite, in the order the documentation lists them.
    pub const ALL: [EcnRewrite; 5] = [
        EcnRewrite::None,
        EcnRewrite::Bleach,
        EcnRewrite::RemarkEct1ToEct0,
        EcnRewrite::DropEct,
        EcnRewrite::MarkAllCe,
    ];

    /// Stable name (scenario files, results): `none`, `bleach`, `remark`,
    /// `drop_ect`, `ce_all`.
    pub const fn name(self) -> &'static str {
        match self {
            EcnRewrite::None => "none",
            EcnRewrite::Bleach => "bleach",
            EcnRewrite::RemarkEct1ToEct0 => "remark",
            EcnRewrite::DropEct => "drop_ect",
            EcnRewrite::MarkAllCe => "ce_all",
        }
    }

    /// The [`EcnRewrite::name`]s of [`EcnRewrite::ALL`], in its order: the
    /// choices of a scenario's `ecn_rewrite` (`crate::config::ECN_REWRITE`).
    pub const NAMES: [&'static str; 5] = {
        let mut names = [""; 5];
        let mut i = 0;
        while i < names.len() {
            names[i] = Self::ALL[i].name();
            i += 1;
        }
        names
    };

    /// The rewrite called `name`, if any.
    pub fn from_name(name: &str) -> Option<EcnRewrite> {
        Self::ALL.into_iter().find(|r| r.name() == name)
    }

    /// What happens to a packet arriving with `ecn`.
    pub const fn apply(self, ecn: Ecn) -> Rewritten {
        match (self, ecn) {
            (EcnRewrite::Bleach, _) => Rewritten::Keep(Ecn::NotEct),
            (EcnRewrite::RemarkEct1ToEct0, Ecn::Ect1) => Rewritten::Keep(Ecn::Ect0),
            (EcnRewrite::DropEct, Ecn::Ect0 | Ecn::Ect1 | Ecn::Ce) => Rewritten::Drop,
            (EcnRewrite::MarkAllCe, Ecn::Ect0 | Ecn::Ect1) => Rewritten::Keep(Ecn::Ce),
            _ => Rewritten::Keep(ecn),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_behaviour_maps_all_four_codepoints() {
        use Ecn::*;
        use Rewritten::{Drop, Keep};
        let all = [NotEct, Ect1, Ect0, Ce];
        let map = |r: EcnRewrite| all.map(|e| r.apply(e));
        assert_eq!(map(EcnRewrite::None), all.map(Keep));
        assert_eq!(map(EcnRewrite::Bleach), [Keep(NotEct); 4]);
        assert_eq!(
            map(EcnRewrite::RemarkEct1ToEct0),
            [Keep(NotEct), Keep(Ect0), Keep(Ect0), Keep(Ce)]
        );
        assert_eq!(map(EcnRewrite::DropEct), [Keep(NotEct), Drop, Drop, Drop]);
        assert_eq!(
            map(EcnRewrite::MarkAllCe),
            [Keep(NotEct), Keep(Ce), Keep(Ce), Keep(Ce)]
        );
        for r in EcnRewrite::ALL {
            assert_eq!(EcnRewrite::from_name(r.name()), Some(r));
        }
        assert_eq!(EcnRewrite::default(), EcnRewrite::None);
    }
}
