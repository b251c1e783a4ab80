//! Find: a session id, an operation id (`mutation_id`), or part of one, a title or a resource id. A plain
//! GET form (`/find?q=`), so it works without JavaScript: when the text is exactly the id of one session
//! (and no operation), or of one operation, the page redirects there (a 303 from the server; the
//! operation's own page, not the look-up). Otherwise it lists the exact matches, then the sessions and
//! operations that contain the text, case-insensitively (`GET /api/search`, docs/api.md "Search"), 20 of
//! each a page (`&after=` for more). An id typed as the pages show it, with marks of invisible characters
//! (`a⟨U+200B⟩b`), finds the id they stand for.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use crate::api::{self, ApiError};
use crate::components::marks::{mark, unmarked};
use crate::components::search::{hits, window_words, Hit};
use crate::components::time::{kind_text, time_title, Time, TimeKind};
use crate::routes::{history_href, operation_href, session_href};

/// Results per group on the Find page.
pub const PER_PAGE: u32 = 20;

/// What an id matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// The session exists (and has not expired).
    pub session: bool,
    /// Why the session did not match, when it exists but cannot be shown (expired).
    pub session_note: Option<String>,
    /// How many published outcomes carry this operation id.
    pub operations: usize,
    /// The session of the operation, when exactly one carries the id.
    pub only_in: Option<String>,
    /// A read that failed for another reason than "not found".
    pub error: Option<String>,
}

/// The search box: a plain GET form.
#[component]
pub fn SearchForm(#[prop(optional, into)] value: String) -> impl IntoView {
    view! {
        <form method="get" action="/find" role="search" class="search mb-6 flex flex-wrap items-end gap-2">
            <div class="flex min-w-0 flex-1 flex-col">
                <label for="q" class="mb-1 text-sm font-medium">"Session id or operation id"</label>
                <input
                    id="q"
                    name="q"
                    type="search"
                    required
                    value=value
                    autocomplete="off"
                    spellcheck="false"
                    placeholder="e.g. sess-42"
                    class="w-full rounded border border-slate-400 bg-white px-3 py-2 font-mono text-sm text-slate-900 placeholder:text-slate-500 focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-500 dark:border-slate-600 dark:bg-slate-900 dark:text-slate-100 dark:placeholder:text-slate-400"
                />
            </div>
            <button type="submit" class="rounded bg-sky-700 px-4 py-2 text-sm font-semibold text-white hover:bg-sky-800 focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-500 focus-visible:ring-offset-2">
                "Find"
            </button>
        </form>
    }
}

fn not_found(e: &ApiError) -> bool {
    matches!(e, ApiError::NotFound { .. })
}

/// Sends the browser to `href` (a page path built in [`crate::routes`]): on the server a 303 with
/// `Location`, so the form works without JavaScript; in the browser a full navigation
/// (`location.replace`), not the router's, which would decode the id again (docs/design.md "What the
/// person sees"). Shows the link meanwhile.
#[component]
fn GoTo(href: String) -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let (Some(response), Ok(location)) = (
        use_context::<leptos_axum::ResponseOptions>(),
        http::HeaderValue::from_str(&href),
    ) {
        response.set_status(http::StatusCode::SEE_OTHER);
        response.insert_header(http::header::LOCATION, location);
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    if let Some(window) = web_sys::window() {
        let _ = window.location().replace(&href);
    }
    view! { <p class="find-result"><a rel="external" class="underline underline-offset-2" href=href>"Continue"</a></p> }
}

/// Looks `q` up as a session id and as an operation id.
fn look_up(q: String) -> impl std::future::Future<Output = Found> + Send + 'static {
    let empty = q.is_empty();
    let session = api::session_turns(&q);
    let operation = api::operation(&q);
    async move {
        let mut f = Found {
            session: false,
            session_note: None,
            operations: 0,
            only_in: None,
            error: None,
        };
        if empty {
            return f;
        }
        match session.await {
            Ok(_) => f.session = true,
            Err(ApiError::NotFound { code, .. }) if code == "session_expired" => {
                f.session_note = Some(
                    "A session with this id existed but has expired: its history is no longer kept."
                        .to_owned(),
                )
            }
            Err(e) if not_found(&e) => {}
            Err(e) => f.error = Some(e.describe()),
        }
        match operation.await {
            Ok(m) => {
                f.operations = m.matches.len();
                if let [only] = m.matches.as_slice() {
                    f.only_in = Some(only.session_key.clone());
                }
            }
            Err(e) if not_found(&e) => {}
            Err(e) => f.error = Some(e.describe()),
        }
        f
    }
}

