//! CLIENT PAUSE state: while a pause is in effect, commands (all of them, or only
//! those that may write) are held back with the rest of their batch, and
//! run in arrival order once the pause ends or CLIENT UNPAUSE is called
//! (Redis's `pauseClients` and BLOCKED_POSTPONE).

use super::table::flag;
use crate::net::request::Batch;

/// The pause in effect, if any.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pause {
    /// Unix ms when the pause ends; 0 when there is none.
    pub end_ms: u64,
    /// Pause every command (ALL) rather than only writes (WRITE).
    pub all: bool,
    /// Writes held while a FAILOVER runs, with no end of its own
    /// (PAUSE_DURING_FAILOVER); CLIENT UNPAUSE leaves it.
    pub failover: bool,
    /// Writes held while a shutdown waits for replicas
    /// (PAUSE_DURING_SHUTDOWN); CLIENT UNPAUSE leaves it.
    pub shutdown: bool,
}

impl Pause {
    /// True while the pause lasts.
    pub fn active(&self, now_ms: u64) -> bool {
        self.failover || self.shutdown || self.end_ms > now_ms
    }

    /// Extends the pause as Redis does: the later end and the stricter mode
    /// win while a pause is in effect.
    pub fn extend(&mut self, end_ms: u64, all: bool, now_ms: u64) {
        if self.end_ms > now_ms {
            self.end_ms = self.end_ms.max(end_ms);
            self.all |= all;
        } else {
            self.end_ms = end_ms;
            self.all = all;
        }
    }

    /// True when a command with `flags` must wait.
    pub fn holds(&self, flags: u32, now_ms: u64) -> bool {
        let writes = flags & (flag::WRITE | flag::MAY_REPLICATE) != 0;
        (self.end_ms > now_ms && (self.all || writes))
            || ((self.failover || self.shutdown) && writes)
    }

    /// Ends the pause CLIENT PAUSE started, keeping a failover's.
    pub fn unpause_clients(&mut self) {
        self.end_ms = 0;
        self.all = false;
    }
}

/// A batch held back by a pause, from command `next` on.
pub struct Postponed {
    /// The client.
    pub id: u64,
    /// Its commands.
    pub batch: Batch,
    /// Replies of the commands already run.
    pub out: Vec<u8>,
    /// First command not yet run.
    pub next: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pause_modes_and_extension() {
        let mut p = Pause::default();
        assert!(!p.holds(flag::WRITE, 100));
        p.extend(200, false, 100);
        assert!(p.holds(flag::WRITE, 150));
        assert!(!p.holds(flag::READONLY, 150));
        assert!(!p.holds(flag::WRITE, 200));
        p.extend(150, true, 120);
        assert_eq!(p.end_ms, 200);
        assert!(p.holds(flag::READONLY, 150));
        p.failover = true;
        p.unpause_clients();
        assert!(p.holds(flag::WRITE, 300));
        assert!(!p.holds(flag::READONLY, 300));
    }
}
