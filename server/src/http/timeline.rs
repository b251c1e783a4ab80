//! A turn's timeline picture (docs/api.md "A turn's timeline", docs/design.md "What the person sees"):
//! `GET /api/sessions/{session_key}/turns/{logical_turn_id}/timeline.svg`, an SVG image drawn here, on the
//! server, so the turn page shows it without JavaScript and the browser bundle carries only an `<img>`
//! (`app::components::waterfall`).

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::Uri;
use axum::response::{IntoResponse, Response};
use ledger::wire::{LedgerStatus, PublishedStatus, TurnEntry};
use ledger::EntriesPage;
use serde::Deserialize;

use app::components::marks::mark;
use app::components::time::{duration_words, epoch_ms};
use app::components::waterfall::{
    bar_words, height, status_words, AXIS, MAX_BARS, PITCH, TOP, WIDTH,
};

use super::extract::{ReadPath, ReadQuery};
use super::read::session_and_turn;
use crate::access::Principal;
use crate::error::ApiError;
use crate::AppState;
use utoipa_axum::{router::OpenApiRouter, routes};

/// The route of this module.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(turn_timeline))
}

/// Left edge of the time axis.
const X0: f64 = 8.0;
/// Right edge of the time axis; the space after it holds the last bars' duration labels.
const X1: f64 = WIDTH as f64 - 64.0;
/// A bar's height (in its lane of [`PITCH`]).
const BAR: u32 = 12;
/// The narrowest bar: a write that took no measurable time still shows.
const MIN_BAR: f64 = 2.0;

/// The picture's colours: the badges' status colours (their borders, `style/main.css` `.tone-*`), a
/// shade lighter in dark mode; text in the page's greys.
const STYLE: &str = "text{font:13px system-ui,sans-serif;fill:#334155}.axis{stroke:#94a3b8}\
.s-completed{fill:#059669}.s-failed{fill:#dc2626}.s-not-executed{fill:#64748b}\
.s-unknown{fill:#f59e0b}.s-in-flight{fill:#0284c7}\
@media (prefers-color-scheme:dark){text{fill:#cbd5e1}.axis{stroke:#64748b}\
.s-completed{fill:#10b981}.s-failed{fill:#ef4444}.s-not-executed{fill:#94a3b8}\
.s-unknown{fill:#fbbf24}.s-in-flight{fill:#0ea5e9}}";

/// One write as a bar: times in ms since the Unix epoch.
struct Bar {
    label: String,
    status: PublishedStatus,
    in_flight: bool,
    start: i64,
    /// Its settlement; `None` in flight.
    end: Option<i64>,
}

impl Bar {
    fn of(e: &TurnEntry) -> Option<Bar> {
        let in_flight = e.ledger_status == LedgerStatus::ExecutionStarted;
        let start = epoch_ms(&e.recorded_at)?;
        let end = if in_flight {
            None
        } else {
            Some(epoch_ms(e.settled_at.as_deref()?)?.max(start))
        };
        let o = &e.outcome;
        Some(Bar {
            label: o
                .title
                .as_deref()
                .map_or_else(|| app::components::marks::readable_tool(&o.tool), mark),
            status: o.status,
            in_flight,
            start,
            end,
        })
    }

    fn class(&self) -> &'static str {
        match (self.status, self.in_flight) {
            (_, true) => "s-in-flight",
            (PublishedStatus::Completed, _) => "s-completed",
            (PublishedStatus::Failed, _) => "s-failed",
            (PublishedStatus::NotExecuted, _) => "s-not-executed",
            (PublishedStatus::OutcomeUnknown, _) => "s-unknown",
        }
    }
}

/// Text for an SVG text node or attribute.
fn esc(s: &str) -> String {
    html_escape::encode_text(s).into_owned()
}

