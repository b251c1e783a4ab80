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

/// The whole document of a standalone page: head with the stylesheet and a title, a header, `body`.
fn document(title: &str, body: impl IntoView + 'static) -> String {
    let title = format!("{title} · Outcome ledger");
    let html = view! {
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <meta name="referrer" content="no-referrer"/>
                <link rel="icon" href="data:,"/>
                <link rel="stylesheet" href="/pkg/outcomes.css"/>
                <title>{title}</title>
            </head>
            <body class="bg-white text-slate-900 dark:bg-slate-950 dark:text-slate-100">
                <header class="border-b border-slate-200 dark:border-slate-800">
                    <div class="mx-auto flex max-w-5xl flex-wrap items-center gap-4 px-4 py-3">
                        <span class="font-semibold">"Outcome ledger"</span>
                    </div>
                </header>
                <main class="mx-auto max-w-5xl px-4 py-6">{body}</main>
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
                <form method="post" action="/sign-in" class="space-y-4">
                    <input type="hidden" name="next" value=next/>
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

/// The answer to a viewer link that is wrong, expired or revoked (status 404).
pub fn link_not_valid_page() -> String {
    document(
        "Link not valid",
        view! {
            <section class="max-w-prose">
                <h1 class="mb-2 text-2xl font-semibold">"This link is not valid."</h1>
                <p class="mb-2">
                    "It may have expired or been revoked, or it was copied incompletely. "
                    "Ask whoever gave it to you for a new link."
                </p>
                <p class="text-sm opacity-80">"Staff can " <a class="underline underline-offset-2" href="/sign-in">"sign in"</a> " instead."</p>
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
    let heading = heading.to_owned();
    let message = message.to_owned();
    let back = back.to_owned();
    document(
        "Not saved",
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
    fn the_link_page_says_the_link_is_not_valid() {
        let page = link_not_valid_page();
        assert!(page.contains("This link is not valid."));
        assert!(!page.contains("<script"));
    }
}
