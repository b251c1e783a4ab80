//! Reading the host token, the one way every program does it: `outcomes serve` (through
//! `server::auth::resolve_host_token`, which also makes one when there is none) and the clients of this
//! crate (through [`HostClient`](crate::host_client::HostClient)).

use std::path::Path;

/// Where the host token came from (logged instead of the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSource {
    Configured,
    File,
    Generated,
}

/// Reads the host token without making one: the configured one when it is not blank, else the contents of
/// `<data dir>/host-token` when they are not blank, both trimmed. The one reading of a host token: `serve`
/// (through `server::auth::resolve_host_token`), `demo`, `import` and `mcp-proxy` (through
/// [`HostClient`](crate::host_client::HostClient)). Errors: the file cannot be read (the `io::Error` of the
/// read), or holds only whitespace (`InvalidData`, naming the file). The file's mode is not checked here:
/// `resolve_host_token` refuses a shared file before serving.
pub fn read_host_token(
    configured: Option<&str>,
    data_dir: &Path,
) -> std::io::Result<(String, TokenSource)> {
    if let Some(t) = configured.filter(|t| !t.trim().is_empty()) {
        return Ok((t.trim().to_owned(), TokenSource::Configured));
    }
    let path = data_dir.join("host-token");
    let stored = std::fs::read_to_string(&path)?;
    let t = stored.trim();
    if t.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} is empty", path.display()),
        ));
    }
    Ok((t.to_owned(), TokenSource::File))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_read_trimmed_given_or_from_the_file_and_a_blank_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_host_token(None, dir.path()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(
            read_host_token(Some(" given \n"), dir.path()).unwrap(),
            ("given".to_owned(), TokenSource::Configured)
        );
        let path = dir.path().join("host-token");
        std::fs::write(&path, " \n").unwrap();
        let e = read_host_token(Some("  "), dir.path()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(e.to_string(), format!("{} is empty", path.display()));
        std::fs::write(&path, "stored\n").unwrap();
        assert_eq!(
            read_host_token(Some(""), dir.path()).unwrap(),
            ("stored".to_owned(), TokenSource::File)
        );
    }
}
