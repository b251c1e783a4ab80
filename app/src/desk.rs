//! The support desk's bulk pages (docs/api.md "Bulk actions"), rendered by the server outside the hydrated
//! app like the other standalone pages ([`crate::standalone`]): plain HTML forms under the site's header,
//! working without JavaScript. The confirmation page lists every operation a bulk reconciliation will
//! touch, with the one piece of evidence to give; the result page lists what came of each, refusals
//! included, so nothing partial is hidden.

use leptos::prelude::*;

use crate::components::marks::mark;
use crate::standalone::{document_for, FormProblem, BAD_FIELD_CLASS, FIELD_CLASS};

/// One operation a bulk page lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkRow {
    pub session_key: String,
    pub mutation_id: String,
    /// The attempt the evidence is about (the queue's), when it has one.
    pub attempt_id: Option<String>,
    /// Its operation page.
    pub href: String,
    /// Its `op` form field ([`op_field`]).
    pub field: String,
    pub tool: Option<String>,
    pub title: Option<String>,
    /// What came of it (result pages only).
    pub done: Option<BulkDone>,
}

/// What came of one operation: done (in words), or refused (why, in words; nothing changed for it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BulkDone {
    Done(String),
    Refused(String),
}

/// The evidence typed on the confirmation page, as the form sent it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BulkEvidence {
    /// `true` or `false`.
    pub completed: Option<String>,
    pub source: Option<String>,
    pub reference: Option<String>,
    pub observed_at: Option<String>,
    pub provider_status: Option<String>,
}

/// An operation's `op` form field ([`crate::routes::unknowns::op_field`]).
pub use crate::routes::unknowns::op_field;

const BUTTON: &str = "rounded bg-slate-900 px-3 py-1 text-sm font-medium text-white hover:bg-slate-700 dark:bg-slate-100 dark:text-slate-900 dark:hover:bg-slate-300";

