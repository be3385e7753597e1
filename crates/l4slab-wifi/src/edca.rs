//! EDCA: access categories, their parameter sets and the backoff of one
//! EDCA function (IEEE 802.11-2020 §10.23.2, "HCF contention based channel
//! access (EDCA)").
//!
//! * [`Ac`]: the four access categories, numbered as Linux mac80211 does
//!   (`IEEE80211_AC_VO = 0` ... `IEEE80211_AC_BK = 3`), so a lower index is
//!   a higher priority (the internal-collision winner, §10.23.2.4).
//! * [`EdcaParams`] / [`EdcaSet`]: AIFSN, CWmin, CWmax and TXOP limit per AC,
//!   with the defaults an access point advertises to its stations and uses
//!   itself (hostapd's `wmm_ac_*` and `tx_queue_data*`, REFERENCES.md §4.2).
//! * [`Backoff`]: one EDCA function's contention window, backoff counter and
//!   retry count (§10.23.2.2 and §10.23.2.3: "CW[AC] ← min(2·(CW[AC]+1)−1,
//!   CWmax[AC])" after a failure, CWmin after a success, a new backoff drawn
//!   uniformly from [0, CW] after either).
//!
//! Not modelled: post-backoff while the AC has no data (the counter drawn
//! after a TXOP only counts down while the AC contends; 802.11 lets it count
//! while the queue is empty), EIFS after a corrupted frame (the medium is
//! busy for the collision and the ACK timeout, then every AC counts its AIFS).

use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::Dur;
use serde::{Deserialize, Serialize};

/// `aifsn` of an AC (`edca.<ac> = { aifsn = 3 }`); the default is best
/// effort's, the others are in [`EdcaSet::AP`] and [`EdcaSet::STATION`].
pub const AIFSN: Param = Param {
    name: "aifsn",
    aliases: &[],
    linux: "wmm_ac_be_aifs",
    // §9.4.2.28: a 4-bit field; an AP's minimum is 1 (a station's 2, not enforced).
    kind: Kind::Int { min: 1, max: 15 },
    default: ParamValue::Int(3),
    source: "hostapd `wmm_ac_be_aifs = 3` (best effort; per AC in the defaults table)",
    doc: "AIFS[AC] = SIFS + aifsn × slot (§10.3.2.3.6)",
};

/// `cw_min` of an AC.
pub const CW_MIN: Param = Param {
    name: "cw_min",
    aliases: &[],
    linux: "wmm_ac_be_cwmin",
    kind: Kind::Int {
        min: 0,
        max: 32_767,
    },
    default: ParamValue::Int(15),
    source: "hostapd `wmm_ac_be_cwmin = 4` (2^4 − 1 = 15; best effort)",
    doc: "the contention window after a success; 2^k − 1 (§9.4.2.28 ECWmin), at most `cw_max`",
};

/// `cw_max` of an AC.
pub const CW_MAX: Param = Param {
    name: "cw_max",
    aliases: &[],
    linux: "wmm_ac_be_cwmax",
    kind: Kind::Int {
        min: 0,
        max: 32_767,
    },
    default: ParamValue::Int(1023),
    source: "hostapd `wmm_ac_be_cwmax = 10` (2^10 − 1 = 1023; best effort)",
    doc: "the contention window's ceiling as failures double it; 2^k − 1 (§9.4.2.28 ECWmax)",
};

/// `txop` of an AC.
pub const TXOP: Param = Param {
    name: "txop",
    aliases: &[],
    linux: "wmm_ac_be_txop_limit",
    kind: Kind::Duration { zero_ok: true },
    default: ParamValue::Dur(Dur::ZERO),
    source: "hostapd `wmm_ac_be_txop_limit = 0` (best effort)",
    doc: "TXOP limit, at most 8.16 ms (255 × 32 µs); 0: one PPDU (an A-MPDU counts as one) per access (§10.23.2.9)",
};

/// The keys of `edca.<ac> = { ... }`, in the docs' order.
pub const PARAMS: &[Param] = &[AIFSN, CW_MIN, CW_MAX, TXOP];

/// An access category (802.11-2020 Table 10-1, UP -> AC mapping).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ac {
    /// Voice (UP 6, 7).
    Vo,
    /// Video (UP 4, 5).
    Vi,
    /// Best effort (UP 0, 3): what unmarked traffic gets.
    Be,
    /// Background (UP 1, 2).
    Bk,
}

impl Ac {
    /// Highest priority first (mac80211's `IEEE80211_AC_*` order).
    pub const ALL: [Ac; 4] = [Ac::Vo, Ac::Vi, Ac::Be, Ac::Bk];

    pub const fn index(self) -> usize {
        self as usize
    }

    pub const fn name(self) -> &'static str {
        match self {
            Ac::Vo => "vo",
            Ac::Vi => "vi",
            Ac::Be => "be",
            Ac::Bk => "bk",
        }
    }

    /// Parse `"vo"`, `"vi"`, `"be"`, `"bk"`.
    pub fn parse(s: &str) -> Option<Ac> {
        Ac::ALL.into_iter().find(|a| a.name() == s)
    }
}

