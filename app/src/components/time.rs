//! Times as people read them (docs/design.md "What the person sees"): a `<time datetime="<RFC 3339>">` element. The server
//! renders the UTC time; once the page is interactive the browser shows it in the reader's local time, in
//! the one format every time of a page uses, the live indicator's included ([`clock_text`]: 24-hour,
//! `07:15:03` today, `2026-12-02 07:15:03` on another day), with its relative age ("3 min ago"), kept
//! current every 30 s. The UTC time is then the element's title (hover); the server's text is the UTC time
//! itself, so the server sends no title (issue 30: a turn page has two times a row).

use leptos::prelude::*;

#[cfg(feature = "hydrate")]
pub use crate::clock::local_text;
pub use crate::clock::{clock_text, LocalTime};

/// `2026-11-29T19:18:38.123Z` → `2026-11-29 19:18:38 UTC` (the server-rendered text). Any other text is
/// returned as it is.
pub fn utc_text(rfc3339: &str) -> String {
    let Some((date, rest)) = rfc3339.split_once('T') else {
        return rfc3339.to_owned();
    };
    let clock: String = rest.chars().take(8).collect();
    if rest.ends_with('Z') && clock.len() == 8 {
        format!("{date} {clock} UTC")
    } else {
        rfc3339.to_owned()
    }
}

/// A relative age in words: `just now` under 5 s, then seconds, minutes, hours and days, rounded down
/// (`42 s ago`, `3 min ago`, `5 h ago`, `2 d ago`). A time in the future (clock skew) reads `just now`.
pub fn age_words(secs: i64) -> String {
    match secs {
        s if s < 5 => "just now".to_owned(),
        s if s < 60 => format!("{s} s ago"),
        s if s < 3600 => format!("{} min ago", s / 60),
        s if s < 86_400 => format!("{} h ago", s / 3600),
        s => format!("{} d ago", s / 86_400),
    }
}

/// How long until a deadline, in words: `in 42 s`, `in 12 min`, `in 5 h`, `in 2 d` (rounded down); one
/// that passed reads `passed` (the ledger settles it within seconds, docs/api.md "Deadlines").
pub fn due_words(secs: i64) -> String {
    match secs {
        s if s <= 0 => "passed".to_owned(),
        s if s < 60 => format!("in {s} s"),
        s if s < 3600 => format!("in {} min", s / 60),
        s if s < 86_400 => format!("in {} h", s / 3600),
        s => format!("in {} d", s / 86_400),
    }
}

/// What a `<time>` says once the page is interactive, besides the local time: its age (the default),
/// how long until it, written first (`data-due`: a deadline, `in 12 min · 23:15:00`), or nothing (`data-clock`: a moment a sentence names, "at
/// 17:48:03").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeKind {
    Age,
    Due,
    Clock,
}

impl TimeKind {
    /// The attribute that marks the kind on the element (none for an age).
    pub fn attribute(self) -> Option<&'static str> {
        match self {
            TimeKind::Age => None,
            TimeKind::Due => Some("data-due"),
            TimeKind::Clock => Some("data-clock"),
        }
    }
}

/// A duration in words for an age that is still growing: `for 42 s`, `for 3 min`, `for 5 h`, `for 2 d`.
pub fn open_for(secs: u64) -> String {
    let secs = i64::try_from(secs).unwrap_or(i64::MAX);
    match secs {
        s if s < 60 => format!("for {s} s"),
        s if s < 3600 => format!("for {} min", s / 60),
        s if s < 86_400 => format!("for {} h", s / 3600),
        s => format!("for {} d", s / 86_400),
    }
}

