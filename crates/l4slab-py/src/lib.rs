//! `l4slab._native`: the Python face of the Rust core. Conversion and error
//! mapping only — no logic lives here.

use std::path::PathBuf;

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use l4slab_core::pkttrace::{flag_names, PacketChunk, PktEvent, Side, ECN_NAMES};
use l4slab_core::Time;
use l4slab_scenario::cost::{self, Backend, Cost, Limits};
use l4slab_scenario::{parse_with, ParseOptions, Scenario};
use l4slab_sim::{RunOptions, SeriesStore, SimError};

create_exception!(
    _native,
    ScenarioError,
    PyValueError,
    "The scenario is invalid; the message names the key path and a valid example."
);
create_exception!(
    _native,
    SimulationError,
    PyRuntimeError,
    "The simulation could not run to completion."
);

fn parse(
    text: &str,
    source: &str,
    overrides: Vec<String>,
    trace_dirs: Vec<PathBuf>,
) -> PyResult<Scenario> {
    let opts = ParseOptions {
        known_cc: l4slab_sim::cc_names().to_vec(),
        trace_dirs,
    };
    parse_with(text, source, &overrides, &opts).map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// `"sim"` or `"emu"`: whose limits (`l4slab_scenario::cost`) apply.
fn backend(name: &str) -> PyResult<Backend> {
    match name {
        "sim" => Ok(Backend::Sim),
        "emu" => Ok(Backend::Emu),
        other => Err(PyValueError::new_err(format!(
            "unknown backend {other:?}; choose 'sim' or 'emu'"
        ))),
    }
}

/// The run's estimated cost, or a `ScenarioError` past the limits.
fn check_limits(scn: &Scenario, backend: Backend) -> PyResult<Cost> {
    cost::check(scn, backend).map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// Parse and validate a scenario; returns the resolved scenario as JSON text.
/// With `limits` (`"sim"` or `"emu"`), a scenario past that backend's limits
/// is a `ScenarioError` too.
#[pyfunction]
#[pyo3(signature = (text, source, overrides, trace_dirs=Vec::new(), limits=None))]
fn validate(
    text: &str,
    source: &str,
    overrides: Vec<String>,
    trace_dirs: Vec<PathBuf>,
    limits: Option<&str>,
) -> PyResult<String> {
    let scn = parse(text, source, overrides, trace_dirs)?;
    if let Some(name) = limits {
        check_limits(&scn, backend(name)?)?;
    }
    serde_json::to_string_pretty(&scn).map_err(|e| SimulationError::new_err(e.to_string()))
}

/// The estimated cost of a run (`l4slab_scenario::cost`) and the limits of
/// `backend`, as a dict (`_native.pyi`: `RunCost`).
#[pyfunction]
#[pyo3(signature = (text, source, overrides, trace_dirs=Vec::new(), backend="sim"))]
fn estimate<'py>(
    py: Python<'py>,
    text: &str,
    source: &str,
    overrides: Vec<String>,
    trace_dirs: Vec<PathBuf>,
    backend: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let limits = Limits::for_backend(self::backend(backend)?);
    let scn = parse(text, source, overrides, trace_dirs)?;
    let c = Cost::estimate(&scn);
    let d = PyDict::new(py);
    d.set_item("flows", c.flows)?;
    d.set_item("stations", c.stations)?;
    d.set_item("calls", c.calls)?;
    d.set_item("call_bytes", c.call_bytes)?;
    d.set_item("probes", c.probes)?;
    d.set_item("samples", c.samples)?;
    d.set_item("rows_per_sample", c.rows_per_sample)?;
    d.set_item("series_rows", c.series_rows)?;
    d.set_item("trace_rows", c.trace_rows)?;
    d.set_item("pcap_records", c.pcap_records)?;
    let l = PyDict::new(py);
    l.set_item("flows", limits.flows)?;
    l.set_item("stations", limits.stations)?;
    l.set_item("call_bytes", limits.call_bytes)?;
    l.set_item("probes", limits.probes)?;
    l.set_item("series_rows", limits.series_rows)?;
    l.set_item("trace_rows", limits.trace_rows)?;
    l.set_item("pcap_records", limits.pcap_records)?;
    d.set_item("limits", l)?;
    Ok(d)
}

/// Run a scenario in the simulator. See `_native.pyi` for the returned dict
/// and the packet chunks `packets_sink` receives.
///
/// The GIL is released while the simulation runs (`allow_threads`), so other
/// Python threads, e.g. a sweep's other cells, run meanwhile. It is taken
/// back only to check for Ctrl-C and call `progress` (every
/// `PROGRESS_EVERY` events of the engine) and to hand `packets_sink` a chunk
/// (every 65,536 trace rows).
#[pyfunction]
// The Python keyword arguments, one Rust parameter each.
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (text, source, overrides, seed=None, progress=None, packets_sink=None, trace_dirs=Vec::new(), allow_large=false, pcap_dir=None))]
fn run<'py>(
    py: Python<'py>,
    text: &str,
    source: &str,
    overrides: Vec<String>,
    seed: Option<u64>,
    progress: Option<PyObject>,
    packets_sink: Option<PyObject>,
    trace_dirs: Vec<PathBuf>,
    allow_large: bool,
    pcap_dir: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let scn = parse(text, source, overrides, trace_dirs)?;
    if !allow_large {
        check_limits(&scn, Backend::Sim)?;
    }
    let duration_s = scn.duration.as_secs_f64();
    let mut py_err: Option<PyErr> = None;
    let mut cb = |now: Time| -> bool {
        Python::with_gil(|py| {
            // Let Ctrl-C interrupt long runs even without a progress callback.
            if let Err(e) = py.check_signals() {
                py_err = Some(e);
                return false;
            }
            if let Some(p) = &progress {
                if let Err(e) = p.call1(py, (now.as_secs_f64(), duration_s)) {
                    py_err = Some(e);
                    return false;
                }
            }
            true
        })
    };
    let names = packet_names(py)?.unbind();
    // Without a sink the chunks are returned in `packets`.
    let mut kept: Vec<Py<PyDict>> = Vec::new();
    let mut sink_err: Option<PyErr> = None;
    let mut on_chunk = |c: &PacketChunk<'_>| -> bool {
        Python::with_gil(|py| {
            let handed =
                packet_chunk(py, c, names.bind(py)).and_then(|chunk| match &packets_sink {
                    Some(sink) => sink.call1(py, (chunk,)).map(drop),
                    None => {
                        kept.push(chunk.unbind());
                        Ok(())
                    }
                });
            match handed {
                Ok(()) => true,
                Err(e) => {
                    sink_err = Some(e);
                    false
                }
            }
        })
    };
    let opts = RunOptions { seed, pcap_dir };
    let out = py.allow_threads(|| l4slab_sim::run_streaming(&scn, &opts, &mut cb, &mut on_chunk));
    let out = match out {
        Ok(out) => out,
        Err(SimError::Cancelled(_)) if py_err.is_some() || sink_err.is_some() => {
            return Err(py_err.or(sink_err).expect("checked"))
        }
        Err(e) => return Err(SimulationError::new_err(e.to_string())),
    };
    let d = PyDict::new(py);
    let summary = serde_json::to_string_pretty(&out.summary)
        .map_err(|e| SimulationError::new_err(e.to_string()))?;
    d.set_item("summary_json", summary)?;
    d.set_item("series", series_buffers(py, &out.series)?)?;
    drop(out.series);
    if scn.packet_trace && packets_sink.is_none() {
        d.set_item("packets", PyList::new(py, kept)?)?;
    } else {
        d.set_item("packets", py.None())?;
    }
    let st = PyDict::new(py);
    st.set_item("events", out.stats.events)?;
    st.set_item("packets", out.stats.packets)?;
    st.set_item("sim_s", out.stats.sim_time.as_secs_f64())?;
    d.set_item("stats", st)?;
    Ok(d)
}

