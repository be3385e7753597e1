//! The emulator's plans: what one emulator process is asked to do, as one
//! typed value (JSON) instead of a command line.
//!
//! The options are declared once, on the Python side that users see
//! (`python/l4slab/emu_plan.py`: every field's name and default;
//! `python/l4slab/emu_cli.py`: the `l4slab emu` options and their help). It
//! builds a [`Plan`] and starts the emulator with it (`l4slab-emu PLAN`,
//! [`crate::cli`]). This side takes no defaults: every field must be there,
//! and a field it does not know is an error (`deny_unknown_fields`), so a plan
//! written by another version fails at once, naming the field, instead of
//! running with something silently ignored.
//!
//! The JSON is externally tagged by sub-command, one Rust type each:
//!
//! ```text
//! {"shell": ShellOptions}     run COMMAND behind an emulated bottleneck (crate::shell)
//! {"run": RunPlan}            a scenario with kernel TCP (l4slab run --backend emu)
//! {"validate": ValidatePlan}  resolve a scenario and check it against the kernel (no root)
//! {"cleanup": {}}             remove what killed runs left behind
//! {"reap": ReapPlan}          (internal: the crash reaper, crate::netns)
//! {"ping": PingPlan}, {"tcp_send": TcpSendPlan}, {"tcp_sink": TcpSinkPlan}
//!                             small probes run inside the namespaces (crate::probe)
//! {"ecn_reflect": EcnReflectPlan}, {"ecn_check": EcnCheckPlan}
//!                             the ECN path check's two ends (crate::ecncheck)
//! ```

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::shell::{RunTuning, ShellOptions};
use crate::EmuError;

/// One emulator process's work.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Plan {
    Shell(ShellOptions),
    Run(RunPlan),
    Validate(ValidatePlan),
    Cleanup(CleanupPlan),
    Reap(ReapPlan),
    Ping(PingPlan),
    TcpSend(TcpSendPlan),
    TcpSink(TcpSinkPlan),
    EcnReflect(EcnReflectPlan),
    EcnCheck(EcnCheckPlan),
}

/// `l4slab run SCENARIO --backend emu`: writes the run's results to `out`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RunPlan {
    pub scenario: PathBuf,
    /// Scenario overrides (`KEY=VALUE`), as `l4slab run --set`.
    pub sets: Vec<String>,
    /// `None`: the scenario's own seed.
    pub seed: Option<u64>,
    /// The results as JSON (what `l4slab._native.run` returns).
    pub out: PathBuf,
    /// A scenario with `pcap = true` writes `DIR/pcap/*.pcap`.
    pub pcap_dir: Option<PathBuf>,
    pub tuning: RunTuning,
}

/// Resolve a scenario as the emulator runs it; prints it, with the
/// emulator's notes, as JSON.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ValidatePlan {
    pub scenario: PathBuf,
    pub sets: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CleanupPlan {}

/// The crash reaper of the run that wrote `state_file` ([`crate::netns`]).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReapPlan {
    pub state_file: PathBuf,
}

/// ICMP echoes to `addr` ([`crate::probe::ping`]); prints JSON.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PingPlan {
    pub addr: Ipv4Addr,
    pub count: u32,
    pub interval_ms: u64,
    /// Payload bytes (at most 1400 are sent).
    pub size: usize,
}

/// A kernel TCP sender with `TCP_INFO` samples ([`crate::probe::tcp_send`]); prints JSON.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpSendPlan {
    pub addr: SocketAddr,
    pub cc: String,
    pub seconds: f64,
    pub sample_ms: u64,
}

/// A kernel TCP receiver ([`crate::probe::tcp_sink`]); prints JSON.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpSinkPlan {
    pub port: u16,
}

/// The ECN check's reflector: UDP on `port`, TCP on `port + 1`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EcnReflectPlan {
    pub port: u16,
}

/// The ECN check against a reflector at `addr` (UDP `port`) and `tcp_addr`
/// (TCP `port + 1`); prints the JSON report, exit code 0 when the path is fit
/// for L4S, 3 when not.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EcnCheckPlan {
    pub addr: Ipv4Addr,
    pub tcp_addr: Ipv4Addr,
    pub port: u16,
    /// Probes per codepoint and direction.
    pub count: u32,
}

