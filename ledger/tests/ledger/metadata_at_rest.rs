//! Secrets at rest (docs/design.md "Decisions where the sources are silent"): host metadata is
//! sanitised when written as well as on read, so a credential a host sent by mistake (a `ghp_…` token as
//! id, `https://user:pass@host/p?token=…` as url, `password=…` in a title) never reaches the database file
//! or its WAL. What is stored is what is published: a withheld field stores NULL, a title stores the
//! sanitised title. Any raw size is accepted; the sanitisers truncate or withhold it.

use crate::common::*;
use ledger::engine::Settlement;
use ledger::limits::TITLE_MAX_BYTES;
use ledger::projection::{HostMetadata, LedgerEntry};
use ledger::wire::{LedgerStatus as L, PublishedStatus as P};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};

/// A GitHub classic token shape (synthetic: repeated filler, not a real key).
const GHP: &str = "ghp_aB3dE5fG7haB3dE5fG7haB3dE5fG7haB3dE5";
const URL_PASSWORD: &str = "Sup3rSecretPassw0rd";
const URL_TOKEN: &str = "qT7token0nTheQuery42";
const TITLE_PASSWORD: &str = "hunter2hunter2";

fn leaky() -> HostMetadata {
    HostMetadata {
        id: Some(GHP.into()),
        url: Some(format!(
            "https://deploy:{URL_PASSWORD}@app.example.com/d/D-1?token={URL_TOKEN}#frag"
        )),
        title: Some(format!("Deploy with password={TITLE_PASSWORD} done")),
    }
}

/// `(meta_attached, meta_id, meta_url, meta_title)` of entry `m` as stored, read straight from the file.
async fn stored_row(path: &str, m: &str) -> (bool, Option<String>, Option<String>, Option<String>) {
    let pool = raw(path).await;
    let (attached, id, url, title): (i64, Option<String>, Option<String>, Option<String>) =
        sqlx::query_as(
            "SELECT CASE WHEN meta_attached THEN 1 ELSE 0 END, meta_id, meta_url, meta_title \
             FROM entries WHERE mutation_id = $1",
        )
        .bind(m)
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    (attached != 0, id, url, title)
}

/// The bytes of the database file and of its WAL (committed pages live there until a checkpoint).
fn database_bytes(path: &str) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    if let Ok(wal) = std::fs::read(format!("{path}-wal")) {
        bytes.extend(wal);
    }
    bytes
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn an_attach_stores_only_the_sanitised_metadata() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    let s = h.ok(attach("m-1", leaky())).await;
    assert_eq!(s.revision, Some(3));

    assert_eq!(
        stored_row(&h.path, "m-1").await,
        (
            true,
            None,
            Some("https://app.example.com/d/D-1".to_owned()),
            Some("Deploy with password=[redacted] done".to_owned())
        )
    );
    // The file's bytes (SQLite; on Postgres the table's values above are what is stored).
    if postgres().is_none() {
        let bytes = database_bytes(&h.path);
        for secret in [GHP, URL_PASSWORD, URL_TOKEN, TITLE_PASSWORD, "deploy:"] {
            assert!(!contains(&bytes, secret), "{secret} is in the database");
        }
        // The search does see what was stored.
        assert!(contains(&bytes, "Deploy with password=[redacted] done"));
        assert!(contains(&bytes, "https://app.example.com/d/D-1"));
    }

    // Published exactly as stored.
    let history = h.sessions.mutation_outcomes(&sk(SESSION)).await.unwrap();
    assert_eq!(history[0].status, P::Completed);
    assert_eq!(history[0].resource_id, None);
    assert_eq!(
        history[0].url.as_deref(),
        Some("https://app.example.com/d/D-1")
    );
    assert_eq!(
        history[0].title.as_deref(),
        Some("Deploy with password=[redacted] done")
    );
}

#[tokio::test]
async fn an_attach_identical_once_sanitised_changes_nothing() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    let first = h.ok(attach("m-1", leaky())).await;
    let before = h.snapshot().await;
    // Other secrets, query and fragment: the same once sanitised, so no revision and no event.
    let again = h
        .ok(attach(
            "m-1",
            HostMetadata {
                id: Some(format!("ghp_{}", "Zz9".repeat(12))),
                url: Some("https://other:pw@app.example.com/d/D-1?token=zzz".into()),
                title: Some("Deploy with password=other-secret-9 done".into()),
            },
        ))
        .await;
    assert_eq!(again, first);
    assert_eq!(again.revision, Some(3));
    assert_eq!(h.snapshot().await, before);
    // A change that survives sanitising is a change.
    let changed = h
        .ok(attach(
            "m-1",
            meta("D-1", "https://app.example.com/d/D-1", "Deploy done"),
        ))
        .await;
    assert_eq!(changed.revision, Some(4));
    assert_eq!(
        stored_row(&h.path, "m-1").await,
        (
            true,
            Some("D-1".to_owned()),
            Some("https://app.example.com/d/D-1".to_owned()),
            Some("Deploy done".to_owned())
        )
    );
}

