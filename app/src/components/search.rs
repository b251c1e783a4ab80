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

/// What the list shows: the text it answers, its sessions and its operations.
type Answer = (String, Vec<Hit>, Vec<Hit>);

/// The search box's state, shared by its handlers and its parts (every field a reactive handle, so the
/// whole is `Copy`).
#[derive(Clone, Copy)]
struct SearchBox {
    /// The text in the box.
    q: RwSignal<String>,
    /// The answer shown (for the text it answers), `None` while the list is closed.
    shown: RwSignal<Option<Answer>>,
    /// Whether the answer has a next page: an empty one then only means the search stopped at its bound
    /// of candidates (docs/api.md "Search"), not that nothing contains the text.
    unfinished: RwSignal<bool>,
    /// The bound a 1- or 2-character text reached (`searched_newest`), said under the list.
    window: RwSignal<Option<u32>>,
    /// The option shown active: an index into [`SearchBox::choices`].
    active: RwSignal<Option<usize>>,
    /// Why the last question got no answer, in words.
    failed: RwSignal<Option<String>>,
    /// Each question's number: an answer to an older question than the newest is dropped.
    asked: StoredValue<u64>,
    /// The question waiting for typing to pause ([`DEBOUNCE_MS`]).
    #[cfg(feature = "hydrate")]
    pending: StoredValue<Option<leptos::prelude::TimeoutHandle>>,
}

impl SearchBox {
    fn new() -> Self {
        SearchBox {
            q: RwSignal::new(String::new()),
            shown: RwSignal::new(None),
            unfinished: RwSignal::new(false),
            window: RwSignal::new(None),
            active: RwSignal::new(None),
            failed: RwSignal::new(None),
            asked: StoredValue::new(0),
            #[cfg(feature = "hydrate")]
            pending: StoredValue::new(None),
        }
    }

