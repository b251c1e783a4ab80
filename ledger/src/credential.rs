//! The one credential detector shared by every sanitiser (docs/design.md "Decisions where the sources are silent":
//! "resembles a credential"; credential-like words need a value).
//!
//! A credential is recognised by its shape, never by its entropy alone, so ordinary identifiers (SHA-256 hex
//! digests such as a seed 002 operation id, git SHAs, UUIDs, numeric ids, slugs, issue numbers) pass
//! untouched. Detected shapes:
//! - provider token formats: cloud keys (AWS `AKIA…`/`ASIA…`, Google `AIza…`, DigitalOcean, Vault), code
//!   hosts and registries (GitHub `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_`/`github_pat_`, GitLab `glpat-`…, npm
//!   `npm_`, PyPI, Atlassian, Postman, Databricks, Shopify), chat (Slack `xox?-`/`xapp-` and webhooks,
//!   Discord and Teams webhooks, Telegram bot tokens), payment and mail (Stripe `sk_`/`rk_` live and test,
//!   `whsec_`, Square, SendGrid, Twilio, Mailchimp), model providers (OpenAI `sk-`/`sk-proj-`, Anthropic
//!   `sk-ant-`, Hugging Face, Groq, Replicate, xAI, Perplexity, Linear);
//! - JWTs (`eyJ….eyJ….…`) and PEM private key blocks (terminated or not);
//! - `Bearer`/`Basic` authorization values and `password=`/`api_key:`-style pairs, but only when a
//!   token-like value follows the word ("Bearer of bad news" and "Password policy" are text);
//! - URL userinfo with a password (`https://user:pass@host`) or a token-like user name;
//! - a path parameter naming a session or a secret (`;jsessionid=…`, `;phpsessid=…`, `;sid=…`,
//!   `;session=…`, `;token=…`, `;auth=…`, any case) with a non-empty value: servlet containers and PHP put
//!   the session in the URL path this way (docs/design.md "Decisions where the sources are silent"; in
//!   `docs/design.md`). Any other `;` parameter (`/a;v=1/b`) is text.
//!
//! No pattern looks past the end of the credential it matches, so a prefix of text without credentials has
//! none either: cutting a redacted title short (the 512-byte truncation) cannot expose a new one.

use std::ops::Range;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};

/// The marker that replaces a credential-like substring of a title (`"[redacted]"`, 10 bytes).
pub const REDACTION_MARKER: &str = "[redacted]";

/// A redaction can open a word boundary in front of a token that was glued to the one before it, so
/// redaction repeats until nothing changes, at most this many times.
const MAX_REDACTION_PASSES: usize = 8;

/// One recognised shape: the regex, the capture group holding the secret (0 for the whole match) and a
/// check the matched secret must also pass.
struct Rule {
    regex: Regex,
    group: usize,
    accept: Accept,
    /// For a token shape (the whole match, behind a word boundary): the same shape without that
    /// boundary, to find a token glued right after another one (`…EXAMPLEAKIA…`), see
    /// [`credential_spans`].
    glued: Option<Regex>,
}

/// The check a matched secret must also pass.
type Accept = fn(&str) -> bool;

fn always(_: &str) -> bool {
    true
}

fn has_digit(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_digit())
}

fn has_letter(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_alphabetic())
}

fn has_lower(s: &str) -> bool {
    s.bytes().any(|b| b.is_ascii_lowercase())
}

/// An uppercase letter after the first character: camel case or random mixed case, not a capitalised word.
fn has_inner_upper(s: &str) -> bool {
    s.bytes().skip(1).any(|b| b.is_ascii_uppercase())
}

/// Random-looking: at least two of lowercase, uppercase, digits. Used on the body of prefixed tokens whose
/// prefix alone is short enough to start an ordinary word.
fn mixed_classes(s: &str) -> bool {
    let upper = s.bytes().any(|b| b.is_ascii_uppercase());
    [has_lower(s), upper, has_digit(s)]
        .into_iter()
        .filter(|x| *x)
        .count()
        >= 2
}

/// OpenAI and Anthropic keys mix all three classes; a slug such as `sk-learn-pipeline-2024` does not.
fn all_classes(s: &str) -> bool {
    has_lower(s) && has_digit(s) && s.bytes().any(|b| b.is_ascii_uppercase())
}

/// An `sk-` key: mixes all three classes, or is one unbroken run of 20+ characters after the prefix
/// (`sk-abcdefghijklmnopqrstuvwx`); a hyphenated slug (`sk-learn-pipeline-2024-v2`) is not a key.
fn sk_key_like(s: &str) -> bool {
    let body = s.strip_prefix("sk-").unwrap_or(s);
    let body = body.strip_prefix("ant-").unwrap_or(body);
    all_classes(s) || (body.len() >= 20 && !body.contains(['-', '_']))
}

