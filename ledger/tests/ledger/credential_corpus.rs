//! The corpus of the shared credential detector (docs/design.md "Decisions where the sources are silent": one
//! shared detector, tested on a corpus of positives and near misses). Every secret here is SYNTHETIC: it has a provider's format and
//! is built from repeated filler, never a real key.

use ledger::credential::{redact_credentials, resembles_credential, REDACTION_MARKER};

/// `unit` repeated until it is exactly `len` characters long (ASCII only).
fn fill(unit: &str, len: usize) -> String {
    unit.repeat(len / unit.len() + 1)[..len].to_owned()
}

/// Tokens that are wholly a credential: the whole token becomes the marker.
fn whole_token_positives() -> Vec<(&'static str, String)> {
    let b62 = "aB3dE5fG7h";
    let hex = "0a1b2c3d4e5f6789";
    vec![
        ("aws access key id", "AKIAIOSFODNN7EXAMPLE".to_owned()),
        (
            "aws temporary key id",
            format!("ASIA{}", fill("Q7RZ2XK4", 16)),
        ),
        ("aws role id", format!("AROA{}", fill("3MZ7Q2", 16))),
        ("google api key", format!("AIza{}", fill("Sy9-aB3_dE5", 35))),
        ("digitalocean token", format!("dop_v1_{}", fill(hex, 64))),
        (
            "vault service token",
            format!("hvs.{}", fill("CAESIb3X9k", 28)),
        ),
        ("github classic pat", format!("ghp_{}", fill(b62, 36))),
        ("github oauth token", format!("gho_{}", fill(b62, 36))),
        (
            "github user-to-server token",
            format!("ghu_{}", fill(b62, 36)),
        ),
        (
            "github server-to-server token",
            format!("ghs_{}", fill(b62, 36)),
        ),
        ("github refresh token", format!("ghr_{}", fill(b62, 36))),
        (
            "github fine-grained pat",
            format!("github_pat_11{}_{}", fill("ABCDE2345", 20), fill(b62, 59)),
        ),
        ("gitlab pat", format!("glpat-{}", fill("xY7_zW3-", 20))),
        (
            "gitlab deploy token",
            format!("gldt-{}", fill("Qw3Rt5Yu", 20)),
        ),
        ("npm token", format!("npm_{}", fill(b62, 36))),
        (
            "pypi token",
            format!("pypi-AgEIcHlwaS5vcmc{}", fill("Ab3_Cd5-", 60)),
        ),
        (
            "atlassian api token",
            format!("ATATT3xFfGF0{}", fill("T9sW_k=", 60)),
        ),
        (
            "postman api key",
            format!("PMAK-{}-{}", fill(hex, 24), fill(hex, 34)),
        ),
        ("databricks token", format!("dapi{}", fill(hex, 32))),
        ("shopify access token", format!("shpat_{}", fill(hex, 32))),
        (
            "slack bot token",
            format!(
                "xoxb-{}-{}-{}",
                "1234567890",
                "1234567890123",
                fill(b62, 24)
            ),
        ),
        (
            "slack user token",
            format!("xoxp-{}-{}", "1234567890", fill(b62, 32)),
        ),
        (
            "slack app token",
            format!("xapp-1-A0{}-{}", "12345678", fill(hex, 64)),
        ),
        (
            "telegram bot token",
            format!("123456789:AA{}", fill("Hk3-x_Q9z", 33)),
        ),
        (
            "stripe live secret key",
            format!("sk_live_{}", fill(b62, 24)),
        ),
        (
            "stripe test secret key",
            format!("sk_test_{}", fill(b62, 24)),
        ),
        (
            "stripe restricted key",
            format!("rk_live_{}", fill(b62, 24)),
        ),
        ("stripe webhook secret", format!("whsec_{}", fill(b62, 32))),
        (
            "square access token",
            format!("sq0atp-{}", fill("Ab3-Cd5_", 22)),
        ),
        (
            "sendgrid api key",
            format!("SG.{}.{}", fill("Ab3-Cd5_", 22), fill(b62, 43)),
        ),
        ("twilio api key", format!("SK{}", fill(hex, 32))),
        ("mailchimp api key", format!("{}-us21", fill(hex, 32))),
        ("openai legacy key", format!("sk-{}", fill(b62, 48))),
        (
            "openai project key",
            format!("sk-proj-{}", fill("Ab3_Cd5-Ef7", 120)),
        ),
        (
            "anthropic api key",
            format!("sk-ant-api03-{}", fill("Ab3_Cd5-Ef7", 95)),
        ),
        ("hugging face token", format!("hf_{}", fill(b62, 34))),
        ("groq key", format!("gsk_{}", fill(b62, 52))),
        ("replicate token", format!("r8_{}", fill(b62, 37))),
        ("xai key", format!("xai-{}", fill(b62, 80))),
        ("perplexity key", format!("pplx-{}", fill(b62, 48))),
        ("linear api key", format!("lin_api_{}", fill(b62, 40))),
        (
            "jwt",
            format!(
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.{}",
                fill("SflKxwRJSM_eKKF2-QT4f", 43)
            ),
        ),
        (
            "pem private key block",
            format!(
                "-----BEGIN RSA PRIVATE KEY-----\n{}\n{}\n-----END RSA PRIVATE KEY-----",
                fill("MIIEow+IBAAKCAQ/", 64),
                fill("b3BlbnNzaC1rZXk=", 40)
            ),
        ),
        (
            "pem openssh private key block",
            format!(
                "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----",
                fill("b3BlbnNzaC1rZXktdjE", 70)
            ),
        ),
        (
            "pem pgp private key block",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF0=\n-----END PGP PRIVATE KEY BLOCK-----"
                .to_owned(),
        ),
        (
            "pem private key without its end line",
            format!(
                "-----BEGIN PRIVATE KEY-----\n{}",
                fill("MIIEvQIBADANBgkq", 64)
            ),
        ),
    ]
}

