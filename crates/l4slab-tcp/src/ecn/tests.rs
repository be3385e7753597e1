//! Unit tests of the ECN state machines: the reflector table, every machine's
//! edge list (legal edges pass, the rest panic) and each legal edge taken by
//! driving [`EcnState`] through the calls that take it. The protocol
//! timelines are in `crates/l4slab-tcp/tests/ecn.rs`.

use l4slab_cc::EcnCodepoint;
use l4slab_core::{Ecn, Time};

use super::negotiation::{reflected, reflector_ace, Negotiation};
use super::receiver::Echo;
use super::validation::{AckEct, Response, SendEct};
use super::*;
use crate::segment::{AccEcnOption, Flags, Segment};
use crate::stats::EndpointStats;

fn state(ecn: EcnMode) -> (EcnState, EndpointStats) {
    let cfg = TransportConfig {
        ecn,
        ..TransportConfig::default()
    };
    (EcnState::new(&cfg), EndpointStats::default())
}

/// The journal as `machine: from -> to` lines.
fn changes(s: &EcnState) -> Vec<String> {
    s.journal()
        .changes()
        .map(|c| format!("{}: {} -> {}", c.machine, c.from, c.to))
        .collect()
}

/// Every ordered pair of `states` passes `may_enter` exactly when it is in
/// `legal`.
fn check_edges<M: Machine + PartialEq + core::fmt::Debug>(states: &[M], legal: &[(M, M)]) {
    for &a in states {
        for &b in states {
            assert_eq!(
                a.may_enter(b),
                legal.contains(&(a, b)),
                "{} {} -> {}",
                M::NAME,
                a.name(),
                b.name()
            );
        }
    }
}

#[test]
fn reflector_table_matches_linux() {
    // REFERENCES §2.5: Not-ECT 0b010, ECT(1) 0b011, ECT(0) 0b100, CE 0b110.
    assert_eq!(reflector_ace(Ecn::NotEct), 0b010);
    assert_eq!(reflector_ace(Ecn::Ect1), 0b011);
    assert_eq!(reflector_ace(Ecn::Ect0), 0b100);
    assert_eq!(reflector_ace(Ecn::Ce), 0b110);
    for e in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce] {
        assert_eq!(reflected(reflector_ace(e)), Some(e));
    }
    for ace in [0, 1, 5, 7] {
        assert_eq!(reflected(ace), None);
    }
}

#[test]
fn edge_lists_match_the_documentation() {
    use EcnMode::*;
    use Negotiation::*;
    check_edges(
        &[
            Pending,
            SynFallback,
            Agreed(Off),
            Agreed(Classic),
            Agreed(AccEcn),
        ],
        &[
            (Pending, SynFallback),
            (Pending, Agreed(Off)),
            (Pending, Agreed(Classic)),
            (Pending, Agreed(AccEcn)),
            (SynFallback, Agreed(Off)),
            (Agreed(Classic), Agreed(Off)),
            (Agreed(AccEcn), Agreed(Off)),
        ],
    );
    check_edges(
        &[Echo::Idle, Echo::Echoing],
        &[(Echo::Idle, Echo::Echoing), (Echo::Echoing, Echo::Idle)],
    );
    check_edges(
        &[SendEct::On, SendEct::Probing, SendEct::Off],
        &[
            (SendEct::On, SendEct::Probing),
            (SendEct::Probing, SendEct::On),
            (SendEct::On, SendEct::Off),
            (SendEct::Probing, SendEct::Off),
        ],
    );
    check_edges(
        &[Response::AsController, Response::Classic],
        &[(Response::AsController, Response::Classic)],
    );
    check_edges(&[AckEct::On, AckEct::Off], &[(AckEct::On, AckEct::Off)]);
    use EcnValidation::*;
    let all = [
        Unknown,
        Capable,
        Bleached,
        Remarked,
        Blackholed,
        NotNegotiated,
    ];
    let mut legal: Vec<_> = all[1..].iter().map(|&v| (Unknown, v)).collect();
    legal.extend([
        (Capable, Bleached),
        (Capable, Remarked),
        (Remarked, Bleached),
    ]);
    check_edges(&all, &legal);
}