/// One AC's EDCA parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EdcaParams {
    /// AIFS[AC] = SIFS + AIFSN[AC] x slot (§10.3.2.3.6).
    pub aifsn: u32,
    /// Contention window bounds, each 2^k - 1 (§9.4.2.28: ECWmin/ECWmax).
    pub cw_min: u32,
    pub cw_max: u32,
    /// TXOP limit; zero: one PPDU (an A-MPDU counts as one) per access
    /// (§10.23.2.9: "a TXOP limit value of 0 indicates that ... a single
    /// MSDU or A-MSDU ... or A-MPDU").
    pub txop: Dur,
}

/// Why an EDCA parameter set is invalid (the scenario layer adds the key path).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EdcaError {
    #[error("aifsn: {0} is below the minimum 1 (a station's minimum is 2, an AP's 1)")]
    Aifsn(u32),
    #[error("{param}: {value} is not 2^k - 1 for k in 0..=15 (e.g. 3, 7, 15, 31, 63, 1023)")]
    Cw { param: &'static str, value: u32 },
    #[error("cw_max: {max} is below cw_min {min}")]
    CwOrder { min: u32, max: u32 },
    #[error("txop: {0} is above the largest TXOP limit, 8.16 ms (255 x 32 us)")]
    Txop(Dur),
}

impl EdcaParams {
    /// `txop` in units of 32 us, as the WMM parameter element carries it.
    const fn new(aifsn: u32, cw_min: u32, cw_max: u32, txop_32us: u64) -> Self {
        EdcaParams {
            aifsn,
            cw_min,
            cw_max,
            txop: Dur::from_micros(txop_32us * 32),
        }
    }

    pub fn validate(&self) -> Result<(), EdcaError> {
        let pow2m1 = |v: u32| v < (1 << 15) && (v + 1).is_power_of_two();
        if self.aifsn < 1 {
            return Err(EdcaError::Aifsn(self.aifsn));
        }
        for (param, value) in [("cw_min", self.cw_min), ("cw_max", self.cw_max)] {
            if !pow2m1(value) {
                return Err(EdcaError::Cw { param, value });
            }
        }
        if self.cw_max < self.cw_min {
            return Err(EdcaError::CwOrder {
                min: self.cw_min,
                max: self.cw_max,
            });
        }
        // §9.4.2.28: TXOP Limit is an 8-bit count of 32 us.
        if self.txop > Dur::from_micros(255 * 32) {
            return Err(EdcaError::Txop(self.txop));
        }
        Ok(())
    }
}

/// The EDCA parameters of the four ACs, indexed by [`Ac::index`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct EdcaSet(pub [EdcaParams; 4]);

impl EdcaSet {
    /// What an AP advertises to its stations and they use (hostapd
    /// `wmm_ac_{vo,vi,be,bk}_*`, "IEEE 802.11 draft; 11-03-0504-03-000e";
    /// REFERENCES.md §4.2): VO 2/3/7/1.504 ms, VI 2/7/15/3.008 ms,
    /// BE 3/15/1023/0, BK 7/15/1023/0.
    pub const STATION: EdcaSet = EdcaSet([
        EdcaParams::new(2, 3, 7, 47),
        EdcaParams::new(2, 7, 15, 94),
        EdcaParams::new(3, 15, 1023, 0),
        EdcaParams::new(7, 15, 1023, 0),
    ]);

    /// The AP's own queues (hostapd `tx_queue_data{0..3}`): VO 1/3/7/1.5 ms,
    /// VI 1/7/15/3.0 ms, BE 3/15/63/0, BK 7/15/1023/0. hostapd writes the
    /// AP's bursts in ms (1.5, 3.0); here they are the nearest 32 us units
    /// below (1.504 and 3.008 ms round to 47 and 94 units as for stations).
    pub const AP: EdcaSet = EdcaSet([
        EdcaParams::new(1, 3, 7, 47),
        EdcaParams::new(1, 7, 15, 94),
        EdcaParams::new(3, 15, 63, 0),
        EdcaParams::new(7, 15, 1023, 0),
    ]);

    pub fn get(&self, ac: Ac) -> &EdcaParams {
        &self.0[ac.index()]
    }

    pub fn get_mut(&mut self, ac: Ac) -> &mut EdcaParams {
        &mut self.0[ac.index()]
    }

    pub fn validate(&self) -> Result<(), (Ac, EdcaError)> {
        for ac in Ac::ALL {
            self.get(ac).validate().map_err(|e| (ac, e))?;
        }
        Ok(())
    }
}

