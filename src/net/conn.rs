//! One task per client connection: read into a buffer, parse every complete
//! command, hand the whole batch to the executor (one hand-off per read),
//! write the replies it sends back. While the executor holds a batch the
//! task keeps watching the socket, so a client that disconnects while
//! blocked is noticed.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc::unbounded_channel;

use super::request::{Batch, Limits, ProtocolError, RequestParser};
use crate::exec::client::{OutQueue, ToConn};
use crate::exec::{Request, Shared};

/// Redis closes a client whose query buffer passes client-query-buffer-limit
/// (this default applies until the config sets the shared value).
const QUERY_BUFFER_LIMIT: usize = 1024 * 1024 * 1024;

fn query_buffer_limit(shared: &Shared) -> usize {
    match shared.query_buffer_limit.load(Ordering::Relaxed) {
        0 => QUERY_BUFFER_LIMIT,
        n => n,
    }
}

/// Serves one client until it disconnects, is killed, or the server stops.
pub async fn serve(
    mut sock: TcpStream,
    addr: SocketAddr,
    exec: Sender<Request>,
    shared: Arc<Shared>,
) {
    let id = shared.new_client_id();
    let laddr = sock.local_addr().unwrap_or(addr);
    let _ = sock.set_nodelay(true);
    let (tx, mut rx) = unbounded_channel();
    // The executor flips this on AUTH/HELLO AUTH/RESET; until then the
    // parser applies Redis's limits for unauthenticated clients.
    let auth = Arc::new(AtomicBool::new(
        !shared.auth_required.load(Ordering::Relaxed),
    ));
    #[cfg(unix)]
    let fd = i64::from(std::os::fd::AsRawFd::as_raw_fd(&sock));
    #[cfg(not(unix))]
    let fd = -1;
    let outq = Arc::new(OutQueue::default());
    if exec
        .send(Request::Connect {
            id,
            addr,
            laddr,
            tx,
            auth: auth.clone(),
            fd,
            outq: outq.clone(),
        })
        .is_err()
    {
        return;
    }
    let mut inbuf = BytesMut::with_capacity(16 * 1024);
    let mut parser = RequestParser::default();
    let mut batch = Batch::default();
    let mut out: Vec<u8> = Vec::with_capacity(16 * 1024);
    // A batch is at the executor; its buffers come back with the replies.
    let mut in_flight = false;
    let mut spare: Option<(Batch, Vec<u8>)> = None;
    let mut pending_error: Option<ProtocolError> = None;
    let mut eof = false;
    let mut disconnect_sent = false;
    'conn: loop {
        // Dispatch what is parsed when nothing is in flight.
        if !in_flight {
            if let Some((b, o)) = spare.take() {
                batch = b;
                out = o;
            }
            if !batch.is_empty() {
                let n = parser.consumed();
                batch.input = inbuf.split_to(n).freeze();
                parser.rebase(n);
                let qbuf = inbuf.len();
                let b = std::mem::take(&mut batch);
                let o = std::mem::take(&mut out);
                if exec
                    .send(Request::Batch {
                        id,
                        batch: b,
                        out: o,
                        qbuf,
                    })
                    .is_err()
                {
                    break;
                }
                in_flight = true;
            } else if let Some(e) = pending_error.take() {
                let _ = sock.write_all(&e.line()).await;
                break;
            } else if eof {
                break;
            }
        }
        let limit = query_buffer_limit(&shared);
        let can_read = !eof && pending_error.is_none() && inbuf.len() < limit;
        tokio::select! {
            msg = rx.recv() => match msg {
                Some(ToConn::Replies { batch: b, out: o, close }) => {
                    in_flight = false;
                    if !o.is_empty() {
                        shared.net_output_bytes.fetch_add(o.len() as u64, Ordering::Relaxed);
                        if !write(&mut sock, &o, &outq).await {
                            break 'conn;
                        }
                    }
                    if close || disconnect_sent {
                        break 'conn;
                    }
                    let mut o = o;
                    o.clear();
                    spare = Some((b, o));
                    // Parse what arrived while the batch was away.
                    if let Some((ref mut b, _)) = spare {
                        if let Err(e) = parse(&mut parser, &inbuf, b, &shared, &auth) {
                            pending_error = Some(e);
                        }
                    }
                }
                Some(ToConn::Push(bytes)) => {
                    shared.net_output_bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                    let ok = write(&mut sock, &bytes, &outq).await;
                    outq.pending.fetch_sub(bytes.len(), Ordering::Relaxed);
                    if !ok {
                        break 'conn;
                    }
                }
                Some(ToConn::Close) | None => break 'conn,
            },
            r = sock.read_buf(&mut inbuf), if can_read => match r {
                Ok(0) | Err(_) => {
                    eof = true;
                    if in_flight {
                        // Tell the executor now, so a blocked command is
                        // forgotten; replies already made still arrive
                        // (the channel closes once they are drained).
                        let _ = exec.send(Request::Disconnect { id });
                        disconnect_sent = true;
                    }
                }
                Ok(n) => {
                    shared.net_input_bytes.fetch_add(n as u64, Ordering::Relaxed);
                    if !in_flight {
                        if let Err(e) = parse(&mut parser, &inbuf, &mut batch, &shared, &auth) {
                            pending_error = Some(e);
                        }
                    }
                }
            },
        }
        if inbuf.len() >= limit && !in_flight && batch.is_empty() {
            tracing::warn!(
                client = id,
                "closing client that reached the query buffer limit"
            );
            break;
        }
    }
    if !disconnect_sent {
        let _ = exec.send(Request::Disconnect { id });
    }
    let _ = sock.shutdown().await;
    shared.connected_clients.fetch_sub(1, Ordering::Relaxed);
}

/// Writes `bytes` unless the executor closes the client meanwhile (a
/// subscriber past its output limit may never read again).
async fn write(sock: &mut TcpStream, bytes: &[u8], outq: &OutQueue) -> bool {
    if outq.killed.load(Ordering::Relaxed) {
        return false;
    }
    tokio::select! {
        r = sock.write_all(bytes) => r.is_ok(),
        _ = outq.kill.notified() => false,
    }
}

fn parse(
    parser: &mut RequestParser,
    buf: &[u8],
    batch: &mut Batch,
    shared: &Shared,
    auth: &AtomicBool,
) -> Result<(), ProtocolError> {
    let limits = Limits {
        max_bulk: shared.proto_max_bulk_len.load(Ordering::Relaxed),
        // Redis's authRequired(): a password is configured and this client
        // has not authenticated yet.
        unauthenticated: shared.auth_required.load(Ordering::Relaxed)
            && !auth.load(Ordering::Relaxed),
    };
    parser.parse(buf, batch, limits)
}
