//! 802.11 PHY arithmetic: rates, PPDU airtime, MAC timing constants and a
//! simple SNR -> MPDU error model (sans-IO, pure functions, no allocation).
//!
//! Specs: IEEE 802.11-2020 clause 17 (OFDM, "11a"; at 2.4 GHz the ERP-OFDM
//! timing of clause 18, i.e. 11g), clause 19 (HT, "11n"), clause 21 (VHT,
//! "11ac"), clause 27 (HE, 802.11ax-2021) and 802.11be-2024 clause 36 (EHT).
//! Tables are 802.11-2020 unless marked.
//!
//! Simplified (each choice is stated again where it is implemented):
//! * Single-user PPDUs only: HT-mixed format, VHT SU, HE SU, EHT MU sent to
//!   one user. No OFDMA, MU-MIMO, STBC, greenfield or extension LTFs.
//! * Guard interval 0.8 µs everywhere: long GI for HT/VHT (4 µs symbols),
//!   0.8 µs for HE/EHT (13.6 µs symbols) with 2x HE/EHT-LTFs (7.2 µs each).
//! * `N_DBPS = floor(N_SD · N_BPSCS · N_SS · R)` (the HE/EHT tables floor
//!   the 5/6-rate values, e.g. HE80 MCS 11 1 SS: 8166); rates are N_DBPS over
//!   the symbol time, rounded to the nearest bit/s.
//! * `N_SYM = ceil((16 + 8·L + 6·N_ES) / N_DBPS)` (BCC form) for every PHY;
//!   HE/EHT LDPC padding, the LDPC extra symbol and packet extension (PE)
//!   are ignored, so HE/EHT PPDUs are up to one symbol + PE (≤ 16 µs) short.
//! * Control responses (Ack, BlockAck) are non-HT PPDUs at one basic rate,
//!   24 Mbit/s, whatever the rate of the eliciting frame.
//! * Link quality is not a channel model: each MCS needs a minimum SNR
//!   (from the receiver sensitivity tables) and the MPDU error rate is a
//!   logistic curve around it ([`Phy::per`]). No fading, no MIMO gain.

use core::fmt;

use l4slab_core::param::{Kind, Param, ParamValue};
use l4slab_core::{Dur, Rate};

/// `standard`: the PHY generation, by the amendment's letters.
pub const STANDARD: Param = Param {
    name: "standard",
    aliases: &[],
    linux: "hostapd hw_mode, ieee80211n/ac/ax/be",
    kind: Kind::Choice(&["a", "n", "ac", "ax", "be"]),
    default: ParamValue::Choice("ax"),
    source: "Wi-Fi 6, the common generation of current APs",
    doc: "PHY generation: 802.11a/n/ac/ax/be (clauses 17, 19, 21, 27; 802.11be clause 36)",
};

/// `band`.
pub const BAND: Param = Param {
    name: "band",
    aliases: &[],
    linux: "hostapd hw_mode",
    kind: Kind::Choice(&["2.4GHz", "5GHz", "6GHz"]),
    default: ParamValue::Choice("5GHz"),
    source: "the one band every standard runs in",
    doc: "frequency band; `a` and `n` not at 6 GHz, `ac` only at 5 GHz",
};

/// `width`: checked against the standard and band by [`Phy::new`].
pub const WIDTH: Param = Param {
    name: "width",
    aliases: &[],
    linux: "hostapd vht_oper_chwidth, he_oper_chwidth, eht_oper_chwidth",
    kind: Kind::Custom("20, 40, 80, 160 or 320 MHz: `\"80MHz\"` or `80`"),
    default: ParamValue::Unset {
        example: "\"80MHz\"",
    },
    source: "the standard's usual width in the band: 20 MHz at 2.4 GHz and for `a`, 40 for `n`, 80 otherwise",
    doc: "channel width, as the standard allows it in the band",
};

/// `nss`: checked against the standard's maximum by [`Phy::new`].
pub const NSS: Param = Param {
    name: "nss",
    aliases: &[],
    linux: "N_SS",
    kind: Kind::Int {
        min: 1,
        max: u32::MAX as i64,
    },
    default: ParamValue::Unset { example: "2" },
    source: "2 streams (1 for `a`), a common client",
    doc: "spatial streams: 1 for `a`, at most 4 for `n`, 8 otherwise",
};

/// The keys of one link of the cell (`[wifi]` or an entry of `wifi.links`),
/// in the docs' order.
pub const PARAMS: &[Param] = &[STANDARD, BAND, WIDTH, NSS];

/// The 802.11 PHY generation, oldest first (the order [`Phy::for_station`]
/// takes the older of two by).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Standard {
    /// Clause 17 OFDM (11a; 11g ERP-OFDM timing at 2.4 GHz).
    A,
    /// Clause 19 HT.
    N,
    /// Clause 21 VHT.
    Ac,
    /// Clause 27 HE.
    Ax,
    /// 802.11be clause 36 EHT.
    Be,
}

impl Standard {
    /// The scenario's name of it: `"a"`, `"n"`, `"ac"`, `"ax"`, `"be"` ([`STANDARD`]).
    pub fn key(&self) -> &'static str {
        match self {
            Standard::A => "a",
            Standard::N => "n",
            Standard::Ac => "ac",
            Standard::Ax => "ax",
            Standard::Be => "be",
        }
    }
}

