//! The browser bundle under `/pkg/` (docs/performance.md "Bundle size", docs/access.md "Page headers").
//!
//! `scripts/build.sh` names each file of the bundle after its content (`outcomes.<hash>.js`,
//! `outcomes_bg.<hash>.wasm`, `outcomes.<hash>.css`, the hash 16 hex digits of its SHA-256), writes
//! `x.br` (brotli, quality 11) and `x.gz` (gzip -9) beside each, and lists the names in
//! `pkg/assets.json`. The server reads that list once, when it is built ([`Bundle::find`]); pages name
//! those files. Under `/pkg/`:
//! - a file is sent as its `.br` or `.gz` twin when the request's `Accept-Encoding` takes that coding
//!   (brotli first), else as it is; never compressed again on the fly ([`BuildTimeCompressed`]);
//! - a content-hashed name is sent with [`IMMUTABLE`]; any other file under `/pkg/` with `no-cache`;
//! - a name that is not there (a misspelt or an old bundle's name) is a plain 404, never a page.
//!
//! Without a built bundle (no `assets.json`: tests, a checkout never built) pages name the plain files
//! (`outcomes.js`, `outcomes_bg.wasm`, `outcomes.css`), which are then not cached for good.

use std::path::Path;

use axum::http::header::VARY;
use axum::http::{HeaderValue, StatusCode};
use tower_http::services::fs::ServeFileSystemResponseBody;
use tower_http::services::ServeDir;

/// Name of the browser bundle: `pkg/outcomes.<hash>.js`, `pkg/outcomes_bg.<hash>.wasm`,
/// `pkg/outcomes.<hash>.css` once built, the plain names without a build; also the `output_name` the
/// server renders pages with.
pub const OUTPUT_NAME: &str = "outcomes";

pub use app::Bundle;

/// The list of the bundle's files that the build writes into the site's `pkg/` directory.
pub const MANIFEST: &str = "assets.json";

/// `Cache-Control` of a content-hashed file under `/pkg/`: its name changes whenever its content does.
pub const IMMUTABLE: &str = "public, max-age=31536000, immutable";

/// `Cache-Control` of any other file under `/pkg/` (a bundle built without hashes): ask again each time.
pub const REVALIDATE: &str = "no-cache";

/// Marks a response whose body was compressed when the bundle was built (or deliberately sent as it
/// is): the on-the-fly compression layer leaves it alone.
#[derive(Debug, Clone, Copy)]
pub struct BuildTimeCompressed;

#[derive(serde::Deserialize)]
struct Manifest {
    js: String,
    wasm: String,
    css: String,
}

/// The bundle under `<site_root>/pkg/`: the names `assets.json` lists when it is there and every file it
/// names exists, else the plain names of [`OUTPUT_NAME`] (said in the log).
pub fn find(site_root: &str) -> Bundle {
    let pkg = Path::new(site_root).join("pkg");
    let path = pkg.join(MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            tracing::info!(path = %path.display(), "no bundle manifest: pages name the plain file names");
            return Bundle::plain(OUTPUT_NAME);
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "bundle manifest unreadable: pages name the plain file names");
            return Bundle::plain(OUTPUT_NAME);
        }
    };
    match parse(&text, &pkg) {
        Ok(bundle) => {
            tracing::info!(js = %bundle.js, wasm = %bundle.wasm, css = %bundle.css, "bundle");
            bundle
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "bundle manifest refused: pages name the plain file names");
            Bundle::plain(OUTPUT_NAME)
        }
    }
}

fn parse(text: &str, pkg: &Path) -> Result<Bundle, String> {
    let m: Manifest = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let href = |name: &str| -> Result<String, String> {
        let plain = !name.is_empty()
            && !name.starts_with('.')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if !plain {
            return Err(format!("{name:?} is not a plain file name"));
        }
        if !pkg.join(name).is_file() {
            return Err(format!("{name} is not in {}", pkg.display()));
        }
        Ok(format!("/pkg/{name}"))
    };
    Ok(Bundle {
        js: href(&m.js)?,
        wasm: href(&m.wasm)?,
        css: href(&m.css)?,
    })
}

