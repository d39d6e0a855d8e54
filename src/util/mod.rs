//! Small helpers shared by every layer: Redis's number rules, glob
//! matching, `sdssplitargs` and the clock.
pub mod clock;
pub mod glob;
pub mod num;
pub mod splitargs;