#[tokio::test]
async fn metadata_of_any_size_is_accepted_and_stored_truncated_or_withheld() {
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    // Past the former 64 KiB refusal: 200 KiB each.
    let big = 200 * 1024;
    let s = h
        .ok(attach(
            "m-1",
            HostMetadata {
                id: Some("i".repeat(big)),
                url: Some(format!("https://app.example.com/{}", "p".repeat(big))),
                title: Some("é".repeat(big / 2)),
            },
        ))
        .await;
    assert_eq!(s.ledger_status, L::Completed);
    let title = "é".repeat(TITLE_MAX_BYTES / 2);
    assert_eq!(
        stored_row(&h.path, "m-1").await,
        (true, None, None, Some(title.clone()))
    );
    let history = h.sessions.mutation_outcomes(&sk(SESSION)).await.unwrap();
    assert_eq!(
        (
            history[0].resource_id.as_deref(),
            history[0].url.as_deref(),
            history[0].title.as_deref()
        ),
        (None, None, Some(title.as_str()))
    );
}

#[tokio::test]
async fn imported_legacy_metadata_is_stored_sanitised_too() {
    let h = open().await;
    h.engine
        .import_legacy(
            &sk(SESSION),
            &LedgerEntry {
                logical_turn_id: TURN.into(),
                mutation_id: "m-L1".into(),
                tool: TOOL.into(),
                status: L::Completed,
                intent_recorded: true,
                reason: None,
                metadata: Some(leaky()),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        stored_row(&h.path, "m-L1").await,
        (
            true,
            None,
            Some("https://app.example.com/d/D-1".to_owned()),
            Some("Deploy with password=[redacted] done".to_owned())
        )
    );
    if postgres().is_none() {
        let bytes = database_bytes(&h.path);
        for secret in [GHP, URL_PASSWORD, URL_TOKEN, TITLE_PASSWORD] {
            assert!(!contains(&bytes, secret), "{secret} is in the database");
        }
    }
}

/// A database written before metadata was sanitised on write (simulated by writing the raw values into the
/// row, as the old engine stored them): the next open sanitises them in place, once, and checkpoints the
/// WAL, so the secrets leave the files; what is published and the turn's revision do not change.
#[tokio::test]
async fn metadata_stored_by_an_older_version_is_sanitised_at_the_next_open() {
    if skipped_on_postgres("rows an older SQLite version wrote") {
        return;
    }
    let h = open().await;
    h.in_flight("m-1", "a-1").await;
    h.ok(settle("m-1", "a-1", Settlement::Completed, None))
        .await;
    h.ok(attach("m-1", leaky())).await;
    let published = h.sessions.mutation_outcomes(&sk(SESSION)).await.unwrap();
    let path = h.path.clone();
    h.ledger.close().await;
    // What the old engine stored: the raw attach.
    {
        let mut conn = SqliteConnectOptions::new()
            .filename(&path)
            .connect()
            .await
            .unwrap();
        let raw = leaky();
        sqlx::query("UPDATE entries SET meta_id = ?, meta_url = ?, meta_title = ? WHERE mutation_id = 'm-1'")
            .bind(&raw.id)
            .bind(&raw.url)
            .bind(&raw.title)
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("DELETE FROM maintenance")
            .execute(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
    }
    assert!(contains(&database_bytes(&path), GHP));

    let recorder = std::sync::Arc::new(Recorder::default());
    let ledger = reopen(&path, recorder.clone(), h.clock.clone()).await;
    let bytes = database_bytes(&path);
    for secret in [GHP, URL_PASSWORD, URL_TOKEN, TITLE_PASSWORD] {
        assert!(!contains(&bytes, secret), "{secret} is still in the files");
    }
    assert_eq!(
        ledger
            .sessions()
            .mutation_outcomes(&sk(SESSION))
            .await
            .unwrap(),
        published
    );
    assert!(recorder.deliveries().is_empty(), "no event for a scrub");
    ledger.close().await;
}