/// Whether a file name carries a content hash: a dot-separated part, not the first nor the extension,
/// of 8 or more hex digits or 16 or more base64url characters (`outcomes.0123abcd.js`).
pub fn is_hashed(name: &str) -> bool {
    let parts: Vec<&str> = name.split('.').collect();
    parts.len() >= 3
        && parts[1..parts.len() - 1].iter().any(|p| {
            (p.len() >= 8 && p.bytes().all(|b| b.is_ascii_hexdigit()))
                || (p.len() >= 16
                    && p.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
        })
}

/// `Cache-Control` of the answer to `path` (under `/pkg/`) with `status`.
pub fn cache_control(path: &str, status: StatusCode) -> &'static str {
    let found = status.is_success() || status == StatusCode::NOT_MODIFIED;
    let name = path.rsplit('/').next().unwrap_or("");
    match found {
        true if is_hashed(name) => IMMUTABLE,
        true => REVALIDATE,
        false => "no-store",
    }
}

/// The service of `/pkg/`: the files of `<site_root>/pkg/`, each sent as its `.br` or `.gz` twin when
/// the client takes it, marked [`BuildTimeCompressed`] and `Vary: Accept-Encoding`. A name not there is
/// a 404 with an empty body.
pub fn service(site_root: &str) -> PkgService {
    let dir = ServeDir::new(Path::new(site_root).join("pkg"))
        .precompressed_br()
        .precompressed_gzip()
        .append_index_html_on_directories(false);
    tower::ServiceExt::<axum::extract::Request>::map_response(dir, mark as fn(_) -> _)
}

/// The service of [`service`].
pub type PkgService = tower::util::MapResponse<
    ServeDir,
    fn(axum::http::Response<ServeFileSystemResponseBody>) -> axum::response::Response,
>;

fn mark(response: axum::http::Response<ServeFileSystemResponseBody>) -> axum::response::Response {
    let mut response = axum::response::IntoResponse::into_response(response);
    response.extensions_mut().insert(BuildTimeCompressed);
    response
        .headers_mut()
        .insert(VARY, HeaderValue::from_static("accept-encoding"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_names() {
        assert!(is_hashed("outcomes.0123abcd.js"));
        assert!(is_hashed("outcomes_bg.0123456789abcdef.wasm"));
        assert!(is_hashed("outcomes.AbCdEfGh_-12345678.css"));
        assert!(!is_hashed("outcomes.js"));
        assert!(!is_hashed("outcomes_bg.wasm"));
        assert!(!is_hashed("outcomes.0123abc.js"));
        assert!(!is_hashed("0123abcd0123abcd.js"));
        assert!(!is_hashed("outcomes.0123abcd"));
    }

    #[test]
    fn cache_rules() {
        assert_eq!(
            cache_control("/pkg/outcomes.0123abcd.js", StatusCode::OK),
            IMMUTABLE
        );
        assert_eq!(
            cache_control("/pkg/outcomes.0123abcd.js", StatusCode::NOT_MODIFIED),
            IMMUTABLE
        );
        assert_eq!(
            cache_control("/pkg/outcomes.js", StatusCode::OK),
            REVALIDATE
        );
        assert_eq!(
            cache_control("/pkg/outcomes.0123abcd.js", StatusCode::NOT_FOUND),
            "no-store"
        );
    }

    #[test]
    fn manifest_names_only_plain_files_that_exist() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.0123abcd.js"), "x").unwrap();
        std::fs::write(dir.path().join("a_bg.0123abcd.wasm"), "x").unwrap();
        std::fs::write(dir.path().join("a.0123abcd.css"), "x").unwrap();
        let ok = r#"{"js":"a.0123abcd.js","wasm":"a_bg.0123abcd.wasm","css":"a.0123abcd.css"}"#;
        assert_eq!(
            parse(ok, dir.path()).unwrap(),
            Bundle {
                js: "/pkg/a.0123abcd.js".into(),
                wasm: "/pkg/a_bg.0123abcd.wasm".into(),
                css: "/pkg/a.0123abcd.css".into(),
            }
        );
        let missing = r#"{"js":"a.0123abcd.js","wasm":"b.wasm","css":"a.0123abcd.css"}"#;
        assert!(parse(missing, dir.path()).is_err());
        let escape =
            r#"{"js":"../a.0123abcd.js","wasm":"a_bg.0123abcd.wasm","css":"a.0123abcd.css"}"#;
        assert!(parse(escape, dir.path()).is_err());
    }
}
