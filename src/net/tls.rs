//! TLS as Redis's tls.c: the server and client contexts built from the
//! `tls-*` directives (`tlsConfigure`, `createSSLContext`), and the stream a
//! TLS connection reads and writes through (`connTLSRead`/`connTLSWrite`).
//!
//! A TLS connection goes through the same [`Conn`](super::conn::Conn), the
//! same parser and the same replies as a TCP one; only the socket's read
//! and write differ. The handshake happens inside the first reads, as
//! OpenSSL's `SSL_read` on a server-side stream performs it.

use std::io::{ErrorKind, Read, Write};
use std::path::Path;

use openssl::dh::Dh;
use openssl::pkey::PKey;
use openssl::ssl::{
    ErrorCode, HandshakeError, Ssl, SslContext, SslContextBuilder, SslMethod, SslMode, SslOptions,
    SslSessionCacheMode, SslStream, SslVerifyMode,
};

use crate::config::Config;

/// `tls-auth-clients`: whether a client must present a certificate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AuthClients {
    /// `no`: not asked for.
    No,
    /// `yes` (the default): required, and verified.
    #[default]
    Yes,
    /// `optional`: verified when presented.
    Optional,
}

impl AuthClients {
    /// The directive's value.
    pub fn from_config(config: &Config) -> AuthClients {
        match config.get("tls-auth-clients").as_str() {
            "no" => AuthClients::No,
            "optional" => AuthClients::Optional,
            _ => AuthClients::Yes,
        }
    }
}

/// The contexts TLS connections are made from: the server's, and the one
/// this server dials out with (replication, the cluster bus), which is the
/// server's unless `tls-client-cert-file` and `tls-client-key-file` are set.
#[derive(Clone)]
pub struct Contexts {
    server: SslContext,
    client: Option<SslContext>,
}

impl std::fmt::Debug for Contexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contexts")
            .field("client_certificate", &self.client.is_some())
            .finish_non_exhaustive()
    }
}

impl Contexts {
    /// The context for connections this server opens.
    pub fn client(&self) -> &SslContext {
        self.client.as_ref().unwrap_or(&self.server)
    }
}

/// Whether the configuration asks for TLS at all (Redis configures it only
/// then: `tls-port`, `tls-replication` or `tls-cluster`).
pub fn wanted(config: &Config) -> bool {
    config.get("tls-port") != "0"
        || config.get_bool("tls-replication")
        || config.get_bool("tls-cluster")
}

/// A `tls-*` string directive, `None` when empty (Redis's
/// EMPTY_STRING_IS_NULL).
fn opt(config: &Config, name: &str) -> Option<String> {
    Some(config.get(name)).filter(|v| !v.is_empty())
}

/// OpenSSL's SSL_OP_NO_CLIENT_RENEGOTIATION (OpenSSL 3), which the crate
/// does not name.
const NO_CLIENT_RENEGOTIATION: u64 = 1 << 10;

/// `tls-protocols`: the protocols left enabled, as Redis's
/// parseProtocolsConfig (none named: TLSv1.2 and TLSv1.3).
fn protocols(value: Option<&str>) -> Result<[bool; 4], String> {
    let Some(value) = value else {
        return Ok([false, false, true, true]);
    };
    let mut on = [false; 4];
    for t in value.split(' ').filter(|t| !t.is_empty()) {
        match t.to_ascii_lowercase().as_str() {
            "tlsv1" => on[0] = true,
            "tlsv1.1" => on[1] = true,
            "tlsv1.2" => on[2] = true,
            "tlsv1.3" => on[3] = true,
            _ => {
                return Err("Invalid tls-protocols specified. \
                            Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'."
                    .into())
            }
        }
    }
    Ok(on)
}

/// The first error OpenSSL queued, as Redis logs it (ERR_error_string_n:
/// `error:0A0000C7:SSL routines::peer did not return a certificate`).
fn first_error(e: &openssl::error::ErrorStack) -> String {
    e.errors().first().map_or_else(
        || e.to_string(),
        |e| {
            format!(
                "error:{:08X}:{}::{}",
                e.code(),
                e.library().unwrap_or_default(),
                e.reason().unwrap_or_default()
            )
        },
    )
}

