//! Geo commands against redis-server: the documented examples, every
//! error path, then a few thousand random points and queries of each kind
//! compared reply for reply (distances, coordinates and hashes digit for
//! digit), in RESP2 and RESP3.

use crate::support::*;

#[test]
fn examples_and_errors_match_redis() {
    let mut p = Pair::new();
    p.script(&[
        "GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        "GEOADD Sicily NX CH 13.361389 38.115556 Palermo 2 3 x",
        "GEOADD Sicily XX CH 13.4 38.1 Palermo 2 3 y",
        "ZSCORE Sicily Palermo",
        "ZRANGE Sicily 0 -1 WITHSCORES",
        "OBJECT ENCODING Sicily",
        "GEODIST Sicily Palermo Catania",
        "GEODIST Sicily Palermo Catania km",
        "GEODIST Sicily Palermo Catania MI",
        "GEODIST Sicily Palermo Catania ft",
        "GEODIST Sicily Palermo Catania parsec",
        "GEODIST Sicily Palermo Catania km x",
        "GEODIST Sicily Palermo nobody",
        "GEODIST nokey a b",
        "GEOPOS Sicily Palermo Catania NonExisting",
        "GEOPOS nokey a",
        "GEOHASH Sicily Palermo Catania NonExisting",
        "GEOHASH nokey a",
        "GEORADIUS Sicily 15 37 200 km WITHDIST",
        "GEORADIUS Sicily 15 37 200 km WITHCOORD",
        "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH",
        "GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD ASC",
        "GEORADIUS Sicily 15 37 200 km DESC COUNT 1",
        "GEORADIUS Sicily 15 37 200 km COUNT 1 ANY",
        "GEORADIUS Sicily 15 37 200 km ANY",
        "GEORADIUS Sicily 15 37 200 km COUNT 0",
        "GEORADIUS Sicily 15 37 200 km COUNT x",
        "GEORADIUS Sicily 15 37 200 km COUNT",
        "GEORADIUS Sicily 15 37 -1 km",
        "GEORADIUS Sicily 15 37 x km",
        "GEORADIUS Sicily 15 37 1 parsec",
        "GEORADIUS Sicily 200 37 1 km",
        "GEORADIUS Sicily 15 86 1 km",
        "GEORADIUS Sicily x 37 1 km",
        "GEORADIUS Sicily 15 37 200 km FOO",
        "GEORADIUS Sicily 15 37 200 km STORE dst WITHDIST",
        "GEORADIUS Sicily 15 37 200 km STORE dst",
        "ZRANGE dst 0 -1 WITHSCORES",
        "GEORADIUS Sicily 15 37 200 km STOREDIST dst",
        "ZRANGE dst 0 -1 WITHSCORES",
        "GEORADIUS Sicily 15 37 1 km STORE dst",
        "EXISTS dst",
        "GEORADIUS nokey 15 37 1 km STORE Sicily2",
        "GEORADIUS nokey 15 37 1 km",
        "GEORADIUS_RO Sicily 15 37 200 km STORE dst",
        "GEORADIUS_RO Sicily 15 37 200 km WITHDIST",
        "GEORADIUSBYMEMBER Sicily Palermo 200 km WITHDIST",
        "GEORADIUSBYMEMBER Sicily nobody 200 km",
        "GEORADIUSBYMEMBER nokey nobody -1 km",
        "GEORADIUSBYMEMBER_RO Sicily Palermo 200 km STOREDIST dst",
        "GEORADIUSBYMEMBER Sicily Palermo 200 km STOREDIST dst",
        "ZRANGE dst 0 -1 WITHSCORES",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHDIST WITHCOORD",
        "GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 400 400 km ASC WITHDIST",
        "GEOSEARCH Sicily FROMMEMBER nobody BYBOX 400 400 km",
        "GEOSEARCH nokey FROMMEMBER nobody BYBOX 400 400 km",
        "GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 15 37 BYRADIUS 1 km",
        "GEOSEARCH Sicily BYRADIUS 1 km",
        "GEOSEARCH Sicily FROMLONLAT 15 37",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km BYBOX 1 1 km",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 1 km",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX x 1 km",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 x km",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km STORE dst",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
        "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
        "ZRANGE dst 0 -1 WITHSCORES",
        "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km WITHDIST",
        "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYBOX 400 400 km COUNT 1 DESC",
        "ZRANGE dst 0 -1 WITHSCORES",
        "GEOSEARCHSTORE dst nokey FROMLONLAT 15 37 BYBOX 400 400 km",
        "EXISTS dst",
        "GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ANY",
        "GEOADD Sicily 181 0 bad",
        "GEOADD Sicily 0 85.06 bad",
        "GEOADD Sicily x 0 bad",
        "GEOADD Sicily 1 2",
        "GEOADD Sicily NX XX 1 2 a",
        "GEOADD Sicily CH CH CH",
        "GEOADD Sicily GT 1 2 a",
        "GEOADD Sicily -180 -85.05112878 sw 180 85.05112878 ne 0 0 zero",
        "GEOPOS Sicily sw ne zero",
        "GEOHASH Sicily sw ne zero",
        "SET str x",
        "GEOADD str 1 2 a",
        "GEOPOS str a",
        "GEOHASH str a",
        "GEODIST str a b",
        "GEORADIUS str 1 2 3 km",
        "GEOSEARCH str FROMLONLAT 1 2 BYRADIUS 1 km",
        "ZADD plain 1 a -5 b 1e300 c",
        "GEOPOS plain a b c",
        "GEOHASH plain a b",
    ]);
}

