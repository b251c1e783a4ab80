//! Reliability suite (see `reliability`): concurrent server rendering of every page kind.

use std::time::Instant;

use serde_json::{json, Value};

use crate::helpers::binary::{self as support, Server, TOKEN};

// ---------------------------------------------------------------------------------------------------------
// Concurrent server rendering
// ---------------------------------------------------------------------------------------------------------

/// Every page kind, rendered by the real server for 8 concurrent clients, 2,000 requests (20,000 in the
/// soak run): every one answers its status with a complete document. (Before the fix about 5% of the
/// session, turn, operation and find pages got no response: their title was read outside the request's
/// reactive owner, "reactive value … already disposed".)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_page_kind_renders_for_8_concurrent_clients_without_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let client = support::client();
    let host = |path: String, body: Value| {
        client
            .post(format!("{}/api/host/sessions/{path}", server.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
    };
    for (turn, m, status) in [
        ("t/1", "op-1", "completed"),
        ("t/1", "op-2", "outcome_unknown"),
        ("t-2", "op-3", "failed"),
    ] {
        let r = host(
            "s%201/mutations".into(),
            json!({"logical_turn_id": turn, "mutation_id": m, "tool": "mcp__dashboards__create"}),
        )
        .await
        .unwrap();
        assert_eq!(r.status().as_u16(), 201);
        for (step, body) in [
            ("intent", json!({"attempt_id": "a1"})),
            ("settlement", json!({"attempt_id": "a1", "status": status})),
        ] {
            let r = host(format!("s%201/mutations/{m}/{step}"), body)
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 200, "{m} {step}");
        }
    }
    let pages: &[(&str, u16, &str)] = &[
        ("/", 200, "Sessions"),
        ("/sessions/s%201", 200, "Session s 1"),
        ("/sessions/s%201/turns/t%2F1", 200, "op-2"),
        ("/operations/op-2", 200, "Operation op-2"),
        ("/find?q=op-3", 200, "op-3"),
        ("/unknowns", 200, "op-2"),
        ("/sessions/nobody", 404, "No session with this id."),
    ];
    let clients = 8;
    let per_client = if support::soak() { 2_500 } else { 250 };
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        // A client of its own (its own connection); bounded, so a request never answered is a failure.
        let client = support::client();
        let base = server.base.clone();
        let pages = pages.to_vec();
        tasks.push(tokio::spawn(async move {
            let mut failures = Vec::new();
            for i in 0..per_client {
                let (path, status, says) = pages[(c + i) % pages.len()];
                match client.get(format!("{base}{path}")).send().await {
                    Ok(r) => {
                        let got = r.status().as_u16();
                        let body = r.text().await.unwrap_or_default();
                        if got != status || !body.contains(says) || !body.contains("</html>") {
                            failures.push(format!("{path}: {got}, {} bytes", body.len()));
                        }
                    }
                    Err(e) => failures.push(format!("{path}: no response: {e:?}")),
                }
            }
            failures
        }));
    }
    let mut failures = Vec::new();
    for t in tasks {
        failures.extend(t.await.expect("client task"));
    }
    let log = server.log();
    println!(
        "figures: concurrent render: {clients} clients, {} requests over {} page kinds, {} failures, {:.1} s",
        clients * per_client,
        pages.len(),
        failures.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{} failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(10)]
    );
    assert!(!log.contains("panicked"), "{log}");
    assert!(!log.contains("ERROR"), "{log}");
}