#[test]
fn every_provider_token_format_is_a_credential_and_is_redacted_whole() {
    for (label, token) in whole_token_positives() {
        assert!(resembles_credential(&token), "{label}: {token}");
        let text = format!("deploy with {token} now");
        assert!(resembles_credential(&text), "{label} in text");
        assert_eq!(
            redact_credentials(&text),
            format!("deploy with {REDACTION_MARKER} now"),
            "{label}"
        );
    }
}

#[test]
fn webhook_urls_keep_their_host_and_lose_their_secret_path() {
    let slack = format!(
        "https://hooks.slack.com/services/T0ABC1234/B0DEF5678/{}",
        fill("aB3dE5fG7h", 24)
    );
    let discord = format!(
        "https://discord.com/api/webhooks/123456789012345678/{}",
        fill("Ab3_Cd5-Ef7", 68)
    );
    let teams = "https://acme.webhook.office.com/webhookb2/1a2b3c4d-0000-1111-2222-333344445555@9f8e/IncomingWebhook/abc123/def456";
    for (url, kept) in [
        (slack.as_str(), "https://hooks.slack.com/"),
        (discord.as_str(), "https://discord.com/api/webhooks/"),
        (teams, "https://acme.webhook.office.com/"),
    ] {
        assert!(resembles_credential(url), "{url}");
        assert_eq!(
            redact_credentials(&format!("hook: {url} (ops)")),
            format!("hook: {kept}{REDACTION_MARKER} (ops)")
        );
    }
    // The secret part of a Slack webhook path is recognised on its own too (a URL sanitiser sees a path).
    assert!(resembles_credential(&format!(
        "/services/T0ABC1234/B0DEF5678/{}",
        fill("aB3dE5fG7h", 24)
    )));
}