/// `n` random points spread over a region (the poles' latitudes too), as
/// one GEOADD per 500.
fn random_points(rng: &mut StdRng, n: usize) -> Vec<Vec<String>> {
    let mut cmds = Vec::new();
    let mut cmd = vec!["GEOADD".to_string(), "pts".to_string()];
    for i in 0..n {
        let lon: f64 = rng.random_range(-180.0..180.0);
        let lat: f64 = rng.random_range(-85.0..85.0);
        cmd.extend([format!("{lon:.6}"), format!("{lat:.6}"), format!("p{i}")]);
        if cmd.len() >= 2 + 3 * 500 {
            cmds.push(std::mem::replace(
                &mut cmd,
                vec!["GEOADD".to_string(), "pts".to_string()],
            ));
        }
    }
    if cmd.len() > 2 {
        cmds.push(cmd);
    }
    cmds
}

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn query(rng: &mut StdRng, n: usize) -> Vec<String> {
    let unit = ["m", "km", "mi", "ft"][rng.random_range(0..4)];
    let mut q: Vec<String> = match rng.random_range(0..4) {
        0 => vec![
            "GEORADIUS".into(),
            "pts".into(),
            format!("{:.4}", rng.random_range(-180.0..180.0)),
            format!("{:.4}", rng.random_range(-85.0..85.0)),
            format!("{}", rng.random_range(0..3000)),
            unit.into(),
        ],
        1 => vec![
            "GEORADIUSBYMEMBER".into(),
            "pts".into(),
            format!("p{}", rng.random_range(0..n)),
            format!("{}", rng.random_range(0..5000)),
            unit.into(),
        ],
        2 => vec![
            "GEOSEARCH".into(),
            "pts".into(),
            "FROMLONLAT".into(),
            format!("{:.3}", rng.random_range(-180.0..180.0)),
            format!("{:.3}", rng.random_range(-85.0..85.0)),
            "BYBOX".into(),
            format!("{}", rng.random_range(0..6000)),
            format!("{}", rng.random_range(0..6000)),
            unit.into(),
        ],
        _ => vec![
            "GEOSEARCH".into(),
            "pts".into(),
            "FROMMEMBER".into(),
            format!("p{}", rng.random_range(0..n)),
            "BYRADIUS".into(),
            format!("{}.5", rng.random_range(0..4000)),
            unit.into(),
        ],
    };
    // Big radii in metres and feet find little; scale them to the unit.
    if unit == "m" || unit == "ft" {
        let at = if q[0] == "GEORADIUS" {
            4
        } else if q[0] == "GEORADIUSBYMEMBER" {
            3
        } else {
            q.len() - 2
        };
        if let Ok(v) = q[at].parse::<f64>() {
            q[at] = format!("{}", v * 1000.0);
        }
    }
    q.push(["ASC", "DESC", "WITHDIST"][rng.random_range(0..3)].into());
    q.extend(["WITHCOORD".to_string(), "WITHHASH".to_string()]);
    if rng.random_range(0..3) == 0 {
        q.extend(["COUNT".to_string(), format!("{}", rng.random_range(1..20))]);
    }
    q
}

