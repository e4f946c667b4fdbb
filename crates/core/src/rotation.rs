//! Credentials read from `*_FILE` variables and re-read when their file changes (rotation), so a
//! long-lived process never acts with a credential its operator has replaced.
//!
//! Each use ([`RotatingSecret::current`]) stats the path (following symlinks, so a Kubernetes
//! Secret volume's `..data` symlink swap is a change) and compares the file's identity — device,
//! inode, size, mtime, ctime, mode — with the one last read. A change re-reads the file with the
//! same checks as at start (a regular file of at most
//! [`MAX_SECRET_FILE_BYTES`](crate::env::MAX_SECRET_FILE_BYTES) that others cannot read or
//! change, then the domain's shape check). A good new value bumps the generation (consumers
//! rebuild what they derived: a token signer, a login session) and is taught to every watching
//! outbound scanner before it is used.
//!
//! A failed re-read (file removed, permissions opened, shape wrong) keeps the previous value,
//! marks it stale and says so once on stderr, naming the variable, never the value. When the
//! upstream then refuses a stale value ([`RotatingSecret::refused`]), it is dropped: later calls
//! fail closed with UPSTREAM_REJECTED instead of retrying a revoked credential, until the file
//! can be read again.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use secrecy::{ExposeSecret, SecretString};

use crate::error::{ErrorCode, ToolError};
use crate::outbound::OutboundScanner;

/// Checks and normalises a credential's text (e.g. trims the final newline, checks the shape).
/// The reason completes a sentence after the variable name and never quotes the value.
pub type SecretCheck = fn(&str) -> Result<String, &'static str>;

/// One value of a credential, with the generation it belongs to.
#[derive(Clone)]
pub struct Credential {
    pub value: SecretString,
    /// Starts at 0 and grows by one with each new value read from the file.
    pub generation: u64,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("generation", &self.generation)
            .finish_non_exhaustive()
    }
}

/// What identifies one version of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
}

impl Identity {
    fn of(meta: &std::fs::Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            mode: meta.mode(),
        }
    }

    fn at(path: &Path) -> Option<Identity> {
        std::fs::metadata(path).ok().map(|m| Identity::of(&m))
    }
}

struct State {
    /// `None` once a stale value was refused upstream.
    value: Option<SecretString>,
    generation: u64,
    /// The identity last looked at (`None`: the path could not be stat'ed).
    seen: Option<Identity>,
    /// The file could not be re-read; `value` is the last good one.
    stale: bool,
    /// Re-read at the next use even if the identity looks unchanged (after a refusal).
    recheck: bool,
    /// Scanners that must know every value this credential takes.
    scanners: Vec<OutboundScanner>,
}

/// A credential from a file, re-read when the file changes; see the module documentation.
pub struct RotatingSecret {
    variable: String,
    path: PathBuf,
    check: SecretCheck,
    /// Others may not read or change the file (false only for files Kubernetes mounts).
    private: bool,
    state: Mutex<State>,
}

impl std::fmt::Debug for RotatingSecret {
    /// The variable only: the path is configuration, the value a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RotatingSecret")
            .field("variable", &self.variable)
            .finish_non_exhaustive()
    }
}

/// Reads a secret file: a regular file of bounded size that nobody but its owner and group can
/// read or write. Checked on the opened file, so a swap between check and read cannot pass.
pub(crate) fn read_secret_file(path: &Path) -> Result<(String, Identity), &'static str> {
    read_file(path, true)
}

/// [`read_secret_file`], with the permission rule only when `private`.
fn read_file(path: &Path, private: bool) -> Result<(String, Identity), &'static str> {
    use std::io::Read;
    const UNREADABLE: &str = "names a file that cannot be read";
    let check = |meta: &std::fs::Metadata| {
        if !meta.is_file() || meta.len() > crate::env::MAX_SECRET_FILE_BYTES {
            return Err("names something that is not a secret file");
        }
        // World-readable, or writable by anyone but the owner: refused, like ssh does for keys.
        if private && meta.mode() & 0o027 != 0 {
            return Err("names a file others can read or change: chmod 600 (or 640) it");
        }
        Ok(())
    };
    // Stat first: opening a FIFO or a device could block or have effects.
    check(&std::fs::metadata(path).map_err(|_| UNREADABLE)?)?;
    let file = std::fs::File::open(path).map_err(|_| UNREADABLE)?;
    let meta = file.metadata().map_err(|_| UNREADABLE)?;
    check(&meta)?;
    let mut text = String::new();
    file.take(crate::env::MAX_SECRET_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|_| UNREADABLE)?;
    Ok((text, Identity::of(&meta)))
}

