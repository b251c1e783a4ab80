//! `/api/openapi.json` is generated from the handlers and matches the routes the server answers.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{spawn, TOKEN};

const ROUTES: &[(&str, &str)] = &[
    ("post", "/api/host/sessions/{session_key}/mutations"),
    (
        "post",
        "/api/host/sessions/{session_key}/mutations/{mutation_id}/intent",
    ),
    (
        "post",
        "/api/host/sessions/{session_key}/mutations/{mutation_id}/settlement",
    ),
    (
        "post",
        "/api/host/sessions/{session_key}/mutations/{mutation_id}/cancellation",
    ),
    (
        "post",
        "/api/host/sessions/{session_key}/mutations/{mutation_id}/reconciliation",
    ),
    (
        "put",
        "/api/host/sessions/{session_key}/mutations/{mutation_id}/metadata",
    ),
    (
        "post",
        "/api/host/sessions/{session_key}/mutations/{mutation_id}/attempts",
    ),
    (
        "post",
        "/api/host/sessions/{session_key}/mutations/{mutation_id}/deadline",
    ),
    ("delete", "/api/host/sessions/{session_key}"),
    ("post", "/api/host/batch"),
    ("get", "/api/host/ledger"),
    ("post", "/api/host/sessions/{session_key}/viewer-links"),
    ("delete", "/api/host/sessions/{session_key}/viewer-links"),
    ("get", "/api/me"),
    ("get", "/api/mutation-outcomes"),
    ("get", "/api/mutation-events"),
    ("get", "/api/run-events"),
    ("get", "/api/sessions"),
    ("get", "/api/sessions/{session_key}/turns"),
    ("get", "/api/sessions/{session_key}/turns/{logical_turn_id}"),
    (
        "get",
        "/api/sessions/{session_key}/turns/{logical_turn_id}/timeline.svg",
    ),
    (
        "get",
        "/api/sessions/{session_key}/turns/{logical_turn_id}/entries",
    ),
    ("get", "/api/operations/{mutation_id}"),
    (
        "get",
        "/api/sessions/{session_key}/mutations/{mutation_id}/history",
    ),
    ("get", "/api/unknowns"),
    ("get", "/api/search"),
    ("get", "/api/sessions/{session_key}/export"),
    (
        "post",
        "/api/sessions/{session_key}/mutations/{mutation_id}/claim",
    ),
    (
        "delete",
        "/api/sessions/{session_key}/mutations/{mutation_id}/claim",
    ),
    (
        "post",
        "/api/sessions/{session_key}/mutations/{mutation_id}/assignment",
    ),
    ("post", "/api/reconciliations"),
    (
        "post",
        "/api/sessions/{session_key}/mutations/{mutation_id}/notes",
    ),
    (
        "post",
        "/api/sessions/{session_key}/mutations/{mutation_id}/reconciliation",
    ),
    ("get", "/api/openapi.json"),
    ("get", "/healthz"),
    ("get", "/metrics"),
];

#[tokio::test]
async fn the_openapi_document_lists_exactly_the_served_routes() {
    let app = spawn().await;
    let (status, doc) = app.get_json("/api/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        doc["openapi"].as_str().map(|v| v.starts_with("3.")),
        Some(true)
    );
    let mut documented: Vec<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, ops)| {
            ops.as_object()
                .unwrap()
                .keys()
                .map(move |m| (m.clone(), path.clone()))
        })
        .collect();
    documented.sort();
    let mut expected: Vec<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    expected.sort();
    assert_eq!(documented, expected);

    // Every documented route is answered by its handler, not by the "no such endpoint" fallback.
    for (method, path) in ROUTES {
        let concrete = path
            .replace("{session_key}", "s")
            .replace("{mutation_id}", "m")
            .replace("{logical_turn_id}", "t");
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        if concrete == "/api/run-events" {
            continue; // a live stream; covered in live.rs
        }
        let r = app
            .client
            .request(method.clone(), format!("{}{concrete}", app.base))
            .bearer_auth(TOKEN)
            .json(&serde_json::json!({}))
            .send()
            .await
            .unwrap();
        let status = r.status();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        assert_ne!(
            status,
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {concrete}"
        );
        assert_ne!(
            body["error"]["code"], "not_found",
            "{method} {concrete} reached no handler"
        );
    }
    let (status, body) = app.get_json("/api/no-such-thing").await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::NOT_FOUND, Some("not_found"))
    );
}