/// The SVG of a turn's timeline: `name` is the turn as pages name it ("Turn 13"), `entries` its first
/// writes in recorded order (at most [`MAX_BARS`] are drawn), `total` how many it has, `now` the time
/// (ms since the Unix epoch) an in-flight bar reaches when drawn.
///
/// The axis runs from the first write's intent to the last settlement (or `now` while a write is in
/// flight), at least 1 s; while a write is in flight it runs on past `now` by a quarter of that, at least
/// 10 s, and each in-flight bar grows to the axis's end in real time (an SVG `<animate>`: no script).
/// Each bar is a `<rect>` with its words as `<title>`; the picture's `<title>` and `<desc>` say it all in
/// words ([`bar_words`]). An entry whose times do not read (never from this server) is left out.
pub fn render(name: &str, entries: &[TurnEntry], total: u64, now: i64) -> String {
    let bars: Vec<Bar> = entries.iter().take(MAX_BARS).filter_map(Bar::of).collect();
    let h = height(bars.len());
    let t0 = bars.iter().map(|b| b.start).min().unwrap_or(now);
    let flying = bars.iter().any(|b| b.in_flight);
    let last = bars
        .iter()
        .map(|b| b.end.unwrap_or(now.max(b.start)))
        .max()
        .unwrap_or(t0);
    let span = (last - t0).max(1000);
    let axis = if flying {
        span + (span / 4).max(10_000)
    } else {
        span
    };
    let x = |t: i64| X0 + (t - t0) as f64 * (X1 - X0) / axis as f64;
    let written = bars.len() as u64;
    let shown = if total > written {
        format!(", the first {written} of {total} shown")
    } else {
        String::new()
    };
    let title = format!(
        "{name}: {written} write{}{shown}, from intent to settlement, over {}",
        if written == 1 { "" } else { "s" },
        duration_words(span)
    );
    let words: Vec<String> = bars
        .iter()
        .map(|b| {
            bar_words(
                &b.label,
                b.status,
                b.in_flight,
                b.start - t0,
                b.end.map(|e| e - b.start),
            )
        })
        .collect();
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{h}\" viewBox=\"0 0 {WIDTH} {h}\" role=\"img\" aria-labelledby=\"t d\">\
<title id=\"t\">{}</title><desc id=\"d\">{}</desc><style>{STYLE}</style>",
        esc(&title),
        esc(&if words.is_empty() {
            "No writes yet.".to_owned()
        } else {
            words.join("; ") + "."
        }),
    );
    for (i, (b, words)) in bars.iter().zip(&words).enumerate() {
        let y = TOP + PITCH * i as u32 + (PITCH - BAR) / 2;
        let left = x(b.start);
        let right = x(b.end.unwrap_or(now.max(b.start)));
        let width = (right - left).max(MIN_BAR);
        svg.push_str(&format!(
            "<rect class=\"bar {}\" data-status=\"{}\" x=\"{left:.1}\" y=\"{y}\" width=\"{width:.1}\" height=\"{BAR}\" rx=\"2\"><title>{}</title>",
            b.class(),
            status_words(b.status, b.in_flight),
            esc(words)
        ));
        let label_y = y + BAR - 1;
        if b.in_flight {
            // Grows to the axis's end as time passes, at the axis's scale.
            let full = (X1 - left).max(width);
            let secs = (axis - (now - t0)).max(1) as f64 / 1000.0;
            svg.push_str(&format!(
                "<animate attributeName=\"width\" from=\"{width:.1}\" to=\"{full:.1}\" dur=\"{secs:.1}s\" fill=\"freeze\"/></rect>\
<text x=\"{:.1}\" y=\"{label_y}\">in flight</text>",
                X1 + 4.0
            ));
        } else {
            svg.push_str(&format!(
                "</rect><text x=\"{:.1}\" y=\"{label_y}\">{}</text>",
                left + width + 4.0,
                duration_words(b.end.unwrap_or(b.start) - b.start)
            ));
        }
    }
    let axis_y = h - AXIS + 4;
    let label_y = axis_y + 16;
    svg.push_str(&format!(
        "<line class=\"axis\" x1=\"{X0}\" y1=\"{axis_y}\" x2=\"{X1}\" y2=\"{axis_y}\"/>"
    ));
    let step = tick_step(axis);
    for k in 0..=axis / step {
        let t = k * step;
        let tx = x(t0 + t);
        let (anchor, words) = if k == 0 {
            ("start", "0".to_owned())
        } else {
            ("middle", duration_words(t))
        };
        svg.push_str(&format!(
            "<line class=\"axis\" x1=\"{tx:.1}\" y1=\"{axis_y}\" x2=\"{tx:.1}\" y2=\"{}\"/>\
<text x=\"{tx:.1}\" y=\"{label_y}\" text-anchor=\"{anchor}\">{words}</text>",
            axis_y + 4
        ));
    }
    svg.push_str("</svg>");
    svg
}

/// The axis's tick spacing: the first of the usual steps (1-2-5 under a second, then 1, 2, 5, 10, 15, 30
/// s, 1, 2, 5, 10, 15, 30 min, 1, 2, 3, 6, 12 h, days) that puts at most 5 ticks after 0 on an axis of
/// `axis` ms.
fn tick_step(axis: i64) -> i64 {
    const STEPS: [i64; 25] = [
        1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000,
        120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000,
        43_200_000,
    ];
    STEPS
        .into_iter()
        .find(|s| axis / s <= 5)
        .unwrap_or_else(|| ((axis + 5 * 86_400_000 - 1) / (5 * 86_400_000)).max(1) * 86_400_000)
}

