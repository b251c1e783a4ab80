#![recursion_limit = "256"]
//! What a person sees: the dashboard's pages, rendered on the server and hydrated in the browser. The app
//! reads only through the server's public HTTP API ([`api`]).
//!
//! Built with Leptos's `erase_components` (`.cargo/config.toml`): the server renders and the browser hydrates
//! with the same view types only when both builds have it, so a build without it stops here.

#[cfg(not(erase_components))]
compile_error!(
    "app must be built with `--cfg erase_components` (set in .cargo/config.toml; a RUSTFLAGS variable \
     replaces it: add `--cfg erase_components` to it). docs/performance.md \"Bundle size\"."
);

pub mod address;
pub mod api;
pub mod clock;
pub mod components;
pub mod connection;
#[cfg(feature = "ssr")]
pub mod desk;
pub mod hydration;
#[cfg(feature = "hydrate")]
pub mod live;
pub mod routes;
#[cfg(feature = "ssr")]
pub mod standalone;
pub mod support;
pub mod timeline;
#[cfg(feature = "hydrate")]
pub mod watch;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Title};
use leptos_router::components::{Route, Router, Routes, A};
use leptos_router::path;
use leptos_router::SsrMode;

/// The browser bundle a page names: the paths of the JS glue, the wasm and the stylesheet under `/pkg/`.
/// A built site names them with a content hash (`outcomes.<hash>.js`, `outcomes_bg.<hash>.wasm`,
/// `outcomes.<hash>.css`; docs/performance.md "Bundle size"), so each may be cached for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    pub js: String,
    pub wasm: String,
    pub css: String,
}

impl Bundle {
    /// The plain names of a bundle built without hashes (`/pkg/<name>.js`, `/pkg/<name>_bg.wasm`,
    /// `/pkg/<name>.css`).
    pub fn plain(name: &str) -> Self {
        Bundle {
            js: format!("/pkg/{name}.js"),
            wasm: format!("/pkg/{name}_bg.wasm"),
            css: format!("/pkg/{name}.css"),
        }
    }
}

/// The HTML document around the app (server side). The stylesheet link is rendered here, outside the
/// hydrated body, so the browser never renders it again; `bundle` names the files.
pub fn shell(bundle: Bundle) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                // Installable (docs/operations.md "Installing the dashboard"): the manifest, icons, the theme colour of
                // each scheme (the body's white and slate-950), and the service worker that keeps only the
                // offline page.
                <link rel="manifest" href="/manifest.webmanifest"/>
                <meta name="theme-color" media="(prefers-color-scheme: light)" content="#ffffff"/>
                <meta name="theme-color" media="(prefers-color-scheme: dark)" content="#020617"/>
                <link rel="icon" href="/icon.svg" type="image/svg+xml"/>
                <link rel="apple-touch-icon" href="/apple-touch-icon.png"/>
                // Both `async`, not `defer`: a deferred script runs in document order with the bundle's
                // module, so each visit's fetch of these small `no-store` files held hydration back by a
                // round trip (docs/performance.md "First load").
                <script nonce=use_nonce() src="/sw-register.js" async></script>
                // A POST form sent while the server cannot be reached keeps the page (public/forms.js).
                <script nonce=use_nonce() src="/forms.js" async></script>
                <link rel="stylesheet" id="leptos" href=bundle.css.clone()/>
                <BundleScripts bundle/>
                <support::SupportMeta/>
                <MetaTags/>
            </head>
            <body class="bg-white text-slate-900 dark:bg-slate-950 dark:text-slate-100">
                <App/>
            </body>
        </html>
    }
}

/// Loads the JS glue and the wasm of `bundle` and hydrates the page: what Leptos's `HydrationScripts`
/// renders, with the paths given whole (its own derives the wasm's name from the script's, which a
/// content-hashed name cannot follow). The inline module carries the page's CSP nonce. Hydration starts
/// in a task of its own (`setTimeout`), not in the one that finishes loading and compiling the wasm: on a
/// first visit the two together were one task of over 200 ms at 4× CPU (docs/performance.md "First load").
#[component]
fn BundleScripts(bundle: Bundle) -> impl IntoView {
    let nonce = use_nonce();
    let script = format!(
        "import({js:?}).then(m=>m.default({{module_or_path:{wasm:?}}}).then(()=>setTimeout(()=>m.hydrate())));",
        js = bundle.js,
        wasm = bundle.wasm,
    );
    view! {
        <link rel="modulepreload" href=bundle.js crossorigin=""/>
        <link rel="preload" href=bundle.wasm r#as="fetch" r#type="application/wasm" crossorigin=""/>
        <script type="module" nonce=nonce>{script}</script>
    }
}