/// A token-like authorization value: at least 8 characters and either letters with digits, inner
/// uppercase, or 24 characters and more. "of", "Instinct" or "setup" are words, not tokens.
fn token_like(s: &str) -> bool {
    s.len() >= 8
        && ((has_digit(s) && has_letter(s))
            || (has_lower(s) && has_inner_upper(s))
            || s.len() >= 24)
}

/// The value of a `key: value` pair is secret-like when it has a digit, inner uppercase or a symbol, or is
/// one unbroken run of 16 characters or more; a plain word ("Password: required") is text. A `key=value`
/// pair (code, query strings) needs only a value.
fn colon_value_like(s: &str) -> bool {
    s.chars().count() >= 4
        && (has_digit(s)
            || has_inner_upper(s)
            || s.len() >= 16
            || s.bytes().any(|b| b"!@#$%^*+/=~".contains(&b)))
}

/// A URL userinfo is a credential when it carries a password, or when the user name is itself a token.
fn userinfo_like(s: &str) -> bool {
    match s.split_once(':') {
        Some((_, password)) => !password.is_empty(),
        None => s.len() >= 16 && has_digit(s) && has_letter(s),
    }
}

/// The first line of a PEM private key block (`-----BEGIN RSA PRIVATE KEY-----`, `… PGP PRIVATE KEY BLOCK-----`).
const PEM_BEGIN: &str = r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----";

/// The last line of a PEM private key block.
const PEM_END: &str = r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----";

static PEM_BEGIN_LINE: LazyLock<Regex> = LazyLock::new(|| compile(PEM_BEGIN));

static PEM_END_LINE: LazyLock<Regex> = LazyLock::new(|| compile(PEM_END));

/// The words that name a secret in a `key=value` or `key: value` pair; any `prefix_` or `prefix-` may come
/// before them (`client_secret`, `x-api-key`, `aws_secret_access_key`).
const KEY_WORDS: &str = r"(?:password|passwd|passphrase|secret|api[_-]?key|access[_-]?key|private[_-]?key|account[_-]?key|token|credentials?)";

/// The characters of a pair's value: anything but whitespace, quotes, separators and brackets (so the
/// marker `[redacted]` is never a value, and a pair inside JSON keeps the JSON intact); it does not start
/// with the rest of a `:=` separator.
const VALUE: &str = r#"[^\s"'`&,;<>()\[\]{}=:][^\s"'`&,;<>()\[\]{}]*"#;

/// The names of a URL path parameter (`;name=value`) that carry a session or a secret, matched
/// case-insensitively and whole (`;sidebar=` and `;session_type=` are other parameters).
const SESSION_PARAMS: &str =
    r"(?:jsessionid|phpsessid|aspsessionid|sessionid|session[_-]id|session|sid|token|auth)";

