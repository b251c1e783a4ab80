//! `docs/contracts/mutation_outcome_v1.json` is the published contract (seed 000: "holds the limits and
//! ledger-entry → record examples. Consumers should validate against it"). Every example is a test, the
//! code's limits equal the file's, and every record the projection can produce, from any host metadata,
//! validates against the file's `record_schema` and stays within the limits.

use std::sync::LazyLock;

use jsonschema::Validator;
use ledger::credential::REDACTION_MARKER;
use ledger::limits;
use ledger::projection::{project, HostMetadata, LedgerEntry};
use ledger::sanitize::{sanitize_resource_id, sanitize_title, sanitize_url};
use ledger::wire::{LedgerStatus, MutationOutcome, Reason};
use proptest::prelude::*;
use serde_json::Value;

const CONTRACT_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../docs/contracts/mutation_outcome_v1.json"
);

static CONTRACT: LazyLock<Value> = LazyLock::new(|| {
    let text = std::fs::read_to_string(CONTRACT_PATH)
        .unwrap_or_else(|e| panic!("read {CONTRACT_PATH}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {CONTRACT_PATH}: {e}"))
});

static RECORD_SCHEMA: LazyLock<Validator> = LazyLock::new(|| {
    jsonschema::draft202012::new(&CONTRACT["record_schema"])
        .unwrap_or_else(|e| panic!("record_schema must compile: {e}"))
});

fn examples() -> &'static [Value] {
    CONTRACT["examples"]
        .as_array()
        .map(Vec::as_slice)
        .expect("examples is a list")
}

/// Every schema error of `record`, one per line; empty when it validates.
fn schema_errors(record: &Value) -> String {
    RECORD_SCHEMA
        .iter_errors(record)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect::<Vec<_>>()
        .join("\n")
}

fn to_value(record: &MutationOutcome) -> Value {
    serde_json::to_value(record).expect("a record serialises")
}

#[test]
fn every_contract_example_projects_exactly_to_its_record() {
    for example in examples() {
        let name = example["name"].as_str().expect("example has a name");
        let entry: LedgerEntry = serde_json::from_value(example["ledger_entry"].clone())
            .unwrap_or_else(|e| panic!("{name}: ledger_entry is a LedgerEntry: {e}"));
        let projected = project(&entry).map(|r| to_value(&r)).unwrap_or(Value::Null);
        assert_eq!(projected, example["record"], "example {name}");
    }
}

#[test]
fn every_contract_example_record_validates_against_the_record_schema() {
    for example in examples() {
        let record = &example["record"];
        if !record.is_null() {
            let errors = schema_errors(record);
            assert!(errors.is_empty(), "{}: {errors}", example["name"]);
        }
    }
}

#[test]
fn contract_has_at_least_30_uniquely_named_examples() {
    let names: std::collections::BTreeSet<&str> = examples()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names.len(), examples().len(), "names are unique");
    assert!(names.len() >= 30, "{} examples", names.len());
}

#[test]
fn contract_examples_cover_every_row_of_the_status_table() {
    let mut seen = std::collections::BTreeSet::new();
    for example in examples() {
        let entry = &example["ledger_entry"];
        let published = example["record"]["status"]
            .as_str()
            .unwrap_or("not published");
        seen.insert(format!(
            "{} intent={} -> {published}",
            entry["status"].as_str().unwrap_or_default(),
            entry["intent_recorded"]
        ));
    }
    for row in [
        "completed intent=true -> completed",
        "failed intent=true -> failed",
        "outcome_unknown intent=true -> outcome_unknown",
        "execution_started intent=true -> outcome_unknown",
        "approved intent=true -> not_executed",
        "approved intent=false -> not published",
    ] {
        assert!(seen.contains(row), "no example for {row}");
    }
}

#[test]
fn code_limits_equal_the_contract_limits() {
    let file = &CONTRACT["limits"];
    let code = [
        ("resource_id_max_bytes", limits::RESOURCE_ID_MAX_BYTES),
        ("url_max_bytes", limits::URL_MAX_BYTES),
        ("title_max_bytes", limits::TITLE_MAX_BYTES),
        ("record_max_bytes", limits::RECORD_MAX_BYTES),
        ("identifier_max_bytes", limits::IDENTIFIER_MAX_BYTES),
    ];
    for (key, value) in code {
        assert_eq!(file[key].as_u64(), Some(value as u64), "limits.{key}");
    }
    assert_eq!(file.as_object().map(|o| o.len()), Some(code.len()));
    assert_eq!(
        CONTRACT["redaction_marker"].as_str(),
        Some(REDACTION_MARKER)
    );
}