    /// Where the list's options lead, in order: the sessions, the operations, then the Find page of
    /// everything; empty while the list is closed.
    fn choices(self) -> Vec<String> {
        self.shown.with(|s| {
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
    }

    fn is_open(self) -> bool {
        self.shown.with(Option::is_some)
    }

    fn close(self) {
        self.shown.set(None);
        self.active.set(None);
    }

    /// Asks for `text` once typing has paused [`DEBOUNCE_MS`] (a blank text closes the list), any
    /// question still waiting forgotten; only the newest question's answer is shown.
    fn ask(self, text: String) {
        let n = self.asked.get_value() + 1;
        self.asked.set_value(n);
        #[cfg(feature = "hydrate")]
        {
            if let Some(h) = self.pending.get_value() {
                h.clear();
            }
            if text.trim().is_empty() {
                self.close();
                return;
            }
            let handle = set_timeout_with_handle(
                move || {
                    let question = text.trim().to_owned();
                    leptos::task::spawn_local(async move {
                        let answer = crate::api::search(&question, AS_YOU_TYPE, None).await;
                        if self.asked.get_value() == n {
                            self.show(question, answer);
                        }
                    });
                },
                std::time::Duration::from_millis(DEBOUNCE_MS),
            );
            self.pending.set_value(handle.ok());
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (text, n);
    }

    /// Opens the list on the answer to `question` (no option active), or on why there is none.
    #[cfg(feature = "hydrate")]
    fn show(self, question: String, answer: Result<SearchResults, crate::api::ApiError>) {
        match answer {
            Ok(r) => {
                let (sessions, operations) = hits(&r);
                self.unfinished.set(r.next.is_some());
                self.window.set(r.searched_newest);
                self.failed.set(None);
                self.active.set(None);
                self.shown.set(Some((question, sessions, operations)));
            }
            Err(e) => {
                self.failed.set(Some(e.describe()));
                self.unfinished.set(false);
                self.window.set(None);
                self.active.set(None);
                self.shown.set(Some((question, vec![], vec![])));
            }
        }
    }

    /// The box's keys (the module's docs): ArrowDown/ArrowUp move the active option round the list,
    /// Enter follows the active one (with none, the form is sent: the Find page), Escape closes the
    /// list, then empties the box.
    fn key(self, ev: leptos::ev::KeyboardEvent) {
        let n = self.choices().len();
        match ev.key().as_str() {
            "ArrowDown" | "ArrowUp" if n > 0 => {
                ev.prevent_default();
                let down = ev.key() == "ArrowDown";
                self.active.update(|a| {
                    *a = Some(match (*a, down) {
                        (None, true) => 0,
                        (None, false) => n - 1,
                        (Some(i), true) => (i + 1) % n,
                        (Some(i), false) => (i + n - 1) % n,
                    })
                });
            }
            "Enter" => {
                let chosen = self.active.get_untracked();
                if let Some(href) = chosen.and_then(|i| self.choices().get(i).cloned()) {
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
                if self.shown.with_untracked(Option::is_some) {
                    self.close();
                } else {
                    self.q.set(String::new());
                    self.asked.set_value(self.asked.get_value() + 1);
                }
            }
            _ => {}
        }
    }

    /// Leaving the box closes the list, once a click on a result had its time ([`DEBOUNCE_MS`]) to
    /// follow the link.
    fn left(self) {
        #[cfg(feature = "hydrate")]
        set_timeout(
            move || {
                let inside = web_sys::window()
                    .and_then(|w| w.document())
                    .and_then(|d| d.active_element())
                    .is_some_and(|e| e.closest(".header-search").ok().flatten().is_some());
                if !inside {
                    self.close();
                }
            },
            std::time::Duration::from_millis(DEBOUNCE_MS),
        );
    }
}

/// The element id of the list's option `i` (`aria-activedescendant`).
fn option_id(i: usize) -> String {
    format!("hs-{i}")
}

/// The header's search box (the module's docs): the form, its combobox input and the popup list of
/// results ([`results_popup`]), with a polite status saying how many were found.
#[component]
pub fn HeaderSearch() -> impl IntoView {
    let b = SearchBox::new();
    let on_input = move |ev: leptos::ev::Event| {
        let text = event_target_value(&ev);
        b.q.set(text.clone());
        b.ask(text);
    };
    view! {
        <form method="get" action="/find" role="search" aria-label="Search" class="header-search relative order-last w-full sm:order-none sm:w-72" on:focusout=move |_| b.left()>
            <label for="header-q" class="sr-only">"Search sessions and operations"</label>
            <input id="header-q" name="q" type="search" role="combobox" autocomplete="off" spellcheck="false"
                placeholder="Search ids, titles…"
                aria-autocomplete="list" aria-controls="header-results"
                aria-expanded=move || if b.is_open() { "true" } else { "false" }
                aria-activedescendant=move || b.active.get().map(option_id)
                prop:value=move || b.q.get()
                on:input=on_input on:keydown=move |ev| b.key(ev)
                class="w-full rounded border border-slate-400 bg-white px-2 py-1 font-mono text-sm placeholder:font-sans placeholder:text-slate-500 dark:border-slate-600 dark:bg-slate-900 dark:placeholder:text-slate-400"/>
            {results_popup(b)}
            <p class="sr-only" role="status" aria-live="polite">
                {move || b.shown.with(|s| s.as_ref().map(|(_, a, b)| format!(
                    "{} and {}",
                    crate::components::count(a.len() as u64, "session", "sessions"),
                    crate::components::count(b.len() as u64, "operation", "operations")
                )))}
            </p>
        </form>
    }
}

/// The popup under the box (hidden while the list is closed): the listbox (sessions, operations, then
/// "All results for …"), and what is said when nothing matched, when a short text reached its bound
/// ([`window_words`]) or when the question failed.
fn results_popup(b: SearchBox) -> impl IntoView {
    view! {
        <div class="search-popup absolute right-0 z-50 mt-1 w-full min-w-72 overflow-hidden rounded-md border border-slate-300 bg-white shadow-lg sm:w-96 dark:border-slate-700 dark:bg-slate-900"
            hidden=move || !b.is_open()>
            <div id="header-results" role="listbox" aria-label="Search results">
                {move || b.shown.get().map(|(text, sessions, operations)| {
                    let n = sessions.len();
                    let m = operations.len();
                    let everything = n + m;
                    view! {
                        {hit_group("Sessions", sessions, 0, b.active)}
                        {hit_group("Operations", operations, n, b.active)}
                        <a role="option" id=option_id(everything) rel="external" href=find_href(&text)
                            aria-selected=move || if b.active.get() == Some(everything) { "true" } else { "false" }
                            class="hit all-results block border-t border-slate-200 px-3 py-1.5 text-sm underline-offset-2 hover:underline aria-selected:bg-sky-100 dark:border-slate-700 dark:aria-selected:bg-sky-900">
                            {format!("All results for “{}”", mark(&text))}
                        </a>
                    }
                })}
            </div>
            <p class="search-none px-3 py-1 text-sm" hidden=move || !b.shown.with(|s| s.as_ref().is_some_and(|(_, a, b)| a.is_empty() && b.is_empty())) || b.failed.with(Option::is_some)>
                {move || b.shown.with(|s| s.as_ref().map(|(t, _, _)| if b.unfinished.get() {
                    format!("No match for “{}” among the newest candidates: all results go on.", mark(t))
                } else {
                    format!("No session or operation contains “{}”.", mark(t))
                }))}
            </p>
            <p class="search-window px-3 py-1 text-xs" hidden=move || b.window.with(Option::is_none)>
                {move || b.window.get().map(window_words)}
            </p>
            <p class="search-failed px-3 py-1 text-sm text-red-800 dark:text-red-200" hidden=move || b.failed.with(Option::is_none)>
                {move || b.failed.get()}
            </p>
        </div>
    }
}

/// One group of the list (`label` "Sessions" or "Operations"; nothing when it has no hits): its heading
/// (hidden from screen readers: the group's `aria-label` names it) and an option per hit, the options
/// numbered from `first` (their ids, [`option_id`]; the one `active` is selected).
fn hit_group(
    label: &'static str,
    hits: Vec<Hit>,
    first: usize,
    active: RwSignal<Option<usize>>,
) -> Option<impl IntoView> {
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