/// The time series as one `bytes` per column (native byte order: `t_s` and
/// `value` float64, `series` and `key` uint32 codes into `names`), for
/// `numpy.frombuffer`: no Python object per row (`_types.SeriesBuffers`).
fn series_buffers<'py>(py: Python<'py>, s: &SeriesStore) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("rows", s.len())?;
    d.set_item("t_s", words(py, &s.t_s, f64::to_ne_bytes)?)?;
    d.set_item("series", words(py, &s.series, u32::to_ne_bytes)?)?;
    d.set_item("key", words(py, &s.key, u32::to_ne_bytes)?)?;
    d.set_item("value", words(py, &s.value, f64::to_ne_bytes)?)?;
    d.set_item("names", PyList::new(py, s.names())?)?;
    Ok(d)
}

/// `values` as `bytes`, `N` bytes each (`to_bytes`).
fn words<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    values: &[T],
    to_bytes: impl Fn(T) -> [u8; N],
) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, values.len() * N, |buf| {
        for (dst, &v) in buf.chunks_exact_mut(N).zip(values) {
            dst.copy_from_slice(&to_bytes(v));
        }
        Ok(())
    })
}

/// The names behind the packet trace's codes, indexed by code.
fn packet_names(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("event", PyList::new(py, PktEvent::NAMES)?)?;
    d.set_item("side", PyList::new(py, Side::NAMES)?)?;
    d.set_item("ecn", PyList::new(py, ECN_NAMES)?)?;
    d.set_item("flags", PyList::new(py, flag_names())?)?;
    Ok(d)
}

