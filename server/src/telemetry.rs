//! Tracing set-up shared by every command (`cli::run` calls it once, before dispatching).

/// Structured logs: `RUST_LOG` filter (default `info`), JSON when `OUTCOMES_LOG_JSON=1`.
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let _ = if std::env::var("OUTCOMES_LOG_JSON").as_deref() == Ok("1") {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
