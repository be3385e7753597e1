//! `web_browse`'s `connections`: the default stays one multiplexed flow;
//! `K` HTTP/1.1 connections become `K` flows of one session.

mod common;

use common::base_with;
use l4slab_app::web_browse::{Connections, SessionConnection};
use l4slab_scenario::AppSpec;

fn browse(f: &l4slab_scenario::Flow) -> &l4slab_app::web_browse::WebBrowseConfig {
    let AppSpec::WebBrowse(b) = &f.app else {
        panic!("{}: {:?}", f.name, f.app)
    };
    b
}

#[test]
fn multiplexed_is_the_default_and_one_flow() {
    for sets in [
        &["flows[0].name=b", "flows[0].app=web_browse"][..],
        &[
            "flows[0].name=b",
            "flows[0].app={ kind = \"web_browse\", connections = \"multiplexed\" }",
        ],
    ] {
        let s = base_with(sets);
        assert_eq!(s.flows.len(), 1);
        let b = browse(&s.flows[0]);
        assert_eq!(
            (b.connections, &b.connection),
            (Connections::Multiplexed, &None)
        );
        // Left out of the resolved scenario, as before the key existed.
        let json = serde_json::to_value(&s.flows[0].app).unwrap();
        assert!(json.get("connections").is_none(), "{json}");
    }
}

#[test]
fn k_connections_become_k_flows_of_one_session() {
    let s = base_with(&[
        "flows[0].name=b",
        "flows[0].start=1s",
        "flows[0].app={ kind = \"web_browse\", connections = 3 }",
    ]);
    let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["b.0", "b.1", "b.2"]);
    for (j, f) in s.flows.iter().enumerate() {
        let b = browse(f);
        assert_eq!(b.connections, Connections::Http1(3));
        assert_eq!(
            b.connection,
            Some(SessionConnection {
                session: "b".into(),
                index: j as u32
            })
        );
        assert_eq!(f.start, s.flows[0].start);
    }
    let json = serde_json::to_value(&s.flows[1].app).unwrap();
    assert_eq!(json["connections"], 3);
    assert_eq!(json["connection"]["index"], 1);
    // One connection keeps the flow's name.
    let one = base_with(&[
        "flows[0].name=b",
        "flows[0].app={ kind = \"web_browse\", connections = 1 }",
    ]);
    assert_eq!(one.flows.len(), 1);
    assert_eq!(one.flows[0].name, "b");
    assert_eq!(browse(&one.flows[0]).connection.as_ref().unwrap().index, 0);
}
