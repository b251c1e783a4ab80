//! `outcomes mcp-proxy --url` (docs/mcp-proxy.md "Remote servers (Streamable HTTP)"): the pure parts of
//! the Streamable HTTP upstream: `--header` values, and what an HTTP answer or failure means for the
//! calls its request carried ([`Verdict`]). The transport itself is `proxy::http`.

use http::{HeaderName, HeaderValue, StatusCode};

/// A `--header 'Name: value'`: sent on every request to the server (static credentials: `Authorization:
/// Bearer …`, an API key).
#[derive(Debug, Clone)]
pub struct StaticHeader {
    pub name: HeaderName,
    pub value: HeaderValue,
}

/// The headers the proxy sets itself (MCP Streamable HTTP, HTTP framing): a `--header` naming one is an
/// error at start.
const SET_BY_THE_PROXY: [&str; 9] = [
    "accept",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// Parses `--header 'Name: value'` (clap's value parser): the name a valid HTTP field name, not one the
/// proxy sets itself ([`SET_BY_THE_PROXY`]); the value (blanks around it trimmed) a valid HTTP field
/// value, not empty. `Authorization`, `Cookie` and `Proxy-Authorization` values are marked sensitive
/// (never printed in logs). Errors are sentences clap prints after the option.
pub fn parse_header(s: &str) -> Result<StaticHeader, String> {
    let Some((name, value)) = s.split_once(':') else {
        return Err("expected 'Name: value' (a colon after the header's name)".into());
    };
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("{:?} is not a valid HTTP header name", name.trim()))?;
    if SET_BY_THE_PROXY.contains(&name.as_str()) {
        return Err(format!(
            "{name} is set by the proxy itself (MCP Streamable HTTP), not by --header"
        ));
    }
    let value = value.trim();
    if value.is_empty() {
        return Err(format!("the value of {name} is empty"));
    }
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        format!("the value of {name} is not a valid HTTP header value (a control character)")
    })?;
    if matches!(
        name.as_str(),
        "authorization" | "proxy-authorization" | "cookie"
    ) {
        value.set_sensitive(true);
    }
    Ok(StaticHeader { name, value })
}

/// Checks `--url`: an absolute `http` or `https` URL (clap's value parser).
pub fn parse_url(s: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(s).map_err(|e| format!("not a URL: {e}"))?;
    match url.scheme() {
        "http" | "https" if url.host().is_some() => Ok(url),
        "http" | "https" => Err("the URL has no host".into()),
        other => Err(format!(
            "the scheme is {other:?}: a Streamable HTTP server is reached by http:// or https://"
        )),
    }
}

/// What a failed or refused request to the server means for the protected calls in it
/// (docs/mcp-proxy.md "Remote servers (Streamable HTTP)").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The server did not process the request (nothing was sent, or it was refused before it was read):
    /// a protected call is cancelled (`not_executed`), the client is told nothing was called.
    NotExecuted,
    /// The request was sent and what the server did with it is not known: `outcome_unknown`.
    Unknown,
}

/// The verdict of an HTTP status other than 200 (an answer), 202 and 204 (accepted, no body), with why,
/// for docs/mcp-proxy.md's table:
/// - 401, 403: the server refused the credentials before reading the message;
/// - 400: MCP Streamable HTTP answers 400 to a request it does not accept (no or an unknown session id
///   where one is required, an unsupported `MCP-Protocol-Version`, a body that is no JSON-RPC);
/// - 404: the session ended (MCP: a server MUST answer 404 to a session id it ended);
/// - 405, 406, 413, 415, 422: refused by HTTP's own rules before processing (method not allowed at the
///   endpoint, no acceptable answer type, content too large, unsupported media type, content it cannot
///   process: RFC 9110 §15.5);
/// - any other status (3xx: redirects are not followed, a POST sent elsewhere would be a second call;
///   408, 409, 429 and the other 4xx; every 5xx): the request may have been processed, `outcome_unknown`.
pub fn status_verdict(status: StatusCode) -> (Verdict, &'static str) {
    match status.as_u16() {
        401 | 403 => (
            Verdict::NotExecuted,
            "the server refused the credentials before reading the request",
        ),
        400 => (
            Verdict::NotExecuted,
            "the server did not accept the request (MCP Streamable HTTP: a missing or unknown session, \
             an unsupported protocol version, or a body that is no JSON-RPC)",
        ),
        404 => (
            Verdict::NotExecuted,
            "the server does not know the session (MCP Streamable HTTP: it ended or expired)",
        ),
        405 | 406 | 413 | 415 | 422 => (
            Verdict::NotExecuted,
            "the server refused the request before processing it (RFC 9110)",
        ),
        300..=399 => (
            Verdict::Unknown,
            "the server redirected the request (not followed: it would be sent a second time)",
        ),
        500..=599 => (
            Verdict::Unknown,
            "a server error: the request may have been processed",
        ),
        _ => (
            Verdict::Unknown,
            "an answer that does not say whether the request was processed",
        ),
    }
}