impl fmt::Display for Standard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Standard::A => "802.11a",
            Standard::N => "802.11n",
            Standard::Ac => "802.11ac",
            Standard::Ax => "802.11ax",
            Standard::Be => "802.11be",
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Band {
    #[serde(rename = "2.4GHz")]
    G2_4,
    #[serde(rename = "5GHz")]
    G5,
    #[serde(rename = "6GHz")]
    G6,
}

impl fmt::Display for Band {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Band::G2_4 => "2.4GHz",
            Band::G5 => "5GHz",
            Band::G6 => "6GHz",
        })
    }
}

/// A validated PHY configuration; build it with [`Phy::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Phy {
    pub standard: Standard,
    pub band: Band,
    pub width_mhz: u32,
    pub nss: u32,
}

/// Bad PHY parameters. Messages name the parameter; the scenario layer
/// prefixes the key path.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PhyError {
    #[error("band: {standard} does not operate at {band} (expected {allowed})")]
    Band {
        standard: Standard,
        band: Band,
        allowed: &'static str,
    },
    #[error("width: {width_mhz} MHz is not allowed for {standard} at {band} (expected one of {allowed} MHz)")]
    Width {
        standard: Standard,
        band: Band,
        width_mhz: u32,
        allowed: &'static str,
    },
    #[error("nss: {nss} spatial streams is not allowed for {standard} (expected 1..={max})")]
    Nss {
        standard: Standard,
        nss: u32,
        max: u32,
    },
    #[error("mcs: {mcs} is out of range for {standard} (expected 0..={max})")]
    Mcs {
        standard: Standard,
        mcs: u8,
        max: u8,
    },
    #[error("mcs: VHT-MCS {mcs} is not defined for {width_mhz} MHz with {nss} spatial streams (802.11-2020 §21.5 excludes it)")]
    McsNotDefined { mcs: u8, width_mhz: u32, nss: u32 },
}

/// (N_BPSCS, code rate num, den) of clause 17's eight rates 6..54 Mbit/s (Table 17-4).
#[rustfmt::skip]
const OFDM_MCS: [(u64, u64, u64); 8] = [
    (1, 1, 2), (1, 3, 4), (2, 1, 2), (2, 3, 4), (4, 1, 2), (4, 3, 4), (6, 2, 3), (6, 3, 4),
];
/// (N_BPSCS, R) of HT MCS 0..7 (per stream), VHT 0..9, HE 0..11, EHT 0..13:
/// 802.11-2020 §19.5, §21.5, §27.5; 802.11be §36.5 (MCS 12, 13: 4096-QAM).
#[rustfmt::skip]
const MCS: [(u64, u64, u64); 14] = [
    (1, 1, 2), (2, 1, 2), (2, 3, 4), (4, 1, 2), (4, 3, 4), (6, 2, 3), (6, 3, 4),
    (6, 5, 6), (8, 3, 4), (8, 5, 6), (10, 3, 4), (10, 5, 6), (12, 3, 4), (12, 5, 6),
];
/// Receiver minimum input sensitivity at 20 MHz (dBm), 10 % PER:
/// clause 17 Table 17-18 (6..54 Mbit/s) ...
const OFDM_SENS_DBM: [f64; 8] = [-82.0, -81.0, -79.0, -77.0, -74.0, -70.0, -66.0, -65.0];
/// ... and HT Table 19-23, VHT Table 21-25, 802.11ax (same rows, MCS 10, 11
/// added) by MCS, +3 dB per doubling of width. EHT MCS 12, 13 (-49, -46)
/// continue HE's 3 dB steps: [R], to check against 802.11be clause 36.
const SENS_DBM: [f64; 14] = [
    -82.0, -79.0, -77.0, -74.0, -70.0, -66.0, -65.0, -64.0, -59.0, -57.0, -54.0, -52.0, -49.0,
    -46.0,
];
/// SNR = sensitivity − this: the 20 MHz noise reference of those tables'
/// usual reading, kTB −101 dBm + 10 dB noise figure + 5 dB implementation margin.
const NOISE_REF_DBM: f64 = -86.0;
/// ln 9: the logistic is 1/(1 + 9) = 10 % at the threshold.
const LN_9: f64 = 2.197_224_577_336_219_6;
/// ln(111)/3 per dB: 1/(1 + 9·e^{3k}) = 1e-3 three dB above the threshold.
const PER_SLOPE_PER_DB: f64 = 1.569_843_400_437_444_6;
/// The MPDU length at which [`Phy::min_snr_db`] gives 10 % PER.
const PER_REF_BYTES: f64 = 1500.0;

impl Phy {
    /// Validates the combination: a: 20 MHz, 1 SS, 2.4/5 GHz; n: 20/40,
    /// 1..=4 SS, 2.4/5 GHz; ac: 20..160, 1..=8 SS, 5 GHz; ax: 20..160 (2.4 GHz
    /// 20/40), 1..=8 SS; be: 20..320 (320 at 6 GHz only, 2.4 GHz 20/40),
    /// 1..=8 SS (802.11be-2024 defines up to 8 streams; early drafts had 16).
    pub fn new(standard: Standard, band: Band, width_mhz: u32, nss: u32) -> Result<Phy, PhyError> {
        let (widths, allowed, max_nss) = Self::allowed(standard, band)?;
        if !widths.contains(&width_mhz) {
            return Err(PhyError::Width {
                standard,
                band,
                width_mhz,
                allowed,
            });
        }
        if !(1..=max_nss).contains(&nss) {
            return Err(PhyError::Nss {
                standard,
                nss,
                max: max_nss,
            });
        }
        Ok(Phy {
            standard,
            band,
            width_mhz,
            nss,
        })
    }

