//! Small helpers shared by every layer: Redis's number rules, glob
//! matching, `sdssplitargs`, the clock and the rate-limit algorithm.
pub mod clock;
pub mod gcra;
pub mod geohash;
pub mod glob;
pub mod num;
pub mod pqsort;
pub mod splitargs;
