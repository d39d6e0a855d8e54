//! Parameters ferrokv accepts (so configuration files written for Redis
//! load, and CONFIG GET answers as Redis does) but does not act on yet.
//! None of them is silent: a value other than Redis's default is named in
//! a warning at start-up, and CONFIG SET refuses to change one away from
//! its default, saying what ferrokv lacks.

use super::Config;

/// (parameter, what ferrokv lacks for it).
pub const NOT_ACTED_ON: &[(&str, &str)] = &[(
    "io-threads",
    "I/O threads: one event loop serves every connection",
)];

/// What ferrokv lacks for parameter `name`, when it does not act on it.
pub fn lacking(name: &str) -> Option<&'static str> {
    NOT_ACTED_ON
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, why)| *why)
}

/// The parameters not acted on whose value in `config` is not Redis's
/// default, with what ferrokv lacks for each.
pub fn set_in(config: &Config) -> Vec<(&'static str, &'static str)> {
    let default = Config::default();
    NOT_ACTED_ON
        .iter()
        .filter(|(n, _)| config.get(n) != default.get(n))
        .copied()
        .collect()
}

/// The warning logged at start-up for one such parameter.
pub fn warning(name: &str, why: &str) -> String {
    format!("WARNING: '{name}' is set, but ferrokv does not support {why}.")
}

/// The CONFIG SET error text for one such parameter.
pub fn refusal(why: &str) -> String {
    format!("ferrokv does not support {why}")
}
