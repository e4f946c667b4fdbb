//! Logs and panics as JSON lines on stderr (`RUST_LOG` honoured); stdout stays the protocol.

use tracing_subscriber::EnvFilter;

pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_current_span(false)
        .try_init();
    // The default hook writes free text; this keeps panics as one JSON line on stderr. The
    // payload can carry input, so it is logged here and never returned to a caller.
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        tracing::error!(target: "care_mcp::panic", location = %location, payload = %payload, "panic");
    }));
}
