//! placeholder: implemented by the Reno task.