#[test]
fn record_schema_is_a_valid_draft_2020_12_schema() {
    if let Err(e) = jsonschema::meta::validate(&CONTRACT["record_schema"]) {
        panic!(
            "record_schema is not a valid draft 2020-12 schema: {e} at {}",
            e.instance_path
        );
    }
}

/// Turns a valid record into one the contract forbids.
type Spoil = fn(&mut Value);

#[test]
fn record_schema_rejects_records_outside_the_contract() {
    let good: Value = serde_json::json!({
        "schema": "mutation_outcome/v1", "logical_turn_id": "t", "mutation_id": "m",
        "tool": "x", "status": "completed", "resource_id": null, "url": null, "title": null
    });
    assert!(schema_errors(&good).is_empty());
    let broken: [(&str, Spoil); 11] = [
        ("missing resource_id key", |r| {
            r.as_object_mut().map(|o| o.remove("resource_id"));
        }),
        ("extra key", |r| r["extra"] = Value::Bool(true)),
        ("other schema", |r| {
            r["schema"] = "mutation_outcome/v2".into()
        }),
        ("ledger status", |r| {
            r["status"] = "execution_started".into()
        }),
        ("execution_timeout with completed", |r| {
            r["reason"] = "execution_timeout".into()
        }),
        ("pre_dispatch_deadline with outcome_unknown", |r| {
            r["status"] = "outcome_unknown".into();
            r["reason"] = "pre_dispatch_deadline".into();
        }),
        ("reason null", |r| r["reason"] = Value::Null),
        ("url with query", |r| {
            r["url"] = "https://example.com/a?q=1".into()
        }),
        ("url of another scheme", |r| {
            r["url"] = "ftp://example.com/a".into()
        }),
        ("title with a control character", |r| {
            r["title"] = "a\tb".into()
        }),
        ("title over 512 characters", |r| {
            r["title"] = "a".repeat(513).into()
        }),
    ];
    for (what, spoil) in broken {
        let mut record = good.clone();
        spoil(&mut record);
        assert!(!schema_errors(&record).is_empty(), "schema accepts {what}");
    }
    for (reason, status) in [
        ("execution_timeout", "outcome_unknown"),
        ("pre_dispatch_deadline", "not_executed"),
    ] {
        let mut record = good.clone();
        record["status"] = status.into();
        record["reason"] = reason.into();
        assert!(schema_errors(&record).is_empty(), "{reason} with {status}");
    }
}

