//! The client side of the host write API (docs/api.md "Host write API (`/api/host`, `Authorization:
//! Bearer <host token>`)"), shared by `outcomes demo` and `outcomes import`: the server's base URL, the host
//! token read as `outcomes serve` reads it ([`crate::auth::read_host_token`]), bearer auth on every request,
//! and URLs built segment by segment with [`url::Url::path_segments_mut`] (each segment percent-encoded by
//! `url`, never by hand).

use std::path::{Path, PathBuf};

use url::Url;

/// How `demo` and `import` reach the server as the host: its URL and the host token (given, or read from
/// `<data dir>/host-token` like `serve` does: [`crate::auth::read_host_token`]).
#[derive(Debug, Clone, clap::Args)]
pub struct HostArgs {
    /// The running server.
    #[arg(long, env = "OUTCOMES_SERVER", default_value = "http://127.0.0.1:3000")]
    pub server: url::Url,
    /// Host token. Default: read from `<data dir>/host-token`.
    #[arg(long, env = "OUTCOMES_HOST_TOKEN", hide_env_values = true)]
    pub host_token: Option<String>,
    /// The server's data directory, where the host token is read when none is given.
    #[arg(long, env = "OUTCOMES_DATA_DIR", default_value = "data")]
    pub data_dir: PathBuf,
}

/// A client of one running server's host API. Cheap to clone (the connection pool is shared).
#[derive(Debug, Clone)]
pub struct HostClient {
    http: reqwest::Client,
    base: Url,
    token: String,
}

impl HostClient {
    /// A client of the server at `base`, with the host token `given` when it is not blank, else the one in
    /// `<data dir>/host-token` (both trimmed, as `outcomes serve` reads them). Error, as a sentence: no
    /// token given and the file unreadable or blank, `no host token given and none readable in <data
    /// dir>: <why>`.
    pub fn new(base: Url, given: Option<&str>, data_dir: &Path) -> Result<Self, String> {
        let (token, _) = crate::auth::read_host_token(given, data_dir).map_err(|e| {
            format!(
                "no host token given and none readable in {}: {e}",
                data_dir.display()
            )
        })?;
        Ok(HostClient {
            http: reqwest::Client::new(),
            base,
            token,
        })
    }

    /// The URL of the path `segments` on the server, resolved as the relative path `a/b/c` is against the
    /// base by [`Url::join`] (the base's last segment replaced, so `http://h/` and `http://h/x` give
    /// `http://h/a/b/c` and `http://h/x/` gives `http://h/x/a/b/c`; the base's query and fragment dropped).
    /// Each segment is percent-encoded as a path segment (a `/` in it included); `url` skips a segment
    /// that is exactly `.` or `..`. Error: a base that cannot be a base (e.g. `mailto:`), as `Url::join`
    /// reports it.
    pub fn url(&self, segments: &[&str]) -> Result<Url, url::ParseError> {
        let mut url = self.base.clone();
        url.set_query(None);
        url.set_fragment(None);
        url.path_segments_mut()
            .map_err(|()| url::ParseError::RelativeUrlWithCannotBeABaseBase)?
            .pop()
            .extend(segments);
        Ok(url)
    }

    /// A request of `method` to `url` carrying `Authorization: Bearer <host token>`.
    pub fn request(&self, method: reqwest::Method, url: Url) -> reqwest::RequestBuilder {
        self.http.request(method, url).bearer_auth(&self.token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(base: &str) -> HostClient {
        HostClient {
            http: reqwest::Client::new(),
            base: Url::parse(base).expect("url"),
            token: "t".into(),
        }
    }

    #[test]
    fn urls_resolve_as_a_relative_join_would_with_each_segment_encoded() {
        for base in [
            "http://127.0.0.1:3000",
            "http://127.0.0.1:3000/",
            "http://127.0.0.1:3000/x",
            "http://127.0.0.1:3000/x/?q=1#f",
        ] {
            let c = client(base);
            let joined = c.base.join("api/host/batch").expect("join");
            assert_eq!(
                c.url(&["api", "host", "batch"]).expect("url"),
                joined,
                "{base}"
            );
        }
        let c = client("http://h/");
        assert_eq!(
            c.url(&["sessions", "a b/c?d#e%f"]).expect("url").as_str(),
            "http://h/sessions/a%20b%2Fc%3Fd%23e%25f"
        );
        // As `Url::join` refuses it.
        let cannot = Url::parse("mailto:x@example.com").expect("url");
        assert_eq!(
            cannot.join("a"),
            Err(url::ParseError::RelativeUrlWithCannotBeABaseBase)
        );
        assert_eq!(
            client(cannot.as_str()).url(&["a"]),
            Err(url::ParseError::RelativeUrlWithCannotBeABaseBase)
        );
    }
}