    /// The widths (ascending, and as the error shows them) and the most
    /// spatial streams `standard` allows at `band`.
    fn allowed(
        standard: Standard,
        band: Band,
    ) -> Result<(&'static [u32], &'static str, u32), PhyError> {
        use Band::*;
        use Standard::*;
        let band_err = |allowed| {
            Err(PhyError::Band {
                standard,
                band,
                allowed,
            })
        };
        Ok(match (standard, band) {
            (A | N, G6) => return band_err("2.4GHz or 5GHz"),
            (Ac, G2_4 | G6) => return band_err("5GHz"),
            (A, _) => (&[20], "20", 1),
            (N, _) => (&[20, 40], "20, 40", 4),
            (Ax | Be, G2_4) => (&[20, 40], "20, 40", 8),
            (Ac | Ax, _) | (Be, G5) => (&[20, 40, 80, 160], "20, 40, 80, 160", 8),
            (Be, G6) => (&[20, 40, 80, 160, 320], "20, 40, 80, 160, 320", 8),
        })
    }

    /// What this link (the AP's side) becomes for a station of generation
    /// `standard`: both ends speak the older generation, on the widest
    /// channel and with the most streams that generation allows up to the
    /// link's. The AP learns the station's generation from the capabilities
    /// elements of its association request (802.11-2020 §9.4.2.56 HT, §9.4.2.157
    /// VHT, §9.4.2.247 HE Capabilities; 802.11be §9.4.2.313 EHT Capabilities)
    /// and sends to it only in PPDU formats and with Block Ack agreements
    /// both support (§10.25.2: the smaller buffer size). A Wi-Fi 7 client on
    /// a Wi-Fi 6 AP therefore talks 802.11ax, and a Wi-Fi 6 client on a
    /// Wi-Fi 7 AP gets HE rates (no 4096-QAM), a 256-MPDU window and at most
    /// 160 MHz. An error if the older generation cannot use the band (an
    /// 802.11n station on a 6 GHz link).
    pub fn for_station(&self, standard: Standard) -> Result<Phy, PhyError> {
        if standard >= self.standard {
            return Ok(*self);
        }
        let (widths, _, max_nss) = Self::allowed(standard, self.band)?;
        let width_mhz = widths
            .iter()
            .copied()
            .filter(|&w| w <= self.width_mhz)
            .max()
            .unwrap_or(widths[0]);
        Phy::new(standard, self.band, width_mhz, self.nss.min(max_nss))
    }

    /// aSlotTime 9 µs: Table 17-21 (OFDM), Table 18-5 (ERP short slot), and
    /// inherited by HT/VHT/HE/EHT.
    pub fn slot(&self) -> Dur {
        Dur::from_micros(9)
    }

    /// aSIFSTime: 16 µs at 5/6 GHz (Table 17-21), 10 µs at 2.4 GHz (Table 18-5, 19-25).
    pub fn sifs(&self) -> Dur {
        Dur::from_micros(if self.band == Band::G2_4 { 10 } else { 16 })
    }

    /// aSignalExtension 6 µs after every OFDM-based PPDU at 2.4 GHz
    /// (Table 18-5, Table 19-25; HE/EHT likewise), else 0.
    pub fn signal_extension(&self) -> Dur {
        Dur::from_micros(if self.band == Band::G2_4 { 6 } else { 0 })
    }

    /// Per-standard constants: (MCS count, Block Ack window, largest A-MPDU
    /// in bytes, aRxPHYStartDelay in µs), see the methods for each column.
    fn consts(&self) -> (u8, u16, u64, u64) {
        match self.standard {
            Standard::A => (8, 1, 0, 20),               // Table 17-21, 18-5
            Standard::N => (8, 64, 65_535, 28),         // Table 19-25
            Standard::Ac => (10, 64, 1_048_575, 72),    // Table 21-28
            Standard::Ax => (12, 256, 6_500_631, 32),   // 802.11ax Table 27-54
            Standard::Be => (14, 1024, 15_523_200, 40), // 802.11be clause 36
        }
    }

    /// a: 8 (the 6..54 Mbit/s rates as "MCS" 0..7), n: 8 (per stream), ac: 10, ax: 12, be: 14.
    pub fn mcs_count(&self) -> u8 {
        self.consts().0
    }

    /// `Ok` if `mcs` exists here: in range, and not a VHT combination that
    /// §21.5 marks not valid (20 MHz MCS 9 except with 3 or 6 SS, 80 MHz MCS 6
    /// with 3 or 7 SS, 80 MHz MCS 9 with 6 SS, 160 MHz MCS 9 with 3 SS). The
    /// other methods panic on an out-of-range MCS (a bug: validate the
    /// scenario with this) and compute an excluded one with the floored N_DBPS.
    pub fn check_mcs(&self, mcs: u8) -> Result<(), PhyError> {
        if mcs >= self.mcs_count() {
            let max = self.mcs_count() - 1;
            return Err(PhyError::Mcs {
                standard: self.standard,
                mcs,
                max,
            });
        }
        let excluded = matches!(
            (self.width_mhz, mcs, self.nss),
            (20, 9, 1 | 2 | 4 | 5 | 7 | 8) | (80, 6, 3 | 7) | (80, 9, 6) | (160, 9, 3)
        );
        if self.standard == Standard::Ac && excluded {
            let (width_mhz, nss) = (self.width_mhz, self.nss);
            return Err(PhyError::McsNotDefined {
                mcs,
                width_mhz,
                nss,
            });
        }
        Ok(())
    }