/// The document names the security schemes and which endpoints need which (docs/access.md): the host API
/// the host token only; every read API the host token, a staff token, a sign-in or a viewer cookie (and
/// documents its 401); the operator actions a staff token or a sign-in (and document their 401 and 403);
/// `/healthz` and the document itself nothing.
#[tokio::test]
async fn every_endpoint_names_the_credentials_it_takes() {
    let app = spawn().await;
    let (_, doc) = app.get_json("/api/openapi.json").await;
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["host_token"]["type"], "http");
    assert_eq!(schemes["host_token"]["scheme"], "bearer");
    assert_eq!(schemes["staff_token"]["scheme"], "bearer");
    assert_eq!(
        (
            schemes["sign_in"]["type"].as_str(),
            schemes["sign_in"]["in"].as_str(),
            schemes["sign_in"]["name"].as_str()
        ),
        (Some("apiKey"), Some("cookie"), Some("outcomes_sign_in"))
    );
    assert_eq!(
        (
            schemes["viewer"]["in"].as_str(),
            schemes["viewer"]["name"].as_str()
        ),
        (Some("cookie"), Some("outcomes_viewer"))
    );
    let readers = serde_json::json!([{"host_token": []}, {"staff_token": []}, {"sign_in": []}, {"viewer": []}]);
    for (method, path) in ROUTES {
        let op = &doc["paths"][path][method];
        let expected = if path.starts_with("/api/host/") {
            serde_json::json!([{"host_token": []}])
        } else if *path == "/healthz" || *path == "/api/openapi.json" {
            serde_json::json!([{}])
        } else if *path == "/metrics" {
            // Not a viewer's (docs/api.md "Metrics").
            assert_eq!(
                op["responses"]["401"]["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorBody",
                "{method} {path} documents its 401"
            );
            assert!(
                op["responses"]["200"]["content"]["text/plain"].is_object(),
                "{op}"
            );
            serde_json::json!([{"host_token": []}, {"staff_token": []}, {"sign_in": []}])
        } else if path.ends_with("/notes")
            || path.ends_with("/reconciliation")
            || path.ends_with("/assignment")
            || *path == "/api/reconciliations"
        {
            for status in ["401", "403"] {
                assert_eq!(
                    op["responses"][status]["content"]["application/json"]["schema"]["$ref"],
                    "#/components/schemas/ErrorBody",
                    "{method} {path} documents its {status}"
                );
            }
            assert_eq!(op["tags"], json!(["operator"]), "{method} {path}");
            serde_json::json!([{"staff_token": []}, {"sign_in": []}])
        } else {
            assert_eq!(
                op["responses"]["401"]["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/ErrorBody",
                "{method} {path} documents its 401"
            );
            readers.clone()
        };
        assert_eq!(op["security"], expected, "{method} {path}");
    }
}

/// The request schemas state the rules the server checks (docs/api.md "Request schemas"): the identifier
/// rule, the enums, the cross-field rules of settle and reconcile, the batch bound and the read bounds.
#[tokio::test]
async fn the_request_schemas_state_the_rules_the_server_checks() {
    let app = spawn().await;
    let (status, doc) = app.get_json("/api/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let schemas = &doc["components"]["schemas"];
    let id = &schemas["Identifier"];
    assert_eq!(
        (&id["type"], &id["minLength"], &id["maxLength"]),
        (&json!("string"), &json!(1), &json!(256))
    );
    // The pattern agrees with the ledger's identifier rule on every character class it names.
    let pattern = regex::Regex::new(id["pattern"].as_str().unwrap()).unwrap();
    for s in [
        "a",
        "turn-1",
        "é",
        "\u{200B}x",
        "a\tb",
        "a\nb",
        "\u{7}",
        "x\u{7F}",
        "\u{85}",
        "\u{9F}z",
        "\u{A0}",
    ] {
        assert_eq!(
            pattern.is_match(s),
            ledger::ids::check_identifier(s).is_ok(),
            "{s:?}"
        );
    }
    for body in ["ApproveBody", "AttemptBody", "CancelBody", "DeadlineBody"] {
        assert!(
            schemas[body]["required"]
                .as_array()
                .is_some_and(|r| !r.is_empty()),
            "{body}"
        );
    }
    // settle: `reason` only `execution_timeout`, only with `outcome_unknown`.
    let settle = schemas["SettleBody"]["oneOf"].as_array().unwrap();
    assert_eq!(settle.len(), 2);
    assert_eq!(
        settle[0]["properties"]["status"]["enum"],
        json!(["completed", "failed"])
    );
    assert_eq!(settle[0]["properties"]["reason"], json!({"type": "null"}));
    assert_eq!(
        settle[1]["properties"]["status"]["enum"],
        json!(["outcome_unknown"])
    );
    // reconcile: a provider status agrees with `completed`.
    let reconcile = schemas["ReconcileBody"]["oneOf"].as_array().unwrap();
    for (branch, completed, provider) in [(0, true, "completed"), (1, false, "not_accepted")] {
        let b = &reconcile[branch]["properties"];
        assert_eq!(b["completed"]["enum"], json!([completed]));
        let evidence = &b["evidence"];
        assert_eq!(
            evidence["properties"]["provider_status"]["oneOf"][0]["enum"],
            json!([provider])
        );
        assert_eq!(evidence["properties"]["observed_at"]["format"], "date-time");
        // "Not blank" is exactly what the server checks (`trim` removes Unicode White_Space).
        let not_blank = regex::Regex::new(
            evidence["properties"]["source"]["pattern"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        for s in [
            "a",
            " ",
            "\t\n",
            "\u{85}",
            "\u{A0}",
            "\u{FEFF}",
            "\u{3000}x",
            "\u{200B}",
            "\u{2028}",
        ] {
            assert_eq!(not_blank.is_match(s), !s.trim().is_empty(), "{s:?}");
        }
        // …and holds no U+0000 (docs/api.md "Text a client sends"): the server refuses it with 422.
        for s in ["a\u{0}b", "\u{0}", "\u{0} ", "a\u{0}"] {
            assert!(!not_blank.is_match(s), "{s:?}");
        }
        assert!(not_blank.is_match("line 1\nline 2\u{7}"));
        assert_eq!(
            evidence["required"],
            json!(["source", "reference", "observed_at"])
        );
    }
    // A note's text: 1 to 4096, without U+0000.
    let text = &schemas["NoteBody"]["properties"]["text"];
    assert_eq!(
        (&text["minLength"], &text["maxLength"], &text["pattern"]),
        (&json!(1), &json!(4096), &json!("^[^\\u0000]*$"))
    );
    let operations = &schemas["BatchBody"]["properties"]["operations"];
    assert_eq!(operations["maxItems"], 1000);
    assert_eq!(
        schemas["BatchItem"]["oneOf"].as_array().map(Vec::len),
        Some(8)
    );
    let unknowns = &doc["paths"]["/api/unknowns"]["get"]["parameters"][0]["schema"];
    assert_eq!(
        (&unknowns["minimum"], &unknowns["maximum"]),
        (&json!(1), &json!(1000))
    );
}

/// The query parameters of `path`'s GET as `name → (schema, required)`.
fn query_params(doc: &Value, path: &str) -> std::collections::BTreeMap<String, Value> {
    doc["paths"][path]["get"]["parameters"]
        .as_array()
        .unwrap_or_else(|| panic!("{path} has parameters"))
        .iter()
        .filter(|p| p["in"] == "query")
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_owned(),
                json!({"schema": p["schema"], "required": p["required"]}),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_paged_reads_document_their_parameters_ranges_and_400() {
    let app = spawn().await;
    let (_, doc) = app.get_json("/api/openapi.json").await;
    let opaque = json!({"schema": {"type": "string"}, "required": false});
    let sessions = query_params(&doc, "/api/sessions");
    assert_eq!(
        sessions.keys().collect::<Vec<_>>(),
        [
            "active_after",
            "active_before",
            "after",
            "has_unknown",
            "limit",
            "prefix",
            "tool"
        ]
    );
    assert_eq!(sessions["after"], opaque);
    let time = json!({"schema": {"type": "string", "format": "date-time"}, "required": false});
    assert_eq!(sessions["active_after"], time);
    assert_eq!(sessions["active_before"], time);
    assert_eq!(sessions["limit"]["schema"]["minimum"], 1);
    assert_eq!(sessions["limit"]["schema"]["maximum"], 200);
    assert_eq!(sessions["has_unknown"]["schema"]["type"], "boolean");
    assert_eq!(sessions["tool"]["schema"]["minLength"], 1);
    let unknowns = query_params(&doc, "/api/unknowns");
    assert_eq!(
        unknowns.keys().collect::<Vec<_>>(),
        [
            "after",
            "claim",
            "limit",
            "min_age_secs",
            "order",
            "session_key",
            "session_like",
            "settled_after",
            "settled_before",
            "sort",
            "state",
            "tool",
            "tool_like"
        ]
    );
    assert_eq!(unknowns["after"], opaque);
    assert_eq!(
        unknowns["state"]["schema"]["pattern"],
        "^(all|unknown|in_flight)$"
    );
    assert_eq!(unknowns["limit"]["schema"]["maximum"], 1000);
    assert_eq!(unknowns["min_age_secs"]["schema"]["minimum"], 0);
    assert_eq!(
        unknowns["sort"]["schema"]["pattern"],
        "^(age|tool|session|deadline)$"
    );
    assert_eq!(unknowns["order"]["schema"]["pattern"], "^(asc|desc)$");
    assert_eq!(
        unknowns["claim"]["schema"]["pattern"],
        "^(unclaimed|mine)?$"
    );
    assert_eq!(unknowns["tool_like"]["schema"]["maxLength"], 256);
    assert_eq!(unknowns["settled_after"]["schema"]["format"], "date-time");
    let search = query_params(&doc, "/api/search");
    assert_eq!(search.keys().collect::<Vec<_>>(), ["after", "limit", "q"]);
    assert_eq!(search["q"]["required"], true);
    assert_eq!(search["q"]["schema"]["maxLength"], 256);
    assert_eq!(search["limit"]["schema"]["maximum"], 100);
    let entries = query_params(
        &doc,
        "/api/sessions/{session_key}/turns/{logical_turn_id}/entries",
    );
    assert_eq!(
        entries.keys().collect::<Vec<_>>(),
        ["after", "after_revision", "limit", "order"]
    );
    assert_eq!(entries["after"], opaque);
    assert_eq!(entries["limit"]["schema"]["maximum"], 1000);
    assert_eq!(entries["after_revision"]["schema"]["minimum"], 0);
    let order =
        json!({"schema": {"type": "string", "pattern": "^(oldest|newest)$"}, "required": false});
    assert_eq!(entries["order"], order);
    let turns = query_params(&doc, "/api/sessions/{session_key}/turns");
    assert_eq!(
        turns.keys().collect::<Vec<_>>(),
        ["after", "limit", "order"]
    );
    assert_eq!(turns["after"], opaque);
    assert_eq!(turns["order"], order);
    assert_eq!(turns["limit"]["schema"]["minimum"], 1);
    assert_eq!(turns["limit"]["schema"]["maximum"], 1000);
    for path in [
        "/api/sessions",
        "/api/unknowns",
        "/api/search",
        "/api/sessions/{session_key}/turns",
        "/api/sessions/{session_key}/turns/{logical_turn_id}/entries",
    ] {
        assert!(
            doc["paths"][path]["get"]["responses"]["400"].is_object(),
            "{path} documents its 400"
        );
    }
    assert!(
        doc["paths"]["/api/sessions/{session_key}/turns/{logical_turn_id}/entries"]["get"]
            ["responses"]["409"]
            .is_object()
    );
}

/// Every operation has an operationId of its own (OpenAPI requires it unique; generators such as
/// openapi-typescript, which builds clients/typescript's types, refuse a document that repeats one).
/// (Before: the host's and the operator's reconciliation were both `reconcile`.)
#[tokio::test]
async fn every_operation_id_is_unique() {
    let app = spawn().await;
    let (_, doc) = app.get_json("/api/openapi.json").await;
    let mut ids: Vec<String> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|ops| ops.as_object().unwrap().values())
        .map(|op| {
            op["operationId"]
                .as_str()
                .expect("an operationId")
                .to_owned()
        })
        .collect();
    let all = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), all, "{ids:?}");
    assert!(ids.contains(&"reconcile".to_owned()));
    assert!(ids.contains(&"reconcile_as_staff".to_owned()));
}