#[test]
fn authorization_values_are_redacted_and_the_scheme_word_stays() {
    let cases = [
        (
            "Authorization: Bearer abc123DEF456ghi789".to_owned(),
            "Authorization: Bearer [redacted]",
        ),
        ("bearer a1b2c3d4e5f6".to_owned(), "bearer [redacted]"),
        ("Basic dXNlcjpwYXNzd29yZA==".to_owned(), "Basic [redacted]"),
        (
            "BASIC YWxhZGRpbjpvcGVuc2VzYW1l".to_owned(),
            "BASIC [redacted]",
        ),
        (
            format!("Bearer {}", fill("abcdefghijklmnopqrstuvwxyz", 32)),
            "Bearer [redacted]",
        ),
    ];
    for (text, want) in cases {
        assert!(resembles_credential(&text), "{text}");
        assert_eq!(redact_credentials(&text), want);
    }
}

#[test]
fn secret_pairs_are_redacted_and_the_key_stays() {
    let cases = [
        ("password=hunter2", "password=[redacted]"),
        ("password=secret", "password=[redacted]"),
        ("PASSWORD = Tr0ub4dor-3", "PASSWORD = [redacted]"),
        ("api_key: abc123", "api_key: [redacted]"),
        // Found by a tester: all-letter values after an explicit header or key word, and unbroken sk- keys.
        (
            "Authorization: Bearer abcdefghijkl",
            "Authorization: Bearer [redacted]",
        ),
        (
            "api_key: sk-abcdefghijklmnopqrstuvwx",
            "api_key: [redacted]",
        ),
        (
            "key sk-abcdefghijklmnopqrstuvwx here",
            "key [redacted] here",
        ),
        ("API-KEY:xyz789xyz", "API-KEY:[redacted]"),
        ("apikey=0123456789abcdef", "apikey=[redacted]"),
        ("x-api-key: Zx9YwvU8", "x-api-key: [redacted]"),
        ("client_secret=s3cr3t-value", "client_secret=[redacted]"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG",
            "aws_secret_access_key = [redacted]",
        ),
        ("access_token=ya29.a0AfH6SMBx", "access_token=[redacted]"),
        ("refresh-token: 1//0gLx9Ab", "refresh-token: [redacted]"),
        ("?user=ann&token=abc&x=1", "?user=ann&token=[redacted]&x=1"),
        (
            r#"{"password": "hunter2"}"#,
            r#"{"password": "[redacted]"}"#,
        ),
        ("passphrase: 'Correct-Horse-9'", "passphrase: '[redacted]'"),
        ("db.password:=p4ss", "db.password:=[redacted]"),
        ("credentials => Abc123Def", "credentials => [redacted]"),
        ("AccountKey=Eby8vdM02xNOcqFl", "AccountKey=[redacted]"),
        ("private_key: MIIEvQIB", "private_key: [redacted]"),
    ];
    for (text, want) in cases {
        assert!(resembles_credential(text), "{text}");
        assert_eq!(redact_credentials(text), want, "{text}");
    }
}

#[test]
fn url_userinfo_is_a_credential_and_only_the_userinfo_is_redacted() {
    let cases = [
        (
            "https://user:pass@example.com/x",
            "https://[redacted]@example.com/x",
        ),
        (
            "clone https://deploy:s3cret@git.example.org/r.git",
            "clone https://[redacted]@git.example.org/r.git",
        ),
        (
            "postgres://app:pw@db:5432/prod",
            "postgres://[redacted]@db:5432/prod",
        ),
        (
            "https://oauth2:v1.abcdef0123456789@gitlab.example.com/o/r",
            "https://[redacted]@gitlab.example.com/o/r",
        ),
        (
            "https://0123456789abcdef0123@registry.example.com",
            "https://[redacted]@registry.example.com",
        ),
    ];
    for (text, want) in cases {
        assert!(resembles_credential(text), "{text}");
        assert_eq!(redact_credentials(text), want);
    }
}

