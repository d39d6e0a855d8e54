//! The network side: accepting connections, framing requests, and writing
//! replies. It never touches the keyspace; it hands batches to the executor,
//! on the same thread.

pub mod conn;
pub mod event_loop;
pub mod inline;
pub mod listener;
pub mod reply;
pub mod request;
