//! `outcomes import` against a real server: a JSON Lines file with a malformed line in the middle is imported
//! (the rest is not lost), each result is classified as seed 002 asks, and a re-import changes nothing.

use std::path::PathBuf;

use host::host_client::HostArgs;
use host::import::ImportArgs;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::helpers::{spawn, TestApp, TOKEN};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn args(app: &TestApp) -> ImportArgs {
    ImportArgs {
        host: HostArgs {
            server: app.base.parse().expect("url"),
            host_token: Some(TOKEN.into()),
            data_dir: PathBuf::from("unused"),
        },
        session_prefix: "t-".into(),
        write_tools: vec!["create_issue".into(), "add_label".into()],
        config: Some(fixture("import.toml")),
        files: vec![fixture("transcripts.jsonl")],
    }
}

fn mutation_id(session: &str, turn: &str, position: usize) -> String {
    format!(
        "{:x}",
        Sha256::digest(format!("{session}\u{1f}{turn}\u{1f}{position}").as_bytes())
    )
}

fn record(session: &str, turn: &str, position: usize, tool: &str, status: &str) -> Value {
    json!({"schema": "mutation_outcome/v1", "logical_turn_id": turn,
           "mutation_id": mutation_id(session, turn, position), "tool": tool, "status": status,
           "resource_id": null, "url": null, "title": null})
}

fn with_issue(mut record: Value, number: u32, title: &str) -> Value {
    record["resource_id"] = json!(number.to_string());
    record["url"] = json!(format!(
        "https://code.example.com/acme/shop/issues/{number}"
    ));
    record["title"] = json!(title);
    record
}

async fn outcomes(app: &TestApp, session: &str) -> Value {
    let (status, body) = app
        .get_json(&format!("/api/mutation-outcomes?session_id={session}"))
        .await;
    assert_eq!(status, 200, "{body}");
    body["mutation_outcomes"].clone()
}

#[tokio::test]
async fn import_records_each_write_call_and_a_reimport_changes_nothing() {
    let app = spawn().await;
    let file = fixture("transcripts.jsonl");
    let report = host::import::import(&args(&app)).await.expect("import");
    assert_eq!(report.conversations, 3);
    assert_eq!(report.mutations, 6);
    assert_eq!(
        report.skipped,
        vec![
            format!(
                "{}:2: not JSON: EOF while parsing a list at line 1 column 35",
                file.display()
            ),
            format!("{}:4: message 1: unknown role \"robot\"", file.display()),
        ]
    );
    // 6 × (approve, intent, settle) + 2 metadata attaches.
    assert_eq!(
        (report.tally.created, report.tally.already_present),
        (20, 0)
    );
    assert_eq!(report.tally.failed, Vec::<String>::new());

    let mut timed_out = record("t-conv-a", "turn-2", 0, "create_issue", "outcome_unknown");
    timed_out["reason"] = json!("execution_timeout");
    assert_eq!(
        outcomes(&app, "t-conv-a").await,
        json!([
            with_issue(
                record("t-conv-a", "turn-1", 0, "create_issue", "completed"),
                419,
                "Refund rounds a half cent down"
            ),
            record("t-conv-a", "turn-1", 1, "add_label", "failed"),
            timed_out,
            with_issue(
                record("t-conv-a", "turn-2", 1, "create_issue", "completed"),
                420,
                "Follow-up"
            ),
        ])
    );
    // The reply of the deploy never came: unknown, not failed.
    assert_eq!(
        outcomes(&app, "t-conv-b").await,
        json!([record("t-conv-b", "turn-1", 0, "deploy", "outcome_unknown")])
    );
    // A 503 says nothing about the original call: unknown, without a timeout reason.
    assert_eq!(
        outcomes(&app, "t-conv-c").await,
        json!([record(
            "t-conv-c",
            "turn-1",
            0,
            "create_issue",
            "outcome_unknown"
        )])
    );

    let mut turns_before = Vec::new();
    for session in ["t-conv-a", "t-conv-b", "t-conv-c"] {
        turns_before.push(
            app.get_json(&format!("/api/sessions/{session}/turns"))
                .await
                .1,
        );
    }
    let revisions: Vec<i64> = turns_before[0]["turns"]
        .as_array()
        .expect("turns")
        .iter()
        .map(|t| t["latest_revision"].as_i64().expect("revision"))
        .collect();
    assert_eq!(revisions, vec![5, 5]);

    let again = host::import::import(&args(&app)).await.expect("re-import");
    assert_eq!((again.tally.created, again.tally.already_present), (0, 20));
    assert_eq!(again.tally.failed, Vec::<String>::new());
    assert_eq!(again.skipped.len(), 2);
    for (session, before) in ["t-conv-a", "t-conv-b", "t-conv-c"]
        .iter()
        .zip(&turns_before)
    {
        let after = app
            .get_json(&format!("/api/sessions/{session}/turns"))
            .await
            .1;
        assert_eq!(&after, before, "{session} changed on re-import");
    }
    let (_, sessions) = app.get_json("/api/sessions").await;
    assert_eq!(sessions["sessions"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn import_with_a_wrong_token_fails_and_records_nothing() {
    let app = spawn().await;
    let mut a = args(&app);
    a.host.host_token = Some("wrong".into());
    let e = host::import::import(&a).await.expect_err("401");
    assert!(e.to_string().contains("401 Unauthorized"), "{e}");
    assert_eq!(app.get_json("/api/sessions").await.1["sessions"], json!([]));
}
