//! Small helpers shared by every layer: Redis's number rules and glob matching.
pub mod glob;
pub mod num;
