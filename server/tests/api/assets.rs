//! The browser bundle under /pkg/ (docs/performance.md "Bundle size", server/src/assets.rs): content-hashed names in
//! pages, cached for good, sent as the build's brotli or gzip twin by `Accept-Encoding`; pages, the
//! service worker and its registration script keep their names and are not cached for good.

use std::path::Path;

use reqwest::header::{ACCEPT_ENCODING, CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, VARY};
use reqwest::StatusCode;

use crate::helpers::{spawn_configured, TestApp};

const IMMUTABLE: &str = "public, max-age=31536000, immutable";
const JS: &str = "outcomes.0123456789abcdef.js";
const WASM: &str = "outcomes_bg.fedcba9876543210.wasm";
const CSS: &str = "outcomes.00112233aabbccdd.css";

/// A built site in miniature: the three files of a bundle with distinct `.br` and `.gz` twins (their
/// bytes need not be real compressions: the server must send them as they are), `assets.json`, and the
/// service worker's two scripts.
fn fake_site(root: &Path) {
    let pkg = root.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    for name in [JS, WASM, CSS] {
        std::fs::write(pkg.join(name), format!("raw bytes of {name}\n").repeat(200)).unwrap();
        std::fs::write(pkg.join(format!("{name}.br")), format!("br twin of {name}")).unwrap();
        std::fs::write(pkg.join(format!("{name}.gz")), format!("gz twin of {name}")).unwrap();
    }
    std::fs::write(
        pkg.join("assets.json"),
        format!(r#"{{"js":"{JS}","wasm":"{WASM}","css":"{CSS}"}}"#),
    )
    .unwrap();
    std::fs::write(root.join("sw.js"), "// worker\n".repeat(200)).unwrap();
    std::fs::write(root.join("sw-register.js"), "// register\n".repeat(200)).unwrap();
    std::fs::write(root.join("forms.js"), "// forms\n".repeat(200)).unwrap();
}

async fn built_site() -> (TestApp, tempfile::TempDir) {
    let site = tempfile::tempdir().unwrap();
    fake_site(site.path());
    let root = site.path().to_string_lossy().into_owned();
    let app = spawn_configured(|a| a.site_root = root, Default::default()).await;
    (app, site)
}

async fn get_with(app: &TestApp, path: &str, encoding: Option<&str>) -> reqwest::Response {
    let mut request = app.client.get(format!("{}{path}", app.base));
    if let Some(encoding) = encoding {
        request = request.header(ACCEPT_ENCODING, encoding);
    }
    request.send().await.unwrap()
}

/// Every `/pkg/…` path the page names (attribute values and the hydration script's strings).
fn pkg_paths(html: &str) -> Vec<String> {
    let mut paths: Vec<String> = html
        .match_indices("/pkg/")
        .map(|(i, _)| {
            html[i..]
                .chars()
                .take_while(|c| !matches!(c, '"' | '\'' | '&' | ' ' | '>' | '<' | ')'))
                .collect()
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn header(r: &reqwest::Response, name: reqwest::header::HeaderName) -> &str {
    r.headers()
        .get(name)
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}

#[tokio::test]
async fn a_page_names_the_hashed_bundle_and_each_file_is_cached_for_good() {
    let (app, _site) = built_site().await;
    let page = get_with(&app, "/", None).await;
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(header(&page, CACHE_CONTROL), "no-store");
    assert!(header(&page, CONTENT_TYPE).starts_with("text/html"));
    let html = page.text().await.unwrap();
    let paths = pkg_paths(&html);
    assert_eq!(
        paths,
        vec![
            format!("/pkg/{CSS}"),
            format!("/pkg/{JS}"),
            format!("/pkg/{WASM}")
        ],
        "{html}"
    );
    assert!(
        html.contains(&format!(
            r#"<link rel="stylesheet" id="leptos" href="/pkg/{CSS}">"#
        )),
        "{html}"
    );
    assert!(
        html.contains(&format!(r#"import("/pkg/{JS}").then(m=>m.default("#)),
        "{html}"
    );
    assert!(
        html.contains(&format!(r#"module_or_path:"/pkg/{WASM}""#)),
        "{html}"
    );
    for path in &paths {
        for encoding in [
            None,
            Some("gzip"),
            Some("br"),
            Some("br, gzip, deflate, zstd"),
        ] {
            let r = get_with(&app, path, encoding).await;
            assert_eq!(r.status(), StatusCode::OK, "{path} {encoding:?}");
            assert_eq!(header(&r, CACHE_CONTROL), IMMUTABLE, "{path} {encoding:?}");
            assert_eq!(header(&r, VARY), "accept-encoding", "{path} {encoding:?}");
        }
    }
    let types = [
        (JS, "text/javascript"),
        (WASM, "application/wasm"),
        (CSS, "text/css"),
    ];
    for (name, ty) in types {
        let r = get_with(&app, &format!("/pkg/{name}"), Some("br")).await;
        assert!(
            header(&r, CONTENT_TYPE).starts_with(ty),
            "{name}: {:?}",
            r.headers()
        );
    }
}

#[tokio::test]
async fn the_build_time_twins_are_sent_by_accept_encoding() {
    let (app, site) = built_site().await;
    let pkg = site.path().join("pkg");
    for name in [JS, WASM, CSS] {
        let path = format!("/pkg/{name}");
        let cases = [
            (Some("br"), "br", format!("{name}.br")),
            (Some("gzip, deflate, br"), "br", format!("{name}.br")),
            (Some("gzip"), "gzip", format!("{name}.gz")),
            (Some("gzip;q=1, br;q=0"), "gzip", format!("{name}.gz")),
            (Some("identity"), "", name.to_string()),
            // Codings the build did not make: the file as it is, not compressed on the fly.
            (Some("deflate"), "", name.to_string()),
            (Some("zstd"), "", name.to_string()),
            (None, "", name.to_string()),
        ];
        for (encoding, sent, file) in cases {
            let r = get_with(&app, &path, encoding).await;
            assert_eq!(r.status(), StatusCode::OK, "{path} {encoding:?}");
            assert_eq!(header(&r, CONTENT_ENCODING), sent, "{path} {encoding:?}");
            let body = r.bytes().await.unwrap();
            assert_eq!(
                body.as_ref(),
                std::fs::read(pkg.join(&file)).unwrap(),
                "{path} {encoding:?} should be the bytes of {file}"
            );
        }
    }
}

#[tokio::test]
async fn a_missing_or_old_bundle_name_is_a_plain_404() {
    let (app, _site) = built_site().await;
    for path in [
        "/pkg/outcomes.js",
        "/pkg/outcomes_bg.wasm",
        "/pkg/outcomes.ffffffffffffffff.js",
        "/pkg/outcomes_bg.ffffffffffffffff.wasm",
        "/pkg/",
        "/pkg/nothing/here.css",
    ] {
        let r = get_with(&app, path, Some("br, gzip")).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(header(&r, CACHE_CONTROL), "no-store", "{path}");
        assert!(!header(&r, CONTENT_TYPE).starts_with("text/html"), "{path}");
        let body = r.text().await.unwrap();
        assert!(!body.contains("<html"), "{path}: {body}");
    }
    // The path guards still refuse a way out of /pkg/.
    for path in ["/pkg/../sessions/x", "/pkg/%2e%2e/assets.json"] {
        let r = get_with(&app, path, None).await;
        assert!(r.status().is_client_error(), "{path}: {}", r.status());
        assert_ne!(header(&r, CACHE_CONTROL), IMMUTABLE, "{path}");
    }
}

#[tokio::test]
async fn the_service_worker_keeps_its_names_and_is_never_cached_for_good() {
    let (app, _site) = built_site().await;
    let html = app.get("/").await.text().await.unwrap();
    // Both async: a deferred script would hold the bundle's module back until it arrived
    // (docs/performance.md "First load"). The second keeps a form posted while the server cannot be reached (public/forms.js).
    assert!(html.contains(r#"src="/sw-register.js" async"#), "{html}");
    assert!(html.contains(r#"src="/forms.js" async"#), "{html}");
    for path in ["/sw.js", "/sw-register.js", "/forms.js"] {
        let r = get_with(&app, path, Some("br, gzip")).await;
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        assert_eq!(header(&r, CACHE_CONTROL), "no-store", "{path}");
        assert!(header(&r, CONTENT_TYPE).contains("javascript"), "{path}");
    }
}

#[tokio::test]
async fn without_a_built_bundle_pages_name_the_plain_files() {
    // No assets.json: the server starts and renders, naming the plain files (not cached for good).
    let app = crate::helpers::spawn().await;
    let r = app.get("/").await;
    assert_eq!(r.status(), StatusCode::OK);
    let html = r.text().await.unwrap();
    assert_eq!(
        pkg_paths(&html),
        vec![
            "/pkg/outcomes.css",
            "/pkg/outcomes.js",
            "/pkg/outcomes_bg.wasm"
        ],
        "{html}"
    );
    let r = app.get("/pkg/outcomes.js").await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}