/// The part of a context both sides share (Redis's createSSLContext);
/// `client` picks the client certificate and key.
fn base_context(config: &Config, on: [bool; 4], client: bool) -> Result<SslContextBuilder, String> {
    let (cert, key, pass) = if client {
        (
            "tls-client-cert-file",
            "tls-client-key-file",
            "tls-client-key-file-pass",
        )
    } else {
        ("tls-cert-file", "tls-key-file", "tls-key-file-pass")
    };
    let cert = opt(config, cert).unwrap_or_default();
    let key = opt(config, key).unwrap_or_default();
    let pass = opt(config, pass);
    let mut b = SslContext::builder(SslMethod::tls()).map_err(|e| first_error(&e))?;
    let mut options = SslOptions::NO_SSLV2
        | SslOptions::NO_SSLV3
        | SslOptions::DONT_INSERT_EMPTY_FRAGMENTS
        | SslOptions::NO_COMPRESSION;
    for (enabled, flag) in on.iter().zip([
        SslOptions::NO_TLSV1,
        SslOptions::NO_TLSV1_1,
        SslOptions::NO_TLSV1_2,
        SslOptions::NO_TLSV1_3,
    ]) {
        if !enabled {
            options |= flag;
        }
    }
    b.set_options(options);
    // Partial writes: a reply larger than what the socket takes is written
    // in pieces, from a buffer that may move between tries.
    b.set_mode(SslMode::ENABLE_PARTIAL_WRITE | SslMode::ACCEPT_MOVING_WRITE_BUFFER);
    // OpenSSL reads what the socket holds in one system call rather than
    // each record's header and body apart; `TlsStream::more_buffered`
    // and the socket's short read then tell when a read has drained it.
    b.set_read_ahead(true);
    b.set_verify(SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT);
    b.set_certificate_chain_file(&cert)
        .map_err(|e| format!("Failed to load certificate: {cert}: {}", first_error(&e)))?;
    let pem =
        std::fs::read(&key).map_err(|e| format!("Failed to load private key: {key}: {}", e))?;
    // A key with a passphrase and no tls-key-file-pass fails, as Redis's
    // password callback does (OpenSSL would otherwise ask the terminal).
    PKey::private_key_from_pem_callback(&pem, |buf| {
        let pass = pass.as_deref().unwrap_or_default().as_bytes();
        if pass.is_empty() || pass.len() > buf.len() {
            return Err(openssl::error::ErrorStack::get());
        }
        buf[..pass.len()].copy_from_slice(pass);
        Ok(pass.len())
    })
    .and_then(|k| b.set_private_key(&k))
    .map_err(|e| format!("Failed to load private key: {key}: {}", first_error(&e)))?;
    let ca_file = opt(config, "tls-ca-cert-file");
    let ca_dir = opt(config, "tls-ca-cert-dir");
    if ca_file.is_some() || ca_dir.is_some() {
        b.load_verify_locations(
            ca_file.as_deref().map(Path::new),
            ca_dir.as_deref().map(Path::new),
        )
        .map_err(|e| {
            format!(
                "Failed to configure CA certificate(s) file/directory: {}",
                first_error(&e)
            )
        })?;
    }
    if let Some(ciphers) = opt(config, "tls-ciphers") {
        b.set_cipher_list(&ciphers)
            .map_err(|_| format!("Failed to configure ciphers: {ciphers}"))?;
    }
    if let Some(suites) = opt(config, "tls-ciphersuites") {
        b.set_ciphersuites(&suites)
            .map_err(|_| format!("Failed to configure ciphersuites: {suites}"))?;
    }
    Ok(b)
}

extern "C" {
    // libssl's SSL_CTX_set_timeout, which neither openssl nor openssl-sys
    // binds; the library is linked through openssl-sys.
    fn SSL_CTX_set_timeout(ctx: *mut openssl_sys::SSL_CTX, t: libc::c_long) -> libc::c_long;
}

