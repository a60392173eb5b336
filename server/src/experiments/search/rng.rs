//! The search's random numbers: xoshiro256++ seeded through SplitMix64,
//! written here rather than taken from `rand` so that a seed gives the same
//! trials whatever version of a crate the console is built with (`rand`
//! promises no stable stream for its `StdRng` across versions).

/// A small, fast generator whose stream is fixed by its seed forever.
pub(super) struct Rng {
    s: [u64; 4],
}

/// One step of SplitMix64, the usual way to spread a seed over a state.
fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// The generator for `stream` (a trial number) of the search `seed`.
    pub(super) fn new(seed: u64, stream: u64) -> Rng {
        let mut x = seed ^ splitmix(&mut stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        Rng {
            s: [
                splitmix(&mut x),
                splitmix(&mut x),
                splitmix(&mut x),
                splitmix(&mut x),
            ],
        }
    }

    /// The next 64 random bits.
    pub(super) fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub(super) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `low..high`.
    pub(super) fn uniform(&mut self, low: f64, high: f64) -> f64 {
        (low + (high - low) * self.unit()).clamp(low, high)
    }

    /// Uniform in `0..n` (n > 0), without modulo bias.
    pub(super) fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }

    /// A standard normal draw (Box–Muller).
    pub(super) fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.unit(); // in (0, 1]
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// An index drawn with probability proportional to `weights`.
    pub(super) fn weighted(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        let mut x = self.unit() * total;
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }
}
