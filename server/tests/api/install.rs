//! The files that make the dashboard installable (`public/`: manifest, icons, service worker, offline page),
//! served from the site root: their content types, the worker's policy, and that they are open when reads
//! are closed (a browser fetches the manifest's icons without cookies).

use reqwest::StatusCode;
use server::serve::AccessArg;

use crate::helpers::{spawn_configured, TestApp};

/// A server whose site root holds a copy of the repository's `public/`, as the build lays it out.
async fn with_public(access: AccessArg) -> TestApp {
    let app = spawn_configured(|a| a.access = access, Default::default()).await;
    let site = app._dir.path().join("site");
    std::fs::create_dir_all(&site).unwrap();
    let public = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../public");
    for entry in std::fs::read_dir(public).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), site.join(entry.file_name())).unwrap();
    }
    app
}

fn header(r: &reqwest::Response, name: &str) -> String {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_manifest_is_served_as_a_web_app_manifest_with_what_installing_needs() {
    let app = with_public(AccessArg::Auto).await;
    let r = app.get("/manifest.webmanifest").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(header(&r, "content-type"), "application/manifest+json");
    let manifest: serde_json::Value = r.json().await.unwrap();
    assert_eq!(manifest["name"], "Outcome ledger");
    for field in ["short_name", "theme_color", "background_color"] {
        assert!(manifest[field].is_string(), "{field}: {manifest}");
    }
    assert_eq!(manifest["start_url"], "/");
    assert_eq!(manifest["scope"], "/");
    assert_eq!(manifest["display"], "standalone");
    let icons = manifest["icons"].as_array().unwrap();
    for (size, purpose) in [
        ("192x192", "any"),
        ("512x512", "any"),
        ("any", "any"),
        ("512x512", "maskable"),
    ] {
        assert!(
            icons
                .iter()
                .any(|i| i["sizes"] == size && i["purpose"] == purpose),
            "no {size} {purpose} icon: {icons:?}"
        );
    }
    for icon in icons {
        let src = icon["src"].as_str().unwrap();
        let r = app.get(src).await;
        assert_eq!(r.status(), StatusCode::OK, "{src}");
        assert_eq!(header(&r, "content-type"), icon["type"], "{src}");
    }
}

#[tokio::test]
async fn the_service_worker_may_fetch_from_its_own_origin_only() {
    let app = with_public(AccessArg::Auto).await;
    let r = app.get("/sw.js").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert!(header(&r, "content-type").starts_with("text/javascript"));
    assert_eq!(
        header(&r, "content-security-policy"),
        server::http::security::WORKER_POLICY
    );
    assert_eq!(header(&r, "cache-control"), "no-store");
    // Any other file keeps the closed policy.
    let r = app.get("/sw-register.js").await;
    assert_eq!(
        header(&r, "content-security-policy"),
        server::http::security::OTHER_POLICY
    );
    let r = app.get("/offline.html").await;
    assert!(header(&r, "content-type").starts_with("text/html"));
    let body = r.text().await.unwrap();
    assert!(
        body.contains("Nothing can be shown while offline"),
        "{body}"
    );
}

#[tokio::test]
async fn the_install_files_are_open_when_reads_are_closed() {
    let app = with_public(AccessArg::SignedIn).await;
    let no_redirects = crate::helpers::access::plain();
    for path in server::access::INSTALL_FILES {
        let r = no_redirects
            .get(format!("{}{path}", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
    }
    // Pages stay closed.
    let r = no_redirects
        .get(format!("{}/", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
}