/// Builds the contexts from `config` (Redis's tlsConfigure); the error is
/// the line Redis logs. Nothing changes on failure.
pub fn configure(config: &Config) -> Result<Contexts, String> {
    if opt(config, "tls-cert-file").is_none() {
        return Err("No tls-cert-file configured!".into());
    }
    if opt(config, "tls-key-file").is_none() {
        return Err("No tls-key-file configured!".into());
    }
    let needs_ca = AuthClients::from_config(config) != AuthClients::No
        || config.get_bool("tls-cluster")
        || config.get_bool("tls-replication");
    if needs_ca
        && opt(config, "tls-ca-cert-file").is_none()
        && opt(config, "tls-ca-cert-dir").is_none()
    {
        return Err("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!".into());
    }
    let on = protocols(opt(config, "tls-protocols").as_deref())?;
    let mut b = base_context(config, on, false)?;
    if config.get_bool("tls-session-caching") {
        b.set_session_cache_mode(SslSessionCacheMode::SERVER);
        let size = config
            .get("tls-session-cache-size")
            .parse()
            .unwrap_or(20 * 1024);
        b.set_session_cache_size(size);
        let timeout: libc::c_long = config
            .get("tls-session-cache-timeout")
            .parse()
            .unwrap_or(300);
        // SAFETY: the pointer is the builder's own live context; the call
        // only stores the number.
        unsafe { SSL_CTX_set_timeout(b.as_ptr(), timeout) };
        b.set_session_id_context(b"redis")
            .map_err(|e| first_error(&e))?;
    } else {
        b.set_session_cache_mode(SslSessionCacheMode::OFF);
    }
    let mut options =
        SslOptions::from_bits_retain(NO_CLIENT_RENEGOTIATION) | SslOptions::SINGLE_DH_USE;
    if config.get_bool("tls-prefer-server-ciphers") {
        options |= SslOptions::CIPHER_SERVER_PREFERENCE;
    }
    b.set_options(options);
    if let Some(file) = opt(config, "tls-dh-params-file") {
        let pem = std::fs::read(&file).map_err(|e| format!("Failed to load {file}: {e}"))?;
        let dh =
            Dh::params_from_pem(&pem).map_err(|_| format!("{file}: failed to read DH params."))?;
        b.set_tmp_dh(&dh)
            .map_err(|e| format!("Failed to load DH params file: {file}: {}", first_error(&e)))?;
    } else {
        // SAFETY: as above, the builder's own context.
        unsafe { openssl_sys::SSL_CTX_set_dh_auto(b.as_ptr(), 1) };
    }
    let client = match (
        opt(config, "tls-client-cert-file"),
        opt(config, "tls-client-key-file"),
    ) {
        (Some(_), Some(_)) => Some(base_context(config, on, true)?.build()),
        _ => None,
    };
    Ok(Contexts {
        server: b.build(),
        client,
    })
}

/// Builds the contexts for a change of the `tls-*` directives by CONFIG
/// SET (Redis's applyTlsCfg): none while nothing asks for TLS.
pub fn reconfigure(config: &Config) -> Result<Option<Contexts>, String> {
    if !wanted(config) {
        return Ok(None);
    }
    configure(config).map(Some)
}

/// The socket under OpenSSL, noting whether its last read drained it
/// (returned less than asked, or nothing yet): with the poller's edge
/// triggering, a TLS read can stop there without a read that fails.
#[derive(Debug)]
pub struct TlsSocket {
    tcp: mio::net::TcpStream,
    drained: bool,
}

impl TlsSocket {
    /// Wraps a connected socket.
    pub fn new(tcp: mio::net::TcpStream) -> TlsSocket {
        TlsSocket {
            tcp,
            drained: false,
        }
    }

    /// The socket.
    pub fn tcp(&self) -> &mio::net::TcpStream {
        &self.tcp
    }
}

impl Read for TlsSocket {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let r = self.tcp.read(buf);
        self.drained = match &r {
            Ok(n) => *n < buf.len(),
            Err(e) => e.kind() == ErrorKind::WouldBlock,
        };
        r
    }
}

