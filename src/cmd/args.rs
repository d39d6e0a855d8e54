//! Typed argument parsing shared by every command family, so each error
//! string and number rule exists once.

use crate::error::Error;
use crate::util::num;

/// Parses an integer argument (`ERR value is not an integer or out of range`).
pub fn int(arg: &[u8]) -> Result<i64, Error> {
    num::parse_i64(arg).ok_or(Error::NotInteger)
}

/// Parses a float argument (`ERR value is not a valid float`).
pub fn float(arg: &[u8]) -> Result<f64, Error> {
    num::parse_f64(arg).ok_or(Error::NotFloat)
}

/// Parses a C `int` argument as Redis's getIntFromObjectOrReply does:
/// not a number is `ERR value is not an integer or out of range`, outside
/// the 32-bit range is [`Error::NotInt32`].
pub fn int32(arg: &[u8]) -> Result<i32, Error> {
    let n = int(arg)?;
    i32::try_from(n).map_err(|_| Error::NotInt32)
}

/// Parses a database index given as a C int (SELECT, MOVE, COPY DB), with
/// Redis's distinct errors: not a number, outside the 32-bit range
/// ([`int32`]), and no such database.
pub fn db_index(arg: &[u8], databases: usize) -> Result<usize, Error> {
    let id = int32(arg)?;
    usize::try_from(id)
        .ok()
        .filter(|&i| i < databases)
        .ok_or(Error::DbIndexOutOfRange)
}

/// Case-insensitive comparison of an argument with an ASCII keyword.
#[inline]
pub fn is(arg: &[u8], keyword: &str) -> bool {
    arg.eq_ignore_ascii_case(keyword.as_bytes())
}

/// A lossy UTF-8 view of an argument, for error messages.
pub fn lossy(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

/// The error of a malformed subcommand of a container command such as
/// XGROUP, XINFO or ACL (Redis's addReplySubcommandSyntaxError).
pub fn subcommand_syntax(argv: &crate::net::request::Argv<'_>) -> Error {
    let cmd = String::from_utf8_lossy(argv.get(0)).to_uppercase();
    Error::subcommand_arity(argv.get(1), &cmd)
}
