//! The process's stdin and stdout as the runtime's own readiness-driven streams when they are
//! pipes or sockets (what every MCP client spawns us with), instead of tokio's `Stdin`/`Stdout`,
//! which hand each read and each write to a blocking-pool thread: two cross-thread wake-ups on
//! every call's path, measured in bench/. Anything else (a terminal, a file) keeps tokio's.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

pub type Reader = Box<dyn AsyncRead + Unpin + Send>;
pub type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// stdin and stdout for the MCP session. Must run inside the runtime (registration with its
/// reactor).
pub fn stdin_stdout() -> (Reader, Writer) {
    let stderr = identity(io::stderr());
    let reader: Reader = match readiness(io::stdin(), stderr, pipe::Receiver::from_owned_fd) {
        Some(Ready::Pipe(pipe)) => Box::new(pipe),
        Some(Ready::Socket(socket)) => Box::new(socket),
        None => Box::new(tokio::io::stdin()),
    };
    let writer: Writer = match readiness(io::stdout(), stderr, pipe::Sender::from_owned_fd) {
        Some(Ready::Pipe(pipe)) => Box::new(pipe),
        Some(Ready::Socket(socket)) => Box::new(socket),
        None => Box::new(tokio::io::stdout()),
    };
    (reader, writer)
}

/// A stdio fd registered with the reactor.
enum Ready<P> {
    Pipe(P),
    Socket(UnixStream),
}

/// A file's identity: (device, inode).
type Identity = (u64, u64);

fn identity(fd: impl AsFd) -> Option<Identity> {
    let meta = File::from(fd.as_fd().try_clone_to_owned().ok()?)
        .metadata()
        .ok()?;
    Some((meta.dev(), meta.ino()))
}

/// A duplicate of `fd` as a readiness-driven stream, if it is a pipe (made by `pipe`, which
/// also sets it non-blocking) or a Unix socket. Non-blocking mode belongs to the open file, not
/// the descriptor: a file that is also stderr (or whose stderr cannot be told) stays blocking,
/// or a full pipe would make log writes fail instead of wait.
fn readiness<P>(
    fd: impl AsFd,
    stderr: Option<Identity>,
    pipe: fn(OwnedFd) -> io::Result<P>,
) -> Option<Ready<P>> {
    let file = File::from(fd.as_fd().try_clone_to_owned().ok()?);
    let meta = file.metadata().ok()?;
    if stderr.is_none_or(|stderr| stderr == (meta.dev(), meta.ino())) {
        return None;
    }
    if meta.file_type().is_fifo() {
        pipe(file.into()).ok().map(Ready::Pipe)
    } else if meta.file_type().is_socket() {
        socket(file.into()).map(Ready::Socket)
    } else {
        None
    }
}

/// A Unix socket (Node's child processes get socket pairs, not pipes); any other socket
/// family keeps tokio's stdio.
fn socket(fd: OwnedFd) -> Option<UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    stream.peer_addr().ok()?;
    stream.set_nonblocking(true).ok()?;
    UnixStream::from_std(stream).ok()
}
