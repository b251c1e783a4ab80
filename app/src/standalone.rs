//! Pages the server renders outside the hydrated app (docs/access.md): the sign-in form and the answer to
//! a viewer link that is not valid. They are plain HTML with the app's stylesheet and no script, so they
//! work without JavaScript and before anyone may load the app.

use leptos::prelude::*;
use leptos::tachys::view::RenderHtml;

/// Why the sign-in form is shown again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInProblem {
    /// The name or the password was wrong (the page does not say which).
    Invalid,
    /// Too many failures from this address; try again after this many seconds.
    TooMany { retry_after_secs: u64 },
    /// The server could not check the password now (busy); nothing is wrong with what was typed.
    Unavailable,
}

/// The stylesheet these pages link to: the server sets it once it has found the built bundle
/// ([`set_stylesheet`]); before that, the plain name.
static STYLESHEET: std::sync::RwLock<Option<String>> = std::sync::RwLock::new(None);

/// Makes the standalone pages link to `href` (the content-hashed stylesheet of the bundle the server
/// serves). One per process: a server sets it when it is built.
pub fn set_stylesheet(href: &str) {
    if let Ok(mut s) = STYLESHEET.write() {
        *s = Some(href.to_owned());
    }
}

fn stylesheet() -> String {
    STYLESHEET
        .read()
        .ok()
        .and_then(|s| s.clone())
        .unwrap_or_else(|| "/pkg/outcomes.css".to_owned())
}

/// The whole document of a standalone page: head with the stylesheet and a title, a header, `body`.
fn document(title: &str, body: impl IntoView + 'static) -> String {
    document_for(title, None, body)
}

/// The site's header as the app draws it for signed-in staff (`staff`: their name): the way to the
/// sessions, the open unknowns and the search (a plain `GET /find` form), who is signed in and the
/// sign-out button; without a name, the site's name only.
fn site_header(staff: Option<String>) -> impl IntoView {
    let link = "text-sm underline-offset-2 hover:underline";
    view! {
        <nav class="mx-auto flex max-w-5xl flex-wrap items-center gap-4 px-4 py-3" aria-label="Main">
            {match staff {
                None => view! { <span class="font-semibold">"Outcome ledger"</span> }.into_any(),
                Some(name) => view! {
                    <a href="/" class="font-semibold">"Outcome ledger"</a>
                    <a href="/unknowns" class=link>"Open unknowns"</a>
                    <form method="get" action="/find" role="search" aria-label="Search" class="header-search relative order-last w-full sm:order-none sm:w-72">
                        <label for="header-q" class="sr-only">"Search sessions and operations"</label>
                        <input id="header-q" name="q" type="search" autocomplete="off" spellcheck="false" placeholder="Search ids, titles…"
                            class="w-full rounded border border-slate-400 bg-white px-2 py-1 font-mono text-sm placeholder:font-sans placeholder:text-slate-500 dark:border-slate-600 dark:bg-slate-900 dark:placeholder:text-slate-400"/>
                    </form>
                    <span class="access ml-auto flex items-center gap-3 text-sm">
                        <span data-access="staff">"Signed in as " <bdi class="font-medium">{name}</bdi></span>
                        <form method="post" action="/sign-out" class="inline">
                            <button type="submit" class="sign-out rounded border border-slate-300 px-2 py-1 text-sm hover:bg-slate-100 dark:border-slate-700 dark:hover:bg-slate-800">"Sign out"</button>
                        </form>
                    </span>
                }.into_any(),
            }}
        </nav>
    }
}

