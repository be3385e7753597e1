//! Long-format time series, recorded columnar at the source (DESIGN.md §5):
//! one row per (time, series, key, value). Names are interned, so a row costs
//! 24 bytes and recording never allocates once the columns have grown. Both
//! backends record into one (`series.parquet`); the bottleneck runtime
//! (`l4slab_bottleneck`) writes its queue series here in both.

use std::collections::BTreeMap;

#[derive(Default, Debug)]
pub struct SeriesStore {
    names: Vec<String>,
    index: BTreeMap<String, u32>,
    pub t_s: Vec<f64>,
    pub series: Vec<u32>,
    pub key: Vec<u32>,
    pub value: Vec<f64>,
}

/// An interned name (series or key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Name(u32);

impl Name {
    /// The code of this name in the `series` and `key` columns.
    pub fn code(self) -> u32 {
        self.0
    }
}

impl SeriesStore {
    pub fn intern(&mut self, s: &str) -> Name {
        if let Some(&i) = self.index.get(s) {
            return Name(i);
        }
        let i = self.names.len() as u32;
        self.names.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        Name(i)
    }

    pub fn push(&mut self, t_s: f64, series: Name, key: Name, value: f64) {
        self.t_s.push(t_s);
        self.series.push(series.0);
        self.key.push(key.0);
        self.value.push(value);
    }

    pub fn name(&self, i: u32) -> &str {
        &self.names[i as usize]
    }

    /// Every interned name, indexed by its code (the `series` and `key` columns).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Every row as `(t_s, series, key, value)`, in the order pushed.
    pub fn rows(&self) -> impl Iterator<Item = (f64, &str, &str, f64)> + '_ {
        (0..self.len()).map(|i| {
            (
                self.t_s[i],
                self.name(self.series[i]),
                self.name(self.key[i]),
                self.value[i],
            )
        })
    }

    pub fn len(&self) -> usize {
        self.t_s.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_s.is_empty()
    }
}