fn random_geo(mut p: Pair, queries: usize) {
    let mut rng = StdRng::seed_from_u64(7);
    let n = 3000;
    for cmd in random_points(&mut rng, n) {
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        p.same(&args);
    }
    p.same(&["ZRANGE", "pts", "0", "20", "WITHSCORES"]);
    let mut found = 0;
    for _ in 0..queries {
        let q = query(&mut rng, n);
        let args: Vec<&str> = q.iter().map(String::as_str).collect();
        let r = p.same(&args);
        found += usize::from(r.len() > 4);
    }
    assert!(
        found > queries / 4,
        "queries found points: {found}/{queries}"
    );
    for i in (0..n).step_by(97) {
        let (a, b) = (format!("p{i}"), format!("p{}", (i * 7 + 3) % n));
        p.same(&["GEOPOS", "pts", &a, &b]);
        p.same(&["GEOHASH", "pts", &a, &b]);
        p.same(&["GEODIST", "pts", &a, &b, "km"]);
    }
}

#[test]
fn random_points_and_queries_match_redis() {
    random_geo(Pair::new(), 600);
}

#[test]
fn random_points_and_queries_match_redis_resp3() {
    let mut p = Pair::new();
    assert!(p.theirs.cmd_str(&["HELLO", "3"]).starts_with(b"%"));
    assert!(p.ours.cmd_str(&["HELLO", "3"]).starts_with(b"%"));
    random_geo(p, 200);
}

#[test]
fn geo_in_multi_lua_aof_and_notifications() {
    let mut p = Pair::new();
    p.script(&[
        "MULTI",
        "GEOADD g 13.361389 38.115556 Palermo",
        "GEOADD g 15.087269 37.502669 Catania",
        "GEORADIUS g 15 37 200 km STORE s",
        "GEODIST g Palermo Catania",
        "EXEC",
        "EVAL return{redis.call('geoadd',KEYS[1],1,2,'x'),redis.call('geopos',KEYS[1],'x'),redis.call('geodist',KEYS[1],'x','Palermo')} 1 g",
        "EVAL_RO return redis.call('georadius_ro',KEYS[1],15,37,200,'km') 1 g",
        "EVAL_RO return redis.call('geoadd',KEYS[1],1,2,'x') 1 g",
        "CONFIG SET notify-keyspace-events KEA",
    ]);
    let events = p.same_keyevents(&[
        &["GEOADD", "n", "1", "2", "a"][..],
        &["GEOADD", "n", "NX", "1", "2", "a"],
        &["GEORADIUS", "n", "1", "2", "10", "km", "STORE", "o"],
        &[
            "GEOSEARCHSTORE",
            "o2",
            "n",
            "FROMMEMBER",
            "a",
            "BYRADIUS",
            "1",
            "m",
        ],
        &[
            "GEOSEARCHSTORE",
            "o2",
            "n",
            "FROMLONLAT",
            "50",
            "50",
            "BYRADIUS",
            "1",
            "m",
        ],
    ]);
    assert_eq!(
        events,
        [
            "zadd:n",
            "georadiusstore:o",
            "geosearchstore:o2",
            "del:o2",
            "set:done"
        ]
    );
}

/// Points at equal distances: a full sort keeps them in the order found
/// (glibc's merge sort), COUNT below the total takes Redis's partial
/// quicksort's pick among them.
#[test]
fn ties_sort_and_cut_as_redis_does() {
    let mut p = Pair::new();
    let mut add = vec!["GEOADD".to_string(), "t".to_string()];
    for i in 0..90 {
        let spot = i % 9;
        add.extend([
            format!("{}", 10.0 + f64::from(spot % 3) * 0.01),
            format!("{}", 20.0 + f64::from(spot / 3) * 0.01),
            format!("m{i:02}"),
        ]);
    }
    let args: Vec<&str> = add.iter().map(String::as_str).collect();
    p.same(&args);
    for count in ["", "1", "5", "7", "13", "41", "89", "90", "200"] {
        for order in ["ASC", "DESC", ""] {
            let mut q = vec![
                "GEOSEARCH",
                "t",
                "FROMLONLAT",
                "10.01",
                "20.01",
                "BYRADIUS",
                "50",
                "km",
                "WITHDIST",
            ];
            if !order.is_empty() {
                q.push(order);
            }
            if !count.is_empty() {
                q.extend(["COUNT", count]);
            }
            p.same(&q);
            let mut r = vec!["GEORADIUS", "t", "10", "20", "50", "km"];
            if !order.is_empty() {
                r.push(order);
            }
            if !count.is_empty() {
                r.extend(["COUNT", count]);
            }
            p.same(&r);
        }
    }
}