impl Write for TlsSocket {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tcp.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.tcp.flush()
    }
}

#[cfg(unix)]
impl std::os::fd::AsFd for TlsSocket {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.tcp.as_fd()
    }
}

extern "C" {
    /// OpenSSL 1.1+: whether bytes are buffered, decrypted or not
    /// (the `openssl-sys` crate does not declare it).
    fn SSL_has_pending(ssl: *const openssl_sys::SSL) -> libc::c_int;
}

/// A TLS connection: OpenSSL's stream over the non-blocking socket, with
/// what each side of it waits for.
pub struct TlsStream {
    inner: SslStream<TlsSocket>,
    /// A read stopped because OpenSSL must first write (a handshake
    /// message): the socket's writability lets the read go on.
    read_wants_write: bool,
    /// A write stopped because OpenSSL must first read.
    write_wants_read: bool,
    /// The handshake finished: a failure from here on is a dropped
    /// connection, not a refused one.
    established: bool,
    /// This server opened the connection (a cluster bus link).
    outgoing: bool,
}

impl TlsStream {
    /// The server's side of an accepted socket; the handshake runs in the
    /// first reads.
    pub fn accept(
        ctx: &Contexts,
        auth: AuthClients,
        tcp: mio::net::TcpStream,
    ) -> std::io::Result<TlsStream> {
        let mut ssl = Ssl::new(&ctx.server).map_err(std::io::Error::other)?;
        match auth {
            AuthClients::No => ssl.set_verify(SslVerifyMode::NONE),
            AuthClients::Optional => ssl.set_verify(SslVerifyMode::PEER),
            AuthClients::Yes => {}
        }
        ssl.set_accept_state();
        let inner = SslStream::new(ssl, TlsSocket::new(tcp)).map_err(std::io::Error::other)?;
        Ok(TlsStream::over(inner, false, false))
    }

    /// The client side over a socket whose connect completed (a cluster
    /// bus link); the handshake runs in the first reads and writes. The
    /// peer's certificate is checked against the CA.
    pub fn connect(ctx: &Contexts, tcp: mio::net::TcpStream) -> std::io::Result<TlsStream> {
        let mut ssl = Ssl::new(ctx.client()).map_err(std::io::Error::other)?;
        ssl.set_connect_state();
        let inner = SslStream::new(ssl, TlsSocket::new(tcp)).map_err(std::io::Error::other)?;
        Ok(TlsStream::over(inner, false, true))
    }

    /// An established connection this server opened (the link to its
    /// master once adopted by the event loop).
    pub fn established(inner: SslStream<TlsSocket>) -> TlsStream {
        TlsStream::over(inner, true, true)
    }

    fn over(inner: SslStream<TlsSocket>, established: bool, outgoing: bool) -> TlsStream {
        TlsStream {
            inner,
            read_wants_write: false,
            write_wants_read: false,
            established,
            outgoing,
        }
    }

    /// The socket under it.
    pub fn tcp(&self) -> &mio::net::TcpStream {
        &self.inner.get_ref().tcp
    }

    /// The socket under it, to register.
    pub fn tcp_mut(&mut self) -> &mut mio::net::TcpStream {
        &mut self.inner.get_mut().tcp
    }

    /// Whether OpenSSL holds bytes already read from the socket (the rest
    /// of a record, or records read ahead): the next read needs no system
    /// call, and the poller will not report them.
    pub fn more_buffered(&self) -> bool {
        use foreign_types::ForeignTypeRef;
        let ssl = self.inner.ssl();
        // SAFETY: the stream's own live SSL object, only read.
        ssl.pending() > 0 || unsafe { SSL_has_pending(ssl.as_ptr()) } != 0
    }

    /// Whether the socket's read in the last [`Read::read`] drained it
    /// (false when that read took only bytes OpenSSL held).
    pub fn socket_drained(&self) -> bool {
        self.inner.get_ref().drained
    }

    /// Whether a stopped read waits for writability.
    pub fn read_wants_write(&self) -> bool {
        self.read_wants_write
    }

