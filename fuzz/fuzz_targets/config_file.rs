//! Configuration files (Redis's `loadServerConfigFromString`): any text is
//! loaded or refused with a message. `include` lines are dropped, so the
//! target reads no other files.

#![no_main]

use ferrokv::config::file::load_str;
use ferrokv::config::Config;
use libfuzzer_sys::fuzz_target;

thread_local! {
    /// Built once: the defaults table is long.
    static DEFAULT: Config = Config::default();
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let text: String = text
        .split('\n')
        .filter(|l| !l.trim_start().to_ascii_lowercase().starts_with("include"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut config = DEFAULT.with(Config::clone);
    let _ = load_str(&mut config, &text);
});
