//! Flow control, RFC 9000 §4: credit the peer gives us (send side) and
//! credit we give the peer (receive side), for one stream or the whole
//! connection; the same two structs serve MAX_STREAM_DATA and MAX_DATA.
//!
//! Simplification: the application consumes received data as soon as it is
//! in order (stream content is not simulated), so the receive window slides
//! with in-order delivery; a window update is sent when less than half of
//! the window is left (the usual quinn/quiche policy; §4.2 leaves it open).

/// The peer's limit on what we may send (§4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SendCredit {
    /// The largest offset (or sum of offsets) the peer allows.
    pub max: u64,
    /// What we have used of it.
    pub used: u64,
    /// The limit at which we last sent (STREAM_)DATA_BLOCKED.
    pub blocked_at: Option<u64>,
}

impl SendCredit {
    pub fn new(max: u64) -> Self {
        SendCredit {
            max,
            used: 0,
            blocked_at: None,
        }
    }

    pub fn available(&self) -> u64 {
        self.max.saturating_sub(self.used)
    }

    /// §4.1: "A receiver MUST ignore any MAX_STREAM_DATA or MAX_DATA frames
    /// that do not increase flow control limits."
    pub fn raise(&mut self, max: u64) {
        self.max = self.max.max(max);
    }

    /// §4.1: "A sender SHOULD send a STREAM_DATA_BLOCKED or DATA_BLOCKED
    /// frame ... when it wishes to send data but is unable to do so due to
    /// stream-level flow control"; once per limit.
    pub fn needs_blocked(&self) -> bool {
        self.available() == 0 && self.blocked_at != Some(self.max)
    }
}

/// Our limit on what the peer may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecvWindow {
    /// Window size from the config.
    pub window: u64,
    /// The limit advertised so far.
    pub max: u64,
    /// Highest offset (or sum) received: must stay <= max (§4.1).
    pub received: u64,
    /// Consumed by the application.
    pub consumed: u64,
    /// A MAX_(STREAM_)DATA with the current limit must be (re)sent.
    pub update_pending: bool,
}

impl RecvWindow {
    pub fn new(window: u64) -> Self {
        RecvWindow {
            window,
            max: window,
            ..Default::default()
        }
    }

    /// Data up to `end` arrived. Errors (a FLOW_CONTROL_ERROR, §4.1) if it
    /// passes the advertised limit.
    pub fn on_received(&mut self, end: u64) -> Result<(), u64> {
        if end > self.max {
            return Err(self.max);
        }
        self.received = self.received.max(end);
        Ok(())
    }

    /// The application consumed up to `consumed`; slide the window once half
    /// of it is used.
    pub fn on_consumed(&mut self, consumed: u64) {
        self.consumed = self.consumed.max(consumed);
        if self.max - self.consumed.min(self.max) < self.window / 2 {
            self.max = self.consumed + self.window;
            self.update_pending = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_slides_at_half() {
        let mut w = RecvWindow::new(1000);
        assert!(w.on_received(1000).is_ok());
        assert_eq!(w.on_received(1001), Err(1000));
        w.on_consumed(400);
        assert!(!w.update_pending);
        w.on_consumed(600);
        assert!(w.update_pending);
        assert_eq!(w.max, 1600);
        let mut c = SendCredit::new(10);
        c.used = 10;
        assert!(c.needs_blocked());
        c.blocked_at = Some(10);
        assert!(!c.needs_blocked());
        c.raise(5);
        assert_eq!(c.max, 10);
    }
}