/// [`document`] with the site's header of signed-in staff (`staff`: their name, [`site_header`]).
pub(crate) fn document_for(
    title: &str,
    staff: Option<&str>,
    body: impl IntoView + 'static,
) -> String {
    let staff = staff.map(str::to_owned);
    // `<title>` holds text only: rendered as a child, an erased view would put its `<!>` marker in the
    // tab's text, so the escaped text goes in as the element's inner HTML.
    let title = html_escape::encode_text(&format!("{title} · Outcome ledger")).into_owned();
    let stylesheet = stylesheet();
    let html = view! {
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <meta name="referrer" content="no-referrer"/>
                <link rel="icon" href="data:,"/>
                <link rel="stylesheet" href=stylesheet/>
                <title inner_html=title></title>
            </head>
            <body class="bg-white text-slate-900 dark:bg-slate-950 dark:text-slate-100">
                <header class="border-b border-slate-200 dark:border-slate-800">{site_header(staff)}</header>
                <main id="main" class="mx-auto max-w-5xl px-4 py-6">{body}</main>
            </body>
        </html>
    };
    let owner = Owner::new();
    let rendered = owner.with(|| html.to_html());
    format!("<!DOCTYPE html>{rendered}")
}

/// The sign-in page: a form that POSTs `name`, `password` and `next` to `/sign-in`. `next` is where the
/// browser goes once signed in (a path on this server, checked again by the server); `problem` is shown
/// above the form in a live region.
pub fn sign_in_page(next: &str, name: &str, problem: Option<SignInProblem>) -> String {
    sign_in_page_keeping(next, name, problem, None)
}

/// The sign-in page that also carries a form whose sign-in had ended (`pending`), as hidden fields: once
/// signed in, the server shows that form filled in again ([`operator_form_page`]) for the person to check
/// and send; nothing is sent by itself.
pub fn sign_in_page_keeping(
    next: &str,
    name: &str,
    problem: Option<SignInProblem>,
    pending: Option<&PendingForm>,
) -> String {
    let message = problem.map(|p| match p {
        SignInProblem::Invalid => "The name or the password is wrong.".to_owned(),
        SignInProblem::TooMany { retry_after_secs } => format!(
            "Too many failed sign-ins from this address. Wait {retry_after_secs} seconds, then try again."
        ),
        SignInProblem::Unavailable => {
            "The server is busy and could not check the password. Try again in a moment.".to_owned()
        }
    });
    let next = next.to_owned();
    let name = name.to_owned();
    let kept = pending.map(|p| match p.action {
        OperatorAction::Note => "Your sign-in had ended, so your note was not saved. It is kept: sign in, then check it and save it.",
        OperatorAction::Reconciliation => "Your sign-in had ended, so the outcome was not reconciled. What you entered is kept: sign in, then check it and send it.",
    });
    let hidden = pending.map(|p| {
        let mut fields = vec![("pending_action".to_owned(), p.path.clone())];
        fields.extend(
            p.input
                .fields()
                .into_iter()
                .map(|(k, v)| (format!("pending_{k}"), v.to_owned())),
        );
        fields
            .into_iter()
            .map(|(k, v)| view! { <input type="hidden" name=k value=v/> })
            .collect_view()
    });
    document(
        "Sign in",
        view! {
            <section class="mx-auto max-w-sm">
                <h1 class="mb-2 text-2xl font-semibold">"Sign in"</h1>
                <p class="mb-4 text-sm opacity-80">
                    "For investigators and support staff. An end user opens the viewer link they were given instead."
                </p>
                {message.map(|m| view! {
                    <p role="alert" class="sign-in-problem mb-4 rounded-md border-l-4 border-red-600 bg-red-50 p-3 text-red-900 dark:bg-red-950 dark:text-red-100">{m}</p>
                })}
                {kept.map(|k| view! {
                    <p class="kept-form mb-4 rounded-md border-l-4 border-sky-600 bg-sky-50 p-3 text-sky-950 dark:bg-sky-950 dark:text-sky-50">{k}</p>
                })}
                <form method="post" action="/sign-in" class="space-y-4">
                    <input type="hidden" name="next" value=next/>
                    {hidden}
                    <label class="block">
                        <span class="mb-1 block text-sm font-medium">"Name"</span>
                        <input name="name" type="text" value=name required autocomplete="username" autocapitalize="none" spellcheck="false"
                            class="w-full rounded border border-slate-300 bg-white px-3 py-2 dark:border-slate-700 dark:bg-slate-900"/>
                    </label>
                    <label class="block">
                        <span class="mb-1 block text-sm font-medium">"Password"</span>
                        <input name="password" type="password" required autocomplete="current-password"
                            class="w-full rounded border border-slate-300 bg-white px-3 py-2 dark:border-slate-700 dark:bg-slate-900"/>
                    </label>
                    <button type="submit" class="rounded bg-slate-900 px-4 py-2 font-medium text-white hover:bg-slate-700 focus-visible:outline focus-visible:outline-2 focus-visible:outline-offset-2 dark:bg-slate-100 dark:text-slate-900 dark:hover:bg-slate-300">
                        "Sign in"
                    </button>
                </form>
            </section>
        },
    )
}