    /// N_DBPS, data bits per OFDM symbol over all streams:
    /// floor(N_SD · N_BPSCS · N_SS · R).
    pub fn bits_per_symbol(&self, mcs: u8) -> u64 {
        assert!(mcs < self.mcs_count(), "{} has no MCS {mcs}", self.standard);
        let (bpscs, num, den) = match self.standard {
            Standard::A => OFDM_MCS[usize::from(mcs)],
            _ => MCS[usize::from(mcs)],
        };
        // N_SD, data subcarriers: 48 (Table 17-5); HT 52/108 (§19.5); VHT
        // 52/108/234/468 (§21.5); HE/EHT 242/484/996/2x996/4x996-tone RU:
        // 234/468/980/1960/3920 (§27.5, 802.11be §36.5).
        let n_sd: u64 = match (self.standard, self.width_mhz) {
            (Standard::A, _) => 48,
            (Standard::N | Standard::Ac, 20) => 52,
            (Standard::N | Standard::Ac, 40) => 108,
            (Standard::Ac, 80) => 234,
            (Standard::Ac, _) => 468,
            (_, w) => [234, 468, 980, 1960, 3920][(w / 20).trailing_zeros() as usize],
        };
        n_sd * bpscs * u64::from(self.nss) * num / den
    }

    /// OFDM symbol: 4 µs (3.2 + 0.8 GI) for clause 17/19/21 (long GI);
    /// 13.6 µs for HE/EHT (T_DFT 12.8 µs + 0.8 µs GI, clause 27 / 36).
    pub fn symbol(&self) -> Dur {
        match self.standard {
            Standard::Ax | Standard::Be => Dur::from_nanos(13_600),
            _ => Dur::from_micros(4),
        }
    }

    /// Nominal PHY rate: N_DBPS / T_SYM, rounded to the nearest bit/s (exact
    /// for clause 17/19/21; HE/EHT rates are fractional, e.g. 1200.956 Mbit/s).
    pub fn data_rate(&self, mcs: u8) -> Rate {
        let t_ns = u128::from(self.symbol().as_nanos());
        let bits = u128::from(self.bits_per_symbol(mcs)) * 1_000_000_000;
        Rate::from_bps(((2 * bits + t_ns) / (2 * t_ns)) as u64)
    }

    /// Training fields for N_SS streams: N_LTF = 1, 2, 4, 4, 6, 6, 8, 8
    /// (HT Table 19-13, VHT Table 21-13, HE/EHT alike).
    fn n_ltf(&self) -> u64 {
        [1, 2, 4, 4, 6, 6, 8, 8][self.nss as usize - 1]
    }

    /// PHY preamble and headers before the data symbols:
    /// * a: L-STF 8 + L-LTF 8 + L-SIG 4 = 20 µs (§17.4.3 TXTIME).
    /// * n (HT-mixed, §19.4.3): 20 + HT-SIG 8 + HT-STF 4 + 4·N_LTF.
    /// * ac (§21.4.3): 20 + VHT-SIG-A 8 + VHT-STF 4 + 4·N_LTF + VHT-SIG-B 4.
    /// * ax, HE SU (§27.4.3): 20 + RL-SIG 4 + HE-SIG-A 8 + HE-STF 4 + N_LTF·7.2
    ///   (2x HE-LTF 6.4 µs + the 0.8 µs GI the data uses; ns-3 uses 8 µs).
    /// * be, EHT MU to one user (§36.4.3): 20 + RL-SIG 4 + U-SIG 8 +
    ///   EHT-SIG 8 + EHT-STF 4 + N_LTF·7.2. EHT-SIG is 2 symbols: the
    ///   non-OFDMA common field (20 bits) and one user field (22) coded jointly
    ///   with CRC 4 and tail 6 = 52 bits at EHT-SIG MCS 0, 26 bits per symbol.
    pub fn preamble(&self) -> Dur {
        let ltf = self.n_ltf();
        let us = Dur::from_micros;
        match self.standard {
            Standard::A => us(20),
            Standard::N => us(20 + 8 + 4 + 4 * ltf),
            Standard::Ac => us(20 + 8 + 4 + 4 * ltf + 4),
            Standard::Ax => us(20 + 4 + 8 + 4) + Dur::from_nanos(7_200 * ltf),
            Standard::Be => us(20 + 4 + 8 + 8 + 4) + Dur::from_nanos(7_200 * ltf),
        }
    }

    /// Airtime of a PPDU carrying `psdu_bytes` at `mcs`: preamble + N_SYM·T_SYM
    /// (+ signal extension at 2.4 GHz), N_SYM = ceil((16 service + 8·L + 6·N_ES
    /// tail) / N_DBPS) (eq. 17-11 in §17.3.5.4; TXTIME in §19.4.3, §21.4.3,
    /// §27.4.3, without HE/EHT LDPC padding or packet extension). N_ES
    /// approximates the standard's BCC encoder count: one per 300 Mbit/s for
    /// HT (§19.3.11), one per 600 Mbit/s for VHT/HE/EHT.
    pub fn ppdu_duration(&self, mcs: u8, psdu_bytes: u64) -> Dur {
        self.ppdu_time(mcs).duration(psdu_bytes)
    }