#[test]
#[should_panic(expected = "illegal negotiation transition off -> accecn")]
fn negotiation_cannot_turn_ecn_back_on() {
    let mut n = Checked::new(Negotiation::Agreed(EcnMode::Off));
    Journal::default().record(n.transition(Negotiation::Agreed(EcnMode::AccEcn)));
}

#[test]
#[should_panic(expected = "illegal negotiation transition syn_fallback -> classic")]
fn a_fallen_back_syn_cannot_agree_on_ecn() {
    let (mut s, _) = state(EcnMode::Classic);
    s.syn(false, EcnCodepoint::NotEct);
    s.syn(true, EcnCodepoint::NotEct);
    // The SYN/ACK path never asks for this edge; forcing it must panic.
    s.journal.record(
        s.hs.negotiation
            .transition(Negotiation::Agreed(EcnMode::Classic)),
    );
}

#[test]
#[should_panic(expected = "illegal ece transition echoing -> echoing")]
fn the_ece_latch_has_no_self_loop() {
    let mut e = Checked::new(Echo::Echoing);
    Journal::default().record(e.transition(Echo::Echoing));
}

#[test]
#[should_panic(expected = "illegal send_ect transition off -> on")]
fn ect_once_off_stays_off() {
    let mut e = Checked::new(SendEct::Off);
    Journal::default().record(e.transition(SendEct::On));
}

#[test]
#[should_panic(expected = "illegal response transition classic -> as_controller")]
fn the_classic_fallback_is_final() {
    let mut r = Checked::new(Response::Classic);
    Journal::default().record(r.transition(Response::AsController));
}

#[test]
#[should_panic(expected = "illegal ack_ect transition off -> on")]
fn not_ect_acks_stay_not_ect() {
    let mut a = Checked::new(AckEct::Off);
    Journal::default().record(a.transition(AckEct::On));
}

#[test]
#[should_panic(expected = "illegal validation transition bleached -> capable")]
fn a_verdict_cannot_improve() {
    let (mut s, mut stats) = state(EcnMode::AccEcn);
    s.set_validation(EcnValidation::Bleached, &mut stats);
    s.set_validation(EcnValidation::Capable, &mut stats);
}

#[test]
fn server_agrees_on_accecn_and_gives_it_up_on_a_zero_ace() {
    let (mut s, mut stats) = state(EcnMode::AccEcn);
    let cc = EcnCodepoint::Ect1;
    s.on_syn(
        Flags::AE | Flags::CWR | Flags::ECE,
        Ecn::Ect1,
        cc,
        &mut stats,
    );
    assert_eq!(s.mode(), EcnMode::AccEcn);
    s.syn_ack(cc, &mut stats);
    s.on_handshake_ack(Flags::ACK, true, cc, &mut stats);
    assert_eq!(s.mode(), EcnMode::Off);
    assert_eq!(
        changes(&s),
        [
            "negotiation: pending -> accecn",
            "negotiation: accecn -> off",
            "send_ect: on -> off",
            "validation: unknown -> not_negotiated",
        ]
    );
    assert_eq!(stats.ecn_validation, EcnValidation::NotNegotiated);
}

#[test]
fn server_drops_classic_on_an_ecn_less_repeated_syn() {
    let (mut s, mut stats) = state(EcnMode::Classic);
    let cc = EcnCodepoint::NotEct;
    s.on_syn(Flags::CWR | Flags::ECE, Ecn::NotEct, cc, &mut stats);
    s.on_repeated_syn(Flags::NONE, &mut stats);
    assert_eq!(
        changes(&s),
        [
            "negotiation: pending -> classic",
            "negotiation: classic -> off",
            "validation: unknown -> not_negotiated",
        ]
    );
}

#[test]
fn client_syn_fallback_ends_off_and_blackholed() {
    let (mut s, mut stats) = state(EcnMode::AccEcn);
    let cc = EcnCodepoint::Ect1;
    assert_eq!(
        s.syn(false, cc),
        (Flags::AE | Flags::CWR | Flags::ECE, Ecn::Ect1)
    );
    assert_eq!(s.syn(true, cc), (Flags::NONE, Ecn::NotEct));
    assert_eq!(s.syn(true, cc), (Flags::NONE, Ecn::NotEct));
    s.on_syn_ack(Flags::ACK, Ecn::NotEct, cc, &mut stats);
    assert_eq!(
        changes(&s),
        [
            "negotiation: pending -> syn_fallback",
            "negotiation: syn_fallback -> off",
            "validation: unknown -> blackholed",
        ]
    );
}

