//! `l4slab._native`: the Python face of the Rust core. Conversion and error
//! mapping only — no logic lives here.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use l4slab_core::Time;
use l4slab_scenario::{parse_with, ParseOptions, Scenario};
use l4slab_sim::{RunOptions, SimError};

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

fn parse(text: &str, source: &str, overrides: Vec<String>) -> PyResult<Scenario> {
    let opts = ParseOptions {
        known_cc: l4slab_sim::cc_names().to_vec(),
    };
    parse_with(text, source, &overrides, &opts).map_err(|e| ScenarioError::new_err(e.to_string()))
}

/// Parse and validate a scenario; returns the resolved scenario as JSON text.
#[pyfunction]
#[pyo3(signature = (text, source, overrides))]
fn validate(text: &str, source: &str, overrides: Vec<String>) -> PyResult<String> {
    let scn = parse(text, source, overrides)?;
    serde_json::to_string_pretty(&scn).map_err(|e| SimulationError::new_err(e.to_string()))
}

/// Run a scenario in the simulator. See `_native.pyi` for the returned dict.
#[pyfunction]
#[pyo3(signature = (text, source, overrides, seed=None, progress=None))]
fn run<'py>(
    py: Python<'py>,
    text: &str,
    source: &str,
    overrides: Vec<String>,
    seed: Option<u64>,
    progress: Option<PyObject>,
) -> PyResult<Bound<'py, PyDict>> {
    let scn = parse(text, source, overrides)?;
    let duration_s = scn.duration.as_secs_f64();
    let mut py_err: Option<PyErr> = None;
    let mut cb = |now: Time| -> bool {
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
    };
    let out = match l4slab_sim::run(&scn, &RunOptions { seed }, &mut cb) {
        Ok(out) => out,
        Err(SimError::Cancelled(_)) if py_err.is_some() => return Err(py_err.expect("checked")),
        Err(e) => return Err(SimulationError::new_err(e.to_string())),
    };
    let d = PyDict::new(py);
    let summary = serde_json::to_string_pretty(&out.summary)
        .map_err(|e| SimulationError::new_err(e.to_string()))?;
    d.set_item("summary_json", summary)?;
    let s = &out.series;
    let series = PyDict::new(py);
    series.set_item("t_s", PyList::new(py, &s.t_s)?)?;
    series.set_item(
        "series",
        PyList::new(py, s.series.iter().map(|&i| s.name(i)))?,
    )?;
    series.set_item("key", PyList::new(py, s.key.iter().map(|&i| s.name(i)))?)?;
    series.set_item("value", PyList::new(py, &s.value)?)?;
    d.set_item("series", series)?;
    match &out.packets {
        None => d.set_item("packets", py.None())?,
        Some(p) => {
            let c = PyDict::new(py);
            c.set_item("t_s", PyList::new(py, &p.t_s)?)?;
            c.set_item("event", PyList::new(py, &p.event)?)?;
            c.set_item("flow", PyList::new(py, &p.flow)?)?;
            c.set_item("side", PyList::new(py, &p.side)?)?;
            c.set_item("seq", PyList::new(py, &p.seq)?)?;
            c.set_item("len", PyList::new(py, &p.len)?)?;
            c.set_item("ack", PyList::new(py, &p.ack)?)?;
            c.set_item("ecn", PyList::new(py, &p.ecn)?)?;
            c.set_item("retransmission", PyList::new(py, &p.retransmission)?)?;
            c.set_item("wnd", PyList::new(py, &p.wnd)?)?;
            c.set_item("sack", PyList::new(py, &p.sack)?)?;
            c.set_item("flags", PyList::new(py, &p.flags)?)?;
            d.set_item("packets", c)?;
        }
    }
    let st = PyDict::new(py);
    st.set_item("events", out.stats.events)?;
    st.set_item("packets", out.stats.packets)?;
    st.set_item("sim_s", out.stats.sim_time.as_secs_f64())?;
    d.set_item("stats", st)?;
    Ok(d)
}

#[pyfunction]
fn cc_names() -> Vec<&'static str> {
    l4slab_sim::cc_names().to_vec()
}

#[pyfunction]
fn qdisc_names() -> Vec<&'static str> {
    l4slab_sim::QDISC_NAMES.to_vec()
}

/// The scenario's `ecn_rewrite` values (`l4slab emu --ecn-path`), in the
/// order the documentation lists them.
#[pyfunction]
fn ecn_rewrite_names() -> Vec<&'static str> {
    l4slab_link::EcnRewrite::ALL.map(|r| r.name()).to_vec()
}

/// Run the emulator's command line (`l4slab-emu ARGS`) in this process;
/// returns its exit code. `self_cmd` runs the emulator again (for its crash
/// reaper). The GIL is released for the whole call, which lasts as long as
/// the emulated run: call it from a process of its own (`l4slab._emu`).
#[cfg(target_os = "linux")]
#[pyfunction]
#[pyo3(signature = (argv, self_cmd))]
fn emu_main(py: Python<'_>, argv: Vec<String>, self_cmd: Vec<String>) -> i32 {
    py.allow_threads(|| l4slab_emu::cli::main(&argv, &self_cmd))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", l4slab_sim::TOOL_VERSION)?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("SimulationError", m.py().get_type::<SimulationError>())?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(cc_names, m)?)?;
    m.add_function(wrap_pyfunction!(qdisc_names, m)?)?;
    m.add_function(wrap_pyfunction!(ecn_rewrite_names, m)?)?;
    #[cfg(target_os = "linux")]
    m.add_function(wrap_pyfunction!(emu_main, m)?)?;
    Ok(())
}
