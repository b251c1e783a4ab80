//! The turn page's timeline picture (docs/design.md "What the person sees", docs/api.md "A turn's
//! timeline"): each write a bar from its intent (recorded) to its settlement on one time axis, coloured by
//! status. The server draws it as an SVG image (`GET /api/sessions/{key}/turns/{turn}/timeline.svg`,
//! `server::http::timeline`), so it reads without JavaScript and costs the browser bundle only an `<img>`;
//! the page loads it again when the turn changes. What the server and the page share is here: the cap, the
//! geometry the page sizes the image by, and the words of each bar.

use ledger::wire::PublishedStatus;
use leptos::prelude::*;

use crate::components::time::duration_words;

/// Bars drawn at most: the first 100 writes of the turn in recorded order; the picture says how many it
/// leaves out (a bar's lane is 18 px high: 100 bars are 1,836 px at full width).
pub const MAX_BARS: usize = 100;
/// The picture's width (SVG user units, its intrinsic width in CSS pixels).
pub const WIDTH: u32 = 640;
/// Height of one bar's lane.
pub const PITCH: u32 = 18;
/// Space above the first bar.
pub const TOP: u32 = 8;
/// Space below the last bar: the axis and its labels.
pub const AXIS: u32 = 28;

/// The picture's height for `bars` bars (at least one lane, for an empty turn's axis).
pub fn height(bars: usize) -> u32 {
    TOP + PITCH * u32::try_from(bars.clamp(1, MAX_BARS)).unwrap_or(1) + AXIS
}

/// The status of a bar in words: "completed", "failed", "not executed", "outcome unknown", "in flight".
pub fn status_words(status: PublishedStatus, in_flight: bool) -> &'static str {
    match (status, in_flight) {
        (_, true) => "in flight",
        (PublishedStatus::Completed, _) => "completed",
        (PublishedStatus::Failed, _) => "failed",
        (PublishedStatus::NotExecuted, _) => "not executed",
        (PublishedStatus::OutcomeUnknown, _) => "outcome unknown",
    }
}

/// One bar in words, for the picture's text alternative and the bar's own title: "Revenue dashboard:
/// completed, started at +1.2 s, took 40 s" (`start_ms` after the first write's intent; `took_ms` `None`
/// in flight: "in flight since +30 s").
pub fn bar_words(
    label: &str,
    status: PublishedStatus,
    in_flight: bool,
    start_ms: i64,
    took_ms: Option<i64>,
) -> String {
    let start = duration_words(start_ms);
    match took_ms {
        Some(ms) if !in_flight => format!(
            "{label}: {}, started at +{start}, took {}",
            status_words(status, in_flight),
            duration_words(ms)
        ),
        _ => format!("{label}: in flight since +{start}"),
    }
}

/// The path of a turn's timeline picture; `at` (the revision the page read through) makes a changed turn
/// a new address, so the browser loads it again (the server ignores it).
pub fn picture_path(key: &str, turn: &str, at: i64) -> String {
    let (key, turn) = (crate::api::enc(key), crate::api::enc(turn));
    format!("/api/sessions/{key}/turns/{turn}/timeline.svg?at={at}")
}

/// The picture's `alt`: what it shows, and where each write's times are in words (the rows below it:
/// recorded, settled, how long it took). One constant, not written per turn (docs/performance.md "Bundle size"); the
/// SVG itself carries a `<title>` with the count and a `<desc>` listing each bar.
pub const ALT: &str = "Timeline of this turn: each write a bar from its start to its settlement, coloured by status. The list below gives each write's times and how long it took.";

/// The picture on the turn page: an `<img>` of the server's SVG, sized by its bar count (no layout shift
/// when it loads), read again whenever `at` changes.
#[component]
pub fn TimelinePicture(
    key: String,
    turn: String,
    /// The turn's writes (the bars are the first [`MAX_BARS`]).
    #[prop(into)]
    writes: Signal<usize>,
    /// The revision the page has read through.
    #[prop(into)]
    at: Signal<i64>,
) -> impl IntoView {
    let src = move || picture_path(&key, &turn, at.get());
    view! {
        <figure class="turn-timeline mb-4">
            <img class="h-auto w-full max-w-2xl" src=src alt=ALT width=WIDTH height=move || height(writes.get())/>
        </figure>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_reads_its_status_start_and_duration() {
        assert_eq!(
            bar_words(
                "Revenue",
                PublishedStatus::Completed,
                false,
                1_250,
                Some(40_028)
            ),
            "Revenue: completed, started at +1.2 s, took 40 s"
        );
        assert_eq!(
            bar_words("op-2", PublishedStatus::OutcomeUnknown, true, 30_000, None),
            "op-2: in flight since +30 s"
        );
        assert_eq!(height(0), 54);
        assert_eq!(height(3), 90);
        assert_eq!(height(500), height(MAX_BARS));
        assert_eq!(
            picture_path("a/b", "t 1", 7),
            "/api/sessions/a%2Fb/turns/t%201/timeline.svg?at=7"
        );
    }
}
