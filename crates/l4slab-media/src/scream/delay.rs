//! One-way delay and queue delay (S2 §"Detecting Increased Queue Delay",
//! RFC 6817; SC `estimateOwd`, `markAcked`): the base delay, `qdelay`, its
//! average `qdelay_avg`, and with `reduce_jitter` the jitter scale
//! `ref_wnd_delay_scale`.

use l4slab_core::Time;

use super::{
    Scream, BASE_DELAY_INTERVAL, BASE_DELAY_SLOTS, QDELAY_AVG_G, QDELAY_DEV_AVG_G,
    QDELAY_DEV_THRESHOLD, QDELAY_MIN_MAX_AVG_G,
};

/// Minimum one-way delay over a history of slots (SC `estimateOwd`,
/// `getBaseOwd`; RFC 6817 §2.4.2 base delays). One-way delays are signed
/// nanoseconds: the clocks may be offset.
#[derive(Clone, Debug)]
pub(super) struct BaseDelay {
    current: i64,
    slots: [i64; BASE_DELAY_SLOTS],
    next: usize,
    slots_min: i64,
    last_roll: Option<Time>,
}

impl BaseDelay {
    pub(super) fn new() -> Self {
        BaseDelay {
            current: i64::MAX,
            slots: [i64::MAX; BASE_DELAY_SLOTS],
            next: 0,
            slots_min: i64::MAX,
            last_roll: None,
        }
    }

    /// SC `estimateOwd`: `baseOwd = min(baseOwd, ackedOwd)`; every 10 s the
    /// current minimum goes into the history and a new one starts.
    fn update(&mut self, now: Time, owd: i64) {
        self.current = self.current.min(owd);
        let last = *self.last_roll.get_or_insert(now);
        if now.saturating_since(last) >= BASE_DELAY_INTERVAL {
            self.slots[self.next] = self.current;
            self.next = (self.next + 1) % BASE_DELAY_SLOTS;
            self.current = i64::MAX;
            self.slots_min = self.slots.iter().copied().min().unwrap_or(i64::MAX);
            self.last_roll = Some(now);
        }
    }

    /// SC `getBaseOwd`: `min(baseOwd, baseOwdHistMin)`.
    fn base(&self) -> i64 {
        self.current.min(self.slots_min)
    }
}

impl Scream {
    /// S2 §"Detecting Increased Queue Delay", per acknowledged packet.
    pub(super) fn on_owd_sample(&mut self, now: Time, sent: Time, arrival: Time) {
        let owd = arrival.as_nanos() as i64 - sent.as_nanos() as i64;
        self.base.update(now, owd);
        // qdelay as RFC 6817: one-way delay minus the base delay.
        self.qdelay = (owd - self.base.base()).max(0) as f64 * 1e-9;
        if self.cfg.reduce_jitter {
            // qdelay_max_avg = min(qdelay_target, max(qdelay, qdelay_max_avg))
            // qdelay_min_avg = min(qdelay, qdelay_min_avg)
            let target = self.cfg.qdelay_target.as_secs_f64();
            self.qdelay_max_avg = target.min(self.qdelay.max(self.qdelay_max_avg));
            self.qdelay_min_avg = self.qdelay.min(self.qdelay_min_avg);
        }
    }

    /// S2 `calculate_ref_wnd_delay_scale()`.
    fn update_delay_scale(&mut self) {
        self.qdelay_max_avg *= 1.0 - QDELAY_MIN_MAX_AVG_G;
        if self.qdelay_min_avg == f64::MAX {
            self.qdelay_min_avg = self.qdelay_max_avg;
        }
        self.qdelay_min_avg = self.qdelay_min_avg * (1.0 - QDELAY_MIN_MAX_AVG_G)
            + self.qdelay_max_avg * QDELAY_MIN_MAX_AVG_G;
        self.qdelay_dev_avg = (1.0 - QDELAY_DEV_AVG_G) * self.qdelay_dev_avg
            + QDELAY_DEV_AVG_G * (self.qdelay_max_avg - self.qdelay_min_avg);
        self.ref_wnd_delay_scale =
            (1.0 - self.qdelay_dev_avg / QDELAY_DEV_THRESHOLD).clamp(0.0, 1.0);
    }

    /// S2 §"Detecting Increased Queue Delay": `if (now -
    /// last_update_qdelay_avg_time >= min(virtual_rtt, s_rtt))`.
    pub(super) fn maybe_update_qdelay_avg(&mut self, now: Time) {
        let interval = self.cfg.virtual_rtt.min(self.srtt());
        if !Self::elapsed(now, self.last_qdelay_avg_update, interval) {
            return;
        }
        if self.qdelay < self.qdelay_avg {
            // "if (qdelay < qdelay_avg) qdelay_avg = qdelay"
            self.qdelay_avg = self.qdelay;
        } else {
            // qdelay_avg = QDELAY_AVG_G * qdelay + (1.0 - QDELAY_AVG_G) * qdelay_avg
            self.qdelay_avg = QDELAY_AVG_G * self.qdelay + (1.0 - QDELAY_AVG_G) * self.qdelay_avg;
        }
        if self.cfg.reduce_jitter {
            self.update_delay_scale();
        }
        self.last_qdelay_avg_update = Some(now);
    }
}
