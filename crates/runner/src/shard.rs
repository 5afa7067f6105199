//! `--shard i/n`: a deterministic slice of the trial plan.
//!
//! A trial belongs to shard `h(key) mod n`, where `key` is what names the trial in its record —
//! arm (provider name and catalog variant), dataset, case id, trial index — and `h` is a fixed
//! hash: the first 8 bytes (big-endian) of SHA-256 over the four strings joined by NUL bytes
//! give a seed per (arm, case), and the trial index is mixed in with SplitMix64. Because a
//! trial's shard depends on its own key only, adding or removing cases moves no other trial, and
//! every process (and `toolscore merge`) computes the same slice without talking to the others.
//! A uniform 64-bit hash keeps the shards balanced to within sampling noise.

use sha2::{Digest, Sha256};

/// Shard `index` of `count` (0-based, as Kubernetes' `JOB_COMPLETION_INDEX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// `i/n` with `0 <= i < n`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let Some((i, n)) = text.split_once('/') else {
            return Err(format!(
                "--shard {text}: expected INDEX/COUNT (e.g. 0/4), or auto"
            ));
        };
        let index: u32 = i
            .trim()
            .parse()
            .map_err(|_| format!("--shard {text}: the index `{i}` is not a whole number"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("--shard {text}: the count `{n}` is not a whole number"))?;
        Shard::new(index, count).map_err(|e| format!("--shard {text}: {e}"))
    }

    pub fn new(index: u32, count: u32) -> Result<Shard, String> {
        if count == 0 {
            return Err("the shard count must be at least 1".to_owned());
        }
        if index >= count {
            return Err(format!(
                "the index counts from 0, so it must be below {count} (the shards are 0/{count} … {}/{count})",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }

    /// Whether a trial of the (arm, case) with this `seed` falls in this shard.
    pub fn contains(&self, seed: u64, trial: u32) -> bool {
        shard_of(seed, trial, self.count) == self.index
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The hash seed of one (arm, case): SHA-256 of `provider \0 variant \0 dataset \0 case_id`.
pub fn unit_seed(provider: &str, variant: &str, dataset: &str, case_id: &str) -> u64 {
    let mut h = Sha256::new();
    for (i, part) in [provider, variant, dataset, case_id].iter().enumerate() {
        if i > 0 {
            h.update([0u8]);
        }
        h.update(part.as_bytes());
    }
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The shard (of `count`) of trial `trial` of the (arm, case) with this seed.
pub fn shard_of(seed: u64, trial: u32, count: u32) -> u32 {
    (splitmix64(seed ^ u64::from(trial)) % u64::from(count.max(1))) as u32
}

/// SplitMix64's finaliser: every input bit moves every output bit, so consecutive trial
/// indices land on unrelated shards.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_accepts_index_below_count_only() {
        assert_eq!(Shard::parse("0/4"), Ok(Shard { index: 0, count: 4 }));
        assert_eq!(Shard::parse("3/4"), Ok(Shard { index: 3, count: 4 }));
        assert!(Shard::parse("4/4").unwrap_err().contains("counts from 0"));
        assert!(Shard::parse("0/0").is_err());
        assert!(Shard::parse("a/4").is_err());
        assert!(Shard::parse("2").is_err());
    }

    #[test]
    fn the_hash_is_fixed() {
        // Shards computed by one toolscore must be those another computes: pin the function.
        let seed = unit_seed("fake", "base", "billing", "create_quote_1");
        assert_eq!(seed, unit_seed("fake", "base", "billing", "create_quote_1"));
        assert_ne!(seed, unit_seed("fake", "base", "billing", "create_quote_2"));
        // The separator matters: ("ab", "c") is not ("a", "bc").
        assert_ne!(
            unit_seed("ab", "c", "d", "e"),
            unit_seed("a", "bc", "d", "e")
        );
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn every_trial_is_in_exactly_one_shard_and_shards_are_balanced() {
        let count = 4;
        let mut sizes = [0u32; 4];
        for case in 0..200 {
            let seed = unit_seed("p", "base", "d", &format!("case{case}"));
            for trial in 0..50 {
                let owners: Vec<u32> = (0..count)
                    .filter(|&i| Shard { index: i, count }.contains(seed, trial))
                    .collect();
                assert_eq!(owners.len(), 1);
                sizes[owners[0] as usize] += 1;
            }
        }
        // 10,000 trials: each shard's share is 2,500 ± a few standard deviations (≈43).
        for s in sizes {
            assert!((2300..=2700).contains(&s), "{sizes:?}");
        }
    }
}
