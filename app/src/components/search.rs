//! The search box in the header of every staff and investigator page (never a viewer's, docs/access.md):
//! a GET form to `/find?q=` that works without JavaScript; once interactive it answers as you type,
//! 200 ms after the last key, from `GET /api/search?q=&limit=` (docs/api.md "Search"), the sessions and the
//! operations apart, each a link straight to its page. A combobox with a listbox popup (WAI-ARIA
//! "combobox" pattern): ArrowDown/ArrowUp move through the results, Enter opens the one shown active (or,
//! with none, the Find page of everything), Escape closes the list and then empties the box.

use ledger::wire::{PublishedStatus, SearchResults};
use leptos::prelude::*;

use crate::address::{history_href, session_href};
use crate::components::marks::mark;

/// Results asked for per group while typing.
pub const AS_YOU_TYPE: u32 = 5;
/// How long typing must pause before the box asks, in milliseconds.
pub const DEBOUNCE_MS: u64 = 200;

/// One result of the list: where it leads and what it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub href: String,
    /// The id (session key or operation id), marked.
    pub id: String,
    /// What is said beside the id: an operation's title or tool and its status; a session's last write.
    pub about: String,
    /// An operation's place: what tells apart operations of the same title (issue 41).
    pub place: Option<Place>,
}

/// Where and when an operation of the results is: its session (key, marked), its turn ("Turn 3"; the
/// turn's id, marked, when the number is unknown) and its times (RFC 3339 UTC, docs/api.md "Search").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub session: String,
    pub turn: String,
    pub recorded_at: String,
    pub settled_at: Option<String>,
}

/// What a page of results says when a text of 1 or 2 characters reached its bound (`searched_newest`,
/// docs/api.md "Search"): `n` with thousands separated ("20,000").
pub fn window_words(n: u32) -> String {
    let digits = n.to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("Searched the newest {grouped} operations and sessions only: type 3 or more characters to search them all.")
}

/// The results as the list shows them: sessions first, then operations.
pub fn hits(r: &SearchResults) -> (Vec<Hit>, Vec<Hit>) {
    let sessions = r
        .sessions
        .iter()
        .map(|s| Hit {
            href: session_href(&s.session_key),
            id: mark(&s.session_key),
            about: format!(
                "last write {}",
                crate::components::time::utc_text(&s.last_activity)
            ),
            place: None,
        })
        .collect();
    let operations = r
        .operations
        .iter()
        .map(|o| Hit {
            href: history_href(&o.session_key, &o.mutation_id),
            id: mark(&o.mutation_id),
            about: format!(
                "{} · {}",
                mark(o.title.as_deref().unwrap_or(&o.tool)),
                status_words(o.status)
            ),
            place: Some(Place {
                session: mark(&o.session_key),
                turn: match o.turn_number {
                    0 => format!("Turn {}", mark(&o.logical_turn_id)),
                    n => format!("Turn {n}"),
                },
                recorded_at: o.recorded_at.clone(),
                settled_at: o.settled_at.clone(),
            }),
        })
        .collect();
    (sessions, operations)
}

/// A published status in the list's words.
pub fn status_words(s: PublishedStatus) -> &'static str {
    match s {
        PublishedStatus::Completed => "completed",
        PublishedStatus::Failed => "failed",
        PublishedStatus::NotExecuted => "not executed",
        PublishedStatus::OutcomeUnknown => "unknown",
    }
}

/// The path of the Find page for `q`.
pub fn find_href(q: &str) -> String {
    format!("/find?q={}", crate::api::enc(q))
}