    /// Whether a stopped write waits for readability.
    pub fn write_wants_read(&self) -> bool {
        self.write_wants_read
    }

    /// Maps OpenSSL's outcome as Redis's updateStateAfterSSLIO: wanting
    /// I/O is WouldBlock (noting which), a clean close is Ok(0).
    fn outcome(
        &mut self,
        r: Result<usize, openssl::ssl::Error>,
        reading: bool,
    ) -> std::io::Result<usize> {
        let e = match r {
            Ok(n) => {
                self.established = true;
                return Ok(n);
            }
            Err(e) => e,
        };
        match e.code() {
            ErrorCode::WANT_READ | ErrorCode::WANT_WRITE => {
                let wants_write = e.code() == ErrorCode::WANT_WRITE;
                if reading {
                    self.read_wants_write = wants_write;
                } else {
                    self.write_wants_read = !wants_write;
                }
                if !self.established && self.inner.ssl().is_init_finished() {
                    self.established = true;
                }
                Err(ErrorKind::WouldBlock.into())
            }
            ErrorCode::ZERO_RETURN => Ok(0),
            ErrorCode::SYSCALL if e.io_error().is_none() => Ok(0),
            _ => {
                let why = e
                    .io_error()
                    .map(ToString::to_string)
                    .or_else(|| e.ssl_error().map(first_error))
                    .unwrap_or_else(|| e.to_string());
                if !self.established && !self.outgoing {
                    // Redis's clientAcceptHandler: the handshake failed.
                    tracing::warn!("Error accepting a client connection: {why}");
                } else if !self.established {
                    tracing::debug!("TLS handshake failed: {why}");
                }
                Err(std::io::Error::other(why))
            }
        }
    }

    /// Sets TCP_NODELAY on the socket.
    pub fn set_nodelay(&self, on: bool) -> std::io::Result<()> {
        self.inner.get_ref().tcp.set_nodelay(on)
    }

    /// Shuts the socket down (Redis frees the SSL without a close_notify
    /// wait).
    pub fn shutdown(&self, how: std::net::Shutdown) -> std::io::Result<()> {
        self.inner.get_ref().tcp.shutdown(how)
    }
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.read_wants_write = false;
        // Only a socket read in this call may say the socket is drained
        // (bytes that came since an earlier one were reported once).
        self.inner.get_mut().drained = false;
        let r = self.inner.ssl_read(buf);
        self.outcome(r, true)
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_wants_read = false;
        if buf.is_empty() {
            return Ok(0);
        }
        let r = self.inner.ssl_write(buf);
        self.outcome(r, false)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A TLS client stream over a connected blocking socket (Redis's
/// connTLSBlockingConnect), for the link to a master; the peer's
/// certificate is verified against the CA, not its name, as Redis does.
pub fn connect_blocking(
    ctx: &Contexts,
    tcp: std::net::TcpStream,
) -> Result<SslStream<TlsSocket>, String> {
    let mut ssl = Ssl::new(ctx.client()).map_err(|e| first_error(&e))?;
    ssl.set_connect_state();
    // The socket stays blocking (with its timeouts) for the handshake on
    // the link's own thread; the event loop makes it non-blocking when it
    // adopts it.
    let tcp = TlsSocket::new(mio::net::TcpStream::from_std(tcp));
    match ssl.connect(tcp) {
        Ok(s) => Ok(s),
        Err(HandshakeError::Failure(m)) => Err(m.error().to_string()),
        Err(HandshakeError::WouldBlock(m)) => Err(m.error().to_string()),
        Err(HandshakeError::SetupFailure(e)) => Err(first_error(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_follow_redis_parsing() {
        assert_eq!(protocols(None), Ok([false, false, true, true]));
        assert_eq!(protocols(Some("TLSv1.2")), Ok([false, false, true, false]));
        assert_eq!(
            protocols(Some("tlsv1 TLSV1.1  TLSv1.3")),
            Ok([true, true, false, true])
        );
        assert!(protocols(Some("TLSv1.2 SSLv3")).is_err());
    }
}
