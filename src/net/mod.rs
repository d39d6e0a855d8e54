//! The network side: accepting connections, framing requests, and writing
//! replies. It never touches the keyspace; it hands batches to the executor,
//! on the same thread (with `io-threads`, other threads read, frame and
//! write lent connections meanwhile: `io_threads`).

pub mod addr;
pub mod bus;
pub mod conn;
pub mod event_loop;
pub mod io_threads;
pub mod link;
pub mod listener;
pub mod output;
pub mod reply;
pub mod request;
pub mod tls;

/// The value [`crate::ServerHandle::stop`] stores where a signal number
/// would go: stop as on SIGTERM, without logging a signal.
pub const STOP_REQUEST: i32 = -1;