/// The value of a path parameter: like [`VALUE`], and it also ends at the next path segment, query or
/// fragment (`/`, `?`, `#`), so in a title only the session id itself is redacted.
const PATH_PARAM_VALUE: &str = r#"[^\s"'`&,;<>()\[\]{}=:/?#][^\s"'`&,;<>()\[\]{}/?#]*"#;

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let specs: Vec<(String, usize, Accept)> = vec![
        // Cloud keys.
        (
            r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[0-9A-Z]{16}".into(),
            0,
            always,
        ),
        (r"\bAIza[0-9A-Za-z_-]{35}".into(), 0, always),
        (r"\bdo[opr]_v1_[a-f0-9]{64}".into(), 0, always),
        (r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}".into(), 0, mixed_classes),
        // Code hosts and registries.
        (r"\bgh[pousr]_[A-Za-z0-9]{36,}".into(), 0, always),
        (r"\bgithub_pat_[A-Za-z0-9_]{22,}".into(), 0, always),
        (
            r"\bgl(?:pat|dt|rt|ptt|cbt|imt|oas|soat|ft|agent|ffct)-[A-Za-z0-9_.-]{20,}".into(),
            0,
            always,
        ),
        (r"\bnpm_[A-Za-z0-9]{36,}".into(), 0, always),
        (
            r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{16,}".into(),
            0,
            always,
        ),
        (r"\bATATT3[A-Za-z0-9_=-]{40,}".into(), 0, always),
        (r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}".into(), 0, always),
        (r"\bdapi[a-f0-9]{32}".into(), 0, always),
        (r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}".into(), 0, always),
        // Chat.
        (r"\bxox[abposr]-[A-Za-z0-9-]{10,}".into(), 0, has_digit),
        (r"\bxapp-[0-9]-[A-Za-z0-9-]{10,}".into(), 0, always),
        (
            r"hooks\.slack\.com/((?:services|workflows|triggers)/[A-Za-z0-9_/-]+)".into(),
            1,
            always,
        ),
        (
            r"\bT[A-Z0-9]{8,12}/B[A-Z0-9]{8,12}/[A-Za-z0-9]{24}".into(),
            0,
            always,
        ),
        (
            r"discord(?:app)?\.com/api/webhooks/([0-9]+/[A-Za-z0-9_-]+)".into(),
            1,
            always,
        ),
        (
            r"\.webhook\.office\.com/(webhookb2/[^\s?#]+)".into(),
            1,
            always,
        ),
        (r"\b[0-9]{8,10}:AA[A-Za-z0-9_-]{33}".into(), 0, always),
        // Payment and mail.
        (
            r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}".into(),
            0,
            always,
        ),
        (r"\bwhsec_[A-Za-z0-9+/=]{24,}".into(), 0, always),
        (r"\bsq0(?:atp|csp)-[A-Za-z0-9_-]{20,}".into(), 0, always),
        (
            r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}".into(),
            0,
            always,
        ),
        (r"\bSK[0-9a-f]{32}".into(), 0, always),
        (r"\b[0-9a-f]{32}-us[0-9]{1,2}".into(), 0, always),
        // Model providers.
        (r"\bsk-(?:ant-)?[A-Za-z0-9_-]{20,}".into(), 0, sk_key_like),
        (r"\bhf_[A-Za-z0-9]{30,}".into(), 0, mixed_classes),
        (r"\bgsk_[A-Za-z0-9]{40,}".into(), 0, mixed_classes),
        (r"\br8_[A-Za-z0-9]{30,}".into(), 0, mixed_classes),
        (r"\bxai-[A-Za-z0-9]{40,}".into(), 0, mixed_classes),
        (r"\bpplx-[A-Za-z0-9]{40,}".into(), 0, mixed_classes),
        (r"\blin_(?:api|oauth)_[A-Za-z0-9]{32,}".into(), 0, always),
        // JWTs, and PEM private keys: the BEGIN line with the base64 body after it (a whole block, BEGIN
        // to END, is found by `pem_block_spans`).
        (
            r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*".into(),
            0,
            always,
        ),
        (format!(r"{PEM_BEGIN}[A-Za-z0-9+/=\r\n\\:,.-]*"), 0, always),
        // An `Authorization:` header: whatever value follows its scheme is a credential.
        (
            r#"(?i:\bauthorization)["']?\s*[:=]\s*["']?(?i:bearer|basic|token|digest)\s+([A-Za-z0-9._~+/-]{4,}=*)"#
                .into(),
            1,
            always,
        ),
        // Authorization values: the word stays, the value goes.
        (
            r"(?i:\b(?:bearer|basic))\s+([A-Za-z0-9._~+/-]+=*)".into(),
            1,
            token_like,
        ),
        // `key=value` (any value) and `key: value` (a secret-like value) pairs: the key stays.
        (
            format!(
                r#"(?i:\b(?:[a-z0-9]+[_.-])*{KEY_WORDS}\b)["']?\s*(?::=|=>|=)\s*["']?({VALUE})"#
            ),
            1,
            always,
        ),
        (
            format!(r#"(?i:\b(?:[a-z0-9]+[_.-])*{KEY_WORDS}\b)["']?\s*:\s*["']?({VALUE})"#),
            1,
            colon_value_like,
        ),
        // URL userinfo: `scheme://user:pass@` or a token as user name.
        (r"://([^\s/?#@]+)@".into(), 1, userinfo_like),
        // A path parameter naming a session or a secret: `;jsessionid=…`; the name stays.
        (
            format!(r";(?i:{SESSION_PARAMS})=({PATH_PARAM_VALUE})"),
            1,
            always,
        ),
    ];
    specs
        .into_iter()
        .map(|(pattern, group, accept)| Rule {
            regex: compile(&pattern),
            group,
            accept,
            glued: (group == 0)
                .then(|| pattern.strip_prefix(r"\b"))
                .flatten()
                .map(compile),
        })
        .collect()
});

/// How far past the end of a credential a glued token is looked for, in bytes: a longer token is found
/// in pieces of this size, one after the other (each glued to the one before).
const GLUED_WINDOW: usize = 512;