/// The verdict of a request that got no HTTP answer (`connect`: `reqwest::Error::is_connect`, the
/// connection could not be made, DNS included, so nothing was sent; anything else: the request was
/// sent, or may have been, and the connection was lost before the answer).
pub fn transport_verdict(connect: bool) -> Verdict {
    if connect {
        Verdict::NotExecuted
    } else {
        Verdict::Unknown
    }
}

/// How a 200 answer's body is framed, by its `Content-Type` (parameters ignored, case-insensitive):
/// `application/json` (one message or a batch), `text/event-stream` (SSE), or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Json,
    EventStream,
    Other,
}

pub fn framing(content_type: Option<&HeaderValue>) -> Framing {
    let Some(mime) = content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<mime::Mime>().ok())
    else {
        return Framing::Other;
    };
    if mime.type_() == mime::APPLICATION && mime.subtype() == mime::JSON {
        Framing::Json
    } else if mime.type_() == mime::TEXT && mime.subtype() == mime::EVENT_STREAM {
        Framing::EventStream
    } else {
        Framing::Other
    }
}

/// One JSON text (an `application/json` body, an SSE event's data) as one line for the client: its
/// bytes with every CR and LF replaced by a space, then a newline. Outside strings, where JSON escapes
/// them, CR and LF can only be blanks between tokens, so the content is unchanged (docs/mcp-proxy.md
/// "Remote servers": re-framed, never changed in content); a text that is no JSON is framed the same way.
pub fn as_line(json: &[u8]) -> Vec<u8> {
    let mut line: Vec<u8> = json
        .iter()
        .map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b })
        .collect();
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_name_and_value_and_refuse_what_the_proxy_sets() {
        let h = parse_header("Authorization: Bearer abc.def").expect("parse");
        assert_eq!(h.name, http::header::AUTHORIZATION);
        assert_eq!(h.value, "Bearer abc.def");
        assert!(h.value.is_sensitive());
        let h = parse_header("X-Api-Key:k1 ").expect("no blank after the colon");
        assert_eq!(
            (h.name.as_str(), h.value.to_str().ok()),
            ("x-api-key", Some("k1"))
        );
        assert!(!h.value.is_sensitive());
        // A colon inside the value stays in it.
        assert_eq!(
            parse_header("X-Url: http://a:1/b").expect("parse").value,
            "http://a:1/b"
        );
        for (bad, why) in [
            ("Authorization Bearer x", "colon"),
            (": x", "name"),
            ("Bad Name: x", "name"),
            ("X-A:", "empty"),
            ("X-A: a\u{1}b", "valid HTTP header value"),
            ("Mcp-Session-Id: s", "set by the proxy"),
            ("accept: */*", "set by the proxy"),
            ("Content-Type: text/plain", "set by the proxy"),
        ] {
            let e = parse_header(bad).expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn urls_are_http_or_https_with_a_host() {
        assert_eq!(
            parse_url("https://mcp.example.com/mcp")
                .expect("https")
                .as_str(),
            "https://mcp.example.com/mcp"
        );
        assert!(parse_url("http://127.0.0.1:5710/mcp").is_ok());
        for bad in ["ftp://x/mcp", "mcp", "/mcp", "file:///tmp/x", "http://"] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    /// docs/mcp-proxy.md "Remote servers (Streamable HTTP)", the table.
    #[test]
    fn the_status_table() {
        let v = |s: u16| status_verdict(StatusCode::from_u16(s).expect("status")).0;
        for s in [400, 401, 403, 404, 405, 406, 413, 415, 422] {
            assert_eq!(v(s), Verdict::NotExecuted, "{s}");
        }
        for s in [
            301, 302, 307, 308, 402, 408, 409, 410, 429, 451, 500, 501, 502, 503, 504, 599, 201,
            206,
        ] {
            assert_eq!(v(s), Verdict::Unknown, "{s}");
        }
        assert_eq!(transport_verdict(true), Verdict::NotExecuted);
        assert_eq!(transport_verdict(false), Verdict::Unknown);
    }

    #[test]
    fn answers_are_framed_by_their_content_type() {
        let f = |s: &str| framing(Some(&HeaderValue::from_str(s).expect("value")));
        assert_eq!(f("application/json"), Framing::Json);
        assert_eq!(f("application/json; charset=utf-8"), Framing::Json);
        assert_eq!(f("Text/Event-Stream"), Framing::EventStream);
        assert_eq!(f("text/html"), Framing::Other);
        assert_eq!(f("nonsense"), Framing::Other);
        assert_eq!(framing(None), Framing::Other);
    }

    #[test]
    fn a_json_text_becomes_one_line_with_the_same_content() {
        let pretty = b"{\r\n  \"id\": 1,\n  \"result\": {\"text\": \"a\\nb\"}\n}";
        let line = as_line(pretty);
        assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        assert_eq!(line.last(), Some(&b'\n'));
        let a: serde_json::Value = serde_json::from_slice(pretty).expect("json");
        let b: serde_json::Value = serde_json::from_slice(&line).expect("json");
        assert_eq!(a, b);
        assert_eq!(as_line(b"{}"), b"{}\n");
    }
}
