//! Pieces shared by the pages.

pub mod listing;
pub mod marks;
pub mod outcome;
pub mod roving;
pub mod search;
pub mod time;
pub mod timeline_rows;
pub mod waterfall;

use ledger::wire::StatusCounts;
use leptos::prelude::*;

use self::outcome::{CountBadge, CountKind};
use crate::caller_gone;

/// Counts as badges with numbers, unknown first: settled unknown and in flight each on their own
/// ([`CountKind`]; docs/design.md "What the person sees"), zero counts left out.
#[component]
pub fn Counts(counts: StatusCounts) -> impl IntoView {
    view! {
        <span class="counts flex flex-wrap gap-2">
            {CountKind::ALL
                .into_iter()
                .map(|k| (k, k.of(&counts)))
                .filter(|(_, n)| *n > 0)
                .map(|(k, n)| view! {
                    <span class="inline-flex items-center gap-1 text-sm" data-count=k.as_str()>
                        <CountBadge kind=k/>
                        <span class="font-semibold tabular-nums">{n}</span>
                    </span>
                })
                .collect_view()}
        </span>
    }
}

/// `n` and its noun, singular for exactly one: "1 turn", "0 turns", "2 turns".
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// An error panel for a failed read.
#[component]
pub fn ErrorPanel(message: String) -> impl IntoView {
    view! {
        <div role="alert" class="error-panel rounded-md border-l-4 border-red-600 bg-red-50 p-3 text-red-900 dark:bg-red-950 dark:text-red-100">
            {message}
        </div>
    }
}

/// Sets the HTTP status of a server-rendered page (404 for a missing session, turn or operation; 503,
/// with `Retry-After: 1`, when the ledger was busy or unreachable). Does nothing in the browser.
pub fn set_page_status(status: u16) {
    #[cfg(feature = "ssr")]
    if let (Some(response), Ok(code)) = (
        use_context::<leptos_axum::ResponseOptions>(),
        http::StatusCode::from_u16(status),
    ) {
        response.set_status(code);
        if code == http::StatusCode::SERVICE_UNAVAILABLE {
            response.insert_header(
                http::header::RETRY_AFTER,
                http::HeaderValue::from_static("1"),
            );
        }
    }
    #[cfg(not(feature = "ssr"))]
    let _ = status;
}

/// An error panel for a failed API read; the page's status follows [`crate::api::ApiError::page_status`]
/// (a 404 from the API makes the page a 404 too; 5xx only for a real fault).
#[component]
pub fn ApiErrorPanel(error: crate::api::ApiError) -> impl IntoView {
    set_page_status(error.page_status());
    if error.signed_out() {
        return view! { <SignedOut/> }.into_any();
    }
    view! { <ErrorPanel message=error.describe()/> }.into_any()
}

/// The path and query of this page, for `/sign-in?next=` (`/` on the server, where it is not needed).
pub fn here() -> String {
    #[cfg(feature = "hydrate")]
    {
        web_sys::window()
            .and_then(|w| w.location().pathname().ok().zip(w.location().search().ok()))
            .map(|(p, q)| format!("{p}{q}"))
            .unwrap_or_else(|| "/".to_owned())
    }
    #[cfg(not(feature = "hydrate"))]
    {
        "/".to_owned()
    }
}

