//! ASCII sparklines as Redis's `sparkline.c` draws them for LATENCY
//! GRAPH: each sample a column, its height in `rows` rows of three
//! characters each (`_o#` filled, with `|` below the top), and its label
//! written downwards under it.

/// A sample and its label.
pub struct Sample {
    /// The value.
    pub value: f64,
    /// The label (empty for none).
    pub label: String,
}

/// A sequence of samples to draw.
#[derive(Default)]
pub struct Sequence {
    samples: Vec<Sample>,
    min: f64,
    max: f64,
    labels: usize,
}

const CHARSET: &[u8] = b"_-`";
const CHARSET_FILL: &[u8] = b"_o#";
const LABEL_MARGIN_TOP: usize = 1;

impl Sequence {
    /// Adds a sample (sparklineSequenceAddSample).
    pub fn add(&mut self, value: f64, label: &str) {
        if self.samples.is_empty() {
            self.min = value;
            self.max = value;
        } else if value < self.min {
            self.min = value;
        } else if value > self.max {
            self.max = value;
        }
        if !label.is_empty() {
            self.labels += 1;
        }
        self.samples.push(Sample {
            value,
            label: label.to_string(),
        });
    }

    /// How many samples it has.
    pub fn len(&self) -> usize {
        self.samples.len()
    }

    /// True when it has none.
    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// Draws `len` samples from `offset` (sparklineRenderRange).
    fn render_range(&self, out: &mut String, rows: usize, offset: usize, len: usize, fill: bool) {
        let relmax = match self.max - self.min {
            r if r == 0.0 => 1.0,
            r => r,
        };
        let steps = (CHARSET.len() * rows) as i64;
        let mut row = 0;
        loop {
            let mut chars = vec![b' '; len];
            let mut more = false;
            for (j, c) in chars.iter_mut().enumerate() {
                let s = &self.samples[j + offset];
                let relval = s.value - self.min;
                // As Redis: (int)(relval*steps) divided by relmax.
                let step = (((relval * steps as f64) as i64) as f64 / relmax) as i64;
                let step = step.clamp(0, steps - 1);
                if row < rows {
                    let idx = step - ((rows - row - 1) * CHARSET.len()) as i64;
                    more = true;
                    if (0..CHARSET.len() as i64).contains(&idx) {
                        *c = if fill {
                            CHARSET_FILL[idx as usize]
                        } else {
                            CHARSET[idx as usize]
                        };
                    } else if fill && idx >= CHARSET.len() as i64 {
                        *c = b'|';
                    }
                } else {
                    if self.labels > 0 && row - rows < LABEL_MARGIN_TOP {
                        more = true;
                        break;
                    }
                    let at = row - rows - LABEL_MARGIN_TOP;
                    if let Some(&b) = s.label.as_bytes().get(at) {
                        more = true;
                        *c = b;
                    }
                }
            }
            if !more {
                return;
            }
            row += 1;
            out.push_str(&String::from_utf8_lossy(&chars));
            out.push('\n');
        }
    }

    /// Draws the sequence `columns` samples per band (sparklineRender).
    pub fn render(&self, out: &mut String, columns: usize, rows: usize, fill: bool) {
        let mut j = 0;
        while j < self.samples.len() {
            let len = (self.samples.len() - j).min(columns);
            if j != 0 {
                out.push('\n');
            }
            self.render_range(out, rows, j, len, fill);
            j += columns;
        }
    }
}