#[test]
fn a_third_ect_syn_ack_gives_up_ect() {
    let (mut s, mut stats) = state(EcnMode::AccEcn);
    let cc = EcnCodepoint::Ect0;
    s.on_syn(
        Flags::AE | Flags::CWR | Flags::ECE,
        Ecn::Ect0,
        cc,
        &mut stats,
    );
    assert_eq!(s.syn_ack(cc, &mut stats).1, Ecn::Ect0);
    assert_eq!(s.syn_ack(cc, &mut stats).1, Ecn::Ect0);
    assert_eq!(s.syn_ack(cc, &mut stats).1, Ecn::Ect0);
    assert_eq!(s.syn_ack(cc, &mut stats).1, Ecn::NotEct);
    assert_eq!(
        changes(&s)[1..],
        ["send_ect: on -> off", "validation: unknown -> blackholed"]
    );
}

#[test]
fn the_ece_latch_sets_on_ce_and_clears_on_cwr() {
    let (mut s, mut stats) = state(EcnMode::Classic);
    s.on_syn_ack(
        Flags::ACK | Flags::ECE,
        Ecn::NotEct,
        EcnCodepoint::NotEct,
        &mut stats,
    );
    assert!(s.on_receive(Ecn::Ce, 1, 100, Flags::ACK, false, &mut stats));
    assert!(!s.on_receive(Ecn::Ce, 101, 100, Flags::ACK, false, &mut stats));
    assert!(s.header_flags(Flags::ACK, false, true).contains(Flags::ECE));
    assert!(s.on_receive(
        Ecn::Ect0,
        201,
        100,
        Flags::ACK | Flags::CWR,
        false,
        &mut stats
    ));
    assert!(!s.header_flags(Flags::ACK, false, true).contains(Flags::ECE));
    assert_eq!(
        changes(&s)[1..],
        ["ece: idle -> echoing", "ece: echoing -> idle"]
    );
}

/// A client in AccECN mode past the handshake, with `sent` ECT packets out.
fn accecn_client(sent: u32) -> (EcnState, EndpointStats) {
    let (mut s, mut stats) = state(EcnMode::AccEcn);
    let cc = EcnCodepoint::Ect0;
    s.syn(false, cc);
    s.on_syn_ack(Flags::ACK.with_ace(0b100), Ecn::NotEct, cc, &mut stats);
    for _ in 0..sent {
        let ip = s.ip_field(Kind::NewData, cc);
        s.on_data_sent(ip, 1448, &mut stats);
    }
    (s, stats)
}

fn ack(ts_ms: u64, opt: Option<AccEcnOption>) -> Segment {
    Segment {
        flags: Flags::ACK.with_ace(CEP_INIT as u8),
        ts_val: Time::from_millis(ts_ms),
        accecn: opt,
        ..Segment::default()
    }
}

#[test]
fn a_black_hole_probe_that_finds_no_ect_turns_ect_off() {
    let (mut s, mut stats) = accecn_client(3);
    let cc = EcnCodepoint::Ect0;
    s.on_data_rto();
    assert_eq!(s.ip_field(Kind::Retransmit, cc), Ecn::NotEct);
    // The Not-ECT retransmission is acknowledged; no ECT packet ever was.
    let d = Delivered {
        pkts: 1,
        bytes: 1448,
        ..Delivered::default()
    };
    s.on_ack(&ack(1, None), &d, 1448, cc, &mut stats);
    assert_eq!(s.ip_field(Kind::NewData, cc), Ecn::NotEct);
    assert_eq!(
        changes(&s)[1..],
        [
            "send_ect: on -> probing",
            "validation: unknown -> blackholed",
            "send_ect: probing -> off",
        ]
    );
}