/// Where the page goes straight to, if anywhere: the session when the text is exactly a session id and no
/// operation's; the operation's own page when exactly one operation has it and no session; the look-up
/// of every match when several sessions hold an operation with this id.
pub fn goes_to(f: &Found, q: &str) -> Option<String> {
    if f.error.is_some() {
        return None;
    }
    match (f.session, f.operations, &f.only_in) {
        (true, 0, _) => Some(session_href(q)),
        (false, 1, Some(key)) => Some(history_href(key, q)),
        (false, n, _) if n > 0 => Some(operation_href(q)),
        _ => None,
    }
}

/// The sessions and operations that contain the text, each group a list of links to their pages, and a
/// link to the next page of them.
#[component]
fn Contained(q: String, answer: Result<ledger::wire::SearchResults, ApiError>) -> impl IntoView {
    let r = match answer {
        Err(e) => {
            return view! { <crate::components::ErrorPanel message=e.describe()/> }.into_any()
        }
        Ok(r) => r,
    };
    let more = r
        .next
        .clone()
        .map(|n| format!("/find?q={}&after={}", api::enc(&q), api::enc(&n)));
    // A 1- or 2-character text that reached its bound on this page (docs/api.md "Search").
    let window = r
        .searched_newest
        .map(|n| view! { <p class="search-window text-sm">{window_words(n)}</p> });
    if r.sessions.is_empty() && r.operations.is_empty() {
        // A page that stopped at the search's bound of candidates (docs/api.md "Search"): none here,
        // maybe some further on.
        return match more {
            Some(href) => view! {
                <div class="search-results mt-6">
                    <p class="search-bound">"No match among the newest candidates examined; the search goes on."</p>
                    <p><a rel="external" class="more-results underline underline-offset-2" href=href>"More results →"</a></p>
                </div>
            }
            .into_any(),
            None => window
                .map(|w| view! { <div class="search-results mt-6">{w}</div> })
                .into_any(),
        };
    }
    let (sessions, operations) = hits(&r);
    let sessions = (!sessions.is_empty()).then(|| view! {
        <section class="found-sessions mb-4">
            <h2 class="mb-1 text-lg font-semibold">{format!("Sessions containing “{}”", mark(&q))}</h2>
            <ul class="space-y-1">
                {sessions.into_iter().map(|h| view! {
                    <li><a rel="external" class="underline-offset-2 hover:underline" href=h.href>
                        <bdi class="break-all font-mono">{h.id}</bdi>
                        <span class="ml-2 text-sm opacity-80"><bdi>{h.about}</bdi></span>
                    </a></li>
                }).collect_view()}
            </ul>
        </section>
    });
    // Operations grouped by session (in the order of their newest), each with its turn and times, so
    // that operations of one title are told apart (issue 41).
    let mut groups: Vec<(String, Vec<Hit>)> = Vec::new();
    for h in operations {
        let key = h
            .place
            .as_ref()
            .map(|p| p.session.clone())
            .unwrap_or_default();
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, hits)) => hits.push(h),
            None => groups.push((key, vec![h])),
        }
    }
    let operations = (!groups.is_empty()).then(|| view! {
        <section class="found-operations mb-4">
            <h2 class="mb-1 text-lg font-semibold">{format!("Operations containing “{}”", mark(&q))}</h2>
            {groups.into_iter().map(|(session, hits)| view! {
                <div class="hit-group mb-3">
                    <h3 class="text-sm font-semibold"><span class="font-normal">"Session "</span><bdi class="break-all font-mono">{session}</bdi></h3>
                    <ul class="space-y-1 border-l-2 border-slate-300 pl-3 dark:border-slate-600">
                        {hits.into_iter().map(|h| {
                            let place = h.place.unwrap_or_else(|| crate::components::search::Place { session: String::new(), turn: String::new(), recorded_at: String::new(), settled_at: None });
                            view! {
                                <li><a rel="external" class="underline-offset-2 hover:underline" href=h.href>
                                    <bdi class="block">{h.about}</bdi>
                                    <span class="hit-place block text-sm opacity-80">
                                        {place.turn}" · recorded "<Time at=place.recorded_at/>
                                        // The settle time alone (its age would say the same twice).
                                        {place.settled_at.map(|at| {
                                            let text = kind_text(&at, TimeKind::Clock);
                                            let title = time_title(&at);
                                            view! { " · settled "<time datetime=at title=title data-clock="">{text}</time> }
                                        })}
                                    </span>
                                    <bdi class="block break-all font-mono text-xs opacity-80">{h.id}</bdi>
                                </a></li>
                            }
                        }).collect_view()}
                    </ul>
                </div>
            }).collect_view()}
        </section>
    });
    view! {
        <div class="search-results mt-6">
            {sessions}
            {operations}
            {window}
            {more.map(|href| view! { <p><a rel="external" class="more-results underline underline-offset-2" href=href>"More results →"</a></p> })}
        </div>
    }
    .into_any()
}

