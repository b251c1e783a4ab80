//! The security headers of pages and API answers (docs/access.md).

use reqwest::header::HeaderMap;
use reqwest::StatusCode;
use server::serve::AccessArg;

use crate::helpers::access::{bearer, get};
use crate::helpers::server;

// ---------------------------------------------------------------------------------------------------
// 6. Security headers
// ---------------------------------------------------------------------------------------------------

/// The nonce of a CSP's `'nonce-…'` source.
fn csp_nonce(csp: &str) -> Option<String> {
    let start = csp.find("'nonce-")? + "'nonce-".len();
    let len = csp[start..].find('\'')?;
    Some(csp[start..start + len].to_owned())
}

fn assert_common_headers(what: &str, h: &HeaderMap) {
    assert_eq!(h["x-content-type-options"], "nosniff", "{what}");
    assert_eq!(h["referrer-policy"], "no-referrer", "{what}");
    assert_eq!(h["x-frame-options"], "DENY", "{what}");
    assert_eq!(h["cache-control"], "no-store", "{what}");
}

#[tokio::test]
async fn pages_and_api_answers_carry_the_security_headers() {
    let app = server(AccessArg::Auto).await;
    app.settled("alpha", "t1", "m1", "completed").await;

    let mut nonces = Vec::new();
    for path in ["/sessions/alpha", "/sessions/alpha", "/", "/nowhere"] {
        let r = get(&app, path, &[]).await;
        assert!(
            r.headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html"),
            "{path}"
        );
        assert_common_headers(path, &r.headers);
        let csp = r.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(csp.contains("base-uri 'none'"), "{csp}");
        assert!(csp.contains("form-action 'self'"), "{csp}");
        assert!(
            csp.contains("script-src 'self' 'wasm-unsafe-eval' 'nonce-"),
            "{csp}"
        );
        let nonce = csp_nonce(csp).expect("a nonce");
        assert!(nonce.len() >= 22, "{nonce}");
        // Every script of the page carries this response's nonce.
        let scripts: Vec<&str> = r.body.split("<script").skip(1).collect();
        println!("{path}: {} script element(s)", scripts.len());
        for s in &scripts {
            let tag = &s[..s.find('>').unwrap()];
            assert!(
                tag.contains(&format!("nonce=\"{nonce}\"")),
                "{path}: <script{tag}> lacks nonce {nonce}"
            );
        }
        assert_eq!(
            r.body.matches("nonce=\"").count(),
            r.body.matches(&format!("nonce=\"{nonce}\"")).count(),
            "{path}: a nonce other than the CSP's"
        );
        nonces.push(nonce);
    }
    // The hydration scripts are there (without a built bundle they still reference it).
    let page = get(&app, "/sessions/alpha", &[]).await;
    assert!(page.body.contains("<script"), "{}", page.body);
    // A fresh nonce every response.
    let mut unique = nonces.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), nonces.len(), "{nonces:?}");

    // Stand-alone pages and JSON answers.
    for (path, html) in [
        ("/sign-in", true),
        ("/v/nope", true),
        ("/api/sessions", false),
        ("/api/sessions/alpha/turns", false),
        ("/api/sessions/nobody/turns", false),
        ("/healthz", false),
        ("/api/openapi.json", false),
    ] {
        let r = get(&app, path, &[]).await;
        assert_common_headers(path, &r.headers);
        let csp = r.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        if html {
            assert!(csp.contains("'nonce-"), "{path}: {csp}");
        } else {
            assert_eq!(
                csp,
                "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
                "{path}"
            );
            assert!(r.headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with("application/json"));
        }
    }
    // Refusals too.
    let r = get(&app, "/api/sessions", &[bearer("wrong")]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_common_headers("401", &r.headers);
    let closed = server(AccessArg::SignedIn).await;
    let r = get(&closed, "/sessions/alpha", &[]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_common_headers("303", &r.headers);
    let r = get(&closed, "/api/sessions", &[]).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_common_headers("401 closed", &r.headers);
}