#[test]
fn a_path_parameter_naming_a_session_or_secret_is_a_credential_and_its_name_stays() {
    let cases = [
        (
            "open https://h.example/app;jsessionid=1A2B3C4D5E6F/view now",
            "open https://h.example/app;jsessionid=[redacted]/view now",
        ),
        (
            "/shop;JSESSIONID=0123456789abcdef.node1?x=1",
            "/shop;JSESSIONID=[redacted]?x=1",
        ),
        (
            "/index.php;PHPSESSID=el4ukv0kqbvoirg7nkp4dncpk3",
            "/index.php;PHPSESSID=[redacted]",
        ),
        ("/a;sid=42/b", "/a;sid=[redacted]/b"),
        ("/a;Session=s-1#top", "/a;Session=[redacted]#top"),
        ("/a;sessionid=s1", "/a;sessionid=[redacted]"),
        ("/a;session-id=s1", "/a;session-id=[redacted]"),
        ("/a;auth=opaque", "/a;auth=[redacted]"),
        ("/a;aspsessionid=QWERTY", "/a;aspsessionid=[redacted]"),
    ];
    for (text, want) in cases {
        assert!(resembles_credential(text), "{text}");
        assert_eq!(redact_credentials(text), want, "{text}");
    }
    assert_eq!(redact_credentials("/a;TOKEN=abc"), "/a;TOKEN=[redacted]");
    // Other path parameters, names that only start like a session word, and names without a value.
    for s in [
        "/a;v=1/b",
        "/a;v=1;lang=en",
        "/layout;sidebar=left",
        "/cart;session_type=guest",
        "/a;authors=ann",
        "/a;sid",
        "/a;sid=/b",
        "/a;jsessionid=",
        "a; sid=1",
    ] {
        assert!(!resembles_credential(s), "{s}");
        assert_eq!(redact_credentials(s), s);
    }
}

#[test]
fn ordinary_identifiers_and_words_are_not_credentials() {
    let near_misses = [
        // Seed 002's operation id: a SHA-256 hex digest.
        "b4e2e169b2264541026a9e029771066a34e26a40fed7bd68f0b4f65a01c0bb2b",
        "B4E2E169B2264541026A9E029771066A34E26A40FED7BD68F0B4F65A01C0BB2B",
        "sha256:b4e2e169b2264541026a9e029771066a34e26a40fed7bd68f0b4f65a01c0bb2b",
        "9fceb02d0ae598e95dc970b74767f19372d61af8",
        "9fceb02",
        "123e4567-e89b-12d3-a456-426614174000",
        "0190f2a8-7c1e-7b3a-9e2d-5f4c3b2a1d0e",
        "419",
        "#419",
        "issue #419",
        "18446744073709551615",
        "server-confirmed-id",
        "task-list",
        "token-bucket",
        "secret-santa-2024",
        "tokens: 5",
        "max_tokens=100",
        "token_count: 12",
        "sk-learn-pipeline-2024-v2",
        "ask-anything-version-2024-release",
        "desk-booking-system-42",
        "ASIA-PACIFIC",
        "AKIA",
        "AKIAIOSFODNN7EXAMPL",
        "ghp_short",
        "github_pat_",
        "xoxb-short",
        "eyJhbGciOiJIUzI1NiJ9",
        "Bearer of bad news",
        "The bearer bond",
        "Basic Instinct",
        "Basic setup for 2024",
        "Password policy",
        "Password reset link sent",
        "Password: required",
        "Secret: Santa",
        "API key rotation",
        "Rotate the api key for the billing service",
        "mcp__dashboards__create",
        "https://app.example.com/d/server-confirmed-id",
        "ssh://git@github.com/org/repo.git",
        "git@github.com:org/repo.git",
        "mailto:ops@example.com",
        "someone@example.com",
        "Refund rounds a half cent down on order-77",
        "-----BEGIN PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----",
        "v1.2.3",
        "2024-05-01T12:00:00Z",
        "Service overview",
        "dashboard/prod/latency-p99",
    ];
    for s in near_misses {
        assert!(
            !resembles_credential(s),
            "{s:?} is an ordinary identifier or text"
        );
        assert_eq!(redact_credentials(s), s);
    }
}