/// The app: header, routes. Every route renders in `Async` mode: the server waits for the page's reads and
/// sends complete HTML, so each page is readable without JavaScript (out-of-order streaming would leave the
/// content in templates that only a script moves into place).
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // Who is looking (docs/access.md): the header and the viewer's notice follow it.
    let caller = Resource::new(|| (), |_| api::me());
    // Once hydrated, `<html data-interactive="true">`: buttons and live updates work from then on.
    #[cfg(feature = "hydrate")]
    Effect::new(|_| {
        if let Some(root) = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.document_element())
        {
            let _ = root.set_attribute("data-interactive", "true");
        }
    });
    provide_context(CallerResource(caller));
    #[cfg(feature = "hydrate")]
    CALLER.with(|c| c.set(Some(CallerResource(caller))));
    view! {
        <Title text="Outcome ledger"/>
        <Router>
            <a href="#main" rel="external" class="skip-link sr-only focus:not-sr-only focus:absolute focus:left-2 focus:top-2 focus:z-50 focus:rounded focus:bg-white focus:px-3 focus:py-2 focus:text-slate-900 focus:ring-2 focus:ring-sky-500 dark:focus:bg-slate-900 dark:focus:text-slate-100">"Skip to content"</a>
            <header class="border-b border-slate-200 dark:border-slate-800">
                <nav class="mx-auto flex max-w-5xl flex-wrap items-center gap-4 px-4 py-3" aria-label="Main">
                    <Transition fallback=|| view! { <span class="font-semibold">"Outcome ledger"</span> }>
                        {move || Suspend::new(async move {
                            let caller = caller.await;
                            // Who is calling could not be read for want of a credential: the sign-in
                            // ended (or a viewer link no longer works). Never "Signed in" then.
                            let signed_out = caller.as_ref().is_err_and(api::ApiError::signed_out);
                            let caller = caller.ok();
                            view! { <HeaderLinks caller signed_out/> }
                        })}
                    </Transition>
                </nav>
            </header>
            <main id="main" tabindex="-1" class="mx-auto max-w-5xl px-4 py-6 focus:outline-none">
                <Routes fallback=NotFoundPage>
                    <Route path=path!("/") view=routes::home::HomePage ssr=SsrMode::Async/>
                    <Route path=path!("/find") view=routes::find::FindPage ssr=SsrMode::Async/>
                    <Route path=path!("/sessions/:session_id") view=routes::session::SessionPage ssr=SsrMode::Async/>
                    <Route path=path!("/sessions/:session_id/turns") view=routes::turns::TurnsPage ssr=SsrMode::Async/>
                    <Route path=path!("/sessions/:session_id/turns/:turn_id") view=routes::turn::TurnPage ssr=SsrMode::Async/>
                    <Route path=path!("/sessions/:session_id/operations/:mutation_id") view=routes::operation::OperationPage ssr=SsrMode::Async/>
                    <Route path=path!("/operations/:mutation_id") view=routes::lookup::LookupPage ssr=SsrMode::Async/>
                    <Route path=path!("/unknowns") view=routes::unknowns::UnknownsQueuePage ssr=SsrMode::Async/>
                    <Route path=path!("/in-flight") view=routes::unknowns::InFlightPage ssr=SsrMode::Async/>
                </Routes>
            </main>
        </Router>
    }
}

/// The caller as the app read it from `GET /api/me`, in context for every page.
#[derive(Clone, Copy)]
pub struct CallerResource(pub Resource<Result<ledger::wire::Caller, api::ApiError>>);

#[cfg(feature = "hydrate")]
thread_local! {
    /// The page header's caller, for [`caller_gone`] called outside the app's reactive tree (a live
    /// stream's callbacks).
    pub static CALLER: std::cell::Cell<Option<CallerResource>> = const { std::cell::Cell::new(None) };
}

/// Reads who is calling again (once interactive), after a read was refused for want of a credential:
/// the page header then says "Signed out" instead of "Signed in".
pub fn caller_gone() {
    #[cfg(feature = "hydrate")]
    if let Some(c) = use_context::<CallerResource>().or_else(|| CALLER.with(|c| c.get())) {
        // Staff only: a viewer whose link ended is told so by the page, and never offered the staff
        // sign-in in the header.
        let signed_in =
            c.0.get_untracked()
                .is_some_and(|c| c.is_ok_and(|c| c.access == "staff"));
        if signed_in {
            c.0.refetch();
        }
    }
}

