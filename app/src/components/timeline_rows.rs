//! A timeline's rows (docs/design.md "Keyboard"): each row an outcome card ([`super::outcome`]) and a
//! link to its operation page, the list a roving list ([`super::roving`]: one tab stop, the arrow keys
//! inside). Used by the turn page and the session page's sections.

use leptos::prelude::*;

use super::marks::mark;
use super::outcome::{status_look, OutcomeCard};
use super::roving::{focused_row, on_keydown, tab_stop, RovingList};

/// A timeline's rows as a roving list (see [`super::roving`]): each row its outcome card and a link to its
/// operation page. `rows` are the rows shown, in order; `label` names the list; `revisions` shows each
/// row's revision (staff's turn page; the end user's session page leaves them out). The keys are described
/// by the element `timeline-keys` ([`KeysHelp`](super::roving::KeysHelp)) on the page.
#[component]
pub fn TimelineRows(
    session: String,
    rows: Memo<Vec<crate::timeline::Row>>,
    label: String,
    #[prop(into)] class: String,
    #[prop(optional)] revisions: bool,
    /// Show in-flight writes' deadlines (staff's turn page; never an end user's page).
    #[prop(optional)]
    deadlines: bool,
) -> impl IntoView {
    let active = RwSignal::new(None::<String>);
    let stop = Memo::new(move |_| {
        let a = active.get();
        rows.with(|rs| {
            tab_stop(
                a.as_deref(),
                rs.iter().map(|r| r.outcome.mutation_id.as_str()),
            )
            .map(str::to_owned)
        })
    });
    let on_focusin = move |ev: leptos::ev::FocusEvent| {
        if let Some(id) = focused_row(&ev) {
            active.set(Some(id));
        }
    };
    provide_context(RovingList);
    view! {
        <ol class=class aria-label=label aria-describedby="timeline-keys" on:keydown=on_keydown on:focusin=on_focusin>
            <For
                each=move || rows.get()
                key=|r| (r.outcome.mutation_id.clone(), r.revision, r.in_flight, r.sequence, r.settled_at.clone(), r.settled_by, r.established_by, r.deadline_at.clone())
                children=move |r| {
                    let label = row_label(&r);
                    let history = crate::address::history_href(&session, &r.outcome.mutation_id);
                    let id = r.outcome.mutation_id.clone();
                    let row_id = id.clone();
                    let tabindex = move || if stop.with(|t| t.as_deref() == Some(id.as_str())) { "0" } else { "-1" };
                    let revision = r.revision.filter(|_| revisions);
                    view! {
                        <li aria-label=label data-row-id=row_id class="timeline-row" tabindex=tabindex>
                            <OutcomeCard outcome=r.outcome in_flight=r.in_flight revision recorded_at=r.recorded_at.clone() settled_at=r.settled_at.clone()
                                deadline_at=r.deadline_at.clone() settled_by=r.settled_by established_by=r.established_by deadline=deadlines/>
                            <a rel="external" tabindex="-1" class="history-link" href=history>"History →"</a>
                        </li>
                    }
                }
            />
        </ol>
    }
}

/// The accessible name of a timeline row: status in words, then title (or tool).
fn row_label(r: &crate::timeline::Row) -> String {
    let (words, _, _) = status_look(r.outcome.status, r.in_flight);
    let title = r.outcome.title.as_deref().unwrap_or(&r.outcome.tool);
    format!("{words}: {}", mark(title))
}