/// One chunk of the packet trace as `bytes` per column (native byte order;
/// integers as int64, the columns' type in packets.parquet; `sojourn_us`
/// float64, NaN where null), for
/// `numpy.frombuffer` / `pyarrow.Array.from_buffers`: one copy per column,
/// no Python object per row.
fn packet_chunk<'py>(
    py: Python<'py>,
    c: &PacketChunk<'_>,
    names: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("rows", c.rows())?;
    d.set_item("t_s", words(py, c.t_s, f64::to_ne_bytes)?)?;
    d.set_item("event", PyBytes::new(py, c.event))?;
    d.set_item("flow", words(py, c.flow, |v| i64::from(v).to_ne_bytes())?)?;
    d.set_item("side", PyBytes::new(py, c.side))?;
    d.set_item("seq", words(py, c.seq, |v| (v as i64).to_ne_bytes())?)?;
    d.set_item("len", words(py, c.len, |v| i64::from(v).to_ne_bytes())?)?;
    d.set_item("ack", words(py, c.ack, |v| (v as i64).to_ne_bytes())?)?;
    d.set_item("ecn", PyBytes::new(py, c.ecn))?;
    d.set_item(
        "retransmission",
        words(py, c.retransmission, |v| [u8::from(v)])?,
    )?;
    d.set_item("wnd", words(py, c.wnd, |v| (v as i64).to_ne_bytes())?)?;
    let first = c.sack_offsets[0];
    d.set_item(
        "sack_offsets",
        words(py, c.sack_offsets, |o| {
            // A chunk's SACK text is far below 2 GiB (CHUNK_ROWS rows).
            ((o - first) as i32).to_ne_bytes()
        })?,
    )?;
    d.set_item("sack", PyBytes::new(py, c.sack))?;
    d.set_item("flags", PyBytes::new(py, c.flags))?;
    d.set_item("pkt_id", words(py, c.pkt_id, |v| (v as i64).to_ne_bytes())?)?;
    d.set_item("queue", PyBytes::new(py, c.queue))?;
    d.set_item("subqueue", PyBytes::new(py, c.subqueue))?;
    d.set_item("sojourn_us", words(py, c.sojourn_us, f64::to_ne_bytes)?)?;
    // The run's queue names: code 0 is none (null), code i + 1 is the i-th name.
    let names = names.copy()?;
    fn coded<N: AsRef<str>>(list: &[N]) -> Vec<Option<&str>> {
        let mut v = vec![None];
        v.extend(list.iter().map(|n| Some(n.as_ref())));
        v
    }
    names.set_item("queue", PyList::new(py, coded(&c.names.queues))?)?;
    names.set_item("subqueue", PyList::new(py, coded(&c.names.subqueues))?)?;
    d.set_item("names", names)?;
    Ok(d)
}

