//! Small helpers shared by every layer: Redis's number rules and glob matching.
pub mod clock;
pub mod glob;
pub mod num;