/// The answer to a viewer link that is wrong, expired or revoked (status 404), at `/v/{token}` and on any
/// page opened with a viewer cookie whose link has ended since: a plain page for the end user, never the
/// staff sign-in form.
pub fn link_not_valid_page() -> String {
    document(
        "Link no longer works",
        view! {
            <section class="link-ended max-w-prose">
                <h1 class="mb-2 text-2xl font-semibold">"This link no longer works."</h1>
                <p class="mb-2">
                    "It may have expired or been withdrawn, or it was copied incompletely. "
                    "Ask whoever shared it with you for a new link."
                </p>
            </section>
        },
    )
}

/// A page a viewer may not see, answered as if it did not exist (status 404): viewers see one session.
pub fn viewer_not_found_page(own_session_href: &str) -> String {
    let href = own_session_href.to_owned();
    document(
        "Page not found",
        view! {
            <section class="max-w-prose">
                <h1 class="mb-2 text-2xl font-semibold">"Page not found."</h1>
                <p>"No page has this address. " <a class="underline underline-offset-2" href=href>"Back to the session shared with you"</a></p>
            </section>
        },
    )
}

/// The answer to a no-JavaScript operator form (a note, a reconciliation) that was refused: what is
/// wrong, in plain words, that nothing was changed, and a link back to the operation page (`back`).
pub fn operator_refusal_page(heading: &str, message: &str, back: &str) -> String {
    operator_refusal_page_for(heading, message, back, None)
}

/// [`operator_refusal_page`] under the site's header of the signed-in staff member `staff`.
pub fn operator_refusal_page_for(
    heading: &str,
    message: &str,
    back: &str,
    staff: Option<&str>,
) -> String {
    let heading = heading.to_owned();
    let message = message.to_owned();
    let back = back.to_owned();
    document_for(
        "Not saved",
        staff,
        view! {
            <section class="max-w-prose">
                <h1 class="mb-2 text-2xl font-semibold">{heading}</h1>
                <p role="alert" class="operator-refusal mb-4 rounded-md border-l-4 border-red-600 bg-red-50 p-3 text-red-900 dark:bg-red-950 dark:text-red-100">{message}</p>
                <p class="mb-4">"Nothing was changed."</p>
                <p><a class="underline underline-offset-2" href=back>"Back to the operation"</a></p>
            </section>
        },
    )
}

/// An operator form of the operation page (docs/api.md "Operator actions").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperatorAction {
    Note,
    Reconciliation,
}

impl OperatorAction {
    /// The last segment of the form's path: `notes`, `reconciliation`.
    pub fn segment(self) -> &'static str {
        match self {
            OperatorAction::Note => "notes",
            OperatorAction::Reconciliation => "reconciliation",
        }
    }

    pub fn from_segment(segment: &str) -> Option<Self> {
        match segment {
            "notes" => Some(OperatorAction::Note),
            "reconciliation" => Some(OperatorAction::Reconciliation),
            _ => None,
        }
    }
}

/// What a person typed into an operator form, as the form sent it (absent fields `None`). Shown again,
/// filled in, when it could not be saved, so nothing typed is lost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperatorInput {
    /// A note's text.
    pub text: Option<String>,
    /// A reconciliation's fields.
    pub attempt_id: Option<String>,
    /// `true` or `false`.
    pub completed: Option<String>,
    pub source: Option<String>,
    pub reference: Option<String>,
    pub observed_at: Option<String>,
    pub provider_status: Option<String>,
}

