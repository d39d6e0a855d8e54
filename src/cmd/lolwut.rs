//! LOLWUT (Redis's lolwut.c, lolwut5.c and lolwut6.c): the version line,
//! or with VERSION 5 Georg Nees's "Schotter" in braille characters, or
//! with VERSION 6 a skyline in terminal grays. The drawings are Redis's,
//! with the random displacements drawn from ferrokv's own generator (Redis
//! draws them from rand(), seeded at start-up, so no two runs agree).

use super::args::{self, is};
use super::{Argv, Ctx, Handler};
use crate::error::CmdResult;

/// The handlers this family registers.
pub(super) const COMMANDS: &[(&str, Handler)] = &[("lolwut", lolwut)];

/// LOLWUT [VERSION v] [version arguments...].
fn lolwut(ctx: &mut Ctx<'_>, argv: Argv<'_>) -> CmdResult {
    let mut version = None;
    let mut first = 1;
    if argv.len() >= 3 && is(argv.get(1), "version") {
        // Redis prints the number as an unsigned 32-bit "%u.0.0" and
        // matches its first characters.
        version = Some(args::int(argv.get(2))? as u32);
        first = 3;
    }
    let numbers = |defaults: &[i64]| -> Result<Vec<i64>, crate::error::Error> {
        let mut v = defaults.to_vec();
        for (i, slot) in v.iter_mut().enumerate() {
            if first + i < argv.len() {
                *slot = args::int(argv.get(first + i))?;
            }
        }
        Ok(v)
    };
    let mut rng = Rand(crate::util::clock::real_now_us() | 1);
    let text = match version {
        Some(5) => {
            let n = numbers(&[66, 8, 12])?;
            let canvas = schotter(
                n[0].clamp(1, 1000),
                n[1].clamp(1, 200),
                n[2].clamp(1, 200),
                &mut rng,
            );
            format!(
                "{}\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. {}\n",
                canvas.braille(),
                crate::REDIS_VERSION
            )
        }
        Some(6) => {
            let n = numbers(&[80, 20])?;
            let mut canvas = Canvas::new(n[0].clamp(1, 1000), n[1].clamp(1, 1000), 3);
            skyline(&mut canvas, &mut rng);
            format!(
                "{}\nDedicated to the 8 bit game developers of past and present.\nOriginal 8 \
                 bit image from Plaguemon by hikikomori. Redis ver. {}\n",
                canvas.grays(),
                crate::REDIS_VERSION
            )
        }
        _ => format!("Redis ver. {}\n", crate::REDIS_VERSION),
    };
    ctx.reply.verbatim(text.as_bytes());
    Ok(())
}

/// xorshift64*, standing in for C's rand(): values in 0..=RAND_MAX.
struct Rand(u64);

const RAND_MAX: i64 = i32::MAX as i64;

impl Rand {
    fn next(&mut self) -> i64 {
        let s = &mut self.0;
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as i64
    }
}

/// Pixels of a drawing (lwCanvas): colors, 0 the background.
struct Canvas {
    width: i64,
    height: i64,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: i64, height: i64, color: u8) -> Canvas {
        Canvas {
            width,
            height,
            pixels: vec![color; (width * height) as usize],
        }
    }

    fn set(&mut self, x: i64, y: i64, color: u8) {
        if (0..self.width).contains(&x) && (0..self.height).contains(&y) {
            self.pixels[(x + y * self.width) as usize] = color;
        }
    }

    fn get(&self, x: i64, y: i64) -> u8 {
        if (0..self.width).contains(&x) && (0..self.height).contains(&y) {
            self.pixels[(x + y * self.width) as usize]
        } else {
            0
        }
    }

    /// Bresenham's line (lwDrawLine).
    fn line(&mut self, mut x1: i64, mut y1: i64, x2: i64, y2: i64, color: u8) {
        let (dx, dy) = ((x2 - x1).abs(), (y2 - y1).abs());
        let (sx, sy) = (if x1 < x2 { 1 } else { -1 }, if y1 < y2 { 1 } else { -1 });
        let mut err = dx - dy;
        loop {
            self.set(x1, y1, color);
            if x1 == x2 && y1 == y2 {
                break;
            }
            let e2 = err * 2;
            if e2 > -dy {
                err -= dy;
                x1 += sx;
            }
            if e2 < dx {
                err += dx;
                y1 += sy;
            }
        }
    }

    /// A square centred on x,y, rotated by `angle` (lwDrawSquare), in
    /// Redis's float arithmetic.
    fn square(&mut self, x: i64, y: i64, size: f32, angle: f32) {
        use std::f64::consts::{FRAC_PI_2, FRAC_PI_4};
        // C's float variables with double arithmetic in between, and
        // Redis's literal rather than SQRT_2, so squares round as Redis's.
        #[allow(clippy::approx_constant)]
        let size = ((f64::from(size) / 1.4142135623) as f32 as f64).round();
        let mut k = (FRAC_PI_4 + f64::from(angle)) as f32;
        let mut px = [0i64; 4];
        let mut py = [0i64; 4];
        for j in 0..4 {
            px[j] = (f64::from(k).sin() * size + x as f64).round() as i64;
            py[j] = (f64::from(k).cos() * size + y as f64).round() as i64;
            k = (f64::from(k) + FRAC_PI_2) as f32;
        }
        for j in 0..4 {
            self.line(px[j], py[j], px[(j + 1) % 4], py[(j + 1) % 4], 1);
        }
    }

    /// Braille characters, 2x4 pixels each (LOLWUT 5's renderCanvas).
    fn braille(&self) -> String {
        let mut text = String::new();
        let mut y = 0;
        while y < self.height {
            let mut x = 0;
            while x < self.width {
                let dots = [
                    (0, 0),
                    (0, 1),
                    (0, 2),
                    (1, 0),
                    (1, 1),
                    (1, 2),
                    (0, 3),
                    (1, 3),
                ];
                let mut byte = 0u32;
                for (bit, (dx, dy)) in dots.iter().enumerate() {
                    if self.get(x + dx, y + dy) != 0 {
                        byte |= 1 << bit;
                    }
                }
                // invariant: 0x2800..=0x28FF are all braille characters.
                text.push(char::from_u32(0x2800 + byte).expect("braille pattern"));
                x += 2;
            }
            if y != self.height - 1 {
                text.push('\n');
            }
            y += 4;
        }
        text
    }

    /// Terminal grays, one character cell per pixel (LOLWUT 6's
    /// renderCanvas).
    fn grays(&self) -> String {
        let mut text = String::new();
        for y in 0..self.height {
            for x in 0..self.width {
                let escape = match self.get(x, y) {
                    1 => "0;90;100m",
                    2 => "0;37;47m",
                    3 => "0;97;107m",
                    _ => "0;30;40m",
                };
                text.push_str(&format!("\x1b[{escape} \x1b[0m"));
            }
            if y != self.height - 1 {
                text.push('\n');
            }
        }
        text
    }
}

