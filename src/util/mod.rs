//! Small helpers shared by every layer: Redis's number rules, glob
//! matching, `sdssplitargs` and `sdscatrepr`, the clock and the
//! rate-limit algorithm.
pub mod clock;
pub mod counting_alloc;
pub mod crc16;
pub mod gcra;
pub mod geohash;
pub mod glob;
pub mod lzf;
pub mod num;
pub mod pqsort;
pub mod process;
pub mod proctitle;
pub mod repr;
pub mod siphash;
pub mod slab;
pub mod sparkline;
pub mod splitargs;
pub mod watchdog;

/// Redis's islocalClient: 127.0.0.1 or ::1 exactly (it compares the
/// peer's address text), not the whole loopback range.
pub fn is_local_ip(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(ip) => ip == std::net::Ipv4Addr::LOCALHOST,
        std::net::IpAddr::V6(ip) => ip == std::net::Ipv6Addr::LOCALHOST,
    }
}
