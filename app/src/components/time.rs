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
#[component]
pub fn Time(at: String) -> impl IntoView {
    let text = RwSignal::new(utc_text(&at));
    let title = RwSignal::new(None::<String>);
    #[cfg(feature = "hydrate")]
    {
        let at = at.clone();
        Effect::new(move |_| {
            let at = at.clone();
            title.set(Some(utc_text(&at)));
            let local = move || {
                let ms = js_sys::Date::new(&wasm_bindgen::JsValue::from_str(&at)).get_time();
                let Some(shown) = local_text(ms) else {
                    return;
                };
                let age = ((js_sys::Date::now() - ms) / 1000.0).floor() as i64;
                text.set(format!("{shown} · {}", age_words(age)));
            };
            local();
            if let Ok(handle) = set_interval_with_handle(local, std::time::Duration::from_secs(30))
            {
                on_cleanup(move || handle.clear());
            }
        });
    }
    view! { <time datetime=at title=move || title.get()>{move || text.get()}</time> }
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
        assert_eq!(open_for(0), "for 0 s");
        assert_eq!(open_for(185), "for 3 min");
        assert_eq!(open_for(3 * 3600), "for 3 h");
        assert_eq!(open_for(u64::MAX), format!("for {} d", i64::MAX / 86_400));
    }
}