impl RotatingSecret {
    /// Reads the file `path` (named by `variable`) and checks its text; `Err` is the reason,
    /// to follow the variable name in a start problem.
    pub fn open(variable: &str, path: &Path, check: SecretCheck) -> Result<Self, &'static str> {
        Self::open_with(variable, path, check, true)
    }

    /// [`RotatingSecret::open`] for a file Kubernetes mounts readable by the pod's other users
    /// (the in-cluster service account token, mode 0644 by default): every check but the
    /// permission rule, which the pod's operator does not control.
    pub fn open_mounted(
        variable: &str,
        path: &Path,
        check: SecretCheck,
    ) -> Result<Self, &'static str> {
        Self::open_with(variable, path, check, false)
    }

    fn open_with(
        variable: &str,
        path: &Path,
        check: SecretCheck,
        private: bool,
    ) -> Result<Self, &'static str> {
        let (text, identity) = read_file(path, private)?;
        let value = check(&text)?;
        Ok(RotatingSecret {
            variable: variable.to_owned(),
            path: path.to_owned(),
            check,
            private,
            state: Mutex::new(State {
                value: Some(SecretString::from(value)),
                generation: 0,
                seen: Some(identity),
                stale: false,
                recheck: false,
                scanners: Vec::new(),
            }),
        })
    }

    /// The variable that names the file.
    pub fn variable(&self) -> &str {
        &self.variable
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The credential to use now, after re-reading the file if it changed. UPSTREAM_REJECTED
    /// once a stale value was refused upstream and the file still cannot be read.
    pub fn current(&self) -> Result<Credential, ToolError> {
        let mut state = self.lock();
        let now = Identity::at(&self.path);
        if now != state.seen || state.recheck {
            state.recheck = false;
            self.reread(&mut state, now);
        }
        match &state.value {
            Some(value) => Ok(Credential {
                value: value.clone(),
                generation: state.generation,
            }),
            None => Err(
                ToolError::new(ErrorCode::UpstreamRejected).with_detail(format!(
                    "{}: the upstream refused the last credential and the file cannot be read",
                    self.variable
                )),
            ),
        }
    }

    fn reread(&self, state: &mut State, now: Option<Identity>) {
        let variable = self.variable.as_str();
        let read = read_file(&self.path, self.private)
            .and_then(|(text, identity)| Ok(((self.check)(&text)?, identity)));
        match read {
            Ok((text, identity)) => {
                state.seen = Some(identity);
                let was_stale = std::mem::replace(&mut state.stale, false);
                if state.value.as_ref().map(ExposeSecret::expose_secret) == Some(text.as_str()) {
                    if was_stale {
                        tracing::warn!(variable, "credential file readable again");
                    }
                    return;
                }
                // The scan must refuse the new value before anything can use it.
                for scanner in &state.scanners {
                    scanner.learn(&text);
                }
                state.value = Some(SecretString::from(text));
                state.generation += 1;
                tracing::warn!(
                    variable,
                    generation = state.generation,
                    "credential file changed: the new credential is in use"
                );
            }
            Err(reason) => {
                state.seen = now;
                if state.value.is_some() {
                    tracing::warn!(
                        variable,
                        reason,
                        "credential file could not be re-read: keeping the previous credential until its upstream refuses it"
                    );
                } else {
                    tracing::warn!(variable, reason, "credential file still cannot be read");
                }
                state.stale = true;
            }
        }
    }

    /// The upstream refused the credential of `generation` (HTTP 401/403, a failed login). A
    /// stale value is dropped, so later calls fail closed; a fresh one is kept, and the file is
    /// re-read at the next use whatever its identity says.
    pub fn refused(&self, generation: u64) {
        let mut state = self.lock();
        if generation != state.generation {
            return; // A newer value is already in use.
        }
        state.recheck = true;
        if state.stale && state.value.take().is_some() {
            tracing::error!(
                variable = self.variable.as_str(),
                "the upstream refused the kept credential and its file cannot be read: calls fail until it can"
            );
        }
    }

    /// True while the file cannot be re-read and the last good value is in use (or dropped).
    pub fn is_stale(&self) -> bool {
        self.lock().stale
    }

    /// The current value, for the outbound scan's start-up list.
    pub fn value_now(&self) -> Option<String> {
        self.lock()
            .value
            .as_ref()
            .map(|v| v.expose_secret().to_owned())
    }

    /// Re-reads the file if it changed, without using the value: a new value is taught to the
    /// watching scanners (what [`OutboundScanner::scan`] asks of every followed credential).
    pub fn refresh(&self) {
        let _ = self.current();
    }

    /// `scanner` learns the current value now and every value read later.
    pub fn watch(&self, scanner: OutboundScanner) {
        let mut state = self.lock();
        if let Some(value) = &state.value {
            scanner.learn(value.expose_secret());
        }
        state.scanners.push(scanner);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