#[test]
fn redaction_is_idempotent_and_never_matches_its_own_marker() {
    let inputs = [
        format!("a {REDACTION_MARKER} b"),
        format!("password={REDACTION_MARKER}"),
        format!("Bearer {REDACTION_MARKER}"),
        format!("https://{REDACTION_MARKER}@example.com"),
        format!("AIza{}AKIAIOSFODNN7EXAMPLE", fill("Sy9-aB3_dE5", 35)),
        format!(
            "token=abc Bearer zz9ZZ9zz9ZZ9 {} ghp_{}",
            "AKIAIOSFODNN7EXAMPLE",
            fill("aB3", 36)
        ),
    ];
    for input in inputs {
        let once = redact_credentials(&input);
        assert_eq!(redact_credentials(&once), once, "{input}");
        assert!(!resembles_credential(&once), "{once}");
    }
}

#[test]
fn a_token_glued_behind_a_fixed_length_token_is_redacted_too() {
    let text = format!("AIza{}AKIAIOSFODNN7EXAMPLE", fill("Sy9-aB3_dE5", 35));
    assert_eq!(
        redact_credentials(&text),
        format!("{REDACTION_MARKER}{REDACTION_MARKER}")
    );
}

#[test]
fn a_prefix_of_redacted_text_holds_no_credential() {
    // No rule looks past the end of its match, so cutting redacted text short cannot complete a credential
    // (the title's 512-byte truncation relies on this).
    let text = format!(
        "see AKIAIOSFODNN7EXAMPLEXYZ and password=hunter2 and Bearer abc123DEF456 and ghp_{}",
        fill("aB3", 40)
    );
    let redacted = redact_credentials(&text);
    for end in (0..=redacted.len()).filter(|e| redacted.is_char_boundary(*e)) {
        assert!(
            !resembles_credential(&redacted[..end]),
            "{:?}",
            &redacted[..end]
        );
    }
}

#[test]
fn each_pem_begin_line_is_closed_by_the_first_end_line_after_it() {
    let body = fill("MIIEvQIBADANBgkq", 64);
    let block = format!("-----BEGIN PRIVATE KEY-----{body}-----END PRIVATE KEY-----");
    assert_eq!(
        redact_credentials(&format!("a {block} b {block} c")),
        format!("a {REDACTION_MARKER} b {REDACTION_MARKER} c")
    );
    // Unterminated BEGIN lines (many of them, as a hostile title might hold) lose their bodies only.
    let open = format!("-----BEGIN PRIVATE KEY-----{body} x ");
    assert_eq!(
        redact_credentials(&open.repeat(500)),
        format!("{REDACTION_MARKER} x ").repeat(500)
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Credentials, near misses and glue, so that redactions meet and overlap.
    const PIECES: &[&str] = &[
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_aB3dE5fG7haB3dE5fG7haB3dE5fG7haB3dE5",
        "AIzaSy9-aB3_dE5Sy9-aB3_dE5Sy9-aB3_dE5Sy",
        "sk-aB3dE5fG7haB3dE5fG7haB3d",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.",
        "-----BEGIN PRIVATE KEY-----",
        "-----END PRIVATE KEY-----",
        "MIIEvQIBADANBgkq",
        "password",
        "api_key",
        "token",
        "=",
        ":",
        ":=",
        " ",
        "\"",
        "'",
        "Bearer ",
        "Basic ",
        "abc123DEF456",
        "hunter2",
        "https://",
        "user:pw@",
        "@",
        "/",
        "hooks.slack.com/services/",
        "T0ABC1234/B0DEF5678/",
        ";jsessionid=",
        ";SID=",
        ";v=",
        "[redacted]",
        "[",
        "]",
        "a",
        "Z",
        "7",
        "_",
        "-",
        ".",
        "é",
        "😀",
    ];

    fn soup() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(PIECES), 0..30).prop_map(|p| p.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn redacted_text_and_all_its_prefixes_hold_no_credential(s in soup()) {
            let redacted = redact_credentials(&s);
            prop_assert!(!resembles_credential(&redacted), "{:?} -> {:?}", s, redacted);
            prop_assert_eq!(&redact_credentials(&redacted), &redacted);
            for end in (0..=redacted.len()).filter(|e| redacted.is_char_boundary(*e)) {
                prop_assert!(
                    !resembles_credential(&redacted[..end]),
                    "prefix {:?} of {:?}",
                    &redacted[..end],
                    redacted
                );
            }
        }
    }
}