    /// [`Phy::ppdu_duration`] at `mcs` with the terms that do not depend on
    /// the length (N_DBPS, N_ES, preamble, symbol) worked out once: a cell
    /// building an A-MPDU asks for the airtime at every MPDU it adds.
    pub fn ppdu_time(&self, mcs: u8) -> PpduTime {
        let per_encoder = match self.standard {
            Standard::A => u64::MAX,
            Standard::N => 300_000_000,
            _ => 600_000_000,
        };
        PpduTime {
            n_dbps: self.bits_per_symbol(mcs),
            n_es: self.data_rate(mcs).as_bps().div_ceil(per_encoder).max(1),
            preamble: self.preamble(),
            symbol: self.symbol(),
            signal_extension: self.signal_extension(),
        }
    }

    /// Largest A-MPDU: a: none; HT 65,535 B and VHT 1,048,575 B (Maximum
    /// A-MPDU Length Exponent 3 and 7: 2^(13+e) − 1); HE 6,500,631 B and EHT
    /// 15,523,200 B (the PHYs' aPSDUMaxLength, 802.11ax Table 27-54, 802.11be
    /// clause 36; ns-3 caps A-MPDUs at the same four values).
    pub fn max_ampdu_bytes(&self) -> u64 {
        self.consts().2
    }

    /// Block Ack window in MPDUs: a: 1 (stop-and-wait), n/ac: 64, ax: 256, be: 1024.
    pub fn ba_window(&self) -> u16 {
        self.consts().1
    }

    /// Longest PPDU: aPPDUMaxTime 5.484 ms for HT-mixed/VHT/HE/EHT, the L-SIG
    /// limit (LENGTH 4095 at 6 Mbit/s: 20 + 4·ceil((16+8·4095+6)/24) µs;
    /// Table 21-28, 802.11ax Table 27-54). 11a: 100 ms, i.e. no limit that
    /// matters (one MPDU per PPDU; 4095 B at 6 Mbit/s is also 5.484 ms).
    pub fn ppdu_max_time(&self) -> Dur {
        match self.standard {
            Standard::A => Dur::from_millis(100),
            _ => Dur::from_micros(5_484),
        }
    }

    /// Rate of control responses: 24 Mbit/s, the highest mandatory OFDM rate
    /// (§10.6.6 picks the highest basic rate ≤ the eliciting frame's rate;
    /// this assumes data at ≥ 24 Mbit/s).
    pub fn basic_rate(&self) -> Rate {
        Rate::from_mbps(24)
    }

    /// A control response of `bytes` (Ack 14 B, BlockAck [`Phy::block_ack_bytes`])
    /// as a non-HT PPDU at [`Phy::basic_rate`]: 20 µs + ceil((16 + 8·bytes +
    /// 6)/N_DBPS)·4 µs, N_DBPS = 96 at 24 Mbit/s (§17.4.3), + signal extension.
    pub fn ack_duration(&self, bytes: u64) -> Dur {
        let n_dbps = self.basic_rate().as_bps() * 4 / 1_000_000; // bits per 4 µs
        let n_sym = (16 + 8 * bytes + 6).div_ceil(n_dbps);
        Dur::from_micros(20 + 4 * n_sym) + self.signal_extension()
    }

    /// Compressed BlockAck frame (§9.3.1.9): FC 2 + Duration 2 + RA 6 + TA 6 +
    /// BA Control 2 + Starting Sequence Control 2 + bitmap + FCS 4 = 24 B +
    /// bitmap: 64-bit (8 B) → 32 B for n/ac; 256-bit (32 B) → 56 B for ax;
    /// 1024-bit (128 B) → 152 B for be. The bitmap matches [`Phy::ba_window`];
    /// 11a has no BlockAck and answers with a 14 B Ack.
    pub fn block_ack_bytes(&self) -> u64 {
        match self.standard {
            Standard::A => 14,
            _ => 24 + u64::from(self.ba_window()) / 8,
        }
    }

    /// AckTimeout = aSIFSTime + aSlotTime + aRxPHYStartDelay (§10.3.2.9),
    /// aRxPHYStartDelay: 20 µs OFDM/ERP (Table 17-21, 18-5); 28 µs HT-mixed
    /// (Table 19-25); 36 + 4·max N_VHT-LTF + 4 = 72 µs VHT (Table 21-28);
    /// 32 µs HE SU (802.11ax Table 27-54); 32 + 4·N_EHT-SIG = 40 µs EHT MU.
    /// (802.11-2007 had 25 µs for clause 17; 2016 and later say 20.)
    pub fn ack_timeout(&self) -> Dur {
        self.sifs() + self.slot() + Dur::from_micros(self.consts().3)
    }

