//! Storage faults (docs/ledger.md "Storage faults"): a full database refuses writes with `StorageFull`
//! (nothing changed, a whole batch refused), is reported by `Engine::storage_fault`, and the ledger
//! writes again by itself once space is freed, also after SQLite rolled a transaction back itself.

use std::time::Duration;

use crate::common::*;
use ledger::LedgerError;

/// An approve of a mutation with a long id (a batch of 40 needs new pages).
fn big(m: usize) -> ledger::Command {
    approve_in("full", "t", &format!("m{m}-{}", "x".repeat(200)))
}

#[tokio::test]
async fn a_full_database_refuses_writes_whole_and_writes_again_once_space_is_freed() {
    if skipped_on_postgres("SQLite's max_page_count") {
        return;
    }
    let h = open().await;
    h.engine.apply(big(0)).await.unwrap();
    assert_eq!(h.engine.storage_fault().await, None);
    h.engine.limit_storage_for_tests(Some(0)).await.unwrap();
    // A batch that needs new pages: refused whole, nothing of it committed.
    let batch: Vec<_> = (1..40).map(big).collect();
    match h.engine.apply_batch(batch).await {
        Err(LedgerError::StorageFull) => {}
        other => panic!("expected StorageFull, got {other:?}"),
    }
    let fault = h.engine.storage_fault().await.expect("a fault is reported");
    assert_eq!(fault.code, "storage_full");
    // The probe write (one row: SQLite rolls the whole transaction back itself) fails too; the fault
    // stays, its start unchanged.
    tokio::time::sleep(ledger::health::PROBE_INTERVAL + Duration::from_millis(50)).await;
    assert_eq!(h.engine.storage_fault().await, Some(fault.clone()));
    assert!(matches!(
        h.engine.apply_batch((100..140).map(big).collect()).await,
        Err(LedgerError::StorageFull)
    ));
    assert_eq!(
        raw_count(&h.path, "SELECT count(*) FROM entries").await,
        1,
        "nothing of the refused writes was committed"
    );
    // Space is freed: the next write succeeds without a restart (the connection SQLite left inside a
    // rolled-back transaction is replaced) and the fault is over.
    h.engine.limit_storage_for_tests(None).await.unwrap();
    let batch: Vec<_> = (1..40).map(big).collect();
    let results = h.engine.apply_batch(batch).await.expect("writes again");
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(h.engine.storage_fault().await, None);
    assert_eq!(raw_count(&h.path, "SELECT count(*) FROM entries").await, 40);
}

/// With no write at all after space is freed, the probe clears the fault by itself.
#[tokio::test]
async fn the_probe_clears_a_fault_without_any_write() {
    if skipped_on_postgres("SQLite's max_page_count") {
        return;
    }
    let h = open().await;
    h.engine.limit_storage_for_tests(Some(0)).await.unwrap();
    assert!(matches!(
        h.engine.apply_batch((1..40).map(big).collect()).await,
        Err(LedgerError::StorageFull)
    ));
    assert!(h.engine.storage_fault().await.is_some());
    h.engine.limit_storage_for_tests(None).await.unwrap();
    tokio::time::sleep(ledger::health::PROBE_INTERVAL + Duration::from_millis(50)).await;
    assert_eq!(h.engine.storage_fault().await, None);
    h.engine.apply(big(2)).await.unwrap();
}

/// Postgres: a full disk is SQLSTATE 53100 `disk_full` (made here by triggers that raise it on every
/// insert into the ledger's entries and into `maintenance`, where the probe writes): `StorageFull`,
/// nothing changed, reported by `storage_fault`, and over by itself once inserts work again.
#[tokio::test]
async fn postgres_disk_full_is_storage_full_and_clears_by_itself() {
    if postgres().is_none() {
        eprintln!("skipped: Postgres only (OUTCOMES_TEST_POSTGRES)");
        return;
    }
    use sqlx::Connection;
    let h = open().await;
    h.engine.apply(big(0)).await.unwrap();
    let mut admin = sqlx::PgConnection::connect(&h.path).await.unwrap();
    for sql in [
        "CREATE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' \
         USING ERRCODE = 'disk_full'; END $$",
        "CREATE TRIGGER full_entries BEFORE INSERT ON entries FOR EACH ROW EXECUTE FUNCTION full_disk()",
        "CREATE TRIGGER full_probe BEFORE INSERT ON maintenance FOR EACH ROW EXECUTE FUNCTION full_disk()",
    ] {
        sqlx::query(sql).execute(&mut admin).await.unwrap();
    }
    match h.engine.apply_batch((1..5).map(big).collect()).await {
        Err(LedgerError::StorageFull) => {}
        other => panic!("expected StorageFull, got {other:?}"),
    }
    let fault = h.engine.storage_fault().await.expect("a fault is reported");
    assert_eq!(fault.code, "storage_full");
    tokio::time::sleep(ledger::health::PROBE_INTERVAL + Duration::from_millis(50)).await;
    assert_eq!(h.engine.storage_fault().await, Some(fault));
    for sql in [
        "DROP TRIGGER full_entries ON entries",
        "DROP TRIGGER full_probe ON maintenance",
    ] {
        sqlx::query(sql).execute(&mut admin).await.unwrap();
    }
    tokio::time::sleep(ledger::health::PROBE_INTERVAL + Duration::from_millis(50)).await;
    assert_eq!(
        h.engine.storage_fault().await,
        None,
        "the probe write cleared it"
    );
    h.engine.apply(big(9)).await.unwrap();
    assert_eq!(raw_count(&h.path, "SELECT count(*) FROM entries").await, 2);
    assert_eq!(
        raw_count(
            &h.path,
            "SELECT count(*) FROM maintenance WHERE task LIKE 'storage%'"
        )
        .await,
        0,
        "nothing of the probe stays"
    );
    let _ = admin.close().await;
}
