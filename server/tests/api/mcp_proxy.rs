//! `outcomes mcp-proxy` as a client runs it, with `cat` as the MCP server (every line the client sends
//! comes back as a line from the server, so each passes the proxy both ways): lines within
//! `--max-line-bytes` that are costly to parse whole (docs/mcp-proxy.md "Long lines") are forwarded byte
//! for byte and the proxy keeps working. No ledger: the tool called is `--skip`ped. The memory figures
//! are scripts/bench-mcp-proxy-memory.mjs's (a memory figure is never a test).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::binary::BIN;

/// `prefix` + `[0,0,…,0]` + `suffix`, about `n` bytes.
fn zeros(n: usize, prefix: &str, suffix: &str) -> String {
    let count = (n - prefix.len() - suffix.len()) / 2;
    format!("{prefix}[{}0]{suffix}", "0,".repeat(count - 1))
}

#[test]
fn mcp_proxy_forwards_lines_of_up_to_16_mib_of_zeros_byte_for_byte_and_keeps_working() {
    let size = 16 * 1024 * 1024 - 64;
    let lines = vec![
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#.to_owned(),
        // The answer to initialize (id 1), read by the proxy for serverInfo.name.
        zeros(size, r#"{"jsonrpc":"2.0","id":1,"result":"#, "}"),
        // A batch of two million elements (4 MiB: the debug binary reads slowly).
        zeros(size / 4, "", ""),
        // A tools/call with 4 MiB of arguments.
        zeros(
            size / 4,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"w","arguments":{"a":"#,
            "}}}",
        ),
        // Deep nesting where the proxy reads nothing.
        format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"x/deep","params":{}0{}}}"#,
            "[".repeat(1_000_000),
            "]".repeat(1_000_000)
        ),
        r#"{"jsonrpc":"2.0","method":"notifications/last","params":{}}"#.to_owned(),
    ];
    let mut proxy = Command::new(BIN)
        .args([
            "mcp-proxy",
            "--server",
            "http://127.0.0.1:9",
            "--skip",
            "w",
            "--",
            "cat",
        ])
        .env("OUTCOMES_HOST_TOKEN", "mcp-proxy-test-token")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the proxy");
    let mut stdin = proxy.stdin.take().expect("stdin");
    let sent = lines.clone();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        for l in &sent {
            stdin.write_all(l.as_bytes()).expect("write");
            stdin.write_all(b"\n").expect("write");
        }
        stdin.flush().expect("flush");
        // Keep the input open until every line came back.
        let _ = done_rx.recv_timeout(Duration::from_secs(300));
    });
    let mut out = BufReader::new(proxy.stdout.take().expect("stdout"));
    for (i, sent) in lines.iter().enumerate() {
        let mut got = Vec::new();
        out.read_until(b'\n', &mut got).expect("read");
        assert_eq!(got.pop(), Some(b'\n'), "line {i} ended");
        assert!(
            got == sent.as_bytes(),
            "line {i} ({} bytes) came back as {} bytes, changed",
            sent.len(),
            got.len()
        );
    }
    drop(done_tx);
    writer.join().expect("writer");
    // At the end of input the proxy closes cat's input, cat exits 0, so does the proxy, after answering
    // the requests cat left unanswered (2 and 3) with its own error.
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).expect("rest");
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = proxy.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "the proxy did not exit");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    let answers: Vec<serde_json::Value> = rest
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(
        answers
            .iter()
            .map(|a| (a["id"].clone(), a["error"]["code"].clone()))
            .collect::<Vec<_>>(),
        [
            (serde_json::json!(2), serde_json::json!(-32000)),
            (serde_json::json!(3), serde_json::json!(-32000))
        ]
    );
}