/// The header's links and the caller's access: a viewer sees no links to other sessions and no search,
/// only what they are looking at and how to leave; staff see their name and a sign-out button; open
/// access says so. Everyone but a viewer searches from here ([`components::search::HeaderSearch`]).
#[component]
fn HeaderLinks(caller: Option<ledger::wire::Caller>, signed_out: bool) -> impl IntoView {
    if signed_out {
        let href = format!("/sign-in?next={}", api::enc(&components::here()));
        return view! {
            <span class="font-semibold">"Outcome ledger"</span>
            <span class="access ml-auto flex items-center gap-3 text-sm">
                <span data-access="signed-out">"Signed out"</span>
                <a href=href rel="external" class="underline-offset-2 hover:underline">"Sign in"</a>
            </span>
        }
        .into_any();
    }
    let Some(access) = caller.as_ref().map(|c| c.access.clone()) else {
        // Who is calling could not be read (a page outside the app's routes): the name only.
        return view! { <span class="font-semibold">"Outcome ledger"</span> }.into_any();
    };
    let sign_out = |label: &'static str| {
        view! {
            <form method="post" action="/sign-out" class="inline">
                <button type="submit" class="sign-out rounded border border-slate-300 px-2 py-1 text-sm hover:bg-slate-100 dark:border-slate-700 dark:hover:bg-slate-800">{label}</button>
            </form>
        }
    };
    let can_sign_out = caller.as_ref().is_some_and(|c| c.can_sign_out);
    if access == "viewer" {
        return view! {
            <span class="font-semibold">"Outcome ledger"</span>
            <span class="access ml-auto flex items-center gap-3 text-sm" data-access="viewer">
                <span>"Shared with you: one session"</span>
                {can_sign_out.then(|| sign_out("Leave"))}
            </span>
        }
        .into_any();
    }
    let who = match access.as_str() {
        "staff" => view! {
            <span data-access="staff">
                "Signed in as " <bdi class="font-medium">{caller.as_ref().and_then(|c| c.name.clone()).unwrap_or_default()}</bdi>
            </span>
        }
        .into_any(),
        "host" => view! { <span data-access="host">"Host token"</span> }.into_any(),
        _ => view! {
            <span data-access="open" class="rounded bg-amber-100 px-2 py-0.5 text-amber-900 dark:bg-amber-900 dark:text-amber-100"
                title="Anyone who can reach this address reads every session: it listens on loopback. Start it with --access signed-in to require a sign-in.">
                "open access"
            </span>
            <a href="/sign-in" rel="external" class="underline-offset-2 hover:underline">"Sign in"</a>
        }
        .into_any(),
    };
    view! {
        <A href="/" attr:class="font-semibold">"Outcome ledger"</A>
        <A href="/unknowns" attr:class="text-sm underline-offset-2 hover:underline">"Open unknowns"</A>
        <components::search::HeaderSearch/>
        <span class="access ml-auto flex items-center gap-3 text-sm">
            {who}
            {can_sign_out.then(|| sign_out("Sign out"))}
        </span>
    }
    .into_any()
}

/// Any path that names no page: a readable page with status 404. Its way back is the sessions list, or
/// for a viewer (who reads one session, docs/access.md) that session.
#[component]
fn NotFoundPage() -> impl IntoView {
    components::set_page_status(404);
    let caller = use_context::<CallerResource>().map(|c| c.0);
    let all_sessions =
        || view! { <A href="/" attr:class="underline underline-offset-2">"All sessions"</A> };
    view! {
        <Title text="Page not found · Outcome ledger"/>
        <h1 class="mb-2 text-2xl font-semibold">"Page not found."</h1>
        <p>
            "No page has this address. "
            <Transition fallback=all_sessions>
                {move || Suspend::new(async move {
                    let own = match caller {
                        Some(caller) => caller
                            .await
                            .ok()
                            .filter(|c| c.access == "viewer")
                            .and_then(|c| c.session_key),
                        None => None,
                    };
                    match own {
                        Some(key) => view! {
                            <a class="underline underline-offset-2" href=format!("/sessions/{}", api::enc(&key))>
                                "Back to the session shared with you"
                            </a>
                        }
                        .into_any(),
                        None => all_sessions().into_any(),
                    }
                })}
            </Transition>
        </p>
    }
}

/// The browser entry: hydrates the server-rendered body.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
