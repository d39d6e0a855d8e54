//! Geohashes as Redis computes them (`geohash.c`, `geohash_helper.c`): a
//! longitude/latitude pair becomes 26 bits of each, interleaved (latitude
//! in the even bits) into the 52-bit integer GEOADD stores as a sorted-set
//! score; searches cover the shape with the centre box and its eight
//! neighbours at a step estimated from the radius, then filter by the
//! haversine distance on Redis's Earth radius. The floating-point steps
//! are Redis's own, in the same order, so results and distances agree to
//! the last digit.

/// The finest step: 26 bits per coordinate, 52 in all.
pub const STEP_MAX: u8 = 26;
/// The latitude limits of the Web Mercator projection Redis indexes.
pub const LAT_MIN: f64 = -85.051_128_78;
/// See [`LAT_MIN`].
pub const LAT_MAX: f64 = 85.051_128_78;
/// Longitude limits.
pub const LONG_MIN: f64 = -180.0;
/// See [`LONG_MIN`].
pub const LONG_MAX: f64 = 180.0;

const D_R: f64 = std::f64::consts::PI / 180.0;
const EARTH_RADIUS_IN_METERS: f64 = 6_372_797.560_856;
const MERCATOR_MAX: f64 = 20_037_726.37;

/// A geohash of `step` bits per coordinate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bits {
    /// The interleaved bits.
    pub bits: u64,
    /// Bits per coordinate.
    pub step: u8,
}

impl Bits {
    /// Redis's HASHISZERO: the "no box" marker.
    fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// Redis's geohashAlign52Bits: the hash as a 52-bit score prefix.
    pub fn align52(&self) -> u64 {
        self.bits << (52 - u32::from(self.step) * 2)
    }
}

/// A coordinate interval.
#[derive(Clone, Copy, Debug, Default)]
pub struct Range {
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
}

/// The longitude range of Redis's index.
pub const WGS84_LONG: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
/// The latitude range of Redis's index.
pub const WGS84_LAT: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// The box a geohash stands for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Area {
    /// Longitude interval.
    pub lon: Range,
    /// Latitude interval.
    pub lat: Range,
}

fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555_5555_5555_5555,
        0x3333_3333_3333_3333,
        0x0F0F_0F0F_0F0F_0F0F,
        0x00FF_00FF_00FF_00FF,
        0x0000_FFFF_0000_FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let (mut x, mut y) = (u64::from(xlo), u64::from(ylo));
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555_5555_5555_5555,
        0x3333_3333_3333_3333,
        0x0F0F_0F0F_0F0F_0F0F,
        0x00FF_00FF_00FF_00FF,
        0x0000_FFFF_0000_FFFF,
        0x0000_0000_FFFF_FFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let (mut x, mut y) = (interleaved, interleaved >> 1);
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// Redis's geohashEncode: None outside the index's limits or the ranges.
pub fn encode(lon_r: Range, lat_r: Range, lon: f64, lat: f64, step: u8) -> Option<Bits> {
    if step > 32 || step == 0 {
        return None;
    }
    if !(LONG_MIN..=LONG_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_r.min || lat > lat_r.max || lon < lon_r.min || lon > lon_r.max {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (lat - lat_r.min) / (lat_r.max - lat_r.min) * scale;
    let lon_offset = (lon - lon_r.min) / (lon_r.max - lon_r.min) * scale;
    Some(Bits {
        bits: interleave64(lat_offset as u32, lon_offset as u32),
        step,
    })
}

/// Redis's geohashDecode on the index's ranges.
fn decode(hash: Bits) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let sep = deinterleave64(hash.bits);
    let (ilat, ilon) = (f64::from(sep as u32), f64::from((sep >> 32) as u32));
    let div = (1u64 << hash.step) as f64;
    let (lat_scale, lon_scale) = (LAT_MAX - LAT_MIN, LONG_MAX - LONG_MIN);
    Some(Area {
        lat: Range {
            min: LAT_MIN + (ilat * 1.0 / div) * lat_scale,
            max: LAT_MIN + ((ilat + 1.0) * 1.0 / div) * lat_scale,
        },
        lon: Range {
            min: LONG_MIN + (ilon * 1.0 / div) * lon_scale,
            max: LONG_MIN + ((ilon + 1.0) * 1.0 / div) * lon_scale,
        },
    })
}

/// The centre of a stored score's box, clamped to the limits (Redis's
/// decodeGeohash): the coordinates GEOPOS replies.
pub fn decode_score(score: f64) -> [f64; 2] {
    let hash = Bits {
        bits: c_double_to_u64(score),
        step: STEP_MAX,
    };
    let area = decode(hash).unwrap_or_default();
    let lon = ((area.lon.min + area.lon.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.lat.min + area.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    [lon, lat]
}

/// C's `(uint64_t)` cast of a double as x86-64 compilers emit it, for the
/// scores of members GEOADD did not write (negative ones wrap, huge ones
/// become 0), so GEOPOS of such a member answers as Redis does.
fn c_double_to_u64(d: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    // cvttsd2si: truncation, or the "integer indefinite" value when out of
    // range.
    let cvt = |v: f64| {
        if v > -TWO63 - 1.0 && v < TWO63 {
            v as i64
        } else {
            i64::MIN
        }
    };
    if d < TWO63 {
        cvt(d) as u64
    } else {
        (cvt(d - TWO63) as u64) ^ (1 << 63)
    }
}

/// The score GEOADD stores for a valid pair.
pub fn score_of(lon: f64, lat: f64) -> Option<u64> {
    encode(WGS84_LONG, WGS84_LAT, lon, lat, STEP_MAX).map(|h| h.align52())
}

/// Redis's geohash_move_x (`odd`: the longitude bits) and geohash_move_y:
/// one box east or west, north or south, wrapping around.
fn move_bits(hash: &mut Bits, d: i8, odd: bool) {
    const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;
    const EVEN: u64 = 0x5555_5555_5555_5555;
    if d == 0 {
        return;
    }
    let (mine, other) = if odd { (ODD, EVEN) } else { (EVEN, ODD) };
    let shift = 64 - u32::from(hash.step) * 2;
    let mut v = hash.bits & mine;
    let zz = other.checked_shr(shift).unwrap_or(0);
    if d > 0 {
        v = v.wrapping_add(zz + 1);
    } else {
        v |= zz;
        v = v.wrapping_sub(zz + 1);
    }
    v &= mine.checked_shr(shift).unwrap_or(0);
    hash.bits = v | (hash.bits & other);
}

fn moved(hash: Bits, dx: i8, dy: i8) -> Bits {
    let mut h = hash;
    move_bits(&mut h, dx, true);
    move_bits(&mut h, dy, false);
    h
}

/// What a search covers.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// BYRADIUS (and GEORADIUS*): the radius in the query's unit.
    Circle(f64),
    /// BYBOX: width and height in the query's unit.
    Rect(f64, f64),
}

/// A search shape: the centre, the kind and the unit (metres per unit).
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Longitude and latitude of the centre.
    pub xy: [f64; 2],
    /// Metres per unit of the query.
    pub conversion: f64,
    /// Circle or box.
    pub kind: Kind,
}

/// Redis's geohashEstimateStepsByRadius.
fn estimate_steps(mut range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range_meters < MERCATOR_MAX {
        range_meters *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// Redis's geohashBoundingBox: [min lon, min lat, max lon, max lat].
fn bounding_box(shape: &Shape) -> [f64; 4] {
    let [lon, lat] = shape.xy;
    let (h, w) = match shape.kind {
        Kind::Circle(r) => (r, r),
        Kind::Rect(w, h) => (h / 2.0, w / 2.0),
    };
    let (height, width) = (shape.conversion * h, shape.conversion * w);
    let lat_delta = height / EARTH_RADIUS_IN_METERS / D_R;
    let long_delta_top = width / EARTH_RADIUS_IN_METERS / ((lat + lat_delta) * D_R).cos() / D_R;
    let long_delta_bottom = width / EARTH_RADIUS_IN_METERS / ((lat - lat_delta) * D_R).cos() / D_R;
    let delta = if lat < 0.0 {
        long_delta_bottom
    } else {
        long_delta_top
    };
    [lon - delta, lat - lat_delta, lon + delta, lat + lat_delta]
}

/// Redis's geohashCalculateAreasByShapeWGS84: the centre box and its
/// neighbours in the order Redis visits them (centre, N, S, E, W, NE, NW,
/// SE, SW), boxes wholly outside the shape's bounds zeroed.
pub fn search_boxes(shape: &Shape) -> [Bits; 9] {
    let [min_lon, min_lat, max_lon, max_lat] = bounding_box(shape);
    let [lon, lat] = shape.xy;
    let radius = match shape.kind {
        Kind::Circle(r) => r,
        Kind::Rect(w, h) => ((w / 2.0) * (w / 2.0) + (h / 2.0) * (h / 2.0)).sqrt(),
    } * shape.conversion;
    let mut steps = estimate_steps(radius, lat);
    let boxes_at = |steps: u8| {
        let hash = encode(WGS84_LONG, WGS84_LAT, lon, lat, steps).unwrap_or_default();
        let n = [
            hash,
            moved(hash, 0, 1),
            moved(hash, 0, -1),
            moved(hash, 1, 0),
            moved(hash, -1, 0),
            moved(hash, 1, 1),
            moved(hash, -1, 1),
            moved(hash, 1, -1),
            moved(hash, -1, -1),
        ];
        (n, decode(hash).unwrap_or_default())
    };
    let (mut n, mut area) = boxes_at(steps);
    let area_of = |h: Bits| decode(h).unwrap_or_default();
    let decrease = area_of(n[1]).lat.max < max_lat
        || area_of(n[2]).lat.min > min_lat
        || area_of(n[3]).lon.max < max_lon
        || area_of(n[4]).lon.min > min_lon;
    if steps > 1 && decrease {
        steps -= 1;
        (n, area) = boxes_at(steps);
    }
    if steps >= 2 {
        const NORTH: [usize; 3] = [1, 5, 6];
        const SOUTH: [usize; 3] = [2, 7, 8];
        const EAST: [usize; 3] = [3, 5, 7];
        const WEST: [usize; 3] = [4, 6, 8];
        let mut zero = |which: [usize; 3]| which.iter().for_each(|&i| n[i] = Bits::default());
        if area.lat.min < min_lat {
            zero(SOUTH);
        }
        if area.lat.max > max_lat {
            zero(NORTH);
        }
        if area.lon.min < min_lon {
            zero(WEST);
        }
        if area.lon.max > max_lon {
            zero(EAST);
        }
    }
    n
}

/// The visiting order of [`search_boxes`] with Redis's skip of a box equal
/// to the one processed just before (huge radii make neighbours repeat):
/// the score ranges `[min, max)` to scan.
pub fn score_ranges(boxes: &[Bits; 9]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(9);
    let mut last = 0;
    for (i, b) in boxes.iter().enumerate() {
        if b.is_zero() || (last != 0 && *b == boxes[last]) {
            continue;
        }
        let next = Bits {
            bits: b.bits + 1,
            step: b.step,
        };
        out.push((b.align52(), next.align52()));
        last = i;
    }
    out
}

/// Distance in metres along a meridian.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (lat2 * D_R - lat1 * D_R).abs()
}

/// Redis's geohashGetDistance: the haversine distance in metres.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let (lon1r, lon2r) = (lon1 * D_R, lon2 * D_R);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (lat1 * D_R, lat2 * D_R);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// Redis's geoWithinShape: the point of `score` and its distance from the
/// centre in metres, when inside the shape.
pub fn within(shape: &Shape, score: f64) -> Option<([f64; 2], f64)> {
    let xy = decode_score(score);
    let [x1, y1] = shape.xy;
    match shape.kind {
        Kind::Circle(r) => {
            let d = distance(x1, y1, xy[0], xy[1]);
            (d <= r * shape.conversion).then_some((xy, d))
        }
        Kind::Rect(w, h) => {
            let (w, h) = (w * shape.conversion, h * shape.conversion);
            if lat_distance(xy[1], y1) > h / 2.0 {
                return None;
            }
            if distance(xy[0], xy[1], x1, xy[1]) > w / 2.0 {
                return None;
            }
            Some((xy, distance(x1, y1, xy[0], xy[1])))
        }
    }
}

/// GEOHASH's 11-character string: the position re-encoded on the standard
/// ±90° latitude range.
pub fn standard_hash(score: f64) -> Option<[u8; 11]> {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let [lon, lat] = decode_score(score);
    let lat_r = Range {
        min: -90.0,
        max: 90.0,
    };
    let hash = encode(WGS84_LONG, lat_r, lon, lat, 26).unwrap_or_default();
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        *c = ALPHABET[((hash.bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleave_round_trips() {
        let v = interleave64(0x1234_5678, 0x0abc_def0);
        assert_eq!(deinterleave64(v), 0x0abc_def0_1234_5678);
    }

    #[test]
    fn palermo_as_redis() {
        // GEOADD Sicily 13.361389 38.115556 "Palermo"; ZSCORE answers this.
        assert_eq!(score_of(13.361389, 38.115556), Some(3_479_099_956_230_698));
        let [lon, lat] = decode_score(3_479_099_956_230_698.0);
        assert!((lon - 13.361389).abs() < 1e-5 && (lat - 38.115556).abs() < 1e-5);
        assert_eq!(
            standard_hash(3_479_099_956_230_698.0),
            Some(*b"sqc8b49rny0")
        );
    }

    #[test]
    fn out_of_range_is_refused() {
        assert_eq!(score_of(181.0, 0.0), None);
        assert_eq!(score_of(0.0, 86.0), None);
    }
}