    /// SNR (dB) at which a 1500 B MPDU has 10 % error. `snr_db` everywhere in
    /// this module is signal over the noise in a *20 MHz* channel, so one link
    /// budget gives one SNR whatever the width, and each doubling of the width
    /// costs 3 dB (the tables' +3 dB per doubling). Value: the 20 MHz
    /// sensitivity + 86 dB (`NOISE_REF_DBM`), e.g. MCS 0: 4 dB, HT MCS 7:
    /// 22 dB, HE MCS 11: 34 dB; no extra need per stream. The tables' own
    /// reference length (1000 B for 11a, 4096 B otherwise) is not converted.
    pub fn min_snr_db(&self, mcs: u8) -> f64 {
        assert!(mcs < self.mcs_count(), "{} has no MCS {mcs}", self.standard);
        let sens = match self.standard {
            Standard::A => OFDM_SENS_DBM[usize::from(mcs)],
            _ => SENS_DBM[usize::from(mcs)],
        };
        let doublings = (self.width_mhz / 20).trailing_zeros();
        sens - NOISE_REF_DBM + 3.0 * f64::from(doublings)
    }

    /// MPDU error probability in [0, 1]. For 1500 B it is logistic in dB:
    /// `1 / (1 + 9·e^{k(snr − min_snr)})`, k = ln(111)/3: 10 % at
    /// [`Phy::min_snr_db`], 1e-3 at +3 dB, 0.925 at −3 dB. Other lengths keep
    /// the per-byte success rate: `1 − (1 − PER_1500)^{L/1500}`. Uses `libm`
    /// so results are identical on every platform.
    pub fn per(&self, mcs: u8, snr_db: f64, mpdu_bytes: u64) -> f64 {
        self.per_curve(mcs, snr_db).per(mpdu_bytes)
    }

    /// [`Phy::per`] at `mcs` and `snr_db` with the part that does not depend
    /// on the length worked out once (a cell draws every MPDU's fate with
    /// its receiver's MCS and SNR, which do not change).
    pub fn per_curve(&self, mcs: u8, snr_db: f64) -> PerCurve {
        assert!(!snr_db.is_nan(), "per: SNR is NaN");
        let z = PER_SLOPE_PER_DB * (snr_db - self.min_snr_db(mcs)) + LN_9;
        // ln(1 − PER_1500) = −ln(1 + e^{−z}), computed without overflow.
        let softplus = if -z > 30.0 {
            -z
        } else {
            libm::log1p(libm::exp(-z))
        };
        PerCurve { softplus }
    }

    /// Ideal rate control (like ns-3's IdealWifiManager): the defined MCS
    /// maximising `data_rate · (1 − per(mcs, snr, 1500))`, ties to the lower.
    /// Monotone in SNR: all curves share one slope, so the goodput ratio of a
    /// higher to a lower MCS only grows with SNR.
    pub fn best_mcs(&self, snr_db: f64) -> u8 {
        let mut best = (0, -1.0);
        for mcs in (0..self.mcs_count()).filter(|&m| self.check_mcs(m).is_ok()) {
            let ok = 1.0 - self.per(mcs, snr_db, 1500);
            let goodput = self.data_rate(mcs).as_bps() as f64 * ok;
            if goodput > best.1 {
                best = (mcs, goodput);
            }
        }
        best.0
    }
}

/// [`Phy::ppdu_duration`] at one MCS ([`Phy::ppdu_time`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PpduTime {
    n_dbps: u64,
    n_es: u64,
    preamble: Dur,
    symbol: Dur,
    signal_extension: Dur,
}

impl PpduTime {
    /// Airtime of a PPDU carrying `psdu_bytes`: [`Phy::ppdu_duration`].
    #[inline]
    pub fn duration(&self, psdu_bytes: u64) -> Dur {
        let n_sym = (16 + 8 * psdu_bytes + 6 * self.n_es).div_ceil(self.n_dbps);
        self.preamble + self.symbol * n_sym + self.signal_extension
    }
}

/// [`Phy::per`] at one MCS and SNR ([`Phy::per_curve`]): `softplus` is
/// −ln(1 − PER) of a 1500 B MPDU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerCurve {
    softplus: f64,
}