/// The end of a token shape that starts exactly at `at`, glued to the word character before it (where
/// the shapes' own word boundary cannot match), looked for within [`GLUED_WINDOW`] bytes.
fn glued_token_end(s: &str, at: usize) -> Option<usize> {
    let bytes = s.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    if at == 0 || at >= bytes.len() || !word(bytes[at - 1]) || !word(bytes[at]) {
        return None;
    }
    let mut end = (at + GLUED_WINDOW).min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let window = &s[..end];
    RULES
        .iter()
        .filter_map(|rule| rule.glued.as_ref().map(|g| (g, rule.accept)))
        .filter_map(|(glued, accept)| {
            glued
                .find_at(window, at)
                .filter(|m| m.start() == at && accept(m.as_str()))
                .map(|m| m.end())
        })
        .max()
}

/// Compiles one of this module's constant patterns. `\b` is an ASCII word boundary: a token glued to a
/// non-ASCII letter is still found, and the DFA stays fast.
fn compile(pattern: &str) -> Regex {
    Regex::new(&pattern.replace(r"\b", r"(?-u:\b)"))
        .unwrap_or_else(|e| panic!("credential pattern {pattern:?} must compile: {e}"))
}

/// Whole PEM private key blocks, each BEGIN line to the first END line after it. Not one lazy regex:
/// that would rescan the rest of the text from every unterminated BEGIN line (quadratic time).
fn pem_block_spans(s: &str, spans: &mut Vec<Range<usize>>) {
    if !s.contains("PRIVATE KEY") {
        return;
    }
    let ends: Vec<Range<usize>> = PEM_END_LINE.find_iter(s).map(|m| m.range()).collect();
    for begin in PEM_BEGIN_LINE.find_iter(s) {
        let next = ends.partition_point(|end| end.start < begin.end());
        if let Some(end) = ends.get(next) {
            spans.push(begin.start()..end.end);
        }
    }
}

/// All rules at once: one pass over the text tells which rules can match at all, and only those run.
static ANY_RULE: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(RULES.iter().map(|rule| rule.regex.as_str()))
        .unwrap_or_else(|e| panic!("credential patterns must compile as a set: {e}"))
});

/// Byte ranges of `s` holding credential-like text, sorted and merged. The marker itself is never a range.
fn credential_spans(s: &str) -> Vec<Range<usize>> {
    let mut spans: Vec<Range<usize>> = Vec::new();
    pem_block_spans(s, &mut spans);
    for index in ANY_RULE.matches(s).iter() {
        let rule = &RULES[index];
        for caps in rule.regex.captures_iter(s) {
            if let Some(m) = caps.get(rule.group) {
                if m.as_str() != REDACTION_MARKER && (rule.accept)(m.as_str()) {
                    spans.push(m.range());
                }
            }
        }
    }
    spans.sort_by_key(|r| (r.start, r.end));
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if span.start <= last.end => last.end = last.end.max(span.end),
            _ => merged.push(span),
        }
    }
    // A token glued right after a credential (`AKIA…AKIA…`) has no word boundary in front of it: it
    // would only be found once the first was redacted, one more pass per token. The tokens glued behind
    // each span are spans of their own (one marker each, as separate passes gave), so one pass redacts a
    // whole chain and redacting again changes nothing.
    let mut chained: Vec<Range<usize>> = Vec::with_capacity(merged.len());
    for span in merged {
        if let Some(last) = chained.last_mut() {
            if span.start < last.end {
                last.end = last.end.max(span.end);
                continue;
            }
        }
        let mut end = span.end;
        chained.push(span);
        while let Some(next) = glued_token_end(s, end) {
            chained.push(end..next);
            end = next;
        }
    }
    chained
}

/// Whether `s` contains anything that resembles a credential (the shapes listed in the module docs).
/// Used whole on `resource_id` and on the kept part of a `url`; both are withheld when it is `true`.
pub fn resembles_credential(s: &str) -> bool {
    !credential_spans(s).is_empty()
}

/// `s` with every credential-like substring replaced by [`REDACTION_MARKER`]. Around a secret its label
/// stays (`password=[redacted]`, `Bearer [redacted]`, `https://[redacted]@host`). The result contains no
/// credential-like text: redacting it again changes nothing.
pub fn redact_credentials(s: &str) -> String {
    let mut current = s.to_owned();
    for _ in 0..MAX_REDACTION_PASSES {
        let spans = credential_spans(&current);
        if spans.is_empty() {
            break;
        }
        let mut out = String::with_capacity(current.len());
        let mut at = 0;
        for span in spans {
            out.push_str(&current[at..span.start]);
            out.push_str(REDACTION_MARKER);
            at = span.end;
        }
        out.push_str(&current[at..]);
        if out == current {
            break;
        }
        current = out;
    }
    current
}