#[test]
fn a_black_hole_probe_answered_by_the_option_turns_ect_back_on() {
    let (mut s, mut stats) = accecn_client(3);
    let cc = EcnCodepoint::Ect0;
    s.on_data_rto();
    let d = Delivered {
        pkts: 1,
        bytes: 1448,
        ..Delivered::default()
    };
    // The peer counted ECT(0) bytes: the first flight got through.
    let opt = AccEcnOption {
        fields: 3,
        e1b: 1,
        ceb: 0,
        e0b: 1 + 3 * 1448,
    };
    s.on_ack(&ack(1, Some(opt)), &d, 1448, cc, &mut stats);
    assert_eq!(s.ip_field(Kind::NewData, cc), Ecn::Ect0);
    assert_eq!(
        changes(&s)[1..],
        ["send_ect: on -> probing", "send_ect: probing -> on"]
    );
    assert_eq!(s.validation(), EcnValidation::Unknown);
}

#[test]
fn re_marking_and_the_explicit_call_take_the_classic_response() {
    // A re-marked ECT(1) SYN reflected as ECT(0) (0b100).
    let (mut s, mut stats) = state(EcnMode::AccEcn);
    let cc = EcnCodepoint::Ect1;
    assert_eq!(s.syn(false, cc).1, Ecn::Ect1);
    s.on_syn_ack(Flags::ACK.with_ace(0b100), Ecn::NotEct, cc, &mut stats);
    assert_eq!(s.ip_field(Kind::NewData, cc), Ecn::Ect0);
    assert_eq!(
        changes(&s)[1..],
        [
            "validation: unknown -> remarked",
            "response: as_controller -> classic"
        ]
    );
    // Asked for explicitly; a second call changes nothing.
    let (mut s, _) = accecn_client(0);
    s.fall_back_to_classic();
    s.fall_back_to_classic();
    assert_eq!(changes(&s)[1..], ["response: as_controller -> classic"]);
}

#[test]
fn data_arriving_a_third_time_turns_ect_acks_off() {
    let (mut s, mut stats) = accecn_client(0);
    let cc = EcnCodepoint::Ect0;
    assert_eq!(s.ip_field(Kind::Control, cc), Ecn::Ect0);
    s.on_receive(Ecn::Ect0, 1, 1000, Flags::ACK, false, &mut stats);
    s.on_receive(Ecn::Ect0, 1, 1000, Flags::ACK, true, &mut stats);
    assert_eq!(s.ip_field(Kind::Control, cc), Ecn::Ect0);
    s.on_receive(Ecn::Ect0, 1, 1000, Flags::ACK, true, &mut stats);
    assert_eq!(s.ip_field(Kind::Control, cc), Ecn::NotEct);
    assert_eq!(changes(&s)[1..], ["ack_ect: on -> off"]);
}

#[test]
fn ten_ect_packets_delivered_make_the_path_capable() {
    let (mut s, mut stats) = accecn_client(10);
    let d = Delivered {
        pkts: 10,
        bytes: 14_480,
        ect_pkts: 10,
        ect_bytes: 14_480,
    };
    let opt = AccEcnOption {
        fields: 3,
        e1b: 1,
        ceb: 0,
        e0b: 1 + 14_480,
    };
    s.on_ack(&ack(1, Some(opt)), &d, 1448, EcnCodepoint::Ect0, &mut stats);
    assert_eq!(changes(&s)[1..], ["validation: unknown -> capable"]);
    assert_eq!(stats.ecn_validation, EcnValidation::Capable);
}

#[test]
fn the_journal_keeps_the_latest_changes() {
    let mut j = Journal::default();
    let mut e = Checked::new(Echo::Idle);
    for _ in 0..(JOURNAL_LEN + 3) {
        let next = if e.get() == Echo::Idle {
            Echo::Echoing
        } else {
            Echo::Idle
        };
        j.record(e.transition(next));
    }
    assert_eq!(j.count(), JOURNAL_LEN as u64 + 3);
    let kept: Vec<_> = j.changes().collect();
    assert_eq!(kept.len(), JOURNAL_LEN);
    // 19 changes: the last one (index 18) goes idle -> echoing.
    assert_eq!(kept[JOURNAL_LEN - 1].to, "echoing");
    assert_eq!(kept[0].from, "echoing");
}