/// In a worker process: the kernel sends it SIGTERM when the thread that
/// started it exits, however it exits (`prctl(PR_SET_PDEATHSIG)`, prctl(2);
/// `l4slab.sweep.pool`). Linux only.
#[cfg(target_os = "linux")]
#[pyfunction]
fn die_with_parent() -> PyResult<()> {
    l4slab_sys::process::set_parent_death_signal(l4slab_sys::signal::SIGTERM)
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(format!("prctl(PR_SET_PDEATHSIG): {e}")))
}

#[pyfunction]
fn cc_names() -> Vec<&'static str> {
    l4slab_sim::cc_names().to_vec()
}

/// The parameters a scenario can set for the congestion control `kind` (a
/// `cc_names()` name; `l4slab_cc::param`), one dict each (`_native.pyi`:
/// `CcParam`). An unknown kind is a `ValueError`.
#[pyfunction]
fn cc_params<'py>(py: Python<'py>, kind: &str) -> PyResult<Bound<'py, PyList>> {
    let Some(params) = l4slab_cc::param::params(kind) else {
        return Err(PyValueError::new_err(format!(
            "unknown congestion control '{kind}'; choose one of: {}",
            l4slab_cc::CC_NAMES.join(", ")
        )));
    };
    param_dicts(py, params)
}

/// The parameters a scenario can set for the queue discipline `kind` (a
/// `qdisc_names()` name; `l4slab_qdisc::param`), one dict each
/// (`_native.pyi`: `QdiscParam`). An unknown kind is a `ValueError`.
#[pyfunction]
fn qdisc_params<'py>(py: Python<'py>, kind: &str) -> PyResult<Bound<'py, PyList>> {
    let Some(params) = l4slab_qdisc::param::params(kind) else {
        return Err(PyValueError::new_err(format!(
            "unknown qdisc '{kind}'; choose one of: {}",
            l4slab_qdisc::param::QDISC_NAMES.join(", ")
        )));
    };
    param_dicts(py, params)
}

