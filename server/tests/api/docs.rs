//! Every reference to the project's own documents names a real file and heading, so that a heading
//! renamed or moved fails here. Looked for in every tracked file (source, scripts, tests, docs, e2e,
//! clients): a path ending in `.md` with a `/` in it (`docs/api.md`, `clients/typescript/README.md`),
//! from the repository's root, or a bare `README` / `README.md`, the nearest README.md above the citing
//! file (the repository's own, or a client's for the files under `clients/python/` and
//! `clients/typescript/`), the name in backticks or not, followed by a space and a quoted heading (in a
//! string, with its quotes escaped): that heading must be the start of one of the file's headings (any
//! level, outside code blocks). Also refused: a citation of a README in a form this test would not
//! check, and a design file the project does not have.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Never looked into: build output, installed packages, test output, and the TypeScript client's types
/// generated from the OpenAPI document, whose text the server's own sources hold (and are checked here).
const SKIPPED: &[&str] = &[
    "target",
    "node_modules",
    "test-results",
    "playwright-report",
    "generated",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// The tracked files (`git ls-files`), or, without git, every file under the repository but those in
/// `SKIPPED` and hidden folders.
fn files(repo: &Path) -> Vec<PathBuf> {
    let listed = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["ls-files", "-z"])
        .output();
    let mut out = Vec::new();
    match listed {
        Ok(o) if o.status.success() => {
            for name in o.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
                let name = String::from_utf8_lossy(name).into_owned();
                if !name.split('/').any(|part| SKIPPED.contains(&part)) && !frozen(&name) {
                    out.push(repo.join(name));
                }
            }
        }
        _ => walk(repo, &mut out),
    }
    out
}

fn walk(path: &Path, out: &mut Vec<PathBuf>) {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if SKIPPED.contains(&name) || (name.starts_with('.') && name.len() > 1 && path.is_dir()) {
        return;
    }
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            walk(&entry.unwrap().path(), out);
        }
    } else if !frozen(&path.to_string_lossy()) {
        out.push(path.to_owned());
    }
}

/// A migration's text is fixed once released (sqlx keeps its checksum in every ledger it ran on), so
/// it may cite a heading as it was then.
fn frozen(path: &str) -> bool {
    path.ends_with(".sql") && path.split('/').any(|part| part.starts_with("migrations"))
}

/// A Markdown file's headings, without their `#`s; lines in fenced code blocks are not headings.
fn headings(doc: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(line.trim_start_matches('#').trim().to_owned());
        }
    }
    out
}

/// The README.md a bare `README` in `file` means: the nearest one in its folder or above it.
fn nearest_readme(repo: &Path, file: &Path) -> PathBuf {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d.join("README.md").is_file() {
            return d.join("README.md");
        }
        if d == repo {
            break;
        }
        dir = d.parent();
    }
    repo.join("README.md")
}

#[test]
fn every_docs_reference_names_a_real_file_and_heading() {
    let repo = repo();
    let all = files(&repo);
    assert!(all.len() > 200, "found only {} files", all.len());
    let reference = regex::Regex::new(
        r#"(?:^|[^\w./-])(README(?:\.md)?|(?:[\w.-]+/)+[\w.-]+\.md)`? \\?"([^"\\]+)\\?""#,
    )
    .unwrap();
    // A README cited in a form the pattern above does not take ("the README's", "README (", ...).
    let unchecked = regex::Regex::new(r#"README(?:'s |, | \(| section )\\?""#).unwrap();
    let mut headings_of = std::collections::HashMap::new();
    let mut checked = 0;
    let mut readme_checked = 0;
    let mut broken = Vec::new();
    for file in &all {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        // Folded comments: join `//! ` / `/// ` / `# ` / ` * ` continuation lines so a reference split
        // over two lines is still one.
        let text = text
            .lines()
            .map(|l| {
                l.trim_start()
                    .trim_start_matches("//!")
                    .trim_start_matches("///")
                    .trim_start_matches("//")
                    .trim_start_matches('#')
                    .trim_start_matches('*')
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
        if !this_test {
            for m in unchecked.find_iter(&text) {
                broken.push(format!(
                    "{shown}: cites a README as `{}…`, which is not checked: write the README's name (or path), a space and the quoted heading",
                    m.as_str()
                ));
            }
        }
        for c in reference.captures_iter(&text) {
            let (cited, heading) = (&c[1], &c[2]);
            checked += 1;
            let target = if cited.contains('/') {
                repo.join(cited)
            } else {
                readme_checked += 1;
                nearest_readme(&repo, file)
            };
            let target_shown = target
                .strip_prefix(&repo)
                .unwrap_or(&target)
                .display()
                .to_string();
            let found = headings_of.entry(target.clone()).or_insert_with(|| {
                std::fs::read_to_string(&target)
                    .ok()
                    .map(|body| headings(&body))
            });
            let Some(found) = found else {
                broken.push(format!("{shown}: {target_shown} does not exist"));
                continue;
            };
            if !found.iter().any(|h| h.starts_with(heading)) {
                broken.push(format!(
                    "{shown}: {target_shown} has no heading \"{heading}\""
                ));
            }
        }
    }
    assert!(checked > 100, "only {checked} references found");
    assert!(
        readme_checked > 20,
        "only {readme_checked} README references found"
    );
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