/// A read was refused for want of a credential (401): for staff, the sign-in ended; for a viewer, the
/// link no longer works. Says so in words, offers the sign-in (staff) and asks the page header to read
/// who is calling again, so it never keeps saying "Signed in" ([`caller_gone`]).
#[component]
pub fn SignedOut() -> impl IntoView {
    let caller = use_context::<crate::CallerResource>();
    let was_viewer = caller
        .and_then(|c| c.0.get_untracked())
        .is_some_and(|c| c.is_ok_and(|c| c.access == "viewer"));
    caller_gone();
    if was_viewer {
        return view! {
            <div role="alert" class="error-panel signed-out rounded-md border-l-4 border-red-600 bg-red-50 p-3 text-red-900 dark:bg-red-950 dark:text-red-100">
                "This link no longer works. Ask whoever shared it with you for a new link."
            </div>
        }
        .into_any();
    }
    let href = format!("/sign-in?next={}", crate::api::enc(&here()));
    view! {
        <div role="alert" class="error-panel signed-out rounded-md border-l-4 border-red-600 bg-red-50 p-3 text-red-900 dark:bg-red-950 dark:text-red-100">
            "Your sign-in has ended, so nothing more can be shown. "
            <a rel="external" class="font-medium underline underline-offset-2" href=href>"Sign in again"</a>
        </div>
    }
    .into_any()
}

/// For a viewer (an end user who opened a viewer link): what this page is and what to do with an unknown
/// outcome. Nothing for anyone else.
#[component]
pub fn ViewerNotice() -> impl IntoView {
    let caller = use_context::<crate::CallerResource>();
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                let viewer = is_viewer(caller).await;
                viewer.then(|| view! {
                    <aside class="viewer-notice mb-4 rounded-md border-l-4 border-sky-600 bg-sky-50 px-3 py-2 text-sm text-sky-950 dark:bg-sky-950 dark:text-sky-50" aria-label="About this page">
                        <p>"Shared with you: what your agent did. Never repeat a write marked " <strong>"unknown"</strong> " yourself; quote its operation id to " <crate::support::SupportLink/> "."</p>
                        <details class="mt-1">
                            <summary class="cursor-pointer underline underline-offset-2">"What does unknown mean?"</summary>
                            <p class="mt-1">"Each row is a write your agent asked to make: whether it was done, failed, or not done at all."</p>
                            <p class="mt-1">"Unknown means the result was not established: nobody can say yet whether it happened. It may already have taken effect, so doing it again could do it twice. Support can check it with the provider; once they have, the row says who confirmed it and when."</p>
                        </details>
                    </aside>
                })
            })}
        </Transition>
    }
}

/// Download links of a session's export (docs/api.md "Export"): its records as JSON Lines, and the same
/// with every operation's history after them. End-user words: "Download (JSON Lines)".
#[component]
pub fn ExportLinks(session_key: String) -> impl IntoView {
    let link = "rounded border border-slate-300 px-2 py-0.5 underline-offset-2 hover:bg-slate-100 dark:border-slate-700 dark:hover:bg-slate-800";
    view! {
        <p class="export mb-4 flex flex-wrap items-center gap-2 text-sm">
            <span class="opacity-80">"This session:"</span>
            <a class=link href=crate::api::export_url(&session_key, false) download="" rel="external" data-export="records">"Download (JSON Lines)"</a>
            <a class=link href=crate::api::export_url(&session_key, true) download="" rel="external" data-export="history">"Download with every change (JSON Lines)"</a>
        </p>
    }
}

/// Who the page was rendered for: the caller's access (`"staff"`, `"viewer"`, …) once read, `None`
/// without a caller in context or when it could not be read. Await it inside the page's `Suspense`, so
/// the server and the browser render alike.
///
/// Read untracked: a later read of the caller ([`caller_gone`], when a sign-in ends while the page is
/// open) changes the header to "Signed out" but never renders the page again, so a staff member's forms
/// and what was typed into them stay; a submit is then refused and the sign-in form keeps the text
/// (docs/access.md "Signing in").
pub async fn page_access(caller: Option<crate::CallerResource>) -> Option<String> {
    let c = caller?;
    leptos::reactive::computed::ScopedFuture::new_untracked(std::future::IntoFuture::into_future(
        c.0,
    ))
    .await
    .ok()
    .map(|c| c.access)
}

/// Whether the page was rendered for a viewer (an end user who opened a viewer link): [`page_access`].
pub async fn is_viewer(caller: Option<crate::CallerResource>) -> bool {
    page_access(caller).await.as_deref() == Some("viewer")
}