/// Every `pattern` of `node`, with where it is.
fn patterns(node: &Value, at: String, out: &mut Vec<(String, String)>) {
    match node {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("pattern", Value::String(p)) => out.push((at.clone(), p.clone())),
                    _ => patterns(value, format!("{at}/{key}"), out),
                }
            }
        }
        Value::Array(items) => {
            for (i, value) in items.iter().enumerate() {
                patterns(value, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn record_schema_patterns_use_only_the_portable_regex_subset() {
    // JSON Schema 2020-12 recommends characters, [..] and [^..] classes with ranges, quantifiers, ^ and $,
    // groups and |; no \p{..}, \s, \d, \w or lookarounds, which validators read differently (Python's
    // `re` has no \p at all). Escapes allowed here: \uXXXX and escaped metacharacters. The same check runs
    // under Python's jsonschema in e2e/contract/test_contract_schema.py.
    let mut found = Vec::new();
    patterns(
        &CONTRACT["record_schema"],
        "record_schema".into(),
        &mut found,
    );
    assert_eq!(found.len(), 5, "{found:?}");
    let escape = regex::Regex::new(r"\\(?:u[0-9A-Fa-f]{4}|[\\/.^$|?*+()\[\]{}-])").unwrap();
    for (at, pattern) in found {
        let rest = escape.replace_all(&pattern, "");
        assert!(!rest.contains('\\'), "{at}: {pattern}");
        assert!(!rest.contains("(?"), "{at}: {pattern}");
    }
}

#[test]
fn record_schema_rejects_a_control_character_anywhere_in_any_string_field() {
    let good: Value = serde_json::json!({
        "schema": "mutation_outcome/v1", "logical_turn_id": "t", "mutation_id": "m",
        "tool": "x", "status": "completed", "resource_id": "r", "url": "https://h.example/a",
        "title": "t"
    });
    assert!(schema_errors(&good).is_empty());
    for field in [
        "logical_turn_id",
        "mutation_id",
        "tool",
        "resource_id",
        "title",
    ] {
        for bad in [
            "a\u{0}", "\u{7}a", "a\nb", "ab\n", "a\u{7f}", "a\u{85}b", "a\u{9f}",
        ] {
            let mut record = good.clone();
            record[field] = bad.into();
            assert!(!schema_errors(&record).is_empty(), "{field} = {bad:?}");
        }
    }
    for bad in [
        "https://h.example/a\n",
        "https://h.example/a\u{85}",
        "https://h.example/a b",
        "https://h.example/a\u{a0}b",
        "https://h.example/a\u{3000}b",
        "https://h.exa\u{feff}mple/a",
    ] {
        let mut record = good.clone();
        record["url"] = bad.into();
        assert!(!schema_errors(&record).is_empty(), "url = {bad:?}");
    }
    // Format characters, other scripts and a kept path parameter are not controls.
    let mut record = good.clone();
    record["title"] = "Überblick \u{200b}\u{202e} 😀 \u{a0}".into();
    record["url"] = "https://xn--bcher-kva.example:8443/a;v=1/%20b".into();
    assert!(schema_errors(&record).is_empty(), "{record}");
}

// Property tests over arbitrary host metadata (seed 000: "A serialized record never exceeds 16 KiB").

/// Pieces that exercise every rule: controls, credentials, JSON shapes, multi-byte characters and
/// grapheme clusters, URL parts.
const FRAGMENTS: &[&str] = &[
    "\t",
    "\n",
    "\r",
    "\u{0}",
    "\u{7f}",
    "\u{85}",
    "\u{9f}",
    " ",
    "\u{a0}",
    "\u{feff}",
    "\u{200b}",
    "\u{202e}",
    "é",
    "€",
    "😀",
    "👨\u{200d}👩\u{200d}👧",
    "🇺🇦",
    "\u{301}",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "\\",
    ",",
    ":",
    "\\ud800",
    "{\"a\":1}",
    "[1,2]",
    "42",
    "null",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_aB3dE5fG7haB3dE5fG7haB3dE5fG7haB3dE5",
    "password=",
    "password",
    "hunter2",
    "api_key: ",
    "Bearer ",
    "Basic ",
    "abc123DEF456ghi789",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.sig",
    "-----BEGIN PRIVATE KEY-----",
    "-----END PRIVATE KEY-----",
    REDACTION_MARKER,
    "[redac",
    "https://",
    "http://",
    "HTTP://",
    "javascript:",
    "ftp://",
    "user:pass@",
    "@",
    "example.com",
    "Example.COM",
    "xn--bcher-kva.example",
    "bücher.example",
    "[::1]",
    ":443",
    ":8443",
    ":80",
    "/",
    "/../",
    "/./",
    "?",
    "#",
    "%",
    "%2F",
    "hooks.slack.com/services/",
    "T0ABC1234/B0DEF5678/",
    "b4e2e169b2264541026a9e029771066a34e26a40fed7bd68f0b4f65a01c0bb2b",
    "a",
    "Z",
    "9",
    "-",
    "_",
    ".",
];

/// Short arbitrary text: any Unicode, or a mix of fragments and any characters.
fn short_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(
            prop_oneof![
                3 => prop::sample::select(FRAGMENTS).prop_map(str::to_owned),
                1 => any::<char>().prop_map(String::from),
            ],
            0..40,
        )
        .prop_map(|parts| parts.concat()),
    ]
}

/// Text of any size: short, or a short piece repeated up to about 200 KB (past every limit; a host may
/// attach metadata of any size up to the request body limit).
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => short_text(),
        1 => (short_text(), 1usize..4000).prop_map(|(s, n)| s.repeat(n)),
        1 => (1usize..150_000).prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n))),
    ]
}

/// URL-shaped text: a scheme, optional userinfo, a host, an optional port, a path, a query and a fragment,
/// each drawn partly from arbitrary text; or any text at all.
fn url_text() -> impl Strategy<Value = String> {
    let scheme = prop::sample::select(
        &[
            "https://",
            "http://",
            "HTTPS://",
            "ftp://",
            "javascript:",
            "data:",
            "",
            "//",
        ][..],
    );
    let userinfo = prop::option::of(short_text().prop_map(|s| format!("{s}@")));
    let host = prop_oneof![
        prop::sample::select(&["example.com", "bücher.example", "[::1]", "10.0.0.1", "a.b"][..])
            .prop_map(str::to_owned),
        short_text(),
    ];
    let port = prop::option::of(prop::sample::select(
        &[":80", ":443", ":8443", ":0", ":99999"][..],
    ));
    let tail = prop::option::of(text());
    prop_oneof![
        3 => (scheme, userinfo, host, port, short_text(), short_text(), tail).prop_map(
            |(scheme, userinfo, host, port, path, query, tail)| {
                format!(
                    "{scheme}{}{host}{}/{path}?{query}#{}",
                    userinfo.unwrap_or_default(),
                    port.unwrap_or_default(),
                    tail.unwrap_or_default()
                )
            }
        ),
        1 => text(),
    ]
}

