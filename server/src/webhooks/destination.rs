//! The destination rule of webhooks (docs/api.md "Webhooks", "Destinations"): an `http://` or
//! `https://` URL with a host and no credentials, whose every address is public unless
//! `--webhook-allow-private`. Checked by `outcomes webhooks add` before anything is stored
//! ([`check_url_form`], [`check_destination`]) and again by the worker before each attempt (a name may
//! resolve elsewhere later).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Whether `ip` may receive deliveries without `--webhook-allow-private`: not loopback, private (RFC 1918,
/// unique local), link-local, shared (100.64/10), unspecified, broadcast, multicast, reserved,
/// benchmarking, documentation, or another special-purpose range that is not global (discard, ORCHID,
/// SRv6, the 6to4 relay anycast). An IPv6 address that embeds an IPv4 address is judged by the IPv4 address it embeds
/// ([`embedded_v4`]: IPv4-mapped, IPv4-translated, IPv4-compatible, NAT64, 6to4, Teredo), every one of them
/// public, so `::1` (IPv4-compatible 0.0.0.1) and `::` stay refused; docs/api.md "Webhooks",
/// "Destinations".
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(embedded) = embedded_v4(v6) {
                return embedded.iter().all(|v4| is_public_v4(*v4));
            }
            let s = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] & 0xffc0) == 0xfec0 // site-local fec0::/10
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation 2001:db8::/32
                || (s[0] == 0x3fff && (s[1] & 0xf000) == 0) // documentation 3fff::/20
                || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard-only 100::/64
                || (s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0) // benchmarking 2001:2::/48
                || (s[0] == 0x2001 && matches!(s[1] & 0xfff0, 0x0010 | 0x0020)) // ORCHID(v2)
                || s[0] == 0x5f00) // SRv6 segment identifiers 5f00::/16
        }
    }
}

/// The IPv4 addresses an IPv6 address embeds, by its form (`None` for any other IPv6 address); a
/// connection to it reaches (or is relayed to) one of them:
/// - IPv4-mapped `::ffff:0:0/96` and IPv4-translated `::ffff:0:0:0/96` (RFC 2765): the last 32 bits;
/// - IPv4-compatible `::/96` (deprecated, RFC 4291): the last 32 bits (`::1` is 0.0.0.1, `::` 0.0.0.0);
/// - NAT64 `64:ff9b::/96` (RFC 6052; the rest of `64:ff9b::/32` alike): the last 32 bits; the local-use
///   `64:ff9b:1::/48` (RFC 8215): the last 32 bits when bits 48..96 are zero (a /96 translator prefix),
///   else the address of each RFC 6052 layout a translator's prefix inside it may use (/48, /56, /64,
///   /96), so such an address passes only when every reading of it is public;
/// - 6to4 `2002::/16` (RFC 3056): bits 16..48;
/// - Teredo `2001:0::/32` (RFC 4380): the server in bits 32..64, and the client, the last 32 bits
///   inverted.
pub fn embedded_v4(v6: Ipv6Addr) -> Option<Vec<Ipv4Addr>> {
    let s = v6.segments();
    let o = v6.octets();
    let last = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    match (s[0], s[1]) {
        (0, 0) if s[2..5] == [0, 0, 0] && (s[5] == 0 || s[5] == 0xffff) => Some(vec![last]),
        (0, 0) if s[2..4] == [0, 0] && s[4] == 0xffff && s[5] == 0 => Some(vec![last]),
        (0x64, 0xff9b) if s[2] == 1 && o[6..12] == [0; 6] => Some(vec![last]),
        (0x64, 0xff9b) if s[2] == 1 => Some(vec![
            Ipv4Addr::new(o[6], o[7], o[9], o[10]),
            Ipv4Addr::new(o[7], o[9], o[10], o[11]),
            Ipv4Addr::new(o[9], o[10], o[11], o[12]),
            last,
        ]),
        (0x64, 0xff9b) => Some(vec![last]),
        (0x2002, _) => Some(vec![Ipv4Addr::new(o[2], o[3], o[4], o[5])]),
        (0x2001, 0) => Some(vec![
            Ipv4Addr::new(o[4], o[5], o[6], o[7]),
            Ipv4Addr::from(!u32::from(last)),
        ]),
        _ => None,
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || o[0] == 0
        || o[0] >= 240
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // shared 100.64/10
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // 192.0.0/24
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking 198.18/15
        || (o[0] == 192 && o[1] == 88 && o[2] == 99)) // deprecated 6to4 relay anycast 192.88.99/24
}

/// Checks a destination URL's form (no host resolution): `http` or `https`, a host, no user or password.
/// The error names the reason.
pub fn check_url_form(raw: &str) -> Result<url::Url, String> {
    let url = url::Url::parse(raw).map_err(|e| format!("{raw:?} is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{raw:?}: the scheme must be http or https, not {}",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "the URL carries credentials (a user or password before the host): they are refused; \
             the receiver verifies the signature instead"
                .into(),
        );
    }
    if url.host().is_none() {
        return Err(format!("{raw:?} has no host"));
    }
    Ok(url)
}

