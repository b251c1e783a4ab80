//! Every reference to the project's own docs names a real file and heading: `docs/<file>.md "<heading>"`
//! in any source, script, test or doc of the repository must name a file under `docs/` and the start of
//! one of its headings (any level); and nothing cites a design file the project does not have.

use std::path::{Path, PathBuf};

/// Where references are looked for: the crates, scripts, browser tests, docs and the README.
const ROOTS: &[&str] = &[
    "ledger",
    "server",
    "app",
    "importer",
    "scripts",
    "e2e",
    "docs",
    "README.md",
    "clients/python/src",
    "clients/python/tests",
    "clients/python/README.md",
    "clients/typescript/src",
    "clients/typescript/test",
    "clients/typescript/README.md",
    "testkit",
];
const EXTENSIONS: &[&str] = &["rs", "md", "sh", "py", "ts", "toml", "json"];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files(path: &Path, out: &mut Vec<PathBuf>) {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if [
        "target",
        "node_modules",
        "test-results",
        "playwright-report",
        // The TypeScript client's types generated from the OpenAPI document, whose text the server's
        // own sources hold (and are checked here).
        "generated",
    ]
    .contains(&name)
    {
        return;
    }
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            files(&entry.unwrap().path(), out);
        }
    } else if path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e))
    {
        out.push(path.to_owned());
    }
}

fn headings(doc: &str) -> Vec<String> {
    doc.lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| l.trim_start_matches('#').trim().to_owned())
        .collect()
}

#[test]
fn every_docs_reference_names_a_real_file_and_heading() {
    let repo = repo();
    let mut all = Vec::new();
    for root in ROOTS {
        files(&repo.join(root), &mut all);
    }
    assert!(all.len() > 50, "found only {} files", all.len());
    let reference = regex::Regex::new(r#"docs/([a-z_]+\.md) "([^"]+)""#).unwrap();
    let mut checked = 0;
    let mut broken = Vec::new();
    for file in &all {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        // Folded docstrings: join `//! ` / `/// ` continuation lines so a reference split over two
        // lines is still one.
        let text = text
            .lines()
            .map(|l| {
                l.trim_start()
                    .trim_start_matches("//!")
                    .trim_start_matches("///")
                    .trim_start_matches("//")
                    .trim_start_matches('#')
                    .trim()
            })
            .collect::<Vec<_>>()
            .join(" ");
        let shown = file
            .strip_prefix(&repo)
            .unwrap_or(file)
            .display()
            .to_string();
        // Also as a JSON string holds it (a backslash before the quote); the needle is built so that
        // this file does not match it.
        let escaped = format!("DESIGN {}\"", '\\');
        let this_test = file.ends_with("server/tests/api/docs.rs");
        if !this_test
            && (text.contains("DESIGN \"")
                || text.contains("DESIGN: \"")
                || text.contains(&escaped))
        {
            broken.push(format!(
                "{shown}: cites DESIGN, which the project does not have"
            ));
        }
        for c in reference.captures_iter(&text) {
            let (doc, heading) = (&c[1], &c[2]);
            checked += 1;
            let Ok(body) = std::fs::read_to_string(repo.join("docs").join(doc)) else {
                broken.push(format!("{shown}: docs/{doc} does not exist"));
                continue;
            };
            if !headings(&body).iter().any(|h| h.starts_with(heading)) {
                broken.push(format!("{shown}: docs/{doc} has no heading \"{heading}\""));
            }
        }
    }
    assert!(checked > 20, "only {checked} references found");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
