//! Every error a command can answer, typed once and rendered to Redis 7.0's
//! exact strings in one place ([`Error::message`]).

use std::borrow::Cow;

/// A command failure; the reply writer renders it as a `-` error line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// `-WRONGTYPE ...`
    WrongType,
    /// `-ERR value is not an integer or out of range`
    NotInteger,
    /// `-ERR value is not a valid float`
    NotFloat,
    /// `-ERR syntax error`
    Syntax,
    /// `-ERR increment or decrement would overflow`
    Overflow,
    /// `-ERR wrong number of arguments for '<name>' command`
    WrongArity(String),
    /// `-ERR unknown command '<name>', with args beginning with: ...`
    UnknownCommand(String),
    /// `-ERR unknown subcommand '<sub>'. Try <CMD> HELP.`
    UnknownSubcommand { sub: String, cmd: String },
    /// `-ERR no such key`
    NoSuchKey,
    /// `-ERR DB index is out of range`
    DbIndexOutOfRange,
    /// `-ERR source and destination objects are the same`
    SameObject,
    /// `-ERR value is out of range, value must between -2147483648 and
    /// 2147483647` (Redis's getIntFromObjectOrReply)
    NotInt32,
    /// `-ERR invalid expire time in '<cmd>' command`
    InvalidExpire(String),
    /// `-ERR timeout is not an integer or out of range`
    TimeoutNotInteger,
    /// `-ERR value is out of range, must be positive` (Redis's
    /// getPositiveLongFromObjectOrReply; zero passes)
    NotPositive,
    /// `-NOAUTH Authentication required.`
    NoAuth,
    /// `-WRONGPASS invalid username-password pair or user is disabled.`
    WrongPass,
    /// `-ERR string exceeds maximum allowed size (proto-max-bulk-len)`
    StringTooLong,
    /// `-ERR Protocol error: <reason>`; the connection closes after it.
    Protocol(Cow<'static, str>),
    /// `-BUSY ...`
    Busy,
    /// -BUSY while a function (FCALL) runs too long.
    BusyFunction,
    /// `-ERR Command not allowed inside a transaction` (no_multi commands).
    NotAllowedInMulti,
    /// `-EXECABORT Transaction discarded because of previous errors.`
    ExecAbort,
    /// `-EXECABORT Transaction discarded because of: <reason>` (EXEC itself
    /// was rejected, e.g. by its arity check).
    ExecAbortBecause(String),
    /// `-NOSCRIPT No matching script. Please use EVAL.`
    NoScript,
    /// `-ERR Invalid stream ID specified as stream command argument`
    InvalidStreamId,
    /// `-ERR <text>`: a one-off message of Redis's with the ERR prefix.
    Err(Cow<'static, str>),
    /// A full error line with its own prefix (`NOPROTO ...`, `EXECABORT ...`).
    Raw(Cow<'static, str>),
    /// A reply text the error statistics counted already: a script raising
    /// the error of a command it called (Redis's
    /// `ignore_error_stats_update`).
    Counted(String),
    /// A cluster redirection or refusal (`MOVED ...`, `ASK ...`,
    /// `CROSSSLOT ...`, `CLUSTERDOWN ...`): it refuses EXEC as it is, not
    /// wrapped in EXECABORT.
    Redirect(String),
}

impl Error {
    /// An `ERR`-prefixed error from a static string.
    pub const fn err(msg: &'static str) -> Self {
        Error::Err(Cow::Borrowed(msg))
    }

    /// An error line with its own prefix.
    pub const fn raw(msg: &'static str) -> Self {
        Error::Raw(Cow::Borrowed(msg))
    }

    /// An `ERR`-prefixed error built at run time.
    pub fn err_owned(msg: String) -> Self {
        Error::Err(Cow::Owned(msg))
    }

    /// The error line without the leading `-` and trailing CRLF.
    pub fn message(&self) -> Cow<'_, str> {
        match self {
            Error::WrongType => "WRONGTYPE Operation against a key holding the wrong kind of value".into(),
            Error::NotInteger => "ERR value is not an integer or out of range".into(),
            Error::NotFloat => "ERR value is not a valid float".into(),
            Error::Syntax => "ERR syntax error".into(),
            Error::InvalidStreamId => {
                "ERR Invalid stream ID specified as stream command argument".into()
            }
            Error::Overflow => "ERR increment or decrement would overflow".into(),
            Error::WrongArity(name) => format!("ERR wrong number of arguments for '{name}' command").into(),
            Error::UnknownCommand(detail) => format!("ERR unknown command {detail}").into(),
            Error::UnknownSubcommand { sub, cmd } => {
                format!("ERR unknown subcommand '{sub}'. Try {cmd} HELP.").into()
            }
            Error::NoSuchKey => "ERR no such key".into(),
            Error::DbIndexOutOfRange => "ERR DB index is out of range".into(),
            Error::SameObject => "ERR source and destination objects are the same".into(),
            Error::NotInt32 => {
                "ERR value is out of range, value must between -2147483648 and 2147483647".into()
            }
            Error::InvalidExpire(cmd) => format!("ERR invalid expire time in '{cmd}' command").into(),
            Error::TimeoutNotInteger => "ERR timeout is not an integer or out of range".into(),
            Error::NotPositive => "ERR value is out of range, must be positive".into(),
            Error::NoAuth => "NOAUTH Authentication required.".into(),
            Error::WrongPass => "WRONGPASS invalid username-password pair or user is disabled.".into(),
            Error::StringTooLong => "ERR string exceeds maximum allowed size (proto-max-bulk-len)".into(),
            Error::Protocol(reason) => format!("ERR Protocol error: {reason}").into(),
            Error::Busy => {
                "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.".into()
            }
            Error::BusyFunction => {
                "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.".into()
            }
            Error::NotAllowedInMulti => "ERR Command not allowed inside a transaction".into(),
            Error::ExecAbort => "EXECABORT Transaction discarded because of previous errors.".into(),
            Error::ExecAbortBecause(reason) => {
                format!("EXECABORT Transaction discarded because of: {reason}").into()
            }
            Error::NoScript => "NOSCRIPT No matching script. Please use EVAL.".into(),
            Error::Err(msg) => format!("ERR {msg}").into(),
            Error::Raw(msg) => Cow::Borrowed(msg.as_ref()),
            Error::Counted(msg) => Cow::Borrowed(msg.as_str()),
            Error::Redirect(msg) => Cow::Borrowed(msg.as_str()),
        }
    }

    /// Redis's reply to a container subcommand given more arguments than
    /// it takes, naming `sub` as the client typed it, with `cmd`'s HELP.
    pub fn subcommand_arity(sub: &[u8], cmd: &str) -> Self {
        Error::err_owned(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try {cmd} HELP.",
            String::from_utf8_lossy(sub)
        ))
    }

    /// An error line with its own prefix, built at run time.
    pub fn raw_owned(msg: String) -> Self {
        Error::Raw(Cow::Owned(msg))
    }

    /// The unknown-command error with Redis's argument preview.
    pub fn unknown_command(name: &[u8], args: &[&[u8]]) -> Self {
        // Mirrors processCommand: each argument is cut to what is left of a
        // 128-byte budget for the whole preview.
        let mut preview: Vec<u8> = Vec::new();
        for a in args {
            if preview.len() >= 128 {
                break;
            }
            let room = 128 - preview.len();
            preview.push(b'\'');
            preview.extend_from_slice(&a[..a.len().min(room)]);
            preview.extend_from_slice(b"' ");
        }
        Error::UnknownCommand(format!(
            "'{}', with args beginning with: {}",
            sanitize(name, 128),
            sanitize(&preview, usize::MAX)
        ))
    }
}

/// Redis shows client-provided names in errors with newlines replaced by
/// spaces and truncated (sdscatlen of at most `max` bytes).
fn sanitize(s: &[u8], max: usize) -> String {
    let s = &s[..s.len().min(max)];
    String::from_utf8_lossy(s).replace(['\r', '\n'], " ")
}

/// What a non-loopback client is sent, before the connection closes, while
/// protected mode is on and no password is set (clientAcceptHandler).
pub const DENIED_PROTECTED_MODE: &[u8] = b"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Result of a command handler.
pub type CmdResult = Result<(), Error>;
