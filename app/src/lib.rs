#![recursion_limit = "256"]
//! What a person sees: the dashboard's pages, rendered on the server and hydrated in the browser. The app
//! reads only through the server's public HTTP API ([`api`]).

pub mod api;
pub mod components;
#[cfg(feature = "hydrate")]
pub mod live;
pub mod routes;
#[cfg(feature = "ssr")]
pub mod standalone;
pub mod timeline;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes, A};
use leptos_router::path;
use leptos_router::SsrMode;

/// The HTML document around the app (server side).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="icon" href="data:,"/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body class="bg-white text-slate-900 dark:bg-slate-950 dark:text-slate-100">
                <App/>
            </body>
        </html>
    }
}

/// The app: header, routes. Every route renders in `Async` mode: the server waits for the page's reads and
/// sends complete HTML, so each page is readable without JavaScript (out-of-order streaming would leave the
/// content in templates that only a script moves into place).
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="leptos" href="/pkg/outcomes.css"/>
        <Title text="Outcome ledger"/>
        <Router>
            <header class="border-b border-slate-200 dark:border-slate-800">
                <nav class="mx-auto flex max-w-5xl flex-wrap items-center gap-4 px-4 py-3" aria-label="Main">
                    <A href="/" attr:class="font-semibold">"Outcome ledger"</A>
                    <A href="/unknowns" attr:class="text-sm underline-offset-2 hover:underline">"Open unknowns"</A>
                </nav>
            </header>
            <main class="mx-auto max-w-5xl px-4 py-6">
                <Routes fallback=NotFoundPage>
                    <Route path=path!("/") view=routes::home::HomePage ssr=SsrMode::Async/>
                    <Route path=path!("/find") view=routes::find::FindPage ssr=SsrMode::Async/>
                    <Route path=path!("/sessions/:session_id") view=routes::session::SessionPage ssr=SsrMode::Async/>
                    <Route path=path!("/sessions/:session_id/turns/:turn_id") view=routes::turn::TurnPage ssr=SsrMode::Async/>
                    <Route path=path!("/operations/:mutation_id") view=routes::operation::OperationPage ssr=SsrMode::Async/>
                    <Route path=path!("/unknowns") view=routes::unknowns::UnknownsPage ssr=SsrMode::Async/>
                </Routes>
            </main>
        </Router>
    }
}

/// Any path that names no page: a readable page with status 404.
#[component]
fn NotFoundPage() -> impl IntoView {
    components::set_page_status(404);
    view! {
        <Title text="Page not found · Outcome ledger"/>
        <h1 class="mb-2 text-2xl font-semibold">"Page not found."</h1>
        <p>"No page has this address. " <A href="/" attr:class="underline underline-offset-2">"All sessions"</A></p>
    }
}

/// The browser entry: hydrates the server-rendered body.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