/// Resolves the URL's host and checks every address: all must be public unless `allow_private`. Answers
/// the addresses (a delivery connects only to them, so a name cannot resolve elsewhere in between).
pub async fn check_destination(
    url: &url::Url,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, String> {
    let addrs = resolve_destination(url).await?;
    match private_address(&addrs, allow_private) {
        Some(bad) => Err(refused_destination(bad)),
        None => Ok(addrs),
    }
}

/// The reason a destination at `ip` (not public) is refused, naming the flag that allows it.
pub(crate) fn refused_destination(ip: IpAddr) -> String {
    format!(
        "the destination is a private, loopback or link-local address ({ip}); pass \
         --webhook-allow-private to allow it"
    )
}

/// The first address of `addrs` that is not public ([`is_public`]), unless `allow_private`.
pub(crate) fn private_address(addrs: &[SocketAddr], allow_private: bool) -> Option<IpAddr> {
    if allow_private {
        return None;
    }
    addrs.iter().map(SocketAddr::ip).find(|ip| !is_public(*ip))
}

/// The URL's addresses: its IP literal, or its host name resolved (at least one address, else the
/// error names why).
pub(crate) async fn resolve_destination(url: &url::Url) -> Result<Vec<SocketAddr>, String> {
    let port = url.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = match url.host() {
        Some(url::Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(url::Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        Some(url::Host::Domain(name)) => tokio::net::lookup_host((name, port))
            .await
            .map_err(|e| format!("the host {name} does not resolve ({e})"))?
            .collect(),
        None => return Err("the URL has no host".into()),
    };
    if addrs.is_empty() {
        return Err("the host resolves to no address".into());
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_public_addresses() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a00:1",
            // Special-purpose ranges that are not global (IANA registry), found by a fresh tester.
            "3fff::1",
            "100::1",
            "2001:2::1",
            "2001:10::1",
            "2001:20::1",
            "5f00::1",
            "192.88.99.1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    /// Every IPv6 form that embeds an IPv4 address is judged by the address it embeds: wrapping
    /// 127.0.0.1 or 10.1.2.3 it is refused, wrapping 8.8.8.8 it passes (Teredo: both its server and its
    /// client, the last 32 bits inverted, must be public).
    #[test]
    fn ipv6_forms_embedding_ipv4_are_judged_by_the_embedded_address() {
        // (form, wrapping 127.0.0.1, wrapping 10.1.2.3, wrapping 8.8.8.8)
        let forms = [
            (
                "IPv4-mapped",
                "::ffff:127.0.0.1",
                "::ffff:10.1.2.3",
                "::ffff:8.8.8.8",
            ),
            (
                "IPv4-translated",
                "::ffff:0:127.0.0.1",
                "::ffff:0:10.1.2.3",
                "::ffff:0:8.8.8.8",
            ),
            ("IPv4-compatible", "::127.0.0.1", "::10.1.2.3", "::8.8.8.8"),
            (
                "NAT64",
                "64:ff9b::127.0.0.1",
                "64:ff9b::10.1.2.3",
                "64:ff9b::8.8.8.8",
            ),
            (
                "NAT64 local-use",
                "64:ff9b:1::127.0.0.1",
                "64:ff9b:1::10.1.2.3",
                "64:ff9b:1::8.8.8.8",
            ),
            // 6to4: the IPv4 address in bits 16..48 (7f00:0001 is 127.0.0.1).
            (
                "6to4",
                "2002:7f00:1::",
                "2002:a01:203::1",
                "2002:808:808::1",
            ),
            // Teredo: server in bits 32..64, client the last 32 bits inverted (80ff:fffe is
            // 127.0.0.1, f5fe:fdfc is 10.1.2.3, f7f7:f7f7 is 8.8.8.8).
            (
                "Teredo server",
                "2001:0:7f00:1::f7f7:f7f7",
                "2001:0:a01:203::f7f7:f7f7",
                "2001:0:808:808::f7f7:f7f7",
            ),
            (
                "Teredo client",
                "2001:0:808:808::80ff:fffe",
                "2001:0:808:808::f5fe:fdfc",
                "2001:0:808:808::f7f7:f7f7",
            ),
        ];
        for (form, loopback, private, public) in forms {
            for ip in [loopback, private] {
                assert!(!is_public(ip.parse().unwrap()), "{form} {ip}");
            }
            assert!(is_public(public.parse().unwrap()), "{form} {public}");
        }
        // `::1` and `::` embed 0.0.0.1 and 0.0.0.0: refused.
        assert!(!is_public("::1".parse().unwrap()));
        assert!(!is_public("::".parse().unwrap()));
        // A local-use NAT64 address in another layout than /96 passes only if every reading is public:
        // the /48 layout of 127.0.0.1 with 8.8.8.8 in the last 32 bits is refused.
        assert!(!is_public("64:ff9b:1:7f00:0:1:808:808".parse().unwrap()));
        // Not an embedding form: judged as IPv6.
        assert_eq!(embedded_v4("2606:4700::1111".parse().unwrap()), None);
    }

    #[tokio::test]
    async fn destinations_are_refused_naming_the_reason() {
        let e = check_url_form("not a url").unwrap_err();
        assert!(e.contains("not a URL"), "{e}");
        let e = check_url_form("https://user:pw@example.com/h").unwrap_err();
        assert!(e.contains("credentials"), "{e}");
        let e = check_url_form("ftp://example.com/h").unwrap_err();
        assert!(e.contains("scheme"), "{e}");
        let u = check_url_form("http://10.0.0.7:8080/h").unwrap();
        let e = check_destination(&u, false).await.unwrap_err();
        assert!(e.contains("private") && e.contains("10.0.0.7"), "{e}");
        assert!(check_destination(&u, true).await.is_ok());
        let u = check_url_form("http://localhost:9/h").unwrap();
        assert!(check_destination(&u, false).await.is_err());
        let u = check_url_form("http://[::1]:9/h").unwrap();
        assert!(check_destination(&u, false).await.is_err());
        let u = check_url_form("https://93.184.215.14/h").unwrap();
        assert!(check_destination(&u, false).await.is_ok());
    }
}