/// Milliseconds since the Unix epoch of a UTC time as the API writes it (docs/api.md: RFC 3339 with `Z`,
/// a fraction of 0 to 9 digits: `2026-12-06T03:09:18.272Z`, `2026-12-06T03:09:19Z`); `None` for text that
/// does not read. The browser reads it with its own `Date.parse` (nothing added to the bundle,
/// docs/performance.md "Bundle size"); the server with [`parse_utc`].
pub fn epoch_ms(rfc3339: &str) -> Option<i64> {
    #[cfg(feature = "hydrate")]
    {
        let ms = js_sys::Date::parse(rfc3339);
        ms.is_finite().then_some(ms as i64)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        parse_utc(rfc3339)
    }
}

/// [`epoch_ms`] read by hand (on the server, where there is no `Date`; a date library's parser would be
/// more than this fixed shape needs): exactly `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z`, anything else `None`.
#[cfg(any(not(feature = "hydrate"), test))]
pub fn parse_utc(rfc3339: &str) -> Option<i64> {
    let b = rfc3339.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        part.iter().try_fold(0i64, |n, c| {
            c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0'))
        })
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, m, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hh, mm, ss) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    let mut ms = 0;
    let rest = &b[19..];
    let zone = match rest.first() {
        Some(b'.') => {
            let digits = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 || digits > 9 {
                return None;
            }
            for (i, c) in rest[1..=digits].iter().enumerate().take(3) {
                ms += i64::from(c - b'0') * [100, 10, 1][i];
            }
            &rest[1 + digits..]
        }
        _ => rest,
    };
    if zone != b"Z" {
        return None;
    }
    // Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000 + ms)
}

/// How long a write took, in words (docs/design.md "What the person sees"): under a second in
/// milliseconds (`350 ms`), under 10 s to the tenth (`1.2 s`), then whole seconds, minutes, hours and days
/// (`40 s`, `3 min`, `5 h`, `2 d`), rounded down. A negative duration (clock skew) reads `0 ms`.
pub fn duration_words(ms: i64) -> String {
    match ms.max(0) {
        ms if ms < 1000 => format!("{ms} ms"),
        ms if ms < 10_000 => format!("{}.{} s", ms / 1000, ms % 1000 / 100),
        ms if ms < 60_000 => format!("{} s", ms / 1000),
        ms if ms < 3_600_000 => format!("{} min", ms / 60_000),
        ms if ms < 86_400_000 => format!("{} h", ms / 3_600_000),
        ms => format!("{} d", ms / 86_400_000),
    }
}

/// The milliseconds from `from` to `to` (RFC 3339 UTC, [`epoch_ms`]), when both read.
pub fn between_ms(from: &str, to: &str) -> Option<i64> {
    Some(epoch_ms(to)? - epoch_ms(from)?)
}

