//! The process's stdin and stdout as the runtime's own readiness-driven streams when they are
//! pipes or sockets (what every MCP client spawns us with), instead of tokio's `Stdin`/`Stdout`,
//! which hand each read and each write to a blocking-pool thread: two cross-thread wake-ups on
//! every call's path, measured in bench/. Anything else (a terminal, a file) keeps tokio's.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};

use tokio::io::{AsyncRead, AsyncWrite};

pub type Reader = Box<dyn AsyncRead + Unpin + Send>;
pub type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// stdin and stdout for the MCP session. Must run inside the runtime (registration with its
/// reactor).
pub fn stdin_stdout() -> (Reader, Writer) {
    let reader = readiness_reader().unwrap_or_else(|| Box::new(tokio::io::stdin()));
    let writer = readiness_writer().unwrap_or_else(|| Box::new(tokio::io::stdout()));
    (reader, writer)
}

/// What an fd is, as far as choosing a transport goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pipe,
    Socket,
    Other,
}

/// The fd's kind and identity (device, inode).
fn describe(fd: OwnedFd) -> io::Result<(OwnedFd, Kind, (u64, u64))> {
    let file = File::from(fd);
    let meta = file.metadata()?;
    let kind = if meta.file_type().is_fifo() {
        Kind::Pipe
    } else if meta.file_type().is_socket() {
        Kind::Socket
    } else {
        Kind::Other
    };
    Ok((OwnedFd::from(file), kind, (meta.dev(), meta.ino())))
}

/// A duplicate of stdin/stdout/stderr, described.
fn duplicate(fd: impl AsFd) -> Option<(OwnedFd, Kind, (u64, u64))> {
    describe(fd.as_fd().try_clone_to_owned().ok()?).ok()
}

/// Non-blocking mode belongs to the open file, not the descriptor: an fd that is the same
/// file as stderr stays blocking, or a full pipe would make log writes fail instead of wait.
fn shares_stderr(identity: (u64, u64)) -> bool {
    duplicate(io::stderr()).is_none_or(|(_, _, stderr)| stderr == identity)
}

fn readiness_reader() -> Option<Reader> {
    let (fd, kind, identity) = duplicate(io::stdin())?;
    if shares_stderr(identity) {
        return None;
    }
    match kind {
        Kind::Pipe => Some(Box::new(
            tokio::net::unix::pipe::Receiver::from_owned_fd(fd).ok()?,
        )),
        Kind::Socket => Some(Box::new(socket(fd)?)),
        Kind::Other => None,
    }
}

fn readiness_writer() -> Option<Writer> {
    let (fd, kind, identity) = duplicate(io::stdout())?;
    if shares_stderr(identity) {
        return None;
    }
    match kind {
        Kind::Pipe => Some(Box::new(
            tokio::net::unix::pipe::Sender::from_owned_fd(fd).ok()?,
        )),
        Kind::Socket => Some(Box::new(socket(fd)?)),
        Kind::Other => None,
    }
}

/// A Unix socket (Node's child processes get socket pairs, not pipes); any other socket
/// family keeps tokio's stdio.
fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    stream.peer_addr().ok()?;
    stream.set_nonblocking(true).ok()?;
    tokio::net::UnixStream::from_std(stream).ok()
}