/// One dict per declaration (`l4slab_core::param::Param`), as `_types.ModelParam`.
fn param_dicts<'py>(
    py: Python<'py>,
    params: &[l4slab_core::param::Param],
) -> PyResult<Bound<'py, PyList>> {
    use l4slab_core::param::{show_dur, Kind, ParamValue};
    fn obj<'py, T: IntoPyObject<'py>>(py: Python<'py>, x: T) -> PyResult<PyObject> {
        pyo3::IntoPyObjectExt::into_py_any(x, py)
    }
    let list = PyList::empty(py);
    for p in params {
        let d = PyDict::new(py);
        d.set_item("name", p.name)?;
        d.set_item("aliases", p.aliases.to_vec())?;
        d.set_item("linux", p.linux)?;
        d.set_item("kind", p.kind.name())?;
        d.set_item("range", p.kind.range())?;
        let none = || py.None();
        let (min, max, min_exclusive, max_exclusive): (PyObject, PyObject, bool, bool) =
            match p.kind {
                Kind::Int { min, max } => (obj(py, min)?, obj(py, max)?, false, false),
                Kind::Fraction {
                    min,
                    max,
                    min_open,
                    max_open,
                    ..
                } => (obj(py, min)?, obj(py, max)?, min_open, max_open),
                Kind::Number { above } => (obj(py, above)?, none(), true, false),
                Kind::Gain { scale, max, .. } => (
                    obj(py, 1.0 / f64::from(scale))?,
                    obj(py, max)?,
                    false,
                    false,
                ),
                Kind::Hz { zero_ok, .. } | Kind::Duration { zero_ok } => {
                    (obj(py, 0.0f64)?, none(), !zero_ok, false)
                }
                Kind::Limit => (obj(py, 1i64)?, obj(py, u32::MAX)?, false, false),
                Kind::Bytes { min, max } | Kind::Size { min, max } => {
                    (obj(py, min)?, obj(py, max)?, false, false)
                }
                Kind::Rate => (obj(py, 0u64)?, none(), true, false),
                Kind::Percent { min, max } => (obj(py, min)?, obj(py, max)?, false, false),
                Kind::Flag | Kind::Choice(_) | Kind::Custom(_) => (none(), none(), false, false),
            };
        d.set_item("min", min)?;
        d.set_item("max", max)?;
        d.set_item("min_exclusive", min_exclusive)?;
        d.set_item("max_exclusive", max_exclusive)?;
        d.set_item(
            "zero_allowed",
            matches!(p.kind, Kind::Gain { zero_ok: true, .. }),
        )?;
        match p.kind {
            Kind::Choice(names) => d.set_item("choices", names.to_vec())?,
            _ => d.set_item("choices", none())?,
        }
        match p.default {
            ParamValue::Int(i) => d.set_item("default", i)?,
            ParamValue::Num(x) => d.set_item("default", x)?,
            ParamValue::Dur(t) => d.set_item("default", show_dur(t))?,
            ParamValue::Flag(b) => d.set_item("default", b)?,
            ParamValue::Choice(c) => d.set_item("default", c)?,
            ParamValue::Rate(r) => d.set_item("default", r.to_string())?,
            ParamValue::Unset { .. } => d.set_item("default", none())?,
        }
        d.set_item("example", p.example())?;
        d.set_item("source", p.source)?;
        d.set_item("doc", p.doc)?;
        list.append(d)?;
    }
    Ok(list)
}

/// A value with a unit, read as scenario files read it (`l4slab_scenario::units`):
/// `(unit, number)` in the base unit, `"s"` for a duration (`"25ms"`), `"bps"`
/// for a rate (`"20Mbit"`), `"bytes"` for a size (`"10MB"`), `"pkt"` for
/// packets (`"100pkt"`), `"fraction"` for a percentage (`"1%"`); `None` for
/// anything else. A sweep's parameter columns use it.
#[pyfunction]
fn quantity(text: &str) -> Option<(&'static str, f64)> {
    use l4slab_scenario::units::{
        parse_buffer, parse_duration, parse_fraction, parse_rate, parse_size, Buffer,
    };
    if let Ok(d) = parse_duration(text) {
        Some(("s", d.as_secs_f64()))
    } else if let Ok(r) = parse_rate(text) {
        Some(("bps", r.as_bps() as f64))
    } else if let Ok(b) = parse_size(text) {
        Some(("bytes", b as f64))
    } else if let Ok(Buffer::Packets(n)) = parse_buffer(text) {
        Some(("pkt", n as f64))
    } else if let Ok(f) = parse_fraction(text) {
        Some(("fraction", f))
    } else {
        None
    }
}

#[pyfunction]
fn qdisc_names() -> Vec<&'static str> {
    l4slab_sim::QDISC_NAMES.to_vec()
}

/// The scenario's `ecn_rewrite` values (`l4slab emu --ecn-path`), in the
/// order the documentation lists them.
#[pyfunction]
fn ecn_rewrite_names() -> Vec<&'static str> {
    l4slab_link::EcnRewrite::NAMES.to_vec()
}