/// The time now as RFC 3339 UTC (`2026-12-01T21:34:30.168Z`): the server's clock while rendering, the
/// browser's once interactive.
pub fn now_rfc3339() -> String {
    #[cfg(feature = "ssr")]
    {
        time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        js_sys::Date::new_0().to_iso_string().into()
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    {
        String::new()
    }
}

/// `<time datetime=at>`: UTC from the server; in the browser the local time ([`clock_text`]) and its
/// age, with the UTC time as its title.
///
/// The element is static: the page clock ([`time_text`], [`tick`]) writes every time of the page at
/// once, instead of an effect and a timer for each (a 200-row turn page has 400 times: localising them
/// one by one during hydration was a good part of its one long task, docs/performance.md "First load"). Hydration
/// adopts the server's UTC text; the clock's first tick, a task of its own right after, shows every
/// `time[datetime]` of the document in local time; it ticks again every 30 s for the ages. A time made
/// after the first tick (a live row) shows local time at once. Cards built as HTML
/// ([`crate::components::outcome`]) write their times with [`time_text`] too.
#[component]
pub fn Time(at: String) -> impl IntoView {
    let text = time_text(&at);
    let title = time_title(&at);
    view! { <time datetime=at title=title>{text}</time> }
}

/// `<time datetime=at data-due>`: a deadline, read as [`Time`] reads a time, with how long until it
/// first (`in 12 min · 23:15:00`) instead of its age after it, once the page is interactive.
#[component]
pub fn DueTime(at: String) -> impl IntoView {
    let text = kind_text(&at, TimeKind::Due);
    let title = time_title(&at);
    view! { <time datetime=at title=title data-due="">{text}</time> }
}

/// The title of a `<time>` made now: none on the server and while the page hydrates (the text is the
/// UTC time then), the UTC time once the text is local.
pub fn time_title(at: &str) -> Option<String> {
    #[cfg(feature = "hydrate")]
    if tick() > 0 {
        return Some(utc_text(at));
    }
    let _ = at;
    None
}

/// The text of a `<time>` made now: the UTC time ([`utc_text`]) on the server and while the page hydrates
/// (as the server sent it), then the local time and its age.
pub fn time_text(at: &str) -> String {
    kind_text(at, TimeKind::Age)
}

/// [`time_text`] of a time of `kind` ([`TimeKind`]): the UTC time on the server and while the page
/// hydrates, then the local time with its age, with how long until it, or alone.
pub fn kind_text(at: &str, kind: TimeKind) -> String {
    #[cfg(feature = "hydrate")]
    if tick() > 0 {
        if let Some(text) = local_with(at, kind) {
            return text;
        }
    }
    let _ = kind;
    utc_text(at)
}

/// `07:15:03 · 3 min ago` (a deadline: `in 12 min · 07:15:03`, what matters first; a clock: the time alone) for an
/// RFC 3339 time, in the reader's local time; `None` when the browser cannot read it.
#[cfg(feature = "hydrate")]
fn local_with(at: &str, kind: TimeKind) -> Option<String> {
    let ms = js_sys::Date::new(&wasm_bindgen::JsValue::from_str(at)).get_time();
    let shown = local_text(ms)?;
    let age = ((js_sys::Date::now() - ms) / 1000.0).floor() as i64;
    Some(match kind {
        TimeKind::Age => format!("{shown} · {}", age_words(age)),
        TimeKind::Due => format!("{} · {shown}", due_words(-age)),
        TimeKind::Clock => shown,
    })
}

#[cfg(feature = "hydrate")]
thread_local! {
    /// The page clock's ticks so far; `None` until something asked for it.
    static TICKS: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// The page clock (browser only): 0 while the page hydrates, then 1, 2, …. The first call starts it: a
/// zero-delay timer, so that its first tick is a task after the hydration that asked, and a 30 s interval,
/// for the page's life. Each tick writes every `time[datetime]` of the document ([`write_all_times`]).
#[cfg(feature = "hydrate")]
pub fn tick() -> u64 {
    if let Some(t) = TICKS.with(|t| t.get()) {
        return t;
    }
    TICKS.with(|t| t.set(Some(0)));
    let next = || {
        TICKS.with(|t| t.set(Some(t.get().unwrap_or(0) + 1)));
        write_all_times();
    };
    set_timeout(next, std::time::Duration::ZERO);
    let _ = set_interval_with_handle(next, std::time::Duration::from_secs(30));
    0
}

/// Writes every `time[datetime]` of the document but those marked `data-utc` (a column that reads UTC
/// by design: the unknowns queue's "Alerted (UTC)"): local time and age as its text (the text node's data,
/// so that the element keeps its nodes), the UTC time as its title.
#[cfg(feature = "hydrate")]
fn write_all_times() {
    use wasm_bindgen::JsCast;
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Ok(times) = document.query_selector_all("time[datetime]:not([data-utc])") else {
        return;
    };
    for i in 0..times.length() {
        let Some(el) = times
            .item(i)
            .and_then(|n| n.dyn_into::<web_sys::Element>().ok())
        else {
            continue;
        };
        let Some(at) = el.get_attribute("datetime") else {
            continue;
        };
        let kind = if el.has_attribute("data-due") {
            TimeKind::Due
        } else if el.has_attribute("data-clock") {
            TimeKind::Clock
        } else {
            TimeKind::Age
        };
        let Some(text) = local_with(&at, kind) else {
            continue;
        };
        match el.first_child() {
            Some(node) if node.node_type() == web_sys::Node::TEXT_NODE => {
                if node.node_value().as_deref() != Some(text.as_str()) {
                    node.set_node_value(Some(&text));
                }
            }
            _ => el.set_text_content(Some(&text)),
        }
        let title = utc_text(&at);
        if el.get_attribute("title").as_deref() != Some(title.as_str()) {
            let _ = el.set_attribute("title", &title);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_text_is_utc_to_the_second() {
        assert_eq!(
            utc_text("2026-11-29T19:18:38.123Z"),
            "2026-11-29 19:18:38 UTC"
        );
        assert_eq!(utc_text("2026-11-29T19:18:38Z"), "2026-11-29 19:18:38 UTC");
        assert_eq!(utc_text("not a time"), "not a time");
        assert_eq!(
            utc_text("2026-11-29T19:18:38+01:00"),
            "2026-11-29T19:18:38+01:00"
        );
    }

    #[test]
    fn ages_read_in_the_largest_whole_unit() {
        assert_eq!(age_words(-3), "just now");
        assert_eq!(age_words(4), "just now");
        assert_eq!(age_words(42), "42 s ago");
        assert_eq!(age_words(60), "1 min ago");
        assert_eq!(age_words(3599), "59 min ago");
        assert_eq!(age_words(7200), "2 h ago");
        assert_eq!(age_words(2 * 86_400 + 5), "2 d ago");
        assert_eq!(due_words(-1), "passed");
        assert_eq!(due_words(0), "passed");
        assert_eq!(due_words(42), "in 42 s");
        assert_eq!(due_words(12 * 60 + 5), "in 12 min");
        assert_eq!(due_words(5 * 3600), "in 5 h");
        assert_eq!(due_words(2 * 86_400), "in 2 d");
        assert_eq!(open_for(0), "for 0 s");
        assert_eq!(open_for(185), "for 3 min");
        assert_eq!(open_for(3 * 3600), "for 3 h");
        assert_eq!(open_for(u64::MAX), format!("for {} d", i64::MAX / 86_400));
    }

    #[test]
    fn api_times_read_to_the_millisecond() {
        assert_eq!(epoch_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            epoch_ms("2026-12-06T03:09:18.272Z"),
            Some(1_796_526_558_272)
        );
        assert_eq!(epoch_ms("2026-12-06T03:09:18.27Z"), Some(1_796_526_558_270));
        assert_eq!(
            epoch_ms("2026-12-06T03:09:18.2729999Z"),
            Some(1_796_526_558_272)
        );
        assert_eq!(epoch_ms("2000-02-29T12:00:00Z"), Some(951_825_600_000));
        for bad in [
            "",
            "2026-12-06",
            "2026-12-06T03:09:18",
            "2026-12-06T03:09:18+01:00",
            "2026-12-06T03:09:18.Z",
            "2026-13-06T03:09:18Z",
            "2026-12-06T03:09:1xZ",
        ] {
            assert_eq!(epoch_ms(bad), None, "{bad}");
        }
        assert_eq!(
            between_ms("2026-12-06T03:09:18.272Z", "2026-12-06T03:09:58.3Z"),
            Some(40_028)
        );
    }

    #[test]
    fn durations_read_in_the_largest_whole_unit_a_tenth_of_a_second_under_ten() {
        assert_eq!(duration_words(-5), "0 ms");
        assert_eq!(duration_words(0), "0 ms");
        assert_eq!(duration_words(350), "350 ms");
        assert_eq!(duration_words(1000), "1.0 s");
        assert_eq!(duration_words(1_249), "1.2 s");
        assert_eq!(duration_words(9_999), "9.9 s");
        assert_eq!(duration_words(40_028), "40 s");
        assert_eq!(duration_words(3 * 60_000 + 59_000), "3 min");
        assert_eq!(duration_words(5 * 3_600_000), "5 h");
        assert_eq!(duration_words(2 * 86_400_000 + 1), "2 d");
    }
}
