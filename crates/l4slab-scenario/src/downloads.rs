//! `summary.downloads`: each download's parts (one flow per connection, the
//! scenario lists them together, in order) summed up from their flows'
//! entries ([`l4slab_app::download::summarize`]). Both backends write it
//! from their `summary.flows`.

use serde_json::{Map, Value};

use crate::{AppSpec, Scenario};

/// Each download of `scn` by name, from `flows` (`summary.flows`, every
/// part's entry present); empty when the scenario has no download.
///
/// # Panics
/// When a part's flow has no entry in `flows`.
pub fn downloads_json(scn: &Scenario, flows: &Map<String, Value>) -> Map<String, Value> {
    let mut downloads = Map::new();
    let mut parts: Vec<(&str, &Value)> = Vec::new();
    for (i, spec) in scn.flows.iter().enumerate() {
        let AppSpec::Download(d) = &spec.app else {
            continue;
        };
        let Some(part) = &d.part else { continue };
        parts.push((spec.name.as_str(), &flows[&spec.name]));
        let last = scn.flows.get(i + 1).is_none_or(|next| match &next.app {
            AppSpec::Download(n) => n.part.as_ref().map(|p| &p.download) != Some(&part.download),
            _ => true,
        });
        if last {
            let s = l4slab_app::download::summarize(d.size, spec.start, &parts);
            downloads.insert(part.download.clone(), s);
            parts.clear();
        }
    }
    downloads
}