/// A valid identifier (checked when written): 1..=256 bytes, no control characters, heavy on characters
/// that JSON escapes or that take several bytes.
fn identifier() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(&['"', '\\', 'a', '/', 'é', '😀', '\u{2028}'][..]),
        1..200,
    )
    .prop_map(|chars| {
        let mut s = String::new();
        for c in chars {
            if s.len() + c.len_utf8() > limits::IDENTIFIER_MAX_BYTES {
                break;
            }
            s.push(c);
        }
        s
    })
}

fn metadata() -> impl Strategy<Value = Option<HostMetadata>> {
    prop::option::weighted(
        0.9,
        (
            prop::option::of(text()),
            prop::option::of(url_text()),
            prop::option::of(text()),
        )
            .prop_map(|(id, url, title)| HostMetadata { id, url, title }),
    )
}

fn entry() -> impl Strategy<Value = LedgerEntry> {
    (
        identifier(),
        identifier(),
        identifier(),
        prop::sample::select(
            &[
                LedgerStatus::Approved,
                LedgerStatus::ExecutionStarted,
                LedgerStatus::Completed,
                LedgerStatus::Failed,
                LedgerStatus::OutcomeUnknown,
            ][..],
        ),
        any::<bool>(),
        prop::option::of(prop::sample::select(
            &[Reason::PreDispatchDeadline, Reason::ExecutionTimeout][..],
        )),
        metadata(),
    )
        .prop_map(
            |(logical_turn_id, mutation_id, tool, status, intent_recorded, reason, metadata)| {
                LedgerEntry {
                    logical_turn_id,
                    mutation_id,
                    tool,
                    status,
                    intent_recorded,
                    reason,
                    metadata,
                }
            },
        )
}

/// A kept URL is `http(s)://host[:port]/path`: no userinfo, query or fragment.
fn assert_kept_url_shape(kept: &str) {
    let parsed = url::Url::parse(kept).expect("a kept url parses");
    assert!(matches!(parsed.scheme(), "http" | "https"), "{kept}");
    assert!(
        parsed.username().is_empty() && parsed.password().is_none(),
        "{kept}"
    );
    assert!(
        parsed.query().is_none() && parsed.fragment().is_none(),
        "{kept}"
    );
    assert!(kept.len() <= limits::URL_MAX_BYTES);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_projected_record_fits_16_kib_and_validates_against_the_schema(entry in entry()) {
        if let Some(record) = project(&entry) {
            let bytes = serde_json::to_vec(&record).expect("a record serialises");
            prop_assert!(bytes.len() <= limits::RECORD_MAX_BYTES, "{} bytes", bytes.len());
            let errors = schema_errors(&to_value(&record));
            prop_assert!(errors.is_empty(), "{}", errors);
            if let Some(title) = &record.title {
                prop_assert!(title.len() <= limits::TITLE_MAX_BYTES);
                prop_assert!(!title.chars().any(char::is_control));
            }
            if let Some(url) = &record.url {
                assert_kept_url_shape(url);
            }
            if let Some(id) = &record.resource_id {
                prop_assert!(id.len() <= limits::RESOURCE_ID_MAX_BYTES);
            }
        }
    }

    #[test]
    fn title_is_at_most_512_bytes_without_controls_and_idempotent(raw in text()) {
        if let Some(title) = sanitize_title(Some(&raw)) {
            prop_assert!(!title.is_empty() && title.len() <= limits::TITLE_MAX_BYTES);
            prop_assert!(!title.chars().any(char::is_control));
            prop_assert_eq!(sanitize_title(Some(&title)), Some(title.clone()));
        }
    }

    #[test]
    fn url_is_http_without_userinfo_query_or_fragment_and_idempotent(raw in url_text()) {
        if let Some(kept) = sanitize_url(Some(&raw)) {
            assert_kept_url_shape(&kept);
            prop_assert_eq!(sanitize_url(Some(&kept)), Some(kept.clone()));
        }
    }

    #[test]
    fn resource_id_is_unchanged_or_withheld_and_idempotent(raw in text()) {
        let kept = sanitize_resource_id(Some(&raw));
        if let Some(id) = &kept {
            prop_assert_eq!(id, &raw);
        }
        prop_assert_eq!(sanitize_resource_id(kept.as_deref()), kept.clone());
    }
}