impl PerCurve {
    /// The error probability of an MPDU of `mpdu_bytes`: [`Phy::per`].
    #[inline]
    pub fn per(&self, mpdu_bytes: u64) -> f64 {
        let ln_ok = -self.softplus * (mpdu_bytes as f64 / PER_REF_BYTES);
        (-libm::expm1(ln_ok)).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Band::*;
    use Standard::*;

    fn phy(s: Standard, b: Band, w: u32, nss: u32) -> Phy {
        Phy::new(s, b, w, nss).unwrap()
    }
    fn us(n: u64) -> Dur {
        Dur::from_micros(n)
    }
    fn ns(n: u64) -> Dur {
        Dur::from_nanos(n)
    }

    #[test]
    fn rates_match_the_standards_tables() {
        let bps = |p: Phy, mcs| p.data_rate(mcs).as_bps();
        // 11a: 48 subcarriers · 6 bit · 3/4 = 216 bit / 4 µs = 54 Mbit/s;
        // BPSK 1/2: 24 bit / 4 µs = 6; BPSK 3/4: 36 bit = 9.
        let a = phy(A, G5, 20, 1);
        assert_eq!(a.bits_per_symbol(7), 216);
        assert_eq!(
            [0, 1, 7].map(|m| bps(a, m)),
            [6_000_000, 9_000_000, 54_000_000]
        );
        // HT20 1 SS MCS 7: 52 · 6 · 5/6 = 260 bit / 4 µs = 65 Mbit/s.
        assert_eq!(bps(phy(N, G5, 20, 1), 7), 65_000_000);
        // VHT80 2 SS MCS 9: 234 · 8 · 2 · 5/6 = 3120 bit / 4 µs = 780 Mbit/s.
        assert_eq!(bps(phy(Ac, G5, 80, 2), 9), 780_000_000);
        // HE20 1 SS MCS 11: 234 · 10 · 5/6 = 1950 bit / 13.6 µs = 143.382 Mbit/s ("143.4").
        assert_eq!(bps(phy(Ax, G5, 20, 1), 11), 143_382_353);
        // HE80 2 SS MCS 11: floor(980 · 10 · 2 · 5/6) = 16333 bit / 13.6 µs = 1200.956
        // Mbit/s, "1201" in the table (the unfloored 16333.3 bit would give 1200.98).
        assert_eq!(phy(Ax, G5, 80, 2).bits_per_symbol(11), 16_333);
        assert_eq!(bps(phy(Ax, G5, 80, 2), 11), 1_200_955_882);
        // HE160 2 SS MCS 11: floor(1960 · 20 · 5/6) = 32666 / 13.6 µs = 2401.9 ("2402").
        assert_eq!(bps(phy(Ax, G6, 160, 2), 11), 2_401_911_765);
        // EHT320 4 SS MCS 13: 3920 · 12 · 4 · 5/6 = 156800 / 13.6 µs = 11529.4 Mbit/s.
        assert_eq!(bps(phy(Be, G6, 320, 4), 13), 11_529_411_765);
    }

    #[test]
    fn airtime_and_timing() {
        let (a, g, n) = (phy(A, G5, 20, 1), phy(A, G2_4, 20, 1), phy(N, G5, 20, 1));
        // 1500 B at 54 Mbit/s: 20 + ceil((16 + 12000 + 6)/216) · 4 = 20 + 56 · 4 = 244 µs.
        assert_eq!(a.ppdu_duration(7, 1500), us(244));
        // L-SIG limit: 4095 B at 6 Mbit/s: 20 + ceil(32782/24) · 4 = 20 + 1366 · 4 = 5484 µs.
        assert_eq!(
            (a.ppdu_duration(0, 4095), n.ppdu_max_time()),
            (us(5_484), us(5_484))
        );
        // Ack 14 B at 24 Mbit/s: 20 + ceil(134/96) · 4 = 28 µs; BlockAck 32 B:
        // 20 + ceil(278/96) · 4 = 32 µs.
        assert_eq!((a.ack_duration(14), a.ack_duration(32)), (us(28), us(32)));
        // 2.4 GHz (11g): slot 9, SIFS 10, 6 µs signal extension after each PPDU.
        assert_eq!(
            (g.slot(), g.sifs(), g.ack_duration(14)),
            (us(9), us(10), us(34))
        );
        assert_eq!(g.ppdu_duration(7, 1500), us(250));
        // AckTimeout = SIFS + slot + aRxPHYStartDelay: 16 + 9 + 20, 10 + 9 + 20, 16 + 9 + 28.
        assert_eq!([a, g, n].map(|p| p.ack_timeout()), [us(45), us(39), us(53)]);
        // Preambles: HT 1 SS 36 µs, 3 SS (4 LTFs) 48; VHT 40; HE 43.2; EHT 2 SS 58.4.
        let pre =
            [(N, 1), (N, 3), (Ac, 1), (Ax, 1), (Be, 2)].map(|(s, k)| phy(s, G5, 40, k).preamble());
        assert_eq!(pre, [us(36), us(48), us(40), ns(43_200), ns(58_400)]);
        // HT20 MCS 7, 1500 B: 36 + ceil(12022/260) · 4 = 36 + 47 · 4 = 224 µs.
        assert_eq!(n.ppdu_duration(7, 1500), us(224));
        // HE80 1 SS MCS 11 (N_DBPS 8166, 600.44 Mbit/s: N_ES 2), 64 KiB:
        // 43.2 + ceil((16 + 524288 + 12)/8166) · 13.6 = 43.2 + 65 · 13.6 = 927.2 µs.
        let he = phy(Ax, G5, 80, 1);
        assert_eq!(he.ppdu_duration(11, 65_536), ns(927_200));
        let ba = [A, N, Ac, Ax, Be].map(|s| phy(s, G5, 20, 1).block_ack_bytes());
        assert_eq!(ba, [14, 32, 32, 56, 152]);
        assert_eq!(
            (he.max_ampdu_bytes(), he.ba_window(), he.symbol()),
            (6_500_631, 256, ns(13_600))
        );
    }

    #[test]
    fn bad_parameters_are_errors_naming_the_key() {
        let err = |s, b, w, n| Phy::new(s, b, w, n).unwrap_err();
        assert!(matches!(
            err(A, G5, 40, 1),
            PhyError::Width { allowed: "20", .. }
        ));
        assert!(matches!(err(Ax, G2_4, 80, 1), PhyError::Width { .. }));
        assert!(matches!(err(Be, G5, 320, 1), PhyError::Width { .. }));
        assert!(matches!(err(N, G6, 20, 1), PhyError::Band { .. }));
        assert!(matches!(err(A, G5, 20, 0), PhyError::Nss { max: 1, .. }));
        let msg = |s, b, w, n| err(s, b, w, n).to_string();
        assert_eq!(
            msg(Ax, G2_4, 80, 1),
            "width: 80 MHz is not allowed for 802.11ax at 2.4GHz (expected one of 20, 40 MHz)"
        );
        assert_eq!(
            msg(Ac, G2_4, 20, 1),
            "band: 802.11ac does not operate at 2.4GHz (expected 5GHz)"
        );
        assert_eq!(
            msg(N, G5, 20, 5),
            "nss: 5 spatial streams is not allowed for 802.11n (expected 1..=4)"
        );
        let he = phy(Ax, G5, 20, 1);
        assert!(he.check_mcs(11).is_ok());
        let e = he.check_mcs(12).unwrap_err().to_string();
        assert_eq!(e, "mcs: 12 is out of range for 802.11ax (expected 0..=11)");
        // VHT20 MCS 9: 52 · 8 · 5/6 = 346.7 bits, defined only for 3 and 6 streams.
        assert!(phy(Ac, G5, 20, 1).check_mcs(9).is_err());
        assert!(phy(Ac, G5, 20, 3).check_mcs(9).is_ok());
    }

    #[test]
    fn per_is_monotone_and_pinned_at_the_threshold() {
        let p = phy(Ax, G5, 80, 2);
        // HE MCS 7 at 80 MHz: -64 dBm + 86 dB + 2 doublings · 3 dB = 28 dB.
        let t = p.min_snr_db(7);
        assert_eq!(t, 28.0);
        // 1/(1 + 9) = 0.1; 1/(1 + 9 · 111) = 1e-3; 1/(1 + 9/111) = 0.925.
        assert!((p.per(7, t, 1500) - 0.1).abs() < 1e-12);
        assert!((p.per(7, t + 3.0, 1500) - 1e-3).abs() < 1e-12);
        assert!((p.per(7, t - 3.0, 1500) - 0.925).abs() < 1e-12);
        assert_eq!(
            (p.per(7, t, 0), p.per(0, -1e6, 1500), p.per(11, 1e6, 1500)),
            (0.0, 1.0, 0.0)
        );
        for mcs in 0..12 {
            for snr in (-10..60).map(f64::from) {
                let x = p.per(mcs, snr, 1500);
                assert!((0.0..=1.0).contains(&x));
                assert!(p.per(mcs, snr + 0.5, 1500) <= x);
                assert!(p.per(mcs, snr, 3000) >= x && p.per(mcs, snr, 200) <= x);
                assert!(mcs == 0 || p.per(mcs - 1, snr, 1500) <= x);
            }
        }
    }

    #[test]
    fn best_mcs_is_monotone_in_snr() {
        for p in [phy(A, G5, 20, 1), phy(Ac, G5, 20, 1), phy(Be, G6, 320, 2)] {
            let picks: Vec<u8> = (-100..800)
                .map(|i| p.best_mcs(f64::from(i) / 10.0))
                .collect();
            assert!(picks.windows(2).all(|w| w[0] <= w[1]));
            // VHT20 1 SS has no MCS 9: the top is MCS 8.
            let top = p.mcs_count() - 1 - u8::from(p.standard == Ac);
            assert_eq!((picks[0], picks[picks.len() - 1]), (0, top));
        }
        // 1 dB above MCS 4's threshold (HT: 39 Mbit/s, 2.3 % PER) beats MCS 3 (26)
        // and MCS 5 (52 Mbit/s, 3 dB below its own threshold: 92.5 % PER).
        let n = phy(N, G5, 20, 1);
        assert_eq!(n.best_mcs(n.min_snr_db(4) + 1.0), 4);
    }

    #[test]
    fn a_station_of_an_older_generation_gets_its_own_phy() {
        let eht = phy(Be, G6, 320, 2);
        // A Wi-Fi 7 station (or a newer one than the AP) keeps the link.
        assert_eq!(eht.for_station(Be), Ok(eht));
        assert_eq!(phy(Ax, G5, 80, 2).for_station(Be), Ok(phy(Ax, G5, 80, 2)));
        // A Wi-Fi 6 station on a 320 MHz EHT link: HE160, 12 MCSs, a 256-MPDU
        // window, the 56 B BlockAck, HE's A-MPDU limit and 32 µs start delay.
        let he = eht.for_station(Ax).unwrap();
        assert_eq!(he, phy(Ax, G6, 160, 2));
        assert_eq!(
            (he.mcs_count(), he.ba_window(), he.block_ack_bytes()),
            (12, 256, 56)
        );
        assert_eq!(he.max_ampdu_bytes(), 6_500_631);
        assert_eq!(he.ack_timeout(), us(16 + 9 + 32));
        // Its best rate at 40 dB: HE160 2 SS MCS 11, 2401.9 Mbit/s, against
        // EHT320's MCS 13 at 4 x 2 SS: 4096-QAM is EHT's.
        assert_eq!(he.best_mcs(60.0), 11);
        assert_eq!(he.data_rate(11).as_bps(), 2_401_911_765);
        assert_eq!(eht.best_mcs(60.0), 13);
        // Narrower links keep their width; 8 streams cap a VHT station at 8,
        // an HT one at 4; HT cannot use 6 GHz at all.
        assert_eq!(phy(Be, G5, 80, 2).for_station(Ac), Ok(phy(Ac, G5, 80, 2)));
        assert_eq!(phy(Ax, G5, 160, 8).for_station(N), Ok(phy(N, G5, 40, 4)));
        assert!(matches!(
            phy(Be, G6, 80, 2).for_station(N),
            Err(PhyError::Band { .. })
        ));
    }
}