/// Run the emulator process's entry (`l4slab-emu PLAN`) in this process;
/// returns its exit code. `self_cmd` runs the emulator again (for its crash
/// reaper). The GIL is released for the whole call, which lasts as long as
/// the emulated run: call it from a process of its own (`l4slab._emu`).
#[cfg(target_os = "linux")]
#[pyfunction]
#[pyo3(signature = (argv, self_cmd))]
fn emu_main(py: Python<'_>, argv: Vec<String>, self_cmd: Vec<String>) -> i32 {
    py.allow_threads(|| l4slab_emu::cli::main(&argv, &self_cmd))
}

/// Read an emulator plan (`l4slab_emu::plan::Plan`) as the emulator would,
/// without running it; returns its sub-command's name. A plan the emulator
/// would refuse raises `ValueError` with the emulator's message.
#[cfg(target_os = "linux")]
#[pyfunction]
fn emu_plan_check(plan: &str) -> PyResult<&'static str> {
    l4slab_emu::plan::Plan::from_json(plan)
        .map(|p| p.name())
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Forwards a real endpoint's lines to a Python callable and checks for
/// Ctrl-C between slices of the run (the run itself holds no GIL).
#[cfg(target_os = "linux")]
struct PyObserver {
    on_line: PyObject,
    error: Option<PyErr>,
    /// Set when another callback of the run failed (`serve`'s
    /// `on_session`, where a SIGTERM may land): the run stops.
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

#[cfg(target_os = "linux")]
impl l4slab_sendserve::Observer for PyObserver {
    fn line(&mut self, line: &str) {
        Python::with_gil(|py| {
            // After Ctrl-C or SIGTERM the run still says what it did (its
            // summary, the server's counters); after any other error of the
            // callback, nothing more.
            if self
                .error
                .as_ref()
                .is_some_and(|e| !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py))
            {
                return;
            }
            if let Err(e) = self.on_line.call1(py, (line,)) {
                self.error.get_or_insert(e);
            }
        });
    }

    fn keep_going(&mut self) -> bool {
        if self.error.is_some() || self.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        Python::with_gil(|py| match py.check_signals() {
            Ok(()) => true,
            Err(e) => {
                self.error = Some(e);
                false
            }
        })
    }
}

#[cfg(target_os = "linux")]
fn opt_string(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<String>> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => Ok(Some(v.str()?.to_string())),
        _ => Ok(None),
    }
}