/// The list of operations: session, operation (a link to its page), attempt, tool, title, and on a
/// result page what came of each.
fn rows_table(rows: &[BulkRow]) -> impl IntoView {
    let results = rows.iter().any(|r| r.done.is_some());
    view! {
        <div class="overflow-x-auto">
            <table class="bulk-list w-full text-left text-sm">
                <thead>
                    <tr class="border-b border-slate-300 dark:border-slate-700">
                        <th scope="col" class="py-1 pr-3">"Operation"</th>
                        <th scope="col" class="py-1 pr-3">"Tool"</th>
                        <th scope="col" class="py-1 pr-3">"Title"</th>
                        <th scope="col" class="py-1 pr-3">"Session"</th>
                        <th scope="col" class="py-1 pr-3">"Attempt"</th>
                        {results.then(|| view! { <th scope="col" class="py-1">"Result"</th> })}
                    </tr>
                </thead>
                <tbody>
                    {rows.iter().map(|r| {
                        let result = r.done.clone().map(|d| match d {
                            BulkDone::Done(w) => view! { <td class="result py-1 font-medium text-emerald-800 dark:text-emerald-300" data-result="done">{w}</td> }.into_any(),
                            BulkDone::Refused(w) => view! { <td class="result py-1 font-medium text-red-800 dark:text-red-300" data-result="refused">{format!("Refused: {w}")}</td> }.into_any(),
                        });
                        view! {
                            <tr class="border-b border-slate-200 align-top dark:border-slate-800">
                                <td class="py-1 pr-3 font-mono break-all"><a class="underline underline-offset-2" href=r.href.clone()><bdi>{mark(&r.mutation_id)}</bdi></a></td>
                                <td class="py-1 pr-3 font-mono break-all"><bdi>{r.tool.as_deref().map(mark).unwrap_or_default()}</bdi></td>
                                <td class="py-1 pr-3"><bdi>{r.title.as_deref().map(mark).unwrap_or_default()}</bdi></td>
                                <td class="py-1 pr-3 font-mono break-all"><bdi>{mark(&r.session_key)}</bdi></td>
                                <td class="py-1 pr-3 font-mono break-all"><bdi>{r.attempt_id.as_deref().map(mark).unwrap_or_default()}</bdi></td>
                                {result}
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
}

/// The confirmation of a bulk reconciliation (staff `staff`): every operation it will reconcile, each
/// about its own attempt, and the one piece of evidence (what the provider shows, source, reference,
/// observed time, provider status), posting the same operations to `/unknowns/bulk/reconciliation`.
/// `problem`: the evidence was refused (shown next to its field, what was typed kept).
pub fn bulk_reconcile_page(
    staff: &str,
    rows: &[BulkRow],
    typed: &BulkEvidence,
    problem: Option<&FormProblem>,
) -> String {
    let n = rows.len();
    let fields: Vec<String> = rows.iter().map(|r| r.field.clone()).collect();
    let list = rows_table(rows);
    let field = problem.and_then(|p| p.field.clone());
    let message = problem.map(|p| p.message.clone());
    let shown = [
        "completed",
        "evidence.source",
        "evidence.reference",
        "evidence.observed_at",
        "evidence.provider_status",
    ];
    let at_field = field.filter(|f| shown.contains(&f.as_str()));
    let top = match (&at_field, &message) {
        (None, Some(m)) => Some(m.clone()),
        _ => None,
    };
    let error_at = {
        let (at_field, message) = (at_field.clone(), message.clone());
        move |name: &str| -> Option<String> {
            (at_field.as_deref() == Some(name))
                .then(|| message.clone())
                .flatten()
        }
    };
    let class_for = {
        let error_at = error_at.clone();
        move |name: &str| {
            if error_at(name).is_some() {
                BAD_FIELD_CLASS
            } else {
                FIELD_CLASS
            }
        }
    };
    let line = {
        let error_at = error_at.clone();
        move |name: &str, id: &'static str| {
            error_at(name).map(|m| view! { <span id=id role="alert" class="field-error mt-1 block text-sm font-normal text-red-700 dark:text-red-300">{m}</span> })
        }
    };
    let invalid = {
        let error_at = error_at.clone();
        move |name: &str| error_at(name).map(|_| "true")
    };
    let completed = typed.completed.clone().unwrap_or_default();
    let value = |v: &Option<String>| v.clone().unwrap_or_default();
    let (source, reference, observed_at, provider_status) = (
        value(&typed.source),
        value(&typed.reference),
        value(&typed.observed_at),
        value(&typed.provider_status),
    );
    let refused = problem.is_some();
    let heading = format!(
        "Reconcile {} with one piece of evidence",
        crate::components::count(n as u64, "operation", "operations")
    );
    let body = view! {
        <section class="space-y-4">
            <h1 class="text-2xl font-semibold">{heading}</h1>
            {top.map(|m| view! { <p role="alert" class="operator-refusal rounded-md border-l-4 border-red-600 bg-red-50 p-3 text-red-900 dark:bg-red-950 dark:text-red-100">{m}</p> })}
            {refused.then(|| view! { <p>"Nothing was reconciled. What you entered is below: correct it and send it again."</p> })}
            <p class="max-w-prose text-sm">
                "Each operation below is reconciled about its own original attempt (the one the queue showed), with the evidence you give, and gets its own history row with your name. "
                "One that moved on since (settled by someone else, or on another attempt) is refused and left as it is; the next page lists what was done and what was refused."
            </p>
            {list}
            <form method="post" action="/unknowns/bulk/reconciliation" class="bulk-reconcile-form max-w-prose space-y-2">
                {fields.into_iter().map(|f| view! { <input type="hidden" name="op" value=f/> }).collect_view()}
                <fieldset class="space-y-1" aria-invalid=invalid("completed") aria-describedby=error_at("completed").map(|_| "completed-error")>
                    <legend class="text-sm font-medium">"What the provider shows for all of them"</legend>
                    <label class="mr-4 inline-flex items-center gap-1 text-sm"><input type="radio" name="completed" value="true" required checked=completed == "true"/>"They took effect (completed)"</label>
                    <label class="inline-flex items-center gap-1 text-sm"><input type="radio" name="completed" value="false" checked=completed == "false"/>"They did not take effect (not executed)"</label>
                    {line("completed", "completed-error")}
                </fieldset>
                <label class="block text-sm font-medium">"Evidence source"
                    <input name="source" required maxlength="256" class=class_for("evidence.source") placeholder="payments-api status page" value=source
                        aria-invalid=invalid("evidence.source") aria-describedby=error_at("evidence.source").map(|_| "source-error")/>
                    {line("evidence.source", "source-error")}
                </label>
                <label class="block text-sm font-medium">"Evidence reference"
                    <input name="reference" required maxlength="256" class=class_for("evidence.reference") placeholder="incident INC-2041" value=reference
                        aria-invalid=invalid("evidence.reference") aria-describedby=error_at("evidence.reference").map(|_| "reference-error")/>
                    {line("evidence.reference", "reference-error")}
                </label>
                <label class="block text-sm font-medium">"Observed at (RFC 3339)"
                    <input name="observed_at" required class=class_for("evidence.observed_at") placeholder="2026-12-01T18:30:00Z" value=observed_at
                        aria-invalid=invalid("evidence.observed_at") aria-describedby=error_at("evidence.observed_at").map(|_| "observed-at-error")/>
                    <span class="mt-1 block text-xs font-normal opacity-80">"When you saw it at the provider, with its time zone, e.g. 2026-12-01T18:30:00Z."</span>
                    {line("evidence.observed_at", "observed-at-error")}
                </label>
                <label class="block text-sm font-medium">"Provider status (optional)"
                    <input name="provider_status" class=class_for("evidence.provider_status") value=provider_status
                        aria-invalid=invalid("evidence.provider_status") aria-describedby=error_at("evidence.provider_status").map(|_| "provider-status-error")/>
                    {line("evidence.provider_status", "provider-status-error")}
                </label>
                <button type="submit" class=BUTTON>{format!("Reconcile these {n}")}</button>
            </form>
            <p><a class="underline underline-offset-2" href="/unknowns">"Back to the queue (nothing done)"</a></p>
        </section>
    };
    document_for(
        if refused { "Not reconciled" } else { "Confirm" },
        Some(staff),
        body,
    )
}

/// What a bulk action came to (staff `staff`): how many were done and refused, then every operation
/// with its result.
pub fn bulk_result_page(staff: &str, heading: &str, rows: &[BulkRow]) -> String {
    let done = rows
        .iter()
        .filter(|r| matches!(r.done, Some(BulkDone::Done(_))))
        .count();
    let refused = rows.len() - done;
    let summary = if refused == 0 {
        format!("All {} done.", rows.len())
    } else {
        format!(
            "{done} of {} done; {} refused (nothing changed for {}).",
            rows.len(),
            refused,
            if refused == 1 { "it" } else { "them" }
        )
    };
    let heading = heading.to_owned();
    let list = rows_table(rows);
    document_for(
        "Done",
        Some(staff),
        view! {
            <section class="space-y-4">
                <h1 class="text-2xl font-semibold">{heading}</h1>
                <p role="status" class="bulk-summary font-medium">{summary}</p>
                {list}
                <p><a class="underline underline-offset-2" href="/unknowns">"Back to the queue"</a></p>
            </section>
        },
    )
}

/// The page to select rows on (staff `staff`; the queue without JavaScript, docs/api.md "Bulk actions"):
/// the queue's rows (`total` match its filters; the first ones shown), each with a select box whose `op`
/// names its operation and attempt, and the bulk buttons posting them to `/unknowns/bulk`.
pub fn bulk_select_page(staff: &str, rows: &[BulkRow], total: u64) -> String {
    let n = rows.len();
    let rows = rows.to_vec();
    let shown = if (n as u64) < total {
        format!("The first {n} of {total} rows of the queue's filters.")
    } else {
        format!(
            "{} of the queue's filters.",
            crate::components::count(n as u64, "row", "rows")
        )
    };
    document_for(
        "Select rows",
        Some(staff),
        view! {
            <section class="space-y-4">
                <h1 class="text-2xl font-semibold">"Select the operations to act on"</h1>
                <p class="text-sm">{shown}" Tick the rows, then claim, release or reconcile them together."</p>
                <form method="post" action="/unknowns/bulk" class="bulk-select space-y-3">
                    <ul class="space-y-1 text-sm">
                        {rows.into_iter().enumerate().map(|(i, r)| {
                            let id = format!("sel-{i}");
                            view! {
                                <li class="flex items-start gap-2">
                                    <input type="checkbox" name="op" value=r.field.clone() id=id.clone() class="mt-1"/>
                                    <label for=id class="min-w-0">
                                        <bdi class="break-all font-mono">{mark(&r.mutation_id)}</bdi>
                                        " · "<bdi class="break-all font-mono">{r.tool.as_deref().map(mark).unwrap_or_default()}</bdi>
                                        {r.title.as_deref().map(|t| view! { " · "<bdi>{mark(t)}</bdi> })}
                                        " · session "<bdi class="break-all font-mono">{mark(&r.session_key)}</bdi>
                                    </label>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                    <p class="flex flex-wrap gap-2">
                        <button type="submit" name="action" value="claim" class=BUTTON>"Claim selected"</button>
                        <button type="submit" name="action" value="release" class=BUTTON>"Release selected"</button>
                        <button type="submit" name="action" value="reconcile" class=BUTTON>"Reconcile selected…"</button>
                    </p>
                </form>
                <p><a class="underline underline-offset-2" href="/unknowns">"Back to the queue"</a></p>
            </section>
        },
    )
}
