//! Staff sign-ins kept in the ledger (docs/access.md "Signing in"): the idle expiry slides with use, at
//! any idle setting.

use std::time::Duration;

use crate::common::*;

/// At the shortest idle setting (60 s), requests every 20 s keep a sign-in alive for minutes: each one
/// moves its last use forward (a quarter of the idle time at most stale), and it ends 60 s after the
/// last of them.
#[tokio::test]
async fn a_sign_in_used_within_its_idle_time_stays_alive_at_the_shortest_setting() {
    let h = open().await;
    let access = h.ledger.access();
    assert!(access
        .add_staff("ada", "$argon2id$not-checked-here")
        .await
        .unwrap());
    assert!(access.start_sign_in("ada", "sign-in-id").await.unwrap());
    let idle_ms = 60_000;
    for step in 1..=9 {
        h.clock.advance(Duration::from_secs(20));
        assert_eq!(
            access
                .sign_in("sign-in-id", idle_ms)
                .await
                .unwrap()
                .as_deref(),
            Some("ada"),
            "a request {} s after sign-in, 20 s after the one before",
            step * 20
        );
    }
    h.clock.advance(Duration::from_secs(59));
    assert_eq!(
        access
            .sign_in("sign-in-id", idle_ms)
            .await
            .unwrap()
            .as_deref(),
        Some("ada")
    );
    h.clock.advance(Duration::from_secs(61));
    assert_eq!(access.sign_in("sign-in-id", idle_ms).await.unwrap(), None);
    // The touch interval: a quarter of the idle time, never more than a minute.
    assert_eq!(ledger::access::touch_every_ms(60_000), 15_000);
    assert_eq!(ledger::access::touch_every_ms(43_200_000), 60_000);
}
