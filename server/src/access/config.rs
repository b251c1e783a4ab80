//! The access settings of a running server: the access mode, the trusted proxy and its user header, and
//! the client's address as they see it (docs/access.md).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderName};
use ipnet::IpNet;
use ledger::access::Access;

/// Whether reads need a credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessMode {
    /// Reads need no credential (the default on a loopback address); the page header says "open access".
    Open,
    /// Every read needs a credential (any other address, or `--access signed-in`).
    SignedIn,
}

/// Requests from these addresses carrying `header` are staff requests named by the header's value.
#[derive(Debug, Clone)]
pub struct TrustedProxy {
    pub header: HeaderName,
    pub proxies: Vec<IpNet>,
}

impl TrustedProxy {
    /// The staff name a request from `client` carries, when `client` is a trusted proxy and the header
    /// holds a plain name (1 to 256 bytes of visible ASCII, trimmed). Any other request: `None`.
    pub(crate) fn user(&self, client: IpAddr, headers: &HeaderMap) -> Option<String> {
        if !self.trusts(client) {
            return None;
        }
        let name = headers.get(&self.header)?.to_str().ok()?.trim();
        (!name.is_empty() && name.len() <= 256 && name.bytes().all(|b| b.is_ascii_graphic()))
            .then(|| name.to_owned())
    }
}

impl TrustedProxy {
    /// Whether `client` is one of the proxy's addresses.
    pub(crate) fn trusts(&self, client: IpAddr) -> bool {
        let client = canonical(client);
        self.proxies.iter().any(|net| net.contains(&client))
    }
}

/// An IPv4 address that came in as IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The access settings of a running server.
#[derive(Clone)]
pub struct AccessConfig {
    pub mode: AccessMode,
    pub store: Access,
    /// A sign-in unused this long is over (`--sign-in-idle-secs`).
    pub sign_in_idle: Duration,
    pub trusted: Option<TrustedProxy>,
}

impl AccessConfig {
    pub fn sign_in_idle_ms(&self) -> i64 {
        i64::try_from(self.sign_in_idle.as_millis()).unwrap_or(i64::MAX)
    }
}

/// The client's address (`ConnectInfo`), or `0.0.0.0` for a request that came in process.
pub fn client_ip(parts_extensions: &axum::http::Extensions) -> IpAddr {
    parts_extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([0, 0, 0, 0]), |c| canonical(c.0.ip()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::access::test_headers as headers;

    #[test]
    fn the_proxy_header_counts_only_from_a_trusted_address() {
        let t = TrustedProxy {
            header: HeaderName::from_static("x-forwarded-user"),
            proxies: vec!["10.0.0.0/8".parse().unwrap(), "::1/128".parse().unwrap()],
        };
        let h = headers(&[("x-forwarded-user", " ada ")]);
        assert_eq!(t.user("10.1.2.3".parse().unwrap(), &h), Some("ada".into()));
        assert_eq!(
            t.user("::ffff:10.1.2.3".parse().unwrap(), &h),
            Some("ada".into())
        );
        assert_eq!(t.user("::1".parse().unwrap(), &h), Some("ada".into()));
        assert_eq!(t.user("192.168.1.1".parse().unwrap(), &h), None);
        assert_eq!(t.user("10.1.2.3".parse().unwrap(), &headers(&[])), None);
        assert_eq!(
            t.user(
                "10.1.2.3".parse().unwrap(),
                &headers(&[("x-forwarded-user", "a b")])
            ),
            None
        );
    }
}