#[component]
pub fn FindPage() -> impl IntoView {
    // Decoded once from the address (crate::address): the router's query map decodes twice.
    let asked = crate::address::query_value("q")
        .unwrap_or_default()
        .trim()
        .to_owned();
    let typed = Memo::new(move |_| asked.clone());
    // What was found, and the id it was found by: as typed, or, when that matches nothing and it holds
    // marks of invisible characters (`a⟨U+200B⟩b`, as the pages show ids), the id they stand for.
    let after = crate::address::query_value("after").filter(|a| !a.is_empty());
    let reader = api::reader();
    let found = Resource::new(
        move || typed.get(),
        move |typed| {
            let reader = reader.clone();
            let after = after.clone();
            async move {
                let f = look_up(typed.clone()).await;
                let raw = unmarked(&typed).into_owned();
                let (f, q) = if raw != typed && f.error.is_none() && !f.session && f.operations == 0
                {
                    (look_up(raw.clone()).await, raw)
                } else {
                    (f, typed)
                };
                // What contains the text, unless the page goes straight to one thing.
                // A text the search refuses (control characters, over 256 bytes: never an id either)
                // has no matches to list; the page says so as for any other text that matches nothing.
                let searchable = ledger::ids::is_search_text(q.trim());
                let contained = if !searchable || goes_to(&f, &q).is_some() {
                    None
                } else {
                    Some(
                        reader
                            .get_json::<ledger::wire::SearchResults>(api::search_path(
                                &q,
                                PER_PAGE,
                                after.as_deref(),
                            ))
                            .await,
                    )
                };
                (f, q, contained)
            }
        },
    );
    let q = typed;
    view! {
        <Title text=crate::routes::page_title(move || format!("Find {} · Outcome ledger", mark(&q.get())))/>
        <h1 class="mb-4 text-2xl font-semibold">"Find"</h1>
        <SearchForm value=q.get_untracked()/>
        <Suspense fallback=|| view! { <p>"Looking up…"</p> }>
            {move || Suspend::new(async move {
                let (f, q, contained) = found.await;
                if q.is_empty() {
                    return view! { <p class="find-result">"Type an id, part of one, or words of a title."</p> }.into_any();
                }
                if let Some(href) = goes_to(&f, &q) {
                    return view! { <GoTo href/> }.into_any();
                }
                let nothing_contains = contained.as_ref().is_some_and(|c| c.as_ref().is_ok_and(|r| r.sessions.is_empty() && r.operations.is_empty() && r.next.is_none()));
                // Nothing found within the bound of a 1- or 2-character text: said of the newest only.
                let windowed = contained.as_ref().is_some_and(|c| c.as_ref().is_ok_and(|r| r.searched_newest.is_some()));
                // Ids, titles or resource ids that contain the text answer it: no "nothing has this id" above them.
                let some_contain = contained.as_ref().is_some_and(|c| c.as_ref().is_ok_and(|r| !r.sessions.is_empty() || !r.operations.is_empty()));
                view! {
                    <div class="find-result space-y-2">
                        {f.error.map(|m| view! { <crate::components::ErrorPanel message=m/> })}
                        {f.session_note.map(|m| view! { <p class="session-note">{m}</p> })}
                        {(f.session || f.operations > 0).then(|| view! {
                            <p>"This id matches more than one thing:"</p>
                        })}
                        <ul class="list-disc space-y-1 pl-6">
                            {f.session.then(|| view! {
                                <li><a rel="external" class="underline underline-offset-2" href=session_href(&q)>"Session "<bdi class="font-mono">{mark(&q)}</bdi></a></li>
                            })}
                            {(f.operations > 0).then(|| view! {
                                <li><a rel="external" class="underline underline-offset-2" href=operation_href(&q)>
                                    "Operation "<bdi class="font-mono">{mark(&q)}</bdi>{format!(" ({})", crate::components::count(f.operations as u64, "match", "matches"))}
                                </a></li>
                            })}
                        </ul>
                        {(!f.session && f.operations == 0 && !some_contain).then(|| view! {
                            <p class="no-match">
                                "No session and no published operation has the id "<bdi class="font-mono">{mark(&q)}</bdi>
                                {match (nothing_contains, windowed) {
                                    (true, false) => ", and no id, title or resource id contains it.",
                                    (true, true) => ", and no id, title or resource id of the newest operations and sessions contains it.",
                                    _ => ".",
                                }}
                                " Check the id; the session may have expired."
                            </p>
                        })}
                    </div>
                    {contained.map(|c| view! { <Contained q=q.clone() answer=c/> })}
                }.into_any()
            })}
        </Suspense>
    }
}