#[component]
pub fn HeaderSearch() -> impl IntoView {
    let q = RwSignal::new(String::new());
    // The answer shown (for the text it answers), None while the list is closed.
    let shown = RwSignal::new(None::<(String, Vec<Hit>, Vec<Hit>)>);
    // Whether the answer has a next page: an empty one then only means the search stopped at its bound
    // of candidates (docs/api.md "Search"), not that nothing contains the text.
    let unfinished = RwSignal::new(false);
    // The bound a 1- or 2-character text reached (`searched_newest`), said under the list.
    let window = RwSignal::new(None::<u32>);
    let active = RwSignal::new(None::<usize>);
    let failed = RwSignal::new(None::<String>);
    // Each question's number: an answer to an older question than the newest is dropped.
    let asked = StoredValue::new(0u64);
    #[cfg(feature = "hydrate")]
    let pending = StoredValue::new(None::<leptos::prelude::TimeoutHandle>);

    let all = move || {
        shown.with(|s| {
            s.as_ref()
                .map(|(text, sessions, operations)| {
                    let mut v: Vec<String> = sessions
                        .iter()
                        .chain(operations)
                        .map(|h| h.href.clone())
                        .collect();
                    v.push(find_href(text));
                    v
                })
                .unwrap_or_default()
        })
    };
    let close = move || {
        shown.set(None);
        active.set(None);
    };
    let ask = move |text: String| {
        let n = asked.get_value() + 1;
        asked.set_value(n);
        #[cfg(feature = "hydrate")]
        {
            if let Some(h) = pending.get_value() {
                h.clear();
            }
            if text.trim().is_empty() {
                close();
                return;
            }
            let handle = set_timeout_with_handle(
                move || {
                    let question = text.trim().to_owned();
                    leptos::task::spawn_local(async move {
                        let answer = crate::api::search(&question, AS_YOU_TYPE, None).await;
                        if asked.get_value() != n {
                            return;
                        }
                        match answer {
                            Ok(r) => {
                                let (sessions, operations) = hits(&r);
                                unfinished.set(r.next.is_some());
                                window.set(r.searched_newest);
                                failed.set(None);
                                active.set(None);
                                shown.set(Some((question, sessions, operations)));
                            }
                            Err(e) => {
                                failed.set(Some(e.describe()));
                                unfinished.set(false);
                                window.set(None);
                                active.set(None);
                                shown.set(Some((question, vec![], vec![])));
                            }
                        }
                    });
                },
                std::time::Duration::from_millis(DEBOUNCE_MS),
            );
            pending.set_value(handle.ok());
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (text, n, failed, window);
    };
    let on_input = move |ev: leptos::ev::Event| {
        let text = event_target_value(&ev);
        q.set(text.clone());
        ask(text);
    };
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        let n = all().len();
        match ev.key().as_str() {
            "ArrowDown" | "ArrowUp" if n > 0 => {
                ev.prevent_default();
                let down = ev.key() == "ArrowDown";
                active.update(|a| {
                    *a = Some(match (*a, down) {
                        (None, true) => 0,
                        (None, false) => n - 1,
                        (Some(i), true) => (i + 1) % n,
                        (Some(i), false) => (i + n - 1) % n,
                    })
                });
            }
            "Enter" => {
                if let Some(href) = active.get_untracked().and_then(|i| all().get(i).cloned()) {
                    ev.prevent_default();
                    #[cfg(feature = "hydrate")]
                    if let Some(w) = web_sys::window() {
                        let _ = w.location().assign(&href);
                    }
                    #[cfg(not(feature = "hydrate"))]
                    let _ = href;
                }
            }
            "Escape" => {
                ev.prevent_default();
                if shown.with_untracked(Option::is_some) {
                    close();
                } else {
                    q.set(String::new());
                    asked.set_value(asked.get_value() + 1);
                }
            }
            _ => {}
        }
    };
    // Leaving the box closes the list, once a click on a result had its time to follow the link.
    let on_blur = move |_| {
        #[cfg(feature = "hydrate")]
        set_timeout(
            move || {
                let inside = web_sys::window()
                    .and_then(|w| w.document())
                    .and_then(|d| d.active_element())
                    .is_some_and(|e| e.closest(".header-search").ok().flatten().is_some());
                if !inside {
                    close();
                }
            },
            std::time::Duration::from_millis(DEBOUNCE_MS),
        );
    };
    let open = move || shown.with(Option::is_some);
    let option_id = |i: usize| format!("hs-{i}");
    let group = move |label: &'static str, hits: Vec<Hit>, first: usize| {
        (!hits.is_empty()).then(|| {
            view! {
                <div role="group" aria-label=label class="py-1">
                    <p aria-hidden="true" class="px-3 py-1 text-xs font-semibold uppercase tracking-wide opacity-70">{label}</p>
                    {hits.into_iter().enumerate().map(|(j, h)| {
                        let i = first + j;
                        view! {
                            <a role="option" id=option_id(i) rel="external" href=h.href
                                aria-selected=move || if active.get() == Some(i) { "true" } else { "false" }
                                class="hit block px-3 py-1 text-sm aria-selected:bg-sky-100 hover:bg-slate-100 dark:aria-selected:bg-sky-900 dark:hover:bg-slate-800">
                                <span class="block truncate font-mono">{h.id}</span>
                                <span class="block truncate text-xs opacity-80">{h.about}</span>
                                {h.place.map(|p| view! {
                                    <span class="hit-place block truncate text-xs opacity-80">
                                        {p.turn}" · "
                                        <crate::components::time::Time at=p.settled_at.unwrap_or(p.recorded_at)/>
                                        " · "<bdi>{p.session}</bdi>
                                    </span>
                                })}
                            </a>
                        }
                    }).collect_view()}
                </div>
            }
        })
    };
    view! {
        <form method="get" action="/find" role="search" aria-label="Search" class="header-search relative order-last w-full sm:order-none sm:w-72" on:focusout=on_blur>
            <label for="header-q" class="sr-only">"Search sessions and operations"</label>
            <input id="header-q" name="q" type="search" role="combobox" autocomplete="off" spellcheck="false"
                placeholder="Search ids, titles…"
                aria-autocomplete="list" aria-controls="header-results"
                aria-expanded=move || if open() { "true" } else { "false" }
                aria-activedescendant=move || active.get().map(option_id)
                prop:value=move || q.get()
                on:input=on_input on:keydown=on_keydown
                class="w-full rounded border border-slate-400 bg-white px-2 py-1 font-mono text-sm placeholder:font-sans placeholder:text-slate-500 dark:border-slate-600 dark:bg-slate-900 dark:placeholder:text-slate-400"/>
            <div class="search-popup absolute right-0 z-50 mt-1 w-full min-w-72 overflow-hidden rounded-md border border-slate-300 bg-white shadow-lg sm:w-96 dark:border-slate-700 dark:bg-slate-900"
                hidden=move || !open()>
                <div id="header-results" role="listbox" aria-label="Search results">
                    {move || shown.get().map(|(text, sessions, operations)| {
                        let n = sessions.len();
                        let m = operations.len();
                        let everything = n + m;
                        view! {
                            {group("Sessions", sessions, 0)}
                            {group("Operations", operations, n)}
                            <a role="option" id=option_id(everything) rel="external" href=find_href(&text)
                                aria-selected=move || if active.get() == Some(everything) { "true" } else { "false" }
                                class="hit all-results block border-t border-slate-200 px-3 py-1.5 text-sm underline-offset-2 hover:underline aria-selected:bg-sky-100 dark:border-slate-700 dark:aria-selected:bg-sky-900">
                                {format!("All results for “{}”", mark(&text))}
                            </a>
                        }
                    })}
                </div>
                <p class="search-none px-3 py-1 text-sm" hidden=move || !shown.with(|s| s.as_ref().is_some_and(|(_, a, b)| a.is_empty() && b.is_empty())) || failed.with(Option::is_some)>
                    {move || shown.with(|s| s.as_ref().map(|(t, _, _)| if unfinished.get() {
                        format!("No match for “{}” among the newest candidates: all results go on.", mark(t))
                    } else {
                        format!("No session or operation contains “{}”.", mark(t))
                    }))}
                </p>
                <p class="search-window px-3 py-1 text-xs" hidden=move || window.with(Option::is_none)>
                    {move || window.get().map(window_words)}
                </p>
                <p class="search-failed px-3 py-1 text-sm text-red-800 dark:text-red-200" hidden=move || failed.with(Option::is_none)>
                    {move || failed.get()}
                </p>
            </div>
            <p class="sr-only" role="status" aria-live="polite">
                {move || shown.with(|s| s.as_ref().map(|(_, a, b)| format!(
                    "{} and {}",
                    crate::components::count(a.len() as u64, "session", "sessions"),
                    crate::components::count(b.len() as u64, "operation", "operations")
                )))}
            </p>
        </form>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ledger::wire::{OperationHit, SessionHit, StatusCounts};

    #[test]
    fn results_link_straight_to_their_pages() {
        let r = SearchResults {
            sessions: vec![SessionHit {
                session_key: "support chat/1".into(),
                last_activity: "2026-12-02T10:00:00.000Z".into(),
                counts: StatusCounts::default(),
            }],
            operations: vec![OperationHit {
                session_key: "support chat/1".into(),
                logical_turn_id: "t".into(),
                turn_number: 3,
                mutation_id: "op\u{200B}1".into(),
                tool: "create_issue".into(),
                title: None,
                status: PublishedStatus::OutcomeUnknown,
                recorded_at: "2026-12-02T10:00:00.000Z".into(),
                settled_at: None,
            }],
            next: None,
            searched_newest: None,
        };
        let (s, o) = hits(&r);
        assert_eq!(s[0].href, "/sessions/support%20chat%2F1");
        assert_eq!(s[0].about, "last write 2026-12-02 10:00:00 UTC");
        assert_eq!(
            o[0].href,
            "/sessions/support%20chat%2F1/operations/op%E2%80%8B1"
        );
        assert_eq!(o[0].id, "op⟨U+200B⟩1");
        assert_eq!(o[0].about, "create_issue · unknown");
        assert_eq!(
            o[0].place,
            Some(Place {
                session: "support chat/1".into(),
                turn: "Turn 3".into(),
                recorded_at: "2026-12-02T10:00:00.000Z".into(),
                settled_at: None,
            })
        );
        assert_eq!(
            window_words(20_000),
            "Searched the newest 20,000 operations and sessions only: type 3 or more characters to search them all."
        );
        assert!(
            window_words(999).contains(" 999 ") && window_words(1_234_567).contains(" 1,234,567 ")
        );
        assert_eq!(find_href("a b&c"), "/find?q=a%20b%26c");
    }
}