impl OperatorInput {
    /// The fields that are present, by their form names.
    pub fn fields(&self) -> Vec<(&'static str, &str)> {
        [
            ("text", &self.text),
            ("attempt_id", &self.attempt_id),
            ("completed", &self.completed),
            ("source", &self.source),
            ("reference", &self.reference),
            ("observed_at", &self.observed_at),
            ("provider_status", &self.provider_status),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
        .collect()
    }
}

/// A form kept across a sign-in: which action, its path (where it posts), what was typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingForm {
    pub action: OperatorAction,
    /// `/sessions/{session_key}/operations/{mutation_id}/{notes|reconciliation}`.
    pub path: String,
    pub input: OperatorInput,
}

/// Why an operator form is shown again: a heading, a sentence, and the form field it is about (the API's
/// `field`: `text`, `completed`, `evidence.source`, …), next to which the sentence is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormProblem {
    pub heading: String,
    pub message: String,
    pub field: Option<String>,
    /// Whether to say that nothing was changed (a refusal); not after a sign-in that kept the form.
    pub refused: bool,
}

pub(crate) const FIELD_CLASS: &str = "w-full rounded border border-slate-300 bg-white px-2 py-1 text-sm dark:border-slate-700 dark:bg-slate-900";
pub(crate) const BAD_FIELD_CLASS: &str = "w-full rounded border-2 border-red-600 bg-white px-2 py-1 text-sm dark:border-red-400 dark:bg-slate-900";