/// Schotter (lwDrawSchotter): rows of squares, more displaced and
/// rotated the lower they are.
fn schotter(cols: i64, per_row: i64, per_col: i64, rng: &mut Rand) -> Canvas {
    let width = cols * 2;
    let padding = if width > 4 { 2 } else { 0 };
    let side = (width - padding * 2) as f32 / per_row as f32;
    let height = (side * per_col as f32 + (padding * 2) as f32) as i64;
    let mut canvas = Canvas::new(width, height, 0);
    for y in 0..per_col {
        for x in 0..per_row {
            let mut sx = (x as f32 * side + side / 2.0 + padding as f32) as i64;
            let mut sy = (y as f32 * side + side / 2.0 + padding as f32) as i64;
            let mut angle = 0.0f32;
            if y > 1 {
                let mut r = [0.0f32; 3];
                for v in r.iter_mut() {
                    *v = rng.next() as f32 / RAND_MAX as f32 / per_col as f32 * y as f32;
                }
                for v in r.iter_mut() {
                    if rng.next() % 2 == 1 {
                        *v = -*v;
                    }
                }
                angle = r[0];
                sx = (sx as f32 + r[1] * side / 3.0) as i64;
                sy = (sy as f32 + r[2] * side / 3.0) as i64;
            }
            canvas.square(sx, sy, side, angle);
        }
    }
    canvas
}

/// One skyscraper (generateSkyscraper): windows in the two grays.
struct Skyscraper {
    xoff: i64,
    width: i64,
    height: i64,
    windows: bool,
    color: u8,
}

fn skyscraper(canvas: &mut Canvas, s: &Skyscraper, rng: &mut Rand) {
    let start = canvas.height - 1;
    let end = start - s.height + 1;
    let mut y = start;
    while y >= end {
        for x in s.xoff..s.xoff + s.width {
            // The roof is four pixels narrower.
            if y == end && (x <= s.xoff + 1 || x >= s.xoff + s.width - 2) {
                continue;
            }
            let mut color = s.color;
            if s.windows
                && x > s.xoff + 1
                && x < s.xoff + s.width - 2
                && y > end + 1
                && y < start - 1
            {
                let relx = x - (s.xoff + 1);
                let rely = y - (end + 1);
                // Windows two pixels wide, one tall.
                if (relx / 2) % 2 != 0 && rely % 2 != 0 {
                    loop {
                        color = 1 + (rng.next() % 2) as u8;
                        if color != s.color {
                            break;
                        }
                    }
                    if relx % 2 != 0 {
                        color = canvas.get(x - 1, y);
                    }
                }
            }
            canvas.set(x, y, color);
        }
        y -= 1;
    }
}

/// The skyline (generateSkyline): two rows of gray skyscrapers behind, a
/// black one with windows in front.
fn skyline(canvas: &mut Canvas, rng: &mut Rand) {
    let h = canvas.height;
    for color in [2u8, 1] {
        let mut offset = -10;
        while offset < canvas.width {
            offset += rng.next() % 8;
            let width = 10 + rng.next() % 9;
            let height = if color == 2 {
                h / 2 + (rng.next() % h) / 2
            } else {
                h / 2 + (rng.next() % h) / 3
            };
            let s = Skyscraper {
                xoff: offset,
                width,
                height,
                windows: false,
                color,
            };
            skyscraper(canvas, &s, rng);
            offset += if color == 2 { width / 2 } else { width + 1 };
        }
    }
    let mut offset = -10;
    while offset < canvas.width {
        offset += rng.next() % 8;
        let mut width = 5 + rng.next() % 14;
        if width % 4 != 0 {
            width += width % 3;
        }
        let height = h / 3 + (rng.next() % h) / 2;
        let s = Skyscraper {
            xoff: offset,
            width,
            height,
            windows: true,
            color: 0,
        };
        skyscraper(canvas, &s, rng);
        offset += width + 5;
    }
}