/// Whether the page was rendered for signed-in staff: [`page_access`].
pub async fn is_staff(caller: Option<crate::CallerResource>) -> bool {
    page_access(caller).await.as_deref() == Some("staff")
}

/// The live indicator (docs/design.md "What the person sees"): a dot and words, announced politely;
/// `data-state` is [`crate::connection::Connection::name`].
#[component]
pub fn ConnectionIndicator(connection: RwSignal<crate::connection::Connection>) -> impl IntoView {
    view! {
        <p class="connection text-sm" role="status" aria-live="polite" data-state=move || connection.with(|c| c.name())>
            <span aria-hidden="true" class=move || {
                let colour = match connection.with(|c| c.name()) {
                    "live" => "bg-emerald-500",
                    "reconnecting" | "connecting" => "bg-amber-500",
                    "snapshot" => "bg-slate-400",
                    _ => "bg-red-500",
                };
                format!("mr-1 inline-block h-2 w-2 rounded-full {colour}")
            }></span>
            {move || connection.with(|c| c.label())}
        </p>
    }
}

/// How often a listing page reads itself again (docs/design.md "What the person sees": at most every 15 s).
pub const REFRESH_SECS: u64 = 15;

/// A counter for a listing page's resource to track: bumped every [`REFRESH_SECS`] once the page is
/// interactive (and by [`AsOf`]'s button), so the page reads itself again. Stops when the page is left.
pub fn refresh_ticker() -> RwSignal<u64> {
    let tick = RwSignal::new(0u64);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Ok(handle) = set_interval_with_handle(
            move || tick.update(|t| *t += 1),
            std::time::Duration::from_secs(REFRESH_SECS),
        ) {
            on_cleanup(move || handle.clear());
        }
    });
    tick
}

/// "As of <time>" for a listing read at `at` (RFC 3339), with a button that reads it again now. When the
/// last read failed (`stale`: why, [`crate::components::listing::Stale`]), the list shown is the one read at
/// `at`: "Stale since <time>" and why, in words, instead.
#[component]
pub fn AsOf(
    at: String,
    refresh: RwSignal<u64>,
    stale: Option<crate::components::listing::Stale>,
) -> impl IntoView {
    let button = view! {
        <button type="button" class="refresh rounded border border-slate-400 px-2 py-0.5 text-xs hover:bg-slate-100 dark:border-slate-600 dark:hover:bg-slate-800"
            on:click=move |_| refresh.update(|t| *t += 1)>"Refresh now"</button>
    };
    match stale {
        None => view! {
            <p class="as-of mb-3 flex flex-wrap items-center gap-2 text-sm opacity-90" data-stale="false">
                <span>"As of " <time::Time at/>{format!(" · refreshes every {REFRESH_SECS} s")}</span>
                {button}
            </p>
        }
        .into_any(),
        Some(why) => {
            let words = match why {
                crate::components::listing::Stale::SignedOut => {
                    caller_gone();
                    view! {
                        "your sign-in has ended. "
                        <a rel="external" class="font-medium underline underline-offset-2" href=format!("/sign-in?next={}", crate::api::enc(&here()))>"Sign in again"</a>
                    }
                    .into_any()
                }
                crate::components::listing::Stale::Unreachable => {
                    view! { {format!("the server cannot be reached; trying again every {REFRESH_SECS} s.")} }.into_any()
                }
                crate::components::listing::Stale::Failed(w) => view! { {w} }.into_any(),
            };
            view! {
                <p class="as-of stale mb-3 flex flex-wrap items-center gap-2 rounded-md border-l-4 border-amber-500 bg-amber-50 p-2 text-sm text-amber-950 dark:bg-amber-950 dark:text-amber-50"
                    role="status" data-stale="true">
                    <span><strong class="font-semibold">"Stale since " <time::Time at/></strong>": " {words}</span>
                    {button}
                </p>
            }
            .into_any()
        }
    }
}