#[cfg(target_os = "linux")]
fn endpoint_error(e: l4slab_sendserve::RunError) -> PyErr {
    match e {
        l4slab_sendserve::RunError::Input(i) => PyValueError::new_err(i.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// `l4slab send`: run a sending endpoint (options as `l4slab send` takes
/// them, as strings; missing ones default); `on_line(str)` receives the
/// live lines. Returns the result as JSON text (`summary_json`, `series`,
/// `stats`, `failure`, `interrupted`). A bad option raises `ValueError`
/// naming it; a Ctrl-C ends the run early, reports, and returns with
/// `interrupted` set.
#[cfg(target_os = "linux")]
#[pyfunction]
fn send_run(py: Python<'_>, options: &Bound<'_, PyDict>, on_line: PyObject) -> PyResult<String> {
    let mut o = l4slab_sendserve::SendOptions::default();
    if let Some(v) = opt_string(options, "target")? {
        o.target = v;
    }
    o.port = match opt_string(options, "port")? {
        Some(p) => Some(p.parse().map_err(|_| {
            PyValueError::new_err(format!("--port: {p:?} is not a port; write e.g. 4433"))
        })?),
        None => None,
    };
    for (key, slot) in [
        ("cc", &mut o.cc),
        ("app", &mut o.app),
        ("duration", &mut o.duration),
        ("interval", &mut o.interval),
        ("connect_timeout", &mut o.connect_timeout),
    ] {
        if let Some(v) = opt_string(options, key)? {
            *slot = v;
        }
    }
    o.ecn = opt_string(options, "ecn")?;
    if let Some(v) = options.get_item("ecn_validation")? {
        o.ecn_validation = v.extract()?;
    }
    if let Some(v) = options.get_item("reverse")? {
        o.reverse = v.extract()?;
    }
    if let Some(v) = options.get_item("parallel")? {
        // A negative count is as wrong as 0 or 1000: run_send names -P.
        o.parallel = v.extract::<i64>()?.try_into().unwrap_or(0);
    }
    o.bind = opt_string(options, "bind")?;
    let mut obs = PyObserver {
        on_line,
        error: None,
        stop: Default::default(),
    };
    let r = py.allow_threads(|| l4slab_sendserve::run_send(&o, &mut obs));
    let mut v = r.map_err(endpoint_error)?;
    if let Some(e) = obs.error.take() {
        if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
            return Err(e);
        }
        v["interrupted"] = true.into();
    }
    Ok(v.to_string())
}

/// `l4slab serve`: run the server until Ctrl-C, `time_limit`, or (`once`)
/// its first session's end; `on_line(str)` receives the live lines and
/// `on_session(str)` each session's result (JSON text: `summary_json`,
/// `series`, `stats`) as it ends. Returns the whole run as JSON text.
#[cfg(target_os = "linux")]
#[pyfunction]
fn serve_run(
    py: Python<'_>,
    options: &Bound<'_, PyDict>,
    on_line: PyObject,
    on_session: PyObject,
) -> PyResult<String> {
    let mut o = l4slab_sendserve::ServeOptions {
        bind: opt_string(options, "bind")?,
        time_limit: opt_string(options, "time_limit")?,
        ..l4slab_sendserve::ServeOptions::default()
    };
    if let Some(p) = options.get_item("port")? {
        if !p.is_none() {
            o.port = p.extract()?;
        }
    }
    if let Some(n) = options.get_item("max_sessions")? {
        if !n.is_none() {
            o.max_sessions = n.extract()?;
        }
    }
    if let Some(n) = options.get_item("max_per_address")? {
        if !n.is_none() {
            o.max_per_address = n.extract()?;
        }
    }
    if let Some(b) = options.get_item("once")? {
        o.once = b.is_truthy()?;
    }
    for (key, slot) in [
        ("interval", &mut o.interval),
        ("idle_timeout", &mut o.idle_timeout),
        ("handshake_timeout", &mut o.handshake_timeout),
    ] {
        if let Some(v) = opt_string(options, key)? {
            *slot = v;
        }
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut obs = PyObserver {
        on_line,
        error: None,
        stop: stop.clone(),
    };
    let mut session_error: Option<PyErr> = None;
    let r = py.allow_threads(|| {
        l4slab_sendserve::run_serve(&o, &mut obs, &mut |s| {
            Python::with_gil(|py| {
                if let Err(e) = on_session.call1(py, (s.to_string(),)) {
                    session_error.get_or_insert(e);
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                }
            });
        })
    });
    let mut v = r.map_err(endpoint_error)?;
    if let Some(e) = session_error {
        // Ctrl-C or SIGTERM while a session's report was saved: an
        // interrupted run, reported as such; anything else is an error.
        if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
            return Err(e);
        }
        obs.error.get_or_insert(e);
    }
    if let Some(e) = obs.error.take() {
        if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
            return Err(e);
        }
        v["interrupted"] = true.into();
    }
    Ok(v.to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", l4slab_sim::TOOL_VERSION)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(die_with_parent, m)?)?;
    m.add_function(wrap_pyfunction!(quantity, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(cc_names, m)?)?;
    m.add_function(wrap_pyfunction!(cc_params, m)?)?;
    m.add_function(wrap_pyfunction!(qdisc_names, m)?)?;
    m.add_function(wrap_pyfunction!(qdisc_params, m)?)?;
    m.add_function(wrap_pyfunction!(ecn_rewrite_names, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(emu_main, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(emu_plan_check, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(send_run, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(serve_run, m)?)?;
    Ok(())
}