/// Any query (the page adds `?at=<revision>` so that a changed turn is a new address); none is read.
#[derive(Deserialize)]
pub struct TimelineParams {}

/// `GET /api/sessions/{session_key}/turns/{logical_turn_id}/timeline.svg` → `image/svg+xml` (docs/api.md
/// "A turn's timeline"): the turn's first [`MAX_BARS`] writes in recorded order, each a bar from its
/// intent to its settlement on one time axis, coloured by status, in-flight bars growing ([`render`]),
/// with a `<title>` and `<desc>` in words. Read as the turn's entries are, by whoever may read them. Its
/// `Content-Security-Policy` lets its own `<style>` apply and nothing else
/// ([`crate::http::security::SVG_POLICY`]). Errors (JSON) in order: 400 (a malformed query or path) → 404
/// (`session_not_found`, `session_expired`, `turn_not_found`).
#[utoipa::path(
    get,
    path = "/api/sessions/{session_key}/turns/{logical_turn_id}/timeline.svg",
    tag = "read",
    params(
        ("session_key" = String, Path, description = "session key, percent-encoded"),
        ("logical_turn_id" = String, Path, description = "logical turn, percent-encoded"),
    ),
    responses(
        (status = 200, description = "the turn's timeline as an SVG image: a bar per write (the first 100 in recorded order), from intent to settlement, coloured by status, with a title and description in words", content_type = "image/svg+xml", body = String),
        (status = 400, description = "a malformed query or path", body = ledger::wire::ErrorBody),
        (status = 404, description = "unknown or expired session, or unknown turn", body = ledger::wire::ErrorBody),
    ),
)]
pub async fn turn_timeline(
    State(state): State<AppState>,
    principal: Principal,
    uri: Uri,
    ReadPath(path): ReadPath<(String, String)>,
    ReadQuery(_ignored): ReadQuery<TimelineParams>,
) -> Result<Response, ApiError> {
    let (key, turn) = session_and_turn(&state, &principal, &uri, path).await?;
    let place = state.sessions.turn_place(&key, &turn).await?;
    let page = EntriesPage {
        after_revision: None,
        after_sequence: None,
        limit: MAX_BARS as u32,
        newest_first: false,
    };
    let (entries, _) = state.sessions.turn_entries_page(&key, &turn, &page).await?;
    let total = entries
        .counts
        .as_ref()
        .map_or(entries.entries.len() as u64, |c| c.total());
    let (label, id) = app::routes::turn::turn_name(place.number, &place.logical_turn_id);
    let name = match id {
        Some(id) => format!("{label} ({id})"),
        None => label,
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
    let svg = render(&name, &entries.entries, total, now as i64);
    Ok(([(CONTENT_TYPE, "image/svg+xml; charset=utf-8")], svg).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(
        id: &str,
        status: &str,
        ledger: &str,
        recorded: &str,
        settled: Option<&str>,
    ) -> TurnEntry {
        serde_json::from_value(serde_json::json!({
            "sequence": 1, "mutation_revision": 1,
            "outcome": {"schema": "mutation_outcome/v1", "logical_turn_id": "turn-13", "mutation_id": id,
                "tool": format!("mcp__{id}"), "status": status, "resource_id": null, "url": null,
                "title": null, "reason": null},
            "ledger_status": ledger, "recorded_at": recorded, "settled_at": settled,
        }))
        .unwrap()
    }

    /// Known times, exact bars: a 40 s write, a 500 ms one 1.2 s in, and one in flight since 30 s, drawn
    /// at 50 s. The axis: 0 to 50 s, then 12.5 s more (a quarter) while a write flies: 62.5 s over
    /// 568 units (8 to 576), 0.009088 units a millisecond.
    #[test]
    fn bars_run_from_intent_to_settlement_on_one_axis() {
        let entries = [
            entry(
                "a",
                "completed",
                "completed",
                "2026-12-06T10:00:00Z",
                Some("2026-12-06T10:00:40Z"),
            ),
            entry(
                "b",
                "failed",
                "failed",
                "2026-12-06T10:00:01.2Z",
                Some("2026-12-06T10:00:01.7Z"),
            ),
            entry(
                "c",
                "outcome_unknown",
                "execution_started",
                "2026-12-06T10:00:30Z",
                None,
            ),
        ];
        let now = epoch_ms("2026-12-06T10:00:50Z").unwrap();
        let svg = render("Turn 13", &entries, 3, now);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" height=\"90\" viewBox=\"0 0 640 90\" role=\"img\" aria-labelledby=\"t d\"><title id=\"t\">Turn 13: 3 writes, from intent to settlement, over 50 s</title><desc id=\"d\">a: completed, started at +0 ms, took 40 s; b: failed, started at +1.2 s, took 500 ms; c: in flight since +30 s.</desc>"), "{svg}");
        // The tool in words (mcp__a reads "a"). a: 0 → 40 s = 8 → 8 + 40000 × 0.009088 = 371.52.
        assert!(svg.contains("<rect class=\"bar s-completed\" data-status=\"completed\" x=\"8.0\" y=\"11\" width=\"363.5\" height=\"12\" rx=\"2\"><title>a: completed, started at +0 ms, took 40 s</title></rect><text x=\"375.5\" y=\"22\">40 s</text>"), "{svg}");
        // b: 1.2 s → 1.7 s: x = 8 + 10.9056, 4.544 wide.
        assert!(svg.contains("<rect class=\"bar s-failed\" data-status=\"failed\" x=\"18.9\" y=\"29\" width=\"4.5\" height=\"12\" rx=\"2\"><title>b: failed, started at +1.2 s, took 500 ms</title></rect><text x=\"27.4\" y=\"40\">500 ms</text>"), "{svg}");
        // c: 30 s → now (50 s): x = 280.64, 181.76 wide, growing to the axis's end (576) in 12.5 s.
        assert!(svg.contains("<rect class=\"bar s-in-flight\" data-status=\"in flight\" x=\"280.6\" y=\"47\" width=\"181.8\" height=\"12\" rx=\"2\"><title>c: in flight since +30 s</title><animate attributeName=\"width\" from=\"181.8\" to=\"295.4\" dur=\"12.5s\" fill=\"freeze\"/></rect><text x=\"580.0\" y=\"58\">in flight</text>"), "{svg}");
        // The axis: ticks every 15 s (62.5 s / 15 s: 4 after 0), 136.32 units apart.
        assert!(svg.ends_with(concat!(
            r#"<line class="axis" x1="8" y1="66" x2="576" y2="66"/>"#,
            r#"<line class="axis" x1="8.0" y1="66" x2="8.0" y2="70"/><text x="8.0" y="82" text-anchor="start">0</text>"#,
            r#"<line class="axis" x1="144.3" y1="66" x2="144.3" y2="70"/><text x="144.3" y="82" text-anchor="middle">15 s</text>"#,
            r#"<line class="axis" x1="280.6" y1="66" x2="280.6" y2="70"/><text x="280.6" y="82" text-anchor="middle">30 s</text>"#,
            r#"<line class="axis" x1="417.0" y1="66" x2="417.0" y2="70"/><text x="417.0" y="82" text-anchor="middle">45 s</text>"#,
            r#"<line class="axis" x1="553.3" y1="66" x2="553.3" y2="70"/><text x="553.3" y="82" text-anchor="middle">1 min</text></svg>"#,
        )), "{svg}");
        assert_eq!(svg.matches("<rect ").count(), 3);
    }

    /// Without a write in flight the axis ends at the last settlement; a write that took no time is
    /// still 2 units wide; host text is escaped and its Cf characters marked; the cap is said.
    #[test]
    fn a_settled_turn_ends_at_its_last_settlement_and_says_what_it_leaves_out() {
        let mut e = entry(
            "x",
            "completed",
            "completed",
            "2026-12-06T10:00:00Z",
            Some("2026-12-06T10:00:00Z"),
        );
        e.outcome.title = Some("<b>&\u{200B}".into());
        let svg = render("Turn 2 (turn-b7f)", &[e], 250, 0);
        assert!(svg.contains("<title id=\"t\">Turn 2 (turn-b7f): 1 write, the first 1 of 250 shown, from intent to settlement, over 1.0 s</title>"), "{svg}");
        assert!(svg.contains("width=\"2.0\""), "{svg}");
        assert!(
            svg.contains("&lt;b&gt;&amp;⟨U+200B⟩: completed, started at +0 ms, took 0 ms"),
            "{svg}"
        );
        assert!(!svg.contains("<animate"), "{svg}");
        // A 1 s axis: ticks every 200 ms.
        assert!(
            svg.contains("text-anchor=\"middle\">200 ms</text>"),
            "{svg}"
        );
        assert!(
            svg.contains("<text x=\"576.0\" y=\"46\" text-anchor=\"middle\">1.0 s</text></svg>"),
            "{svg}"
        );
        assert_eq!(tick_step(62_500), 15_000);
        assert_eq!(tick_step(3 * 86_400_000), 86_400_000);
        assert_eq!(tick_step(40 * 86_400_000), 8 * 86_400_000);
        let empty = render("Turn 1", &[], 0, 0);
        assert!(
            empty.contains("<desc id=\"d\">No writes yet.</desc>"),
            "{empty}"
        );
        assert_eq!(empty.matches("<rect ").count(), 0);
    }
}