impl Plan {
    /// Read a plan from its JSON text.
    ///
    /// # Errors
    /// [`EmuError::Plan`] naming the field (its path in the plan) and what is
    /// wrong with it.
    pub fn from_json(text: &str) -> Result<Plan, EmuError> {
        let de = &mut serde_json::Deserializer::from_str(text);
        let plan: Plan = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let at = if path == "." {
                String::new()
            } else {
                format!("{path}: ")
            };
            EmuError::Plan(format!("{at}{}", e.into_inner()))
        })?;
        plan.check()?;
        Ok(plan)
    }

    /// The plan as JSON text (what [`Plan::from_json`] reads).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a plan serializes")
    }

    /// The sub-command's name, as in the JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Plan::Shell(_) => "shell",
            Plan::Run(_) => "run",
            Plan::Validate(_) => "validate",
            Plan::Cleanup(_) => "cleanup",
            Plan::Reap(_) => "reap",
            Plan::Ping(_) => "ping",
            Plan::TcpSend(_) => "tcp_send",
            Plan::TcpSink(_) => "tcp_sink",
            Plan::EcnReflect(_) => "ecn_reflect",
            Plan::EcnCheck(_) => "ecn_check",
        }
    }

    /// The limits of values a type alone does not bound.
    fn check(&self) -> Result<(), EmuError> {
        let bad = |msg: &str| Err(EmuError::Plan(format!("{}.{msg}", self.name())));
        match self {
            Plan::Shell(ShellOptions { tuning, .. }) | Plan::Run(RunPlan { tuning, .. })
                if !(576..=9000).contains(&tuning.mtu) =>
            {
                bad("tuning.mtu: must be between 576 and 9000")
            }
            // The echo sequence number is 16 bits.
            Plan::Ping(p) if p.count > u32::from(u16::MAX) + 1 => bad("count: at most 65536"),
            // The ECN check uses UDP `port` and TCP `port + 1`.
            Plan::EcnReflect(EcnReflectPlan { port })
            | Plan::EcnCheck(EcnCheckPlan { port, .. })
                if *port == u16::MAX =>
            {
                bad("port: the ECN check also uses port + 1; use at most 65534")
            }
            _ => Ok(()),
        }
    }
}

/// A [`l4slab_core::Dur`] as whole microseconds (`spin_us`, `min_sleep_us`).
pub(crate) mod micros {
    use l4slab_core::Dur;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Dur, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_nanos() / 1000)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        u64::deserialize(d).map(Dur::from_micros)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuning() -> serde_json::Value {
        serde_json::json!({"mtu": 1500, "spin_us": 0, "pin": true, "realtime": true,
            "malformed": "pass", "coalesce": true, "min_sleep_us": 25})
    }

    #[test]
    fn a_shell_plan_reads_into_the_shell_options() {
        let plan = serde_json::json!({"shell": {"command": ["true"], "sets": ["bottleneck.rate=1Mbit"],
            "server_command": null, "report": "/tmp/r.json", "cc": "reno", "pcap_dir": null,
            "pcap_limit": null, "quiet": true, "live": "/tmp/live.json", "tuning": tuning()}});
        let Plan::Shell(o) = Plan::from_json(&plan.to_string()).unwrap() else {
            panic!("not a shell plan")
        };
        assert_eq!(o.command, ["true"]);
        assert_eq!(o.cc, "reno");
        assert_eq!(
            o.live.as_deref(),
            Some(std::path::Path::new("/tmp/live.json"))
        );
        assert_eq!(o.tuning.min_sleep, l4slab_core::Dur::from_micros(25));
        assert_eq!(o.tuning.malformed, crate::forwarder::MalformedPolicy::Pass);
        assert!(
            o.tuning.reaper.is_none(),
            "the reaper is the entry's, not the plan's"
        );
        // What it writes it reads back the same.
        let back: serde_json::Value = serde_json::from_str(&Plan::Shell(o).to_json()).unwrap();
        assert_eq!(back, plan);
    }

    #[test]
    fn a_bad_plan_names_the_field() {
        let err = |v: serde_json::Value| Plan::from_json(&v.to_string()).unwrap_err().to_string();
        let mut t = tuning();
        t["spin"] = 5.into();
        let e = err(serde_json::json!({"ping": {"addr": "10.77.0.2", "count": 1,
            "interval_ms": 1, "size": 56, "sizee": 1}}));
        assert!(e.contains("unknown field `sizee`, expected one of"), "{e}");
        let e = err(
            serde_json::json!({"run": {"scenario": "a.toml", "sets": [], "seed": null,
            "out": "o.json", "pcap_dir": null, "tuning": t}}),
        );
        assert!(
            e.contains("run.tuning.spin: unknown field `spin`, expected one of `mtu`"),
            "{e}"
        );
        let e = err(serde_json::json!({"tcp_sink": {}}));
        assert!(e.contains("missing field `port`"), "{e}");
        let e = err(serde_json::json!({"tcp_sink": {"port": 70000}}));
        assert!(
            e.contains("tcp_sink.port: invalid value: integer `70000`"),
            "{e}"
        );
        let e = err(serde_json::json!({"shel": {}}));
        assert!(
            e.contains("unknown variant `shel`, expected one of `shell`"),
            "{e}"
        );
        let e = err(serde_json::json!({"ecn_reflect": {"port": 65535}}));
        assert!(
            e.contains("ecn_reflect.port: the ECN check also uses port + 1"),
            "{e}"
        );
        assert!(
            err(serde_json::json!({"cleanup": {}, "reap": {}})).starts_with("bad emulator plan")
        );
    }

    #[test]
    fn the_reapers_plan_reads_back() {
        let p = Plan::Reap(ReapPlan {
            state_file: "/run/l4slab-emu/1.json".into(),
        });
        assert!(matches!(Plan::from_json(&p.to_json()), Ok(Plan::Reap(_))));
    }
}