/// An operator form of the operation page shown again with what was typed (`input`), posting to `form.path`
/// as the operation page's form does; `problem` says why, next to the field it is about (or above the form),
/// and `back` links to the operation page; `staff` (the signed-in staff member's name) gives it the site's
/// header, so the page keeps its way around. Plain HTML: it works without JavaScript.
pub fn operator_form_page(
    form: &PendingForm,
    back: &str,
    problem: &FormProblem,
    staff: Option<&str>,
) -> String {
    let input = form.input.clone();
    let path = form.path.clone();
    let back = back.to_owned();
    let heading = problem.heading.clone();
    let field = problem.field.clone();
    let message = problem.message.clone();
    let refused = problem.refused;
    // The sentence goes next to its field when the form shows that field; else above the form.
    let shown: &[&str] = match form.action {
        OperatorAction::Note => &["text"],
        OperatorAction::Reconciliation => &[
            "completed",
            "evidence.source",
            "evidence.reference",
            "evidence.observed_at",
            "evidence.provider_status",
        ],
    };
    let at_field = field
        .as_deref()
        .filter(|f| shown.contains(f))
        .map(str::to_owned);
    let top = at_field.is_none().then(|| message.clone());
    let error_at = move |name: &'static str| -> Option<String> {
        (at_field.as_deref() == Some(name)).then(|| message.clone())
    };
    let class_for = {
        let error_at = error_at.clone();
        move |name: &'static str| {
            if error_at(name).is_some() {
                BAD_FIELD_CLASS
            } else {
                FIELD_CLASS
            }
        }
    };
    let error_line = {
        let error_at = error_at.clone();
        move |name: &'static str, id: &'static str| {
            error_at(name).map(|m| {
                view! { <span id=id role="alert" class="field-error mt-1 block text-sm font-normal text-red-700 dark:text-red-300">{m}</span> }
            })
        }
    };
    let button = "rounded bg-slate-900 px-3 py-1 text-sm font-medium text-white hover:bg-slate-700 dark:bg-slate-100 dark:text-slate-900 dark:hover:bg-slate-300";
    let body = match form.action {
        OperatorAction::Note => {
            // Escaped here: the renderer writes a textarea's text as it is (raw text), so a note holding
            // `</textarea>` would otherwise end the element.
            let text =
                html_escape::encode_text(&input.text.clone().unwrap_or_default()).into_owned();
            view! {
                <form method="post" action=path class="note-form space-y-2">
                    <label class="block text-sm font-medium" for="note-text">"Add a note"</label>
                    <textarea id="note-text" name="text" required maxlength="4096" rows="5" class=class_for("text")
                        aria-invalid=error_at("text").map(|_| "true") aria-describedby=error_at("text").map(|_| "text-error") inner_html=text></textarea>
                    {error_line("text", "text-error")}
                    <p class="text-sm opacity-80">"Notes are for staff only: the end user never sees them."</p>
                    <button type="submit" class=button>"Add note"</button>
                </form>
            }
            .into_any()
        }
        OperatorAction::Reconciliation => {
            let completed = input.completed.clone().unwrap_or_default();
            let attempt = input.attempt_id.clone().unwrap_or_default();
            let provider_status = input.provider_status.clone().filter(|p| !p.is_empty());
            let value = |v: &Option<String>| v.clone().unwrap_or_default();
            let (source, reference, observed_at) = (
                value(&input.source),
                value(&input.reference),
                value(&input.observed_at),
            );
            view! {
                <form method="post" action=path class="reconcile-form space-y-2">
                    <h2 class="font-medium">"Reconcile this unknown outcome"</h2>
                    <p class="text-sm">
                        "Only with evidence you observed at the provider about attempt "
                        <code class="font-mono">{crate::components::marks::mark(&attempt)}</code>
                        ". If the entry moved on since, the ledger refuses it."
                    </p>
                    <input type="hidden" name="attempt_id" value=attempt.clone()/>
                    <fieldset class="space-y-1" aria-invalid=error_at("completed").map(|_| "true") aria-describedby=error_at("completed").map(|_| "completed-error")>
                        <legend class="text-sm font-medium">"What the provider shows"</legend>
                        <label class="mr-4 inline-flex items-center gap-1 text-sm"><input type="radio" name="completed" value="true" required checked=completed == "true"/>"It took effect (completed)"</label>
                        <label class="inline-flex items-center gap-1 text-sm"><input type="radio" name="completed" value="false" checked=completed == "false"/>"It did not take effect (not executed)"</label>
                        {error_line("completed", "completed-error")}
                    </fieldset>
                    <label class="block text-sm font-medium">"Evidence source"
                        <input name="source" required maxlength="256" class=class_for("evidence.source") placeholder="payments-api" value=source
                            aria-invalid=error_at("evidence.source").map(|_| "true") aria-describedby=error_at("evidence.source").map(|_| "source-error")/>
                        {error_line("evidence.source", "source-error")}
                    </label>
                    <label class="block text-sm font-medium">"Evidence reference"
                        <input name="reference" required maxlength="256" class=class_for("evidence.reference") placeholder="refund re_123" value=reference
                            aria-invalid=error_at("evidence.reference").map(|_| "true") aria-describedby=error_at("evidence.reference").map(|_| "reference-error")/>
                        {error_line("evidence.reference", "reference-error")}
                    </label>
                    <label class="block text-sm font-medium">"Observed at (RFC 3339)"
                        <input name="observed_at" required class=class_for("evidence.observed_at") placeholder="2026-12-01T18:30:00Z" value=observed_at
                            aria-invalid=error_at("evidence.observed_at").map(|_| "true") aria-describedby=error_at("evidence.observed_at").map(|_| "observed-at-error")/>
                        <span class="mt-1 block text-xs font-normal opacity-80">"When you saw it at the provider, with its time zone, e.g. 2026-12-01T18:30:00Z."</span>
                        {error_line("evidence.observed_at", "observed-at-error")}
                    </label>
                    {(provider_status.is_some() || error_at("evidence.provider_status").is_some()).then(|| view! {
                        <label class="block text-sm font-medium">"Provider status"
                            <input name="provider_status" class=class_for("evidence.provider_status") value=provider_status.clone().unwrap_or_default()
                                aria-invalid=error_at("evidence.provider_status").map(|_| "true") aria-describedby=error_at("evidence.provider_status").map(|_| "provider-status-error")/>
                            {error_line("evidence.provider_status", "provider-status-error")}
                        </label>
                    })}
                    <button type="submit" class=button>"Reconcile"</button>
                </form>
            }
            .into_any()
        }
    };
    document_for(
        if refused {
            "Not saved"
        } else {
            "Check and send"
        },
        staff,
        view! {
            <section class="max-w-prose space-y-4">
                <h1 class="text-2xl font-semibold">{heading}</h1>
                {top.map(|m| if refused {
                    view! {
                        <p role="alert" class="operator-refusal rounded-md border-l-4 border-red-600 bg-red-50 p-3 text-red-900 dark:bg-red-950 dark:text-red-100">{m}</p>
                    }.into_any()
                } else {
                    view! {
                        <p role="status" class="kept-form rounded-md border-l-4 border-sky-600 bg-sky-50 p-3 text-sky-950 dark:bg-sky-950 dark:text-sky-50">{m}</p>
                    }.into_any()
                })}
                {refused.then(|| view! { <p>"Nothing was changed. What you entered is below: correct it and send it again."</p> })}
                {body}
                <p><a class="underline underline-offset-2" href=back>"Back to the operation"</a></p>
            </section>
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sign_in_page_escapes_next_and_posts_to_sign_in() {
        let page = sign_in_page(
            "/a\"><script>x</script>",
            "ada\"><b>",
            Some(SignInProblem::Invalid),
        );
        assert!(page.starts_with("<!DOCTYPE html><html lang=\"en\">"));
        assert!(page.contains(r#"<form method="post" action="/sign-in""#));
        assert!(!page.contains("<script>x</script>"), "{page}");
        assert!(!page.contains("ada\"><b>"), "{page}");
        assert!(page.contains("value=\"ada&quot;&gt;&lt;b&gt;\""), "{page}");
        assert!(page.contains("The name or the password is wrong."));
        assert!(page.contains("<title>Sign in · Outcome ledger</title>"));
        assert!(!page.contains("<script"));
    }

    #[test]
    fn the_refusal_page_escapes_and_links_back() {
        let back = crate::routes::history_href("a/b c", "op<1>");
        assert_eq!(back, "/sessions/a%2Fb%20c/operations/op%3C1%3E");
        let page = operator_refusal_page("Not saved.", "<b>x</b>", &back);
        assert!(page.contains("&lt;b&gt;x&lt;/b&gt;"), "{page}");
        assert!(
            page.contains(r#"href="/sessions/a%2Fb%20c/operations/op%3C1%3E""#),
            "{page}"
        );
        assert!(page.contains("Nothing was changed."));
        assert!(!page.contains("<script"));
    }

    #[test]
    fn a_kept_note_is_escaped_inside_its_textarea() {
        let form = PendingForm {
            action: OperatorAction::Note,
            path: "/sessions/s/operations/m/notes".into(),
            input: OperatorInput {
                text: Some("a </textarea><b>x</b> & y".into()),
                ..OperatorInput::default()
            },
        };
        let problem = FormProblem {
            heading: "h".into(),
            message: "m".into(),
            field: Some("text".into()),
            refused: true,
        };
        let page = operator_form_page(&form, "/sessions/s/operations/m", &problem, None);
        assert!(
            page.contains(">a &lt;/textarea&gt;&lt;b&gt;x&lt;/b&gt; &amp; y</textarea>"),
            "{page}"
        );
        assert!(!page.contains("<b>x</b>"), "{page}");
        assert!(page.contains(r#"aria-invalid="true""#), "{page}");
    }

    #[test]
    fn the_link_page_says_the_link_is_not_valid() {
        let page = link_not_valid_page();
        assert!(page.contains("This link no longer works."));
        assert!(page.contains("Ask whoever shared it with you for a new link."));
        assert!(!page.contains("/sign-in"), "{page}");
        assert!(!page.contains("<script"));
    }
}