/// The EDCA defaults table of docs/scenarios.md and docs/models/wifi.md:
/// [`EdcaSet::AP`] and [`EdcaSet::STATION`] per AC.
pub fn markdown_defaults() -> String {
    let cell = |p: &EdcaParams| {
        let txop = if p.txop.is_zero() {
            "0".to_string()
        } else {
            format!("{} ms", p.txop.as_nanos() as f64 / 1e6)
        };
        format!("{} / {} / {} / {txop}", p.aifsn, p.cw_min, p.cw_max)
    };
    let mut s = String::from(
        "| access category | AP (`[wifi.ap]`): aifsn / cw_min / cw_max / txop | stations (advertised): aifsn / cw_min / cw_max / txop |\n|---|---|---|\n",
    );
    let what = ["voice", "video", "best effort", "background"];
    for (ac, what) in Ac::ALL.into_iter().zip(what) {
        s.push_str(&format!(
            "| `{}` ({what}) | {} | {} |\n",
            ac.name(),
            cell(EdcaSet::AP.get(ac)),
            cell(EdcaSet::STATION.get(ac)),
        ));
    }
    s
}

/// The backoff state of one EDCA function (one AC of one transmitter on
/// one link).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The current contention window CW[AC].
    pub cw: u32,
    /// Slots left to count (§10.23.2.2: counted only while the medium is
    /// idle after AIFS; frozen while it is busy).
    pub counter: u32,
    /// Failed attempts since the last success (the station retry counter
    /// that doubles CW; each MPDU also keeps its own count).
    pub failures: u32,
}

impl Backoff {
    /// A fresh function: CW = CWmin and a counter drawn with `draw(cw)`
    /// (uniform over [0, cw]).
    pub fn new(p: &EdcaParams, draw: impl FnOnce(u32) -> u32) -> Self {
        let cw = p.cw_min;
        Backoff {
            cw,
            counter: draw(cw),
            failures: 0,
        }
    }

    /// After a transmission that got its (Block)Ack: CW back to CWmin and a
    /// new backoff (§10.23.2.3 "... CW[AC] shall be reset to CWmin[AC]").
    pub fn success(&mut self, p: &EdcaParams, draw: impl FnOnce(u32) -> u32) {
        self.cw = p.cw_min;
        self.failures = 0;
        self.counter = draw(self.cw);
    }

    /// After a failed transmission (no response, or an internal collision,
    /// §10.23.2.4): CW doubles up to CWmax (§10.23.2.3: "CW[AC] ←
    /// min(2·(CW[AC]+1) − 1, CWmax[AC])"), and once `retry_limit` attempts
    /// failed in a row it is reset to CWmin (§10.23.2.3: "... reset to
    /// CWmin[AC] when the retry counter reaches its limit"). Then a new
    /// backoff.
    pub fn failure(&mut self, p: &EdcaParams, retry_limit: u32, draw: impl FnOnce(u32) -> u32) {
        self.failures += 1;
        if self.failures >= retry_limit {
            self.failures = 0;
            self.cw = p.cw_min;
        } else {
            self.cw = (2 * (self.cw + 1) - 1).min(p.cw_max);
        }
        self.counter = draw(self.cw);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_hostapds_and_valid() {
        assert_eq!(EdcaSet::STATION.get(Ac::Vo).txop, Dur::from_micros(1504));
        assert_eq!(EdcaSet::STATION.get(Ac::Vi).txop, Dur::from_micros(3008));
        assert_eq!(EdcaSet::AP.get(Ac::Be).cw_max, 63);
        assert_eq!(EdcaSet::STATION.get(Ac::Be).cw_max, 1023);
        assert_eq!(EdcaSet::AP.get(Ac::Vo).aifsn, 1);
        assert!(EdcaSet::STATION.validate().is_ok());
        assert!(EdcaSet::AP.validate().is_ok());
    }

    #[test]
    fn bad_parameters_are_named() {
        let mut p = *EdcaSet::STATION.get(Ac::Be);
        p.cw_min = 16;
        assert_eq!(
            p.validate(),
            Err(EdcaError::Cw {
                param: "cw_min",
                value: 16
            })
        );
        p.cw_min = 63;
        p.cw_max = 31;
        assert!(matches!(p.validate(), Err(EdcaError::CwOrder { .. })));
        p.cw_max = 63;
        p.txop = Dur::from_millis(9);
        assert!(matches!(p.validate(), Err(EdcaError::Txop(_))));
        p.txop = Dur::ZERO;
        p.aifsn = 0;
        assert_eq!(p.validate(), Err(EdcaError::Aifsn(0)));
    }

    #[test]
    fn cw_doubles_to_cwmax_and_resets() {
        // BE: 15 -> 31 -> 63 -> ... -> 1023, then stays.
        let p = *EdcaSet::STATION.get(Ac::Be);
        let mut b = Backoff::new(&p, |_| 0);
        let mut seen = vec![b.cw];
        for _ in 0..7 {
            b.failure(&p, 100, |cw| cw);
            seen.push(b.cw);
        }
        assert_eq!(seen, [15, 31, 63, 127, 255, 511, 1023, 1023]);
        assert_eq!(b.counter, 1023, "the draw sees the new CW");
        b.success(&p, |_| 3);
        assert_eq!((b.cw, b.failures, b.counter), (15, 0, 3));
        // At the retry limit CW goes back to CWmin.
        for _ in 0..3 {
            b.failure(&p, 4, |_| 0);
        }
        assert_eq!(b.cw, 127);
        b.failure(&p, 4, |_| 0);
        assert_eq!((b.cw, b.failures), (15, 0));
    }
}
